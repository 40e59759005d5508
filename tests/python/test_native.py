"""The runtime half of the Python package (python/nnmem/native.py): Pool and
Allocator over libnnmem.so with ctypes. Run with pytest by
tests/cli/python.sh (the library beside this build's nnmem binary).

What is checked: every pool kind under a random workload (fixed, printed
seed) against an independent model of the live blocks (no two live blocks
overlap, each is aligned and inside the device's address range, the
pool's own invariant check passes after every step, its counters match the
model); device-full and double-free errors surface as NativeError with
the library's status; wrong argument types and values raise
TypeError / ValueError before any call; a closed object refuses use; a
missing library is a NativeError, not a crash."""
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

import nnmem

SEED = 20261201
KINDS = ["tiered", "tlsf", "best-fit", "first-fit", "buddy", "slab", "fixed"]


def _overlaps(blocks):
    spans = sorted(blocks.items())
    for (a, n), (b, _) in zip(spans, spans[1:]):
        if a + n > b:
            return (a, n, b)
    return None


@pytest.mark.parametrize("kind", KINDS)
def test_random_workload_matches_model(kind):
    rng = random.Random(f"{SEED}-{kind}")
    print(f"seed {SEED}-{kind}")
    fixed = kind == "fixed"
    kw = {"block_size": 4096} if fixed else {}
    with nnmem.Pool(kind, device="256MiB", **kw) as pool:
        live = {}  # address -> requested size
        allocs = frees = 0
        for step in range(600):
            if live and (rng.random() < 0.45 or len(live) > 200):
                addr = rng.choice(sorted(live))
                pool.free(addr)
                del live[addr]
                frees += 1
            else:
                size = 4096 if fixed else rng.choice(
                    [rng.randint(1, 256), rng.randint(257, 65536),
                     rng.randint(65537, 4 << 20)])
                align = 0 if fixed else rng.choice([0, 64, 256, 4096])
                addr = pool.alloc(size, align)
                if align:
                    assert addr % align == 0, (step, hex(addr), align)
                assert addr not in live
                assert pool.usable_size(addr) >= size
                live[addr] = size
                allocs += 1
            assert _overlaps(live) is None, (kind, step)
            if step % 50 == 0:
                pool.check()
        pool.check()
        st = pool.stats()
        assert st["live_blocks"] == len(live)
        assert st["allocations_total"] == allocs
        assert st["frees_total"] == frees
        assert st["requested_bytes"] >= 0
        assert st["reserved_bytes"] >= st["allocated_bytes"]


def test_host_pool_memory_is_usable():
    import ctypes
    with nnmem.Pool("tlsf", capacity="16MiB") as pool:
        a = pool.alloc(4096, 64)
        buf = (ctypes.c_ubyte * 4096).from_address(a)
        buf[0], buf[4095] = 7, 9
        assert (buf[0], buf[4095]) == (7, 9)
        pool.free(a)


def test_device_full_is_nomem():
    with nnmem.Pool("tlsf", device="1MiB", chunk_size="1MiB") as pool:
        pool.alloc("512KiB")
        with pytest.raises(nnmem.NativeError) as e:
            pool.alloc("1MiB")
        assert e.value.status == "NNMEM_ERR_NOMEM"
        assert pool.stats()["failed_allocations_total"] == 1
        pool.check()


def test_double_and_foreign_free_refused():
    with nnmem.Pool("tlsf") as pool:
        a = pool.alloc(100)
        pool.free(a)
        for bad in (a, a + 8, 0x1000):
            with pytest.raises(nnmem.NativeError) as e:
                pool.free(bad)
            assert e.value.status == "NNMEM_ERR_INVALID"
        assert pool.stats()["misuse_total"] == 3
        pool.check()


def test_bad_config_names_the_field():
    with pytest.raises(nnmem.NativeError) as e:
        nnmem.Pool("fixed")
    assert "block_size" in e.value.message
    with pytest.raises(ValueError, match="unknown pool kind"):
        nnmem.Pool("no-such-kind")


