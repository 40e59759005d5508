#!/usr/bin/env bash
# CLI: several models in one arena (--shared-arena, --concurrent) and shape
# buckets (--dim NAME=LO..HI / V1,V2). The arena is checked against values
# computed independently: by hand for small problems, and from separate
# `nnmem plan` runs of each model / each bucket value for the shared models.
# The --out document is read back with Python: every plan is overlap-free,
# concurrent models are disjoint, arena_bytes is the max over the slots.
# Bad input: exit 1, a message naming the file or the option, nothing
# written.
. "$(dirname "$0")/lib/common.sh"

write_small_problem "$T/a.csv" # height 12 (hand-computed in common.sh)
cat >"$T/b.csv" <<'CSV'
id,lower,upper,size
x,0,2,16
y,1,3,4
CSV
# b: x and y live together at step 1 -> height 20

# checks_out FILE: the multi-plan document is consistent (see the header).
checks_out() {
  py '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["format"] == "nnmem-shared-arena", d
slots = {}
spans = []
for p in d["plans"]:
    b = p["buffers"] if "buffers" in p else p["plan"]["buffers"]
    h = p["plan"]["arena_height"]
    for i, u in enumerate(b):
        assert u["offset"] + u["size"] <= h, u
        for v in b[:i]:
            live = u["first"] < v["last"] and v["first"] < u["last"]
            apart = u["offset"] + u["size"] <= v["offset"] or v["offset"] + v["size"] <= u["offset"]
            assert not live or apart, (u, v)
    g = p["group"]
    key = ("g", g) if g else ("alone", p["label"])
    slots[key] = max(slots.get(key, 0), p["base"] + h)
    if g:
        spans.append((g, p["base"], p["base"] + h))
for g, lo, hi in spans:
    for g2, lo2, hi2 in spans:
        if g == g2 and (lo, hi) != (lo2, hi2):
            assert hi <= lo2 or hi2 <= lo, (lo, hi, lo2, hi2)
assert d["arena_bytes"] == max(slots.values()), (d["arena_bytes"], slots)
' "$1"
}

# 1. two problems taking turns: arena 20 = max(12, 20), saving 12 of 32
expect_rc 0 plan "$T/a.csv" "$T/b.csv" --shared-arena --out "$T/o.json" \
  --profile "$T/p.json"
out_has "2 models in one shared arena"
out_matches "arena +20 B"
out_matches "separate arenas +32 B"
out_matches "saving +12 B +37.5%"
checks_out "$T/o.json"
py 'import json,sys; d=json.load(open(sys.argv[1]))
assert (d["arena_bytes"], d["separate_arenas_bytes"], d["saving_bytes"]) == (20, 32, 12), d
assert [m["height"] for m in d["models"]] == [12, 20], d
assert d["models"][0]["profile"]["arena_height"] == 12, d' "$T/p.json"

# 2. run together: 12 + 20 = 32, no saving; --json report
expect_rc 0 plan "$T/a.csv" "$T/b.csv" --shared-arena \
  --concurrent "$T/a.csv,$T/b.csv" --json --out "$T/o2.json"
py 'import json,sys; d=json.load(open(sys.argv[1]))
assert (d["arena_bytes"], d["saving_bytes"]) == (32, 0), d
assert sorted(m["base"] for m in d["models"]) == [0, 12], d
assert all(m["group"] == 1 for m in d["models"]), d' "$T/stdout"
checks_out "$T/o2.json"

# 3. three models, two concurrent: max(12 + 20, 20) = 32 of 52
expect_rc 0 plan "$T/a.csv" "$T/b.csv" "$T/b.csv" --shared-arena \
  --concurrent "$T/a.csv,$T/b.csv" --json=compact
py 'import json,sys; d=json.load(open(sys.argv[1]))
assert (d["arena_bytes"], d["separate_arenas_bytes"]) == (32, 52), d' "$T/stdout"

# 3b. the same file twice, concurrent: two models stacked (12 + 12); over
# --capacity 20 together (each fits alone): exit 2, nothing written
expect_rc 0 plan "$T/a.csv" "$T/a.csv" --shared-arena \
  --concurrent "$T/a.csv,$T/a.csv" --json
py 'import json,sys; d=json.load(open(sys.argv[1]))
assert d["arena_bytes"] == 24 and [m["base"] for m in d["models"]] == [0, 12], d' "$T/stdout"
expect_rc 2 plan "$T/a.csv" "$T/a.csv" --shared-arena \
  --concurrent "$T/a.csv,$T/a.csv" --capacity 20 --out "$T/should-not-exist.json"
err_has "the shared arena needs 24 B, over --capacity 20 B"
no_file "$T/should-not-exist.json"
expect_rc 0 plan "$T/a.csv" "$T/a.csv" --shared-arena --capacity 20 --quiet

# 4. bad input: nothing written, exit 1, the file or option named
echo "old bytes" >"$T/keep.json"
expect_error plan "$T/a.csv" --shared-arena --out "$T/should-not-exist.json"
err_has "--shared-arena needs at least two models"
expect_error plan "$T/a.csv" "$T/missing.csv" --shared-arena --out "$T/keep.json"
err_has "missing.csv"
[ "$(cat "$T/keep.json")" = "old bytes" ] || fail "keep.json was changed"
expect_error plan "$T/a.csv" "$T/b.csv"
err_has "unexpected argument"
err_has "only with --shared-arena"
expect_error plan "$T/a.csv" "$T/b.csv" --shared-arena --concurrent "$T/a.csv"
err_has "a group names at least two models"
expect_error plan "$T/a.csv" "$T/b.csv" --shared-arena --concurrent "$T/a.csv,nope.csv"
err_has "'nope.csv' is not one of the inputs"
expect_error plan "$T/a.csv" "$T/b.csv" --shared-arena --concurrent "$T/a.csv,$T/b.csv" \
  --concurrent "$T/b.csv,$T/a.csv"
