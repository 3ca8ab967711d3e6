-- The small mamba demo model trained on the Bible (Spanish -> English).
-- Run: ./mtlab train scripts/train/mamba-small.lua   (needs `mtlab data bible` and
-- `mtlab tokenizer train` first). Both demo models get the same token budget.
return {
  name = "mamba-small",
  model = { preset = "mamba-small", dropout = 0.1 },
  train_src = "data/bible/train.es", train_tgt = "data/bible/train.en",
  valid_src = "data/bible/valid.es", valid_tgt = "data/bible/valid.en",
  tokenizer = "data/bible/spm.model",
  max_len = 128,
  max_tokens = 4096,
  lr = 1e-3,
  warmup = 800,
  weight_decay = 0.001,
  max_steps = 12000,
  log_every = 50,
  valid_every = 1000,
  valid_bleu_lines = 200,
  save_every = 500,
  seed = 1,
}
