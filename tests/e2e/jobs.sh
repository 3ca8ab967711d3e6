#!/usr/bin/env bash
# The workbench's jobs view end to end (app/tui/jobs_view.c): the real binary in a 120x40 tmux
# terminal in a temporary directory holding a tiny corpus, its tokenizer and a tiny config.
# A run started from the command line before the workbench is found; a config error launches
# nothing; the tiny run is launched from the view and seen running, then completed with its
# step count and a BLEU; the long run is stopped and resumed; the tiny run's best bundle opens
# in a pane titled with the run's name. Every wait polls the screen (or the state file) with a
# deadline; nothing sleeps a fixed time.
#
#   tests/e2e/jobs.sh ./mtlab
set -u
cd "$(dirname "$0")/../.."
export LC_ALL=C.UTF-8
unset NO_COLOR
root=$PWD
[ $# -eq 1 ] || { echo "usage: $0 MTLAB_BINARY" >&2; exit 2; }
bin=$(realpath "$1")
command -v tmux >/dev/null || { echo "e2e jobs: tmux is not installed (make deps installs it)"; exit 1; }

work=$(mktemp -d)
sock=$work/tmux.sock
# the workbench and the runs of this test still going (a failed check) are stopped by their pids
cleanup() {
    local p f
    p=$(mtlab_pid 2>/dev/null) && [ -n "$p" ] && kill -9 $p 2>/dev/null
    T kill-server 2>/dev/null
    for f in "$work"/runs/*/job.json; do
        [ -e "$f" ] || continue
        p=$(sed -n 's/^ *"pid": \([0-9]*\),/\1/p' "$f")
        [ -n "$p" ] && [ "$(readlink "/proc/$p/cwd" 2>/dev/null)" = "$work" ] && kill -9 "$p" 2>/dev/null
    done
    rm -rf "$work"
}
trap cleanup EXIT

passed=0 failed=0 started=$(date +%s)
. "$root/tests/e2e/lib.sh"
# the list row of a run: "● NAME STATE RANKS STEP/TOTAL ...", each run here on 1 rank
row() { printf '^│. %s +%s +1 +%s' "$1" "$2" "${3:-}"; }

# ---------------------------------------------------------------- a tiny corpus and config
cd "$work"
"$root/tests/jobs/tiny_run.sh" "$bin" "$work" 300 100 100 || { echo "e2e-jobs: the tiny run's inputs could not be made"; exit 1; }
# the picker's list: a training config, and two scripts beside it that are none; an sbatch that
# refuses every job, saying why on stderr
mkdir -p scripts/train fakebin
sed 's/name = "tiny"/name = "picked"/' tiny.lua >scripts/train/picked.lua
echo 'return function(name) return {name = name} end' >scripts/train/helper.lua
echo 'local here = arg[0]; print(here)' >scripts/train/driver.lua
printf '#!/bin/sh\necho "sbatch: error: Batch job submission failed: Invalid partition name specified" >&2\nexit 1\n' >fakebin/sbatch
chmod +x fakebin/sbatch
# a run going before the workbench starts
"$bin" jobs start tiny.lua --name long max_steps=100000 save_every=0 valid_every=0 >long.out 2>&1 || {
    cat long.out; echo "e2e jobs: the long run did not start"; exit 1; }

e2e_shell 120 40

echo "e2e: the jobs view in tmux (120x40)"
run_mtlab "PATH=$work/fakebin:\$PATH $bin tui --models no-models"
check "the status line offers the jobs view" wait_for 'F11 jobs' 10
T send-keys -t e2e F11
check "F11 opens the jobs view" wait_for 'jobs \(F11\): runs/, launcher local' 5
check "a run started before the workbench is listed as running" wait_for "$(row long running '[0-9]+/100000')" 10

# ---------------------------------------------------------------- the picker
T send-keys -t e2e n
check "the picker lists the training configs" wait_for '^│  .*scripts/train/picked\.lua' 5
check "... and not the scripts that are none" screen_lacks 'helper\.lua|driver\.lua'
T send-keys -t e2e Down s
check "s on a listed config switches to Slurm" wait_for 'launcher slurm' 5
T send-keys -t e2e Enter
check "a refused sbatch shows sbatch's own message" wait_for 'sbatch failed \(exit 1\): sbatch: error: .*Invalid partition name specified' 10
check "... and leaves no half-made run directory" test ! -e runs/picked
T send-keys -t e2e -l "xa"
check "typing after the failed launch goes into the path line" wait_for 'path: .*scripts/train/picked\.luaxa_' 5
check "... not to the keys (a: plots every run)" wait_for 'plots: the highlighted run' 1
T send-keys -t e2e Escape n
check "the picker opens again with an empty path" wait_for 'path: _' 5
T send-keys -t e2e Down s Up Escape
wait_for 'launcher local' 5

# ---------------------------------------------------------------- launching
T send-keys -t e2e n
check "n opens the config picker with a path line" wait_for 'path: _' 5
T send-keys -t e2e -l "missing.lua"; T send-keys -t e2e Enter
check "a config error is shown and nothing is launched" wait_for 'missing.lua.*\(nothing launched\)' 5
check "the failed launch left no run directory" test ! -e runs/missing
T send-keys -t e2e C-h C-h C-h C-h C-h C-h C-h C-h C-h C-h C-h
T send-keys -t e2e -l "tiny.lua"; T send-keys -t e2e Enter
check "Enter launches the typed config" wait_for 'launched tiny \(local\) from tiny.lua' 10
check "the launched run is listed as running, with its total" wait_for "$(row tiny running '[0-9]+/300')" 20
T send-keys -t e2e a
check "a plots every run" wait_for 'plots: every run' 5
check "the loss plot overlays both runs' curves, a legend entry each" wait_for '⠒⠒⠒⠒ long +⠒⠒⠒⠒ tiny' 20
check "the run completes with its step count and a validation BLEU" \
    wait_for "$(row tiny completed '300/300 +[^ ]+ +[0-9.]+K? +- +[0-9]+\.[0-9]{2}')" 120
check "the BLEU plot has the completed run's points" wait_gone 'validation BLEU: no points yet' 10

# ---------------------------------------------------------------- stop and resume
T send-keys -t e2e Up
T send-keys -t e2e x
check "x stops the highlighted run (cancelled, after a checkpoint)" wait_for "$(row long cancelled)" 30
check "the stopped run left a checkpoint" test -s runs/long/checkpoint/trainer.json
T send-keys -t e2e r
check "r resumes it" wait_for "$(row long running)" 20
check "it resumed from its checkpoint" \
    bash -c 'for i in $(seq 1 200); do grep -q "resumed from step" runs/long/train.log && exit 0; sleep 0.1; done; exit 1'
T send-keys -t e2e x
check "x stops it again" wait_for "$(row long cancelled)" 30

# ---------------------------------------------------------------- the best bundle in a pane
T send-keys -t e2e Down o
check "o opens the run's best bundle in a pane titled with the run's name" \
    wait_for '─ tiny · es→en · mamba, [0-9.]+K params, cpu' 20
check "the pane is not titled best" bash -c "! tmux -S '$sock' capture-pane -p -t e2e | grep -q '─ best '"
check "the jobs view closed to show the pane" wait_gone 'jobs \(F11\)' 5
T send-keys -t e2e F11
check "F11 opens the view again, the runs still there" wait_for "$(row tiny completed 300/300)" 10
T send-keys -t e2e Escape
check "Esc closes it" wait_gone 'jobs \(F11\)' 5
quit_workbench
check "Ctrl-Q quits with status 0" exited_cleanly

echo
echo "jobs view end-to-end tests took $(( $(date +%s) - started )) s"
echo "e2e-jobs: $passed passed, $failed failed"
[ "$failed" = 0 ]
