#!/usr/bin/env bash
# The Mamba training peer users know, for a lent GPU machine that cannot reach the network:
# mamba-ssm's and causal-conv1d's source distributions from PyPI (neither ships a wheel there),
# their CUDA builds cut to the one chip the machine has (sm_90, Hopper), into .dev-peer/
# (ignored; a device call carries it). scripts/gpu/remote.sh's peerbuild stage builds them there
# against that machine's PyTorch while other stages run. A development tool; mtlab never needs it.
# Use: scripts/gpu/pack_peer.sh
set -eu
cd "$(dirname "$0")/../.."
grep -qx '/.dev-peer/' .git/info/exclude 2>/dev/null || echo '/.dev-peer/' >>.git/info/exclude
rm -rf .dev-peer && mkdir -p .dev-peer/dl
python3 -m pip download -q --no-deps --no-binary=:all: --no-build-isolation -d .dev-peer/dl \
  mamba-ssm==2.3.2.post1 causal-conv1d==1.7.0
for f in .dev-peer/dl/*.tar.gz; do tar -xzf "$f" -C .dev-peer; done
rm -rf .dev-peer/dl
# each setup.py appends '-gencode arch=compute_N,code=sm_N' for eight or more chips: keep 90
python3 - .dev-peer/*/setup.py <<'PY'
import re, sys
for p in sys.argv[1:]:
    s = open(p).read()
    pair = r'cc_flag\.append\("-gencode"\)\s*\n\s*cc_flag\.append\("arch=compute_(\d+),code=sm_\d+"\)'
    n = len(re.findall(pair, s))
    s = re.sub(pair, lambda m: m.group(0) if m.group(1) == "90" else "pass", s)
    open(p, "w").write(s)
    print(f"{p}: {n} targets, sm_90 kept")
PY
du -sh .dev-peer
