#!/bin/sh
# tests/check_cycles.sh LIB: the object files of LIB (a static library) use each other one way
# only. Object A depends on object B when A needs a symbol B defines (nm); a cycle (A needs B,
# B needs ... A) means files that cannot be read, tested or replaced apart. Prints the cycles
# found (at least one through every group of files that need each other, with the symbol each
# step needs) and fails; prints one line and succeeds when there is none.
set -eu
lib=${1:?usage: tests/check_cycles.sh LIB}
test -f "$lib" || { echo "check_cycles: $lib: no such library" >&2; exit 2; }
# members are told apart by name: two objects with one basename would merge into one node
dups=$(ar t "$lib" | sort | uniq -d)
if [ -n "$dups" ]; then
    echo "check_cycles: $lib holds two objects named" $dups "(give the files distinct names)"
    exit 1
fi
nm -A "$lib" | awk '
    # "LIB:member.o: U sym" (undefined) or "LIB:member.o:0000 T sym" (defined)
    NF == 3 {
        n = split($1, part, ":"); obj = part[n - 1]
        if (obj == "") next
        objs[obj] = 1
        if ($2 == "U") uses[obj, $3] = 1
        else if ($2 ~ /^[TDBRVWGSCu]$/ && !($3 in owner)) owner[$3] = obj
    }
    END {
        for (key in uses) {
            split(key, p, SUBSEP); sym = p[2]
            if (!(sym in owner) || owner[sym] == p[1]) continue
            if (!((p[1], owner[sym]) in edge)) { edge[p[1], owner[sym]] = sym; nout[p[1]]++; out[p[1], nout[p[1]]] = owner[sym] }
        }
        found = 0
        for (o in objs) if (!(o in color)) visit(o, 0)
        if (found) { print "check_cycles: " found " cycle(s) among the objects of '"$lib"'"; exit 1 }
        print "check_cycles: no cycles among the objects of '"$lib"'"
    }
    # depth-first search; a grey node reached again closes a cycle along the stack
    function visit(v, depth,    i, w, j, line) {
        color[v] = 1; stack[depth] = v
        for (i = 1; i <= nout[v]; i++) {
            w = out[v, i]
            if (!(w in color)) visit(w, depth + 1)
            else if (color[w] == 1) {
                found++; line = ""
                for (j = 0; j <= depth; j++) if (line != "" || stack[j] == w) line = line stack[j] " (" edge[stack[j], (j < depth ? stack[j + 1] : w)] ") -> "
                print "  cycle: " line w
            }
        }
        color[v] = 2
    }
'
