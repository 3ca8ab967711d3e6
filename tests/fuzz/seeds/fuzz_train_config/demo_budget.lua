local function budget(name, lr)
  return {
    name = name,
    model = { preset = name, dropout = 0.1 },
    dataset = "data/bible",
    max_len = 128, max_tokens = 4096, lr = lr, warmup = 300, weight_decay = 0.001,
    max_steps = 1000, log_every = 25, valid_every = 500, valid_bleu_lines = 200,
    save_every = 250, save_dtype_f16 = true, seed = 1,
  }
end
return budget("mamba-small", 2e-3)
