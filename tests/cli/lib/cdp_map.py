#!/usr/bin/env python3
"""cdp_map.py - drives the HTML memory map in headless Chromium through the
DevTools protocol (--remote-debugging-pipe: JSON messages ended by a NUL
byte, the browser reads fd 3 and writes fd 4), with real input events:

  1. open the page, wait until its first frame is drawn (#perf data-ms);
  2. move the mouse to the centre of buffer I, computed here from the
     buffer's lifetime and offset and the view the page publishes on the
     canvas (data-view: plot box, then step and address ranges); print the
     tooltip's data-i and text;
  3. wheel up (zoom in) at that point: report both spans and where the
     data point that was under the cursor is drawn now (anchor_px, relative
     to the cursor); hover again;
  4. drag 100 px to the right: the step range moves left by 100 px worth.

Usage: cdp_map.py CHROME URL FIRST LAST OFFSET SIZE PROFILE_DIR
Prints one JSON object; exits 1 with a message on any failure. Standard
library only."""
import json
import os
import select
import subprocess
import sys
import time

chrome, url = sys.argv[1], sys.argv[2]
first, last, offset, size = (int(v) for v in sys.argv[3:7])
profile = sys.argv[7]

to_chrome_r, to_chrome_w = os.pipe()
from_chrome_r, from_chrome_w = os.pipe()


def fds():
    """In the child: the pipe ends as fds 3 and 4, kept across exec."""
    r, w = to_chrome_r, from_chrome_w
    if w == 3:  # do not let the first dup2 overwrite the second source
        w = os.dup(w)
    os.dup2(r, 3)
    os.dup2(w, 4)
    os.set_inheritable(3, True)
    os.set_inheritable(4, True)


proc = subprocess.Popen(
    [chrome, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
     "--hide-scrollbars", "--remote-debugging-pipe",
     "--user-data-dir=" + profile, "--window-size=1200,800", "about:blank"],
    preexec_fn=fds, close_fds=False, stdout=subprocess.DEVNULL,
    stderr=subprocess.DEVNULL)
os.close(to_chrome_r)
os.close(from_chrome_w)
buf = b""
next_id = 0
deadline = time.time() + 60


def die(msg):
    proc.kill()
    sys.exit("cdp_map: " + msg)


def call(method, params=None, session=None):
    """Sends one command and returns its result (events are skipped)."""
    global buf, next_id
    next_id += 1
    msg = {"id": next_id, "method": method, "params": params or {}}
    if session:
        msg["sessionId"] = session
    os.write(to_chrome_w, json.dumps(msg).encode() + b"\0")
    while True:
        while b"\0" in buf:
            raw, buf = buf.split(b"\0", 1)
            reply = json.loads(raw)
            if reply.get("id") == next_id:
                if "error" in reply:
                    die("%s: %s" % (method, reply["error"]))
                return reply.get("result", {})
        if time.time() > deadline:
            die("timed out waiting for " + method)
        ready, _, _ = select.select([from_chrome_r], [], [], 1.0)
        if ready:
            chunk = os.read(from_chrome_r, 1 << 16)
            if not chunk:
                die("the browser closed the pipe")
            buf += chunk


target = call("Target.createTarget", {"url": url})["targetId"]
session = call("Target.attachToTarget",
               {"targetId": target, "flatten": True})["sessionId"]


def js(expr):
    r = call("Runtime.evaluate", {"expression": expr, "returnByValue": True},
             session)
    if "exceptionDetails" in r:
        die("page exception: %s" % r["exceptionDetails"])
    return r["result"].get("value")


while not js("!!(document.getElementById('perf') && "
             "document.getElementById('perf').getAttribute('data-ms'))"):
    if time.time() > deadline:
        die("the page never drew its first frame")
    time.sleep(0.1)


def view():
    v = js("(function(){var c=document.getElementById('map'),"
           "r=c.getBoundingClientRect();return [r.left,r.top,"
           "c.getAttribute('data-view')];})()")
    pl, pt, pr, pb, x0, x1, y0, y1 = (float(t) for t in v[2].split(","))
    return v[0], v[1], pl, pt, pr, pb, x0, x1, y0, y1


def centre():
    """Client coordinates of the middle of the buffer in the current view."""
    left, top, pl, pt, pr, pb, x0, x1, y0, y1 = view()
    x = pl + ((first + last) / 2 - x0) * (pr - pl) / (x1 - x0)
    y = pb - (offset + size / 2 - y0) * (pb - pt) / (y1 - y0)
    return left + x, top + y


def mouse(kind, x, y, **extra):
    p = {"type": kind, "x": x, "y": y}
    p.update(extra)
    call("Input.dispatchMouseEvent", p, session)


def tooltip():
    return js("(function(){var t=document.getElementById('tip');return "
              "[t.getAttribute('data-i'),t.textContent,t.style.display];})()")


out = {}
x, y = centre()
mouse("mouseMoved", x, y)
out["hover"] = tooltip()

before = view()
mouse("mouseWheel", x, y, deltaX=0, deltaY=-300)
time.sleep(0.3)  # the redraw waits for an animation frame
after = view()
out["span_x"] = [before[7] - before[6], after[7] - after[6]]
out["span_y"] = [before[9] - before[8], after[9] - after[8]]
# the data point under the cursor before and after the zoom
def data_at(v, cx, cy):
    left, top, pl, pt, pr, pb, x0, x1, y0, y1 = v
    return (x0 + (cx - left - pl) * (x1 - x0) / (pr - pl),
            y0 + (pb - (cy - top)) * (y1 - y0) / (pb - pt))
def to_client(v, dx, dy):
    left, top, pl, pt, pr, pb, x0, x1, y0, y1 = v
    return (left + pl + (dx - x0) * (pr - pl) / (x1 - x0),
            top + pb - (dy - y0) * (pb - pt) / (y1 - y0))
# where the data point that was under the cursor is drawn after the zoom,
# relative to the cursor, in px (the page sees integer event coordinates)
ax, ay = to_client(after, *data_at(before, x, y))
out["anchor_px"] = [ax - x, ay - y]
x, y = centre()
mouse("mouseMoved", x, y)
out["hover_zoomed"] = tooltip()

v0 = view()
mouse("mousePressed", x, y, button="left", buttons=1, clickCount=1)
mouse("mouseMoved", x + 100, y, button="left", buttons=1)
mouse("mouseReleased", x + 100, y, button="left", buttons=0, clickCount=1)
time.sleep(0.3)
v1 = view()
out["drag_steps"] = v0[6] - v1[6]
out["drag_expected"] = 100 * (v0[7] - v0[6]) / (v0[4] - v0[2])

call("Browser.close")
proc.wait(timeout=10)
print(json.dumps(out))
