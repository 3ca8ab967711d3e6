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
    run "train es -> en (the dataset's languages)" "$bin" train "$root/scripts/train/transformer-small.lua" \
        dataset=bible name=fwd run_dir=runs/fwd max_steps=5 model.vocab_size=400 \
        max_tokens=512 valid_every=5 save_every=5 log_every=5 valid_bleu_lines=5
    workbench=1
else
    echo "  skip  data/bible is not built (mtlab data bible)"
fi

# The workbench on the three directions: each pane's title names its bundle's direction, the
# editor says which language it writes (the first pane's, de), its text goes only to the de -> en
# pane while the others say what they translate, and Ctrl-F moves the editor to es, then en.
if [ "${workbench:-0}" = 1 ] && command -v tmux >/dev/null; then
    echo "e2e: the workbench on de -> en, es -> en and en -> es"
    sock=$work/tmux.sock
    . "$root/tests/e2e/lib.sh"
    trap e2e_cleanup EXIT
    e2e_shell 160 45
    # pane_text N: the text of the Nth of the panes side by side, its wrapped rows joined;
    # pane_state N: the state at the right of its bottom border
    pane_text() { screen | grep '││' | sed 's/││/\t/g; s/^│//; s/│$//' | cut -f"$1" | tr '\n' ' ' | tr -s ' '; }
    pane_has() { pane_text "$1" | grep -Eq -- "$2"; }
    pane_lacks() { ! pane_has "$@"; }
    pane_state() { screen | grep '^└' | tail -1 | sed 's/┘└/\t/g' | cut -f"$1" | grep -Eo '(done|ready|translating)'; }
    pane_done() { [ "$(pane_state "$1")" = done ]; }
    run_mtlab "$bin tui -m runs/deen/best -m runs/fwd/best -m runs/rev/best --beam 1"
    wait_count ' ready ─' 3 60
    check "the titles name the directions" \
        screen_has '┌─ deen · de→en · .*┌─ fwd · es→en · .*┌─ rev · en→es · '
    check "the editor writes the first pane's language, Ctrl-F names the others in turn" \
        screen_has 'source · de \(Ctrl-F: es en\) ·'
    T send-keys -t e2e -l "Anna liest heute ein Buch."
    check "the de -> en pane translates the German" wait_until 30 pane_done 1
    check "the es -> en pane is not fed German and says so" \
        pane_has 2 '^this model translates es→en; the editor is writing de \(Ctrl-F: write es\) $'
    check "the en -> es pane says how many Ctrl-F reach its language" \
        pane_has 3 'this model translates en→es; the editor is writing de \(Ctrl-F 2 times: write en\)'
    T send-keys -t e2e C-f
    check "Ctrl-F: the editor writes es" wait_for 'source · es \(Ctrl-F: en de\) ·' 10
    check "the es -> en pane translates" wait_until 30 pane_done 2
    check "the de -> en pane is no longer fed" pane_has 1 'this model translates de→en; the editor is writing es'
    check "the en -> es pane still is not" pane_has 3 'the editor is writing es \(Ctrl-F: write en\)'
    T resize-window -t e2e -x 100 -y 30
    T send-keys -t e2e C-f
    check "at 100x30, Ctrl-F again: en" wait_for 'source · en \(Ctrl-F: de es\) ·' 10
    check "at 100x30 the titles keep the directions" \
        screen_has '┌─ deen · de→en · .*┌─ fwd · es→en · .*┌─ rev · en→es · '
    check "the en -> es pane translates" wait_until 30 pane_done 3
    check "the es -> en pane is no longer fed" pane_has 2 'this model translates es→en; the editor is writing en'
    quit_workbench
    check "the workbench exits cleanly" exited_cleanly

    # --refs and --comet: each pane scores its segments with COMET (the fixture's tiny model)
    # beside BLEU and chrF2, and their mean first
    head -2 bible/test.es >two.es
    head -2 bible/test.en >two.en
    T send-keys -t e2e C-l
    run_mtlab "$bin tui -m runs/fwd/best --beam 1 --refs two.en --comet $root/tests/fixtures/comet/model"
    wait_for ' ready ─' 60
    T send-keys -t e2e -l "$(sed -n 1p two.es)"
    T send-keys -t e2e Enter
    T send-keys -t e2e -l "$(sed -n 2p two.es)"
    check "COMET of the segments' mean beside corpus BLEU and chrF2" \
        wait_for '2 of 2 segments vs references: BLEU [0-9.]+ · chrF2 [0-9.]+ · COMET -?[0-9]+\.[0-9]{4}' 60
    check "COMET under each segment" \
        wait_count '^│  BLEU [0-9.]+ · chrF2 [0-9.]+ · COMET -?[0-9]+\.[0-9]{4} ' 2 30
    quit_workbench
    check "the workbench with COMET exits cleanly" exited_cleanly
fi
echo "dataset e2e: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
