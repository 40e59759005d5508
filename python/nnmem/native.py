"""Runtime memory from Python: nnmem's pools and allocator, the run-time
profiler and leak records, through the shared library (libnnmem.so) with
ctypes.

    >>> import nnmem
    >>> with nnmem.Pool("tlsf", capacity="64MiB") as pool:
    ...     a = pool.alloc(1 << 20)          # an address (int), 1 MiB
    ...     pool.free(a)
    ...     pool.stats()["allocations_total"]
    1

Why ctypes and not an extension module: the library already has a C ABI
made for other languages (opaque handles, status codes, a diag buffer,
versioned config structs whose `size` field lets an older caller pass a
shorter struct), so a binding needs no compiler at install time and
cannot fall out of step with the C side in a way a test would not see:
the struct mirrors below are checked against the sizes the library itself
reports at load time. The planner side of the package (plan, inspect,
verify) runs the CLI instead, which is where its reports are made.

The library is found as: $NNMEM_LIBRARY; the one shipped in this package
(nnmem/_lib); libnnmem.so next to the CLI in use (a build folder); the
system's (ctypes.util.find_library). Every call checks its arguments in
Python first (TypeError / ValueError), and a status from the library
becomes NativeError carrying its symbolic name and message, so no call
can crash the interpreter on a bad argument. Addresses are plain ints:
memory on a simulated device is not host memory and must never be
dereferenced; host pools' addresses may be wrapped with ctypes
(ctypes.c_char * n).from_address(addr) by a caller who knows the size.

Thread-safety: a Pool is not synchronized unless created with
thread_safe=True; an Allocator may be used from any thread. Closing an
object (or leaving its `with` block) frees everything it holds; using it
afterwards raises ValueError.
"""
import ctypes
import ctypes.util
import json
import os
import shutil
import sys
import weakref
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Dict, Iterator, Optional, Union

__all__ = ["Pool", "Allocator", "Profiler", "Planned", "NativeError",
           "library_path", "POOL_KINDS", "TAGS"]

Size = Union[int, str]

# the profiler's tags (nnmem_tag_t), in the library's order
TAGS = ("activation", "weight", "workspace")

POOL_KINDS = ("tiered", "tlsf", "best-fit", "first-fit", "buddy", "slab",
              "fixed", "shape")

_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kib": 1 << 10, "m": 1 << 20,
          "mib": 1 << 20, "g": 1 << 30, "gib": 1 << 30, "t": 1 << 40,
          "tib": 1 << 40, "kb": 10**3, "mb": 10**6, "gb": 10**9,
          "tb": 10**12}


class NativeError(Exception):
    """A status from libnnmem: `status` is its symbolic name
    ("NNMEM_ERR_NOMEM"), `message` the library's text for it (and the
    diag, naming the field, where the call fills one)."""

    def __init__(self, status: str, message: str):
        super().__init__(f"{message} ({status})")
        self.status = status
        self.message = message


def _bytes(v: Optional[Size], what: str, allow_zero: bool = True) -> int:
    """An int, or a string with a unit as the CLI takes it ("64MiB")."""
    if v is None:
        return 0
    if isinstance(v, bool) or not isinstance(v, (int, str)):
        raise TypeError(f"{what}: expected an int or a size string, "
                        f"got {type(v).__name__}")
    if isinstance(v, str):
        s = v.strip()
        i = len(s)
        while i and not s[i - 1].isdigit():
            i -= 1
        unit = s[i:].strip().lower()
        if not s[:i].isdigit() or unit not in _UNITS:
            raise ValueError(f"{what}: bad size {v!r} (e.g. 4096, 64KiB, "
                             "512MB)")
        v = int(s[:i]) * _UNITS[unit]
    if v < 0 or (v == 0 and not allow_zero) or v >= 1 << 63:
        raise ValueError(f"{what}: {v} is out of range")
    return v


# ---- the C structs (include/nnmem/*.h), mirrored ----------------------

_u32, _u64, _int = ctypes.c_uint32, ctypes.c_uint64, ctypes.c_int


class _PoolConfig(ctypes.Structure):  # nnmem_pool_config_t
    _fields_ = [("size", _u32), ("name", ctypes.c_char_p),
                ("alignment", _u64), ("capacity", _u64),
                ("chunk_size", _u64), ("block_size", _u64),
                ("low_watermark", _u64), ("split_threshold", _u64),
                ("small_max", _u64), ("large_min", _u64),
                ("middle", _int), ("retain_empty", _int),
                ("thread_safe", _int), ("latency_sample", _u32),
                ("replenish", _int), ("replenish_percent", _u32),
                ("replenish_submit", ctypes.c_void_p),
                ("replenish_user", ctypes.c_void_p),
                ("keep_empty", _u32)]


class _SimConfig(ctypes.Structure):  # nnmem_sim_config_t
    _fields_ = [("size", _u32), ("capacity", _u64), ("alignment", _u64),
                ("backed", _int), ("fail_at", _u64), ("fail_after", _int),
                ("address_base", _u64)]


class _AllocatorConfig(ctypes.Structure):  # nnmem_allocator_config_t
    _fields_ = [("size", _u32), ("backend", ctypes.c_void_p),
                ("no_thread_cache", _int), ("small_max", _u64),
                ("large_min", _u64), ("leaks", ctypes.c_void_p),
                ("keep_empty", _u32), ("latency_sample", _u32)]


class _PlannedConfig(ctypes.Structure):  # nnmem_planned_config_t
    _fields_ = [("size", _u32), ("auto_steps", _int),
                ("base", ctypes.c_void_p)]


