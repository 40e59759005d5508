#!/usr/bin/env bash
# CLI: `nnmem replay` of a MiniMalloc trace through the pools on an unbacked
# simulated device: exact numbers on a small trace, every pool side by
# side, usage errors (real traces: replay_data.sh).
. "$(dirname "$0")/lib/common.sh"

write_small_problem "$T/p.csv"

expect_rc 0 replay --help
out_has "Usage: nnmem replay"
out_has "--pool"
out_has "--json"
out_has "--prometheus"
out_has "Fragmentation is 1 - largest free block / free bytes"

# Peak live 12 B (steps 2-3); the default tiered pool serves these tiny
# buffers from one 64 KiB slab of its 256 B class (device alignment 256).
expect_rc 0 replay "$T/p.csv"
out_has "pool: tiered"
out_has "peak_live_bytes:     12 B"
out_has "peak_reserved_bytes: 64.0 KiB (65,536 B)"
# At the reservation peak (the first allocation) the one 64 KiB slab has 255
# free 256 B slots, each its own block: 1 - 1/255 = 0.9961.
out_has "fragmentation:       0.9961 (1 - largest free block / free bytes, at the reservation peak)"
err_empty

# --json is a list of pool results for one pool as for --pool all.
expect_rc 0 replay "$T/p.csv" --pool tlsf --json
json_valid "$T/stdout"
py 'import json,sys; l=json.load(open(sys.argv[1])); assert len(l)==1, l; r=l[0]
assert r["pool"]=="tlsf" and r["operations"]==8, r
assert r["peak_live_bytes"]==12 and r["peak_reserved_bytes"]==4194304, r' \
  "$T/stdout"

expect_rc 0 replay "$T/p.csv" --pool all --json
json_valid "$T/stdout"
py 'import json,sys; r=json.load(open(sys.argv[1]));
assert [x["pool"] for x in r]==["tiered","tlsf","best-fit","first-fit","buddy","slab"], r
assert all(x["peak_live_bytes"]==12 for x in r), r' "$T/stdout"

# a trace name with a tab and a quote: escaped in the JSON, not dropped
cp "$T/p.csv" "$T/a	\"b.csv"
expect_rc 0 replay "$T/a	\"b.csv" --json
json_valid "$T/stdout"
py 'import json,sys; r=json.load(open(sys.argv[1]))[0];
assert r["trace"].endswith("a\t\"b.csv"), r' "$T/stdout"

# --json=compact: the same document without whitespace.
expect_rc 0 replay "$T/p.csv" --pool all --json=compact
py 'import json,sys; t=open(sys.argv[1]).read()
assert t.count("\n")==1 and t.endswith("]\n") and " " not in t, t
assert len(json.loads(t))==6' "$T/stdout"
expect_error replay "$T/p.csv" --json=wide
err_has "bad --json='wide'"
expect_error replay "$T/p.csv" --json --prometheus
err_has "give one"

expect_rc 0 replay "$T/p.csv" --pool buddy --device-align 64
out_has "pool: buddy"

expect_error replay "$T/p.csv" --pool nope
err_has "bad --pool 'nope'"
expect_error replay "$T/p.csv" --device-align 96
expect_error replay
err_has "missing TRACE.csv"
expect_error replay "$T/absent.csv"

# A trace file name with control bytes (an escape sequence) is shown escaped,
# as plan and verify show it, never sent raw to the terminal.
cp "$T/p.csv" "$T/esc"$'\x1b'"[31m.csv"
expect_rc 0 replay "$T/esc"$'\x1b'"[31m.csv"
out_has 'esc\x1b[31m.csv'
grep -q $'\x1b' "$T/stdout" && fail "raw escape byte on stdout"

# the dynamic-shape pool: one device request for the whole trace (its
# block, 1.25 x the peak live bytes + 64 KiB, here 18,878,464 live ->
# 23,663,616 reserved), no fragmentation reported inside it
expect_rc 0 replay "$NNMEM_SOURCE_DIR/examples/traces/bert_base_b8.csv" --pool shape --json
py 'import json,sys
r = json.load(open(sys.argv[1]))
r = r[0] if isinstance(r, list) else r
assert r["device_requests"] == 1, r
assert r["peak_reserved_bytes"] == 18878464 + 18878464 // 4 + 65536, r
' "$T/stdout"

