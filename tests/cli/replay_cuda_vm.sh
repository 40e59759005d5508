#!/usr/bin/env bash
# CLI: `nnmem replay --defrag MODE --segment KIND [--remap]`: the handle heap
# on a growable segment, host address space or GPU virtual addresses (the
# CUDA driver's virtual memory API, here the stand-in driver
# tests/fakes/fake_cuda.c with 64 KiB granules), with compaction by
# remapping. Eight 64 KiB buffers, every other one freed at step 2, then a
# 256 KiB buffer at step 5 in a 512 KiB heap: without compaction no gap
# holds it; auto compacts once, moving the four survivors (256 KiB) down by
# whole granules, so with --remap every moved byte is remapped and without
# it every byte is copied. Then: usage errors; a device without virtual
# memory management (exit 1, nothing on stdout); driver calls failing in
# the middle (swept): a clear error naming the CUDA error and exit 3, or a
# buffer that did not fit with the driver's words, and nothing left held
# in the driver either way (FAKE_CUDA_LEAKS: the fake's count at exit).
. "$(dirname "$0")/lib/common.sh"

{
  echo "id,lower,upper,size"
  for i in 0 1 2 3 4 5 6 7; do
    if [ $((i % 2)) -eq 1 ]; then echo "$i,0,10,65536"; else echo "$i,0,2,65536"; fi
  done
  echo "8,5,10,262144"
} >"$T/frag.csv"

# the result of the off / auto pair, as tests/cli/replay.sh checks it, plus
# the segment and the bytes remapped ($1: the expected bytes_remapped)
check_pair() {
  py 'import json,sys; l=json.load(open(sys.argv[1])); seg=sys.argv[2]
remapped=int(sys.argv[3])
assert [(x["pool"], x.get("defrag")) for x in l]==[("tlsf",None),("heap","off"),("heap","auto")], l
off, on = l[1], l[2]
assert off["segment"]==seg and on["segment"]==seg, l
assert off["fits"] is False and off["failed_buffer"]==8 and off["compactions"]==0, off
assert on["fits"] is True and on["compactions"]==1 and on["bytes_moved"]==262144, on
assert on["bytes_remapped"]==remapped, on
assert on["remap"] is (remapped > 0), on
assert on["peak_live_bytes"]==524288, on' "$T/stdout" "$@"
}

# usage errors, before anything runs
expect_error replay "$T/frag.csv" --segment cuda-vm
err_has "--segment chooses the heap's memory: it needs --defrag"
expect_error replay "$T/frag.csv" --defrag auto --segment cuda-vm
err_has "--segment cuda-vm reserves GPU virtual addresses: it needs --backend cuda"
expect_error replay "$T/frag.csv" --defrag auto --remap
err_has "--remap needs --segment host-vm or cuda-vm"
expect_error replay "$T/frag.csv" --defrag auto --segment cuda_vm
err_has "did you mean 'cuda-vm'"

# host address space: pages moved by mremap
expect_rc 0 replay "$T/frag.csv" --pool tlsf --defrag auto \
  --heap-capacity 512KiB --segment host-vm --remap --json
check_pair host-vm 262144

FAKE="$(dirname "$NNMEM_BIN")/tests/libfakecuda.so"
[ -f "$FAKE" ] || skip "no stand-in CUDA driver ($FAKE)"
export NNMEM_CUDA_LIBRARY=$FAKE FAKE_CUDA_CAPACITY=268435456 \
  FAKE_CUDA_GRANULARITY=65536 FAKE_CUDA_LEAKS=1
LEAKS="fake_cuda at exit: allocations 0, vm handles 0, mappings 0, reservations 0, exec objects 0"

# GPU virtual memory: granules exchanged, or copied without --remap
expect_rc 0 replay "$T/frag.csv" --pool tlsf --backend cuda --defrag auto \
  --heap-capacity 512KiB --segment cuda-vm --remap --json
