#!/usr/bin/env bash
# Your own corpus end to end (issue 39): the de-en fixture (tests/fixtures/de-en/pairs.tsv)
# through the documented commands: data import -> tokenizer train -> a few training steps ->
# translate -> eval; then the reverse direction of the Bible (en -> es) from a dataset in the
# Bible's layout, its bundle recording en -> es and its evaluation using the generic recogniser.
#
#   tests/e2e/dataset.sh ./mtlab
set -u
cd "$(dirname "$0")/../.."
root=$PWD
[ $# -eq 1 ] || { echo "usage: $0 MTLAB_BINARY" >&2; exit 2; }
bin=$(realpath "$1")
export LC_ALL=C.UTF-8
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0 failed=0
ok() { passed=$((passed + 1)); printf '  ok    %s\n' "$1"; }
fail() { failed=$((failed + 1)); printf '  FAIL  %s\n' "$1"; sed 's/^/      | /' "$work/out" | tail -15; }
# run NAME CMD...: the command (3 minutes at most) succeeds; its output in $work/out
run() { local name=$1; shift; if timeout 180 "$@" >"$work/out" 2>&1; then ok "$name"; else fail "$name"; fi; }
has() { if grep -Eq -- "$2" "$work/out"; then ok "$1"; else fail "$1"; fi; }
cd "$work"
small="max_steps=20 model.vocab_size=150 max_tokens=512 valid_every=20 save_every=20 log_every=10 valid_bleu_lines=10"

echo "e2e: your own data (de -> en from a TSV)"
run "data import --tsv" "$bin" data import deen --tsv "$root/tests/fixtures/de-en/pairs.tsv" --src-lang de \
    --tgt-lang en --valid 40 --test 40
has "every filter counted" 'dropped +1 bad lines, 1 empty, 0 too long, 1 length ratio, 1 duplicate, 0 in valid/test'
has "the split" 'split +338 train / 40 valid / 40 test pairs'
has "the bad line named by file and line" 'pairs.tsv:419: 1 column, no column 2 \(line dropped'
if [ "$(sha256sum <deen/train.de | cut -d' ' -f1)" = "$(grep -A3 '"train.de"' deen/manifest.json | sed -n 's/.*"sha256": "\(.*\)".*/\1/p')" ]
then ok "manifest hash = sha256sum"; else fail "manifest hash = sha256sum"; fi
run "tokenizer train --data" "$bin" tokenizer train --data deen --vocab 150 --threads 1
has "a joint de+en model in the dataset" 'deen/spm.model: 150 pieces \(unigram, joint de\+en'
run "train with dataset=" "$bin" train "$root/scripts/train/transformer-small.lua" dataset=deen name=deen \
    run_dir=runs/deen $small
if grep -q '"src_lang": "de"' runs/deen/best/config.json && grep -q '"tgt_lang": "en"' runs/deen/best/config.json
then ok "the bundle records de -> en"; else fail "the bundle records de -> en"; fi
echo "Anna liest heute ein Buch." >one.de
run "translate" "$bin" translate -m runs/deen/best -i one.de --beam 1
[ "$(wc -l <"$work/out")" -ge 1 ] && ok "one line translated" || fail "one line translated"
run "eval --data" "$bin" eval -m runs/deen/best --data deen --beam 1
has "the dataset's test split" '40 segments of deen/test.de -> deen/test.en'
has "the English recogniser for an English target" 'NE: +english recogniser'

echo "e2e: the reverse direction of the Bible (en -> es)"
if [ -s "$root/data/bible/train.es" ]; then
    mkdir bible
    for s in train valid test; do for l in es en; do head -300 "$root/data/bible/$s.$l" >bible/$s.$l; done; done
    run "tokenizer train on the Bible's layout (no manifest: es, en)" "$bin" tokenizer train --data bible --vocab 400 --threads 1
    has "joint es+en" 'joint es\+en'
    run "train en -> es (the dataset's languages swapped)" "$bin" train "$root/scripts/train/transformer-small.lua" \
        dataset=bible src_lang=en tgt_lang=es name=rev run_dir=runs/rev max_steps=5 model.vocab_size=400 \
        max_tokens=512 valid_every=5 save_every=5 log_every=5 valid_bleu_lines=5
    if grep -q '"src_lang": "en"' runs/rev/best/config.json && grep -q '"tgt_lang": "es"' runs/rev/best/config.json
    then ok "the bundle records en -> es"; else fail "the bundle records en -> es"; fi
    head -20 bible/test.en >t.en; head -20 bible/test.es >t.es
    run "eval en -> es" "$bin" eval -m runs/rev/best --src t.en --ref t.es --beam 1
    has "the generic recogniser for a Spanish target (from the bundle)" 'NE: +generic recogniser'
else
    echo "  skip  data/bible is not built (mtlab data bible)"
fi
echo "dataset e2e: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
