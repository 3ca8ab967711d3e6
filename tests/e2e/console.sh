#!/usr/bin/env bash
# End-to-end tests of the workbench's Lua console (Ctrl-O) and the demos of scripts/demo/, in
# a 120x40 tmux terminal as tests/e2e/run.sh does: evaluate, complete, interrupt, a traceback,
# `ui` driving the panes, and each demo driven key by key to its end.
#
#   tests/e2e/console.sh ./mtlab build/rel/e2e/make_bundles
set -u
cd "$(dirname "$0")/../.."
export LC_ALL=C.UTF-8
unset NO_COLOR
root=$PWD
[ $# -eq 2 ] || { echo "usage: $0 MTLAB_BINARY MAKE_BUNDLES" >&2; exit 2; }
bin=$(realpath "$1")
make_bundles=$(realpath "$2")
command -v tmux >/dev/null || { echo "e2e: tmux is not installed (make deps installs it)"; exit 1; }

work=$(mktemp -d)
sock=$work/tmux.sock
. "$root/tests/e2e/lib.sh"
trap e2e_cleanup EXIT
passed=0 failed=0 started=$(date +%s)

"$make_bundles" "$work/bundles" >"$work/make_bundles.log" 2>&1 || {
    cat "$work/make_bundles.log"; echo "e2e: make_bundles failed"; exit 1; }
cd "$work"
e2e_shell 120 40

echo "e2e: the Lua console in tmux (120x40)"
run_mtlab "$bin tui -m bundles/transformer"
wait_for 'transformer, [0-9.]+K params' 10
T send-keys -t e2e C-o
check "Ctrl-O opens the console under the panes" wait_for '^┌─ Lua console \(Ctrl-O\)' 5
check "... and the pane stays visible above it" wait_for '^┌─ transformer · transformer' 1
type_line "1+1"
check "1+1 prints 2" wait_for '^│2 +│$' 5
type_line "print(string.rep('word ', 30))"
check "a long line wraps at a space, not inside a word" wait_for '^│word( word){22} +│$' 5
check "... and goes on with the next word" wait_for '^│word( word){6} +│$' 1
type_line "{1, 'two', x = {y = 3}}"
check "a table is pretty-printed" wait_for '^│\{1, "two", x = \{y = 3\}\} +│' 5
T send-keys -t e2e -l "mtlab.sc"; T send-keys -t e2e Tab
check "Tab completes mtlab.sc to mtlab.score." wait_for '^│> mtlab\.score\. +│' 5
T send-keys -t e2e -l "ch"; T send-keys -t e2e Tab
check "... and on to mtlab.score.chrf" wait_for '^│> mtlab\.score\.chrf +│' 5
T send-keys -t e2e C-u
type_line "m = mtlab.load('bundles/mamba')"
T send-keys -t e2e -l "m:tr"; T send-keys -t e2e Tab
check "after ':' a handle's methods complete" wait_for '^│> m:translate +│' 10
T send-keys -t e2e C-u
type_line "for i = 1, 1e9 do end"
check "a long loop runs without blocking the screen" wait_for 'running, Ctrl-C interrupts' 5
T send-keys -t e2e C-c
check "Ctrl-C interrupts it" wait_for '^│interrupted +│$' 5
check "... and says where" wait_for '^│        console:1: in main chunk' 1
check "... and the console is ready again" wait_gone 'running, Ctrl-C interrupts' 5
type_line "for i = 1, 1e9 do if i == 3e7 then break end end return 'key', ui.wait_key()"
wait_for 'running, Ctrl-C interrupts' 5
T send-keys -t e2e -l "x"
check "a key typed while Lua runs goes to the next ui.wait_key" wait_for '^│key +x +│$' 20
type_line "error('boom')"
check "an error prints its message" wait_for '^│console:1: boom +│$' 5
T send-keys -t e2e F12
check "... and F12 its traceback" wait_for "^│        \[C\]: in function 'error'" 5
T send-keys -t e2e C-t
check "... and Ctrl-T (F12 on a laptop) prints it again" wait_count "^│        \[C\]: in function 'error'" 2 5
# Shift-Up / Shift-Down resize the console two rows a step: its top border moves
console_top() { screen | grep -n '^┌─ Lua console' | cut -d: -f1; }
console_top_is() { [ "$(console_top)" = "$1" ]; }
top=$(console_top)
T send-keys -t e2e S-Up
check "Shift-Up makes the console taller" wait_until 5 console_top_is $((top - 2))
T send-keys -t e2e S-Down; T send-keys -t e2e S-Down
check "Shift-Down makes it shorter" wait_until 5 console_top_is $((top + 2))
T send-keys -t e2e S-Up
wait_until 5 console_top_is "$top"
type_line "2*21"
check "... and the console goes on" wait_for '^│42 +│$' 5
T send-keys -t e2e C-r; T send-keys -t e2e -l "2*"
check "Ctrl-R searches the history" wait_for "^│\\(reverse-i-search\\)\`2\\*': 2\\*21 +│" 5
T send-keys -t e2e C-g
check "... and Ctrl-G leaves the search" wait_for '^│> +│$' 5
type_line "for i = 1, 2 do"
check "an incomplete chunk asks for more (>>)" wait_for '^│>> +│$' 5
type_line "print('line', i) end"
check "... and runs when it is complete; print writes into the console" wait_for '^│line    2 +│$' 5
type_line "? mtlab.load"
check "? NAME shows mtlab.help" wait_for '^│mtlab\.load\(path' 5
type_line "io.write('no newline') io.write(' yet', '\n')"
check "io.write goes to the console too" wait_for '^│no newline yet +│' 5
type_line "ui.open('bundles/mamba') ui.set_text('Y dijo Dios: Sea la luz.') ui.translate() ui.wait() return #ui.panes()"
check "ui.open opens a pane, ui.set_text fills the editor" wait_for '┌─ mamba · mamba, [0-9.]+K params' 10
check "... and ui.wait returns once both panes translated it" wait_for '^│2 +│$' 20
check "... whose translations show" bash -c "[ \$(tmux -S '$sock' capture-pane -p -t e2e | grep -c ' done ─┘') -ge 1 ] &&
    tmux -S '$sock' capture-pane -p -t e2e | grep -q '┌─ mamba · mamba, .* · greedy ─'"
type_line "ui.notify('a note from Lua')"
check "ui.notify writes in the status line" wait_for '^ a note from Lua' 5
type_line "ui.heatmap(2, {kind = 'state_norms'}) ui.wait(2)"
check "ui.heatmap shows a pane's map" wait_for 'state norms · ' 10
type_line "ui.bind('F11', function() print('F11 pressed') end)"
T send-keys -t e2e F11
check "ui.bind runs a Lua function on its key" wait_for '^│F11 pressed' 5
type_line "ui.close(5)"
check "a bad ui call is an error naming the problem" wait_for '^│console:1: ui.close: no pane 5 \(2 open\)' 5
T send-keys -t e2e PPage
check "PgUp scrolls the output back" wait_for 'scrolled back, PgDn' 5
# however far PgUp goes, it stops at the oldest line (the greeting): the view never scrolls empty
greeting_on_top() {
    screen | grep -A1 '^┌─ Lua console' | tail -1 | grep -Eq '^│ *[^ │]' &&
        screen | grep -q 'Ctrl-O closes)'
}
for i in $(seq 30); do T send-keys -t e2e PPage; done
check "... as far as its first line, the view still full" wait_until 5 greeting_on_top
for i in $(seq 30); do T send-keys -t e2e NPage; done
check "PgDn returns" wait_gone 'scrolled back, PgDn' 5
T resize-window -t e2e -x 60 -y 20
check "at 60x20 the console still sits under both panes" wait_for '^┌─ Lua console \(Ctrl-O\)' 5
check "... which stay side by side" wait_for '^┌─ transformer.*┐┌─ mamba' 1
type_line "3*3"
check "... and works" wait_for '^│9 +│$' 5
T resize-window -t e2e -x 120 -y 40
wait_for '^┌─ transformer · transformer' 5
type_line "ui.cursor(2, 2, 3)"
check "ui.cursor puts the map's cursor on a cell (1-based), named in the readout" wait_for 'row 2 .* col 3 ' 5
type_line "ui.heatmap(2, {kind = 'implicit'}) ui.wait(2) ui.scroll(2, 20)"
check "ui.scroll makes a map row the first shown (the cursor on it)" wait_for 'row 20 .* col 3 ' 10
type_line "ui.cursor(2, 99, 1)"
check "... a cell off the map is an error" wait_for "ui.cursor: mamba's map has [0-9]+ rows" 5
type_line "print(ui.export(2))"
check "ui.export writes the map's files and says where" wait_for '^│wrote .*\.svg, \.png and \.csv' 10
console_top() { [ "$(screen | grep -n '^┌─ Lua console' | cut -d: -f1)" = "$1" ]; }
type_line "ui.console{height = 8}"
check "ui.console{height=} sizes the console" wait_until 5 console_top 32
type_line "ui.console{height = 12}"
check "... and again" wait_until 5 console_top 28
type_line "ui.console{size = 3}"
check "... an unknown field is an error" wait_for "ui.console: unknown field 'size'" 5
type_line "ui.zoom(2)"
check "ui.zoom shows one pane over the screen, the console closed" wait_gone 'Lua console' 5
check "... the pane from the top line" bash -c "tmux -S '$sock' capture-pane -p -t e2e | head -1 | grep -q '^┌─ ▶ mamba'"
T send-keys -t e2e C-o
check "Ctrl-O brings the console back" wait_for '^┌─ Lua console' 5
type_line "os.exit(0)"
check "os.exit asks before quitting" wait_for 'os.exit: quit the workbench\?' 5
T send-keys -t e2e n
check "... and any key but y keeps the workbench" wait_for 'os.exit: not quitting' 5
T send-keys -t e2e C-o
check "Ctrl-O closes the console" wait_gone 'Lua console' 5
T send-keys -t e2e C-o
check "... and opens it again with its output kept" wait_for 'os.exit: not quitting' 5
type_line "os.exit(0)"
wait_for 'os.exit: quit the workbench\?' 5
T send-keys -t e2e y
check "y quits" exited_cleanly
has_history() { grep -q '^2\*21$' "$work/state/mtlab/history"; }
check "the lines are kept in \$XDG_STATE_HOME/mtlab/history" has_history

# ---------------------------------------------------------------- the demos
# each runs from --script on the shipped models, advancing on Space until it says it is over;
# the first also goes back a step with Backspace, and keys other than Space, Enter and
# Backspace drive the workbench instead of the lesson
step_shown() { screen_has "^ \\[$1/[0-9]+ · Space: next · Backspace: back\\]"; }
first=1
for demo in ${E2E_DEMOS-forgetting implicit_attention copying}; do
    T send-keys -t e2e -l "clear"; T send-keys -t e2e Enter
    run_mtlab "$bin tui --models '$root/models' --script '$root/scripts/demo/$demo.lua'"
    if [ $first = 1 ]; then
        first=0
        wait_until 120 step_shown 1
        T send-keys -t e2e Tab
        check "in a lesson Tab focuses the next pane" wait_for '^┌─ ▶ mamba-small' 5
        T send-keys -t e2e z Tab Tab
        check "... and z, Tab, Tab do not advance the lesson" step_shown 1
        T send-keys -t e2e Space
        check "Space goes to the next step" wait_until 120 step_shown 2
        T send-keys -t e2e BSpace
        check "Backspace goes back a step" wait_until 120 step_shown 1
        T send-keys -t e2e Enter
        check "Enter goes to the next step too" wait_until 120 step_shown 2
    fi
    for _ in $(seq 20); do
        wait_for '\[[0-9]+/[0-9]+ · Space: next · Backspace: back\]|end of the demo|stack traceback' 120 || break
        screen | grep -Eq 'end of the demo|stack traceback' && break
        step=$(screen | grep -Eo '\[[0-9]+/' | tail -1 | tr -d '[/')
        T send-keys -t e2e Space
        wait_until 120 bash -c "! tmux -S '$sock' capture-pane -p -t e2e | grep -Eq '^ \\[$step/[0-9]+ · Space'" || break
    done
    check "... no step says a claim does not hold" bash -c "! tmux -S '$sock' capture-pane -p -t e2e -S - | grep -q 'not so with these models'"
    check "demo $demo runs to its end" wait_for 'end of the demo' 60
    check "... without an error" bash -c "! tmux -S '$sock' capture-pane -p -t e2e | grep -Eq 'stack traceback|Sanitizer'"
    quit_workbench
    check "... and the workbench quits" exited_cleanly
done

# ---------------------------------------------------------------- a lesson on a projector
# the implicit-attention lesson at its third step (the cursors on the cell it talks about) at
# 100x30 and 80x24: both maps, the readouts under them, the console and the status line
golden=$root/tests/e2e/golden
# no console line is filled to its border with a letter that the next line goes on with (a
# line wrapped at a space ends short of the border)
no_word_cut() {
    ! screen | sed -n '/^┌─ Lua console/,/^└/p' | sed 's/^│//; s/│$//' |
        awk 'NR > 1 && prev ~ /[[:alnum:]]$/ && $0 ~ /^[[:alnum:]]/ {cut = 1} {prev = $0} END {exit !cut}'
}
for size in 100x30 80x24; do
    T resize-window -t e2e -x "${size%x*}" -y "${size#*x}"
    T send-keys -t e2e -l "clear"; T send-keys -t e2e Enter
    run_mtlab "$bin tui --models '$root/models' --script '$root/scripts/demo/implicit_attention.lua'"
    for step in 1 2; do
        wait_until 120 step_shown $step && T send-keys -t e2e Space
    done
    check "at $size the lesson reaches its third step" wait_until 120 step_shown 3
    check "... with both cursors on the name's column" wait_count "→ ?(col [0-9]+ )?'Gamaliel'" 2 10
    check "... its text wrapped at spaces, no word cut between two console lines" no_word_cut
    golden_screen "lesson_implicit_attention_$size"
    quit_workbench
    check "... and the workbench quits" exited_cleanly
done
# the shipped models' four panes at 100x30 with the console open: side by side, each title
# names its model whole (the search goes first; the direction stays where it fits)
T resize-window -t e2e -x 100 -y 30
T send-keys -t e2e -l "clear"; T send-keys -t e2e Enter
run_mtlab "$bin tui --models '$root/models'"
wait_count '─ ready ─' 4 30
T send-keys -t e2e C-o
check "at 100x30 with the console open four panes keep their whole names" \
    wait_for '^┌─ transformer-small( · es→en)? ─.*┐┌─ mamba-small( · es→en)? ─.*┐┌─ mamba-mha-small( · es→en)? ─.*┐┌─ mamba-local-small( · es→en)? ─' 10
quit_workbench
check "... and the workbench quits" exited_cleanly
T resize-window -t e2e -x 120 -y 40

echo
echo "console end-to-end tests took $(( $(date +%s) - started )) s"
echo "e2e-console: $passed passed, $failed failed"
[ "$failed" = 0 ]
