#!/usr/bin/env bash
# The include rules of docs/ARCHITECTURE.md §3, checked on the sources (run by `make test`):
#   engine/ and kernels/ include nothing from app/, and no ncurses, Lua or readline header;
#   app/'s folders include only themselves and the folders below them (the table may_use).
# An include is resolved the way the compiler resolves it: a quoted name first beside the file,
# then (quoted or not) in the -I directories of the Makefile's CPPFLAGS. A name that resolves
# nowhere but starts with one of app/'s folders (or a folder app/ is to get) counts as app/'s.
# Prints every violation as FILE:LINE: problem and ends with one summary line; exit status 1
# when there is any.
#
#   tests/check_layers.sh            check the tree this script sits in
set -u
cd "$(dirname "$0")/.."
root=$PWD

# -I directories, in the compiler's order
mapfile -t incdirs < <(sed -n 's/^CPPFLAGS *:= *//p' Makefile | tr ' ' '\n' | sed -n 's/^-I//p')
[ ${#incdirs[@]} -gt 0 ] || { echo "check_layers: no -I directories in the Makefile's CPPFLAGS" >&2; exit 2; }
# app/'s folders now, and those docs/ARCHITECTURE.md §4 says it will get
mapfile -t appdirs < <({ find app -mindepth 1 -maxdepth 1 -type d -printf '%f\n'; printf '%s\n' console jobs lua; } | sort -u)

# resolved = the path an include resolves to, relative to the root; empty when none.
resolve() { # FILE NAME QUOTED
    local file=$1 name=$2 quoted=$3 d
    local dirs=()
    resolved=
    [ "$quoted" = 1 ] && dirs+=("${file%/*}")
    dirs+=("${incdirs[@]}")
    for d in "${dirs[@]}"; do
        if [ -f "$d/$name" ]; then
            resolved=$(realpath -m --relative-to="$root" "$d/$name")
            return
        fi
    done
}

# why = the reason NAME may not be included from the lower layers, or empty.
forbidden() { # FILE NAME QUOTED
    local file=$1 name=$2 quoted=$3 base first a shown="<$2>"
    [ "$quoted" = 1 ] && shown="\"$2\""
    why=
    base=${name##*/}
    first=${name%%/*}
    case "$base" in
        curses.h|ncurses.h|panel.h|menu.h|form.h|term.h|unctrl.h|termcap.h)
            why="ncurses header $shown"; return ;;
        lua.h|lauxlib.h|lualib.h|luaconf.h|lua.hpp)
            why="Lua header $shown"; return ;;
        readline.h|history.h|rlstdc.h|rltypedefs.h|keymaps.h|chardefs.h|tilde.h)
            why="readline header $shown"; return ;;
    esac
    case "$name" in
        ncurses*/*) why="ncurses header $shown"; return ;;
        lua*/*) why="Lua header $shown"; return ;;
        readline/*|editline/*) why="readline header $shown"; return ;;
    esac
    resolve "$file" "$name" "$quoted"
    if [ -n "$resolved" ]; then
        case "$resolved" in app/*) why="app/ header $shown ($resolved)" ;; esac
        return
    fi
    case "$name" in app/*|*/app/*) why="app/ header $shown"; return ;; esac
    for a in "${appdirs[@]}"; do
        [ "$first" = "$a" ] && { why="app/ header $shown (app/$a/ is app/'s)"; return; }
    done
}

# line, quoted and name of a grep -n hit "LINE:#include <name>" or "name"; 1 for a macro include
# (nothing to resolve).
parse_include() { # HIT
    local inc=${1#*:}
    line=${1%%:*}
    inc=${inc#*include}
    inc=${inc#"${inc%%[!$' \t']*}"}
    case "$inc" in
        \"*) quoted=1; name=${inc#\"}; name=${name%%\"*} ;;
        \<*) quoted=0; name=${inc#<}; name=${name%%>*} ;;
        *) return 1 ;;
    esac
}

violations=0 files=0
while IFS= read -r -d '' file; do
    files=$((files + 1))
    while IFS= read -r hit; do
        parse_include "$hit" || continue
        forbidden "$file" "$name" "$quoted"
        if [ -n "$why" ]; then
            echo "$file:$line: ${file%%/*}/ includes $why"
            violations=$((violations + 1))
        fi
    done < <(grep -nE '^[[:space:]]*#[[:space:]]*include' "$file")
done < <(find engine kernels -type f \( -name '*.c' -o -name '*.h' -o -name '*.cc' -o -name '*.cpp' \
                                        -o -name '*.hpp' -o -name '*.cu' -o -name '*.cuh' \) -print0 | sort -z)

engine_violations=$violations engine_files=$files

# app/'s folders, lowest first: each may include the engine, itself and the folders named after
# it, never one above it, so app/ has a floor (common/) and no cycle. main is app/main.c; tui/
# holds its Lua console (tui/console/), which is a pane of the workbench.
declare -A may_use=(
    [common]=""
    [plot]="common"
    [jobs]="common"
    [bench]="common"
    [lua]="common plot jobs"
    [tui]="common plot jobs lua"
    [cli]="common plot jobs lua tui bench"
    [main]="common cli"
)

# The table itself has no cycle: walking down from each folder never meets a folder twice on one
# path.
cycle=
walk() { # FOLDER PATH
    local d
    for d in ${may_use[$1]}; do
        case " $2 " in *" $d "*) cycle="$2 $d"; return ;; esac
        [ -n "${may_use[$d]+set}" ] || { cycle="$1 -> $d (not in the table)"; return; }
        walk "$d" "$2 $d"
        [ -z "$cycle" ] || return
    done
}
for a in "${!may_use[@]}"; do walk "$a" "$a"; [ -z "$cycle" ] || break; done
if [ -n "$cycle" ]; then
    echo "check_layers: the table of app/'s folders has a cycle: ${cycle// / -> }"
    exit 1
fi

# folder = the app/ folder a path (relative to the root) belongs to, main for app/main.c.
folder_of() {
    local rest=${1#app/}
    case "$rest" in */*) folder=${rest%%/*} ;; *) folder=main ;; esac
}

violations=0 files=0
while IFS= read -r -d '' file; do
    files=$((files + 1))
    folder_of "$file"; own=$folder
    if [ -z "${may_use[$own]+set}" ]; then
        echo "$file: app/$own/ is not in check_layers.sh's table of app/'s folders (say what it may include)"
        violations=$((violations + 1))
        continue
    fi
    while IFS= read -r hit; do
        parse_include "$hit" && [ "$quoted" = 1 ] || continue # <system> headers, macro includes
        resolve "$file" "$name" "$quoted"
        if [ -n "$resolved" ]; then
            case "$resolved" in app/*) ;; *) continue ;; esac
        else
            resolved="app/$name" # unresolved: its first folder names the app/ folder meant
        fi
        folder_of "$resolved"
        [ "$folder" = "$own" ] && continue
        case " ${may_use[$own]} " in *" $folder "*) continue ;; esac
        allowed=${may_use[$own]}
        allowed=${allowed:+only ${allowed// /, }}
        echo "$file:$line: app/$own/ includes \"$name\" ($resolved): app/$own/ may include ${allowed:-no other folder of app/}"
        violations=$((violations + 1))
    done < <(grep -nE '^[[:space:]]*#[[:space:]]*include' "$file")
done < <(find app -type f \( -name '*.c' -o -name '*.h' \) -print0 | sort -z)
app_violations=$violations app_files=$files

status=0
if [ "$engine_violations" -gt 0 ]; then
    echo "check_layers: $engine_violations include(s) break the layering of docs/ARCHITECTURE.md §3 (engine/ and kernels/ may not include app/, ncurses, Lua or readline)"
    status=1
else
    echo "check_layers: $engine_files files of engine/ and kernels/ include nothing from app/, ncurses, Lua or readline"
fi
if [ "$app_violations" -gt 0 ]; then
    echo "check_layers: $app_violations include(s) break the order of app/'s folders (table in tests/check_layers.sh)"
    status=1
else
    echo "check_layers: $app_files files of app/ include only their own folder and the folders below it"
fi
exit $status
