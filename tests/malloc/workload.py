# workload.py - an allocation-heavy Python run for tests/malloc/programs.sh:
# dicts, lists, strings, json, a thread pool, sorting; prints a
# deterministic digest (run with PYTHONHASHSEED=0). Under the front it also
# says whether libnnmem_malloc.so is loaded (ctypes finds its symbol).
import ctypes
import hashlib
import json
import random
import sys
import threading

front = hasattr(ctypes.CDLL(None), "nnmem_record_step")
print("front:", front, file=sys.stderr)
rng = random.Random(1234)
h = hashlib.sha256()

# dicts and lists of mixed objects, grown and shrunk
d = {}
for i in range(200000):
    d["k%d" % rng.randrange(1 << 30)] = [i, str(i) * (i % 7), {"x": i % 13}]
for k in list(d)[::3]:
    del d[k]
h.update(str(len(d)).encode())
h.update(json.dumps(sorted(d.items())[:2000], sort_keys=True).encode())

# json round trip of a nested document
doc = {"rows": [{"id": i, "name": "n%05d" % i, "tags": ["t%d" % (i % 17)] * (i % 5),
                 "v": rng.random()} for i in range(60000)]}
s = json.dumps(doc, sort_keys=True)
back = json.loads(s)
assert back == doc
h.update(s.encode())

# threads building and freeing structures (blocks cross threads)
results = [None] * 8
shared = []
lock = threading.Lock()

def work(t):
    r = random.Random(t)
    acc = []
    for j in range(20000):
        acc.append(("w%d" % t, r.randrange(1000), bytes(r.randrange(200))))
        if len(acc) > 500:
            with lock:
                shared.append(acc)  # freed later by another thread
            acc = []
    with lock:
        if shared:
            shared.pop()
    results[t] = sum(len(x[2]) for x in acc)

ts = [threading.Thread(target=work, args=(t,)) for t in range(8)]
for t in ts:
    t.start()
for t in ts:
    t.join()
h.update(repr(results).encode())
h.update(str(sum(len(a) for a in shared)).encode())

# sorting and string building
words = ["".join(chr(97 + rng.randrange(26)) for _ in range(rng.randrange(1, 12)))
         for _ in range(150000)]
words.sort()
h.update(" ".join(words).encode())
big = bytearray()
for i in range(100000):
    big += ("%d," % i).encode()
h.update(bytes(big))
print(len(d), len(words), len(big), h.hexdigest())
