#!/usr/bin/env bash
# Runs on a lent GPU machine, from the repository root, over what scripts/gpu/pack.sh packed:
#   [CALL_LIMIT=S] scripts/gpu/remote.sh STAGE...
# stages: info tests sanitize[:TOOL[:PROGRAM]] torch[:PRESETS] bench:SECTION:REPEAT[:LIMIT] tui
#         env:VAR=VALUE, env:VAR               set or unset VAR for the stages after it (a stage
#                                          that runs again logs as NAME-2, NAME-3, ...)
#         profile[:NEW[:LIMIT]]                the bf16 Mamba's Table 4 decode (NEW tokens, default
#                                          64) under Nsight Systems, graphs traced node by node:
#                                          each kernel's total time (nsys stats cuda_gpu_kern_sum)
#         ncu:REGEX[:LAUNCHES[:LIMIT]]         Nsight Compute's stall reasons for bench's kernels named by REGEX
#         train:CONFIG:SECONDS:NAME:KEY=V,...
#         mps                              NVIDIA's multi-process service, when it runs here
#         trainall:SECONDS:CONFIG,...      the runs side by side on the one GPU, detached (they
#                                          outlive the call while the machine stays warm;
#                                          TRAIN_MAX=N: each to N steps, past the budget)
#         trainwait:SECONDS[:LEAVE]        until every run of trainall has ended, or SECONDS, or only
#                                          LEAVE seconds of the call are left (default 60)
#         stopall                          stops the runs (each saves a checkpoint; best/ is kept)
#         snap                             each run's newest kept bundle, OUT/NAME-stepN.tar.xz, while
#                                          it runs on (insurance for a later call that may not come)
#         fetch:N                          up to N ended runs' best bundles, OUT/NAME.tar.xz; with
#                                          FETCH_AVG=1,2,4,8 and kept bundles, the best of best/ and
#                                          the means of the last kept ones (scripts/train/average.lua,
#                                          scored on FETCH_DEVICE, default cpu)
#         peerbuild                        builds .dev-peer's mamba-ssm and causal-conv1d
#                                          (scripts/gpu/pack_peer.sh) against this machine's
#                                          PyTorch, detached, on 10 cores, into /tmp/peer-site,
#                                          which the torch stage then imports
#         peerwait:SECONDS                 until that build has ended, or SECONDS
# (torch and bench stages are skipped while training runs share the GPU)
# Each stage has its own time limit, cut to what is left of CALL_LIMIT (the device call's
# timeout, default 600 s, less a margin to pack the logs); a stage with under 10 s left is
# skipped. Every stage's whole log goes into OUT/logs.tar.xz at the end (the device tool brings
# back 8 files: the logs and 7 bundles), its tail to stdout. A development tool.
set -u
T0=$(date +%s)
CALL_LIMIT=${CALL_LIMIT:-600}
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
LOGS=/tmp/mtlogs; mkdir -p "$LOGS"
RUNS=/tmp/trainall; mkdir -p "$RUNS"
P=/tmp/mtpack
if [ ! -d $P/bin ]; then mkdir -p $P && tar -xJf .dev/pack.tar.xz -C $P || exit 1; fi
cudalib=
for f in /usr/local/cuda/lib64/libcublas.so.13 /usr/local/cuda*/lib64/libcublas.so.13 \
  "$(python3 -c 'import nvidia,os;print(nvidia.__path__[0])' 2>/dev/null)"/*/lib/libcublas.so.13; do
  [ -e "$f" ] && { cudalib=$(dirname "$f"); break; }
done
export LD_LIBRARY_PATH=$P/lib:${cudalib:-/usr/local/cuda/lib64}:$P/fallback
# libnccl.so.2, which the NCCL collective opens when asked (too big to pack): the toolkit's, or
# the one beside PyTorch
for f in "${cudalib:-/usr/local/cuda/lib64}"/libnccl.so.2 /usr/local/cuda*/lib64/libnccl.so.2 \
  "$(python3 -c 'import nvidia,os;print(nvidia.__path__[0])' 2>/dev/null)"/nccl/lib/libnccl.so.2; do
  [ -e "$f" ] && { LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$(dirname "$f"); break; }
