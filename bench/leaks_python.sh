#!/usr/bin/env bash
# Sampled leak records on a real program: python3 building a 40,000-key
# dict of lists of strings, dumping it to JSON and parsing it back, six
# times, under libnnmem_malloc.so; records off and NNMEM_LEAKS=sampled
# (1 in 512 KiB) alternating, N pairs (default 7). Prints each run's CPU
# seconds (user + sys) and the ratio of the medians.
#   bench/leaks_python.sh [BUILD_DIR] [N]
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
n=${2:-7}
so=$build/libnnmem_malloc.so
py=/usr/bin/python3
[ -f "$so" ] || { echo "no $so: build first" >&2; exit 1; }
[ -x "$py" ] || { echo "no $py" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "no /usr/bin/time (Debian package time)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
cat > w.py <<'PY'
import json
for r in range(6):
    d = {str(i): [str(j) * (j % 5) for j in range(i % 40)] for i in range(40000)}
    s = json.dumps(d, sort_keys=True)
    e = json.loads(s)
print(len(s), len(e))
PY
for i in $(seq 1 "$n"); do
  env -u NNMEM_LEAKS LD_PRELOAD="$so" /usr/bin/time -f "%U %S" -o "off.$i" \
    "$py" w.py > /dev/null
  NNMEM_LEAKS=sampled LD_PRELOAD="$so" /usr/bin/time -f "%U %S" \
    -o "sampled.$i" "$py" w.py > /dev/null
done
"$py" - "$n" <<'PY'
import statistics, sys
n = int(sys.argv[1])
cpu = lambda f: sum(map(float, open(f).read().split()))
off = [cpu(f"off.{i}") for i in range(1, n + 1)]
smp = [cpu(f"sampled.{i}") for i in range(1, n + 1)]
print("off     s:", " ".join(f"{x:.2f}" for x in off))
print("sampled s:", " ".join(f"{x:.2f}" for x in smp))
pr = sorted(b / a for a, b in zip(off, smp))
print(f"sampled / off: {statistics.median(smp) / statistics.median(off):.3f}x"
      f" (medians); paired {pr[0]:.2f}-{pr[-1]:.2f}x")
PY
