#!/bin/sh
# The MeCab dictionary of sacreBLEU's ja-mecab tokenizer (engine/eval/tok_mecab.c), from the
# IPA dictionary sources Debian ships (mecab-ipadic: EUC-JP CSV and definition files):
#
#   scripts/data/mecab_ipadic.sh OUT_DIR
#
# sacreBLEU uses PyPI's ipadic 1.0.0, which is these sources without the entry Debian's patch
# 0001-new-Japanese-era-reiwa-entry adds to Noun.proper.csv (令和): with it the dictionary has
# 392,127 entries, sacreBLEU refuses anything but 392,126, and "令和" is one word instead of two.
# The sources are converted to UTF-8 (as Debian's mecab-ipadic-utf8 does), that one line is
# dropped, and mecab-dict-index (mecab-utils) compiles them into OUT_DIR.
set -eu
out=${1:?usage: mecab_ipadic.sh OUT_DIR}
src=/usr/share/mecab/dic/ipadic
index=/usr/lib/mecab/mecab-dict-index
[ -d "$src" ] || { echo "mecab_ipadic.sh: $src missing (Debian package mecab-ipadic)" >&2; exit 1; }
[ -x "$index" ] || { echo "mecab_ipadic.sh: $index missing (Debian package mecab-utils)" >&2; exit 1; }
tmp=$out.src
rm -rf "$tmp" "$out"
mkdir -p "$tmp" "$out"
for f in "$src"/*.csv "$src"/*.def; do
    iconv -f EUC-JP -t UTF-8 "$f" > "$tmp/${f##*/}"
done
cp "$src/dicrc" "$tmp/dicrc"
# the one entry PyPI's ipadic does not have; its absence is checked: exactly one line goes
before=$(wc -l < "$tmp/Noun.proper.csv")
sed -i '/^令和,/d' "$tmp/Noun.proper.csv"
after=$(wc -l < "$tmp/Noun.proper.csv")
[ $((before - after)) -le 1 ] || { echo "mecab_ipadic.sh: more than one 令和 entry in $src/Noun.proper.csv" >&2; exit 1; }
"$index" -d "$tmp" -o "$out" -f UTF-8 -t UTF-8 > "$tmp/index.log" 2>&1 ||
    { cat "$tmp/index.log" >&2; exit 1; }
cp "$tmp/dicrc" "$out/dicrc"
rm -rf "$tmp"