@pytest.mark.parametrize("call,exc", [
    (lambda p: p.alloc(1.5), TypeError),
    (lambda p: p.alloc(True), TypeError),
    (lambda p: p.alloc(0), ValueError),
    (lambda p: p.alloc(-4), ValueError),
    (lambda p: p.alloc("12 parsecs"), ValueError),
    (lambda p: p.alloc(64, 3), ValueError),
    (lambda p: p.alloc(64, "16"), TypeError),
    (lambda p: p.free("0x10"), TypeError),
    (lambda p: p.free(0), ValueError),
    (lambda p: p.free(-1), ValueError),
    (lambda p: p.usable_size(None), TypeError),
])
def test_wrong_arguments_raise(call, exc):
    with nnmem.Pool("tlsf", device="1MiB") as pool:
        with pytest.raises(exc):
            call(pool)
        assert pool.stats()["allocations_total"] == 0


def test_wrong_constructor_arguments():
    with pytest.raises(TypeError):
        nnmem.Pool(3)
    with pytest.raises(TypeError):
        nnmem.Pool("tlsf", capacity=1.0)
    with pytest.raises(ValueError):
        nnmem.Pool("tlsf", device=0)
    with pytest.raises(ValueError):
        nnmem.Pool("tlsf", alignment=48)


def test_closed_objects_refuse_use():
    pool = nnmem.Pool("slab")
    pool.close()
    pool.close()  # idempotent
    with pytest.raises(ValueError, match="closed"):
        pool.alloc(16)
    a = nnmem.Allocator()
    a.close()
    with pytest.raises(ValueError, match="closed"):
        a.free(0x1000)


def test_allocator_roundtrip_and_misuse():
    rng = random.Random(SEED)
    print(f"seed {SEED}")
    with nnmem.Allocator() as al:
        live = {}
        for _ in range(2000):
            if live and rng.random() < 0.5:
                addr = rng.choice(sorted(live))
                al.free(addr)
                del live[addr]
            else:
                n = rng.randint(1, 100000)
                addr = al.alloc(n, rng.choice([16, 64, 4096]))
                live[addr] = n
            assert _overlaps(live) is None
        st = al.stats()
        assert st["live_blocks"] == len(live)
        with pytest.raises(nnmem.NativeError) as e:
            al.free(0x3039)
        assert e.value.status == "NNMEM_ERR_INVALID"
        assert al.stats()["misuse_total"] == 1


