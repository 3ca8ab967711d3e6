#!/usr/bin/env bash
# `mtlab attribute` end to end on the tiny bundles of make_bundles (a transformer and a Mamba):
# the CSV's shape (a header of the input tokens, one row per target token and <eos>, raw values),
# integrated gradients' completeness report, the greedy hypothesis, and the errors users meet.
#
#   tests/e2e/attribute.sh ./mtlab build/rel/e2e/make_bundles
set -u
cd "$(dirname "$0")/../.."
[ $# -eq 2 ] || { echo "usage: $0 MTLAB_BINARY MAKE_BUNDLES" >&2; exit 2; }
M=$(realpath "$1")
make_bundles=$(realpath "$2")
export LC_ALL=C.UTF-8
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0 failed=0
ok() { passed=$((passed + 1)); printf '  ok    %s\n' "$1"; }
fail() { failed=$((failed + 1)); printf '  FAIL  %s\n' "$1"; [ -n "${2:-}" ] && printf '%s\n' "$2" | sed 's/^/      | /'; }
check() { if eval "$2"; then ok "$1"; else fail "$1" "${3:-}"; fi; }

"$make_bundles" "$work/b" >"$work/make_bundles.log" 2>&1 ||
    { cat "$work/make_bundles.log"; echo "attribute: make_bundles failed"; exit 1; }
cd "$work"

# tokens of a text (the bundles share one tokenizer)
count() { printf '%s\n' "$1" | "$M" tokenizer encode -m b/mamba | wc -w; }
n_src=$(count 'Hola mundo.')
n_hyp=$(count 'Hello world.')
# fields of each CSV line, quoted fields (a "," piece) counted as one
fields() { awk -v FPAT='([^,]*)|("([^"]|"")*")' '{ print NF }' "$1" | sort -u | tr '\n' ' '; }

for model in transformer mamba; do
    [ $model = transformer ] && target_side=$((n_hyp + 1)) || target_side=$n_hyp
    cols=$((n_src + 1 + target_side)) rows=$((n_hyp + 1))
    for method in saliency input_x_gradient integrated_gradients; do
        steps=() && [ $method = integrated_gradients ] && steps=(--steps 8)
        echo 'Hola mundo.' | "$M" attribute -m b/$model --method $method "${steps[@]}" \
            --hyp 'Hello world.' --csv $model.$method.csv >out.txt 2>err.txt
        rc=$?
        check "$model $method: status 0" '[ $rc = 0 ]' "$(cat err.txt)"
        f=$model.$method.csv
        check "  ... $((rows + 1)) lines of $((cols + 1)) fields" \
            '[ "$(wc -l <$f)" = $((rows + 1)) ] && [ "$(fields $f)" = "$((cols + 1)) " ]' "$(cat $f)"
        check "  ... the header names the inputs, the first column the targets, <eos> last" \
            '[ "$(head -1 $f | cut -d, -f1)" = "target\\input" ] && tail -1 $f | grep -q "^<eos>,"' \
            "$(cut -c1-80 $f)"
        check "  ... raw numbers" 'sed 1d $f | cut -d, -f2- | tr , "\n" | grep -qvE "^-?[0-9.]+(e[-+][0-9]+)?$" && false || true' \
            "$(head -3 $f)"
    done
    check "$model integrated_gradients: the completeness check is printed" \
        'grep -q "^completeness: worst relative error" out.txt && [ "$(grep -c "%$" out.txt)" = $rows ]' \
        "$(cat out.txt)"
    echo 'Hola mundo.' | "$M" attribute -m b/$model --csv greedy.csv >out.txt 2>err.txt
    rc=$?
    check "$model, no --hyp: the greedy translation's rows" \
        '[ $rc = 0 ] && [ "$(wc -l <greedy.csv)" -ge 2 ] && tail -1 greedy.csv | grep -q "^<eos>,"' \
        "$(cat err.txt out.txt)"
done

# "world" is four pieces of the fixture tokenizer (▁w or l d), "▁w" one of them
echo 'Hola mundo.' | "$M" attribute -m b/mamba --hyp 'Hello world.' --contrast ▁w --csv c.csv >out.txt 2>err.txt
rc=$?
check "--contrast PIECE: every row against it" \
    '[ $rc = 0 ] && grep -q "^contrast: every row attributes log p(target) - log p(▁w)" out.txt' "$(cat err.txt out.txt)"
echo 'Hola mundo.' | "$M" attribute -m b/mamba --contrast world --csv c.csv >out.txt 2>err.txt
rc=$?
check "--contrast of several tokens: refused naming them" \
    '[ $rc = 1 ] && grep -q "contrast .world. is 4 tokens (▁w or l d), not one" err.txt' "$(cat err.txt)"
for rule in adaptive gauss-legendre; do
    echo 'Hola mundo.' | "$M" attribute -m b/transformer --method integrated_gradients --steps 16 \
        --rule $rule --hyp 'Hello world.' --csv $rule.csv >out.txt 2>err.txt
    check "--rule $rule: the completeness check names it" \
        'grep -q "^completeness (16 steps, $rule rule)" out.txt' "$(cat err.txt out.txt)"
done
check "... two rules, two maps of the same integral" '! cmp -s adaptive.csv gauss-legendre.csv'
echo x | "$M" attribute -m b/mamba --method integrated_gradients --rule simpson --csv x.csv 2>err.txt
rc=$?
check "--rule simpson: refused naming the rules" \
    '[ $rc = 1 ] && grep -q "unknown integration rule .simpson. (adaptive or gauss-legendre)" err.txt' "$(cat err.txt)"
echo x | "$M" attribute -m b/mamba --rule adaptive --csv x.csv 2>err.txt
rc=$?
check "--rule without integrated_gradients: refused" '[ $rc = 1 ] && grep -q "rule is for" err.txt' "$(cat err.txt)"
for baseline in zero pad; do
    echo 'Hola mundo.' | "$M" attribute -m b/mamba --method integrated_gradients --steps 8 \
        --baseline $baseline --hyp 'Hello world.' --csv $baseline.csv >/dev/null 2>err.txt
done
check "--baseline zero and --baseline pad: two paths, two maps" \
    '[ -s zero.csv ] && [ -s pad.csv ] && ! cmp -s zero.csv pad.csv' "$(cat err.txt)"
# Ctrl-C once the attribution runs (its announcement on stderr): it stops with a message, no CSV
# (not a pipeline: $! would be a subshell, whose EXIT trap a SIGINT runs). err.txt goes first: the
# command before left its own announcement there, which the wait below read as this one's when it
# ran before the background job had truncated the file, so the SIGINT came before the handler
# (and a background job ignores it): status 0, once in 9 runs on a loaded machine.
echo 'Hola mundo.' >src.txt
rm -f err.txt
"$M" attribute -m b/mamba --method integrated_gradients --steps 4096 --hyp 'Hello world.' \
    --csv long.csv <src.txt >out.txt 2>err.txt &
pid=$!
for i in $(seq 1 600); do grep -q "Ctrl-C stops" err.txt && break; sleep 0.05; done
kill -INT $pid
for i in $(seq 1 600); do kill -0 $pid 2>/dev/null || break; sleep 0.05; done
kill -KILL $pid 2>/dev/null && echo "still running 30 s after SIGINT" >>err.txt
wait $pid
rc=$?
check "Ctrl-C: exit 130, 'interrupted', no CSV" \
    '[ $rc = 130 ] && grep -q "attribute: interrupted: attribution cancelled" err.txt && [ ! -e long.csv ]' \
    "status $rc; $(cat err.txt)"
echo x | "$M" attribute -m b/mamba --method gradient --csv x.csv 2>err.txt
rc=$?
check "--method gradient: refused naming the methods" '[ $rc = 1 ] && grep -q "saliency, input_x_gradient or integrated_gradients" err.txt' "$(cat err.txt)"
echo x | "$M" attribute -m b/mamba --steps 4 --csv x.csv 2>err.txt
rc=$?
check "--steps without integrated_gradients: refused" '[ $rc = 1 ] && grep -q "steps is for" err.txt' "$(cat err.txt)"
echo x | "$M" attribute -m b/mamba 2>err.txt
rc=$?
check "no --csv: usage" '[ $rc = 2 ] && grep -q "usage: mtlab attribute" err.txt' "$(cat err.txt)"
echo x | "$M" attribute -m b/mamba --csv /dev/full >/dev/null 2>err.txt
rc=$?
check "--csv /dev/full: the reason" '[ $rc = 1 ] && grep -q "No space left on device" err.txt' "$(cat err.txt)"

echo "attribute: $passed passed, $failed failed"
[ $failed -eq 0 ]
