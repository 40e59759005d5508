#!/usr/bin/env bash
# CLI: `nnmem replay --tenants N --quota SIZE`: per-tenant figures checked
# against values computed here from the CSV (which buffers each tenant owns,
# which its quota refuses, how many frees are probed and granted), the JSON
# parsed with Python, the Prometheus text with a real Prometheus parser
# (when python3-prometheus-client is installed), and the bad input.
. "$(dirname "$0")/lib/common.sh"

# 8 buffers of 100 bytes live together over [0, 2), then 4 over [2, 4).
{
  echo "id,lower,upper,size"
  for i in 0 1 2 3 4 5 6 7; do echo "b$i,0,2,100"; done
  for i in 8 9 10 11; do echo "c$i,2,4,100"; done
} >"$T/t.csv"

# Expected figures, by hand: tenant t owns buffers i with i % 3 == t
# (t0: 0 3 6 9, t1: 1 4 7 10, t2: 2 5 8 11); quota 250 lets each tenant
# hold 2 at once: t0 and t1 are refused their third buffer of [0, 2)
# (6 and 7); t2 holds 2 and 5, then 8 and 11 in [2, 4): 11 is t2's fourth
# block, so t0 frees it under a grant; 10 blocks freed, each probed once
# by the next tenant; checks: 10 probes + 10 frees + 1 grant.
expect_rc 0 replay "$T/t.csv" --tenants 3 --quota 250 --pool tlsf
err_empty
out_has "tenants: 3 (buffer i -> tenant i % 3), quota 250 B each, pool tlsf"
out_has "  operations:          24 (2 buffers refused and skipped)"
out_has "21 checks; 10 of 10 cross-tenant frees without a grant refused; 1 granted frees"
out_matches "^  tenant0 +200 +3 +4 +1 +[0-9]+  1/0/4/0$"
out_matches "^  tenant2 +200 +4 +3 +0 +[0-9]+  0/0/3/0$"

expect_rc 0 replay "$T/t.csv" --tenants 3 --quota 250 --pool tlsf --json
err_empty
cp "$T/stdout" "$T/t.json"
py '
import json, sys
r = json.load(open(sys.argv[1]))
assert len(r) == 1, r
r = r[0]
assert r["tenants"] == 3 and r["quota"] == 250 and r["pool"] == "tlsf", r
assert r["operations"] == 24 and r["skipped_buffers"] == 2, r
iso = r["isolation"]
assert iso["probes"] == iso["probes_refused"] == 10, iso
assert iso["granted_frees"] == 1, iso
t = r["per_tenant"]
assert [x["domain"] for x in t] == ["tenant0", "tenant1", "tenant2"], t
assert [x["colour"] for x in t] == [1, 2, 3], t
assert [x["allocations_total"] for x in t] == [3, 3, 4], t
assert [x["refused"]["quota"] for x in t] == [1, 1, 0], t
# each tenant probes the previous one: t1 probes t0 (3 blocks) ...
assert [x["refused"]["denied"] for x in t] == [4, 3, 3], t
assert sum(x["frees_total"] for x in t) == 10, t
assert all(x["live_bytes"] == 0 and x["peak_bytes"] == 200 for x in t), t
assert [x["frees_total"] for x in t] == [4, 3, 3], t
assert [x["granted_frees_total"] for x in t] == [1, 0, 0], t
assert iso["checks"] == sum(x["isolation_checks_total"] for x in t) == 21, iso
' "$T/t.json"

# Without a quota and with one tenant the live peak is the plain replay's.
expect_rc 0 replay "$T/t.csv" --tenants 1 --pool tlsf --json
cp "$T/stdout" "$T/one.json"
expect_rc 0 replay "$T/t.csv" --pool tlsf --json
cp "$T/stdout" "$T/plain.json"
py '
import json, sys
a, b = json.load(open(sys.argv[1]))[0], json.load(open(sys.argv[2]))[0]
assert a["quota"] is None and a["skipped_buffers"] == 0, a
assert a["isolation"]["probes"] == 0, a
assert a["peak_live_bytes"] == b["peak_live_bytes"] == 800, (a, b)
' "$T/one.json" "$T/plain.json"

