#!/usr/bin/env bash
# The command line's handling of what users get wrong (issue 38): files that are not regular
# files (FIFOs, devices, directories, symlink loops) refused by name without blocking, one line
# limit applied while reading, every write to stdout and to files checked (/dev/full), bundles
# never overwritten unless asked, and misleading messages. Tiny bundles from make_bundles; each
# binary given (the normal build, then the ASan/UBSan one with leak detection) runs every case.
#
#   tests/e2e/cli.sh ./mtlab build/rel/e2e/make_bundles [build/san/mtlab]
set -u
cd "$(dirname "$0")/../.."
root=$PWD
[ $# -ge 2 ] || { echo "usage: $0 MTLAB_BINARY MAKE_BUNDLES [MORE_MTLAB_BINARIES...]" >&2; exit 2; }
make_bundles=$(realpath "$2")
bins=("$(realpath "$1")")
for b in "${@:3}"; do bins+=("$(realpath "$b")"); done
export ASAN_OPTIONS=detect_leaks=1 LC_ALL=C.UTF-8

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0 failed=0
ok() { passed=$((passed + 1)); printf '  ok    %s\n' "$1"; }
fail() { failed=$((failed + 1)); printf '  FAIL  %s\n' "$1"; [ -n "${2:-}" ] && printf '%s\n' "$2" | sed 's/^/      | /'; }

# expect NAME STATUS PATTERN CMD...: CMD (run under a 20 s guard against hangs) exits with
# STATUS and its stderr matches the grep -E PATTERN ("" matches anything); no sanitizer report
expect() {
    local name=$1 want=$2 pattern=$3
    shift 3
    timeout 20 "$@" >"$work/cmd.stdout" 2>"$work/cmd.stderr" </dev/null
    local rc=$?
    if [ $rc != "$want" ] || { [ -n "$pattern" ] && ! grep -qE -- "$pattern" "$work/cmd.stderr"; } || grep -q 'Sanitizer' "$work/cmd.stderr"; then
        fail "$name" "status $rc (expected $want); stderr: $(head -c 1500 "$work/cmd.stderr")"
    else
        ok "$name"
    fi
}

# interrupt_when TEST CMD...: run CMD (stdout int.out, stderr int.err) with SIGINT's default
# action, as a terminal's Ctrl-C finds it, send SIGINT once the shell test TEST holds (30 s at
# most), wait for CMD to end (30 s, then killed and said so in int.err); its status in rc
interrupt_when() {
    local until=$1
    shift
    env --default-signal=INT "$@" >int.out 2>int.err &
    local pid=$! i
    for i in $(seq 1 600); do eval "$until" && break; sleep 0.05; done
    kill -INT $pid
    for i in $(seq 1 600); do kill -0 $pid 2>/dev/null || break; sleep 0.05; done
    kill -KILL $pid 2>/dev/null && echo "still running 30 s after SIGINT" >>int.err
    wait $pid
    rc=$?
}

# make_bundles reads the fixture corpus from the repository root
"$make_bundles" "$work/b" >"$work/make_bundles.log" 2>&1 ||
    { cat "$work/make_bundles.log"; echo "cli: make_bundles failed"; exit 1; }
cd "$work"
printf 'Hola mundo.\nBuenos días.\n' >src.txt
printf 'Hello world.\nGood morning.\n' >ref.txt
seq 1 3000 | sed 's/.*/Hola mundo &./' >many.txt
{ cat src.txt; head -c 1100000 /dev/zero | tr '\0' a; } >long.txt
mkfifo fifo
# bundles broken one member at a time
member() { rm -rf "$1" && cp -r b/mamba "$1" && rm -f "$1/$2"; }
member m_dir config.json && mkdir m_dir/config.json
member m_fifo model.safetensors && mkfifo m_fifo/model.safetensors
member m_loop config.json && ln -s config.json m_loop/config.json
member m_zero tokenizer.model && ln -s /dev/zero m_zero/tokenizer.model
member m_gone config.json
# a valid mtlab tokenizer of 200 pieces in the 304-row model's bundle
mkdir -p tok && cp "$root/tests/fixtures/tokenizer/corpus.es" tok/train.es &&
    cp "$root/tests/fixtures/tokenizer/corpus.en" tok/train.en
"${bins[0]}" tokenizer train --data tok --vocab 200 --threads 1 --out tok/small >tok.log 2>&1 ||
    { cat tok.log; echo "cli: tokenizer train failed"; exit 1; }
member m_tok tokenizer.model && cp tok/small.model m_tok/tokenizer.model
sum() { cat "$1"/* | md5sum; }

for M in "${bins[@]}"; do
    echo "cli: $M"
    # ---------------------------------------------------------------- H3: not regular files
    expect "inspect FIFO: refused by name, no hang" 1 'fifo: a FIFO \(named pipe\), not a regular file' "$M" inspect fifo
    expect "tokenizer -m FIFO: refused" 1 'fifo: a FIFO' "$M" tokenizer encode -m fifo
    expect "score --hyp /dev/zero: refused at once" 1 '/dev/zero: a character device, not a regular file' \
        "$M" score --hyp /dev/zero --ref ref.txt
    expect "config.json a directory: said so, not 'missing'" 1 'm_dir/config.json: is a directory' "$M" inspect m_dir
    expect "model.safetensors a FIFO: said so" 1 'm_fifo/model.safetensors: a FIFO' "$M" inspect m_fifo
    expect "config.json a symlink loop: said so" 1 'm_loop/config.json: Too many levels of symbolic links' \
        "$M" translate -m m_loop -i src.txt
    expect "tokenizer.model linked to /dev/zero: said so" 1 'm_zero/tokenizer.model: a character device' \
        "$M" translate -m m_zero -i src.txt
    expect "a member that is absent is still 'missing'" 1 'not a model bundle: missing config.json' "$M" inspect m_gone

    # ---------------------------------------------------------------- M1/M2: one line limit, while reading
    expect "score: a 3 MB line from a pipe stops at the limit" 1 \
        '/dev/stdin:1: line longer than the 1048576-byte limit' \
        bash -c "head -c 3000000 /dev/zero | tr '\\0' a | '$M' score --hyp /dev/stdin --ref ref.txt"
    expect "tokenizer encode: a 3 MB line stops at the limit" 1 'stdin:1: line longer than the 1048576-byte limit' \
        bash -c "head -c 3000000 /dev/zero | tr '\\0' a | '$M' tokenizer encode -m b/spm.model"
    expect "translate: the same limit" 1 'long.txt:3: line longer than the 1048576-byte limit' \
        "$M" translate -m b/mamba -i long.txt --max-len 2

    # ---------------------------------------------------------------- D1: output that cannot be written
    expect "translate > /dev/full: status 1 naming stdout" 1 'cannot write the output \(stdout\): No space left on device' \
        bash -c "'$M' translate -m b/mamba -i many.txt --max-len 2 >/dev/full"
    expect "score > /dev/full" 1 'No space left on device' bash -c "'$M' score --hyp ref.txt --ref ref.txt >/dev/full"
    expect "inspect > /dev/full" 1 'No space left on device' bash -c "'$M' inspect b/mamba >/dev/full"
    expect "eval > /dev/full" 1 'No space left on device' \
        bash -c "'$M' eval -m b/mamba --src src.txt --ref ref.txt --beam 1 >/dev/full"
    expect "tokenizer encode > /dev/full" 1 'No space left on device' \
        bash -c "'$M' tokenizer encode -m b/spm.model <many.txt >/dev/full"
    expect "--help > /dev/full" 1 'No space left on device' bash -c "'$M' --help >/dev/full"
    expect "forward --logits /dev/full: the reason" 1 '/dev/full: cannot write: No space left on device' \
        "$M" forward -m b/mamba --logits /dev/full 5 6

    # ---------------------------------------------------------------- D5 and --logits: the reason
    expect "eval --json DIR: status 1 with the reason" 1 '/tmp: cannot create: Is a directory' \
        "$M" eval -m b/mamba --src src.txt --ref ref.txt --beam 1 --json /tmp
    expect "eval --json in a missing directory" 1 'no/such/r.json: cannot create: No such file or directory' \
        "$M" eval -m b/mamba --src src.txt --ref ref.txt --beam 1 --json no/such/r.json
    expect "eval --json /dev/full" 1 '/dev/full: cannot write: No space left on device' \
        "$M" eval -m b/mamba --src src.txt --ref ref.txt --beam 1 --json /dev/full
    expect "forward --logits DIR: the reason" 1 '/tmp: cannot create: Is a directory' \
        "$M" forward -m b/mamba --logits /tmp 5 6

    # ---------------------------------------------------------------- D2: bundles never overwritten unasked
    rm -rf out && cp -r b/mamba out && before=$(sum out)
    expect "average -o EXISTING: refused" 1 'out: already exists and holds a model bundle; not overwritten \(--force replaces it\)' \
        "$M" average -o out b/transformer
    [ "$(sum out)" = "$before" ] && ok "  ... and the bundle is untouched" || fail "  ... and the bundle is untouched"
    expect "forward --save EXISTING: refused" 1 'out: already exists and holds a model bundle; not overwritten' \
        "$M" forward -m b/transformer --src 5 --save out 5 6
    [ "$(sum out)" = "$before" ] && ok "  ... and the bundle is untouched" || fail "  ... and the bundle is untouched"
    expect "average --force -o EXISTING: replaced" 0 '' "$M" average --force -o out b/transformer
    [ "$(sum out)" = "$(sum b/transformer)" ] && [ -z "$(ls -A . | grep '\.new-')" ] &&
        ok "  ... whole, with nothing left beside it" || fail "  ... whole, with nothing left beside it" "$(ls -A)"
    expect "forward --save --force EXISTING: replaced" 0 '' "$M" forward -m b/mamba --save out --force 5 6
    expect "  ... and it loads" 0 '' "$M" inspect out
    mkdir -p notes && echo keep >notes/todo.txt
    expect "average --force over a directory that is no bundle: refused" 1 'notes: holds no config.json: not a model bundle: not replaced' \
        "$M" average --force -o notes b/mamba
    [ "$(cat notes/todo.txt)" = keep ] && ok "  ... and its file is kept" || fail "  ... and its file is kept"
    rm -rf new && expect "average -o NEW/SUB: written" 0 '' "$M" average -o new/sub b/mamba
    expect "  ... a bundle that loads" 0 '' "$M" inspect new/sub

    # ---------------------------------------------------------------- errors that mislead
    expect "tokenizer encode -m BUNDLE_DIR uses its tokenizer.model" 0 '' \
        bash -c "'$M' tokenizer encode -m b/mamba <src.txt | grep -q ."
    expect "tokenizer encode -m DIR without one: said so" 1 'tok: no tokenizer: a model directory holds tokenizer.model' \
        "$M" tokenizer encode -m tok
    expect "a 200-piece tokenizer in a 304-row model: refused naming both" 1 \
        'm_tok/tokenizer.model has 200 pieces but the model \(m_tok/config.json vocab_size\) has 304 rows' \
        "$M" translate -m m_tok -i src.txt
    expect "forward --src '1,2,x': refused, nothing leaked" 1 "--src '1,2,x' is not a list of token ids" \
        "$M" forward -m b/mamba --src 1,2,x 5
    expect "translate -m A -m B: refused" 2 '-m given twice \(b/mamba, then b/transformer\)' \
        "$M" translate -m b/mamba -m b/transformer -i src.txt

    # ---------------------------------------------------------------- Ctrl-C
    # SIGINT as a terminal sends it: a script's background command ignores SIGINT unless it is
    # reset to the default (env --default-signal), which is what an unhandled Ctrl-C then does
    # to it (interrupt_when above).
    # translate, once its first lines are out (windows of 8 lines at --batch 1): the lines
    # written are whole and are those of translating them alone, status 130
    : >int.out
    interrupt_when '[ "$(wc -l <int.out)" -ge 8 ]' "$M" translate -m b/mamba --batch 1 -i many.txt
    n=$(sed -n 's/.*interrupted (Ctrl-C): the first \([0-9]*\) of 3000 lines translated and written$/\1/p' int.err)
    if [ $rc = 130 ] && [ -n "$n" ] && [ "$n" -ge 8 ] && [ "$(wc -l <int.out)" = "$n" ] &&
        [ "$(tail -c 1 int.out | od -An -c | tr -d ' ')" = '\n' ] && ! grep -q Sanitizer int.err &&
        head -n "$n" many.txt | "$M" translate -m b/mamba --batch 1 | cmp -s - int.out; then
        ok "translate, Ctrl-C: status 130, the lines written whole, and said how many"
    else
        fail "translate, Ctrl-C: status 130, the lines written whole, and said how many" \
            "status $rc, $(wc -l <int.out) lines; stderr: $(head -c 1500 int.err)"
    fi
    # eval, once it has made its --hyps directory: no table, no --json, no hypotheses file of a
    # system that did not finish, status 130
    rm -rf int.hyps int.json
    interrupt_when '[ -d int.hyps ]' "$M" eval -m b/mamba -m b/transformer --src many.txt \
        --ref many.txt --hyps int.hyps --json int.json
    if [ $rc = 130 ] && grep -q '^mtlab eval: interrupted (Ctrl-C).*: no scores$' int.err && [ ! -s int.out ] &&
        [ ! -e int.json ] && [ -z "$(ls int.hyps)" ] && ! grep -q Sanitizer int.err; then
        ok "eval, Ctrl-C: status 130, no table, no report, no hypotheses"
    else
        fail "eval, Ctrl-C: status 130, no table, no report, no hypotheses" \
            "status $rc; stdout $(head -c 300 int.out); hyps: $(ls int.hyps); stderr: $(head -c 1500 int.err)"
    fi
    # the same evaluation from Lua (mtlab.eval in mtlab run): Ctrl-C stops the translation, not
    # only the script after it
    rm -rf int.hyps
    printf '%s\n' 'mtlab.eval{models = {"b/mamba", "b/transformer"}, src = "many.txt", ref = "many.txt", hyps = "int.hyps"}' >int.lua
    interrupt_when '[ -d int.hyps ]' "$M" run int.lua
    if [ $rc = 130 ] && grep -q 'interrupted' int.err && [ -z "$(ls int.hyps)" ] && ! grep -q Sanitizer int.err; then
        ok "mtlab.eval in mtlab run, Ctrl-C: status 130, no hypotheses"
    else
        fail "mtlab.eval in mtlab run, Ctrl-C: status 130, no hypotheses" \
            "status $rc; hyps: $(ls int.hyps); stderr: $(head -c 1500 int.err)"
    fi

    # ---------------------------------------------------------------- an opus-mt checkpoint
    # as the hub holds it (tests/fixtures/marian: what transformers gives for it)
    O=$root/tests/fixtures/marian
    expect "opus-mt: tokenizer encode --ids -m DIR gives MarianTokenizer's ids" 0 '' \
        bash -c "'$M' tokenizer encode --ids -m '$O/opus-mt-tiny' <'$O/sources.es' |
                 diff - <(sed 's/ *0\$//' '$O/source.ids')"
    expect "opus-mt: translate -m DIR gives MarianTokenizer's text of generate()'s ids" 0 '' \
        bash -c "'$M' translate -m '$O/opus-mt-tiny' --beam 1 --max-len 18 -i '$O/sources.es' |
                 diff - '$O/greedy.txt'"
    expect "opus-mt: inspect names its three tokenizer files" 0 '' \
        bash -c "'$M' inspect '$O/opus-mt-tiny' | grep -q 'opus-mt source.spm'"
    rm -rf opus && expect "opus-mt: forward --save writes a bundle" 0 '' \
        "$M" forward -m "$O/opus-mt-tiny" --src 36,92,0 --save opus 615,5
    expect "  ... with its tokenizer files, translating as the checkpoint" 0 '' \
        bash -c "'$M' translate -m opus --beam 1 --max-len 18 -i '$O/sources.es' | diff - '$O/greedy.txt'"
    # which BLAS runs which products, and MTLAB_SGEMM's override (an unknown value named)
    expect "devices: each library named with the products it runs" 0 '' \
        bash -c "'$M' devices | grep -E 'products: (OpenBLAS \\(.* kernels\\)|mtlab.s packed avx(2|512) kernel): x W\\^T.*; BLIS .*: (weight gradients|none)'"
    expect "  ... MTLAB_SGEMM=mtlab: every product on the packed kernel, its widest tiles (a CPU with AVX2 + FMA)" 0 '' \
        bash -c "! grep -qw avx2 /proc/cpuinfo || ! grep -qw fma /proc/cpuinfo || MTLAB_SGEMM=mtlab '$M' devices | grep -q \"products: every product on mtlab.s packed \$(grep -qw avx512f /proc/cpuinfo && echo avx512 || echo avx2) kernel (MTLAB_SGEMM=mtlab)\""
    expect "  ... MTLAB_SGEMM=blis: every product on BLIS" 0 '' \
        bash -c "MTLAB_SGEMM=blis '$M' devices | grep -q 'products: every product on BLIS .*; MTLAB_SGEMM=blis)'"
    expect "  ... MTLAB_SGEMM=mkl: named as ignored, the rule decides" 0 '' \
        bash -c "MTLAB_SGEMM=mkl '$M' devices | grep -q 'weight .*gradients.*(MTLAB_SGEMM=mkl: not openblas, blis, mtlab or auto; ignored)'"
done

echo "cli: $passed passed, $failed failed"
[ $failed -eq 0 ]
