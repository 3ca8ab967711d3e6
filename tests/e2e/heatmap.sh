#!/usr/bin/env bash
# The workbench's heatmaps end to end (app/tui/draw_heatmap.c, heat_layout.c), on the shipped
# models (greedy on the CPU, so the translations and the maps are the same every run): the
# real binary in tmux at 80x24, 160x48, 120x40 and 40x12, with four panes and with two. Maps
# stay inside their panes; every row is labelled and the marker and the readout name the
# same token; the cursor moves over rows and columns (keys and mouse); z zooms a pane to the
# whole screen and back; the names say what a map is; masked cells are blank (the pane's
# background) in every theme; e writes SVG, PNG and CSV files and says where; the attribution
# map (every model) steps its method and contrast. Golden screens
# (tests/e2e/golden/heatmap_*.txt, timings masked) pin the layouts; UPDATE_GOLDEN=1 rewrites
# them.
#
#   tests/e2e/heatmap.sh ./mtlab
set -u
cd "$(dirname "$0")/../.."
export LC_ALL=C.UTF-8
unset NO_COLOR
root=$PWD
[ $# -eq 1 ] || { echo "usage: $0 MTLAB_BINARY" >&2; exit 2; }
bin=$(realpath "$1")
models=$root/models
golden=$root/tests/e2e/golden
command -v tmux >/dev/null || { echo "e2e heatmap: tmux is not installed (make deps installs it)"; exit 1; }

work=$(mktemp -d)
sock=$work/tmux.sock
passed=0 failed=0 started=$(date +%s)
. "$root/tests/e2e/lib.sh"
trap e2e_cleanup EXIT

# Every line of the panes' region keeps its borders: from the line that opens the first pane
# to the status line, the first and last characters of each pane column are border glyphs.
# $1: the number of panes side by side.
borders_intact() {
    local n=$1 cols width i y line c inside=0
    cols=$(T display -p -t e2e '#{pane_width}')
    width=$((cols / n))
    mapfile -t lines < <(screen)
    for ((y = 0; y < ${#lines[@]} - 1; y++)); do
        line=${lines[y]}
        [[ $inside = 0 && $line == "┌─ "* && $line != *"source ·"* ]] && inside=1
        [ $inside = 1 ] || continue
        for ((i = 0; i < n; i++)); do
            for c in "${line:i*width:1}" "${line:i*width+width-1:1}"; do
                [[ "│┌└┐┘" == *"$c"* && -n $c ]] || { echo "      | line $y pane $i: '$line'"; return 1; }
            done
        done
    done
    [ $inside = 1 ]
}
# The label on the marked (▶) row of the focused, zoomed pane, and the readout's row label.
marked_label() { screen | sed -n 's/^│▶\([^ ]*\) .*/\1/p' | head -1; }
readout_label() { screen | sed -n "s/^│row [0-9]* '\\([^']*\\)' → .*/\\1/p" | head -1; }
# marker_matches_readout ROW: until the readout is on row ROW and names the marked row's label
readout_on_marked_row() {
    local m r
    m=$(marked_label); r=$(readout_label)
    screen | grep -q "^│row $1 '" && [ -n "$m" ] && [ "$m" = "$r" ]
}
marker_matches_readout() {
    wait_until 5 readout_on_marked_row "$1" && return 0
    echo "      | marker '$(marked_label)', readout '$(readout_label)'"
    return 1
}
# Row labels of the zoomed pane, one line each: as many as the rows (the cursor is on the
# last).
every_row_labelled() {
    local last labels
    last=$(screen | sed -n 's/^│row \([0-9]*\) .*/\1/p')
    labels=$(screen | grep -cE '^│[▶ ][^ ─]')
    [ -n "$last" ] && [ "$labels" = "$last" ] || { echo "      | last row $last, $labels labels"; return 1; }
}

# The column labels of the first pane of a row of panes as they read down their columns, one a
# line: the lines between the column marker (▼) and the first row of cells, column by column.
labels_down() {
    local l y x s start=-1 end=-1
    mapfile -t l < <(screen)
    for ((y = 0; y < ${#l[@]}; y++)); do
        [[ $start -lt 0 && ${l[y]} == "│"*"▼"* ]] && start=$((y + 1))
        [[ $start -ge 0 && ${l[y]} == "│▶"* ]] && { end=$y; break; }
    done
    [ $end -gt $start ] || return 0
    for ((x = 1; x < ${#l[start]}; x++)); do
        [ "${l[start]:x:1}" = "│" ] && break
        s=
        for ((y = start; y < end; y++)); do s+=${l[y]:x:1}; done
        s=${s// /}
        [ -n "$s" ] && echo "$s"
    done
}
label_down() { labels_down | grep -qxF "$1" || { echo "      | down the columns: $(labels_down | tr '\n' ' ')"; return 1; }; }

cd "$work"
e2e_shell 80 24
verse="Y dijo Dios: Sea la luz."

echo "e2e: heatmaps in tmux"
# ---------------------------------------------------------------- four panes, 80x24 and 160x48
run_mtlab "$bin tui -m $models/transformer-small -m $models/mamba-small -m $models/mamba-mha-small -m $models/mamba-local-small"
wait_count 'waiting for text in the editor' 4 20
T send-keys -t e2e -l "$verse"
check "four panes translate, each naming its model state" wait_count 'state [0-9.]+ (B|KiB|MiB)' 4 30
T send-keys -t e2e F3
check "F3: a map with a readout in each of four panes at 80x24" wait_count '│row 1 ' 4 20
check "... inside its pane: no border overwritten" borders_intact 2
golden_screen heatmap_four_panes_80x24
T resize-window -t e2e -x 160 -y 48
check "at 160x48 the maps grow: the transformer's attention labels its rows" wait_for '^│ God +█' 5
check "... the Mamba state norms label every layer" wait_for '│ L11 +█' 5
check "... and nothing overwrites a border" borders_intact 4
check "... a column label longer than its 6 lines keeps both ends: bl…sed down its column" \
    label_down 'bl…sed'
golden_screen heatmap_four_panes_160x48

# zoom: the focused pane over the whole screen, and back
T send-keys -t e2e Tab z
check "z zooms the focused pane to the whole screen" wait_for '^┌─ (▶ )?transformer-small( · es→en)? · transformer' 5
check "... with nothing else on it" bash -c "! tmux -S '$sock' capture-pane -p -t e2e | grep -q 'source ·\\|mamba-small'"
T send-keys -t e2e NPage NPage
wait_for "^│row (1[1-9]|2[0-9]) '" 5
check "... every row labelled, on lines of its own" every_row_labelled
T send-keys -t e2e PPage PPage
wait_for "^│row 1 '" 5
check "... column labels across the cells" wait_for '^│ +<bos> +God +said +, +“ +Let' 2
for step in 1 2 3 4; do
    T send-keys -t e2e Down
    check "Down: the marked row is the one the readout names (row $((step + 1)))" marker_matches_readout $((step + 1))
done
T send-keys -t e2e Right
check "Right: the readout names the column" wait_for "^│row 5 '“' → col 2 'God'  [0-9.e-]+ *│" 5
T send-keys -t e2e Left Left
check "... and stops at the first column" wait_for "^│row 5 '“' → col 1 '<bos>'" 5
T send-keys -t e2e Up
check "Up: the row above" wait_for "^│row 4 ',' → col 1 '<bos>'" 5
T send-keys -t e2e Right Right Right Right Right Right
check "a masked cell says so" wait_for "^│row 4 ',' → col 7 'the'  masked" 5
golden_screen heatmap_zoomed_160x48
T send-keys -t e2e z
check "z again: back to the four panes and the editor" wait_count 'source · (es · )?1 segment|-small' 5 5
T send-keys -t e2e Tab Tab Tab F6 F6
check "Mamba-Local's sliding-window map is named for what it is" wait_for 'local window attention · L' 5
T send-keys -t e2e F6
check "... and its Mamba layers' map too" wait_for 'implicit attention · L1' 5
T send-keys -t e2e Escape; quit_workbench
check "Ctrl-Q quits with status 0" exited_cleanly

# ---------------------------------------------------------------- RetNet and Mamba, 120x40
T resize-window -t e2e -x 120 -y 40
T send-keys -t e2e -l "clear"; T send-keys -t e2e Enter
run_mtlab "$bin tui -m $models/retnet-small -m $models/mamba-small"
wait_count 'params, cpu' 2 20
T send-keys -t e2e -l "$verse"
check "both panes translate" wait_count ' done ' 2 30
T send-keys -t e2e F3
check "RetNet's map is retention, not self-attention" wait_for '│retention · L1 1/4 · mean of 4 heads' 20
check "... with the boundary between the source and the translation" wait_for '│ <sep> +█+│' 5
check "... drawn across the map too" wait_for '─+┼─+' 5
T send-keys -t e2e Tab
# the masked triangle is the pane's background, whatever the theme: row 0 has one cell, then
# blanks up to the boundary and after it
themes=0
for theme in high-contrast light monochrome dark; do
    T send-keys -t e2e F9 F2
    if wait_for "theme $theme" 5; then themes=$((themes + 1)); fi
    T send-keys -t e2e F2
    check "masked cells are blank in the $theme theme" wait_for '^│▶Y +[░▒▓█]+ +│ +│' 5
done
some_themes() { [ $themes = 4 ]; }
check "F9 went through the four shipped themes" some_themes
T send-keys -t e2e Down Down Right
check "arrows move the cursor: row and column named with the value" \
    wait_for "│row 3 'Dios' → col 2 'dijo'  [0-9.e-]+ " 5
check "... the marked row is the readout's" wait_for '^│▶Dios +█' 2
# a click on a cell puts the cursor there
T send-keys -t e2e z
wait_for '^┌─ retnet-small' 5
# settled_screen: the screen once two captures 0.1 s apart agree (a slow build may be drawing)
settled_screen() {
    local a b i
    a=$(screen)
    for i in $(seq 50); do
        sleep 0.1
        b=$(screen)
        [ "$a" = "$b" ] && break
        a=$b
    done
    printf '%s\n' "$b"
}
click_cell() { # row label, column label: both read from one settled screen
    local y x s line prefix
    # the column labels run across on two staggered lines: Y Dios Sea ... over dijo : la ...
    wait_for "^│ +Y +Dios +Sea" 5 && wait_for "^│[▶ ]$1 " 5 || return 1
    s=$(settled_screen)
    y=$(grep -nE "^│[▶ ]$1 " <<<"$s" | head -1 | cut -d: -f1)
    line=$(grep -E "^│ +(Y +Dios +Sea|dijo +: +la)" <<<"$s" | grep -F " $2 " | head -1)
    prefix=${line%%" $2 "*}
    x=$(( ${#prefix} + 1 ))
    [ -n "$y" ] && [ -n "$line" ] || return 1
    mouse 0 $((y - 1)) "$x"; mouse 3 $((y - 1)) "$x"
}
# click_to ROW COL READOUT: click the cell, again once if a click landed while the zoomed pane
# was still being laid out, until the readout names it
click_to() { { click_cell "$1" "$2" && wait_for "$3" 3; } || { click_cell "$1" "$2" && wait_for "$3" 5; }; }
check "a click on a cell moves the cursor to it" click_to Sea luz "│row 5 'Sea' → col 7 'luz'  masked"
check "... any cell" click_to luz Dios "│row 7 'luz' → col 3 'Dios'  [0-9.e-]+ "

# export: SVG, PNG and CSV in the working directory, never over an existing file
T send-keys -t e2e e
base=heatmap-retnet-small-retention-L1-seg1
check "e writes the map and says where" wait_for "wrote $work/$base.svg, .png and .csv" 10
csv_ok() {
    [ "$(head -1 $base.csv)" = 'source | translation,Y,dijo,Dios,:,Sea,la,luz,.,<sep>,God,said,",",“,Let,the,light,be,light,.”' ] &&
        sed -n 2p $base.csv | grep -qE '^Y,[0-9.e-]+,{18}$'
}
check "... the CSV: token labels, values, masked cells empty" csv_ok
png_ok() { [ "$(head -c 8 $base.png | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ]; }
check "... a PNG" png_ok
check "... an SVG" grep -q '<svg' $base.svg
sum_before=$(cat $base.svg $base.png $base.csv | md5sum)
T send-keys -t e2e e
check "a second export takes new names" wait_for "wrote $work/$base-2.svg" 10
same_files() { [ "$(cat $base.svg $base.png $base.csv | md5sum)" = "$sum_before" ] && [ -s $base-2.png ]; }
check "... and leaves the first files as they were" same_files
T send-keys -t e2e z

# ---------------------------------------------------------------- the smallest terminal
wait_gone 'wrote ' 10
T resize-window -t e2e -x 40 -y 12
check "at 40x12 both maps still show a readout" wait_count "→'[^']*' ([0-9.e-]+|masked)" 2 5
check "... and no border is overwritten" borders_intact 2
golden_screen heatmap_40x12
T resize-window -t e2e -x 120 -y 40
quit_workbench
check "Ctrl-Q quits with status 0" exited_cleanly

# ---------------------------------------------------------------- the attribution map, 100x30
# every model has it (F6 after the probes' maps): rows the translation, columns the source then
# the translation; m steps the method, c contrasts with the cursor column's token, e exports
T send-keys -t e2e -l "clear"; T send-keys -t e2e Enter
T resize-window -t e2e -x 100 -y 30
run_mtlab "$bin tui -m $models/mamba-small -m $models/mamba-mha-small"
wait_count 'params, cpu' 2 20
T send-keys -t e2e -l "Y Zorvald habló con Quimberly en Taravesh."
check "attribution: both panes translate" wait_count ' done ' 2 30
T send-keys -t e2e Tab F3
wait_for '│row 1 ' 20
to_attribution() {
    local i
    for i in 1 2 3 4 5 6; do
        wait_for '│attribution · saliency' 3 && return 0
        T send-keys -t e2e F6
    done
    wait_for '│attribution · saliency' 20
}
check "F6 reaches Mamba's attribution map, its method in the title" to_attribution
check "... rows the translation, columns the source then the translation" \
    wait_for 'translation ↓  source \| translation →' 5
check "... the readout names a translation token and a source token" \
    wait_for "^│row 1 'Zo' → col 1 'Y'  -?[0-9.e-]+ " 20
T send-keys -t e2e c
check "c on a source column is refused, saying why" wait_for 'contrast is a token of the translation' 5
T send-keys -t e2e m
check "m: the next method, in the title" wait_for '│attribution · input x gradient · seg 1' 30
for i in $(seq 22); do T send-keys -t e2e Right; done
T send-keys -t e2e Down
check "the cursor on the translation's 'm'" wait_for "^│row 2 'm' → col 23 'm' " 10
T send-keys -t e2e c
check "c: contrasted with that token, in the title" wait_for "│attribution · input x gradient · vs 'm'" 30
check "... a translation token after the row's is masked" wait_for "^│row 2 'm' → col 23 'm'  masked" 30
T send-keys -t e2e Left
check "... and the contrast token's own row is zero (log p(m) - log p(m))" \
    wait_for "^│row 2 'm' → col 22 'Zo'  0 " 10
T send-keys -t e2e e
abase=heatmap-mamba-small-attribution-input_x_gradient-vs-m-seg1
attr_files() { wait_for "wrote $work/heatmap-mamba-small-attr" 10 && [ -s $abase.svg ] && [ -s $abase.png ] && [ -s $abase.csv ]; }
check "e writes the attribution map and says where" attr_files
attr_csv_ok() {
    head -1 $abase.csv | grep -q '^translation,Y,Zo,r,v,al,d,habló,' &&
        sed -n 2p $abase.csv | grep -qE '^Zo,.*,-[0-9]'
}
check "... the CSV: token labels and the signed values" attr_csv_ok
quit_workbench
check "Ctrl-Q quits with status 0" exited_cleanly

# ---------------------------------------------------------------- 8 colours (TERM=linux)
# the console's 8 colours make no ramp: cells shade with ░▒▓█ in the text's colour, so a low
# cell is a glyph and a masked one blank
T send-keys -t e2e -l "clear"; T send-keys -t e2e Enter
T resize-window -t e2e -x 80 -y 24
run_mtlab "env TERM=linux $bin tui -m $models/retnet-small"
wait_count 'params, cpu' 1 20
T send-keys -t e2e -l "$verse"
check "on 8 colours: translated" wait_for ' done ' 30
T send-keys -t e2e -l $'\e[[C' # F3 as the Linux console sends it
check "... the map's cells shade with glyphs" wait_for '^│ dijo +[░▒▓█]+ +│' 20
check "... low values are light glyphs, not blanks" wait_for '^│ +[^ ]+ +[█▓▒]*░' 5
check "... and masked cells stay blank" wait_for '^│▶Y +[░▒▓█]+ +│ +│' 5
quit_workbench
check "Ctrl-Q quits with status 0" exited_cleanly

# ---------------------------------------------------------------- byte-level BPE labels
# a hub GPT-NeoX (tests/fixtures/neox_hf/st: byte-level BPE tokenizer.json): its maps label
# tokens as a reader reads them, and a label wider than the gutter keeps both its ends
T send-keys -t e2e -l "clear"; T send-keys -t e2e Enter
T resize-window -t e2e -x 100 -y 30
run_mtlab "$bin tui -m $root/tests/fixtures/neox_hf/st"
wait_count 'params, cpu' 1 20
T send-keys -t e2e -l "Amados hermanos míos, no os engañéis."
check "a byte-level BPE hub model translates" wait_for ' done ' 30
T send-keys -t e2e F3
check "... its map labels 'her' as read, not as the piece 'Ġher'" wait_for '^│ her +█' 20
check "... a token of spaces alone shows as ␣" wait_for '^│ ␣ +█' 5
T send-keys -t e2e Tab
T send-keys -t e2e F6
check "... the attribution map's row <|endoftext|> keeps both ends" wait_for '^│ <\|end…text\|> ' 20
quit_workbench
check "Ctrl-Q quits with status 0" exited_cleanly

echo
echo "heatmap end-to-end tests took $(( $(date +%s) - started )) s"
echo "e2e heatmap: $passed passed, $failed failed"
[ "$failed" = 0 ]
