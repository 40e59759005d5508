"""nnmem: memory planning for neural networks, from Python.

    >>> import nnmem
    >>> r = nnmem.plan("model.onnx", capacity="8MiB")
    >>> r.peak, r.fits, r.lower_bound, r.strategy

Every call runs the `nnmem` command-line tool (shipped inside this package,
or the one named by the NNMEM_CLI environment variable) with --json and
returns what it reported, so the Python API and the CLI never disagree.
Bad input raises NnmemError with the tool's message and exit code; a plan
that does not fit a limit is not an error: `fits` is False and `message`
says why.

Runtime memory (pools, the allocator) goes through the shared library
with ctypes instead: nnmem.Pool, nnmem.Allocator, and nnmem.Profiler, which
measures a run's memory_profile.json (compare it with a planned one:
nnmem.diff). See nnmem/native.py.

Thread-safety: each planner call is an independent process; calls may run from
several threads at once.
"""
import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

from ._version import __version__
from .native import (TAGS, Allocator, NativeError, Planned, Pool, Profiler,
                     library_path)

__all__ = ["plan", "inspect", "verify", "replay", "run", "version",
           "cli_path", "PlanResult", "VerifyResult", "RunResult", "NnmemError",
           "Pool", "Allocator", "Profiler", "Planned", "TAGS", "NativeError",
           "library_path", "diff", "__version__"]

PathLike = Union[str, os.PathLike]
Size = Union[int, str]

# Exit codes of the tool (nnmem --help).
EXIT_OK, EXIT_USAGE, EXIT_DOES_NOT_FIT, EXIT_INTERNAL = 0, 1, 2, 3


class NnmemError(Exception):
    """The tool refused the input or failed: `message` is its error text
    (naming file, line, node where it knows them), `exit_code` its exit
    status (1 bad usage or input, 3 internal error)."""

    def __init__(self, message: str, exit_code: int, command: Sequence[str]):
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code
        self.command = list(command)


def cli_path() -> str:
    """The nnmem executable used: $NNMEM_CLI, else the packaged one, else
    `nnmem` on PATH."""
    env = os.environ.get("NNMEM_CLI")
    if env:
        return env
    packaged = Path(__file__).resolve().parent / "_bin" / "nnmem"
    if packaged.is_file():
        return str(packaged)
    found = shutil.which("nnmem")
    if found:
        return found
    raise NnmemError("nnmem: no command-line tool found (set NNMEM_CLI, or "
                     "install the package with pip so that it builds one)",
                     EXIT_USAGE, [])


def _run(args: Sequence[str]) -> subprocess.CompletedProcess:
    cmd = [cli_path(), *args]
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, check=False)


def _fail(proc: subprocess.CompletedProcess, cmd: Sequence[str]):
    msg = proc.stderr.strip() or f"nnmem exited with status {proc.returncode}"
    raise NnmemError(msg, proc.returncode, cmd)


def _size(v: Size) -> str:
    if isinstance(v, bool) or not isinstance(v, (int, str)):
        raise TypeError(f"a size is an int (bytes) or a string like '512MB', "
                        f"not {type(v).__name__}")
    if isinstance(v, int) and v < 0:
        raise ValueError(f"a size cannot be negative: {v}")
    return str(v)


def version() -> str:
    """The version the nnmem tool reports (the C library's)."""
    cmd = ["--version"]
    proc = _run(cmd)
    if proc.returncode != 0:
        _fail(proc, cmd)
    return proc.stdout.strip()


@dataclass
class PlanResult:
    """What `nnmem plan --json` reported.

    peak         bytes the model needs (weights + arena); for a problem
                 (.csv) the arena height; with mem_limit, the peak of the
                 limited device tier (`report["tiers"]` has them all)
    height       the arena height in bytes
    lower_bound  no plan can be lower (bound_kind says why)
    fits         False when a capacity / memory limit was given and the
                 plan does not fit it (then `message` says why)
    optimal      the height equals a proven bound
    strategy     the heuristic (or search) that produced the plan
    offsets      {buffer id: byte offset} when with_offsets=True
    report       the whole JSON report (every key the CLI prints)
    """
    peak: Optional[int]
    height: Optional[int]
    lower_bound: Optional[int]
    fits: bool
    optimal: bool
    strategy: Optional[str]
    message: str = ""
    offsets: Dict[str, int] = field(default_factory=dict)
    report: Dict[str, Any] = field(default_factory=dict)

    @property
    def ratio(self) -> Optional[float]:
        """height / lower bound (1.0 = optimal)."""
        if not self.height or not self.lower_bound:
            return None
        return self.height / self.lower_bound


