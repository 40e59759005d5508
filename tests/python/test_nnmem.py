"""The Python package (python/nnmem) against the nnmem binary of this build
(NNMEM_CLI): results equal what the CLI reports, plans pass the verifier,
limits that are missed give fits=False, bad input raises NnmemError with
the tool's message and exit code. Run by tests/cli/python.sh."""
import json
import os
import re
import subprocess
import tempfile
import unittest
from pathlib import Path

import nnmem

SRC = Path(os.environ["NNMEM_SOURCE_DIR"])
SMALL = SRC / "examples/problems/small.csv"
GAPS = SRC / "examples/problems/gaps.csv"
TINY = SRC / "examples/graphs/tiny.json"


class PlanTest(unittest.TestCase):
    def test_problem(self):
        r = nnmem.plan(SMALL, with_offsets=True)
        self.assertEqual((r.peak, r.height, r.lower_bound), (96, 96, 96))
        self.assertTrue(r.fits and r.optimal)
        self.assertEqual(r.ratio, 1.0)
        self.assertEqual(r.report["buffers"], 6)
        self.assertEqual(set(r.offsets), {"input", "conv", "skip", "pool",
                                          "fc", "out"})
        # the offsets are those of a valid plan: the verifier says so
        with tempfile.TemporaryDirectory() as d:
            out = Path(d) / "p.json"
            again = nnmem.plan(SMALL, out=out, with_offsets=True)
            self.assertEqual(again.offsets, r.offsets)  # deterministic
            v = nnmem.verify(SMALL, out)
            self.assertTrue(v.valid)
            self.assertEqual(v.report["height"], 96)

    def test_equals_cli(self):
        cli = subprocess.run([nnmem.cli_path(), "plan", str(GAPS),
                              "--json=compact"], capture_output=True,
                             text=True, check=True)
        rep = json.loads(cli.stdout)
        r = nnmem.plan(GAPS)
        for key in ("arena_height", "lower_bound", "peak_step", "buffers"):
            self.assertEqual(r.report[key], rep[key], key)

    def test_capacity(self):
        self.assertTrue(nnmem.plan(SMALL, capacity=96).fits)
        self.assertTrue(nnmem.plan(SMALL, capacity="1KiB").fits)
        r = nnmem.plan(SMALL, capacity=90)
        self.assertFalse(r.fits)
        self.assertIn("does not fit", r.message)
        self.assertEqual(r.peak, 96)  # the unconstrained plan's figure

    def test_graph_and_builtin(self):
        r = nnmem.plan(TINY, strategy="greedy-size", align=64)
        self.assertTrue(r.fits)
        self.assertEqual(r.report["alignment"], 64)
        self.assertGreaterEqual(r.height, r.lower_bound)
        m = nnmem.plan(model="resnet50")
        self.assertGreater(m.peak, m.height)  # weights + arena
        self.assertEqual(nnmem.plan().report["model"], m.report["model"])

    def test_mem_limit(self):
        r = nnmem.plan(model="resnet50", mem_limit="40MB")
        self.assertTrue(r.fits)
        self.assertLessEqual(r.peak, 40_000_000)
        self.assertGreater(r.report["transfer_bytes"], 0)  # weights streamed
        self.assertEqual(r.report["tiers"][-1]["name"], "host")
        no = nnmem.plan(model="resnet50", mem_limit="8MB")
        self.assertFalse(no.fits)
        self.assertIn("smallest device footprint", no.message)
        with self.assertRaises(nnmem.NnmemError) as cm:
            nnmem.plan(model="resnet50", mem_limit="40MB", device="no-such")
        self.assertEqual(cm.exception.exit_code, 1)

    def test_run(self):
        with tempfile.TemporaryDirectory() as d:
            out = Path(d) / "fit.json"
            self.assertTrue(nnmem.plan(model="resnet50", mem_limit="40MB",
                                       out=out).fits)
            ok = nnmem.run(out, model="resnet50")
            self.assertTrue(ok.passed)
            self.assertGreater(ok.report["checks"], 0)
            self.assertEqual(ok.report["copy_bytes"],
                             nnmem.plan(model="resnet50",
                                        mem_limit="40MB").report[
                                            "transfer_bytes"])
            bad = nnmem.run(out, model="resnet50", fail_copy=3)
            self.assertFalse(bad.passed)
            self.assertIn("fault injected", bad.report["error"])
            with self.assertRaises(nnmem.NnmemError):  # another model
                nnmem.run(out, model="mobilenetv2")

    def test_bad_input(self):
        with tempfile.TemporaryDirectory() as d:
            bad = Path(d) / "bad.csv"
            bad.write_text("id,lower,upper,size\na,5,2,8\n")
            with self.assertRaises(nnmem.NnmemError) as cm:
                nnmem.plan(bad)
            self.assertEqual(cm.exception.exit_code, 1)
            self.assertIn("bad.csv:2", cm.exception.message)
            with self.assertRaises(nnmem.NnmemError):
                nnmem.plan(Path(d) / "missing.onnx")
            with self.assertRaises(nnmem.NnmemError) as cm:
                nnmem.plan(SMALL, strategy="no-such-strategy")
            self.assertEqual(cm.exception.exit_code, 1)
        with self.assertRaises(TypeError):
            nnmem.plan(SMALL, capacity=1.5)
        with self.assertRaises(ValueError):
            nnmem.plan(SMALL, capacity=-1)
        with self.assertRaises(nnmem.NnmemError):
            nnmem.plan(SMALL, time_limit=0)


class OtherCommandsTest(unittest.TestCase):
    def test_inspect(self):
        doc = nnmem.inspect(TINY)
        self.assertEqual(doc["ops"], 3)
        self.assertEqual([t["name"] for t in doc["tensors"]][:2], ["A", "B"])

    def test_replay(self):
        res = nnmem.replay(SMALL, pool="tlsf")
        self.assertIsInstance(res, list)
        self.assertEqual(len(res), 1)

    def test_verify_invalid(self):
        with tempfile.TemporaryDirectory() as d:
            bad = Path(d) / "overlap.csv"
            bad.write_text("id,lower,upper,size,offset\n"
                           "a,0,4,8,0\nb,2,6,8,4\n")
            v = nnmem.verify(bad)
            self.assertFalse(v.valid)

    def test_version(self):
        cmake = (SRC / "CMakeLists.txt").read_text()
        want = re.search(r"project\(nnmem VERSION ([0-9.]+)", cmake).group(1)
        self.assertEqual(nnmem.__version__, want)
        self.assertIn(want, nnmem.version())


if __name__ == "__main__":
    unittest.main()
