-- The small transformer++ demo model trained on the Bible (Spanish -> English) (the demo models' shared budget).
-- Run: ./mtlab train scripts/train/transformer++-small.lua   (needs `mtlab data bible` and
-- `mtlab tokenizer train` first). Every demo model gets the same budget: 1000 steps of
-- 4096-token batches (about 2.2 epochs), sized for a 2-core CPU in about an hour and a half.
return {
  name = "transformer++-small",
  model = { preset = "transformer++-small", dropout = 0.1 },
  train_src = "data/bible/train.es", train_tgt = "data/bible/train.en",
  valid_src = "data/bible/valid.es", valid_tgt = "data/bible/valid.en",
  tokenizer = "data/bible/spm.model",
  max_len = 128,
  max_tokens = 4096,
  lr = 8e-4,
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
