#!/usr/bin/env bash
# CLI: `nnmem plan --mem-limit / --mem_limit / --device / --weight-slices`
# and `nnmem run`:
# a fit that streams and offloads, its plan JSON read back by `nnmem verify`
# (main tier) and executed by `nnmem run` (checked against the model), the
# impossible limit (exit 2 with the smallest footprint), bad device files
# (file and field named, exit 1), bad limits, fault injection, refused plans
# (corrupted, of another model, without a schedule), all-or-nothing outputs.
. "$(dirname "$0")/lib/common.sh"

# a fit of resnet50 under 40 MB on the edge NPU preset
expect_rc 0 plan --model resnet50 --mem-limit 40MB --out "$T/fit.json" \
  --profile "$T/prof.json"
out_has "fit resnet50 on edge-npu: limit 40,000,000 B"
out_matches "lpddr +40,000,000 +[0-9,]+ +[0-9]+"
out_matches "moved: [1-9][0-9]* weights streamed"
out_matches "time \(estimated\): [0-9.]+ ms without transfers"
out_has "every tier's plan passed the verifier"
# ops whose weight is sliced run in parts (docs/fit.md, Operator splitting)
out_matches "split: [1-9][0-9]* ops run in parts, one per weight slice \([0-9]+ steps for 175 ops\): [^ ]+ x[0-9]+ \((rows|accumulate)\)"
json_valid "$T/fit.json"
py '
import json, sys
p = json.load(open(sys.argv[1])); f = p["fit"]
# the schedule: a split op as consecutive parts 0..k-1 of one op; every op
# of the model once; "order" lists ops; the profile names the split ops
sch = f["schedule"]
assert f["steps"] == len(sch) > 175
ops, splits, s = [], [], 0
while s < len(sch):
    e = sch[s]; k = e.get("parts", 1)
    if k > 1:
        splits.append((e["op"], k, s, e["split"]))
        for q in range(k):
            assert sch[s + q]["op"] == e["op"] and sch[s + q]["part"] == q
            assert sch[s + q]["parts"] == k and sch[s + q]["split"] == e["split"]
    ops.append(e["op"]); s += k
assert ops == p["order"] and len(ops) == 175, len(ops)
assert splits, "no split op"
prof0 = json.load(open(sys.argv[2]))
assert [(x["op"], x["parts"], x["first_step"], x["split"])
        for x in prof0["splits"]] == splits
assert prof0["ops"] == 175 and prof0["steps"] == len(sch)
assert f["limit"] == 40000000
main = f["tiers"][f["main_tier"]]
assert main["height"] <= 40000000, main["height"]
assert p["arena_height"] == main["height"]
# copies: in/out, sizes those of the buffers they move
host = f["tiers"][-1]["buffers"]
for c in f["copies"]:
    b = f["tiers"][c["tier"]]["buffers"][c["buffer"]]
    assert b["size"] == c["bytes"] == host[c["host_buffer"]]["size"]
    assert c["start"] <= c["done"] < f["steps"]
assert sum(c["bytes"] for c in f["copies"]) == f["costs"]["transfer_bytes"]
prof = json.load(open(sys.argv[2]))
assert prof["transfer_bytes"] == f["costs"]["transfer_bytes"]
assert prof["limit"] == 40000000
' "$T/fit.json" "$T/prof.json"

# run it, against the model and alone
expect_rc 0 run "$T/fit.json" --model resnet50
out_has "PASS"
out_matches "[0-9]+ steps, [0-9]+ writes, [0-9]+ checks"
expect_rc 0 run "$T/fit.json" --json=compact
py '
import json, sys
r = json.load(open(sys.argv[1])); p = json.load(open(sys.argv[2]))
assert r["passed"] is True and r["steps"] == p["fit"]["steps"] > 175
assert r["copies"] > 0
' "$T/stdout" "$T/fit.json"


# --weight-slices: off gives whole weights only (no "NAME[r0:r1]" buffer in
# the plan), a size gives slices of about that size; both run; misuse
expect_rc 0 plan --model resnet50 --mem-limit 40MB --weight-slices off \
  --out "$T/whole.json"
out_matches "moved: [1-9][0-9]* weights streamed, "
grep -q '\[[0-9]*:[0-9]*\]"' "$T/whole.json" && fail "--weight-slices off: a slice in the plan"
expect_rc 0 run "$T/whole.json" --model resnet50
out_has "PASS"
out_matches "175 steps, "
grep -q '"part"' "$T/whole.json" && fail "--weight-slices off: a split op in the plan"
expect_rc 0 plan --model resnet50 --mem-limit 40MB --weight-slices 1MiB \
  --out "$T/sliced.json"
out_matches "weights streamed \([0-9]+ moves: [1-9][0-9]* of them slices\)"
expect_rc 0 run "$T/sliced.json" --model resnet50
out_has "PASS"
expect_rc 1 plan --model resnet50 --weight-slices 1MiB
err_has "--weight-slices applies with --mem-limit"
expect_rc 1 plan --model resnet50 --mem-limit 40MB --weight-slices 0
err_has "bad --weight-slices '0'"
expect_rc 1 plan --model resnet50 --mem-limit 40MB --weight-slices lots
err_has "bad --weight-slices 'lots'"

# the --mem_limit synonym (MB) gives the same plan
expect_rc 0 plan --model resnet50 --mem_limit 40 --out "$T/fit2.json" -q
cmp -s "$T/fit.json" "$T/fit2.json" || fail "--mem_limit 40 differs from --mem-limit 40MB"

