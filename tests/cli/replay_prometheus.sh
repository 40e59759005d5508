#!/usr/bin/env bash
# CLI: `nnmem replay --prometheus` parsed by a real Prometheus parser
# (prometheus_client.parser, Debian python3-prometheus-client): family
# names and types, one # HELP / # TYPE per family, one label set per pool,
# sample values equal to the replay's own --json figures, and a latency
# histogram with cumulative buckets ending in +Inf == _count, plus _sum.
# Skips (77) when no Python interpreter has prometheus_client.
. "$(dirname "$0")/lib/common.sh"

PYPROM=
for cand in /usr/bin/python3 python3; do
  if command -v "$cand" >/dev/null 2>&1 &&
    "$cand" -c 'import prometheus_client.parser' 2>/dev/null; then
    PYPROM=$cand
    break
  fi
done
[ -n "$PYPROM" ] || skip "no python3 with prometheus_client (apt install python3-prometheus-client)"

write_small_problem "$T/p.csv"

check() { # check PROM_TEXT JSON_LIST: the parser's view against the JSON
  "$PYPROM" - "$1" "$2" <<'PY' 2>"$T/py.err" || fail "prometheus check: $(cat "$T/py.err")"
import json, re, sys
from prometheus_client.parser import text_string_to_metric_families
text = open(sys.argv[1]).read()
runs = {r["pool"]: r for r in json.load(open(sys.argv[2]))}
fams = {f.name: f for f in text_string_to_metric_families(text)}
# one HELP and one TYPE line per family
types = re.findall(r"^# TYPE (\S+) (\S+)$", text, re.M)
helps = re.findall(r"^# HELP (\S+) ", text, re.M)
assert len(types) == len(set(n for n, _ in types)), types
assert [n for n, _ in types] == helps, (types, helps)
# every sample line belongs to the family announced before it
fam = None
for line in text.splitlines():
    if line.startswith("# TYPE "):
        fam = line.split()[2]
    elif not line.startswith("#"):
        assert fam and line.startswith(fam), (fam, line)
want = {
    "nnmem_pool_reserved_bytes_peak": "gauge",
    "nnmem_pool_allocations": "counter",  # parser drops _total
    "nnmem_pool_frees": "counter",
    "nnmem_pool_backend_allocations": "counter",
    "nnmem_pool_live_blocks": "gauge",
    "nnmem_pool_fragmentation_ratio": "gauge",
    "nnmem_pool_op_latency_ns": "histogram",
}
for name, typ in want.items():
    assert name in fams, (name, sorted(fams))
    assert fams[name].type == typ, (name, fams[name].type)
def value(sample_name, pool):
    fam = sample_name[:-6] if sample_name.endswith("_total") else sample_name
    v = [s.value for s in fams[fam].samples
         if s.name == sample_name and s.labels == {"pool": pool}]
    assert len(v) == 1, (sample_name, pool, v)
    return v[0]
for f in fams.values():  # one label set per pool, nothing else
    pools = {s.labels["pool"] for s in f.samples}
    assert pools == set(runs), (f.name, pools, set(runs))
for pool, r in runs.items():
    assert value("nnmem_pool_reserved_bytes_peak", pool) == r["peak_reserved_bytes"], pool
    assert value("nnmem_pool_allocations_total", pool) + \
        value("nnmem_pool_frees_total", pool) == r["operations"], pool
    assert value("nnmem_pool_backend_allocations_total", pool) == r["device_requests"], pool
    assert value("nnmem_pool_live_blocks", pool) == 0, pool
    h = [s for s in fams["nnmem_pool_op_latency_ns"].samples if s.labels.get("pool") == pool]
    buckets = [s for s in h if s.name.endswith("_bucket")]
    les = [float(s.labels["le"]) for s in buckets]
    assert les == sorted(les) and les[-1] == float("inf"), les
    counts = [s.value for s in buckets]
    assert counts == sorted(counts), ("not cumulative", counts)
    total = [s.value for s in h if s.name.endswith("_count")]
    sums = [s.value for s in h if s.name.endswith("_sum")]
    assert total == [counts[-1]], (total, counts[-1])
    assert len(sums) == 1 and sums[0] >= 0, sums
    assert (sums[0] > 0) == (counts[-1] > 0), (sums, counts)
PY
}

expect_rc 0 replay "$T/p.csv" --pool all --prometheus
err_empty
cp "$T/stdout" "$T/all.prom"
expect_rc 0 replay "$T/p.csv" --pool all --json
cp "$T/stdout" "$T/all.json"
check "$T/all.prom" "$T/all.json"

expect_rc 0 replay "$T/p.csv" --pool tlsf --prometheus
cp "$T/stdout" "$T/one.prom"
out_has 'nnmem_pool_reserved_bytes_peak{pool="tlsf"} 4194304'
expect_rc 0 replay "$T/p.csv" --pool tlsf --json
cp "$T/stdout" "$T/one.json"
check "$T/one.prom" "$T/one.json"

# A real trace: many samples in the latency histogram.
D="${NNMEM_DATA_DIR:-}/dsa/traces"
if [ -f "$D/resnet50.csv" ]; then
  expect_rc 0 replay "$D/resnet50.csv" --pool tlsf --prometheus
  cp "$T/stdout" "$T/r.prom"
  expect_rc 0 replay "$D/resnet50.csv" --pool tlsf --json
  cp "$T/stdout" "$T/r.json"
  check "$T/r.prom" "$T/r.json"
fi

finish
