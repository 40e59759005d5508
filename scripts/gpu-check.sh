#!/usr/bin/env bash
# The GPU checks, as one script for a machine with an NVIDIA GPU (the
# device sessions are short: this takes a few minutes on an H200): build
# with the CUDA benchmark, run the cuda backend's unit tests (their
# real-device cases run there: test_backend_cuda, test_cuda_vm for the
# virtual-memory segments and compaction by remapping) and bench/device
# (pools, the growable CUDA segment, cudaMalloc and cudaMallocAsync on the
# shared traces when found, the ring always; then compaction remap vs copy).
#
# Before a device run, scripts/gpu-stage.sh (here, with the package archive)
# puts under shared/ (which travels, and is not committed) the .deb files of
# the libraries the build needs and the shared traces.
# Data: $NNMEM_DATA_DIR, else ./shared/data, else ../shared/data.
# Output under ${OUT:-gpu-out}: nvidia-smi, configure and build logs, each
# test's log, the bench table and its two CSVs, and summary.txt with one
# line per step. Every step runs even when an earlier one failed; on a
# machine without a GPU the real-device cases report skipped (exit 77 is a
# skip, not a failure) and the bench says "no CUDA device: skipped". Exit
# status: 0 when no step failed.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
OUT=${OUT:-gpu-out}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
SUMMARY="$OUT/summary.txt"
: >"$SUMMARY"
failed=0

# step NAME LOG CMD...: runs CMD with its output in $OUT/LOG (and on the
# terminal), notes the outcome in the summary.
step() {
  local name=$1 log=$2
  shift 2
  local t0=$SECONDS rc
  "$@" 2>&1 | tee "$OUT/$log"
  rc=${PIPESTATUS[0]}
  local verdict=ok
  if [ "$rc" -eq 77 ]; then
    verdict="SKIPPED (no GPU)"
  elif [ "$rc" -ne 0 ]; then
    verdict="FAILED (exit $rc)"
    failed=1
  fi
  if grep -q "SKIPPED \]" "$OUT/$log" 2>/dev/null; then
    verdict="$verdict, with skipped cases (no GPU?)"
  fi
  echo "$name: $verdict, $((SECONDS - t0)) s (log: $log)" | tee -a "$SUMMARY"
}

DATA=${NNMEM_DATA_DIR:-}
if [ -z "$DATA" ]; then
  for d in "$ROOT/shared/data" "$ROOT/../shared/data"; do
    if [ -d "$d/dsa/traces" ]; then
      DATA=$(cd "$d" && pwd)
      break
    fi
  done
fi
echo "data: ${DATA:-none found (the bench runs the ring only)}" | tee -a "$SUMMARY"

# Libraries staged by scripts/gpu-stage.sh (a device machine fetches
# nothing): each .deb unpacked into a private prefix that CMake searches
# first; cJSON's CMake package names /usr, so it is dropped there and
# CMake finds the header and library by path instead.
PREFIX_ARGS=()
if ls "$ROOT"/shared/gpu-deps/*.deb >/dev/null 2>&1; then
  DEPS=$ROOT/build-gpu-deps
  rm -rf "$DEPS"
  mkdir -p "$DEPS"
  for f in "$ROOT"/shared/gpu-deps/*.deb; do
    if command -v dpkg-deb >/dev/null 2>&1; then
      dpkg-deb -x "$f" "$DEPS"
    else
      (t=$(mktemp -d) && cd "$t" && ar x "$f" && tar -xf data.tar.* -C "$DEPS" &&
        rm -rf "$t")
    fi
  done
  rm -rf "$DEPS"/usr/lib/*/cmake/cJSON
  export PATH="$DEPS/usr/bin:$PATH"
  export LD_LIBRARY_PATH="$DEPS/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  PREFIX_ARGS=(-DCMAKE_PREFIX_PATH="$DEPS/usr")
  echo "deps: $(ls "$ROOT"/shared/gpu-deps/*.deb | wc -l) staged packages in $DEPS" |
    tee -a "$SUMMARY"
fi

nvidia-smi >"$OUT/nvidia-smi.txt" 2>&1 || echo "nvidia-smi: none" >>"$SUMMARY"
JOBS=$(nproc 2>/dev/null || echo 2)
step configure configure.log \
  cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DNNMEM_CUDA=ON \
  -DNNMEM_BUILD_TESTS=ON ${DATA:+-DNNMEM_DATA_DIR=$DATA} \
  ${PREFIX_ARGS[@]+"${PREFIX_ARGS[@]}"}
# the bench first, so that it runs even if a test target cannot be built
step build_bench build-bench.log \
  cmake --build build-gpu -j "$JOBS" --target bench_device
step build_tests build-tests.log \
  cmake --build build-gpu -j "$JOBS" --target test_backend_cuda test_cuda_vm \
  fake_cuda
FAKE=$ROOT/build-gpu/tests/libfakecuda.so
for t in test_backend_cuda test_cuda_vm; do
  step "$t" "$t.log" env NNMEM_FAKE_CUDA="$FAKE" "$ROOT/build-gpu/tests/$t"
done
# the compaction scenario on the GPU itself (exit 77 without one)
step test_cuda_vm_gpu test_cuda_vm_gpu.log "$ROOT/build-gpu/tests/test_cuda_vm" --gpu
# the bench writes its CSVs in $OUT; about 2 minutes on an H200
cd "$OUT"
step bench_device bench-device.txt timeout 400 \
  "$ROOT/build-gpu/bench/device" ${DATA:+--data "$DATA"}
cd "$ROOT"
echo "--- summary ---"
cat "$SUMMARY"
exit $failed