def _plan_args(source: PathLike, strategy: Optional[str], align: Optional[int],
               order: Optional[str], optimal: bool,
               time_limit: Optional[float], dims: Optional[Mapping[str, int]],
               model: Optional[str], extra: Sequence[str]) -> List[str]:
    args = ["plan"]
    if model is not None:
        args += ["--model", model]
    elif source is not None:
        args.append(os.fspath(source))
    if strategy:
        args += ["--strategy", strategy]
    if align is not None:
        args += ["--align", str(int(align))]
    if order:
        args += ["--order", order]
    if optimal:
        args.append("--optimal")
    if time_limit is not None:
        args += ["--time-limit", repr(float(time_limit))]
    for name, value in (dims or {}).items():
        args += ["--dim", f"{name}={value}"]
    return args + list(extra)


def plan(source: Optional[PathLike] = None, *, capacity: Optional[Size] = None,
         mem_limit: Optional[Size] = None, device: Optional[str] = None,
         strategy: Optional[str] = None, align: Optional[int] = None,
         order: Optional[str] = None, optimal: bool = False,
         time_limit: Optional[float] = None,
         dims: Optional[Mapping[str, int]] = None, model: Optional[str] = None,
         out: Optional[PathLike] = None, with_offsets: bool = False,
         extra_args: Sequence[str] = ()) -> PlanResult:
    """Plans `source` (an ONNX model, a JSON graph or a MiniMalloc CSV
    problem) or the built-in `model` ("resnet50", ...).

    capacity / mem_limit: sizes in bytes or strings ("1MiB", "512MB");
    capacity checks the arena height, mem_limit asks the planner to fit the
    model under the limit (device tiers, streaming, offload; `device` names
    a preset or a device JSON file). out: also write the plan (.json/.csv),
    all or nothing. with_offsets: return every buffer's offset.
    """
    if source is None and model is None:
        model = "resnet50"
    extra: List[str] = []
    if capacity is not None:
        extra += ["--capacity", _size(capacity)]
    if mem_limit is not None:
        extra += ["--mem-limit", _size(mem_limit)]
    if device is not None:
        extra += ["--device", os.fspath(device)]
    extra += list(extra_args)
    with tempfile.TemporaryDirectory(prefix="nnmem-py-") as tmp:
        plan_file = None
        if out is not None:
            extra += ["--out", os.fspath(out)]
            plan_file = Path(out)
        elif with_offsets:
            plan_file = Path(tmp) / "plan.json"
            extra += ["--out", str(plan_file)]
        args = _plan_args(source, strategy, align, order, optimal, time_limit,
                          dims, model, extra) + ["--json=compact"]
        proc = _run(args)
        if proc.returncode == EXIT_DOES_NOT_FIT:
            return _does_not_fit(proc, source, strategy, align, order, dims,
                                 model)
        if proc.returncode != EXIT_OK:
            _fail(proc, args)
        rep = json.loads(proc.stdout)
        offsets: Dict[str, int] = {}
        if with_offsets and plan_file is not None:
            offsets = _read_offsets(plan_file)
    return _result(rep, True, "", offsets)


def _result(rep: Dict[str, Any], fits: bool, message: str,
            offsets: Dict[str, int]) -> PlanResult:
    tiers = rep.get("tiers")
    if isinstance(tiers, list) and len(tiers) >= 2:
        # a fitted plan (mem_limit): the limit caps the main tier, the one
        # before host memory (docs/fit.md)
        main = tiers[-2]
        return PlanResult(peak=main.get("peak"), height=main.get("peak"),
                          lower_bound=rep.get("min_footprint"), fits=fits,
                          optimal=False, strategy="fit", message=message,
                          offsets=offsets, report=rep)
    return PlanResult(peak=rep.get("peak_memory"),
                      height=rep.get("arena_height"),
                      lower_bound=rep.get("arena_lower_bound",
                                          rep.get("lower_bound")),
                      fits=fits, optimal=bool(rep.get("optimal", False)),
                      strategy=rep.get("strategy_used", rep.get("strategy")),
                      message=message, offsets=offsets, report=rep)


def _does_not_fit(proc, source, strategy, align, order, dims,
                  model) -> PlanResult:
    """The limit is missed: the unconstrained plan's figures, fits=False."""
    message = proc.stderr.strip()
    args = _plan_args(source, strategy, align, order, False, None, dims, model,
                      []) + ["--json=compact"]
    again = _run(args)
    rep = json.loads(again.stdout) if again.returncode == EXIT_OK else {}
    return _result(rep, False, message, {})


def _read_offsets(path: Path) -> Dict[str, int]:
    if path.suffix == ".csv":
        import csv
        with open(path, newline="", encoding="utf-8") as f:
            return {row["id"]: int(row["offset"]) for row in csv.DictReader(f)}
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    return {b["id"]: int(b["offset"]) for b in doc.get("buffers", [])}