err_has "is in two groups"
expect_error plan "$T/a.csv" "$T/b.csv" --shared-arena --out "$T/should-not-exist.csv"
err_has "written as JSON"
expect_error plan "$T/a.csv" "$T/b.csv" --shared-arena --svg "$T/should-not-exist.svg"
expect_error plan "$T/a.csv" --concurrent "$T/a.csv,$T/b.csv"
err_has "--concurrent needs --shared-arena"
if [ -w /dev/full ]; then # one output fails: the other keeps its bytes
  expect_rc 1 plan "$T/a.csv" "$T/b.csv" --shared-arena --out "$T/keep.json" \
    --profile /dev/full
  [ "$(cat "$T/keep.json")" = "old bytes" ] || fail "keep.json was changed"
fi

# 5. --dim ranges: bad values are usage errors before any file is read
EX="$NNMEM_SOURCE_DIR/examples/models/mnist_cnn.onnx"
expect_error plan "$EX" --dim batch=8..2
err_has "the range is empty (8 > 2)"
expect_error plan "$EX" --dim batch=x..4
err_has "'x' is not a whole number"
expect_error plan "$EX" --dim batch=0..4
err_has "must be >= 1, not 0"
expect_error plan "$EX" --dim batch=1,0
err_has "must be >= 1, not 0"
expect_error plan "$EX" --dim bacth=1..4 --out "$T/should-not-exist.json"
err_has "unknown dim 'bacth'"
expect_error plan "$EX" --dim batch=1..2 --dim batch=3,4
err_has "only one --dim may be a range or a list"
expect_error plan "$EX" "$EX" --shared-arena --dim batch=1..4
err_has "shape buckets apply to one model"
expect_error inspect "$EX" --dim batch=1..4
err_has "ranges and lists are for \`nnmem plan\`"

# 6. buckets of the example model: 1..8 -> 1 2 4 8; each bucket's height is
# what a plain `nnmem plan --dim batch=V` gives; the arena is the largest
expect_rc 0 plan "$EX" --dim batch=1..8 --json --out "$T/bk.json" \
  --profile "$T/bkp.json"
cp "$T/stdout" "$T/buckets.json"
checks_out "$T/bk.json"
for v in 1 2 4 8; do
  expect_rc 0 plan "$EX" --dim batch=$v --json
  cp "$T/stdout" "$T/single$v.json"
done
py 'import json,sys
d = json.load(open(sys.argv[1]))
assert [b["value"] for b in d["buckets"]] == [1, 2, 4, 8], d
assert [b["serves_from"] for b in d["buckets"]] == [1, 2, 3, 5], d
single = [json.load(open(f))["arena_height"] for f in sys.argv[2:]]
assert [b["height"] for b in d["buckets"]] == single, (d, single)
assert d["arena_bytes"] == max(single), d
assert d["saving_bytes"] == sum(single) - max(single), d
' "$T/buckets.json" "$T/single1.json" "$T/single2.json" "$T/single4.json" \
  "$T/single8.json"
py 'import json,sys
p = json.load(open(sys.argv[1]))
b = json.load(open(sys.argv[2]))
assert p["arena_bytes"] == b["arena_bytes"] and len(p["buckets"]) == 4, p
for k in p["buckets"]:
    q = k["profile"]
    assert q["arena_height"] == k["height"], k
    assert q["peak_memory"] == q["weight_memory"] + q["activation_memory"] + q["workspace_memory"], q
    assert q["onnx"]["opset"] == 13, q
' "$T/bkp.json" "$T/buckets.json"
expect_rc 0 plan "$EX" --dim batch=3,1
out_has "2 shape buckets of 'batch' (list 1..3)"
out_has "sized for the largest bucket"

# 7. the shared models run sequentially: arena = max of the heights, each
# height from a separate plain run
[ -n "${NNMEM_DATA_DIR:-}" ] || skip "NNMEM_DATA_DIR not set"
M="$NNMEM_DATA_DIR/models"
set -- "$M/mnist-8.onnx" "$M/light_squeezenet.onnx" "$M/mobilenet_v2_128_0.5.onnx"
for f in "$@"; do [ -f "$f" ] || skip "models absent"; done
expect_rc 0 plan "$@" --shared-arena --json
cp "$T/stdout" "$T/shared.json"
i=0
for f in "$@"; do
  expect_rc 0 plan "$f" --json
  cp "$T/stdout" "$T/m$i.json"
  i=$((i + 1))
done
py 'import json,sys
d = json.load(open(sys.argv[1]))
h = [json.load(open(f))["arena_height"] for f in sys.argv[2:]]
w = [json.load(open(f))["weight_memory"] for f in sys.argv[2:]]
assert [m["height"] for m in d["models"]] == h, (d, h)
assert d["arena_bytes"] == max(h) and d["saving_bytes"] == sum(h) - max(h), d
assert d["weights_bytes"] == sum(w), d
' "$T/shared.json" "$T/m0.json" "$T/m1.json" "$T/m2.json"
BERT="$M/tiny_BertForQuestionAnswering_pt14_opset10.onnx"
if [ -f "$BERT" ]; then
  expect_rc 0 plan "$BERT" --dim max_seq_len=16..128 --quiet
  out_empty
fi

finish
