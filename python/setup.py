"""Builds the nnmem command-line tool and the shared library with CMake and
ships both inside the package (nnmem/_bin/nnmem, nnmem/_lib/libnnmem.so).
The planner API runs that tool and reads its JSON reports, so every planner
feature is available with no C ABI to mirror; the runtime API (Pool,
Allocator) calls the library with ctypes.

Environment:
  NNMEM_PREBUILT_CLI=PATH  ship this binary instead of building one
  NNMEM_PREBUILT_LIB=PATH  ship this libnnmem.so (with NNMEM_PREBUILT_CLI;
                           without it the package has no runtime API)
  NNMEM_CMAKE_ARGS="..."   extra arguments for the CMake configure step
"""
import os
import shlex
import shutil
import subprocess
from pathlib import Path

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


class BuildWithCli(build_py):
    def run(self):
        super().run()
        dest = Path(self.build_lib) / "nnmem" / "_bin"
        dest.mkdir(parents=True, exist_ok=True)
        prebuilt = os.environ.get("NNMEM_PREBUILT_CLI")
        lib = None
        if prebuilt:
            src = Path(prebuilt)
            if os.environ.get("NNMEM_PREBUILT_LIB"):
                lib = Path(os.environ["NNMEM_PREBUILT_LIB"])
        else:
            if not (ROOT / "CMakeLists.txt").is_file():
                raise SystemExit(
                    "nnmem: the C sources are not next to this package "
                    f"({ROOT}); install from the repository "
                    "(pip install ./python) or set NNMEM_PREBUILT_CLI")
            temp = self.get_finalized_command("build").build_temp
            build = Path(temp) / "cmake"
            cfg = ["cmake", "-S", str(ROOT), "-B", str(build),
                   "-DCMAKE_BUILD_TYPE=Release", "-DNNMEM_BUILD_TESTS=OFF",
                   "-DNNMEM_BUILD_BENCH=OFF", "-DNNMEM_BUILD_EXAMPLES=OFF",
                   "-DNNMEM_INSTALL=OFF"]
            cfg += shlex.split(os.environ.get("NNMEM_CMAKE_ARGS", ""))
            subprocess.check_call(cfg)
            subprocess.check_call(["cmake", "--build", str(build), "--target",
                                   "nnmem_cli", "nnmem_shared", "-j",
                                   str(os.cpu_count() or 2)])
            src = build / "nnmem"
            lib = build / "libnnmem.so"
        if not src.is_file():
            raise SystemExit(f"nnmem: no command-line tool at {src}")
        target = dest / "nnmem"
        shutil.copy2(src, target)
        target.chmod(0o755)
        if lib is not None:
            if not lib.is_file():
                raise SystemExit(f"nnmem: no shared library at {lib}")
            libdir = Path(self.build_lib) / "nnmem" / "_lib"
            libdir.mkdir(parents=True, exist_ok=True)
            # the real file, under the name native.py looks for first
            shutil.copyfile(lib.resolve(), libdir / "libnnmem.so")


class BinaryDistribution(Distribution):
    """The wheel carries a native executable: tag it for this platform."""

    def has_ext_modules(self):
        return True


setup(cmdclass={"build_py": BuildWithCli}, distclass=BinaryDistribution)
