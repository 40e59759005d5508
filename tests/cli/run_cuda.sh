#!/usr/bin/env bash
# CLI: `nnmem run PLAN.json --backend cuda` over the stand-in driver
# (tests/fakes/fake_cuda.c: the kernels run as C on its fake device memory,
# a virtual clock per stream times the events). A fitted plan passes and
# its measured exposed transfer time equals the cost model's (the fake's
# link at the plan's link bandwidth); --json parsed back; a corrupted byte
# names the op; an injected CUDA failure (at the call, or a kernel faulting
# asynchronously) names the op and the error; a
# device too small says free/total; no driver or a build without kernels
# refuse before anything runs (exit 1); GPU options need --backend cuda.
. "$(dirname "$0")/lib/common.sh"
[ -n "${NNMEM_FAKE_CUDA:-}" ] || skip "NNMEM_FAKE_CUDA not set"
export NNMEM_CUDA_LIBRARY=$NNMEM_FAKE_CUDA FAKE_CUDA_CAPACITY=4000000000

# 10 MB: copies exposed (0.41 ms in the cost model), so the measured and
# the modelled exposed time compare two nonzero times
expect_rc 0 plan --model mobilenetv2 --mem-limit 10MB --out "$T/fit.json"
has_file "$T/fit.json"
link=$(python3 -c 'import json,sys; f=json.load(open(sys.argv[1]))["fit"]
print(f["device"]["tiers"][f["main_tier"]]["link_bandwidth"])' "$T/fit.json")
export FAKE_CUDA_LINK_BW=$link

# usage errors, before anything runs
expect_error run "$T/fit.json" --spin-scale 2
err_has "apply to --backend cuda only"
expect_error run "$T/fit.json" --backend opencl
err_has "expected sim or cuda"
expect_error run "$T/fit.json" --backend cuda --spin-scale -1
expect_error run "$T/fit.json" --backend cuda --fail-copy 2
expect_error run "$T/fit.json" --check-every 4
err_has "apply to --backend cuda only"
expect_error run "$T/fit.json" --backend cuda --check-every 0
err_has "bad --check-every '0'"

nn run "$T/fit.json" --backend cuda
if grep -qF "built without CUDA kernels" "$T/stderr"; then
  # a build without nvcc: refused, nothing run, nothing printed
  [ "$RC" -eq 1 ] || fail "expected exit 1"
  out_empty
  finish
fi
[ "$RC" -eq 0 ] || fail "expected exit 0"
out_has "PASS"
out_matches "exposed transfer time: measured [0-9.]+ s, cost model [0-9.]+ s \(ratio 1\.000\)"
NNMEM_CUDA_LIBRARY=/nonexistent/libcuda.so.1 expect_rc 1 run "$T/fit.json" \
  --backend cuda
err_has "refused, nothing executed"
err_has "no CUDA driver"

expect_rc 0 run "$T/fit.json" --model mobilenetv2 --backend cuda --device 0 \
  --spin-scale 2 --json
py '
import json, sys
r = json.load(open(sys.argv[1]))
f = json.load(open(sys.argv[2]))["fit"]
g = r["gpu"]
assert r["passed"] is True and r["steps"] == f["steps"], r
assert r["copies"] == len(f["copies"])
assert r["copy_bytes"] == f["costs"]["transfer_bytes"]
assert len(g["step_wait_s"]) == f["steps"]
# scale 2: the kernels take twice the op times; exposed follows the model
assert abs(g["kernel_s"] - 2 * f["costs"]["compute_s"]) <= 1e-4 * g["kernel_s"]
assert abs(g["exposed_s"] - g["est_exposed_s"]) <= 1e-6 + 1e-4 * g["est_exposed_s"]
assert abs(g["total_s"] - (g["kernel_s"] + g["exposed_s"] + g["gap_s"])) <= 1e-6
assert abs(sum(g["step_wait_s"]) - g["exposed_s"] - g["gap_s"]) <= 1e-6
' "$T/stdout" "$T/fit.json"

# a corrupted byte: found on the device, the reading op named (exit 3)
expect_rc 3 run "$T/fit.json" --backend cuda --corrupt-step 5
err_matches "FAIL: step [0-9]+: (op [^ ]+ reads|after the last step)"
err_has "found on the GPU"

# checked after every step: found on the device before the last step
expect_rc 3 run "$T/fit.json" --backend cuda --corrupt-step 5 --check-every 1
err_matches "FAIL: step [0-9]+: op [^ ]+ reads"

# injected CUDA failures: the op and the CUDA error named (exit 3)
FAKE_CUDA_FAIL_LAUNCH=9 expect_rc 3 run "$T/fit.json" --backend cuda
err_matches "step [0-9]+ \(op [^)]+\): cuLaunchKernel: CUDA_ERROR_LAUNCH_FAILED"
FAKE_CUDA_FAIL_COPY=4 expect_rc 3 run "$T/fit.json" --backend cuda --json
err_has "CUDA_ERROR_ILLEGAL_ADDRESS"
py 'import json,sys; r=json.load(open(sys.argv[1])); assert r["passed"] is False' \
  "$T/stdout"

# a kernel faulting asynchronously (the launch succeeds; the host learns at
# its next sync point): the run stops there, the faulting op and the CUDA
# error named (exit 3), and the driver holds nothing at exit
FAKE_CUDA_FAULT_LAUNCH=9 FAKE_CUDA_LEAKS=1 expect_rc 3 run "$T/fit.json" \
  --backend cuda
err_matches "step [0-9]+ \(op [^)]+\): the device: CUDA_ERROR_ILLEGAL_ADDRESS"
err_has "found at the sync point before step"
err_has "fake_cuda at exit: allocations 0, vm handles 0, mappings 0, reservations 0, exec objects 0"

# the device is too small
FAKE_CUDA_CAPACITY=1000000 expect_rc 3 run "$T/fit.json" --backend cuda
err_has "B free of 1000000 B"
finish
