#!/usr/bin/env bash
# The workbench on a GPU machine: panes on cuda:0 (each its own thread, stream and memory pool)
# translating one typed verse and then a pasted paragraph at once, driven in a private tmux
# server; the screens go to OUTDIR/panes*.txt (plain) and .ansi (with colours).
# Use (from scripts/gpu/remote.sh): [MODELS="a b c d"] scripts/gpu/panes.sh OUTDIR
# (MODELS: bundles under models/, one pane each; default transformer-small mamba-small)
set -u
out=${1:?OUTDIR}
sock=/tmp/mtlab-panes.sock
T() { tmux -S "$sock" "$@"; }
screen() { T capture-pane -p -t gpu; }
wait_for() { # regex count seconds
  local i; for ((i = 0; i < $3 * 10; i++)); do
    [ "$(screen | grep -Eo "$1" | wc -l)" -ge "$2" ] && return 0; sleep 0.1; done; return 1; }
models=(${MODELS:-transformer-small mamba-small})
n=${#models[@]}
T -f /dev/null new-session -d -s gpu -x 160 -y 45 "bash --norc"
T set -g default-terminal screen-256color
sleep 0.5
t0=$(date +%s%N) dev=${DEVICE:-cuda:0}
args=""
for m in "${models[@]}"; do args="$args --device $dev -m models/$m"; done
T send-keys -t gpu -l "./mtlab tui$args"
T send-keys -t gpu Enter
wait_for "params, $dev" 1 60 && echo "$n panes loaded on $dev after $(( ($(date +%s%N) - t0) / 1000000 )) ms" ||
  echo "panes: the $dev titles did not show within 60 s"
T send-keys -t gpu -l "En el principio creó Dios los cielos y la tierra, y Pedro fue a Jerusalén."
wait_for ' done ' "$n" 30 && echo "all $n panes translated the verse" || echo "panes: not $n ' done ' within 30 s"
screen >"$out/panes-verse.txt"; T capture-pane -e -p -t gpu >"$out/panes-verse.ansi"
T send-keys -t gpu C-u F2
T send-keys -t gpu -l "En el principio creó Dios los cielos y la tierra. Y la tierra estaba desordenada y vacía, y las tinieblas estaban sobre la faz del abismo. Y dijo Dios: Sea la luz; y fue la luz. Y vio Dios que la luz era buena; y separó Dios la luz de las tinieblas."
sleep 2
wait_for ' done ' "$n" 60 && echo "all $n panes translated the paragraph" || echo "panes: the paragraph did not finish within 60 s"
screen >"$out/panes-paragraph.txt"; T capture-pane -e -p -t gpu >"$out/panes-paragraph.ansi"
cat "$out/panes-paragraph.txt"
T send-keys -t gpu C-q
sleep 1
T send-keys -t gpu y   # Ctrl-Q asks while the editor holds unsaved text
sleep 2
T kill-server 2>/dev/null
