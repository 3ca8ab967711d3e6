#!/usr/bin/env bash
# Runs every unit-test binary in the given directories (normal build, then ASan/UBSan build),
# prints each framework summary, and ends with one total line. Exit status 1 if anything failed.
set -u
cd "$(dirname "$0")/.."
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
# --only "test_a test_b" runs just those binaries (make test-cuda)
only="" dirs=()
while [ $# -gt 0 ]; do
  case "$1" in
    --only) only="$2"; shift 2 ;;
    *) dirs+=("$1"); shift ;;
  esac
done
logdir=$(mktemp -d)
passed=0 failed=0 skipped=0 broken=()
for dir in "${dirs[@]}"; do
  for t in "$dir"/test_*; do
    [ -x "$t" ] || continue
    if [ -n "$only" ] && ! [[ " $only " == *" $(basename "$t") "* ]]; then continue; fi
    name="$(basename "$(dirname "$dir")")/$(basename "$t")"
    log="$logdir/$(echo "$name" | tr / _).log"
    start=$(date +%s)
    "$t" >"$log" 2>&1
    rc=$?
    secs=$(( $(date +%s) - start ))
    p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -1)
    f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -1)
    s=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' "$log" | tail -1)
    p=${p:-0} f=${f:-0} s=${s:-0}
    if [ $rc -ne 0 ] && [ "$f" = 0 ]; then f=1; fi   # crashed or sanitizer report
    passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
    status=ok; [ "$f" != 0 ] && status=FAILED
    printf '%-40s %3d passed %2d failed %2d skipped  %4ds  %s\n' "$name" "$p" "$f" "$s" "$secs" "$status"
    if [ "$f" != 0 ]; then broken+=("$name"); sed 's/^/    | /' "$log" | tail -60; fi
    grep -h '^skip: ' "$log" | sort -u | sed 's/^/    /' || true
  done
done
rm -rf "$logdir"
echo
echo "tests: $passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ] || { echo "failing: ${broken[*]}"; exit 1; }
