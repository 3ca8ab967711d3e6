#!/usr/bin/env bash
# End-to-end tests that the workbench's console is safe to improvise in (issue 41), in a 120x40
# tmux terminal: plots drawn inside the console in colour, text without escapes, type-ahead
# kept, honest messages after a refused call, short errors, one default search.
#
#   tests/e2e/improvise.sh ./mtlab build/rel/e2e/make_bundles
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
# the screen with its colours: a cell painted by an escape shows as tmux's own SGR
screen_colours() { T capture-pane -p -e -t e2e; }

echo "e2e: improvising in the console (120x40)"
run_mtlab "$bin tui -m bundles/transformer"
wait_for 'transformer, [0-9.]+K params' 10
T send-keys -t e2e C-o
wait_for '^┌─ Lua console \(Ctrl-O\)' 5

# ---------------------------------------------------------------- plots
type_line "t = {} for i = 1, 30 do t[i] = {} for j = 1, 30 do t[i][j] = (i * j) % 11 end end"
type_line "p = mtlab.plot.heatmap(t, {title = 'products'}) p:show()"
check "p:show() draws the plot inside the console" wait_for '^│0 .* 10  mean of [0-9] rows a line +│$' 5
check "... whole, title and all, in the console's lines" wait_for '^│ +products +│$' 1
check "... above the prompt, the pane's frame untouched" \
    bash -c "tmux -S '$sock' capture-pane -p -t e2e | grep -q '^┌─ transformer · transformer' &&
             tmux -S '$sock' capture-pane -p -t e2e | grep -q '^┌─ Lua console'"
check "... in colour (xterm-256 backgrounds)" bash -c "tmux -S '$sock' capture-pane -p -e -t e2e | grep -Eq '48;5;[0-9]+m'"
type_line "print(p:text{width = 60, height = 12})"
check "print(p:text()) prints the plot's characters" wait_for '^│0 ░░▒▒▓▓██ 10  mean of 4 rows a line' 5
check "... and no escape's bytes" screen_lacks '\[0;4|\^\['
type_line "return #p:text{width = 120, height = 14} > 0"
check "p:text{width=120, height=14} draws a 30x30 map" wait_for '^│true +│$' 5

# ---------------------------------------------------------------- type-ahead
# a line typed while Lua runs (here until the file `go` appears) is kept whole, however long
type_line "while not io.open('go') do end"
wait_for 'running, Ctrl-C interrupts' 5
long="return ('$(printf 'typed ahead %.0s' $(seq 8))'):upper() .. 'END'"
type_line "$long"
touch go
check "a long line typed while Lua runs keeps every key" wait_for '^│(TYPED AHEAD ){8}END +│$' 10

# ---------------------------------------------------------------- a refused call
# the transformer records attention maps, no state norms: the call is refused, and the pane
# neither changes nor claims the model records nothing
type_line "ui.set_text('Y dijo Dios: Sea la luz.') ui.translate() ui.wait() ui.heatmap(1, {kind = 'cross'}) ui.wait(1)"
wait_for '^│cross-attention · ' 20
type_line "ui.heatmap(1, {kind = 'state_norms'})"
check "a call asking for maps the model lacks is refused, naming what it has" \
    wait_for '^│console:1: ui.heatmap: transformer has no state_norms maps \(it records: ' 5
check "... and the pane still shows its cross-attention map" wait_for '^│cross-attention · ' 5
check "... never saying the model records no maps" screen_lacks 'records no maps'

# ---------------------------------------------------------------- short errors
type_line "ui.close(5)"
check "an argument error prints its message" wait_for '^│console:1: ui.close: no pane 5 \(1 open\) +│$' 5
check "... with the keys to its traceback" wait_for '^│  \(F12 or Ctrl-T: the traceback\) +│$' 5
check "... and not the traceback itself" screen_lacks 'stack traceback'
T send-keys -t e2e F12
check "F12 shows the traceback" wait_for "^│        \[C\]: in function 'ui.close'" 5
type_line "? ui"
check "? ui lists the ui functions" wait_for '^│In the workbench also: ui\.' 5
type_line "local t = nil; return t.x"
check "a runtime error keeps its traceback" wait_for '^│        console:1: in main chunk' 5