def inspect(source: PathLike, *, dims: Optional[Mapping[str, int]] = None,
            extra_args: Sequence[str] = ()) -> Dict[str, Any]:
    """The tensors of an ONNX model or JSON graph: kind, dtype, shape,
    bytes, lifetime (the `nnmem inspect --json` document)."""
    args = ["inspect", os.fspath(source)]
    for name, value in (dims or {}).items():
        args += ["--dim", f"{name}={value}"]
    args += list(extra_args) + ["--json=compact"]
    proc = _run(args)
    if proc.returncode != EXIT_OK:
        _fail(proc, args)
    return json.loads(proc.stdout)


@dataclass
class VerifyResult:
    """The independent verifier's verdict on a plan."""
    valid: bool
    report: Dict[str, Any]
    message: str = ""


def diff(a: PathLike, b: PathLike) -> Dict[str, Any]:
    """Compares two memory profiles (`nnmem diff A B --json`): a planned
    one (plan(..., extra_args=["--profile", path]) or `nnmem plan
    --profile`) and a measured one (Profiler.export), or any two. Returns
    {"a", "b", "keys": [{"key", "a", "b", "delta", "ratio"}...],
    "only_in_a", "only_in_b", "steps_compared", "timeline", "steps"}; a
    file that is not a profile raises NnmemError naming it and the key."""
    args = ["diff", os.fspath(a), os.fspath(b), "--json"]
    proc = _run(args)
    if proc.returncode != EXIT_OK:
        _fail(proc, args)
    return json.loads(proc.stdout)


def verify(problem: PathLike, plan_file: Optional[PathLike] = None, *,
           capacity: Optional[Size] = None,
           extra_args: Sequence[str] = ()) -> VerifyResult:
    """Checks a plan: `problem` with its plan (.json/.csv from plan(out=)),
    or a CSV problem carrying an offset column. An invalid plan is a
    result (valid=False), bad input an NnmemError."""
    args = ["verify", os.fspath(problem)]
    if plan_file is not None:
        args.append(os.fspath(plan_file))
    if capacity is not None:
        args += ["--capacity", _size(capacity)]
    args += list(extra_args) + ["--json=compact"]
    proc = _run(args)
    if proc.returncode == EXIT_USAGE or not proc.stdout.strip():
        _fail(proc, args)
    rep = json.loads(proc.stdout)
    return VerifyResult(valid=bool(rep.get("valid")), report=rep,
                        message=proc.stderr.strip())


def replay(trace: PathLike, *, pool: str = "tlsf",
           extra_args: Sequence[str] = ()) -> List[Dict[str, Any]]:
    """Replays a buffer trace through a memory pool (`pool`="all" for
    every kind) on the simulated device: a list of per-pool results."""
    args = ["replay", os.fspath(trace), "--pool", pool, *extra_args,
            "--json=compact"]
    proc = _run(args)
    if proc.returncode != EXIT_OK:
        _fail(proc, args)
    return json.loads(proc.stdout)


@dataclass
class RunResult:
    """What `nnmem run` reported: `passed`, and in `report` the steps,
    writes, checks, bytes compared, copies (and `error` when it failed)."""
    passed: bool
    report: Dict[str, Any]
    message: str = ""


def run(plan_file: PathLike, source: Optional[PathLike] = None, *,
        model: Optional[str] = None, dims: Optional[Mapping[str, int]] = None,
        fail_alloc: Optional[int] = None, fail_copy: Optional[int] = None,
        extra_args: Sequence[str] = ()) -> RunResult:
    """Executes a fitted plan (plan(..., mem_limit=..., out="p.json")) on
    the simulated device with real bytes, checking every tensor; `source`
    or the built-in `model` is the model it must match. A failed run
    (mismatch, injected fault) is a result (passed=False); a refused plan
    or bad input raises NnmemError."""
    args = ["run", os.fspath(plan_file)]
    if source is not None:
        args.append(os.fspath(source))
    if model is not None:
        args += ["--model", model]
    for name, value in (dims or {}).items():
        args += ["--dim", f"{name}={value}"]
    if fail_alloc is not None:
        args += ["--fail-alloc", str(int(fail_alloc))]
    if fail_copy is not None:
        args += ["--fail-copy", str(int(fail_copy))]
    args += list(extra_args) + ["--json=compact"]
    proc = _run(args)
    if proc.returncode not in (EXIT_OK, EXIT_INTERNAL) or not proc.stdout.strip():
        _fail(proc, args)
    rep = json.loads(proc.stdout)
    return RunResult(passed=bool(rep.get("passed")), report=rep,
                     message=proc.stderr.strip())
