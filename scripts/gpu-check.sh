#!/usr/bin/env bash
# The GPU checks, as one script for a machine with an NVIDIA GPU (the
# device sessions are short: this takes a few minutes on an H200): build
# with the CUDA benchmark, run the cuda backend's unit tests (their
# real-device cases run there: test_backend_cuda, test_cuda_vm for the
# virtual-memory segments and compaction by remapping) and bench/device
# (pools, the growable CUDA segment, cudaMalloc and cudaMallocAsync on the
# shared traces when found, the ring always; then compaction remap vs copy),
# test_exec_cuda (the GPU executor over the stand-in driver and, there, on
# the device), and the executor itself: `nnmem run --backend cuda` on a few
# models fitted at 50% of their peak, measured exposed transfer time against
# the cost model's estimate (step gpu_exec).
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
  test_exec_cuda fake_cuda nnmem_cli
FAKE=$ROOT/build-gpu/tests/libfakecuda.so
for t in test_backend_cuda test_cuda_vm test_exec_cuda; do
  step "$t" "$t.log" env NNMEM_FAKE_CUDA="$FAKE" "$ROOT/build-gpu/tests/$t"
done
# the compaction scenario on the GPU itself (exit 77 without one)
step test_cuda_vm_gpu test_cuda_vm_gpu.log "$ROOT/build-gpu/tests/test_cuda_vm" --gpu
# the bench writes its CSVs in $OUT; about 2 minutes on an H200
cd "$OUT"
step bench_device bench-device.txt timeout 400 \
  "$ROOT/build-gpu/bench/device" ${DATA:+--data "$DATA"}
cd "$ROOT"

# The executor on the GPU (nnmem run --backend cuda; not yet run on a real
# GPU before this script): a few shared models fitted at 50 % of their
# unconstrained peak on a device description whose link bandwidth is the
# pinned host -> device rate measured by the executor itself (its
# calibration copy), then run; measured exposed transfer time (the compute
# stream's waits for copies) against the cost model's estimate. The issue's
# figure: within 25 %. About a minute on an H200.
gpu_exec() {
  local bin=$ROOT/build-gpu/nnmem out=$OUT/exec data=${DATA:-}
  mkdir -p "$out"
  nvidia-smi -L >/dev/null 2>&1 || { echo "no GPU here: skipped"; return 77; }
  # 1. the link rate: one run of a small built-in fit
  "$bin" plan --model mobilenetv2 --device datacenter --mem-limit 8MB \
    --out "$out/probe.json" >"$out/probe-plan.txt" 2>&1 || return 1
  if ! "$bin" run "$out/probe.json" --backend cuda --json >"$out/probe.json.run" \
    2>"$out/probe.err"; then
    echo "gpu-exec: the executor did not run: $(head -c 400 "$out/probe.err")"
    return 1
  fi
  local link
  link=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["gpu"]["link_bytes_per_s"])' \
    "$out/probe.json.run")
  # 2. a device like the GPU: HBM, the host over the measured link
  cat >"$out/gpu.device.json" <<JSON
{"name": "gpu", "compute_rate": 5e14, "op_overhead": 5e-06,
 "conv_algorithm": "direct", "alignment": 256,
 "tiers": [{"name": "hbm", "capacity": 100000000000, "bandwidth": 4.8e12,
            "link_bandwidth": $link},
           {"name": "host"}]}
JSON
  # each plan at --spin-scale 1, 10 and 100 (kernels spin 10x the estimated op
  # time, so the spin outweighs the pattern checks and launch costs the
  # cost model does not know; the estimate is recomputed at that scale);
  # fed_measured: the model's timeline fed the measured kernel and copy
  # times (separates a wrong op/link estimate from wrong event ordering)
  printf '%-24s %11s %11s %11s %7s %11s %11s\n' model measured_s estimate_s \
    fed_measured ratio kernel_s est_comp_s \
    | tee "$out/exec.txt"
  local models="resnet50 bert-base"
  [ -n "$data" ] && models="$models $data/models/light_resnet50.onnx $data/models/light_inception_v1.onnx $data/models/light_inception_v2.onnx"
  for m in $models; do
    local src=(--model "$m") name=$m
    [ -f "$m" ] && src=("$m") && name=$(basename "$m" .onnx)
    local peak
    peak=$("$bin" plan "${src[@]}" --device "$out/gpu.device.json" \
      --mem-limit 100GB 2>/dev/null | sed -n 's/.*unconstrained peak \([0-9,]*\) B.*/\1/p' | tr -d ,)
    [ -n "$peak" ] || { echo "$name: no peak"; continue; }
    "$bin" plan "${src[@]}" --device "$out/gpu.device.json" \
      --mem-limit "$((peak / 2))B" --out "$out/$name.json" >"$out/$name.plan.txt" 2>&1 ||
      { echo "$name: no fit at 50%"; continue; }
    for sc in 1 10 100; do
      "$bin" run "$out/$name.json" --backend cuda --spin-scale $sc --json \
        >"$out/$name.x$sc.json" 2>"$out/$name.err" ||
        { echo "$name: FAIL $(head -c 300 "$out/$name.err")"; continue; }
      python3 -c 'import json,sys; g=json.load(open(sys.argv[1]))["gpu"]
print("%-24s %11.6f %11.6f %11.6f %7.3f %11.6f %11.6f" % (sys.argv[2], g["exposed_s"], g["est_exposed_s"], g["est_exposed_measured_s"], g["exposed_ratio"], g["kernel_s"], g["est_compute_s"]))' \
        "$out/$name.x$sc.json" "$name x$sc" | tee -a "$out/exec.txt"
    done
  done
}
step gpu_exec gpu-exec.log gpu_exec
echo "--- summary ---"
cat "$SUMMARY"
exit $failed
