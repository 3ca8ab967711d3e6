#!/usr/bin/env bash
# Every document the sources cite lives in the repository, and every section they cite exists
# (run by `make test`). Checked in the code, the scripts, the tests, the Makefile, README.md
# and docs/ itself:
#   - a name ending in .md must be a file of the repository (relative to the root, to the
#     citing file, or to docs/): a citation of a document outside it ("MODELS.md") fails;
#   - "docs/models.md §3.4" (or, inside docs/, "models.md §3.4") needs a heading "### 3.4 ..."
#     in that file, "§3" a heading "## 3. ..."; every § after a document name up to the next
#     document name belongs to it ("docs/models.md §3.4 and §3.6").
# Prints every broken citation as FILE:LINE: problem and ends with one summary line; exit
# status 1 when there is any. POSIX awk only (Debian's default awk is mawk).
set -u
cd "$(dirname "$0")/.."
export LC_ALL=C

files=$(grep -rlI --exclude-dir=.git --exclude-dir=build -e '\.md' \
            engine kernels app tests scripts docs themes Makefile README.md 2>/dev/null |
        grep -v '^tests/check_docs\.sh$' | sort)
[ -n "$files" ] || { echo "check_docs: nothing cites a document"; exit 0; }

# shellcheck disable=SC2086
awk '
function exists(path,    line, r) {
    if (path in known) return known[path]
    r = (getline line < path) >= 0
    if (r) close(path)
    known[path] = r
    return r
}
# The file a citation names, or "" when none of the places holds it.
function locate(name, citing,    dir) {
    dir = citing; sub(/[^\/]*$/, "", dir)
    if (name ~ /^\//) return ""
    if (exists(name)) return name
    if (dir != "" && exists(dir name)) return dir name
    if (exists("docs/" name)) return "docs/" name
    return ""
}
# 1 when doc has a heading for section sec ("3" -> "## 3. ...", "3.4" -> "### 3.4 ...").
function has_section(doc, sec,    line, pat, key) {
    key = doc SUBSEP sec
    if (key in sections) return sections[key]
    if (!(doc in loaded)) {
        loaded[doc] = 1
        while ((getline line < doc) > 0)
            if (line ~ /^#+ [0-9]/) {
                sub(/^#+ /, "", line)
                sub(/[ \t].*$/, "", line)
                sub(/\.$/, "", line)
                heads[doc SUBSEP line] = 1
            }
        close(doc)
    }
    sections[key] = (doc SUBSEP sec) in heads
    return sections[key]
}
function fail(msg) {
    printf "%s:%d: %s\n", FILENAME, FNR, msg
    broken++
}
{
    rest = $0
    while (match(rest, /[A-Za-z0-9_.\/-]*[A-Za-z0-9_-]\.md/)) {
        name = substr(rest, RSTART, RLENGTH)
        rest = substr(rest, RSTART + RLENGTH)
        # the sections cited after this name, up to the next document name
        span = rest
        if (match(span, /[A-Za-z0-9_-]\.md/)) span = substr(span, 1, RSTART - 1)
        doc = locate(name, FILENAME)
        cited++
        if (doc == "") {
            fail("cites " name ", which is not a file of the repository")
            continue
        }
        while (match(span, /\302\247[0-9]+(\.[0-9]+)*/)) {
            sec = substr(span, RSTART + 2, RLENGTH - 2)
            span = substr(span, RSTART + RLENGTH)
            sects++
            if (!has_section(doc, sec)) fail("cites " doc " section " sec ", which has no heading \"" sec "\" there")
        }
    }
}
END {
    if (broken) {
        printf "check_docs: %d broken citation(s) of documents (cite files of the repository, sections that exist)\n", broken
        exit 1
    }
    printf "check_docs: %d document citations (%d sections) name files and sections that exist\n", cited, sects
}
' $files
