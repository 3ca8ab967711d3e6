#!/usr/bin/env bash
# Training jobs end to end (`mtlab jobs`, app/jobs/): tiny runs on a tiny corpus in a temporary
# directory, through the local launcher and then a private single-node Slurm.
#
#   tests/jobs/run.sh ./mtlab
#
# Every wait polls (the state file through `mtlab jobs list`, the log) with a deadline; the
# random kill moments come from a seeded generator (JOBS_SEED, default 19).
set -u
cd "$(dirname "$0")/../.."
root=$PWD
[ $# -eq 1 ] || { echo "usage: $0 MTLAB_BINARY" >&2; exit 2; }
M=$(realpath "$1")
source "$root/tests/jobs/slurm_up.sh"

work=$(mktemp -d)
cleanup() {
    slurm_down
    # jobs of this test still running (a failed check) are stopped by their recorded pids
    local f pid
    for f in "$work"/runs/*/job.json; do
        [ -e "$f" ] || continue
        pid=$(sed -n 's/^ *"pid": \([0-9]*\),/\1/p' "$f")
        [ -n "$pid" ] && [ "$(readlink "/proc/$pid/cwd" 2>/dev/null)" = "$work" ] && kill -9 "$pid" 2>/dev/null
    done
    # an srun of a data-parallel job waits for the controller stopped above to close its step
    for pid in $(pgrep -x srun); do
        [ "$(readlink "/proc/$pid/cwd" 2>/dev/null)" = "$work" ] && kill -9 "$pid" 2>/dev/null
    done
    rm -rf "$work"
}
trap cleanup EXIT

passed=0 failed=0 started=$(date +%s)
ok() { passed=$((passed + 1)); printf '  ok    %s\n' "$1"; }
fail() { failed=$((failed + 1)); printf '  FAIL  %s\n' "$1"; [ -n "${2:-}" ] && printf '%s\n' "$2" | sed 's/^/      | /'; }
check() { if "${@:2}"; then ok "$1"; else fail "$1"; fi; }

# state NAME: the job's state as `mtlab jobs list` prints it
state() { "$M" jobs list | awk -v n="$1" '$1 == n { print $3 }'; }
# step NAME: its last logged step
step() { "$M" jobs list | awk -v n="$1" '$1 == n { split($4, s, "/"); print s[1] }'; }
# wait_state NAME STATE [SECONDS]
wait_state() {
    local deadline=$(( $(date +%s) + ${3:-60} ))
    while [ "$(date +%s)" -le $deadline ]; do
        [ "$(state "$1")" = "$2" ] && return 0
        sleep 0.1
    done
    echo "    (waited for $1 to be $2; it is $(state "$1"))"
    return 1
}
# wait_step NAME STEP [SECONDS]: until the log reached STEP
wait_step() {
    local deadline=$(( $(date +%s) + ${3:-60} ))
    while [ "$(date +%s)" -le $deadline ]; do
        [ "$(step "$1")" -ge "$2" ] 2>/dev/null && return 0
        sleep 0.05
    done
    return 1
}
# losses RUN: the loss of each train record of runs/RUN/log.jsonl, one a line
losses() { grep -o '"event":"train","step":[0-9]*,"epoch":[0-9]*,"loss":[-0-9.e+]*' "runs/$1/log.jsonl" | sed 's/.*"loss"://'; }
# same_losses A B: 20 losses each, equal within 1e-5 relative
# (or within $3 relative: bf16 gradients)
same_losses() {
    paste <(losses "$1") <(losses "$2") | awk -v tol="${3:-1e-5}" '{ n++; d = $1 - $2; if (d < 0) d = -d; r = $2 < 0 ? -$2 : $2
        if (NF != 2 || d > tol * r) { print "    step " n ": " $1 " vs " $2; bad = 1 } }
        END { if (n != 20) { print "    " n " losses, not 20"; bad = 1 } exit bad }'
}
# other_rank RUN: the pid of its `mtlab train` that is not rank 0 (which job.json records)
other_rank() { pgrep -f "^$M train runs/$1/config.lua" | grep -vx "$(json_field "$1" pid)"; }
json_field() { sed -n "s/^ *\"$2\": \"\\{0,1\\}\\([^\",]*\\)\"\\{0,1\\},\\{0,1\\}\$/\\1/p" "$work/runs/$1/job.json"; }

# ---------------------------------------------------------------- a tiny corpus and config
cd "$work"
"$root/tests/jobs/tiny_run.sh" "$M" "$work" 20 10 5 || { echo "jobs: the tiny run's inputs could not be made"; exit 1; }

echo "jobs: local launcher"
# ---------------------------------------------------------------- config errors: nothing starts
out=$("$M" jobs start tiny.lua lr=fast 2>&1); rc=$?
check "a bad override is reported and nothing starts" \
    test $rc = 1 -a ! -e runs/tiny -a -n "$(echo "$out" | grep "'lr' must be a number" | grep 'nothing was started')"
out=$("$M" jobs start tiny.lua --name typo model.d_modle=8 2>&1); rc=$?
check "an unknown model key is reported and nothing starts" \
    test $rc = 1 -a ! -e runs/typo -a -n "$(echo "$out" | grep "unknown key 'd_modle'")"
out=$("$M" jobs start tiny.lua --name nodata train_src=data/missing.es 2>&1); rc=$?
check "a missing data file is reported and nothing starts" \
    test $rc = 1 -a ! -e runs/nodata -a -n "$(echo "$out" | grep 'data/missing.es')"

# ---------------------------------------------------------------- start, follow, list
"$M" jobs start tiny.lua >start.out 2>&1
check "jobs start launches in the background" grep -q 'tiny: started, pid' start.out
"$M" jobs log tiny --follow >follow.out 2>&1
check "jobs log --follow prints the records until the job ends" \
    test "$(grep -c '^step' follow.out)" = 10 -a "$(grep -c '^valid' follow.out)" = 2 -a "$(tail -1 follow.out)" = "tiny: completed"
check "the job completed all its steps" test "$(state tiny)" = completed -a "$(step tiny)" = 20
check "the run holds its config copy, log, checkpoint and best bundle" \
    test -s runs/tiny/config.lua -a -s runs/tiny/log.jsonl -a -d runs/tiny/checkpoint -a -d runs/tiny/best
check "the config copy reads back as the same config" \
    "$M" train runs/tiny/config.lua --resume >copy.out 2>&1
out=$("$M" jobs start tiny.lua 2>&1)
check "a second start of the same name is refused" grep -q 'already holds a run' <<<"$out"

# ---------------------------------------------------------------- stop (checkpoint) and resume
"$M" jobs start tiny.lua --name long max_steps=100000 save_every=0 valid_every=0 >/dev/null 2>&1
wait_step long 4 30
"$M" jobs stop long >stop.out 2>&1
check "jobs stop ends the job as cancelled with a checkpoint" \
    test "$(state long)" = cancelled -a -s runs/long/checkpoint/trainer.json
stopped_at=$(sed -n 's/^ *"step": \([0-9]*\),/\1/p' runs/long/checkpoint/trainer.json)
"$M" jobs resume long >/dev/null 2>&1
check "jobs resume continues from the checkpoint" \
    bash -c "for i in \$(seq 1 300); do grep -q 'resumed from step $stopped_at ' runs/long/train.log && exit 0; sleep 0.1; done; exit 1"

# ---------------------------------------------------------------- two watchers agree, read only
wait_state long running 10
pid=$(json_field long pid)
kill -9 "$pid"
before=$(md5sum runs/long/job.json)
"$M" jobs list >watcher1.out 2>&1 & w1=$!
"$M" jobs list >watcher2.out 2>&1 & w2=$!
wait $w1 $w2
check "two watchers of a killed job agree, and say it failed" \
    bash -c "diff watcher1.out watcher2.out && grep -q '^long .* failed' watcher1.out && grep -q 'killed' watcher1.out"
check "and where a resume goes on from: the checkpoint of the stop" \
    grep -q "mtlab jobs resume long goes on from its checkpoint at step $stopped_at;" watcher1.out
check "watching never writes the state file" test "$(md5sum runs/long/job.json)" = "$before"
sleep 100 & other=$!
sed -i "s/\"pid\": $pid,/\"pid\": $other,/" runs/long/job.json
check "a live process with the job's old pid is not taken for the job" test "$(state long)" = failed
kill $other
"$M" jobs start tiny.lua --name early max_steps=100000 save_every=0 valid_every=0 >/dev/null 2>&1
wait_step early 2 30
kill -9 "$(json_field early pid)"
wait_state early failed 10 >/dev/null
check "a run killed before its first checkpoint is said to start over" \
    bash -c "\"$M\" jobs list | grep -A1 '^early ' | grep -q 'it left no checkpoint: mtlab jobs resume early starts it over'"

# ---------------------------------------------------------------- one trainer per run
# Five resumes of one stopped job at once, five starts of one name at once: one launches, the
# others are refused naming why (the run's lock, or the record of the one that won).
"$M" jobs start tiny.lua --name race max_steps=100000 save_every=0 valid_every=0 >/dev/null 2>&1
wait_step race 2 30
"$M" jobs stop race >/dev/null 2>&1
n=$(grep -c 'resumed from step' runs/race/train.log)
pids=()
for i in 1 2 3 4 5; do "$M" jobs resume race >race.$i.out 2>&1 & pids+=($!); done
wait "${pids[@]}"
refused='already being trained by pid [0-9]\|being launched by pid [0-9]\|race is running: stop it before resuming'
check "five resumes at once: one resumes, four are refused naming why" \
    test "$(grep -l 'race: resumed, pid' race.*.out | wc -l)" = 1 -a "$(grep -l "$refused" race.*.out | wc -l)" = 4
wait_until 30 bash -c "[ \$(grep -c 'resumed from step' runs/race/train.log) -gt $n ]"
pid=$(json_field race pid)
out=$("$M" train runs/race/config.lua --resume 2>&1); rc=$?
check "a plain train of a job's run while the job trains it is refused, naming the job's pid" \
    test $rc = 1 -a -n "$(grep "run runs/race is already being trained by pid $pid" <<<"$out")" -a "$(state race)" = running
"$M" jobs stop race >/dev/null 2>&1
check "and one trainer ran: one more resume in its log, stopped cleanly" \
    test "$(grep -c 'resumed from step' runs/race/train.log)" = $((n + 1)) -a "$(state race)" = cancelled
pids=()
for i in 1 2 3 4 5; do
    "$M" jobs start tiny.lua --name twin max_steps=100000 save_every=0 valid_every=0 >twin.$i.out 2>&1 & pids+=($!)
done
wait "${pids[@]}"
refused='already being trained by pid [0-9]\|being launched by pid [0-9]\|runs/twin already holds a run'
check "five starts of one name at once: one starts, four are refused naming why" \
    test "$(grep -l 'twin: started, pid' twin.*.out | wc -l)" = 1 -a "$(grep -l "$refused" twin.*.out | wc -l)" = 4
wait_step twin 2 30
"$M" jobs stop twin >/dev/null 2>&1
check "and the one started trains alone and stops cleanly" \
    test "$(grep -c 'model: mamba' runs/twin/train.log)" = 1 -a "$(state twin)" = cancelled

# ---------------------------------------------------------------- resumes that cannot be, or only from .old/
# A crash between the checkpoint swap's renames leaves only checkpoint.old/: the resume goes on
# from it.
saved=$(sed -n 's/^ *"step": \([0-9]*\),/\1/p' runs/race/checkpoint/trainer.json)
mv runs/race/checkpoint runs/race/checkpoint.old
n=$(grep -c "resumed from step $saved " runs/race/train.log)
"$M" jobs resume race >/dev/null 2>&1
check "a run left with only checkpoint.old/ resumes from it" \
    wait_until 30 bash -c "[ \$(grep -c 'resumed from step $saved ' runs/race/train.log) -gt $n ]"
"$M" jobs stop race >/dev/null 2>&1
mv runs/race/config.lua race.lua
out=$("$M" jobs resume race 2>&1); rc=$?
check "a resume without the run's config.lua names the missing file and starts nothing" \
    test $rc = 1 -a -n "$(grep 'runs/race/config.lua: No such file or directory' <<<"$out")" -a "$(state race)" = cancelled
mv race.lua runs/race/config.lua
out=$("$M" jobs resume tiny 2>&1); rc=$?
check "a resume of a complete run says it is complete" \
    test $rc = 1 -a -n "$(grep 'tiny is complete: its checkpoint is at step 20 of max_steps 20' <<<"$out")"

# ---------------------------------------------------------------- a broken state file
mkdir runs/broken && printf '{"name": "broken", "state": ' >runs/broken/job.json
out=$("$M" jobs list 2>&1); rc=$?
check "jobs list with one broken job.json lists the others, marks it with the reason and exits 0" \
    test $rc = 0 -a -n "$(grep '^tiny .* completed' <<<"$out")" -a -n "$(grep '^race .* cancelled' <<<"$out")" \
        -a -n "$(grep '^broken .* broken' <<<"$out")" -a -n "$(grep '^  runs/broken/job.json:1:' <<<"$out")"
rm -r runs/broken

# ---------------------------------------------------------------- a log that cannot be written
out=$(ulimit -f 4; "$M" train tiny.lua --name limited max_steps=200 log_every=1 valid_every=0 save_every=0 2>&1); rc=$?
check "a log write past the file size limit stops the run with the reason, the log whole lines" \
    test $rc = 1 -a -n "$(grep 'log.jsonl: cannot write: File too large' <<<"$out")" \
        -a "$(tail -c 1 runs/limited/log.jsonl | od -An -c | tr -d ' ')" = '\n' \
        -a "$(grep -vc '^{.*}$' runs/limited/log.jsonl)" = 0

# ---------------------------------------------------------------- SIGKILL during checkpoint writes
# save_every = 1: a checkpoint per step. Each kill waits for a fresh checkpoint.new/ (the write
# under way; its inode tells it from one a previous kill left behind), then a seeded random
# number of shell iterations (up to a few ms), so it lands anywhere from the first file written
# to the renames.
RANDOM=${JOBS_SEED:-19}
kill_t0=$(date +%s)
"$M" jobs start tiny.lua --name killed max_steps=100000 save_every=1 valid_every=0 log_every=1 >/dev/null 2>&1
wait_until 30 test -d runs/killed/checkpoint
kills=0 resumed_ok=1 mid_write=0
for i in $(seq 1 20); do
    wait_state killed running 20 >/dev/null || { resumed_ok=0; break; }
    old=$(stat -c %i runs/killed/checkpoint.new 2>/dev/null)
    give_up=$((SECONDS + 3))
    until [ -d runs/killed/checkpoint.new ] && [ "$(stat -c %i runs/killed/checkpoint.new 2>/dev/null)" != "$old" ]; do
        [ $SECONDS -ge $give_up ] && break
    done
    spin=$((RANDOM % 3000)); for ((s = 0; s < spin; s++)); do :; done
    kill -9 "$(json_field killed pid)" && kills=$((kills + 1))
    wait_state killed failed 10 >/dev/null || { resumed_ok=0; break; }
    [ -e runs/killed/checkpoint.new ] || [ -e runs/killed/checkpoint.old ] && mid_write=$((mid_write + 1))
    if ! [ -s runs/killed/checkpoint/trainer.json ] && ! [ -s runs/killed/checkpoint.old/trainer.json ]; then
        resumed_ok=0; echo "    kill $i left no complete checkpoint"; ls runs/killed; break
    fi
    n=$(grep -c 'resumed from step' runs/killed/train.log)
    "$M" jobs resume killed >/dev/null 2>&1
    # the resumed trainer loaded the checkpoint (or failed, which ends the loop)
    wait_until 20 bash -c "[ \$(grep -c 'resumed from step' runs/killed/train.log) -gt $n ]" ||
        { resumed_ok=0; echo "    resume $i failed:"; tail -3 runs/killed/train.log; break; }
done
check "20 SIGKILLs during checkpoint writes: each left a checkpoint that loaded and resumed" \
    test $kills = 20 -a $resumed_ok = 1
dups=$(grep -o '"step":[0-9]*' runs/killed/log.jsonl | sort | uniq -d | head -3 | tr '\n' ' ')
check "and its log holds each step once (a resume cuts what was logged after its checkpoint)" test -z "$dups"
echo "    ($kills kills in $(( $(date +%s) - kill_t0 )) s, $mid_write of them with checkpoint.new/ or .old/ on disk)"
"$M" jobs stop killed >/dev/null 2>&1
check "the run stops cleanly after the kills" test "$(state killed)" = cancelled

# ---------------------------------------------------------------- a full disk (RLIMIT_FSIZE)
"$M" jobs start tiny.lua --name full max_steps=100000 valid_every=0 save_every=3 >/dev/null 2>&1
wait_step full 4 30
"$M" jobs stop full >/dev/null 2>&1
good=$(md5sum runs/full/checkpoint/*)
# 64 KiB: less than the checkpoint's optimizer moments, more than the state and log files
(ulimit -f 64; "$M" jobs resume full >/dev/null 2>&1)
wait_state full failed 30
err=$("$M" jobs list | grep -A1 '^full ')
check "a write past the file size limit stops the job with the reason" grep -q 'File too large' <<<"$err"
check "the previous checkpoint is intact" test "$(md5sum runs/full/checkpoint/*)" = "$good"
saved=$(sed -n 's/^ *"step": \([0-9]*\),/\1/p' runs/full/checkpoint/trainer.json)
"$M" train runs/full/config.lua --resume --max-steps $((saved + 2)) >full_resume.out 2>&1
check "and it resumes from it once there is room" \
    grep -q "resumed from step $saved .*step $((saved + 2)): checkpoint saved" <(tr '\n' ' ' <full_resume.out)

# ---------------------------------------------------------------- data parallel: 2 ranks under mpirun
# With dropout on (each row draws its masks by its place in the step's global batch,
# docs/distributed.md §2) the losses of 2 ranks of max_tokens 600 are those of one process of 1200.
dp="model.dropout=0.1 log_every=1 valid_every=0"
echo "jobs: data parallel, local (mpirun)"
if ! command -v mpirun >/dev/null; then
    echo "  skip  ranks: mpirun is not installed (Debian: openmpi-bin)"
else
    "$M" train tiny.lua --name dp-one max_tokens=1200 $dp >dp_one.out 2>&1
    "$M" jobs start tiny.lua --procs 2 --name dp-two $dp >/dev/null 2>&1
    "$M" jobs start tiny.lua --procs 2 --name dp-again $dp >/dev/null 2>&1
    wait_state dp-two completed 60 >/dev/null
    wait_state dp-again completed 60
    check "jobs start --procs 2 runs one job of 2 ranks" \
        bash -c "'$M' jobs list | grep -q '^dp-two  *local:2  *completed  *20/20' && grep -q '^mtlab train: ranks 2 (mpi)' runs/dp-two/train.log"
    out=$(same_losses dp-two dp-one)
    check "2 ranks x max_tokens 600: the losses of 1 process x 1200 (1e-5)" test -z "$out"
    [ -n "$out" ] && echo "$out"
    check "two runs of 2 ranks: the same bits" test -n "$(losses dp-two)" -a "$(losses dp-two)" = "$(losses dp-again)"
    # the all-reduce bucket by bucket during backward (MPI from a thread of each rank), in
    # buckets of ~1 KB, and the naive one after backward: the same bits (docs/distributed.md §3)
    "$M" jobs start tiny.lua --procs 2 --name dp-naive $dp overlap=false >/dev/null 2>&1
    "$M" jobs start tiny.lua --procs 2 --name dp-buckets $dp bucket_mb=0.001 >/dev/null 2>&1
    wait_state dp-naive completed 60 >/dev/null
    wait_state dp-buckets completed 60 >/dev/null
    check "overlapped in buckets or after backward: the same bits under mpirun" \
        test -n "$(losses dp-naive)" -a "$(losses dp-two)" = "$(losses dp-naive)" -a "$(losses dp-two)" = "$(losses dp-buckets)" \
        -a -n "$(grep '^mtlab train: overlap: gradients all-reduced in [0-9]* buckets' runs/dp-buckets/train.log)"
    # bf16 gradients over MPI (slices sent as bf16): reproducible, and close to fp32's losses
    "$M" jobs start tiny.lua --procs 2 --name dp-bf16 $dp grad_dtype=bf16 >/dev/null 2>&1
    "$M" jobs start tiny.lua --procs 2 --name dp-bf16-again $dp grad_dtype=bf16 overlap=false >/dev/null 2>&1
    wait_state dp-bf16 completed 60 >/dev/null
    wait_state dp-bf16-again completed 60 >/dev/null
    out=$(same_losses dp-bf16 dp-two 1e-2)
    check "grad_dtype=bf16 on 2 ranks: the same bits twice, within 1e-2 of fp32" \
        test -z "$out" -a -n "$(losses dp-bf16)" -a "$(losses dp-bf16)" = "$(losses dp-bf16-again)" -a "$(losses dp-bf16)" != "$(losses dp-two)"
    [ -n "$out" ] && echo "$out"
    # a rank killed mid-run: mpirun stops the other, the job fails naming rank and host
    "$M" jobs start tiny.lua --procs 2 --name dp-kill $dp max_steps=100000 save_every=5 >/dev/null 2>&1
    wait_step dp-kill 12 60
    kill -9 $(other_rank dp-kill)
    wait_state dp-kill failed 30
    err=$("$M" jobs list | grep -A1 '^dp-kill ')
    check "a rank killed with SIGKILL fails the job, naming its rank and host" \
        grep -q "process rank 1 .* on node $(hostname) .*signal 9" <<<"$err"
    check "and says where a resume goes on from" grep -q "goes on from its checkpoint at step" <<<"$err"
    "$M" jobs resume dp-kill >/dev/null 2>&1
    wait_until 60 grep -q 'resumed from step' runs/dp-kill/train.log
    "$M" jobs stop dp-kill >/dev/null 2>&1
    check "it resumes on 2 ranks and stops with a checkpoint" \
        test "$(state dp-kill)" = cancelled -a "$(grep -c '^mtlab train: ranks 2' runs/dp-kill/train.log)" = 2
    # 10 steps on 2 ranks, the last 10 in one process (jobs resume --procs 1): the losses of dp-two
    "$M" jobs start tiny.lua --procs 2 --name dp-cut $dp max_steps=10 >/dev/null 2>&1
    wait_state dp-cut completed 60 >/dev/null
    "$M" jobs resume dp-cut --procs 1 max_steps=20 >dp_cut.out 2>&1
    wait_state dp-cut completed 60 >/dev/null
    out=$(same_losses dp-cut dp-two)
    check "jobs resume --procs 1 of a 2-rank run: one process goes on with the same losses" \
        test -z "$out" -a -n "$(grep 'to max_steps 20, on 1 rank$' dp_cut.out)" \
        -a -n "$(grep '^mtlab train: ranks 1 .*cut into 2 shards' runs/dp-cut/train.log)"
    [ -n "$out" ] && echo "$out"
    check "and jobs list shows it on one rank" bash -c "'$M' jobs list | grep -q '^dp-cut  *local  *completed  *20/20'"
    # accum 2: a step of two batches of the plan, an epoch of 5 (max_tokens 1200), so every
    # other epoch ends mid-step and the step packs batches of two epochs' plans (3ff39c1); the
    # only rank-side change is that the last backward alone hands buckets over (§3.1)
    "$M" train tiny.lua --name acc-one max_tokens=1200 accum=2 $dp >acc_one.out 2>&1
    "$M" jobs start tiny.lua --procs 2 --name acc-buckets $dp accum=2 bucket_mb=0.001 >/dev/null 2>&1
    "$M" jobs start tiny.lua --procs 2 --name acc-buckets-again $dp accum=2 bucket_mb=0.001 >/dev/null 2>&1
    "$M" jobs start tiny.lua --procs 2 --name acc-naive $dp accum=2 overlap=false >/dev/null 2>&1
    "$M" jobs start tiny.lua --procs 2 --name acc-naive-again $dp accum=2 overlap=false >/dev/null 2>&1
    for r in acc-buckets acc-buckets-again acc-naive acc-naive-again; do wait_state $r completed 60 >/dev/null; done
    # 20 steps of 2 batches end at batch 40 of the plans: an odd batch of the last epoch means
    # some epoch began mid-step
    check "accum 2: steps take batches of two epochs" \
        bash -c "grep -q '\"batch\": [0-9]*[13579],' runs/acc-one/checkpoint/trainer.json"
    out=$(same_losses acc-buckets acc-one)
    check "accum 2 on 2 ranks x max_tokens 600: the losses of 1 process x 1200 (1e-5)" test -z "$out"
    [ -n "$out" ] && echo "$out"
    check "accum 2 on 2 ranks, overlapped in buckets or after backward: the same bits in two runs each" \
        test -n "$(losses acc-buckets)" -a "$(losses acc-buckets)" = "$(losses acc-buckets-again)" \
        -a "$(losses acc-naive)" = "$(losses acc-naive-again)" -a "$(losses acc-buckets)" = "$(losses acc-naive)"
fi

# ---------------------------------------------------------------- Slurm
echo "jobs: Slurm launcher (a private single-node Slurm; local part $(( $(date +%s) - started )) s)"
if ! slurm_up "$work/slurm"; then
    echo "  skip  Slurm: $slurm_skip"
else
    "$M" jobs start tiny.lua --launcher slurm --name on-slurm >slurm_start.out 2>&1
    check "jobs start --launcher slurm submits a batch job" grep -q 'submitted to Slurm as job [0-9]' slurm_start.out
    check "the Slurm job reaches completed" wait_state on-slurm completed 60
    check "its run is complete" test -d runs/on-slurm/checkpoint -a "$(step on-slurm)" = 20
    "$M" jobs start tiny.lua --launcher slurm --name slurm-stop max_steps=100000 valid_every=0 >/dev/null 2>&1
    wait_step slurm-stop 6 60
    "$M" jobs stop slurm-stop >slurm_stop.out 2>&1
    check "a stopped Slurm job is cancelled with its checkpoint" \
        test "$(state slurm-stop)" = cancelled -a -s runs/slurm-stop/checkpoint/trainer.json
    "$M" jobs resume slurm-stop >slurm_resume.out 2>&1
    check "resume resubmits it with --resume" \
        bash -c "grep -q 'resubmitted to Slurm' slurm_resume.out && grep -q -- '--resume' runs/slurm-stop/job.sbatch"
    wait_until 60 grep -q 'resumed from step' runs/slurm-stop/train.log
    "$M" jobs stop slurm-stop >/dev/null 2>&1
    check "and it stops again" test "$(state slurm-stop)" = cancelled
    if command -v mpirun >/dev/null; then
        # 2 tasks under srun (PMIx): the same losses as one process of twice the batch
        "$M" jobs start tiny.lua --launcher slurm --tasks 2 --name sl-two $dp >/dev/null 2>&1
        wait_state sl-two completed 60
        check "jobs start --launcher slurm --tasks 2 runs srun with PMIx" \
            bash -c "grep -q '^#SBATCH --ntasks=2' runs/sl-two/job.sbatch && grep -q '^exec srun --mpi=pmix' runs/sl-two/job.sbatch && grep -q '^mtlab train: ranks 2 (mpi)' runs/sl-two/train.log"
        out=$(same_losses sl-two dp-one)
        check "2 Slurm tasks: the losses of 1 process x 1200 (1e-5)" test -z "$out"
        [ -n "$out" ] && echo "$out"
        "$M" jobs start tiny.lua --launcher slurm --tasks 2 --name sl-kill $dp max_steps=100000 save_every=5 >/dev/null 2>&1
        wait_step sl-kill 12 60
        kill -9 $(other_rank sl-kill)
        wait_state sl-kill failed 60
        err=$("$M" jobs list | grep -A1 '^sl-kill ')
        check "a Slurm task killed with SIGKILL fails the job, naming task and node" \
            grep -q "srun: error: $(hostname -s): task 1: Killed" <<<"$err"
        "$M" jobs resume sl-kill >/dev/null 2>&1
        wait_until 60 grep -q 'resumed from step' runs/sl-kill/train.log
        "$M" jobs stop sl-kill >/dev/null 2>&1
        check "it resumes on 2 tasks and stops with a checkpoint" \
            test "$(state sl-kill)" = cancelled -a -s runs/sl-kill/checkpoint/trainer.json
        # on one task now: sbatch without srun, the run's 2 shards taken by the one rank
        "$M" jobs resume sl-kill --tasks 1 >/dev/null 2>&1
        wait_until 60 grep -q '^mtlab train: ranks 1 .*cut into 2 shards' runs/sl-kill/train.log
        "$M" jobs stop sl-kill >/dev/null 2>&1
        check "jobs resume --tasks 1 resubmits it as one task, which takes the run's 2 shards" \
            bash -c "grep -q '^#SBATCH --ntasks=1' runs/sl-kill/job.sbatch && ! grep -q srun runs/sl-kill/job.sbatch && grep -q '^mtlab train: ranks 1 .*cut into 2 shards' runs/sl-kill/train.log"
        check "and it stops cancelled, listed on one task" bash -c "'$M' jobs list | grep -q '^sl-kill  *slurm  *cancelled'"
    fi
    slurm_down
fi

echo "jobs: $passed passed, $failed failed ($(( $(date +%s) - started )) s)"
[ $failed = 0 ]