# ---------------------------------------------------------------- a scrolled pane's title
# two narrow panes with more lines than they show: the title keeps the search beside the
# scroll position
type_line "ui.open('bundles/mamba') ui.text_view(1) ui.set_text(string.rep('Y dijo Dios: Sea la luz.\\n', 30)) ui.translate() ui.wait()"
T resize-window -t e2e -x 76 -y 40
check "a scrolled pane's title keeps its search" wait_for '^┌─ transformer · (cpu · )?greedy ─+ 1-[0-9]+/[0-9]+ ─┐' 20
T resize-window -t e2e -x 120 -y 40

# ---------------------------------------------------------------- one search
# translate in the console decodes with the panes' search and says which
type_line "mm = mtlab.load('bundles/transformer') return mm:translate('Y dijo Dios: Sea la luz.').search"
check "m:translate in the console uses the panes' search (greedy), and says so" wait_for '^│greedy +│$' 20
T send-keys -t e2e F4
wait_for '· beam 5 ─' 10
type_line "return 'after F4: ' .. mm:translate('Y dijo Dios: Sea la luz.').search"
check "... and beam 5 once F4 switched the panes" wait_for '^│after F4: beam 5 +│$' 20
T send-keys -t e2e F4
wait_for '· greedy ─' 10

# ---------------------------------------------------------------- references
printf 'And God said, Let there be light.\nAnd there was light.\n' >refs.txt
type_line "ui.references('nope.txt')"
check "ui.references names a file it cannot read" wait_for '^│console:1: ui.references: nope.txt: No such file or directory' 5
type_line "ui.references('refs.txt') ui.set_text('Y dijo Dios: Sea la luz.\\nY fue la luz.') ui.translate() ui.wait()"
check "with references each pane shows the total BLEU and chrF2" \
    wait_count '│2 of 2 segments vs references: BLEU [0-9.]+ · chrF2 [0-9.]+' 2 20
check "... and each segment's" wait_count '│  BLEU [0-9.]+ · chrF2 [0-9.]+ +│' 4 5

printf 'God said.\n' >refs2.txt
T send-keys -t e2e F5
wait_for 'model bundles \(' 5
T send-keys -t e2e -l "refs2.txt"; T send-keys -t e2e Enter
check "F5 with a text file's path loads it as the references" wait_for 'references: 1 lines from refs2.txt' 5
check "... and the panes score against it" wait_count '│1 of 2 segments vs references: BLEU' 2 10

quit_workbench
check "the workbench quits" exited_cleanly
run_mtlab "$bin tui -m bundles/transformer --refs missing.txt"
check "mtlab tui --refs names a file it cannot read, before the screen opens" \
    wait_for '^mtlab: --refs: missing.txt: No such file or directory' 10

# ---------------------------------------------------------------- all seven architectures
T resize-window -t e2e -x 160 -y 45
T send-keys -t e2e -l "clear"; T send-keys -t e2e Enter
seven=""
for m in transformer-small transformer++-small mamba-small mamba-mha-small mamba-local-small \
         mamba-encdec-small retnet-small; do seven="$seven -m $root/models/$m"; done
run_mtlab "$bin tui$seven"
check "the seven shipped architectures open side by side" wait_count '┌─ [a-z+-]+-small ' 7 30
T send-keys -t e2e -l "Y dijo Dios: Sea la luz."
check "... and each translates" wait_count ' done ─┘' 7 60
T resize-window -t e2e -x 80 -y 24
check "... all seven still shown at 80x24" wait_count '┌─ (▶ )?[a-z+-]+(-small|…) ' 7 10
quit_workbench
check "the workbench quits" exited_cleanly

echo
echo "improvise end-to-end tests took $(( $(date +%s) - started )) s"
echo "e2e-improvise: $passed passed, $failed failed"
[ "$failed" = 0 ]
