#!/bin/sh
# The stored gazetteer (scripts/data/gazetteer.{train,test}.txt) is exactly what its builder makes
# from the Debian word lists and the corpus (run by `make test`), and its two parts are disjoint.
# Skipped, saying why, when the corpus or the word lists are not there.
set -u
cd "$(dirname "$0")/.."
for f in data/bible/train.es /usr/share/dict/american-english /usr/share/dict/spanish; do
    [ -r "$f" ] || { echo "check_gazetteer: skipped ($f is missing)"; exit 0; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
scripts/data/gazetteer.sh data/bible "$tmp" >/dev/null || exit 1
status=0
for part in train test; do
    if ! cmp -s "$tmp/gazetteer.$part.txt" "scripts/data/gazetteer.$part.txt"; then
        echo "check_gazetteer: scripts/data/gazetteer.$part.txt differs from what scripts/data/gazetteer.sh makes (run make gazetteer):"
        diff "scripts/data/gazetteer.$part.txt" "$tmp/gazetteer.$part.txt" | head -5
        status=1
    fi
done
shared=$(LC_ALL=C comm -12 scripts/data/gazetteer.train.txt scripts/data/gazetteer.test.txt | head -3)
[ -z "$shared" ] || { echo "check_gazetteer: names in both parts: $shared"; status=1; }
[ $status = 0 ] && echo "check_gazetteer: the gazetteer is reproducible ($(wc -l <scripts/data/gazetteer.train.txt) + $(wc -l <scripts/data/gazetteer.test.txt) names)"
exit $status