class _PlannedStats(ctypes.Structure):  # nnmem_planned_stats_t
    _fields_ = ([("size", _u32)] +
                [(n, _u64) for n in ("steps", "allocs", "served", "fallback",
                                     "size_diverged", "order_diverged",
                                     "overstayed", "misuse")] +
                [("disabled", _int), ("height", _u64)])


class _LeaksConfig(ctypes.Structure):  # nnmem_leaks_config_t
    _fields_ = [("size", _u32), ("mode", _int), ("sample_bytes", _u64),
                ("depth", _u32), ("seed", _u64),
                ("report_path", ctypes.c_char_p), ("report_format", _int)]


class _LeaksSummary(ctypes.Structure):  # nnmem_leaks_summary_t
    _fields_ = [("size", _u32), ("mode", _int)] + [
        (n, _u64) for n in ("records", "bytes", "est_blocks", "est_bytes",
                            "sites")]


LEAKS_MODES = ("off", "full", "sampled")      # nnmem_leaks_mode_t
LEAKS_FORMATS = ("text", "json", "folded")    # nnmem_leaks_format_t
_LEAKS_MAX_DEPTH = 32

_STATS_LAT_BUCKETS = 32


class _Stats(ctypes.Structure):  # nnmem_stats_t
    _fields_ = ([("size", _u32), ("version", _u32),
                 ("name", ctypes.c_char * 48)] +
                [(n, _u64) for n in (
                    "requested_bytes", "requested_bytes_peak",
                    "allocated_bytes", "allocated_bytes_peak",
                    "reserved_bytes", "reserved_bytes_peak", "alloc_count",
                    "free_count", "failed_count", "misuse_count",
                    "live_count", "backend_allocs", "backend_frees",
                    "free_bytes", "largest_free")] +
                [("fragmentation", ctypes.c_double)] +
                [(n, _u64) for n in (
                    "cache_hits", "cache_misses", "lock_acquisitions",
                    "lock_contended", "latency_samples")] +
                [("latency_hist", _u64 * _STATS_LAT_BUCKETS)] +
                [(n, _u64) for n in (
                    "latency_sum_ns", "refills", "refill_failures",
                    "empty_hits", "remote_frees", "remote_allocs",
                    "bad_node_requests", "compactions",
                    "compactions_latency", "quarantine_bytes",
                    "quarantine_blocks", "quarantine_writes")])


class _Diag(ctypes.Structure):  # nnmem_diag_t
    _fields_ = [("message", ctypes.c_char * 512)]


# ---- loading -----------------------------------------------------------

def library_path() -> str:
    """The libnnmem shared library this module loads (see the module
    docstring for the search order). Raises NativeError when none."""
    env = os.environ.get("NNMEM_LIBRARY")
    if env:
        return env
    here = Path(__file__).resolve().parent / "_lib"
    for name in ("libnnmem.so", "libnnmem.so.0", "libnnmem.dylib"):
        if (here / name).is_file():
            return str(here / name)
    cli = os.environ.get("NNMEM_CLI") or shutil.which("nnmem")
    if cli:
        beside = Path(cli).resolve().parent / "libnnmem.so"
        if beside.is_file():
            return str(beside)
    found = ctypes.util.find_library("nnmem")
    if found:
        return found
    raise NativeError("NNMEM_ERR_NOT_FOUND",
                      "no libnnmem shared library: set NNMEM_LIBRARY, or "
                      "install the package with pip (it ships one)")


_lib = None
_libc_free = None
_PROBE_BYTES = 1 << 16


