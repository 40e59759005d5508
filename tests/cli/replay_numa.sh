#!/usr/bin/env bash
# CLI: `nnmem replay --numa-nodes N`: the trace through a NUMA pool over N
# simulated nodes. Eight buffers b0..b7 (1,000 B, b_i live [i, i + 2)) on
# two nodes: node i mod 2 allocates b_i; every 4th buffer of a node
# ((i / 2) mod 4 == 3: b6, b7) is freed by the other node, so each node
# has exactly one remote free; tlsf holds one 4 MiB chunk per node. Checked
# in --json (exact integers) and --prometheus (parsed by prometheus_client
# when installed), plus usage errors.
. "$(dirname "$0")/lib/common.sh"

{
  echo "id,lower,upper,size"
  for i in 0 1 2 3 4 5 6 7; do echo "b$i,$i,$((i + 2)),1000"; done
} >"$T/t.csv"

expect_rc 0 replay "$T/t.csv" --pool tlsf --numa-nodes 2 --json
json_valid "$T/stdout"
py 'import json,sys; l=json.load(open(sys.argv[1]))
assert [x["pool"] for x in l]==["tlsf","numa","numa.node0","numa.node1"], l
tot, n0, n1 = l[1], l[2], l[3]
assert tot["nodes"]==2 and "node" not in tot and n0["node"]==0 and n1["node"]==1, l
assert [x["allocations"] for x in l[1:]]==[8,4,4], l
assert [x["frees"] for x in l[1:]]==[8,4,4], l
assert [x["remote_frees"] for x in l[1:]]==[2,1,1], l
assert [x["remote_allocs"] for x in l[1:]]==[0,0,0], l
assert [x["peak_reserved_bytes"] for x in l[1:]]==[8388608,4194304,4194304], l
# each block on a node is freed before the next one comes (b_i+2 starts when
# b_i ends, frees first): tlsf gives the empty chunk back each time
assert [x["device_requests"] for x in l[1:]]==[8,4,4], l' "$T/stdout"

# one node: nothing is remote
expect_rc 0 replay "$T/t.csv" --pool tlsf --numa-nodes 1 --json
py 'import json,sys; l=json.load(open(sys.argv[1]))
assert [x["pool"] for x in l]==["tlsf","numa","numa.node0"], l
assert l[1]["remote_frees"]==0 and l[2]["allocations"]==8, l' "$T/stdout"

expect_rc 0 replay "$T/t.csv" --pool tlsf --numa-nodes 2
out_has "pool: numa (tlsf on 2 simulated nodes"
out_matches "^  total +8 +2 +0  8.0 MiB"
err_empty

expect_rc 0 replay "$T/t.csv" --pool tlsf --numa-nodes 2 --prometheus
out_has 'nnmem_pool_remote_frees_total{pool="numa.node1"} 1'
PYPROM=
for cand in /usr/bin/python3 python3; do
  if command -v "$cand" >/dev/null 2>&1 &&
    "$cand" -c 'import prometheus_client.parser' 2>/dev/null; then
    PYPROM=$cand
    break
  fi
done
if [ -n "$PYPROM" ]; then
  "$PYPROM" - "$T/stdout" <<'PY' 2>"$T/py.err" || fail "prometheus: $(cat "$T/py.err")"
import sys
from prometheus_client.parser import text_string_to_metric_families
fams = {f.name: f for f in text_string_to_metric_families(open(sys.argv[1]).read())}
def val(fam, pool):
    v = [s.value for s in fams[fam].samples if s.labels == {"pool": pool}]
    assert len(v) == 1, (fam, pool, v)
    return v[0]
for fam in ("nnmem_pool_remote_frees", "nnmem_pool_remote_allocs",
            "nnmem_pool_bad_node_requests", "nnmem_pool_refills",
            "nnmem_pool_empty_hits", "nnmem_pool_compactions_latency"):
    assert fams[fam].type == "counter", (fam, fams[fam].type)
assert [val("nnmem_pool_remote_frees", p) for p in
        ("tlsf", "numa", "numa.node0", "numa.node1")] == [0, 2, 1, 1]
assert val("nnmem_pool_allocations", "numa.node0") == 4
assert val("nnmem_pool_reserved_bytes_peak", "numa") == 8388608
PY
fi

expect_error replay "$T/t.csv" --numa-nodes 0
err_has "bad --numa-nodes '0'"
expect_error replay "$T/t.csv" --numa-nodes 65
expect_error replay "$T/t.csv" --numa-nodes two
expect_error replay "$T/t.csv" --numa-nodes 2 --pool all
err_has "--numa-nodes needs one growing pool kind"
expect_error replay "$T/t.csv" --numa-nodes 2 --pool shape
expect_error replay "$T/t.csv" --numa-nodes 2 --backend host
err_has "--numa-nodes runs on simulated devices"
expect_error replay "$T/t.csv" --numa-node 2
err_has "did you mean '--numa-nodes'"
finish
