#!/usr/bin/env bash
# Runs on a lent GPU machine, from the repository root, over what scripts/gpu/pack.sh packed:
#   scripts/gpu/remote.sh STAGE...   stages: info tests sanitize torch bench:SECTION:REPEAT tui
#                                    train:CONFIG:SECONDS:NAME:KEY=V,...
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
ln -sf $P/bin/mtlab mtlab
mkdir -p build/rel/tests && cp $P/bin/test_* build/rel/tests/
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
    *) echo "remote.sh: unknown stage '$s'" ;;
  esac
done
