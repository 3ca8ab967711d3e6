#!/bin/sh
# Builds the gazetteer of name substitution (docs/data.md §7): proper nouns that never occur in
# the Bible corpus, usable verbatim in Spanish and English, split into a training part and a
# disjoint test part.
#
#   scripts/data/gazetteer.sh CORPUS_DIR OUT_DIR
#
# CORPUS_DIR holds {train,valid,test}.{es,en} (`mtlab data bible`); OUT_DIR receives
# gazetteer.train.txt and gazetteer.test.txt. `make gazetteer` runs it into scripts/data/, and
# tests/check_gazetteer.sh checks that the stored files are exactly what it makes.
# The word lists come from Debian's wamerican and wspanish packages.
set -eu
export LC_ALL=C.UTF-8
corpus=${1:?usage: gazetteer.sh CORPUS_DIR OUT_DIR}
out=${2:?usage: gazetteer.sh CORPUS_DIR OUT_DIR}
en_list=${GAZETTEER_EN_LIST:-/usr/share/dict/american-english}
es_list=${GAZETTEER_ES_LIST:-/usr/share/dict/spanish}
for f in "$en_list" "$es_list"; do
    [ -r "$f" ] || { echo "gazetteer.sh: $f: no such word list (Debian packages wamerican, wspanish)" >&2; exit 1; }
done
for s in train valid test; do
    for l in es en; do
        [ -r "$corpus/$s.$l" ] || { echo "gazetteer.sh: $corpus/$s.$l: missing (run mtlab data bible)" >&2; exit 1; }
    done
done
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Every word that must not be a name, lower-cased: each common (lower-case) entry of both lists
# and each word of the corpus in any case.
{ grep -hv '[[:upper:]]' "$en_list" "$es_list"; cat "$corpus"/train.es "$corpus"/train.en "$corpus"/valid.es \
      "$corpus"/valid.en "$corpus"/test.es "$corpus"/test.en | grep -o '[[:alpha:]]\+'; } |
    sed 's/.*/\L&/' | LC_ALL=C sort -u >"$tmp/taken"

# Candidates: capitalised entries of 3 to 12 ASCII letters (no possessives, no accents, so the
# same spelling fits both languages) whose lower-cased form is no word of either list or corpus.
grep -E '^[A-Z][a-z]{2,11}$' "$en_list" | LC_ALL=C sort -u >"$tmp/capitalised"
sed 's/.*/\L&/' "$tmp/capitalised" | paste - "$tmp/capitalised" | LC_ALL=C sort -t "$(printf '\t')" -k1,1 >"$tmp/pairs"
LC_ALL=C join -t "$(printf '\t')" -v 1 "$tmp/pairs" "$tmp/taken" | cut -f2 | LC_ALL=C sort -u >"$tmp/kept"
# Plurals of other entries (Adas, Aryans) are no names of one bearer: drop X+s and X+es. Nor are
# adjectives of peoples, creeds and languages (Russian, Chinese, Marxist, Baltic), which Spanish
# spells otherwise: drop the endings that make them (a few given names such as Adrian go too).
sed 's/$/s/; p; s/s$/es/' "$tmp/capitalised" | LC_ALL=C sort -u >"$tmp/plurals"
LC_ALL=C comm -23 "$tmp/kept" "$tmp/plurals" | grep -Ev '(ian|ean|ese|ish|ism|ist|ite|ic)$' >"$tmp/names"

# Every fourth name (in byte order) is held out for the test set.
awk 'NR % 4 != 0' "$tmp/names" >"$out/gazetteer.train.txt"
awk 'NR % 4 == 0' "$tmp/names" >"$out/gazetteer.test.txt"
echo "gazetteer.sh: $(wc -l <"$out/gazetteer.train.txt") training names, $(wc -l <"$out/gazetteer.test.txt") test names in $out"
