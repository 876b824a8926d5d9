"""Build the Cython kernels of overlap-metrics.

Every ``*.pyx`` file under ``overlap/`` and ``metrics/`` becomes one extension
module.  OpenMP is found by compiling and linking a tiny program; without it the
build warns loudly and the kernels run serially (the modules still import).

Environment variables
---------------------
OVERLAP_DISABLE_OPENMP=1
    Build without OpenMP even when the compiler supports it.
OVERLAP_DEBUG_CYTHON=1
    Turn bounds and wraparound checks back on (slow; for debug test runs).
OVERLAP_EXTRA_COMPILE_ARGS
    Extra compiler flags, split on whitespace (e.g. ``-march=native``).
OVERLAP_ONLY
    Developer convenience: build only the modules whose dotted name starts with
    one of these comma-separated prefixes (e.g. ``metrics`` or
    ``overlap._search``), for a quick ``build_ext --inplace``.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import textwrap
import warnings
from pathlib import Path

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).resolve().parent
PACKAGES = ("overlap", "metrics")


def _truthy(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in {"1", "true", "yes", "on"}


def compiler_directives() -> dict:
    """The one place where Cython directives are set."""
    debug = _truthy("OVERLAP_DEBUG_CYTHON")
    return {
        "language_level": 3,
        "boundscheck": debug,
        "wraparound": debug,
        "initializedcheck": debug,
        "cdivision": True,
        "nonecheck": False,
        "embedsignature": True,
        "freethreading_compatible": True,
    }


def openmp_flags(compiler) -> tuple[list[str], list[str]]:
    """Return (compile_args, link_args) for OpenMP, or empty lists if unavailable."""
    ctype = compiler.compiler_type
    if ctype == "msvc":
        candidates = [(["/openmp:llvm"], []), (["/openmp"], [])]
    elif sys.platform == "darwin":
        candidates = [
            (["-Xpreprocessor", "-fopenmp"], ["-lomp"]),
            (["-fopenmp"], ["-fopenmp"]),
        ]
    else:
        candidates = [(["-fopenmp"], ["-fopenmp"])]
    source = textwrap.dedent(
        """
        #include <omp.h>
        #include <stdio.h>
        int main(void) {
            int n = 0;
            #pragma omp parallel reduction(+:n)
            n += 1;
            printf("%d\\n", omp_get_max_threads() > 0 && n > 0);
            return 0;
        }
        """
    )
    tmp = tempfile.mkdtemp(prefix="overlap-omp-probe-")
    try:
        src = os.path.join(tmp, "probe.c")
        with open(src, "w") as fh:
            fh.write(source)
        for cflags, lflags in candidates:
            try:
                objs = compiler.compile([src], output_dir=tmp, extra_postargs=cflags)
                compiler.link_executable(
                    objs, "probe", output_dir=tmp, extra_postargs=lflags or cflags
                )
            except Exception:  # compile or link failed: try the next flag set
                continue
            return cflags, (lflags or cflags)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return [], []


class BuildExtWithOpenMP(build_ext):
    """build_ext that probes for OpenMP once and adds the flags it found."""

    def build_extensions(self):
        if _truthy("OVERLAP_DISABLE_OPENMP"):
            cflags, lflags = [], []
            print("overlap-metrics: OpenMP disabled by OVERLAP_DISABLE_OPENMP")
        else:
            cflags, lflags = openmp_flags(self.compiler)
            if not cflags:
                bar = "*" * 72
                warnings.warn(
                    f"\n{bar}\noverlap-metrics: the compiler has no working OpenMP.\n"
                    "The kernels will run on ONE thread. Install an OpenMP runtime\n"
                    "(gcc: libgomp; macOS clang: `brew install libomp`) and rebuild.\n"
                    f"{bar}",
                    stacklevel=1,
                )
        ctype = self.compiler.compiler_type
        opt = ["/O2"] if ctype == "msvc" else ["-O3"]
        extra = os.environ.get("OVERLAP_EXTRA_COMPILE_ARGS", "").split()
        for ext in self.extensions:
            ext.extra_compile_args = list(ext.extra_compile_args) + opt + cflags + extra
            ext.extra_link_args = list(ext.extra_link_args) + lflags
        super().build_extensions()


def extensions() -> list[Extension]:
    only = [p for p in os.environ.get("OVERLAP_ONLY", "").split(",") if p.strip()]
    exts = []
    for pkg in PACKAGES:
        for pyx in sorted((HERE / pkg).glob("*.pyx")):
            name = f"{pkg}.{pyx.stem}"
            if only and not any(name.startswith(p.strip()) for p in only):
                continue
            exts.append(
                Extension(
                    name,
                    [os.path.relpath(pyx, HERE)],
                    include_dirs=[np.get_include()],
                    define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
                )
            )
    return cythonize(
        exts,
        compiler_directives=compiler_directives(),
        annotate=_truthy("OVERLAP_CYTHON_ANNOTATE"),
    )


setup(ext_modules=extensions(), cmdclass={"build_ext": BuildExtWithOpenMP})
