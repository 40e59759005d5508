#!/usr/bin/env python3
"""Runs the console examples of README.md and compares their output.

Usage: tour.py README.md NNMEM_BIN SOURCE_DIR [--self-test]

Which blocks run. A fenced block whose info string is `console` is a
runnable block:

    ```console
    $ build/nnmem plan examples/problems/small.csv --capacity 95; echo $?
    nnmem: does not fit: ...
    2
    ```

A line starting with "$ " is a command (a line ending in a backslash goes
on with the next line); the lines after it, up to the next "$ " line or the
end of the block, are the output it must print (stdout and stderr, merged).
Other fences (```, ```sh, ```c, ```text) are never run. A runnable block
right after a line `<!-- tour: needs-data -->` runs only when the shared
data folder is given (NNMEM_DATA_DIR; it is then reachable as
`../shared/data`, as from a checkout next to it), and is reported as
skipped otherwise; one after `<!-- tour: needs-malloc-front -->` runs only
when libnnmem_malloc.so sits next to the nnmem binary (it is not built
with sanitizers). A runnable block right after `<!-- tour: skip REASON -->`
is never run (say why); the skip is reported.

How commands run. All blocks run in order in one scratch folder holding
`examples/` (a copy of SOURCE_DIR/examples) and `build` (a link to the
folder of NNMEM_BIN), with `../shared/data` a link to NNMEM_DATA_DIR when
that exists, so `build/nnmem` and `examples/...` resolve as after
`make run` in a fresh clone, later commands see the files earlier ones
wrote, and nothing is written into the source tree. Each command is one
`bash -c` with stdin from /dev/null, LC_ALL=C, a 120 s limit. It must exit
0; a command meant to fail shows its status with `; echo $?` (the echo then
exits 0, and the status is compared as output).

How output compares. Line by line, exactly, after trailing blanks are
dropped from each line and trailing empty lines from the whole, except:
  - a line that is just `...` matches any number of lines (zero or more);
  - `...` inside a line matches any text within that line;
  - figures that differ from run to run match any figure, on both sides:
    a number before `ms` (`0.12 ms`), and the value of a key whose name
    ends in `seconds`, `_ms` or `ns_per_op` (`"plan_seconds": 1.5e-05`,
    `ns_per_op:   75.8`).
Everything else is exact, so a changed figure or a broken command fails.

--self-test: also checks that this test can fail: a copy of the README
with the first figure of the first expected output changed, and one with
its first command misspelled, must both fail.

Exit: 0 all matched; 1 a mismatch (each printed with a diff); 77 nothing
to run (no python, handled by tour.sh).
"""
import difflib
import os
import re
import shutil
import subprocess
import sys
import tempfile

SKIP_RE = re.compile(r"^\s*<!--\s*tour:\s*skip\b(.*?)-->\s*$")
DATA_RE = re.compile(r"^\s*<!--\s*tour:\s*needs-data\s*-->\s*$")
MALLOC_RE = re.compile(r"^\s*<!--\s*tour:\s*needs-malloc-front\s*-->\s*$")
FENCE_RE = re.compile(r"^(\s*)(```+|~~~+)\s*([^\s`]*)")
VARIABLE = [
    # 0.12 ms, 4 ms
    (re.compile(r"\b\d+(?:\.\d+)?(?:e[+-]?\d+)?(?=\s*ms\b)"), "<#>"),
    # "plan_seconds": 1.5e-05 / "total_ms":0.1 / ns_per_op:   75.8
    (re.compile(r"((?:seconds|_ms|ns_per_op)\"?\s*[:=]\s*)-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?"),
     r"\1<#>"),
]


class Command:
    def __init__(self, line_no, text):
        self.line_no = line_no
        self.text = text
        self.expected = []


def parse(readme_lines, have_data=False, have_malloc=True):
    """Returns (blocks, skipped): blocks are lists of Commands; skipped are
    (line number, reason) of blocks marked tour: skip, and of those marked
    tour: needs-data unless have_data."""
    blocks, skipped = [], []
    i, n = 0, len(readme_lines)
    skip_reason = None
    while i < n:
        line = readme_lines[i]
        m = SKIP_RE.match(line)
        if m or DATA_RE.match(line) or MALLOC_RE.match(line):
            if m:
                skip_reason = m.group(1).strip().strip("()") or "marked skip"
            elif MALLOC_RE.match(line):
                if not have_malloc:
                    skip_reason = ("needs libnnmem_malloc.so (not built with "
                                   "sanitizers)")
            elif not have_data:
                skip_reason = "needs ../shared/data, NNMEM_DATA_DIR not given"
            i += 1
            continue
        f = FENCE_RE.match(line)
        if not f:
            if line.strip():
                skip_reason = None
            i += 1
            continue
        fence, info = f.group(2), f.group(3)
        start = i
        i += 1
        body = []
        while i < n and not readme_lines[i].strip().startswith(fence):
            body.append((i + 1, readme_lines[i]))
            i += 1
        i += 1  # the closing fence
        if info != "console":
            skip_reason = None
            continue
        if skip_reason is not None:
            skipped.append((start + 1, skip_reason))
            skip_reason = None
            continue
        cmds = []
        k = 0
        while k < len(body):
            no, text = body[k]
            if text.startswith("$ "):
                cmd = text[2:]
                while cmd.endswith("\\") and k + 1 < len(body):
                    k += 1
                    cmd = cmd + "\n" + body[k][1]
                cmds.append(Command(no, cmd))
            elif cmds:
                cmds[-1].expected.append(text)
            elif text.strip():
                raise SystemExit("%d: output before any '$ ' command in a console block" % no)
            k += 1
        blocks.append(cmds)
    return blocks, skipped


