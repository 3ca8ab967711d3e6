-- The budget every small demo model trains with, shared by scripts/train/*-small.lua: 1000
-- steps of batches of 4096 padded tokens per side (a decoder-only model's rows hold both sides,
-- so its batches hold 8192), about 120 sentence pairs per step and 4.2 epochs of the Bible train
-- split for every architecture; one to two hours per model on a 2-core CPU. Each family keeps
-- the paper's learning rate (docs/models.md §1.5, Table 5) doubled for these small sizes, so only
-- the budget is shared, not the tuning.
-- Use: return dofile(<this file>)("mamba-small", 2e-3)   -- name (= preset) and peak lr
return function(name, lr)
  return {
    name = name,
    model = { preset = name, dropout = 0.1 },
    train_src = "data/bible/train.es", train_tgt = "data/bible/train.en",
    valid_src = "data/bible/valid.es", valid_tgt = "data/bible/valid.en",
    tokenizer = "data/bible/spm.model",
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