# --backend: the pools on real host memory, and on GPU memory through the
# cuda backend, here over the stand-in driver library the unit tests use
# (built next to the tests; 256 MiB: the buddy pool takes a 64 MiB region
# aligned to its size, which the backend over-allocates); the live bytes
# are the trace's either way.
S="$NNMEM_SOURCE_DIR/examples/problems/small.csv"
expect_rc 0 replay "$S" --backend host --json=compact
out_has '"peak_live_bytes":96'
expect_error replay "$S" --backend cdua
err_has "did you mean 'cuda'"
FAKE="$(dirname "$NNMEM_BIN")/tests/libfakecuda.so"
if [ -f "$FAKE" ]; then
  NNMEM_CUDA_LIBRARY="$FAKE" FAKE_CUDA_CAPACITY=268435456 \
    expect_rc 0 replay "$S" --backend cuda --pool all --json=compact
  out_has '"pool":"slab","operations":12,"peak_live_bytes":96'
  NNMEM_CUDA_LIBRARY="$FAKE" FAKE_CUDA_DEVICES=0 \
    expect_rc 1 replay "$S" --backend cuda
  err_has "device 0 does not exist (0 CUDA devices)"
fi

finish

# --defrag: the handle heap beside the pool. Eight 1 KiB buffers, every
# other one freed at step 2, then a 4 KiB buffer at step 5 in an 8 KiB heap:
# without compaction no gap holds it; auto compacts once, moving the four
# survivors (4 KiB) down.
{
  echo "id,lower,upper,size"
  for i in 0 1 2 3 4 5 6 7; do
    if [ $((i % 2)) -eq 1 ]; then echo "$i,0,10,1024"; else echo "$i,0,2,1024"; fi
  done
  echo "8,5,10,4096"
} >"$T/frag.csv"
expect_rc 0 replay "$T/frag.csv" --pool tlsf --defrag auto --heap-capacity 8KiB --json
json_valid "$T/stdout"
py 'import json,sys; l=json.load(open(sys.argv[1]))
assert [(x["pool"], x.get("defrag")) for x in l]==[("tlsf",None),("heap","off"),("heap","auto")], l
off, on = l[1], l[2]
assert off["fits"] is False and off["failed_buffer"]==8 and off["compactions"]==0, off
assert on["fits"] is True and on["compactions"]==1 and on["bytes_moved"]==4096, on
assert on["capacity"]==8192 and on["peak_live_bytes"]==8192, on
assert all(0 <= s["fragmentation"] <= 1 for s in on["timeline"]) and on["timeline"], on' \
  "$T/stdout"
expect_rc 0 replay "$T/frag.csv" --pool tlsf --defrag auto --heap-capacity 8KiB
out_has "pool: heap (defrag off, capacity 8.0 KiB (8,192 B))"
out_has "fits:                no (buffer 8 did not fit)"
out_has "compactions:         1 (4.0 KiB (4,096 B) moved)"
expect_error replay "$T/frag.csv" --defrag auot
err_has "did you mean 'auto'"
expect_error replay "$T/frag.csv" --heap-capacity 1MiB
err_has "--heap-capacity needs --defrag"
expect_error replay "$T/frag.csv" --defrag auto --prometheus
err_has "no Prometheus form"
# --lat-high: the latency signal of the auto heap. Which compactions it
# triggers depends on the clock, but one allocation in --lat-every is timed
# whatever the clock says: 9 allocations, every 2nd timed = 4 samples (8
# in a 1000-buffer trace at every 16th: 62). The off run has no signal.
expect_rc 0 replay "$T/frag.csv" --pool tlsf --defrag auto --heap-capacity 8KiB \
  --lat-high 2 --lat-every 2 --json
py 'import json,sys; l=json.load(open(sys.argv[1]))
off, on = l[1], l[2]
assert "lat_high" not in off and "lat_samples" not in off, off
assert on["lat_high"]==2 and on["lat_samples"]==4, on
assert 0 <= on["compactions_latency"] <= on["compactions"], on
assert on["fits"] is True, on' "$T/stdout"
{
  echo "id,lower,upper,size"
  for i in $(seq 0 999); do echo "$i,$i,$((i + 3)),$((256 + (i * 37) % 4096))"; done
} >"$T/lat.csv"
expect_rc 0 replay "$T/lat.csv" --defrag auto --lat-high 1.1
out_has "latency signal:"
out_has "(62 allocations timed)"
expect_error replay "$T/frag.csv" --defrag off --lat-high 2
err_has "--lat-high and --lat-every need --defrag auto"
expect_error replay "$T/frag.csv" --defrag auto --lat-high 1
err_has "bad --lat-high '1': expected a ratio above 1"
expect_error replay "$T/frag.csv" --defrag auto --lat-high 2x
err_has "bad --lat-high '2x'"
expect_error replay "$T/frag.csv" --defrag auto --lat-every 4
err_has "--lat-every needs --lat-high"
expect_error replay "$T/frag.csv" --defrag auto --lat-high 2 --lat-every 0
err_has "bad --lat-every '0'"
