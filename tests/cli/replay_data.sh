#!/usr/bin/env bash
# CLI: `nnmem replay` of every real trace of ../shared/data/dsa/traces with
# the default pool: the peak live bytes are the published lower bounds and
# the reservation stays within 1.10x of them. Skips without the data.
. "$(dirname "$0")/lib/common.sh"

D="${NNMEM_DATA_DIR:-}/dsa/traces"
[ -d "$D" ] || skip "no trace folder ($D)"

for pair in resnet50:1515472556 tiny_bert:758936113 iopddl_S_1:1498635932; do
  name=${pair%%:*} lb=${pair##*:}
  expect_rc 0 replay "$D/$name.csv" --json
  json_valid "$T/stdout"
  py 'import json,sys; l=json.load(open(sys.argv[1])); assert len(l)==1, l; r=l[0]
assert r["pool"]=="tiered", r
assert r["peak_live_bytes"]==int(sys.argv[2]), r
assert r["peak_reserved_bytes"] <= 1.10*r["peak_live_bytes"], r' \
    "$T/stdout" "$lb"
done

finish
