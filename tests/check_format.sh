#!/usr/bin/env bash
# One layout for the C, C++ and CUDA sources: .clang-format at the top, checked on the sources
# (run by `make test`; `make format` rewrites the files in place). Prints each file clang-format
# would change, with its first differing lines, and ends with one summary line; exit status 1
# when there is any.
#
#   tests/check_format.sh           check the tracked sources of the tree this script sits in
set -u
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null || { echo "check_format: clang-format is not installed (make deps installs it)" >&2; exit 2; }

mapfile -t files < <(git ls-files '*.c' '*.h' '*.cu' '*.cuh' '*.cc' '*.cpp' 2>/dev/null ||
                     find engine app kernels tests -name '*.[ch]' -o -name '*.cu' -o -name '*.cuh' -o -name '*.cc')
bad=0
for f in "${files[@]}"; do
    [ -f "$f" ] || continue
    if ! out=$(clang-format --style=file "$f" | diff -u "$f" - | sed -n '3,12p'); then :; fi
    if [ -n "$out" ]; then
        echo "$f: not in .clang-format's layout (make format rewrites it):"
        printf '%s\n' "$out" | sed 's/^/    /'
        bad=$((bad + 1))
    fi
done
if [ $bad -gt 0 ]; then
    echo "check_format: $bad of ${#files[@]} files differ from .clang-format's layout"
    exit 1
fi
echo "check_format: ${#files[@]} files in .clang-format's layout"
