-- The budget every small demo model trains with, shared by scripts/train/*-small.lua: 1000
-- steps of batches of 4096 padded tokens per side (a decoder-only model's rows hold both sides,
-- so its batches hold 8192), about 120 sentence pairs per step and 4.2 epochs of the Bible train
-- split for every architecture; one to two hours per model on a 2-core CPU. Each family keeps
-- the paper's learning rate (docs/models.md §1.5, Table 5) doubled for these small sizes, so only
-- the budget is shared, not the tuning.
-- Use: return dofile(<this file>)("mamba-small", 2e-3)   -- name (= preset) and peak lr
-- The dataset is the Bible (es -> en); any other one is a key on the command line:
--   mtlab train scripts/train/mamba-small.lua dataset=data/mycorp name=mycorp-mamba
return function(name, lr)
  return {
    name = name,
    model = { preset = name, dropout = 0.1 },
    dataset = "data/bible",   -- files, languages and tokenizer (DIR/spm.model) from here
    max_len = 128,
    max_tokens = 4096,
    lr = lr,
    warmup = 300,
    weight_decay = 0.001,
    max_steps = 1000,
    log_every = 25,
    valid_every = 500,
    valid_bleu_lines = 200,
    save_every = 250,
    save_dtype_f16 = true,
    seed = 1,
  }
end
