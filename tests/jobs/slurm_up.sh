#!/usr/bin/env bash
# Starts a private single-node Slurm (munged, slurmctld, slurmd) whose every file lives in DIR:
#   source tests/jobs/slurm_up.sh DIR    -> exports SLURM_CONF; slurm_down stops the daemons
# slurm_up returns 1 with the reason in $slurm_skip when the daemons cannot start here.
slurm_skip=""
slurm_pids=()

slurm_down() {
    local p
    for p in "${slurm_pids[@]}"; do kill "$p" 2>/dev/null; done
    for p in "${slurm_pids[@]}"; do
        for _ in $(seq 1 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.05; done
        kill -9 "$p" 2>/dev/null
    done
    slurm_pids=()
}

# wait_until SECONDS COMMAND...: poll the command until it succeeds
wait_until() {
    local deadline=$(( $(date +%s) + $1 )); shift
    while [ "$(date +%s)" -le $deadline ]; do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
    return 1
}

slurm_up() {
    local dir=$1 host cpus port
    for c in munged mungekey slurmctld slurmd sbatch squeue scancel scontrol; do
        command -v "$c" >/dev/null || { slurm_skip="$c is not installed (Debian: slurm-wlm, munge)"; return 1; }
    done
    [ "$(id -u)" = 0 ] || { slurm_skip="the test Slurm runs its daemons as root, and this is uid $(id -u)"; return 1; }
    host=$(hostname -s) cpus=$(nproc)
    # ports from the pid, so that two test runs on one machine do not meet
    port=$(( 20000 + ($$ % 5000) * 2 ))
    mkdir -p "$dir/state" "$dir/spool" "$dir/munge"
    chmod 700 "$dir/munge"
    mungekey -c -k "$dir/munge/munge.key" -b 1024 2>"$dir/mungekey.log" || {
        slurm_skip="mungekey failed: $(cat "$dir/mungekey.log")"; return 1; }
    munged -f --key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.sock" \
        --pid-file="$dir/munge/munged.pid" --log-file="$dir/munge/munged.log" \
        --seed-file="$dir/munge/munged.seed" 2>"$dir/munged.err" || {
        slurm_skip="munged did not start: $(cat "$dir/munged.err")"; return 1; }
    wait_until 5 test -s "$dir/munge/munged.pid"
    slurm_pids+=("$(cat "$dir/munge/munged.pid")")
    cat >"$dir/slurm.conf" <<CONF
ClusterName=mtlabtest
SlurmctldHost=$host
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.sock
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
ReturnToService=2
KillWait=60
MinJobAge=600
NodeName=$host CPUs=$cpus State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
    export SLURM_CONF=$dir/slurm.conf
    slurmctld -f "$SLURM_CONF" 2>"$dir/slurmctld.err" || {
        slurm_skip="slurmctld did not start: $(cat "$dir/slurmctld.err")"; return 1; }
    wait_until 10 test -s "$dir/slurmctld.pid" && slurm_pids+=("$(cat "$dir/slurmctld.pid")")
    slurmd -f "$SLURM_CONF" 2>"$dir/slurmd.err" || {
        slurm_skip="slurmd did not start: $(cat "$dir/slurmd.err")"; return 1; }
    wait_until 10 test -s "$dir/slurmd.pid" && slurm_pids+=("$(cat "$dir/slurmd.pid")")
    # ready when the node is idle
    wait_until 30 bash -c "sinfo -h -N -o %t | grep -qx idle" || {
        slurm_skip="the node did not become idle: $(tail -3 "$dir/slurmd.log" "$dir/slurmctld.log" 2>&1)"; return 1; }
    return 0
}
