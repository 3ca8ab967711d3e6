#!/usr/bin/env bash
# No function above the backend takes more than 8 parameters (run by `make test`): a pass's
# shape and masks travel in one descriptor (mt_pass, mt_attn_call, ...), as the backend's own
# operations take mt_attn_desc and mt_scan_args (docs/ARCHITECTURE.md). Checked with
# universal-ctags over engine/ and app/ without engine/backend/ (the backend's operations, below
# the line) and app/bench/counting_backend.c (its wrappers repeat those operations' signatures).
# Prints every function over the limit as FILE: NAME takes N parameters and ends with one
# summary line; exit status 1 when there is any.
set -u
cd "$(dirname "$0")/.."
export LC_ALL=C
limit=8
command -v ctags >/dev/null || { echo "check_params: ctags is not installed (make deps installs universal-ctags)" >&2; exit 2; }

out=$(ctags --languages=C --kinds-C=f --fields=+S -R -o - engine app 2>/dev/null |
    awk -F'\t' -v limit=$limit '
        $2 ~ /^engine\/backend\// || $2 == "app/bench/counting_backend.c" { next }
        {
            sig = ""
            for (i = 3; i <= NF; i++) if ($i ~ /^signature:/) sig = substr($i, 11)
            if (sig == "" || sig == "(void)" || sig == "()") next
            n = gsub(/,/, ",", sig) + 1
            total++
            if (n > limit) printf "%s: %s takes %d parameters\n", $2, $1, n
        }
        END { printf "#%d\n", total }')
total=$(printf '%s\n' "$out" | sed -n 's/^#//p')
bad=$(printf '%s\n' "$out" | grep -v '^#' || true)
if [ -n "$bad" ]; then
    printf '%s\n' "$bad"
    echo "check_params: $(printf '%s\n' "$bad" | wc -l) function(s) above the backend take more than $limit parameters (carry them in a descriptor)"
    exit 1
fi
echo "check_params: $total functions above the backend take at most $limit parameters"
