#!/usr/bin/env bash
# CLI: the HTML memory map in a real browser (headless Chromium; skipped
# when it is absent). Five page loads, about 25 s:
#   1. screenshot of resnet50's map: the PNG is decoded here (zlib + the
#      PNG row filters) and must hold the kind colours, the weights band,
#      the lower-bound line and the peak-step line, not a blank page;
#   2. the same page with #hover=b:I (the page replays a mousemove at the
#      centre of buffer I through the canvas's own listener, so the hit test
#      and the tooltip code run): the dumped DOM's tooltip names that
#      buffer's tensors, op, size and offset as the trace JSON gives them;
#   2b. the same page driven with real mouse events through the DevTools
#      protocol (lib/cdp_map.py): hover at the buffer's centre computed from
#      its data, wheel zoom around the cursor, drag to pan;
#   3. hostile ids (a script end, an <img onerror>): the page still runs,
#      the tooltip shows the id as text and nothing was injected;
#   4. 20,000 random buffers: the first frame was drawn and its level of
#      detail merged sub-pixel boxes (the render time is printed).
. "$(dirname "$0")/lib/common.sh"

have_python || skip "python3 is needed to read the browser output"
CHROME=""
for c in chromium chromium-browser google-chrome; do
  if command -v "$c" >/dev/null 2>&1; then
    CHROME=$(command -v "$c")
    break
  fi
done
[ -n "$CHROME" ] || skip "no chromium (apt-get install chromium)"

# chrome ARGS... URL: one headless page load with its own profile folder.
chrome() {
  timeout 90 "$CHROME" --headless --no-sandbox --disable-gpu --no-first-run \
    --hide-scrollbars --user-data-dir="$T/profile" --window-size=1200,800 \
    "$@" 2>>"$T/chrome.log"
}

# tip_text DOM: the text of <div id="tip"> and its data-i, one per line.
tip_text() {
  python3 -c '
import sys
from html.parser import HTMLParser
class P(HTMLParser):
    depth = 0; text = ""; idx = ""
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if self.depth: self.depth += 1
        elif a.get("id") == "tip": self.depth = 1; self.idx = a.get("data-i", "")
    def handle_endtag(self, tag):
        if self.depth: self.depth -= 1
    def handle_data(self, d):
        if self.depth: self.text += d
p = P(); p.feed(open(sys.argv[1], encoding="utf-8").read())
print(p.idx); print(p.text)
' "$1"
}

# 1. Screenshot.
expect_rc 0 plan --model resnet50 --html "$T/r.html" --trace-json "$T/r.json" -q
chrome --screenshot="$T/r.png" "file://$T/r.html" >/dev/null
has_file "$T/r.png"
py '
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n"
pos, idat = 8, b""
while pos < len(data):
    n, kind = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if kind == b"IHDR": w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
    if kind == b"IDAT": idat += body
    pos += 12 + n
