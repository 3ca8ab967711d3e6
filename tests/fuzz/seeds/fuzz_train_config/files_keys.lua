return {
  name = "demo", run_dir = "runs/x",
  model = { preset = "transformer-small", d_model = 64, activation = "gelu", dropout = 0.25 },
  train_src = "a.de", train_tgt = "a.en", valid_src = "v.de", valid_tgt = "v.en",
  tokenizer = "spm.model", src_lang = "de", tgt_lang = "en",
  cat_n = 4, cat_min = 2, cat_keep = 0.25, accum = 2, beta1 = 0.9, beta2 = 0.98, eps = 1e-9,
  label_smoothing = 0.1, device = "cpu", bf16 = false, name_substitution = 0.5,
  gazetteer = "names.txt", init = "", init_step = 0, keep_every = 100, seed = -1,
}