check_pair cuda-vm 262144
err_has "$LEAKS"
expect_rc 0 replay "$T/frag.csv" --pool tlsf --backend cuda --defrag auto \
  --heap-capacity 512KiB --segment cuda-vm --json
check_pair cuda-vm 0
err_has "$LEAKS"
expect_rc 0 replay "$T/frag.csv" --pool tlsf --backend cuda --defrag auto \
  --heap-capacity 512KiB --segment cuda-vm --remap
out_has "pool: heap (defrag auto, capacity 512.0 KiB (524,288 B), segment cuda-vm, remap)"
out_has "compactions:         1 (256.0 KiB (262,144 B) moved, 256.0 KiB (262,144 B) of it by remapping)"
# buffers of a granule and a bit (68 KiB): with --remap the replay aligns
# each to the granule, so the compaction remaps their whole granules and
# copies only the odd 4 KiB (without the alignment nothing was remapped)
{
  echo "id,lower,upper,size"
  for i in 0 1 2 3 4 5 6 7; do
    if [ $((i % 2)) -eq 1 ]; then echo "$i,0,10,69632"; else echo "$i,0,2,69632"; fi
  done
  echo "8,5,10,278528"
} >"$T/odd.csv"
expect_rc 0 replay "$T/odd.csv" --pool tlsf --backend cuda --defrag auto \
  --heap-capacity 1MiB --segment cuda-vm --remap --json
py 'import json,sys; on=json.load(open(sys.argv[1]))[2]
assert on["fits"] and on["compactions"]==1, on
assert on["bytes_remapped"]==4*65536 and on["bytes_moved"]==4*69632, on' "$T/stdout"
err_has "$LEAKS"
# the plain segment: one cuMemAlloc region of the capacity, copies
expect_rc 0 replay "$T/frag.csv" --pool tlsf --backend cuda --defrag auto \
  --heap-capacity 512KiB --json
check_pair backend 0
err_has "$LEAKS"

# no virtual memory management on the device: refused, nothing printed
FAKE_CUDA_NO_VMM=1 expect_rc 1 replay "$T/frag.csv" --backend cuda \
  --defrag auto --heap-capacity 512KiB --segment cuda-vm --json
err_has "does not support virtual memory management"
out_empty
err_has "$LEAKS"

# the device's memory runs out while granules are committed: a result (the
# buffer did not fit), with the driver's words and the device's free/total
# (calls 1-8 are the off run's, 9-16 the auto run's first eight buffers)
FAKE_CUDA_VM_FAIL="cuMemCreate:17:2:100" expect_rc 0 replay "$T/frag.csv" \
  --pool tlsf --backend cuda --defrag auto --heap-capacity 512KiB \
  --segment cuda-vm --remap
out_has "fits:                no (buffer 8 did not fit)"
out_matches "device: +cuMemCreate: CUDA_ERROR_OUT_OF_MEMORY .*device free [0-9]+ of 268435456 bytes"
err_has "$LEAKS"

# a driver call failing anywhere (swept over the calls of both heap runs):
# either the run gets by (the segment retries what it can), or it stops
# with exit 3 naming the CUDA error, with nothing on stdout (--json); the
# fake holds nothing at exit either way
stops=0
for call in cuMemMap cuMemUnmap cuMemSetAccess cuMemCreate; do
  for n in 1 2 3 5 8 12 17 23 30; do
    FAKE_CUDA_VM_FAIL="$call:$n:700" nn replay "$T/frag.csv" --pool tlsf \
      --backend cuda --defrag auto --heap-capacity 512KiB --segment cuda-vm \
      --remap --json
    err_has "$LEAKS"
    case $RC in
      0) json_valid "$T/stdout" ;;
      3)
        out_empty
        err_has "CUDA_ERROR_ILLEGAL_ADDRESS"
        [ $stops -eq 0 ] && cat "$T/stderr" >&2
        stops=$((stops + 1))
        ;;
      *) fail "$call:$n: exit $RC: $(cat "$T/stderr")" ;;
    esac
  done
done
[ $stops -ge 3 ] || fail "only $stops injected failures stopped the replay"
finish
