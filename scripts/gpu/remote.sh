#!/usr/bin/env bash
# Runs on a lent GPU machine, from the repository root, over what scripts/gpu/pack.sh packed:
#   scripts/gpu/remote.sh STAGE...   stages: info tests sanitize torch bench:SECTION:REPEAT tui
#                                    train:CONFIG:SECONDS:NAME:KEY=V,... trainall:SECONDS:CONFIG,...
# Each stage has its own time limit and writes its whole log to $OUT/STAGE.log (the device tool
# brings $OUT back); one stage failing does not stop the next. A development tool.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
P=/tmp/mtpack
if [ ! -d $P/bin ]; then mkdir -p $P && tar -xJf .dev/pack.tar.xz -C $P || exit 1; fi
cudalib=
for f in /usr/local/cuda/lib64/libcublas.so.13 /usr/local/cuda*/lib64/libcublas.so.13 \
  "$(python3 -c 'import nvidia,os;print(nvidia.__path__[0])' 2>/dev/null)"/*/lib/libcublas.so.13; do
  [ -e "$f" ] && { cudalib=$(dirname "$f"); break; }
done
export LD_LIBRARY_PATH=$P/lib:${cudalib:-/usr/local/cuda/lib64}:$P/fallback
export PATH=$P/bin:$PATH TERM=${TERM:-xterm-256color} TERMINFO_DIRS=$P/terminfo:/usr/share/terminfo:/lib/terminfo
# the packed binaries, where no build of this checkout is (a local try-out keeps its own)
[ -e mtlab ] || ln -s $P/bin/mtlab mtlab
for t in $P/bin/test_*; do [ -e "build/rel/tests/${t##*/}" ] || { mkdir -p build/rel/tests && cp "$t" build/rel/tests/; }; done
[ -d data/bible ] || { [ -d $P/data ] && mkdir -p data && cp -r $P/data/bible data/; }
[ -d $P/models ] && mkdir -p models && cp -rn $P/models/* models/
stage() { # name limit command...
  local name=$1 limit=$2; shift 2
  local t0=$(date +%s)
  echo "== $name (limit ${limit}s)"
  timeout -k 5 "$limit" stdbuf -oL -eL "$@" >"$OUT/$name.log" 2>&1
  local rc=$?
  echo "== $name rc $rc in $(( $(date +%s) - t0 ))s"
  tail -n "${TAILN:-25}" "$OUT/$name.log"
}
for s in "$@"; do
  case "$s" in
    info) stage info 30 bash -c 'nvidia-smi; nvcc --version | tail -1; echo cudalib='"$cudalib"';
            ldd ./mtlab | grep -i "not found"; ./mtlab devices; infocmp tmux-256color >/dev/null && echo terminfo ok' ;;
    tests) for t in test_device test_cuda_ops test_cuda_models; do
             MTLAB_REQUIRE_CUDA=1 stage "$t" 240 build/rel/tests/$t; done ;;
    sanitize) stage sanitize 200 compute-sanitizer --print-limit 20 build/rel/tests/test_cuda_ops ;;
    torch) stage torch 180 python3 -u tests/bench/torch_train.py --out "$OUT/torch_train.json" ;;
    bench:*) IFS=: read -r _ only rep <<<"$s"; j=()   # bench:kernels:3 (the torch JSON from an earlier call: .dev/)
           for f in "$OUT/torch_train.json" .dev/torch_train.json; do [ -s "$f" ] && { j=(--torch-json "$f"); break; }; done
           stage "bench-$only" 300 ./mtlab bench --device cuda:0 --only "$only" --repeat "$rep" "${j[@]}" ;;
    tui) stage tui 120 scripts/gpu/panes.sh "$OUT" ;;
    train:*) IFS=: read -r _ cfg secs name kv <<<"$s"   # train:CONFIG:SECONDS:NAME:KEY=V,KEY=V
             stage "train-$name" "$secs" ./mtlab train "$cfg" device=cuda name="$name" ${kv//,/ }
             cp "runs/$name/log.jsonl" "$OUT/train-$name.jsonl" 2>/dev/null ;;
    trainall:*) # trainall:SECONDS:CONFIG,CONFIG,...: the runs side by side on the one GPU; their
                # logs as OUT/trainall-logs.tar.xz, each run's best bundle as OUT/NAME.tar.xz
                # ($OUT brings back 8 files: at most 6 bundles beside the logs and this stage's own)
      IFS=: read -r _ secs cfgs <<<"$s"; pids=(); mkdir -p /tmp/trainall
      for cfg in ${cfgs//,/ }; do
        timeout -k 10 "$secs" ./mtlab train "$cfg" device=cuda bf16=true >"/tmp/trainall/$(basename "$cfg" .lua).log" 2>&1 &
        pids+=($!)
      done
      wait "${pids[@]}"
      for f in /tmp/trainall/*.log; do echo "== $f"; tail -n 4 "$f"; done | tee "$OUT/trainall.log"
      tar -cJf "$OUT/trainall-logs.tar.xz" /tmp/trainall runs/*/log.jsonl 2>/dev/null
      for d in runs/*/best; do n=$(basename "$(dirname "$d")"); tar -C "runs/$n" -cJf "$OUT/$n.tar.xz" best; done ;;
    *) echo "remote.sh: unknown stage '$s'" ;;
  esac
done
