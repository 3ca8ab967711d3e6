#!/usr/bin/env bash
# End-to-end tests of the workbench, driven the way a user drives it: the real binary in a
# 120x40 tmux terminal (a private tmux server), keys and pastes sent with send-keys and
# paste-buffer, the screen read back with capture-pane. Every wait polls the screen with a
# timeout; nothing sleeps a fixed time.
#
#   tests/e2e/run.sh ./mtlab build/rel/e2e/make_bundles
#
# Golden screens (tests/e2e/golden/*.txt) are compared where the screen is deterministic;
# UPDATE_GOLDEN=1 rewrites them. Models are two tiny random bundles made by make_bundles.
set -u
cd "$(dirname "$0")/../.."
# the workbench and the patterns below speak UTF-8 whatever the caller's locale
export LC_ALL=C.UTF-8
unset NO_COLOR
root=$PWD
[ $# -eq 2 ] || { echo "usage: $0 MTLAB_BINARY MAKE_BUNDLES" >&2; exit 2; }
bin=$(realpath "$1")
make_bundles=$(realpath "$2")
golden=$root/tests/e2e/golden
command -v tmux >/dev/null || { echo "e2e: tmux is not installed (make deps installs it)"; exit 1; }

work=$(mktemp -d)
sock=$work/tmux.sock
passed=0 failed=0 started=$(date +%s)
. "$root/tests/e2e/lib.sh"
trap e2e_cleanup EXIT
# wait_cursor 0|1: until the terminal's cursor is hidden (a pane has the focus) or shown (the
# editor has it)
cursor_is() { [ "$(T display -p -t e2e '#{cursor_flag}')" = "$1" ]; }
wait_cursor() { wait_until 5 cursor_is "$1"; }

"$make_bundles" "$work/bundles" >"$work/make_bundles.log" 2>&1 || {
    cat "$work/make_bundles.log"; echo "e2e: make_bundles failed"; exit 1; }
mkdir -p "$work/no-models"
cd "$work"

e2e_shell 120 40
T send-keys -t e2e -l "stty -g > stty.before; clear; echo BEFORE-MTLAB"; T send-keys -t e2e Enter
wait_for 'BEFORE-MTLAB' 5

echo "e2e: workbench in tmux (120x40)"
# ---------------------------------------------------------------- no models: the empty state
run_mtlab "$bin tui --models no-models"
check "no models: the empty state says how to get some" wait_for 'No models yet: no-models/ holds no bundle' 10
golden_screen empty_state
quit_workbench
check "Ctrl-Q quits with status 0" exited_cleanly

# ---------------------------------------------------------------- tui's options on bare mtlab
T send-keys -t e2e -l "clear"; T send-keys -t e2e Enter
run_mtlab "$bin --theme light --models no-models"
check "mtlab --theme light opens the workbench" wait_for 'No models yet: no-models/ holds no bundle' 10
T send-keys -t e2e F9
check "... in the light theme (F9 goes on to the next)" wait_for 'theme monochrome \(4 of 4' 5
quit_workbench
check "... and quits with status 0" exited_cleanly

# ---------------------------------------------------------------- the bundles of a models dir
T send-keys -t e2e -l "clear"; T send-keys -t e2e Enter
run_mtlab "$bin tui --models bundles"
check "every bundle of the models dir gets a pane" wait_count 'waiting for text in the editor' 2 10
check "the broken bundle shows its error in its pane" wait_for 'bundles/broken/config.json: not valid' 10
golden_screen three_panes
T send-keys -t e2e F1
check "F1 opens the help generated from the key table" wait_for 'mtlab workbench: keys' 5
golden_screen help
T send-keys -t e2e Escape
check "Esc closes the help" wait_gone 'workbench: keys' 5
T send-keys -t e2e F5
check "F5 opens the bundle picker" wait_for 'model bundles \(3/12 panes\)' 5
golden_screen picker
T send-keys -t e2e Enter
check "choosing an open bundle closes its pane" wait_for 'model bundles \(2/12 panes\)' 5
T send-keys -t e2e Escape; quit_workbench
check "Ctrl-Q quits with status 0" exited_cleanly

# ---------------------------------------------------------------- two models side by side
T send-keys -t e2e -l "clear; echo BEFORE-MTLAB"; T send-keys -t e2e Enter
run_mtlab "$bin tui -m bundles/transformer -m bundles/mamba"
check "both bundles load: titles with architecture, parameters, device" \
    wait_count 'transformer, [0-9.]+K params, cpu|mamba, [0-9.]+K params, cpu' 2 10
verse="En el principio creó Dios los cielos y la tierra, y Pedro fue a Jerusalén."
T send-keys -t e2e -l "$verse"
check "typing pauses, both panes translate and finish" wait_count ' done ' 2 20
check "the source entities are counted in the editor" wait_for 'source · 1 segment · 3 entities' 2
check "each pane shows time, tokens/s, its model state and the working set, each named" \
    wait_count '[0-9.]+ (ms|s) · [0-9.]+k? (tok|t)/s · state [0-9.]+ (B|KiB|MiB) · work(ing set)? [0-9.]+ (B|KiB|MiB)' 2 2
check "each pane lists the entities it dropped, with a symbol" wait_count '✗ dropped: ' 2 2
# the first line of the panes' text, under their titles (wherever the editor's height puts it)
both_panes_have_text() {
    local line; line=$(screen | grep -A1 -m1 '^┌─.*┐┌─' | tail -1)
    [[ ${line%%││*} == *[[:alpha:]]* && ${line#*││} == *[[:alpha:]]* ]]
}
check "both translations are on screen" both_panes_have_text
screen >"$work/main_screen.txt"

# a pasted paragraph is one edit: one translation job for its eight segments
T send-keys -t e2e C-u F2
printf '%s\n' "En el principio creó Dios los cielos y la tierra." \
    "Y la tierra estaba desordenada y vacía." "Y dijo Dios: Sea la luz; y fue la luz." \
    "Y vio Dios que la luz era buena." "Y llamó Dios a la luz Día." \
    "Y fue la tarde y la mañana un día." "Luego dijo Dios: Haya expansión en medio de las aguas." \
    "E hizo Dios la expansión." >"$work/para.txt"
T load-buffer -b para "$work/para.txt"
T paste-buffer -p -b para -t e2e
check "the pasted paragraph arrives as eight segments" wait_for 'source · 8 segments' 5
check "both panes finish the paragraph" wait_count '(transformer|mamba): 8 segments translated' 2 30
one_job() {
    [ "$(screen | grep -c 'translating 8 of 8 segments')" = 2 ] &&
        ! screen | grep -q 'translating [2-7] of 8 segments'
}
check "the paste was one edit: one translation job" one_job
check "the log shows the paste" wait_for 'pasted [0-9]+ bytes' 2
# editing one line of the paste translates that segment alone; the others come from the cache
T send-keys -t e2e Up Up Up End
T send-keys -t e2e -l " Amén"
check "an edited line is the only segment translated again" \
    wait_count '(transformer|mamba): translating 1 of 8 segments \(7 from the cache\)' 2 10
check "... and both panes finish it" wait_count '(transformer|mamba): 1 segment translated \(7 from the cache\)' 2 30
check "the statistics count the cached segments" wait_count '· 7 cached ' 2 5
T send-keys -t e2e F2
screen >"$work/paragraph_screen.txt"
mouse 65 20 30
check "the mouse wheel scrolls the pane under the pointer" wait_for '^┌─ transformer.* 2-[0-9]+/[0-9]+ ─┐┌' 5

# a huge paste is capped with a notice, never silently
head -c 70000 /dev/zero | tr '\0' 'a' >"$work/huge.txt"
T send-keys -t e2e C-u
T load-buffer -b huge "$work/huge.txt"
T paste-buffer -p -b huge -t e2e
check "a huge paste is capped with a notice" wait_for 'paste capped: [0-9]+ of 70000 bytes did not fit' 10
T send-keys -t e2e C-u
T send-keys -t e2e -l "$verse"
wait_count ' done ' 2 20

# ---------------------------------------------------------------- heatmaps
T send-keys -t e2e F3
check "F3 shows a heatmap in every pane, with a legend" wait_count 'scale 0 .{8,16} [0-9.e-]+  per row' 2 15
check "the transformer pane shows attention" wait_for 'self-attention · L1' 2
check "the Mamba pane shows its state norms" wait_for 'state norms · seg 1' 2
T send-keys -t e2e Tab Tab F6
check "F6 moves the Mamba pane to its next map" wait_for 'state groups · L1' 5
T send-keys -t e2e F6
check "... and then to its implicit attention" wait_for 'implicit attention · L1' 5
T send-keys -t e2e C-n
check "Ctrl-N switches the scale to log, shared with the other pane" wait_for 'log, shared by attention' 5
T send-keys -t e2e F12
check "F12 switches it to raw" wait_for 'raw, shared by attention' 5
T send-keys -t e2e Right Right
check "Right moves the cursor a column; the readout names it" wait_for "│row 1 '[^']*' → col 3 '" 5
screen >"$work/heatmap_screen.txt"
T send-keys -t e2e Escape F3

# ---------------------------------------------------------------- mouse
mouse 0 15 80; mouse 3 15 80
check "a click focuses the pane under the pointer" wait_cursor 0
mouse 0 1 10; mouse 3 1 10
check "a click on the editor focuses it again" wait_cursor 1

# ---------------------------------------------------------------- resize
T resize-window -t e2e -x 60 -y 20
check "at 60x20 both panes sit side by side" wait_for '^┌─ transformer.*┐┌─ mamba' 5
check "... and nothing says the terminal is too small" bash -c "! tmux -S '$sock' capture-pane -p -t e2e | grep -q 'too small'"
T resize-window -t e2e -x 30 -y 10
check "below 40x12 it says the terminal is too small" wait_for 'terminal too small' 5
golden_screen too_small
T resize-window -t e2e -x 120 -y 40
check "back at 120x40 the panes return" wait_count 'params, cpu' 2 5

# ---------------------------------------------------------------- themes, quitting
T send-keys -t e2e F9 F2
check "F9 cycles to the next theme and names it in the status line" \
    wait_for '^ theme high-contrast \(2 of 4, 256 colours; F9: next\)' 5
T send-keys -t e2e F2; quit_workbench
check "Ctrl-Q quits with status 0" exited_cleanly
T send-keys -t e2e -l "stty -g > stty.after; cmp -s stty.before stty.after && echo TTY-RESTORED"
T send-keys -t e2e Enter
check "quitting restores the terminal modes" wait_for '^TTY-RESTORED' 5
check "quitting leaves the alternate screen" wait_for 'BEFORE-MTLAB' 2

# ---------------------------------------------------------------- a broken bundle, NO_COLOR
T send-keys -t e2e -l "clear"; T send-keys -t e2e Enter
run_mtlab "NO_COLOR=1 $bin tui -m bundles/broken -m bundles/mamba --theme light --ascii"
wait_for 'broken/config.json: not valid' 10
T send-keys -t e2e -l "$verse"
check "next to a broken bundle the other pane works" wait_count ' done ' 1 20
check "--ascii marks entities with ASCII symbols" wait_for '  x dropped: Dios, Pedro, Jerusalén' 2
T send-keys -t e2e F2
check "NO_COLOR turns colours off" wait_for 'theme light, no colour' 5
quit_workbench
check "quits" exited_cleanly

# ---------------------------------------------------------------- invalid bytes, search, picker, save, log
T send-keys -t e2e -l "clear"; T send-keys -t e2e Enter
run_mtlab "$bin tui -m bundles/mamba"
wait_for 'mamba, [0-9.]+K params, cpu' 10
# a pasted Latin-1 byte: U+FFFD in its place, every line after it kept, the count said
printf 'Primera linea\nSegunda \xe9 linea\nTercera linea\n' >"$work/latin1.txt"
T load-buffer -b latin1 "$work/latin1.txt"
T paste-buffer -p -b latin1 -t e2e
check "a pasted invalid byte becomes U+FFFD and the status line counts it" \
    wait_for '^ 1 invalid byte in the paste replaced by U\+FFFD' 5
check "... and every line after it is kept" \
    bash -c "tmux -S '$sock' capture-pane -p -t e2e | grep -q '^│Segunda � linea' &&
             tmux -S '$sock' capture-pane -p -t e2e | grep -q '^│Tercera linea'"
check "... three segments" wait_for 'source · 3 segments' 2
# typed (not bracketed): a truncated sequence and a lone continuation byte, then valid text
T send-keys -t e2e C-u
T send-keys -t e2e -l "$(printf 'uno \xe2\x82 dos \x80 tres')"
check "typed invalid bytes become U+FFFD and swallow nothing" wait_for '^│uno � dos � tres' 5
check "... and the status line counts the bytes" \
    wait_for '^ 3 invalid bytes in the typed text replaced by U\+FFFD' 5
T send-keys -t e2e C-u
T send-keys -t e2e -l "$verse"
wait_for ' done ' 20
check "the search shows in the title after translating" wait_for '^┌─ mamba · mamba, [0-9.]+K params, cpu · greedy ─' 2
T send-keys -t e2e F4
check "F4 switches it to beam 5, in the title" wait_for '^┌─ mamba · mamba, [0-9.]+K params, cpu · beam 5 ─' 5
wait_for ' done ' 20
T send-keys -t e2e F4
check "back to greedy: the earlier result comes from the cache" wait_for '─ 1 cached ─+ done ─' 10
# Ctrl-S: the source and the pane's translation, in the working directory, never overwritten
T send-keys -t e2e C-s
check "Ctrl-S saves and says where" wait_for '^ saved 1 segment x 1 pane to mtlab-translations-[0-9]{8}-[0-9]{6}(-[0-9]+)?\.tsv and \.jsonl' 5
saved_files() {
    local tsv; tsv=$(ls mtlab-translations-*.tsv | head -1)
    [ "$(sed -n 1p "$tsv")" = "$(printf 'source\tmamba (greedy)\tmamba names')" ] &&
        sed -n 2p "$tsv" | grep -q "^$verse"$'\t'"[[:alpha:]]" &&
        grep -q '"translations":\[{"model":"mamba","bundle":"bundles/mamba","search":"greedy","translation":"' "${tsv%.tsv}.jsonl" &&
        grep -q '"names":\[{"name":"[^"]*","verdict":"\(copied\|translated\|dropped\)"' "${tsv%.tsv}.jsonl" &&
        grep -q '"request":{"seconds":[0-9.e-]*,"tokens":[0-9]*,"tokens_per_s":' "${tsv%.tsv}.jsonl"
}
check "... a TSV and a JSONL of the source and the translation" saved_files
T send-keys -t e2e C-s
# the first save's status line is still on screen: wait for the second file itself (a loaded
# machine can take longer than one look)
saved_twice() { [ "$(ls mtlab-translations-*.tsv | wc -l)" = 2 ]; }
two_saves() { wait_until 5 saved_twice; }
check "a second save writes new files beside the first" two_saves
# F5: a typed path opens its bundle; a bad one is named with its problem
T send-keys -t e2e F5
wait_for 'model bundles \(1/12 panes\)' 5
T send-keys -t e2e -l "nowhere/at-all"
T send-keys -t e2e Enter
check "the picker names a bad path and its problem" wait_for '^ nowhere/at-all: No such file or directory' 5
T send-keys -t e2e -l "x"
for i in $(seq 15); do T send-keys -t e2e BSpace; done
T send-keys -t e2e -l "bundles/transformer"
T send-keys -t e2e Enter
check "the picker opens a typed path" wait_for 'transformer, [0-9.]+K params, cpu' 10
# the log scrolls once Tab gives it the focus
T send-keys -t e2e F2
for i in 1 2 3; do T send-keys -t e2e Tab; done
check "Tab reaches the log, marked as focused" wait_for '^┌─ ▶ log \(F2' 5
log_first() { screen | grep -A1 '─ ▶ log (F2' | tail -1; }
before=$(log_first)
T send-keys -t e2e PPage
log_scrolled() {
    local i
    for i in $(seq 100); do [ "$(log_first)" != "$before" ] && return 0; sleep 0.05; done
    return 1
}
check "PgUp scrolls the log back" log_scrolled
T send-keys -t e2e PPage PPage
check "... to its first line, and shows where it is" wait_for ' 1-[0-9]+/[0-9]+ ─┘$' 5
T send-keys -t e2e Escape; quit_workbench
check "quits" exited_cleanly

# ---------------------------------------------------------------- a device that cannot be opened
T send-keys -t e2e -l "clear"; T send-keys -t e2e Enter
run_mtlab "$bin tui -m bundles/mamba --device cuda:7 -m bundles/mamba"
check "a bundle on an unavailable GPU fails in its own pane, saying why" wait_for 'cuda:7: ' 10
check "... while the CPU pane beside it loads" wait_for 'mamba, [0-9.]+K params, cpu' 10
quit_workbench
check "quits" exited_cleanly

# ---------------------------------------------------------------- the crash handler
T send-keys -t e2e -l "clear"; T send-keys -t e2e Enter
run_mtlab "$bin tui -m bundles/mamba"
wait_for 'mamba, [0-9.]+K params' 10
kill -SEGV "$(mtlab_pid)" 2>/dev/null
check "a crash restores the terminal and says so" \
    wait_for 'the workbench crashed \(segmentation fault\); the terminal was restored' 10
check "... and the process dies of its signal" wait_for 'mtlab exited 139' 5
T send-keys -t e2e -l "stty -g > stty.after; cmp -s stty.before stty.after && echo TTY-RESTORED"
T send-keys -t e2e Enter
check "... with the terminal modes restored" wait_for '^TTY-RESTORED' 5

# ---------------------------------------------------------------- the terminal goes away
# closing the window (here: killing the tmux session) must end the workbench, not leave it
# spinning on a hung-up terminal
T new-session -d -s e2e-gone -x 80 -y 24 "exec $bin tui -m bundles/mamba"
gone_pid=$(T display -p -t e2e-gone '#{pane_pid}')
drawn() {
    local deadline=$(( $(date +%s) + 10 ))
    until T capture-pane -p -t e2e-gone | grep -q 'waiting for text in the editor'; do
        [ "$(date +%s)" -lt $deadline ] || return 1
        sleep 0.05
    done
}
check "... (a workbench in a second terminal is up)" drawn
T kill-session -t e2e-gone
ends_with_its_terminal() {
    local i
    for i in $(seq 50); do kill -0 "$gone_pid" 2>/dev/null || return 0; sleep 0.1; done
    kill -9 "$gone_pid" 2>/dev/null
    return 1
}
check "a workbench whose terminal is closed exits" ends_with_its_terminal

# with TERM=xterm-256color inside tmux the borders are box characters, not the alternate
# character set's letters ("lqqqk")
T new-session -d -s e2e-acs -x 80 -y 24 "env TERM=xterm-256color $bin tui -m bundles/mamba"
boxes_are_lines() {
    local deadline=$(( $(date +%s) + 10 )) top
    until T capture-pane -p -t e2e-acs | grep -q 'waiting for text in the editor'; do
        [ "$(date +%s)" -lt $deadline ] || return 1
        sleep 0.05
    done
    top=$(T capture-pane -p -t e2e-acs | head -1)
    [[ "$top" == "┌─"* ]] && ! T capture-pane -p -t e2e-acs | grep -q 'lqq'
}
check "borders are line characters under TERM=xterm-256color" boxes_are_lines
T kill-session -t e2e-acs

# every theme legible on 8, 16 and 256 colours and without colour: the focused box's title
# carries a mark, and no title or border is drawn in black on the (dark) default background
legible() {
    local env=$1 theme=$2 s=e2e-colours out
    T new-session -d -s $s -x 100 -y 30 "env $env $bin tui -m bundles/mamba --theme $theme"
    local deadline=$(( $(date +%s) + 10 ))
    until T capture-pane -p -t $s | grep -q 'waiting for text in the editor'; do
        [ "$(date +%s)" -lt $deadline ] || { T kill-session -t $s; return 1; }
        sleep 0.05
    done
    out=$(T capture-pane -p -t $s)
    local ok=1
    grep -q '^┌─ ▶ source ·' <<<"$out" && grep -q '^┌─ mamba ·' <<<"$out" || ok=0
    T send-keys -t $s Tab
    sleep 0.3
    out=$(T capture-pane -p -t $s)
    grep -q '^┌─ source ·' <<<"$out" && grep -q '^┌─ ▶ mamba ·' <<<"$out" || ok=0
    # the escape sequences drawing the two top borders: no black foreground unless the theme
    # paints its own background (light), no colour at all with NO_COLOR
    local tops; tops=$(grep -n '^┌' <<<"$out" | cut -d: -f1 | sed 's/$/p/' | paste -sd';')
    local esc; esc=$(T capture-pane -e -p -t $s | sed -n "$tops" | grep -o $'\e\\[[0-9;]*m' | tr -d '\033[m')
    if [[ $env == *NO_COLOR=1* ]]; then
        grep -Eq '(^|;)(3[0-7]|9[0-7]|38)(;|$)' <<<"$esc" && ok=0
    elif [ "$theme" != light ]; then
        grep -Eq '(^|;)(30|38;5;(0|16))(;|$)' <<<"$esc" && ok=0
    fi
    T send-keys -t $s C-q
    sleep 0.2
    T kill-session -t $s 2>/dev/null
    [ $ok = 1 ]
}
for theme in dark light high-contrast monochrome; do
    for env in TERM=linux TERM=xterm TERM=xterm-16color TERM=xterm-256color \
               "TERM=xterm-256color NO_COLOR=1"; do
        check "theme $theme under $env: focus marked, titles visible" legible "$env" $theme
    done
done
# --precision int8 before a bundle applies to that pane only, and its title says so
T new-session -d -s e2e-int8 -x 120 -y 24 "$bin tui -m bundles/mamba --precision int8 -m bundles/mamba"
# panes_ready SESSION N: SESSION's screen once N of its panes wait for text (20 s at most), or
# the screen on stderr and status 1
panes_ready() {
    local deadline=$(( $(date +%s) + 20 ))
    until [ "$(T capture-pane -p -t "$1" | grep -o 'waiting for text in the editor' | wc -l)" -ge "$2" ]; do
        [ "$(date +%s)" -lt $deadline ] || { T capture-pane -p -t "$1" | sed 's/^/      | /' >&2; return 1; }
        sleep 0.05
    done
    T capture-pane -p -t "$1"
}
int8_pane_titled() {
    local screen
    screen=$(panes_ready e2e-int8 2) || return 1
    [ "$(grep -c 'mamba · int8 · mamba' <<<"$screen")" = 1 ] && grep -q '─ mamba · mamba' <<<"$screen"
}
check "a pane opened with --precision int8 says int8 in its title, the other does not" int8_pane_titled
T kill-session -t e2e-int8
# bf16 is a CUDA precision: on the CPU its pane says why it did not load, the next pane loads
T new-session -d -s e2e-bf16 -x 120 -y 24 "$bin tui --precision bf16 -m bundles/mamba --precision fp32 -m bundles/mamba"
bf16_pane_refused() {
    local screen
    screen=$(panes_ready e2e-bf16 1) || return 1
    grep -q 'mamba · bf16' <<<"$screen" && grep -q 'no bf16 linear layers' <<<"$screen" &&
        grep -q 'not loaded' <<<"$screen"
}
check "a pane opened with --precision bf16 on the CPU says why it did not load" bf16_pane_refused
T kill-session -t e2e-bf16

# a bundle that does not load searches nothing: its title names no greedy or beam
T new-session -d -s e2e-bad -x 100 -y 20 "$bin tui -m no-such-bundle -m bundles/mamba"
unloaded_pane_titled() {
    local screen
    screen=$(panes_ready e2e-bad 1) || return 1
    grep -q '^┌─ no-such-bundle ─' <<<"$screen" && grep -q 'not loaded' <<<"$screen" &&
        grep -q '┌─ mamba · mamba.* · greedy ─' <<<"$screen"
}
check "a pane whose bundle did not load names no search in its title" unloaded_pane_titled
T kill-session -t e2e-bad

# ---------------------------------------------------------------- command line
unknown_theme() {
    local out rc
    out=$("$bin" tui --theme nope 2>&1 </dev/null); rc=$?
    [ $rc = 1 ] && [ "$out" = "mtlab: no theme 'nope' (themes: dark, high-contrast, light, monochrome)" ]
}
check "an unknown theme is an error naming the themes" unknown_theme
bad_device() {
    local out rc
    out=$(echo "hola" | "$bin" translate -m bundles/mamba --device cuda:7 2>&1); rc=$?
    [ $rc = 1 ] && [[ "$out" == "mtlab: cuda:7: "* ]]
}
check "translate on an unavailable device says which and why" bad_device
# the config names the dtype the weights are stored in, and inspect says when they disagree
dtype_agrees() { "$bin" inspect bundles/mamba | grep -qx 'dtype      float32, as the config says'; }
check "inspect: a written bundle's config names its weights' dtype" dtype_agrees
dtype_disagrees() {
    rm -rf mislabelled && cp -r bundles/mamba mislabelled &&
        sed -i 's/"dtype": "float32"/"dtype": "float16"/' mislabelled/config.json &&
        "$bin" inspect mislabelled | grep -q 'the config says float16 but the weights are stored as float32: they disagree'
}
check "inspect: a config whose dtype is not the weights' is reported" dtype_disagrees
bad_precision() {
    local out rc
    out=$(echo "hola" | "$bin" translate -m bundles/mamba --precision int4 2>&1); rc=$?
    [ $rc = 1 ] && [ "$out" = "mtlab: unknown precision 'int4' (fp32, int8 or bf16)" ]
}
check "translate with an unknown precision names the ones there are" bad_precision

# ---------------------------------------------------------------- the shipped models
# every bundle in models/ loads through the reader and translates Genesis 1:3 into English
# that names God and the light, with its linear layers in fp32 and in int8 (greedy; the
# words, not the exact sentence, so a rounding difference between machines cannot fail it)
translates_genesis() {
    local out
    out=$(echo "Y dijo Dios: Sea la luz: y fué la luz." |
          "$bin" translate -m "$1" --precision "$2" 2>&1) &&
        [[ "$out" == *God* ]] && [[ "${out,,}" == *light* ]] ||
        { echo "      | $out"; return 1; }
}
shipped=0
for dir in "$root"/models/*/; do
    [ -f "$dir/config.json" ] || continue
    shipped=$((shipped + 1))
    check "models/$(basename "$dir") translates Genesis 1:3" translates_genesis "$dir" fp32
    check "models/$(basename "$dir") translates Genesis 1:3 in int8" translates_genesis "$dir" int8
done
some_shipped() { [ "$shipped" -ge 2 ]; }
check "models/ ships bundles ($shipped)" some_shipped

# E2E_CAPTURES=DIR keeps the screens of the nondeterministic views (translations, heatmaps)
[ -n "${E2E_CAPTURES:-}" ] && cp "$work"/*_screen.txt "$E2E_CAPTURES/"
echo
echo "end-to-end tests took $(( $(date +%s) - started )) s"
echo "e2e: $passed passed, $failed failed"
[ "$failed" = 0 ]