done
# the CUDA backend the binaries dlopen (the tests look beside themselves, then here)
export MTLAB_CUDA_LIB=$P/bin/libmtlab-cuda.so
export PATH=$P/bin:$PATH TERM=${TERM:-xterm-256color} TERMINFO_DIRS=$P/terminfo:/usr/share/terminfo:/lib/terminfo
# MPS clients find the daemon through this folder (set for every call: runs outlive calls)
[ -s $RUNS/mps ] && export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
# the packed binaries, where no build of this checkout is (a local try-out keeps its own)
[ -e mtlab ] || ln -s $P/bin/mtlab mtlab
for t in $P/bin/test_*; do [ -e "build/rel/tests/${t##*/}" ] || { mkdir -p build/rel/tests && cp "$t" build/rel/tests/; }; done
[ -d data/bible ] || { [ -d $P/data ] && mkdir -p data && cp -r $P/data/bible data/; }
[ -d $P/models ] && mkdir -p models && cp -rn $P/models/* models/

PEER=/tmp/peer-site   # mamba-ssm built here by peerbuild, for torch_train.py's mamba peer
peer_path() { [ -s $PEER.rc ] && [ "$(cat $PEER.rc)" = 0 ] && export PYTHONPATH=$PEER${PYTHONPATH:+:$PYTHONPATH}; }
peer_path

left() { echo $(( CALL_LIMIT - 20 - ($(date +%s) - T0) )); }
pack_logs() { tar -C "$LOGS" -cJf "$OUT/logs.tar.xz" . 2>/dev/null; }
trap pack_logs EXIT

stage() { # name limit command...
  local name=$1 limit=$2; shift 2
  local l; l=$(left)
  [ "$l" -lt "$limit" ] && limit=$l
  if [ "$limit" -lt 10 ]; then echo "== $name skipped: $l s left of the call"; return; fi
  local t0=$(date +%s) n=2
  [ -e "$LOGS/$name.log" ] && { while [ -e "$LOGS/$name-$n.log" ]; do n=$((n + 1)); done; name=$name-$n; }
  echo "== $name (limit ${limit}s)"
  timeout -k 5 "$limit" stdbuf -oL -eL "$@" >"$LOGS/$name.log" 2>&1
  local rc=$?
  echo "== $name rc $rc in $(( $(date +%s) - t0 ))s"
  tail -n "${TAILN:-25}" "$LOGS/$name.log"
}

running() { # the trainall runs still alive
  local n=0
  for f in $RUNS/*.pid; do [ -e "$f" ] && kill -0 "$(cat "$f")" 2>/dev/null && n=$((n + 1)); done
  echo $n
}

progress() { for f in $RUNS/*.log; do [ -e "$f" ] && echo "$(basename "$f" .log): $(grep -a 'step' "$f" | tail -n 1)"; done; }

for s in "$@"; do
  case "$s" in
    info) stage info 30 bash -c 'nvidia-smi; nvcc --version | tail -1; echo cudalib='"$cudalib"';
            ldd ./mtlab | grep -i "not found"; ./mtlab devices; infocmp tmux-256color >/dev/null && echo terminfo ok
            for t in nsys ncu compute-sanitizer; do echo "$t: $(command -v $t || ls /usr/local/cuda*/bin/$t /opt/nvidia/*/bin/$t 2>/dev/null | head -n 1)"; done' ;;
    tests) for t in test_device:60 test_cuda_ops:150 test_cuda_seq_ops:120 test_cuda_models:180 test_comet:120 test_collective_nccl:90; do
             NCCL_DEBUG=WARN MTLAB_REQUIRE_CUDA=1 stage "${t%:*}" "${t#*:}" build/rel/tests/${t%:*}; done ;;
    peerbuild) # each package its own pip, side by side: causal-conv1d's 3 files, mamba-ssm's 10
      [ -d .dev-peer ] || { echo "== peerbuild: no .dev-peer (scripts/gpu/pack_peer.sh, carry it)"; continue; }
      rm -f $PEER.rc; echo "== peerbuild: started $(date +%T)"
      MAX_JOBS=10 TORCH_CUDA_ARCH_LIST=9.0 MAMBA_FORCE_BUILD=TRUE CAUSAL_CONV1D_FORCE_BUILD=TRUE setsid nohup bash -c '
        t0=$(date +%s)
        for d in .dev-peer/causal_conv1d-* .dev-peer/mamba_ssm-*; do
          python3 -m pip install -v --no-build-isolation --no-deps --no-index --target '$PEER' "$d" \
            >'"$LOGS"'/peerbuild-$(basename "$d").log 2>&1 &
        done
        rc=0; for j in $(jobs -p); do wait $j || rc=$?; done
        echo "built in $(( $(date +%s) - t0 ))s, rc $rc" >>'"$LOGS"'/peerbuild.log; echo $rc >'$PEER'.rc' \
        </dev/null >/dev/null 2>&1 & ;;
    peerwait:*) secs=${s#peerwait:}; t0=$(date +%s)
      while [ ! -s $PEER.rc ] && [ $(( $(date +%s) - t0 )) -lt "$secs" ] && [ "$(left)" -gt 30 ]; do sleep 5; done
      if [ -s $PEER.rc ]; then
        echo "== peerwait: $(cat $LOGS/peerbuild.log)"; peer_path
      else echo "== peerwait: still building after $(( $(date +%s) - t0 ))s"; fi
      for f in $LOGS/peerbuild-*.log; do [ -e "$f" ] && { echo "-- ${f##*/}:"; grep -a -E 'error|Error|Successfully' "$f" | tail -n 6; }; done ;;
    sanitize|sanitize:*) IFS=: read -r _ tool progs <<<"$s"   # memcheck (default), racecheck, synccheck, initcheck
      for t in ${progs:-test_cuda_ops test_cuda_seq_ops}; do
        stage "sanitize-${tool:-memcheck}-$t" 200 compute-sanitizer --tool "${tool:-memcheck}" --print-limit 20 build/rel/tests/$t; done ;;
    torch*|bench:*) [ "$(running)" -gt 0 ] && { echo "== $s skipped: $(running) training runs share the GPU"; continue; } ;;&
    torch|torch:*) pre=${s#torch}; pre=${pre#:}
           stage torch 180 python3 -u tests/bench/torch_train.py --out "$LOGS/torch_train.json" ${pre:+--presets "$pre"} ;;
    bench:*) IFS=: read -r _ only rep lim <<<"$s"; j=()   # bench:kernels:3[:LIMIT] (the torch JSON from an earlier call: .dev/)
           for f in "$LOGS/torch_train.json" .dev/torch_train.json; do [ -s "$f" ] && { j=(--torch-json "$f"); break; }; done
           stage "bench-$only" "${lim:-300}" ./mtlab bench --device cuda:0 --only "$only" --repeat "$rep" "${j[@]}" ;;
    ncu:*) IFS=: read -r _ re cnt lim <<<"$s"   # ncu:REGEX[:LAUNCHES[:LIMIT]]: Nsight Compute over bench's kernels
      n=$(command -v ncu || ls /usr/local/cuda*/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -n 1)
      [ -z "$n" ] && { echo "== ncu: not on this image"; continue; }
      stage ncu "${lim:-120}" "$n" --kernel-name "regex:$re" --launch-count "${cnt:-4}" --section SpeedOfLight \
        --section WarpStateStats --section SchedulerStats --section Occupancy --section MemoryWorkloadAnalysis \
        ./mtlab bench --device cuda:0 --only kernels --repeat 1 ;;
    profile|profile:*) IFS=: read -r _ new lim <<<"$s"   # profile[:NEW[:LIMIT]]: the bf16 Mamba's decode under Nsight Systems
      n=$(command -v nsys || ls /usr/local/cuda*/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys 2>/dev/null | head -n 1)
      [ -z "$n" ] && { echo "== profile: no nsys on this image"; continue; }
      stage profile "${lim:-150}" bash -c '"$0" profile --cuda-graph-trace=node --force-overwrite true -o /tmp/decode \
          ./mtlab bench --device cuda:0 --only decode -m mamba --precision bf16 --new-tokens "$1" --repeat 1 &&
        "$0" stats --report cuda_gpu_kern_sum /tmp/decode.nsys-rep' "$n" "${new:-64}" ;;
    env:*) v=${s#env:}; if [ "${v#*=}" = "$v" ]; then unset "$v"; else export "${v%%=*}=${v#*=}"; fi
           echo "== env: ${v}" ;;
    tui) stage tui 120 scripts/gpu/panes.sh "$LOGS" ;;
    train:*) IFS=: read -r _ cfg secs name kv <<<"$s"   # train:CONFIG:SECONDS:NAME:KEY=V,KEY=V
             stage "train-$name" "$secs" ./mtlab train "$cfg" device=cuda name="$name" ${kv//,/ }
             cp "runs/$name/log.jsonl" "$LOGS/train-$name.jsonl" 2>/dev/null ;;
    mps) # the runs' kernels side by side instead of time-sliced; kept only if a client can start
      mkdir -p /tmp/mps /tmp/mps-log
      if CUDA_MPS_PIPE_DIRECTORY=/tmp/mps CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log nvidia-cuda-mps-control -d 2>"$LOGS/mps.log" &&
         CUDA_MPS_PIPE_DIRECTORY=/tmp/mps timeout 30 ./mtlab devices >>"$LOGS/mps.log" 2>&1; then
        echo 1 >$RUNS/mps; export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
        echo "== mps: running"
      else
        echo quit | CUDA_MPS_PIPE_DIRECTORY=/tmp/mps nvidia-cuda-mps-control 2>/dev/null
        echo "== mps: not available (time-sliced runs):"; tail -n 5 "$LOGS/mps.log"
      fi ;;
    trainall:*) IFS=: read -r _ secs cfgs <<<"$s"   # extra keys for every run: TRAIN_KV="bf16=true"
      for cfg in ${cfgs//,/ }; do
        n=$(basename "$cfg" .lua) init=()
        if [ -n "${TRAIN_INIT:-}" ]; then   # go on from the bundle TRAIN_INIT/NAME at its step (models/provenance.tsv)
          st=$(awk -F'\t' -v r="$n" '$2 == r {print $3}' "$TRAIN_INIT/provenance.tsv")
          [ -n "$st" ] && [ -s "$TRAIN_INIT/$n/config.json" ] && init=(init="$TRAIN_INIT/$n" init_step="$st")
          [ "${st:-0}" -ge "${TRAIN_MAX:-10000}" ] && { echo "== trainall: $n is at ${TRAIN_MAX:-10000} steps already"; continue; }
        fi
        OMP_NUM_THREADS=1 setsid nohup timeout -k 20 "$secs" ./mtlab train "$cfg" device=cuda ${TRAIN_MAX:+max_steps=$TRAIN_MAX} \
          ${TRAIN_KV:-} "${init[@]}" \
          >"$RUNS/$n.log" 2>&1 </dev/null &
        echo $! >"$RUNS/$n.pid"
      done
      echo "== trainall: $(running) runs started, each stopped after ${secs}s" ;;
    trainwait:*) IFS=: read -r _ secs leave <<<"$s"; t0=$(date +%s)   # trainwait:SECONDS[:LEAVE]
      while [ "$(running)" -gt 0 ] && [ $(( $(date +%s) - t0 )) -lt "$secs" ] && [ "$(left)" -gt "${leave:-60}" ]; do
        sleep 15; [ $(( ($(date +%s) - t0) % 60 )) -lt 15 ] && { echo "-- $(( $(date +%s) - T0 ))s: $(running) running"; progress | cut -c1-150; }
      done
      echo "== trainwait: $(running) still running after $(( $(date +%s) - t0 ))s"; progress | cut -c1-200
      if [ "$(running)" -eq 0 ] && [ -s $RUNS/mps ]; then
        echo quit | nvidia-cuda-mps-control; rm -f $RUNS/mps; unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
      fi ;;
    stopall) for f in $RUNS/*.pid; do kill -TERM "$(cat "$f")" 2>/dev/null; done   # each saves a checkpoint
      t0=$(date +%s); while [ "$(running)" -gt 0 ] && [ $(( $(date +%s) - t0 )) -lt 60 ]; do sleep 2; done
      echo "== stopall: $(running) still running"; progress | cut -c1-200 ;;
    snap) # insurance while runs go on past the call: each run's newest complete kept bundle
      # (the last "kept" line of its log), OUT/NAME-stepN.tar.xz, to score and average here
      for f in $RUNS/*.log; do
        [ -e "$f" ] || continue
        d=$(grep -a -o 'kept [^ ]*/steps/[0-9]*' "$f" | tail -n 1 | cut -d' ' -f2)
        [ -n "$d" ] && [ -s "$d/config.json" ] || continue
        n=$(basename "$(dirname "$(dirname "$d")")")
        tar -C "$(dirname "$d")" -cf - --transform "s,^$(basename "$d"),best," "$(basename "$d")" |
          xz -T0 -6 >"$OUT/${n//+/p}-step$(basename "$d").tar.xz"
      done
      echo "== snap:"; ls -la "$OUT" ;;
    fetch:*) max=${s#fetch:}; k=0
      mkdir -p "$LOGS/runs"; cp $RUNS/*.log "$LOGS/runs/" 2>/dev/null
      for d in runs/*/; do n=$(basename "$d"); cp "$d/log.jsonl" "$LOGS/runs/$n.jsonl" 2>/dev/null; done
      for pidf in $RUNS/*.pid; do
        n=$(basename "$pidf" .pid); kill -0 "$(cat "$pidf")" 2>/dev/null && continue
        run=$n-10k   # the retraining configs name their runs so (scripts/train/budget.lua)
        [ -n "$run" ] && [ -d "runs/$run/best" ] && [ ! -e "$RUNS/$run.fetched" ] || continue
        [ "$k" -ge "$max" ] && break
        sub=best
        if [ -n "${FETCH_AVG:-}" ] && [ -d "runs/$run/steps" ]; then
          # with kept bundles (TRAIN_KV="keep_every=250"): the best of best/ and the means of the
          # last FETCH_AVG kept ones on the validation split (paragraphs for CAT runs), as best/
          para=; case $run in *-cat*) para=--para ;; esac
          l=$(left); [ "$l" -gt 300 ] && l=300
          OMP_NUM_THREADS=8 timeout "$l" ./mtlab run scripts/train/average.lua "runs/$run" --last "$FETCH_AVG" $para \
            --device "${FETCH_DEVICE:-cpu}" \
            --out "runs/$run/chosen" >"$LOGS/average-$run.log" 2>&1 && sub=chosen
          tail -n 12 "$LOGS/average-$run.log"
        fi
        # OUT's names may hold letters, digits, '.', '_' and '-' only: transformer++ comes back as transformerpp
        tar -C "runs/$run" -cf - --transform "s,^$sub,best," $sub | xz -T0 -6 >"$OUT/${run//+/p}.tar.xz" &&
          touch "$RUNS/$run.fetched" && k=$((k + 1))
      done
      echo "== fetch: $k bundles ($(ls $RUNS/*.fetched 2>/dev/null | wc -l) of $(ls $RUNS/*.pid 2>/dev/null | wc -l) fetched so far)"
      ls -la "$OUT" ;;
    *) echo "remote.sh: unknown stage '$s'" ;;
  esac
done
