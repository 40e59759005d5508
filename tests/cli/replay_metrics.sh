#!/usr/bin/env bash
# CLI: `nnmem replay --metrics-port`: the live /metrics endpoint scraped
# over HTTP while the command runs (--metrics-linger keeps it up) and parsed
# with a real Prometheus parser (prometheus_client.parser): every pool's
# label, values equal to the replay's --json figures, the health ratios,
# every series docs/grafana-*.json query;
# 404 for other paths; a port in use is reported on stderr and the replay
# still prints its full report with exit 0; option errors.
# Skips (77) when no Python has prometheus_client or nnmem was built
# without libmicrohttpd.
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
expect_rc 0 replay "$T/p.csv" --pool all --json
cp "$T/stdout" "$T/all.json"

# the replay in the background, the scrape from Python
"$NNMEM_BIN" replay "$T/p.csv" --pool all --metrics-port 0 \
  --metrics-linger 20 >"$T/bg.out" 2>"$T/bg.err" &
BG=$!
for _ in $(seq 100); do
  grep -q '/metrics' "$T/bg.err" 2>/dev/null && grep -q 'pool: slab' "$T/bg.out" && break
  sleep 0.1
done
if grep -q 'built without libmicrohttpd\|libmicrohttpd.so.12 not found' "$T/bg.err"; then
  kill "$BG" 2>/dev/null
  skip "no libmicrohttpd: $(cat "$T/bg.err")"
fi
URL=$(grep -o 'http://[^ ]*/metrics' "$T/bg.err")
[ -n "$URL" ] || fail "no endpoint address on stderr: $(cat "$T/bg.err")"
"$PYPROM" - "$URL" "$T/all.json" <<'PY' 2>"$T/py.err" || fail "scrape: $(cat "$T/py.err")"
import json, math, sys, urllib.request, urllib.error
from prometheus_client.parser import text_string_to_metric_families
url, runs = sys.argv[1], {r["pool"]: r for r in json.load(open(sys.argv[2]))}
with urllib.request.urlopen(url, timeout=10) as r:
    assert r.status == 200, r.status
    assert r.headers["Content-Type"].startswith("text/plain; version=0.0.4")
    text = r.read().decode()
fams = {f.name: f for f in text_string_to_metric_families(text)}
def value(fam, name, pool):
    v = [s.value for s in fams[fam].samples
         if s.name == name and s.labels == {"pool": pool}]
    assert len(v) == 1, (name, pool, v)
    return v[0]
assert set(runs) == {"tiered", "tlsf", "best-fit", "first-fit", "buddy", "slab"}
for pool, r in runs.items():
    assert value("nnmem_pool_reserved_bytes_peak", "nnmem_pool_reserved_bytes_peak",
                 pool) == r["peak_reserved_bytes"], pool
    assert value("nnmem_pool_allocations", "nnmem_pool_allocations_total", pool) + \
        value("nnmem_pool_frees", "nnmem_pool_frees_total", pool) == r["operations"]
    # no thread cache in a pool: NaN (never an alert), no lock: 0
    assert math.isnan(value("nnmem_pool_cache_hit_ratio", "nnmem_pool_cache_hit_ratio", pool))
    assert value("nnmem_pool_lock_contention_ratio",
                 "nnmem_pool_lock_contention_ratio", pool) == 0
assert fams["nnmem_pool_op_latency_ns"].type == "histogram"
# every series the Grafana dashboard and its alert rules query is served
import os, re
names = {s.name for f in fams.values() for s in f.samples}
docs = os.path.join(os.environ["NNMEM_SOURCE_DIR"], "docs")
for doc in ("grafana-nnmem.json", "grafana-alerts.json"):
    text_doc = json.dumps(json.load(open(os.path.join(docs, doc))))
    used = set(re.findall(r"nnmem_pool_[a-z0-9_]+", text_doc))
    assert used, doc
    for n in used:
        assert n in names, (doc, n)
try:
    urllib.request.urlopen(url.replace("/metrics", "/other"), timeout=10)
    raise AssertionError("no 404")
except urllib.error.HTTPError as e:
    assert e.code == 404, e.code
PY
kill "$BG" 2>/dev/null
wait "$BG" 2>/dev/null

# a port in use: reported, and the replay goes on (same report), then
# exit 1: the endpoint asked for was not served
"$PYPROM" - "$NNMEM_BIN" "$T/p.csv" "$T/all.json" <<'PY' 2>"$T/py.err" || fail "port in use: $(cat "$T/py.err")"
import json, socket, subprocess, sys
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(1)
port = s.getsockname()[1]
r = subprocess.run([sys.argv[1], "replay", sys.argv[2], "--pool", "all", "--json",
                    "--metrics-port", str(port)], capture_output=True, text=True)
assert r.returncode == 1, r
assert "127.0.0.1:%d: Address already in use; replaying without the endpoint (exit status 1)" % port \
    in r.stderr, r.stderr
got = [{k: v for k, v in x.items() if k != "ns_per_op"} for x in json.loads(r.stdout)]
want = [{k: v for k, v in x.items() if k != "ns_per_op"} for x in json.load(open(sys.argv[3]))]
assert got == want
PY

expect_error replay "$T/p.csv" --metrics-port 70000
err_has "--metrics-port wants 0..65535, not '70000'"
expect_error replay "$T/p.csv" --metrics-linger 1
err_has "--metrics-addr and --metrics-linger need --metrics-port"
expect_rc 1 replay "$T/p.csv" --metrics-port 0 --metrics-addr nohost
err_has "metrics: 'nohost' is not an IPv4 or IPv6 address; replaying without the endpoint"
out_has "pool: tiered"
finish
