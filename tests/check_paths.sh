#!/usr/bin/env bash
# Every file of the repository that the code, tests, scripts, themes and documents name by its
# path exists (run by `make test`): "app/common/theme.h" in a comment or "engine/models/arch.c"
# in a document must be a file here, so a file that moves leaves no old path behind. Not
# checked: a path with a placeholder in capitals (engine/models/NAME.c), a user's file in an
# example (themes/mine.theme), a path whose name says it is missing (no_such, no-such), a path
# on a line that writes it (a test making the file: `>`, tee), and the external names listed
# below with where they live.
# Prints every stale path as FILE:LINE: problem and ends with one summary line; exit status 1
# when there is any.
set -u
cd "$(dirname "$0")/.."
export LC_ALL=C

# paths of other repositories that the sources cite by name
external=(
    "scripts/ar.py" # deep-spin/ssm-mt, the paper's named-entity analysis
)

re='\b(engine|app|kernels|tests|scripts|docs|themes)/[A-Za-z0-9_./+-]+\.(c|h|cu|cuh|cc|lua|sh|py|md|theme|txt|tsv|json)\b'
mapfile -t files < <(git ls-files engine app kernels tests scripts docs themes Makefile README.md 2>/dev/null |
    grep -v -e '^tests/fixtures/' -e '^tests/check_paths\.sh$')
bad=0 named=0
while IFS= read -r hit; do
    file=${hit%%:*} rest=${hit#*:} line=${rest%%:*} text=${rest#*:}
    while read -r path; do
        [ -n "$path" ] || continue
        named=$((named + 1))
        [ -e "$path" ] && continue
        case $path in *[A-Z][A-Z][A-Z]*|*no_such*|*no-such*|*/mine.*) continue ;; esac
        for e in "${external[@]}"; do [ "$path" = "$e" ] && continue 2; done
        case $text in *">$path"*|*"> $path"*|*"tee $path"*) continue ;; esac
        echo "$file:$line: names $path, which is not a file of the repository"
        bad=$((bad + 1))
    done < <(grep -oE "$re" <<<"$text")
done < <(grep -nIE "$re" "${files[@]}" /dev/null)
if [ $bad -gt 0 ]; then
    echo "check_paths: $bad path(s) name no file of the repository"
    exit 1
fi
echo "check_paths: $named paths in the sources and documents name files of the repository"