assert depth == 8 and ctype in (2, 6), (depth, ctype)
bpp = 3 if ctype == 2 else 4
raw, stride = zlib.decompress(idat), w * bpp
rows, prev, i = [], bytearray(stride), 0
for y in range(h):
    f, line = raw[i], bytearray(raw[i + 1:i + 1 + stride]); i += 1 + stride
    for x in range(stride):
        a = line[x - bpp] if x >= bpp else 0
        b = prev[x]; c = prev[x - bpp] if x >= bpp else 0
        if f == 1: line[x] = (line[x] + a) & 255
        elif f == 2: line[x] = (line[x] + b) & 255
        elif f == 3: line[x] = (line[x] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c; pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    rows.append(bytes(line)); prev = line
assert (w, h) == (1200, 800), (w, h)
count = {}
for r in rows:
    for x in range(0, stride, bpp):
        px = r[x:x + 3]; count[px] = count.get(px, 0) + 1
def near(rgb, tol=24):
    t = bytes.fromhex(rgb)
    return sum(n for c, n in count.items() if all(abs(c[k] - t[k]) <= tol for k in range(3)))
total = w * h
greens = near("59a14f") + near("7bbd6f") + near("438a3a")
assert len(count) >= 20, ("too few colours: blank page?", len(count))
assert greens > total // 10, ("alias buffers missing", greens)
assert near("bab0ac", 8) > 10000, "weights band missing"
assert near("d62728", 60) > 100, "lower bound line missing"
assert near("9467bd", 60) > 100, "peak step line missing"
' "$T/r.png"

# 2. Tooltip of the largest buffer, checked against the trace JSON.
I=$(python3 -c '
import json, sys
xs = [e for e in json.load(open(sys.argv[1]))["traceEvents"] if e["ph"] == "X"]
print(max(xs, key=lambda e: e["dur"] * e["args"]["size"])["args"]["buffer"])
' "$T/r.json")
chrome --dump-dom "file://$T/r.html#hover=b:$I" >"$T/r.dom"
tip_text "$T/r.dom" >"$T/tip.txt"
py '
import json, sys
idx, *text = open(sys.argv[1], encoding="utf-8").read().split("\n")
text = "\n".join(text)
ev = [e for e in json.load(open(sys.argv[2]))["traceEvents"]
      if e["ph"] == "X" and e["args"]["buffer"] == int(sys.argv[3])][0]
assert idx == sys.argv[3], ("hovered", idx, "wanted", sys.argv[3], text)
for want in (ev["name"], "op: " + ev["args"]["op"], "size: %d B" % ev["args"]["size"],
             "offset: %d .. %d" % (ev["args"]["offset"], ev["args"]["end"]),
             "steps: [%d, %d)" % (ev["ts"], ev["ts"] + ev["dur"])):
    assert want in text, (want, text)
' "$T/tip.txt" "$T/r.json" "$I"
grep -q 'id="perf" data-ms="' "$T/r.dom" || fail "the page did not draw (no render time)"

# 2b. The same buffer with real input events through the DevTools protocol
# (tests/cli/lib/cdp_map.py): hover, wheel zoom around the cursor, drag.
read -r F L O S < <(python3 -c '
import json, sys
e = [e for e in json.load(open(sys.argv[1]))["traceEvents"]
     if e["ph"] == "X" and e["args"]["buffer"] == int(sys.argv[2])][0]
print(e["ts"], e["ts"] + e["dur"], e["args"]["offset"], e["args"]["size"])
' "$T/r.json" "$I")
if timeout 90 python3 "$(dirname "$0")/lib/cdp_map.py" "$CHROME" "file://$T/r.html" \
  "$F" "$L" "$O" "$S" "$T/profile-cdp" >"$T/cdp.json" 2>"$T/cdp.err"; then
  py '
import json, sys
r = json.load(open(sys.argv[1]))
want = sys.argv[2]
for key in ("hover", "hover_zoomed"):
    idx, text, display = r[key]
    assert idx == want and display == "block", (key, r[key])
    assert "steps: [%s, %s)" % (sys.argv[3], sys.argv[4]) in text, text
sx, sy = r["span_x"], r["span_y"]
assert sx[1] < 0.9 * sx[0] and sy[1] < 0.9 * sy[0], ("wheel did not zoom", sx, sy)
# zoom keeps the point under the cursor (events carry integer pixels)
assert max(abs(d) for d in r["anchor_px"]) <= 1.0, r["anchor_px"]
assert abs(r["drag_steps"] - r["drag_expected"]) < 0.02 * r["drag_expected"], r
' "$T/cdp.json" "$I" "$F" "$L"
else
  fail "cdp_map.py: $(cat "$T/cdp.err")"
fi

# 3. Hostile ids.
printf 'id,lower,upper,size\n%s\n%s\n%s\n' \
  '"</script><img src=x onerror=""document.title=1"">",0,4,100' \
  '"<!--",1,3,50' 'c,2,5,30' >"$T/h.csv"
expect_rc 0 plan "$T/h.csv" --html "$T/h.html" -q
chrome --dump-dom "file://$T/h.html#hover=b:0" >"$T/h.dom"
tip_text "$T/h.dom" >"$T/htip.txt"
py '
import sys
dom = open(sys.argv[1], encoding="utf-8").read()
tip = open(sys.argv[2], encoding="utf-8").read().split("\n", 1)
assert tip[0] == "0", tip
assert tip[1].startswith("</script><img src=x onerror=\"document.title=1\">\n"), tip
assert "<img" not in dom.replace("&lt;img", ""), "markup was injected"
assert "data-ms=\"" in dom, "the script did not run"
' "$T/h.dom" "$T/htip.txt"

# 4. 20,000 buffers: level of detail and the render time.
python3 -c '
import random
r = random.Random(1)
print("id,lower,upper,size")
for i in range(20000):
    a = r.randrange(0, 5000)
    print("b%d,%d,%d,%d" % (i, a, a + r.randrange(1, 50), r.randrange(64, 1 << 20)))
' >"$T/big.csv"
expect_rc 0 plan "$T/big.csv" --strategy greedy-size --html "$T/big.html" -q
chrome --dump-dom "file://$T/big.html" >"$T/big.dom"
py '
import re, sys
dom = open(sys.argv[1], encoding="utf-8").read()
m = re.search(r"id=\"perf\" data-ms=\"([\d.]+)\" data-load-ms=\"([\d.]+)\" data-drawn=\"(\d+)\" data-merged=\"(\d+)\"", dom)
assert m, "no render time"
ms, load, drawn, merged = float(m[1]), float(m[2]), int(m[3]), int(m[4])
assert merged > 0 and 10000 < drawn + merged <= 20000, (drawn, merged)
print("20,000 buffers: first frame %.1f ms, page script %.1f ms, %d boxes filled, %d as pixels" % (ms, load, drawn, merged))
' "$T/big.dom"

finish
