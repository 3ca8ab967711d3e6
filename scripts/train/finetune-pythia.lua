-- Finetune a pretrained Pythia (GPT-NeoX) from the hub on the Bible (Spanish -> English): the
-- paper's pretrained row (Table 2), EleutherAI/pythia-160m, 160M parameters: a run for a GPU.
-- Run: huggingface-cli download EleutherAI/pythia-160m --local-dir pythia-160m
--      ./mtlab data bible
--      ./mtlab train scripts/train/finetune-pythia.lua
-- init gives the model (architecture, sizes) and the tokenizer (its tokenizer.json), so the
-- config names only init, the data and training keys. The hub's config.json has no prompt
-- template and its tokenizer no separator, so the template is given here: training puts each
-- source into it, and every saved bundle keeps it for translating (docs/bundles.md §2.4).
-- The learning rate is finetune-mamba.lua's; another checkpoint (pythia-70m, pythia-410m) or
-- dataset is a key on the command line:
--   mtlab train scripts/train/finetune-pythia.lua init=DIR dataset=data/mycorp name=mycorp-ft
return {
  name = "finetune-pythia",
  init = "pythia-160m",
  model = { prompt = "Spanish: {src}\nEnglish:" },
  dataset = "data/bible",   -- files and languages from here; the tokenizer is init's
  device = "cuda",
  bf16 = true,
  max_len = 128,
  max_tokens = 8192,
  lr = 2e-4,
  warmup = 200,
  weight_decay = 0.001,
  max_steps = 2000,
  log_every = 25,
  valid_every = 250,
  valid_bleu_lines = 200,
  save_every = 250,
  save_dtype_f16 = true,
  seed = 1,
}
