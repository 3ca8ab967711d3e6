#!/usr/bin/env bash
# Packs what a lent GPU machine needs to run mtlab's CUDA checks into .dev/ (ignored; the device
# tool carries it): the rel build's binaries, the shared libraries they load that a bare CUDA image
# lacks (glibc and CUDA's own stay behind), tmux for the workbench check, and the corpus for a
# training run. scripts/gpu/remote.sh unpacks it there. A development tool; mtlab never needs it.
# Use: scripts/gpu/pack.sh [BUNDLE...]   (bundles under models/ to take along, for the panes)
set -eu
cd "$(dirname "$0")/../.."
grep -qx '/.dev/' .git/info/exclude 2>/dev/null || echo '/.dev/' >>.git/info/exclude
rm -rf .dev && mkdir -p .dev/stage/bin .dev/stage/lib .dev/stage/fallback
# BUILD and BIN as the Makefile's (a private build: BUILD=build-x BIN=mtlab-x); the CUDA backend is
# the shared object the binaries load on demand (engine/core/device.c), packed beside mtlab
B=${BUILD:-build}
bins="${BIN:-mtlab} $B/rel/tests/test_device $B/rel/tests/test_cuda_ops $B/rel/tests/test_cuda_seq_ops $B/rel/tests/test_cuda_models $B/rel/tests/test_comet $B/rel/tests/test_collective_nccl"
cp $bins .dev/stage/bin/
[ "${BIN:-mtlab}" = mtlab ] || mv ".dev/stage/bin/${BIN##*/}" .dev/stage/bin/mtlab
cp "$B/rel/libmtlab-cuda.so" .dev/stage/bin/
cp "$(command -v tmux)" .dev/stage/bin/
skip='libc\.so|libm\.so|libmvec|libpthread|libdl\.so|librt\.so|libresolv|ld-linux|/cuda/|libcublas|libcudart'
for b in $bins "$B/rel/libmtlab-cuda.so" "$(command -v tmux)"; do ldd "$b" | awk '/=>/ {print $3}'; done | sort -u | grep -Ev "$skip" |
  while read -r lib; do
    case "$lib" in
      */libstdc++*|*/libgcc_s*) cp -L "$lib" .dev/stage/fallback/ ;;   # the image's newer ones first
      *) cp -L "$lib" .dev/stage/lib/ ;;
    esac
  done
mkdir -p .dev/stage/terminfo/s && cp /lib/terminfo/s/screen-256color /lib/terminfo/s/screen .dev/stage/terminfo/s/
if [ -s data/bible/train.es ]; then mkdir -p .dev/stage/data && cp -r data/bible .dev/stage/data/; fi
for m in "$@"; do mkdir -p .dev/stage/models && cp -r "models/$m" .dev/stage/models/; done
[ $# -gt 0 ] && cp models/provenance.tsv .dev/stage/models/   # the steps a TRAIN_INIT run goes on from
tar -C .dev/stage -cJf .dev/pack.tar.xz . && rm -rf .dev/stage
ls -la .dev/pack.tar.xz
# what a device call would carry: tracked files plus this pack (the limit is 64 MiB)
mib=$( { git ls-files -z | xargs -0 stat -c %s; stat -c %s .dev/pack.tar.xz; } | awk '{s+=$1} END {printf "%.1f", s/1048576}')
echo "tracked files + .dev: $mib MiB (a device call carries at most 64)"
awk -v m="$mib" 'BEGIN {exit !(m > 64)}' && echo "over: take models/ out of the index for the call (docs/cuda.md §1)"
exit 0
