#!/usr/bin/env bash
# Makes a tiny training run's inputs in DIR (for the jobs tests): a 200-pair corpus and 20
# validation pairs from the tokenizer fixture, its 256-piece tokenizer, and tiny.lua (a
# two-layer Mamba of width 16, seeded) that trains for MAX_STEPS steps.
#   tests/jobs/tiny_run.sh MTLAB DIR MAX_STEPS VALID_EVERY SAVE_EVERY
set -eu
[ $# -eq 5 ] || { echo "usage: $0 MTLAB DIR MAX_STEPS VALID_EVERY SAVE_EVERY" >&2; exit 2; }
fx="$(cd "$(dirname "$0")/../fixtures/tokenizer" && pwd)/corpus"
mtlab=$(realpath "$1")
cd "$2"
mkdir -p data
head -200 "$fx.es" >data/train.es
head -200 "$fx.en" >data/train.en
tail -20 "$fx.es" >data/valid.es
tail -20 "$fx.en" >data/valid.en
"$mtlab" tokenizer train --data data --vocab 256 --out data/spm >tokenizer.log 2>&1 || {
    cat tokenizer.log; echo "tiny_run: tokenizer training failed" >&2; exit 1; }
cat >tiny.lua <<LUA
return {
  name = "tiny",
  model = { preset = "mamba-small", vocab_size = 256, d_model = 16, n_layers = 2, dt_rank = 1, d_state = 4 },
  train_src = "data/train.es", train_tgt = "data/train.en",
  valid_src = "data/valid.es", valid_tgt = "data/valid.en",
  tokenizer = "data/spm.model",
  max_len = 48, max_tokens = 600, lr = 3e-3, warmup = 2,
  max_steps = $3, log_every = 2, valid_every = $4, valid_bleu_lines = 5, save_every = $5, seed = 3,
}
LUA
