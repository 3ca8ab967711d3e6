return { model = { preset = "retnet-small", value_dim = 256 }, dataset = "data/bible",
         src_lang = "en", tgt_lang = "es", name = "r" }