# A real trace: every probe refused, every buffer accounted for.
D="${NNMEM_DATA_DIR:-}/dsa/traces"
if [ -f "$D/resnet50.csv" ]; then
  expect_rc 0 replay "$D/resnet50.csv" --tenants 4 --quota 256MB --json
  cp "$T/stdout" "$T/r.json"
  py '
import csv, json, sys
r = json.load(open(sys.argv[1]))[0]
rows = [row for row in csv.DictReader(open(sys.argv[2])) if int(row["size"]) > 0]
iso = r["isolation"]
assert iso["probes"] == iso["probes_refused"] > 0, iso
t = r["per_tenant"]
n = len(rows)
assert sum(x["allocations_total"] + x["refused"]["quota"] for x in t) == n, n
assert all(x["peak_bytes"] <= 256000000 for x in t), t
assert r["skipped_buffers"] == sum(x["refused"]["quota"] for x in t) > 0, r
assert sum(x["frees_total"] for x in t) == n - r["skipped_buffers"] == iso["probes"], iso
' "$T/r.json" "$D/resnet50.csv"
fi

# Prometheus: the pool families and the domain families, parsed.
PYPROM=
for cand in /usr/bin/python3 python3; do
  if command -v "$cand" >/dev/null 2>&1 &&
    "$cand" -c 'import prometheus_client.parser' 2>/dev/null; then
    PYPROM=$cand
    break
  fi
done
expect_rc 0 replay "$T/t.csv" --tenants 3 --quota 250 --pool tlsf --prometheus
err_empty
out_has 'nnmem_domain_refusals_total{domain="tenant0",reason="quota"} 1'
out_has 'nnmem_pool_allocations_total{pool="tlsf"} 10'
if [ -n "$PYPROM" ]; then
  cp "$T/stdout" "$T/t.prom"
  "$PYPROM" - "$T/t.prom" "$T/t.json" <<'PY' 2>"$T/py.err" || fail "prometheus: $(cat "$T/py.err")"
import json, re, sys
from prometheus_client.parser import text_string_to_metric_families
text = open(sys.argv[1]).read()
r = json.load(open(sys.argv[2]))[0]
fams = {f.name: f for f in text_string_to_metric_families(text)}
types = re.findall(r"^# TYPE (\S+) (\S+)$", text, re.M)
assert len(types) == len(set(n for n, _ in types)), types
for name, typ in {"nnmem_domain_live_bytes": "gauge",
                  "nnmem_domain_peak_bytes": "gauge",
                  "nnmem_domain_allocations": "counter",
                  "nnmem_domain_isolation_checks": "counter",
                  "nnmem_domain_refusals": "counter",
                  "nnmem_pool_allocations": "counter"}.items():
    assert fams[name].type == typ, (name, fams[name].type)
def value(fam, name, **labels):
    v = [s.value for s in fams[fam].samples if s.name == name and s.labels == labels]
    assert len(v) == 1, (name, labels, v)
    return v[0]
for t in r["per_tenant"]:
    d = t["domain"]
    assert value("nnmem_domain_peak_bytes", "nnmem_domain_peak_bytes", domain=d) == t["peak_bytes"]
    assert value("nnmem_domain_allocations", "nnmem_domain_allocations_total", domain=d) == t["allocations_total"]
    for reason, n in t["refused"].items():
        assert value("nnmem_domain_refusals", "nnmem_domain_refusals_total",
                     domain=d, reason=reason) == n, (d, reason)
PY
fi

# Bad input.
expect_error replay "$T/t.csv" --tenants 2 --quota 0
err_has "domain 'tenant0': quota 0"
expect_error replay "$T/t.csv" --tenants 0
err_has "bad --tenants '0': expected 1 to 64"
expect_error replay "$T/t.csv" --tenants 65
expect_error replay "$T/t.csv" --quota 1MiB
err_has "--quota needs --tenants"
expect_error replay "$T/t.csv" --tenants 2 --pool all
err_has "--tenants replays on the simulated device through one pool"
expect_error replay "$T/t.csv" --tenants 2 --quota lots
err_has "bad --quota 'lots'"
expect_rc 0 replay --help
out_has "--tenants N"

finish
