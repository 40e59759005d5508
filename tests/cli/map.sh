#!/usr/bin/env bash
# CLI: `nnmem plan --svg / --html / --trace-json` (the memory map). The SVG
# is parsed with Python's XML parser (one rectangle per buffer, coordinates
# recomputed from the CSV's lifetimes and the planned offsets), the trace
# and the HTML's embedded data with Python's JSON parser; hostile ids stay
# well-formed; usage errors write nothing. The browser checks are in
# map_browser.sh.
. "$(dirname "$0")/lib/common.sh"

have_python || skip "python3 is needed to read the outputs back"

# Hostile ids: markup, a script end, quotes, a control byte, U+2028 (a line
# break for JavaScript). Invalid UTF-8 is refused by the CSV reader; the
# unit test (test_map) feeds it through the C API.
P="$T/hostile.csv"
printf 'id,lower,upper,size\n%s\n%s\n%s\n%s\n%s\n' \
  '"a</script><!--x",0,2,4' \
  "\"q\"\"u'o&amp;<b>\",1,3,4" \
  "$(printf 'ctl\001z'),2,4,8" \
  "$(printf 'sep\342\200\250x'),3,5,4" \
  'plain,0,5,2' >"$P"

expect_rc 0 plan "$P" --out "$T/sol.csv" --svg "$T/m.svg" --html "$T/m.html" \
  --trace-json "$T/m.json" --quiet
out_empty
err_empty
has_file "$T/m.svg"
has_file "$T/m.html"
has_file "$T/m.json"

# SVG: well-formed XML, one rect.buf per buffer at the documented place:
# x = 96 + (first - xmin) * sx, y = 660 - (offset + size) * sy.
py '
import csv, sys, xml.etree.ElementTree as ET
NS = "{http://www.w3.org/2000/svg}"
root = ET.parse(sys.argv[1]).getroot()
rows = list(csv.DictReader(open(sys.argv[2], encoding="utf-8", errors="replace")))
rects = [r for r in root.iter(NS + "rect") if r.get("class", "").startswith("buf ")]
assert len(rects) == len(rows) == 5, (len(rects), len(rows))
xmin = min(int(r["lower"]) for r in rows); xmax = max(int(r["upper"]) for r in rows)
height = max(int(r["offset"]) + int(r["size"]) for r in rows)
sx = (960 - 96) / (xmax - xmin); sy = (660 - 100) / height
for rc in rects:
    r = rows[int(rc.get("data-i"))]
    lo, up, off, size = (int(r[k]) for k in ("lower", "upper", "offset", "size"))
    for attr, want in (("x", 96 + (lo - xmin) * sx), ("width", (up - lo) * sx),
                       ("y", 660 - (off + size) * sy), ("height", size * sy)):
        assert abs(float(rc.get(attr)) - want) < 0.01, (attr, rc.get(attr), want)
titles = [rc.find(NS + "title").text for rc in rects]
assert titles[0].startswith("a</script><!--x\n"), titles[0]
assert titles[1].startswith("q\"u\x27o&amp;<b>\n"), titles[1]
assert titles[2].startswith("ctl\ufffdz"), titles[2]
assert titles[3].startswith("sep\u2028x"), titles[3]
text = "".join(root.itertext())
for want in ("memory map", "lower bound", "peak step", "schedule step", "buffer (5)"):
    assert want in text, want
' "$T/m.svg" "$T/sol.csv"

# Trace: JSON, one complete event per buffer with ts = first, dur = lifetime.
py '
import csv, json, sys
doc = json.load(open(sys.argv[1]))
rows = list(csv.DictReader(open(sys.argv[2], encoding="utf-8", errors="replace")))
xs = [e for e in doc["traceEvents"] if e["ph"] == "X"]
assert len(xs) == len(rows), (len(xs), len(rows))
for e in xs:
    r = rows[e["args"]["buffer"]]
    assert e["ts"] == int(r["lower"]) and e["dur"] == int(r["upper"]) - int(r["lower"]), e
    assert e["args"]["offset"] == int(r["offset"]) and e["args"]["size"] == int(r["size"]), e
assert xs[0]["name"] == "a</script><!--x", xs[0]["name"]
assert any(e["ph"] == "C" and e["name"] == "live bytes" for e in doc["traceEvents"])
assert doc["otherData"]["steps_per_us"] == 1
' "$T/m.json" "$T/sol.csv"

# HTML: one file, no network, the data block cannot be closed by an id.
py '
import json, re, sys
h = open(sys.argv[1], encoding="utf-8").read()
assert not re.search(r"(src|href)=\"?(https?:)?//", h), "external resource"
m = re.search(r"<script type=\"application/json\" id=\"data\">(.*?)</script>", h, re.S)
d = json.loads(m.group(1))
assert d["n"] == 5 and d["names"][0] == "a</script><!--x", d["names"][:2]
assert h.count("</script>") == 2, h.count("</script>")
' "$T/m.html"

# A built-in model: kinds, weights band, names and ops in the tooltips.
expect_rc 0 plan --model resnet50 --svg "$T/r.svg" --trace-json "$T/r.json" -q
py '
import json, sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
NS = "{http://www.w3.org/2000/svg}"
assert root.find(".//" + NS + "g[@id=\"weights\"]") is not None
text = "".join(root.itertext())
assert "resnet50 - memory map" in text and "alias (" in text and "weights" in text
doc = json.load(open(sys.argv[2]))
xs = [e for e in doc["traceEvents"] if e["ph"] == "X"]
assert len(xs) == doc["otherData"]["buffers"]
assert all("op" in e["args"] for e in xs if e["cat"] != "activation" or e["ts"] > 0)
' "$T/r.svg" "$T/r.json"

# Usage errors: an output named twice, or the input as an output.
expect_error plan "$P" --svg "$T/should-not-exist.svg" --html "$T/should-not-exist.svg"
err_has "named twice"
expect_error plan "$P" --trace-json "$P"
expect_rc 1 plan "$P" --svg
err_has "--svg"

# --help names the options.
expect_rc 0 plan --help
out_has "--svg FILE"
out_has "--html FILE"
out_has "--trace-json FILE"

finish
