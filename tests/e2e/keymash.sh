#!/usr/bin/env bash
# The workbench under a seeded storm of keys (the ASan/UBSan build in `make test`): typed text,
# Ctrl keys, function keys, the Lua console (Ctrl-O, and Ctrl-R with Ctrl-X inside it, which
# crashed readline), heatmaps (F3, also of an empty translation), bracketed pastes with
# invalid UTF-8 and a paste's end marker inside them, and window resizes, on two shipped models.
# It fails on a crash, a sanitizer report (leaks at exit included), a hang (the workbench must
# redraw after each batch and quit at the end) or a stderr capture file left behind. First,
# quitting with unsaved text asks (a paste that ends early must not quit with the text).
#
#   tests/e2e/keymash.sh ./mtlab [SEED]      (MASH_KEYS=N keys, 3000 by default)
#
# The seed is printed; the same seed replays the same keys. Without one the run is the fixed seed
# 899401 (which found Tab completing against a closed console's Lua state), so `make test` is
# deterministic; MASH_SEED=random draws one from the clock, for hunting.
set -u
cd "$(dirname "$0")/../.."
export LC_ALL=C.UTF-8
unset NO_COLOR
root=$PWD
[ $# -ge 1 ] && [ $# -le 2 ] || { echo "usage: $0 MTLAB_BINARY [SEED]" >&2; exit 2; }
bin=$(realpath "$1")
seed=${2:-${MASH_SEED:-899401}}
[ "$seed" = random ] && seed=$(( $(date +%s%N) % 1000000 ))
n_keys=${MASH_KEYS:-3000}
models=$root/models
command -v tmux >/dev/null || { echo "e2e keymash: tmux is not installed (make deps installs it)"; exit 1; }

work=$(mktemp -d)
sock=$work/tmux.sock
passed=0 failed=0 started=$(date +%s)
. "$root/tests/e2e/lib.sh"
trap e2e_cleanup EXIT
mkdir -p "$work/tmp" "$work/state"
cd "$work"

e2e_shell 100 30 "TMPDIR='$work/tmp'"
# mtlab's stderr (and a sanitizer's report) to a file, read after it ends
start_mtlab() {
    T send-keys -t e2e -l "clear"; T send-keys -t e2e Enter
    run_mtlab "$bin tui -m $models/mamba-small -m $models/transformer-small 2>>stderr.txt"
    wait_count ' ready ─┘' 2 60
}
no_reports() { ! grep -Eq 'Sanitizer|runtime error:|crashed' stderr.txt; }
# the screen's last line drawn after a resize: the workbench is still reading its terminal
redrawn_at() {
    T resize-window -t e2e -x "$1" -y "$2"
    wait_until 30 bash -c "[ \"\$(tmux -S '$sock' capture-pane -p -t e2e | sed -n '$2p' | tr -d ' ')\" != '' ]"
}

echo "e2e: the workbench under mashed keys in tmux (seed $seed, $n_keys keys)"
touch stderr.txt

# ---------------------------------------------------------------- quitting with unsaved text
start_mtlab || { fail "the workbench did not load the models"; exit 1; }
T send-keys -t e2e -l "Hola mundo"
# a paste whose end marker comes early: what follows it (Ctrl-Q) is typed
printf 'Y dijo\033[201~\021' >paste.txt
T load-buffer -b early paste.txt
T paste-buffer -p -b early -t e2e
check "Ctrl-Q with unsaved text asks first" wait_for 'quit\? the editor.s text is not saved' 10
T send-keys -t e2e n
check "... any other key than q or y stays, with the text" wait_for 'Hola mundoY dijo' 5
check "... and says so" wait_for 'not quitting' 5
T send-keys -t e2e F10
wait_for 'quit\? the editor.s text is not saved' 5
T send-keys -t e2e y
check "... y quits" exited_cleanly

# ---------------------------------------------------------------- the mash
RANDOM=$seed
start_mtlab || { fail "the workbench did not load the models"; exit 1; }
# mamba-small's translation of "Hola" is empty: its heatmap (F3) is probed from no tokens,
# which UBSan stopped the workbench on
T send-keys -t e2e -l "Hola"; T send-keys -t e2e C-r
check "Hola is translated by both panes" wait_count ' done ' 2 60
T send-keys -t e2e F3
check "... and F3 shows their heatmaps, the empty translation's too" wait_count '(state norms|attention) · ' 2 60
T send-keys -t e2e F3
words=(Hola mundo luz Dios dijo Sea la y en el principio "é" "ñ" "中文" x 1 "(" ")" "=")
ctrls=(C-a C-b C-d C-e C-f C-h C-k C-l C-n C-o C-p C-r C-s C-t C-u C-v C-w C-x C-y)
fkeys=(F1 F2 F3 F3 F4 F5 F9 F12 Up Down Left Right Home End PPage NPage Tab BTab Escape
       Enter Enter BSpace BSpace DC Space)
# a paste: words, invalid bytes, a lone escape, now and then the paste's end marker inside it
paste_text() {
    local i n=$((1 + RANDOM % 6))
    for ((i = 0; i < n; i++)); do
        case $((RANDOM % 6)) in
        0) printf '\377\376' ;;
        1) printf '\200\300' ;;
        2) printf '\n' ;;
        3) [ $((RANDOM % 4)) = 0 ] && printf '\033[201~' || printf '\033' ;;
        *) printf '%s ' "${words[RANDOM % ${#words[@]}]}" ;;
        esac
    done
}
sizes=("100 30" "80 24" "40 12" "20 8" "140 45" "60 20" "120 40" "30 10")
sent=0 batch=0 hung=0
while [ $sent -lt "$n_keys" ] && [ $hung = 0 ]; do
    keys=()
    for ((k = 0; k < 25; k++)); do
        r=$((RANDOM % 100))
        if [ $r -lt 40 ]; then keys+=("${words[RANDOM % ${#words[@]}]}" Space)
        elif [ $r -lt 65 ]; then keys+=("${ctrls[RANDOM % ${#ctrls[@]}]}")
        elif [ $r -lt 95 ]; then keys+=("${fkeys[RANDOM % ${#fkeys[@]}]}")
        else keys+=(C-o C-r C-x x)   # the console's search and a key sequence inside it
        fi
    done
    T send-keys -t e2e "${keys[@]}"
    sent=$((sent + ${#keys[@]}))
    case $((RANDOM % 4)) in
    0) paste_text >paste.txt; T load-buffer -b mash paste.txt; T paste-buffer -p -b mash -t e2e ;;
    1) T resize-window -t e2e -x ${sizes[RANDOM % 8]% *} -y ${sizes[RANDOM % 8]#* } ;;
    esac
    batch=$((batch + 1))
    if [ $((batch % 8)) = 0 ] || [ $sent -ge "$n_keys" ]; then
        if ! { [ -n "$(mtlab_pid)" ] && redrawn_at 99 29 && redrawn_at 100 30; }; then
            hung=1
            if [ -z "$(mtlab_pid)" ]; then fail "the workbench ended during the mash (seed $seed)"
            else fail "the workbench stopped redrawing (seed $seed)"; fi
        fi
    fi
done
[ $hung = 0 ] && ok "$sent keys, $batch batches of keys, pastes and resizes: no crash, no hang"

# ---------------------------------------------------------------- the end: it quits and tells
if [ $hung = 0 ]; then
    T resize-window -t e2e -x 100 -y 30
    # a question left open takes Escape; then Ctrl-Q, answered when it asks
    T send-keys -t e2e Escape Escape
    quit_workbench
    check "the workbench quits after the mash (seed $seed)" wait_for 'mtlab exited [0-9]+' 30
fi
check "... with status 0 (seed $seed)" bash -c "tmux -S '$sock' capture-pane -p -t e2e | grep -q 'mtlab exited 0'"
check "... and no sanitizer report, crash or leak on its stderr" no_reports
check "... and no stderr capture file left in TMPDIR" bash -c "[ -z \"\$(ls -A '$work/tmp')\" ]"
if [ $failed -gt 0 ]; then
    echo "  its stderr:"; sed 's/^/      | /' stderr.txt | head -60
    echo "  replay: MASH_SEED=$seed $0 $1"
fi

echo "e2e keymash: $passed passed, $failed failed ($(( $(date +%s) - started )) s, seed $seed)"
[ $failed -eq 0 ]