def _load() -> ctypes.CDLL:
    global _lib
    if _lib is not None:
        return _lib
    path = library_path()
    try:
        lib = ctypes.CDLL(path)
    except OSError as e:
        raise NativeError("NNMEM_ERR_NOT_FOUND",
                          f"cannot load {path}: {e}") from None
    vp, st = ctypes.c_void_p, ctypes.c_int
    sigs = {
        "nnmem_status_name": (ctypes.c_char_p, [st]),
        "nnmem_status_str": (ctypes.c_char_p, [st]),
        "nnmem_stats_init": (None, [ctypes.c_void_p]),
        "nnmem_stats_format_json": (st, [ctypes.POINTER(_Stats),
                                         ctypes.c_size_t, ctypes.c_char_p,
                                         ctypes.c_size_t,
                                         ctypes.POINTER(ctypes.c_size_t)]),
        "nnmem_pool_config_init": (None, [ctypes.c_void_p]),
        "nnmem_pool_kind_parse": (st, [ctypes.c_char_p,
                                       ctypes.POINTER(ctypes.c_int)]),
        "nnmem_pool_create_diag": (st, [ctypes.c_int,
                                        ctypes.POINTER(_PoolConfig), vp,
                                        ctypes.POINTER(vp),
                                        ctypes.POINTER(_Diag)]),
        "nnmem_pool_destroy": (None, [vp]),
        "nnmem_pool_alloc": (st, [vp, _u64, _u64, ctypes.POINTER(vp)]),
        "nnmem_pool_free": (st, [vp, vp]),
        "nnmem_pool_usable_size": (st, [vp, vp, ctypes.POINTER(_u64)]),
        "nnmem_pool_check": (st, [vp, ctypes.POINTER(_Diag)]),
        "nnmem_pool_stats": (st, [vp, ctypes.POINTER(_Stats)]),
        "nnmem_backend_host_create": (st, [ctypes.POINTER(vp)]),
        "nnmem_backend_sim_create": (st, [ctypes.POINTER(_SimConfig),
                                          ctypes.POINTER(vp)]),
        "nnmem_backend_destroy": (None, [vp]),
        "nnmem_backend_mem_info": (st, [vp, ctypes.POINTER(_u64),
                                        ctypes.POINTER(_u64)]),
        "nnmem_allocator_config_init": (None, [ctypes.c_void_p]),
        "nnmem_allocator_create": (st, [ctypes.POINTER(_AllocatorConfig),
                                        ctypes.POINTER(vp)]),
        "nnmem_allocator_destroy": (None, [vp]),
        "nnmem_alloc_aligned": (vp, [vp, ctypes.c_size_t, ctypes.c_size_t]),
        "nnmem_allocator_free": (st, [vp, vp]),
        "nnmem_allocator_stats": (st, [vp, ctypes.POINTER(_Stats)]),
        "nnmem_leaks_config_init": (None, [ctypes.c_void_p]),
        "nnmem_allocator_leaks_enable": (st, [vp,
                                              ctypes.POINTER(_LeaksConfig)]),
        "nnmem_allocator_leaks_report": (st, [vp, ctypes.c_int,
                                              ctypes.POINTER(vp),
                                              ctypes.POINTER(ctypes.c_size_t)]),
        "nnmem_allocator_leaks_write": (st, [vp, ctypes.c_int,
                                             ctypes.c_char_p]),
        "nnmem_allocator_leaks_summary": (st, [vp, ctypes.c_void_p]),
        "nnmem_alloc_at": (vp, [vp, ctypes.c_size_t, ctypes.c_char_p,
                                ctypes.c_int]),
        "nnmem_planned_config_init": (None, [ctypes.c_void_p]),
        "nnmem_planned_record": (st, [vp, ctypes.POINTER(_PlannedConfig),
                                      ctypes.POINTER(vp)]),
        "nnmem_planned_load": (st, [vp, ctypes.c_char_p,
                                    ctypes.POINTER(_PlannedConfig),
                                    ctypes.POINTER(vp),
                                    ctypes.POINTER(_Diag)]),
        "nnmem_planned_destroy": (None, [vp]),
        "nnmem_planned_alloc": (vp, [vp, ctypes.c_size_t]),
        "nnmem_planned_free": (None, [vp, vp]),
        "nnmem_step": (None, [vp]),
        "nnmem_planned_usable_size": (st, [vp, vp,
                                           ctypes.POINTER(ctypes.c_size_t)]),
        "nnmem_planned_write_csv": (st, [vp, ctypes.c_char_p,
                                         ctypes.POINTER(_Diag)]),
        "nnmem_planned_stats": (st, [vp, ctypes.c_void_p]),
        "nnmem_profiler_start_pool": (st, [vp, ctypes.POINTER(vp)]),
        "nnmem_profiler_start_allocator": (st, [vp, ctypes.POINTER(vp)]),
        "nnmem_profiler_stop": (st, [vp]),
        "nnmem_profiler_destroy": (None, [vp]),
        "nnmem_profiler_tag": (ctypes.c_int, [vp, ctypes.c_int]),
        "nnmem_profiler_step": (None, [vp]),
        "nnmem_profiler_record_alloc": (st, [vp, vp, _u64, ctypes.c_int]),
        "nnmem_profiler_record_free": (st, [vp, vp]),
        # the text is the library's malloc: freed below with the process's
        # free (the one libnnmem itself calls), so it is a void pointer
        "nnmem_profiler_format_json": (st, [vp, ctypes.POINTER(vp)]),
        "nnmem_profiler_export": (st, [vp, ctypes.c_char_p,
                                       ctypes.POINTER(_Diag)]),
    }
    for name, (res, args) in sigs.items():
        try:
            fn = getattr(lib, name)
        except AttributeError:
            raise NativeError("NNMEM_ERR_UNSUPPORTED",
                              f"{path} has no {name} (an older "
                              "libnnmem?)") from None
        fn.restype, fn.argtypes = res, args
    # The mirrors against the library's own sizes, probed in a scratch
    # buffer (an *_init writes the whole C struct: never into a mirror that
    # may be shorter). nnmem_stats_t is written whole by the stats calls,
    # so its mirror must match exactly; the config structs are read only
    # as far as their `size` field, so a mirror may be shorter (an older
    # layout, later fields at their defaults), never longer.
    scratch = ctypes.create_string_buffer(_PROBE_BYTES)
    for init, mirror in (("nnmem_stats_init", _Stats),
                         ("nnmem_pool_config_init", _PoolConfig),
                         ("nnmem_allocator_config_init", _AllocatorConfig),
                         ("nnmem_leaks_config_init", _LeaksConfig),
                         ("nnmem_planned_config_init", _PlannedConfig)):
        ctypes.memset(scratch, 0, _PROBE_BYTES)
        getattr(lib, init)(scratch)
        size = ctypes.c_uint32.from_buffer(scratch).value
        want = ctypes.sizeof(mirror)
        if (size != want if mirror is _Stats else size < want) or \
                size > _PROBE_BYTES // 2:
            raise NativeError("NNMEM_ERR_UNSUPPORTED",
                              f"{path}: {init} reports {size} bytes, this "
                              f"package's mirror is {want} (a libnnmem of "
                              "another version?)")
    global _libc_free
    _libc_free = ctypes.CDLL(None).free
    _libc_free.restype, _libc_free.argtypes = None, [vp]
    _lib = lib
    return lib


def _check(st: int, diag: Optional[_Diag] = None, what: str = "") -> None:
    if st == 0:
        return
    lib = _load()
    name = (lib.nnmem_status_name(st) or b"NNMEM_ERR_?").decode()
    text = (lib.nnmem_status_str(st) or b"").decode()
    if diag is not None and diag.message:
        text = diag.message.decode(errors="replace")
    raise NativeError(name, f"{what}: {text}" if what else text)