def normalise(line):
    line = line.rstrip()
    for pattern, repl in VARIABLE:
        line = pattern.sub(repl, line)
    return line


def line_matches(want, got):
    want, got = normalise(want), normalise(got)
    if "..." not in want:
        return want == got
    parts = [re.escape(p) for p in want.split("...")]
    return re.fullmatch(".*".join(parts), got) is not None


def trim(lines):
    lines = [l.rstrip() for l in lines]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def output_matches(want, got):
    """Line-wise match with `...` lines as wildcards (memoised search)."""
    memo = {}

    def m(i, j):
        key = (i, j)
        if key in memo:
            return memo[key]
        if i == len(want):
            r = j == len(got)
        elif want[i].strip() == "...":
            r = m(i + 1, j) or (j < len(got) and m(i, j + 1))
        else:
            r = j < len(got) and line_matches(want[i], got[j]) and m(i + 1, j + 1)
        memo[key] = r
        return r

    sys.setrecursionlimit(max(10000, 4 * (len(want) + len(got) + 10)))
    return m(0, 0)


def run_tour(readme, binary, source, data_dir, quiet=False):
    """Returns the number of failed commands (raises on a malformed README)."""
    with open(readme) as f:
        lines = f.read().split("\n")
    have_malloc = os.path.exists(
        os.path.join(os.path.dirname(os.path.abspath(binary)),
                     "libnnmem_malloc.so"))
    blocks, skipped = parse(lines, data_dir is not None, have_malloc)
    n_cmds = sum(len(b) for b in blocks)
    if n_cmds == 0:
        print("%s: no runnable ```console blocks found" % readme)
        return 1
    top = tempfile.mkdtemp(prefix="nnmem-tour.")
    scratch = os.path.join(top, "repo")
    failures = 0
    try:
        os.mkdir(scratch)
        if data_dir is not None:
            os.mkdir(os.path.join(top, "shared"))
            os.symlink(os.path.abspath(data_dir), os.path.join(top, "shared", "data"))
        shutil.copytree(os.path.join(source, "examples"), os.path.join(scratch, "examples"))
        os.symlink(os.path.dirname(os.path.abspath(binary)), os.path.join(scratch, "build"))
        env = dict(os.environ, LC_ALL="C", LANG="C", TZ="UTC")
        for block in blocks:
            for cmd in block:
                try:
                    p = subprocess.run(["bash", "-c", cmd.text], cwd=scratch, env=env,
                                       stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                       stderr=subprocess.STDOUT, timeout=120)
                    got_text, rc = p.stdout.decode("utf-8", "replace"), p.returncode
                except subprocess.TimeoutExpired:
                    got_text, rc = "(timed out after 120 s)\n", 124
                got = trim(got_text.split("\n"))
                want = trim(cmd.expected)
                ok = rc == 0 and output_matches(want, got)
                if ok:
                    continue
                failures += 1
                if quiet:
                    continue
                print("FAIL %s:%d: $ %s" % (readme, cmd.line_no, cmd.text))
                if rc != 0:
                    print("  exit status %d (a failing command shows it with '; echo $?')" % rc)
                diff = difflib.unified_diff(want, got, "README (expected)", "actual", lineterm="", n=2)
                for d in diff:
                    print("  " + d)
    finally:
        shutil.rmtree(top, ignore_errors=True)
    if not quiet:
        for no, reason in skipped:
            print("skipped block at %s:%d: %s" % (readme, no, reason))
        print("%d commands in %d blocks, %d failed, %d blocks skipped"
              % (n_cmds, len(blocks), failures, len(skipped)))
    return failures


def mutate(readme, how, out_path):
    """Writes a copy of the README with the first runnable command broken
    (how == 'command') or a figure of its expected output changed."""
    with open(readme) as f:
        lines = f.read().split("\n")
    blocks, _ = parse(lines)
    first = next(c for b in blocks for c in b)
    if how == "command":
        i = first.line_no - 1
        lines[i] = lines[i].replace("build/nnmem ", "build/nnmem x", 1)
        if lines[i] == "$ " + first.text:
            lines[i] = "$ false && " + first.text
    else:
        cmd = next(c for b in blocks for c in b
                   if any(re.search(r"\d", normalise(e)) for e in c.expected))
        first_out = cmd.line_no + cmd.text.count("\n")  # index of expected line 0
        for k, e in enumerate(cmd.expected):
            if "..." in e:
                continue
            for d in re.finditer(r"\d", e):  # a digit that is not a variable figure
                changed = e[:d.start()] + str((int(d.group()) + 1) % 10) + e[d.end():]
                if normalise(changed) != normalise(e):
                    lines[first_out + k] = changed
                    break
            else:
                continue
            break
    with open(out_path, "w") as f:
        f.write("\n".join(lines))


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if len(args) != 3:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    readme, binary, source = args
    data_dir = os.environ.get("NNMEM_DATA_DIR") or None
    if data_dir is not None and not os.path.isdir(data_dir):
        data_dir = None
    failures = run_tour(readme, binary, source, data_dir)
    if "--self-test" in sys.argv:
        tmp = tempfile.mkdtemp(prefix="nnmem-tour-self.")
        try:
            for how in ("figure", "command"):
                bad = os.path.join(tmp, "README.%s.md" % how)
                mutate(readme, how, bad)
                if run_tour(bad, binary, source, data_dir, quiet=True) == 0:
                    print("FAIL self-test: a README with a changed %s still passed" % how)
                    failures += 1
                else:
                    print("self-test: a changed %s fails, as it must" % how)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
