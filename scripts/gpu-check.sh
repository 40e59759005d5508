#!/usr/bin/env bash
# The GPU checks, as one script for a machine with an NVIDIA GPU (the
# device sessions are short): build with the CUDA benchmark, run the cuda
# backend's unit test (its real-device case runs there) and bench/device
# (the shared traces when NNMEM_DATA_DIR points at them, the ring always).
# Output under ${OUT:-gpu-out}: the test log, the bench table and CSV.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
OUT=${OUT:-gpu-out}
mkdir -p "$OUT"
nvidia-smi >"$OUT/nvidia-smi.txt" 2>&1 || true
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DNNMEM_CUDA=ON \
  -DNNMEM_BUILD_TESTS=ON ${NNMEM_DATA_DIR:+-DNNMEM_DATA_DIR=$NNMEM_DATA_DIR} \
  >"$OUT/configure.log" 2>&1
cmake --build build-gpu -j "$(nproc)" --target test_backend_cuda fake_cuda \
  bench_device nnmem_cli >"$OUT/build.log" 2>&1
NNMEM_FAKE_CUDA=build-gpu/tests/libfakecuda.so build-gpu/tests/test_backend_cuda \
  2>&1 | tee "$OUT/test_backend_cuda.log"
(cd "$OUT" && "$ROOT/build-gpu/bench/device" ${NNMEM_DATA_DIR:+--data "$NNMEM_DATA_DIR"}) \
  2>&1 | tee "$OUT/bench-device.txt"