def test_missing_library_is_an_exception():
    env = dict(os.environ, NNMEM_LIBRARY="/nonexistent/libnnmem.so")
    code = ("import nnmem\n"
            "try:\n"
            "    nnmem.Pool('tlsf')\n"
            "except nnmem.NativeError as e:\n"
            "    print(e.status, 'cannot load' in e.message)\n")
    out = subprocess.run([sys.executable, "-c", code], env=env,
                         capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "NNMEM_ERR_NOT_FOUND True"


def test_library_path_is_this_build():
    assert Path(nnmem.library_path()).is_file()


def test_struct_mirrors_never_longer_than_the_library():
    # An *_init writes the whole C struct: the package must only ever let
    # it write into a scratch buffer of its own size, and each config
    # mirror must be no longer than the C struct (the library reads only
    # `size` bytes of it). A mirror longer than the library's struct, or a
    # stats mirror of another size, would let C write past a ctypes object.
    import ctypes
    from nnmem import native
    lib = native._load()
    for init, mirror, exact in (("nnmem_stats_init", native._Stats, True),
                                ("nnmem_pool_config_init",
                                 native._PoolConfig, False),
                                ("nnmem_allocator_config_init",
                                 native._AllocatorConfig, False),
                                ("nnmem_leaks_config_init",
                                 native._LeaksConfig, False)):
        scratch = ctypes.create_string_buffer(1 << 16)
        getattr(lib, init)(scratch)
        size = ctypes.c_uint32.from_buffer(scratch).value
        assert 0 < size < 1 << 15, (init, size)
        if exact:
            assert size == ctypes.sizeof(mirror), (init, size)
        else:
            assert ctypes.sizeof(mirror) <= size, (init, size)


# ---- the run-time profiler (nnmem.Profiler) ------------------------------

M = 1 << 20


def test_profiler_figures_by_tag_and_step():
    with nnmem.Pool("tlsf", device="256MiB") as pool:
        before = pool.alloc(M)  # allocated before start: not seen
        pr = nnmem.Profiler(pool).start()
        assert pr.running
        with pr.tagged("weight"):
            w = pool.alloc(M)
        assert pr.tag("activation") == "activation"  # tagged() restored it
        pr.step()
        x = pool.alloc(2 * M)
        with pr.tagged("workspace"):
            y = pool.alloc(3 * M)
        pr.step()
        pool.free(y)
        pool.free(x)
        pool.free(before)  # a block the profiler never saw: ignored
        pool.alloc(M)
        pr.step()
        pr.stop()
        assert not pr.running
        r = pr.result()
        pool.free(w)  # after stop: the figures do not move
        assert pr.result() == r
    assert r["source"] == "measured"
    assert (r["peak_memory"], r["weight_memory"], r["activation_memory"],
            r["workspace_memory"]) == (6 * M, M, 2 * M, 3 * M)
    assert (r["arena_height"], r["naive_arena"]) == (5 * M, 6 * M)
    assert r["reuse_ratio"] == pytest.approx(1 - 5 / 6)
    assert (r["buffers"], r["frees"], r["steps"], r["peak_step"]) == (4, 2, 4, 1)
    assert [t["peak_bytes"] for t in r["timeline"]] == [M, 6 * M, 6 * M, 2 * M]
    assert r["pools"][0]["pool"].startswith("tlsf")


def test_profiler_allocator_tags_are_per_thread(tmp_path):
    import threading
    with nnmem.Allocator() as al:
        with nnmem.Profiler(al) as pr:
            def weights():
                pr.tag("weight")
                for _ in range(4):
                    al.alloc(M)
            t = threading.Thread(target=weights)
            t.start()
            t.join()
            a = al.alloc(2 * M)  # this thread: still "activation"
        assert not pr.running
        pr.export(tmp_path / "p.json")
        al.free(a)
    with open(tmp_path / "p.json") as f:
        r = json.load(f)
    assert r == pr.result()
    assert (r["weight_memory"], r["activation_memory"]) == (4 * M, 2 * M)


def test_profiler_misuse_is_refused():
    with pytest.raises(TypeError):
        nnmem.Profiler(42)
    with nnmem.Pool("tlsf", device="64MiB") as pool:
        pr = nnmem.Profiler(pool)
        with pytest.raises(ValueError, match="not started"):
            pr.result()
        pr.start()
        with pytest.raises(ValueError, match="already started"):
            pr.start()
        with pytest.raises(nnmem.NativeError) as e:  # one per object
            nnmem.Profiler(pool).start()
        assert e.value.status == "NNMEM_ERR_STATE"
        with pytest.raises(ValueError, match="unknown tag"):
            pr.tag("weights")
        with pytest.raises(TypeError):
            pr.tag(1)
        with pytest.raises(nnmem.NativeError) as e:
            pr.record_free(0x1000)  # never recorded
        assert e.value.status == "NNMEM_ERR_INVALID"
        pr.record_alloc(0x1000, "4KiB", "workspace")
        with pytest.raises(nnmem.NativeError):
            pr.record_alloc(0x1000, 4096)  # already live
        with pytest.raises(nnmem.NativeError) as e:  # no such folder
            pr.export("/nonexistent-dir/p.json")
        assert "/nonexistent-dir/p.json" in e.value.message
        assert pr.result()["workspace_memory"] == 4096
    # closing the pool stopped the profiler first; its figures stay
    assert not pr.running
    assert pr.result()["peak_memory"] == 4096
    with pytest.raises(ValueError, match="stopped"):
        pr.step()
    pr.close()
    pr.close()
    with pytest.raises(ValueError, match="closed"):
        pr.result()


def test_measured_profile_equals_planned(tmp_path):
    """A pool serving a plan's buffers with the plan's lifetimes (a buffer
    lives over [first, last): freed at the end of step last - 1) measures
    the planned profile: same peak, weights, activations, arena height and
    the same live bytes at every step (nnmem.diff finds no difference)."""
    planned, plan_file = tmp_path / "planned.json", tmp_path / "plan.json"
    subprocess.run([nnmem.cli_path(), "plan", "--model", "resnet50",
                    "--out", str(plan_file), "--profile", str(planned)],
                   check=True, capture_output=True)
    with open(plan_file) as f:
        plan = json.load(f)
    bufs = plan["buffers"]
    steps = max(b["last"] for b in bufs)
    with nnmem.Pool("tlsf", device="1GiB") as pool:
        pr = nnmem.Profiler(pool).start()
        with pr.tagged("weight"):
            pool.alloc(plan["weight_bytes"])
        live = {}
        for s in range(steps):
            for b in bufs:
                if b["first"] == s:
                    live[b["id"]] = pool.alloc(b["size"])
            for b in bufs:
                if b["last"] == s + 1:
                    pool.free(live.pop(b["id"]))
            pr.step()
        pr.stop()
        pr.export(tmp_path / "measured.json")
    d = nnmem.diff(planned, tmp_path / "measured.json")
    keys = {k["key"]: k for k in d["keys"]}
    for k in ("peak_memory", "weight_memory", "activation_memory",
              "workspace_memory", "arena_height", "arena_lower_bound"):
        assert keys[k]["delta"] == 0, keys[k]
    assert d["steps_compared"] == steps
    assert d["timeline"]["first_difference"] is None
    assert d["timeline"]["max_deviation"] == 0
    # and a real difference is found: drop the weights
    with open(tmp_path / "measured.json") as f:
        m = json.load(f)
    m["peak_memory"] -= plan["weight_bytes"]
    m["weight_memory"] = 0
    (tmp_path / "light.json").write_text(json.dumps(m))
    keys = {k["key"]: k for k in nnmem.diff(planned, tmp_path / "light.json")
            ["keys"]}
    assert keys["weight_memory"]["delta"] == -plan["weight_bytes"]
    with pytest.raises(nnmem.NnmemError) as e:
        nnmem.diff(planned, plan_file)  # a plan is not a profile
    assert "plan.json" in str(e.value)


# ---- leak records from Python (Allocator.leaks_*) -------------------------

def _alloc_here(al, n):
    return al.alloc(n)  # the line the records name: _ALLOC_LINE


_ALLOC_LINE = _alloc_here.__code__.co_firstlineno + 1


def test_leak_records_name_python_lines(tmp_path):
    with nnmem.Allocator() as al:
        early = al.alloc(100)  # before records: never recorded
        al.leaks_enable("full", depth=0)
        kept = [_alloc_here(al, 1000) for _ in range(3)]
        other = al.alloc(5000, site="model.py:42")
        gone = _alloc_here(al, 64)
        al.free(gone)
        al.free(early)
        s = al.leaks_summary()
        assert (s["mode"], s["records"], s["bytes"], s["sites"]) == \
            ("full", 4, 8000, 2)
        j = al.leaks_report("json")
        assert j["mode"] == "full"
        sites = [(x["file"], x["line"], x["bytes"], x["blocks"])
                 for x in j["sites"]]
        assert sites == [("model.py", 42, 5000, 1),
                         (__file__, _ALLOC_LINE, 3000, 3)]
        text = al.leaks_report()
        assert "8000 bytes in 4 blocks" in text and "model.py:42" in text
        folded = al.leaks_report("folded").splitlines()
        assert folded[0] == "model.py:42 5000"
        al.leaks_write(tmp_path / "leaks.folded")
        assert (tmp_path / "leaks.folded").read_text().splitlines() == folded
        al.leaks_write(tmp_path / "leaks.json")
        with open(tmp_path / "leaks.json") as f:
            assert [x["bytes"] for x in json.load(f)["sites"]] == [5000, 3000]
        for p in kept + [other]:
            al.free(p)
        assert al.leaks_summary()["records"] == 0


def test_leak_records_sampled_and_misuse():
    with nnmem.Allocator() as al:
        with pytest.raises(nnmem.NativeError) as e:  # records off
            al.leaks_report()
        assert e.value.status == "NNMEM_ERR_STATE"
        for bad, exc in ((dict(mode="all"), ValueError),
                         (dict(mode=1), TypeError),
                         (dict(depth=33), ValueError),
                         (dict(depth=1.5), TypeError),
                         (dict(seed=-1), ValueError),
                         (dict(mode="sampled", sample_bytes=0), ValueError)):
            with pytest.raises(exc):
                al.leaks_enable(**bad)
        # 1 in 4 KiB: each 64 KiB block is recorded with p = 1 - e^-16
        al.leaks_enable("sampled", sample_bytes="4KiB", seed=7)
        with pytest.raises(nnmem.NativeError) as e:
            al.leaks_enable("full")
        assert e.value.status == "NNMEM_ERR_STATE"
        blocks = [al.alloc(64 << 10) for _ in range(8)]
        s = al.leaks_summary()
        assert s["mode"] == "sampled" and s["records"] == 8
        assert abs(s["est_bytes"] - 8 * (64 << 10)) <= 8  # 1/p ~ 1 + 1e-7
        with pytest.raises(ValueError):
            al.alloc(64, 64, site="x.py:1")  # a site needs alignment 16
        with pytest.raises(ValueError):
            al.alloc(64, site="no line")
        with pytest.raises(TypeError):
            al.alloc(64, site=("x.py", "1"))
        with pytest.raises(ValueError):
            al.leaks_report("yaml")
        with pytest.raises(nnmem.NativeError):
            al.leaks_write("/nonexistent-dir/leaks.txt")
        for p in blocks:
            al.free(p)


def test_leak_records_from_the_environment(tmp_path):
    report = tmp_path / "at-exit.json"
    code = ("import nnmem\n"
            "al = nnmem.Allocator()\n"
            "p = al.alloc(123456)\n"
            "print(al.leaks_summary()['records'])\n"
            "al.close()\n")
    env = dict(os.environ, NNMEM_LEAKS="1", NNMEM_LEAKS_REPORT=str(report))
    out = subprocess.run([sys.executable, "-c", code], env=env,
                         capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "1"
    with open(report) as f:
        j = json.load(f)
    assert [(x["file"], x["line"], x["bytes"]) for x in j["sites"]] == \
        [("<string>", 3, 123456)]


# ---- record a run, plan it, serve the next (nnmem.Planned) ----------------

def _run_workload(r, rng_seed, sizes_bump=0):
    """A seeded run: per step a few temporaries and some longer-lived
    blocks; returns {address: size} of every block served, in order."""
    rng = random.Random(rng_seed)
    seen, keep = [], []
    for _ in range(60):
        tmp = [r.alloc(rng.randint(1, 9000) + sizes_bump)
               for _ in range(rng.randint(1, 4))]
        keep.append(r.alloc(rng.randint(1, 60000) + sizes_bump))
        seen += tmp + [keep[-1]]
        for p in tmp:
            r.free(p)
        while len(keep) > 5:
            r.free(keep.pop(rng.randrange(len(keep))))
        r.step()
    for p in keep:
        r.free(p)
    return seen


def test_planned_record_plan_serve(tmp_path):
    seed = f"{SEED}-planned"
    print(f"seed {seed}")
    rec_csv, plan_json = tmp_path / "rec.csv", tmp_path / "rec.plan.json"
    with nnmem.Allocator() as al:
        rec = nnmem.Planned.record(al)
        _run_workload(rec, seed)
        rec.write_csv(rec_csv)
        recorded = rec.stats()
        rec.close()
        assert (recorded["steps"], recorded["served"]) == (60, 0)
        res = nnmem.plan(rec_csv, out=plan_json)
        assert nnmem.verify(rec_csv, plan_json).valid
        run = nnmem.Planned.load(al, plan_json)
        served = _run_workload(run, seed)
        st = run.stats()
        assert st["allocs"] == recorded["allocs"] == len(served)
        assert (st["served"], st["fallback"], st["misuse"]) == \
            (len(served), 0, 0)
        assert st["height"] == res.height
        base = min(served)
        assert max(served) < base + res.height  # inside the plan's range
        # a run that diverges (every size 16 bytes larger) is served by the
        # allocator, counted, and still correct
        run.close()
        off = nnmem.Planned.load(al, plan_json)
        _run_workload(off, seed, sizes_bump=16)
        st = off.stats()
        assert st["fallback"] == st["allocs"] == st["size_diverged"]
        assert st["served"] == 0
        off.close()


def test_planned_misuse_and_bad_plans(tmp_path):
    rec_csv, plan_json = tmp_path / "r.csv", tmp_path / "r.plan.json"
    with nnmem.Allocator() as al:
        with pytest.raises(TypeError):
            nnmem.Planned.record(nnmem.Pool("tlsf"))
        rec = nnmem.Planned.record(al, auto_steps=True)
        a, b = rec.alloc(4096), rec.alloc(100)
        rec.free(a)
        rec.free(b)
        with pytest.raises(nnmem.NativeError) as e:  # recording: no plan
            rec.usable_size(a)
        assert e.value.status == "NNMEM_ERR_STATE"
        rec.write_csv(rec_csv)
        rec.close()
        with pytest.raises(ValueError, match="closed"):
            rec.alloc(1)
        nnmem.plan(rec_csv, out=plan_json)
        run = nnmem.Planned.load(al, plan_json, auto_steps=True)
        a = run.alloc(4096)
        assert run.usable_size(a) == 4096
        run.free(a)
        run.free(a)  # twice: counted, nothing else changes
        assert run.stats()["misuse"] == 1
        extra = [run.alloc(100), run.alloc(100)]  # one more than planned
        assert run.stats()["fallback"] == 1
        # the allocator closes its runs before it goes
    assert run._r is None
    with nnmem.Allocator() as al:
        (tmp_path / "bad.json").write_text('{"buffers": [')
        with pytest.raises(nnmem.NativeError) as e:
            nnmem.Planned.load(al, tmp_path / "bad.json")
        assert "bad.json" in e.value.message
        with pytest.raises(nnmem.NativeError):
            nnmem.Planned.load(al, tmp_path / "missing.json")


def test_python_example_runs(tmp_path):
    """examples/python_runtime.py: profile vs plan, record -> serve, a leak
    named by its line; it exits 1 when any of those disagrees."""
    src = Path(os.environ["NNMEM_SOURCE_DIR"]) / "examples/python_runtime.py"
    out = subprocess.run([sys.executable, str(src), str(tmp_path)],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    assert "largest deviation 0 B" in lines[1]
    assert lines[2].startswith("served: 57 of 57 requests from the plan")
    line = 1 + next(i for i, t in enumerate(src.read_text().splitlines())
                    if "cache = [al.alloc(4096)" in t)
    assert lines[3] == f"leak: 4096 B in 1 block(s) from python_runtime.py:{line}"
    assert (tmp_path / "measured.json").is_file()