def _stats_dict(st: _Stats) -> Dict[str, Any]:
    lib = _load()
    need = ctypes.c_size_t(0)
    lib.nnmem_stats_format_json(ctypes.byref(st), 1, None, 0,
                                ctypes.byref(need))
    buf = ctypes.create_string_buffer(need.value + 1)
    _check(lib.nnmem_stats_format_json(ctypes.byref(st), 1, buf,
                                       len(buf), ctypes.byref(need)),
           what="stats")
    return json.loads(buf.value.decode())[0]


def _address(ptr: Any, what: str) -> int:
    if isinstance(ptr, bool) or not isinstance(ptr, int):
        raise TypeError(f"{what}: expected an address (int), got "
                        f"{type(ptr).__name__}")
    if ptr <= 0 or ptr >= 1 << 64:
        raise ValueError(f"{what}: {ptr:#x} is not an address")
    return ptr


def _align(align: int) -> int:
    if isinstance(align, bool) or not isinstance(align, int):
        raise TypeError(f"align: expected an int, got {type(align).__name__}")
    if align < 0 or (align & (align - 1)):
        raise ValueError(f"align: {align} is not 0 or a power of two")
    return align


class _Closable:
    """close() frees the object's memory; `with` closes it at the end of
    the block and the collector when the object is dropped."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass


def _struct_of(fn, handle, mirror, what: str, check: bool = True):
    """What an nnmem_*(handle, &out) call that writes its whole struct
    (size field first) fills: the call writes into a scratch buffer, and
    the mirror is read from it when the library's size equals the
    mirror's. (status, struct): with check, a status raises."""
    scratch = ctypes.create_string_buffer(_PROBE_BYTES // 16)
    st = fn(handle, scratch)
    if check:
        _check(st, what=what)
    elif st != 0:
        return st, None
    out = mirror.from_buffer_copy(scratch.raw[:ctypes.sizeof(mirror)])
    if out.size != ctypes.sizeof(mirror):
        raise NativeError("NNMEM_ERR_UNSUPPORTED",
                          f"{what}: the library's struct is {out.size} "
                          f"bytes, this package's mirror "
                          f"{ctypes.sizeof(mirror)} (a libnnmem of another "
                          "version?)")
    return st, out


def _stats_of(fn, handle) -> Dict[str, Any]:
    """The statistics an nnmem_*_stats function fills, as a dict."""
    st = _Stats()
    _load().nnmem_stats_init(ctypes.byref(st))
    _check(fn(handle, ctypes.byref(st)), what="stats")
    return _stats_dict(st)


class Pool(_Closable):
    """One nnmem pool (fixed, tlsf, best-fit, first-fit, buddy, slab,
    tiered, shape) on its own backend: host memory (`device=None`) or a
    simulated device of `device` bytes (addresses only, not host memory;
    `device_alignment` 64-512). `capacity` caps the pool's reserved bytes;
    `block_size` is required for "fixed"; other knobs are those of
    nnmem_pool_config_t (include/nnmem/pool.h)."""

    def __init__(self, kind: str = "tiered", *, capacity: Optional[Size] = None,
                 device: Optional[Size] = None, device_alignment: int = 0,
                 alignment: int = 0, chunk_size: Optional[Size] = None,
                 block_size: Optional[Size] = None, thread_safe: bool = False,
                 name: Optional[str] = None):
        if not isinstance(kind, str):
            raise TypeError(f"kind: expected a str, got {type(kind).__name__}")
        if name is not None and not isinstance(name, str):
            raise TypeError("name: expected a str")
        lib = _load()
        k = ctypes.c_int(0)
        if lib.nnmem_pool_kind_parse(kind.encode(), ctypes.byref(k)) != 0:
            raise ValueError(f"kind: unknown pool kind {kind!r} (expected one "
                             f"of {', '.join(POOL_KINDS)})")
        cfg = _PoolConfig()  # zeroed: every field at its default
        cfg.size = ctypes.sizeof(_PoolConfig)
        self._name = name.encode() if name else None
        cfg.name = self._name
        cfg.alignment = _align(alignment)
        cfg.capacity = _bytes(capacity, "capacity")
        cfg.chunk_size = _bytes(chunk_size, "chunk_size")
        cfg.block_size = _bytes(block_size, "block_size")
        cfg.thread_safe = 1 if thread_safe else 0
        self._pool = self._backend = None
        self.kind = kind
        self.host = device is None
        be = ctypes.c_void_p()
        if device is None:
            _check(lib.nnmem_backend_host_create(ctypes.byref(be)),
                   what="host backend")
        else:
            sim = _SimConfig(size=ctypes.sizeof(_SimConfig),
                             capacity=_bytes(device, "device", False),
                             alignment=_align(device_alignment))
            _check(lib.nnmem_backend_sim_create(ctypes.byref(sim),
                                                ctypes.byref(be)),
                   what="simulated device")
        self._backend = be
        pool, diag = ctypes.c_void_p(), _Diag()
        st = lib.nnmem_pool_create_diag(k.value, ctypes.byref(cfg), be,
                                        ctypes.byref(pool), ctypes.byref(diag))
        if st != 0:
            lib.nnmem_backend_destroy(be)
            self._backend = None
            _check(st, diag, f"{kind} pool")
        self._pool = pool

    def _p(self) -> ctypes.c_void_p:
        if self._pool is None:
            raise ValueError("the pool is closed")
        return self._pool

    def alloc(self, size: Size, align: int = 0) -> int:
        """A block of `size` bytes (aligned to `align`, 0: the pool's);
        its address. NativeError NNMEM_ERR_NOMEM when the pool or the
        device is full."""
        n = _bytes(size, "size", allow_zero=False)
        out = ctypes.c_void_p()
        _check(_load().nnmem_pool_alloc(self._p(), n, _align(align),
                                        ctypes.byref(out)),
               what=f"alloc {n} bytes")
        return out.value

    def free(self, addr: int) -> None:
        """Frees a block. NativeError NNMEM_ERR_INVALID for a double free
        or an address the pool did not hand out (nothing changes)."""
        _check(_load().nnmem_pool_free(self._p(), _address(addr, "free")),
               what=f"free {addr:#x}")

    def usable_size(self, addr: int) -> int:
        out = _u64()
        _check(_load().nnmem_pool_usable_size(
            self._p(), _address(addr, "usable_size"), ctypes.byref(out)),
            what=f"usable_size {addr:#x}")
        return out.value

    def check(self) -> None:
        """Walks the pool's invariants; NativeError naming the first one
        broken."""
        diag = _Diag()
        _check(_load().nnmem_pool_check(self._p(), ctypes.byref(diag)),
               diag, "check")

    def stats(self) -> Dict[str, Any]:
        """The pool's statistics, with the keys of `nnmem replay --json`
        (allocations_total, live_blocks, reserved_bytes_peak, fragmentation,
        latency_p99_ns, ...)."""
        return _stats_of(_load().nnmem_pool_stats, self._p())

    def close(self) -> None:
        """Frees every block and the pool's memory (a profiler watching it
        is stopped first: its figures stay). Idempotent."""
        lib = _load()
        _stop_watchers(self)
        if self._pool is not None:
            lib.nnmem_pool_destroy(self._pool)
            self._pool = None
        if self._backend is not None:
            lib.nnmem_backend_destroy(self._backend)
            self._backend = None


class Allocator(_Closable):
    """nnmem's general-purpose allocator (thread caches over a tiered pool,
    host memory): what libnnmem_malloc.so serves malloc with.

    Leak records (include/nnmem/leaks.h): leaks_enable("full" | "sampled")
    records the live blocks allocated from then on; while records are on,
    alloc() gives the Python caller's file:line as the block's site (or
    `site=` names one), so leaks_report() groups the live blocks by the
    Python lines that allocated them. NNMEM_LEAKS in the environment turns
    records on at creation, as for a C program."""

    def __init__(self, *, thread_cache: bool = True):
        lib = _load()
        cfg = _AllocatorConfig()  # zeroed: every field at its default
        cfg.size = ctypes.sizeof(_AllocatorConfig)
        cfg.no_thread_cache = 0 if thread_cache else 1
        a = ctypes.c_void_p()
        self._a = None
        # site file names handed to the library, which keeps the pointers
        # in its records: they live as long as the allocator
        self._files: Dict[str, bytes] = {}
        self._leaks_on = False
        _check(lib.nnmem_allocator_create(ctypes.byref(cfg), ctypes.byref(a)),
               what="allocator")
        self._a = a
        st, _ = _struct_of(lib.nnmem_allocator_leaks_summary, a,
                           _LeaksSummary, "leaks", check=False)
        self._leaks_on = st == 0  # on from NNMEM_LEAKS

    def _h(self) -> ctypes.c_void_p:
        if self._a is None:
            raise ValueError("the allocator is closed")
        return self._a

    def alloc(self, size: Size, align: int = 16, *,
              site: Optional[Union[str, tuple]] = None) -> int:
        """A block of `size` bytes aligned to `align`. While leak records
        are on, a block of the default alignment (16) records `site`
        ("file:line" or (file, line)), by default the caller's line."""
        n = _bytes(size, "size", allow_zero=False)
        if _align(align) == 0:
            align = 16
        lib = _load()
        if site is not None or (self._leaks_on and align <= 16):
            file, line = self._site(site)
            if align > 16:
                raise ValueError("site: only blocks of the default "
                                 "alignment (16) record a site")
            p = lib.nnmem_alloc_at(self._h(), n, file, line)
        else:
            p = lib.nnmem_alloc_aligned(self._h(), n, align)
        if not p:
            raise NativeError("NNMEM_ERR_NOMEM",
                              f"alloc {n} bytes: out of memory")
        return p

    def free(self, addr: int) -> None:
        """NativeError NNMEM_ERR_INVALID for a pointer the allocator does
        not own or a detected double free (nothing changes)."""
        _check(_load().nnmem_allocator_free(self._h(), _address(addr, "free")),
               what=f"free {addr:#x}")

    def _site(self, site) -> "tuple[bytes, int]":
        if site is None:  # the caller of alloc()
            f = sys._getframe(2)
            file, line = f.f_code.co_filename, f.f_lineno
        elif isinstance(site, str):
            file, sep, ln = site.rpartition(":")
            if not sep or not file or not ln.isdigit():
                raise ValueError(f"site: expected 'file:line', got {site!r}")
            line = int(ln)
        elif (isinstance(site, tuple) and len(site) == 2 and
              isinstance(site[0], str) and isinstance(site[1], int) and
              not isinstance(site[1], bool)):
            file, line = site
        else:
            raise TypeError("site: expected 'file:line' or (file, line)")
        if not 0 <= line < 1 << 31 or "\0" in file:
            raise ValueError(f"site: bad file or line in {site!r}")
        b = self._files.get(file)
        if b is None:
            b = self._files[file] = file.encode(errors="replace")
        return b, line

    def leaks_enable(self, mode: str = "full", *,
                     sample_bytes: Optional[Size] = None,
                     depth: Optional[int] = None, seed: int = 0) -> None:
        """Starts leak records: "full" (every live block) or "sampled" (1
        in `sample_bytes` bytes, default the library's, 512 KiB; the
        report's figures are then unbiased estimates). `depth` backtrace
        frames (0-32, default the library's, 16; 0: sites by file:line
        only). NativeError NNMEM_ERR_STATE when already on."""
        if not isinstance(mode, str):
            raise TypeError("mode: expected a str")
        if mode not in LEAKS_MODES[1:]:
            raise ValueError(f"mode: expected 'full' or 'sampled', got "
                             f"{mode!r}")
        if depth is not None and (isinstance(depth, bool) or
                                  not isinstance(depth, int)):
            raise TypeError("depth: expected an int")
        if depth is not None and not 0 <= depth <= _LEAKS_MAX_DEPTH:
            raise ValueError(f"depth: {depth} is not in 0..{_LEAKS_MAX_DEPTH}")
        if isinstance(seed, bool) or not isinstance(seed, int) or \
                not 0 <= seed < 1 << 64:
            raise ValueError("seed: expected an int in 0..2^64-1")
        lib = _load()
        # the library's defaults, written by its *_init into a scratch
        # buffer (never into a mirror: it may be shorter) and read back;
        # the library then reads `size` bytes of the mirror
        scratch = ctypes.create_string_buffer(_PROBE_BYTES // 16)
        lib.nnmem_leaks_config_init(scratch)
        cfg = _LeaksConfig.from_buffer_copy(
            scratch.raw[:ctypes.sizeof(_LeaksConfig)])
        cfg.size = ctypes.sizeof(_LeaksConfig)
        cfg.mode = LEAKS_MODES.index(mode)
        if sample_bytes is not None:
            cfg.sample_bytes = _bytes(sample_bytes, "sample_bytes", False)
        if depth is not None:
            cfg.depth = depth
        cfg.seed = seed
        cfg.report_path = None  # reports: leaks_write
        _check(lib.nnmem_allocator_leaks_enable(self._h(), ctypes.byref(cfg)),
               what="leaks_enable")
        self._leaks_on = True

    def leaks_report(self, format: str = "text") -> Union[str, Dict[str, Any]]:
        """The live records grouped by site, largest first: "text" (a
        str), "json" (a dict: mode, sample_bytes, sites, ...) or "folded"
        (flamegraph.pl / speedscope input). NativeError NNMEM_ERR_STATE
        when records are off."""
        fmt = self._leaks_format(format)
        lib = _load()
        out, n = ctypes.c_void_p(), ctypes.c_size_t()
        _check(lib.nnmem_allocator_leaks_report(self._h(), fmt,
                                                ctypes.byref(out),
                                                ctypes.byref(n)),
               what="leaks_report")
        try:
            text = ctypes.string_at(out.value, n.value).decode(
                errors="replace")
        finally:
            _libc_free(out)
        return json.loads(text) if format == "json" else text

    def leaks_write(self, path: Union[str, "os.PathLike[str]"],
                    format: Optional[str] = None) -> None:
        """Writes the report to `path` atomically; the format from the
        suffix when not given (.json, .folded, else text)."""
        p = os.fspath(path)
        if format is None:
            format = "json" if p.endswith(".json") else \
                "folded" if p.endswith(".folded") else "text"
        _check(_load().nnmem_allocator_leaks_write(
            self._h(), self._leaks_format(format), os.fsencode(p)),
            what=f"leaks_write {p}")

    def leaks_summary(self) -> Dict[str, Any]:
        """{"mode", "records", "bytes", "est_blocks", "est_bytes",
        "sites"}; NativeError NNMEM_ERR_STATE when records are off."""
        _, s = _struct_of(_load().nnmem_allocator_leaks_summary, self._h(),
                          _LeaksSummary, "leaks_summary")
        d = {n: getattr(s, n) for n in ("records", "bytes", "est_blocks",
                                        "est_bytes", "sites")}
        d["mode"] = LEAKS_MODES[s.mode] if 0 <= s.mode < 3 else str(s.mode)
        return d

    @staticmethod
    def _leaks_format(format: str) -> int:
        if not isinstance(format, str):
            raise TypeError("format: expected a str")
        if format not in LEAKS_FORMATS:
            raise ValueError(f"format: expected one of "
                             f"{', '.join(LEAKS_FORMATS)}, got {format!r}")
        return LEAKS_FORMATS.index(format)

    def stats(self) -> Dict[str, Any]:
        return _stats_of(_load().nnmem_allocator_stats, self._h())

    def close(self) -> None:
        """Frees the allocator's memory (a profiler watching it is stopped
        first: its figures stay). Idempotent."""
        _stop_watchers(self)
        if self._a is not None:
            _load().nnmem_allocator_destroy(self._a)
            self._a = None


# ---- the run-time profiler (include/nnmem/profiler.h) ------------------

# profilers (and plan-backed runs) by the object they use: a pool or
# allocator detaches them before it frees itself (a profiler stops, a
# plan-backed run closes), so none ever touches a freed object
_watchers: "weakref.WeakKeyDictionary[Any, weakref.WeakSet]" = \
    weakref.WeakKeyDictionary()


def _stop_watchers(obj: Any) -> None:
    for pr in list(_watchers.get(obj, ())):
        pr._detach()


def _tag_index(tag: str) -> int:
    if not isinstance(tag, str):
        raise TypeError(f"tag: expected a str, got {type(tag).__name__}")
    if tag not in TAGS:
        raise ValueError(f"tag: unknown tag {tag!r} (expected one of "
                         f"{', '.join(TAGS)})")
    return TAGS.index(tag)


class Profiler(_Closable):
    """The run-time memory profiler over a Pool or an Allocator: what a run
    really used, in the keys of the planner's memory_profile.json, so a
    planned and a measured profile compare (nnmem.diff).

        >>> with nnmem.Pool("tlsf", device="1GiB") as pool:
        ...     pr = nnmem.Profiler(pool).start()
        ...     with pr.tagged("weight"):
        ...         w = pool.alloc("64MiB")
        ...     x = pool.alloc("8MiB"); pr.step(); pool.free(x)
        ...     pr.stop(); pr.export("memory_profile.json")
        ...     pr.result()["weight_memory"]
        67108864

    start() begins watching (blocks allocated before it are not seen);
    stop() ends it, the figures stay: result() (a dict: peak_memory,
    weight/activation/workspace_memory at the peak, arena_height,
    reuse_ratio, steps, timeline, pools = the watched object's stats),
    export(path) (written atomically). `with Profiler(obj) as pr:` starts
    and stops. One profiler watches an object at a time (a second start is
    NativeError NNMEM_ERR_STATE). Tags are per thread, as in the library.
    Closing the watched object stops its profiler first."""

    def __init__(self, target: Union["Pool", "Allocator"]):
        if not isinstance(target, (Pool, Allocator)):
            raise TypeError("target: expected an nnmem.Pool or "
                            f"nnmem.Allocator, got {type(target).__name__}")
        self._target = target
        self._pr = None
        self._running = False
        self._closed = False

    def start(self) -> "Profiler":
        """Starts watching; returns self. A profiler starts once (make a
        new one for another run)."""
        if self._closed:
            raise ValueError("the profiler is closed")
        if self._pr is not None:
            raise ValueError("the profiler was already started (one run "
                             "per profiler: make a new one)")
        lib = _load()
        t = self._target
        pr = ctypes.c_void_p()
        if isinstance(t, Pool):
            _check(lib.nnmem_profiler_start_pool(t._p(), ctypes.byref(pr)),
                   what="profiler start")
        else:
            _check(lib.nnmem_profiler_start_allocator(t._h(),
                                                      ctypes.byref(pr)),
                   what="profiler start")
        self._pr = pr
        self._running = True
        _watchers.setdefault(t, weakref.WeakSet()).add(self)
        return self

    def _h(self) -> ctypes.c_void_p:
        if self._closed:
            raise ValueError("the profiler is closed")
        if self._pr is None:
            raise ValueError("the profiler was not started")
        return self._pr

    def _live(self) -> ctypes.c_void_p:
        h = self._h()
        if not self._running:
            raise ValueError("the profiler is stopped")
        return h

    def stop(self) -> None:
        """Stops watching; the figures stay. ValueError when not running."""
        _check(_load().nnmem_profiler_stop(self._live()), what="stop")
        self._running = False

    def _detach(self) -> None:  # the watched object is going away
        if self._running:
            self.stop()

    @property
    def running(self) -> bool:
        return self._running

    def tag(self, tag: str) -> str:
        """This thread's tag for its next blocks ("activation", "weight",
        "workspace"); returns the previous one."""
        i = _tag_index(tag)
        prev = _load().nnmem_profiler_tag(self._live(), i)
        return TAGS[prev] if 0 <= prev < len(TAGS) else "activation"

    @contextmanager
    def tagged(self, tag: str) -> Iterator["Profiler"]:
        """`with pr.tagged("weight"):` tags this thread's blocks in the
        block, then restores the previous tag."""
        prev = self.tag(tag)
        try:
            yield self
        finally:
            if self._running:
                self.tag(prev)

    def step(self) -> None:
        """Ends the current step (an op, a layer: the timeline's unit)."""
        _load().nnmem_profiler_step(self._live())

    def record_alloc(self, key: int, size: Size,
                     tag: str = "activation") -> None:
        """Counts a block the profiler cannot see (memory of another
        allocator, a planned buffer): `key` (a nonzero int) of `size`
        bytes is live from now."""
        n = _bytes(size, "size", allow_zero=False)
        i = _tag_index(tag)
        _check(_load().nnmem_profiler_record_alloc(
            self._live(), _address(key, "record_alloc"), n, i),
            what=f"record_alloc {key:#x}")

    def record_free(self, key: int) -> None:
        _check(_load().nnmem_profiler_record_free(
            self._live(), _address(key, "record_free")),
            what=f"record_free {key:#x}")

    def result(self) -> Dict[str, Any]:
        """The figures (so far, while running): the memory_profile.json
        document as a dict."""
        lib = _load()
        out = ctypes.c_void_p()
        _check(lib.nnmem_profiler_format_json(self._h(), ctypes.byref(out)),
               what="profile")
        try:
            text = ctypes.string_at(out.value).decode()
        finally:
            _libc_free(out)
        return json.loads(text)

    def export(self, path: Union[str, "os.PathLike[str]"]) -> None:
        """Writes memory_profile.json to `path` (a temporary, then a
        rename: an old file stays whole when writing fails)."""
        diag = _Diag()
        _check(_load().nnmem_profiler_export(
            self._h(), os.fsencode(os.fspath(path)), ctypes.byref(diag)),
            diag, f"export {os.fspath(path)}")

    def __enter__(self) -> "Profiler":
        return self.start()

    def __exit__(self, *exc) -> None:
        if self._running:
            self.stop()

    def close(self) -> None:
        """Stops (when running) and frees the figures. Idempotent."""
        if self._pr is not None and not self._closed:
            _load().nnmem_profiler_destroy(self._pr)
            self._running = False
        self._pr = None
        self._closed = True


# ---- record a run, plan it, serve the next (include/nnmem/planned.h) -----

class Planned(_Closable):
    """A plan-backed run over an Allocator: record a run's allocations
    (Planned.record), plan them offline (nnmem.plan(recorded_csv,
    with_offsets=True, out=path) or `nnmem plan recorded.csv --out plan.json`),
    then serve the next run from the plan (Planned.load): the k-th request
    of step s gets the planned offset of the k-th buffer recorded in step s.
    A request the plan does not have (another size, one too many in its
    step) is served by the allocator and counted (stats()); the run never
    fails because of it.

        >>> with nnmem.Allocator() as al:
        ...     rec = nnmem.Planned.record(al)
        ...     for op in ops: p = rec.alloc(n); ...; rec.free(p); rec.step()
        ...     rec.write_csv("recorded.csv"); rec.close()
        ...     # nnmem plan recorded.csv --out next.plan.json
        ...     run = nnmem.Planned.load(al, "next.plan.json")

    Steps are marked with step(), or with auto_steps=True every allocation
    is a step. One object is used by one thread at a time. Closing the
    allocator closes its plan-backed runs first."""

    def __init__(self, allocator: "Allocator", handle: ctypes.c_void_p,
                 serving: bool):
        self._al = allocator
        self._r = handle
        self.serving = serving
        _watchers.setdefault(allocator, weakref.WeakSet()).add(self)

    @staticmethod
    def _config(auto_steps: bool) -> _PlannedConfig:
        if not isinstance(auto_steps, bool):
            raise TypeError("auto_steps: expected a bool")
        return _PlannedConfig(size=ctypes.sizeof(_PlannedConfig),
                              auto_steps=1 if auto_steps else 0, base=None)

    @classmethod
    def record(cls, allocator: "Allocator", *,
               auto_steps: bool = False) -> "Planned":
        """A recording run on `allocator`."""
        if not isinstance(allocator, Allocator):
            raise TypeError("allocator: expected an nnmem.Allocator")
        cfg = cls._config(auto_steps)
        r = ctypes.c_void_p()
        _check(_load().nnmem_planned_record(allocator._h(), ctypes.byref(cfg),
                                            ctypes.byref(r)),
               what="record")
        return cls(allocator, r, False)

    @classmethod
    def load(cls, allocator: "Allocator",
             plan: Union[str, "os.PathLike[str]"], *,
             auto_steps: bool = False) -> "Planned":
        """A run served from a plan file (plan JSON of a recorded trace).
        The plan is checked by the verifier first: NativeError naming the
        file and buffer for a plan that is not one of a recorded trace,
        overlaps, or cannot be read."""
        if not isinstance(allocator, Allocator):
            raise TypeError("allocator: expected an nnmem.Allocator")
        cfg = cls._config(auto_steps)
        path = os.fspath(plan)
        r, diag = ctypes.c_void_p(), _Diag()
        _check(_load().nnmem_planned_load(allocator._h(), os.fsencode(path),
                                          ctypes.byref(cfg), ctypes.byref(r),
                                          ctypes.byref(diag)),
               diag, f"load {path}")
        return cls(allocator, r, True)

    def _h(self) -> ctypes.c_void_p:
        if self._r is None:
            raise ValueError("the plan-backed run is closed")
        return self._r

    def alloc(self, size: Size) -> int:
        n = _bytes(size, "size", allow_zero=False)
        p = _load().nnmem_planned_alloc(self._h(), n)
        if not p:
            raise NativeError("NNMEM_ERR_NOMEM",
                              f"alloc {n} bytes: out of memory")
        return p

    def free(self, addr: int) -> None:
        """Frees a block of this run (a planned one, or one the allocator
        served). A free of a planned address that is not live is counted
        as misuse (stats()) and changes nothing."""
        _load().nnmem_planned_free(self._h(), _address(addr, "free"))

    def step(self) -> None:
        """Ends the current step."""
        _load().nnmem_step(self._h())

    def usable_size(self, addr: int) -> int:
        """Serving: the planned size of the live planned block at addr."""
        out = ctypes.c_size_t()
        _check(_load().nnmem_planned_usable_size(
            self._h(), _address(addr, "usable_size"), ctypes.byref(out)),
            what=f"usable_size {addr:#x}")
        return out.value

    def write_csv(self, path: Union[str, "os.PathLike[str]"]) -> None:
        """Recording: the trace so far as MiniMalloc CSV (atomically)."""
        p = os.fspath(path)
        diag = _Diag()
        _check(_load().nnmem_planned_write_csv(self._h(), os.fsencode(p),
                                               ctypes.byref(diag)),
               diag, f"write_csv {p}")

    def stats(self) -> Dict[str, Any]:
        """steps, allocs, served (from the plan), fallback (by the
        allocator), size_diverged, order_diverged, overstayed, misuse,
        disabled (serving stopped: a block outlived its plan), height."""
        _, st = _struct_of(_load().nnmem_planned_stats, self._h(),
                           _PlannedStats, "stats")
        d = {n: getattr(st, n) for n, _ in _PlannedStats._fields_
             if n != "size"}
        d["disabled"] = bool(d["disabled"])
        return d

    def _detach(self) -> None:  # the allocator is going away
        self.close()

    def close(self) -> None:
        """Recording: live blocks go back to the allocator; serving: the
        plan's memory does. Idempotent."""
        if self._r is not None:
            _load().nnmem_planned_destroy(self._r)
            self._r = None