# other presets and a device file
expect_rc 0 plan --model mobilenetv2 --mem-limit 9MB --device datacenter
out_has "on datacenter"
cat >"$T/dev.json" <<'JSON'
{"name": "tiny-npu", "compute_rate": 1e12, "alignment": 64,
 "tiers": [{"name": "ddr", "capacity": 268435456, "bandwidth": 1e10,
            "link_bandwidth": 2e9},
           {"name": "host"}]}
JSON
expect_rc 0 plan --model mobilenetv2 --device "$T/dev.json" --mem-limit 8MB \
  --out "$T/dev_fit.json" -q
expect_rc 0 run "$T/dev_fit.json" --model mobilenetv2 -q
out_empty

# the schema and the reader agree (when python has jsonschema): the device
# file, the device written into the plan, and the bad files below
schema_check() { # FILE EXPECT(valid|invalid) [JSON-POINTER]
  have_python && python3 -c 'import jsonschema' 2>/dev/null || return 0
  py '
import json, sys, jsonschema
schema = json.load(open(sys.argv[1]))
doc = json.load(open(sys.argv[2]))
if len(sys.argv) > 4: doc = doc["fit"]["device"]
errs = list(jsonschema.Draft202012Validator(schema).iter_errors(doc))
assert (not errs) == (sys.argv[3] == "valid"), [e.message for e in errs]
' "$NNMEM_SOURCE_DIR/docs/device.schema.json" "$@"
}
schema_check "$T/dev.json" valid
schema_check "$T/dev_fit.json" valid device
schema_check "$T/fit.json" valid device

# impossible: exit 2 with the smallest footprint and the op
expect_rc 2 plan --model resnet50 --mem-limit 4MB --out "$T/should-not-exist.json"
err_matches "the smallest device footprint for this model is [0-9]+ bytes \(op conv1 needs its inputs, outputs and workspace at once\); the smallest limit nnmem fits is [0-9]+ B"
no_file "$T/should-not-exist.json"

# bad limits and devices: exit 1, file and field named
expect_error plan --model resnet50 --mem-limit -5MB
err_has "bad --mem-limit '-5MB'"
expect_error plan --model resnet50 --mem-limit 0
expect_error plan --model resnet50 --mem_limit abc
expect_error plan --model resnet50 --device edge-nup
err_has "did you mean 'edge-npu'"
write_dev() { printf '%s' "$1" >"$T/bad.json"; }
write_dev '{"compute_rate": 1e12, "tiers": [{"name": "ddr", "capacity": -1, "link_bandwidth": 1e9}, {"name": "host"}]}'
schema_check "$T/bad.json" invalid
expect_error plan --model resnet50 --device "$T/bad.json" --mem-limit 40MB
err_has "bad.json: tiers[0].capacity: must be >= 0 bytes (got -1)"
write_dev '{"compute_rate": 1e12, "tiers": [{"name": "ddr", "link_bandwidth": 1e9}, {"name": "host"}]}'
expect_error plan --model resnet50 --device "$T/bad.json"
err_has "bad.json: tiers[0].capacity: missing"
write_dev '{"compute_rate": 1e12, "tiers": [{"name": "ddr", "capacity": 100, "link_bandwidth": 0}, {"name": "host"}]}'
expect_error plan --model resnet50 --device "$T/bad.json"
err_has "bad.json: tiers[0].link_bandwidth: must be > 0 (got 0)"
write_dev '{"compute_rate": 1e12, "tiers": [{"name": "dram2", "capacity": 100, "link_bandwidth": 1}, {"name": "host"}]}'
schema_check "$T/bad.json" invalid
expect_error plan --model resnet50 --device "$T/bad.json"
err_has "bad.json: tiers[0].name: unknown tier 'dram2'"
expect_error plan "$NNMEM_SOURCE_DIR/tests/fuzz/corpus/csv/$(ls "$NNMEM_SOURCE_DIR/tests/fuzz/corpus/csv" | head -1)" --mem-limit 1MB

# fault injection: a failed allocation or copy stops the run (exit 3)
expect_rc 3 run "$T/fit.json" --fail-alloc 1
err_has "fault injected"
expect_rc 3 run "$T/fit.json" --fail-copy 2
err_has "failed (fault injected at copy 2)"

# refused plans: nothing executed (exit 1)
expect_rc 1 run "$T/fit.json" --model mobilenetv2
err_has "refused, nothing executed"
err_has "does not match the model"
sed 's/"size": 1/"size": 2/' "$T/fit.json" >"$T/corrupt.json"
expect_rc 1 run "$T/corrupt.json"
err_has "corrupted"
head -c 5000 "$T/fit.json" >"$T/cut.json"
expect_rc 1 run "$T/cut.json"
err_has "not valid JSON"
expect_rc 0 plan --model resnet50 --out "$T/classic.json" -q
expect_rc 1 run "$T/classic.json"
err_has "no execution schedule"
expect_error run
expect_error plan --model resnet50 --mem-limit 40MB --svg "$T/should-not-exist.svg"
err_has "does not combine with --mem-limit"
expect_error plan --model resnet50 --mem-limit 40MB --out "$T/should-not-exist.csv"
err_has "a fitted plan is written as JSON"
expect_error plan --model resnet50 --mem-limit 40MB --capacity 1GB
err_has "--capacity does not combine with --mem-limit/--device"
expect_error run "$T/fit.json" --fail-copy 0

finish
