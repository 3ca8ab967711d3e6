#!/usr/bin/env bash
# One architecture registry (docs/adding-an-architecture.md), checked on the sources (run by
# `make test`): the architectures are listed only in engine/models/arch.c's mt_archs, each named
# in its own file's mt_arch entry (`.name = "..."`); everything else gets the list from it
# (mt_model_arch_list, mt_model_preset_names, mtlab.architectures()). A list is three or more
# different architecture names in string literals (each its own, or words of one such as
# "transformer, mamba, retnet") within two consecutive lines; such a list
# anywhere else would leave a new architecture out. Exempt: the architecture files of
# engine/models/, docs/, README.md, models/ and tests/fixtures/ (prose and data), and an
# initialiser marked "not the registry: WHY" (a chosen subset, a property stated per
# architecture, labels), from the marker to the line that ends it with `};`.
# Prints every violation as FILE:LINE: problem and ends with one summary line; exit status 1
# when there is any.
#
#   tests/check_archs.sh            check the tree this script sits in
set -u
cd "$(dirname "$0")/.."

mapfile -t names < <(sed -n 's/^ *\.name = "\([^"]*\)",$/\1/p' engine/models/*.c | sort -u)
[ ${#names[@]} -ge 3 ] || { echo "check_archs: no architectures found in engine/models/*.c" >&2; exit 2; }

mapfile -t files < <(find engine app kernels scripts tests -type f \
    \( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' -o -name '*.lua' -o -name '*.sh' \) \
    -not -path 'tests/fixtures/*' -not -path 'tests/check_archs.sh' | sort)
arch_files=$(grep -l '^const mt_arch mt_arch_' engine/models/*.c)

bad=0
for f in "${files[@]}"; do
    case " $(echo $arch_files) " in *" $f "*) continue ;; esac
    out=$(awk -v list="$(printf '%s\n' "${names[@]}")" -v file="$f" '
        BEGIN { n = split(list, a, "\n"); for (i = 1; i <= n; i++) want["\"" a[i] "\""] = 1 }
        {
            delete cur
            s = $0
            while (match(s, /"[^"]*"/)) {
                w = substr(s, RSTART, RLENGTH)
                if (w in want) cur[w] = 1
                m = split(substr(w, 2, length(w) - 2), words, /[ ,;:()]+/)
                for (j = 1; j <= m; j++) if (("\"" words[j] "\"") in want) cur["\"" words[j] "\""] = 1
                s = substr(s, RSTART + RLENGTH)
            }
            delete both
            k = 0
            for (w in prev) both[w] = 1
            for (w in cur) both[w] = 1
            for (w in both) k++
            if (index($0, "not the registry")) excused = 1
            if (k >= 3 && !excused) printf "%s:%d: lists %d architecture names; take them from the registry (engine/models/arch.c)\n", file, NR, k
            delete prev
            if (!excused) for (w in cur) prev[w] = 1
            if ($0 ~ /};[ \t]*(\/\*.*)?$/) excused = 0
        }' "$f")
    if [ -n "$out" ]; then
        echo "$out"
        bad=$((bad + $(echo "$out" | wc -l)))
    fi
done
if [ "$bad" -gt 0 ]; then
    echo "check_archs: $bad lines list the architectures outside the registry"
    exit 1
fi
echo "check_archs: ${#names[@]} architectures, listed only in the registry"
