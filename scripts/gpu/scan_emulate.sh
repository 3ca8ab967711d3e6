#!/usr/bin/env bash
# Compiles kernels/cuda_scan.cu's parallel kernels on the host and runs them against the
# recurrence in double (scripts/gpu/scan_emulate.cpp; a development check, docs/cuda.md §3).
# Needs g++ with C++20 (<barrier>); about a minute on two cores.
set -eu
cd "$(dirname "$0")/../.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# the kernels' part of the file: from the parallel kernels' banner to the host code
awk '/^\/\/ -+ parallel over time$/ { on = 1 } /^static unsigned scan_grid/ { on = 0 } on' \
    kernels/cuda_scan.cu > "$tmp/scan_par_kernels.inc"
[ -s "$tmp/scan_par_kernels.inc" ] || { echo "scan_emulate: no parallel kernels found in kernels/cuda_scan.cu" >&2; exit 1; }
g++ -std=c++20 -O1 -Wall -Wno-unknown-pragmas -Wno-unused-function -Iengine/include -Iengine \
    -I"$tmp" -o "$tmp/scan_emulate" scripts/gpu/scan_emulate.cpp -lpthread
"$tmp/scan_emulate"
