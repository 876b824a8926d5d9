"""Build the Cython kernels of overlap-metrics.

Every ``*.pyx`` file in ``overlap/``, ``overlap/_kernels/`` and ``metrics/``
becomes one extension module.  OpenMP is found by compiling and linking a tiny
program; without it the build warns loudly and the kernels run serially (the modules still import).

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
    ``overlap._kernels``), for a quick ``build_ext --inplace``.
OVERLAP_BUILD_JOBS
    How many extension modules to compile at once (default: the usable cores;
    an explicit ``build_ext -j N`` wins).

The usual ``CC``, ``CFLAGS``, ``CPPFLAGS`` and ``LDFLAGS`` apply to the OpenMP
probe exactly as to the modules, so a sanitizer build
(``CFLAGS=-fsanitize=address,undefined LDFLAGS=-fsanitize=address,undefined``)
keeps OpenMP.

Compiled once
-------------
Each ``.pyx`` is translated to C only when its content, the shared ``.pxd``
files, the directives, or the Cython/numpy versions changed (a content
fingerprint under ``build/cython-fingerprints/``; pip builds in the source
tree, so a second ``pip install ".[test]"`` reuses the first one's work), and
each module is compiled only when its C file or its compile/link flags changed.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
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
#: The folders whose .pyx files are compiled (each a package: a module's name is
#: its path with dots); their .pxd and .h files are the modules' shared inputs.
PACKAGES = ("overlap", "overlap/_kernels", "metrics")
#: Folders of C headers that modules of any package include (the kernels' CPU
#: switch, _cpu.h, which a cimport of _cpu.pxd names): on every module's
#: include path, and among its dependencies.
SHARED_HEADERS = ("overlap/_kernels",)


def _truthy(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in {"1", "true", "yes", "on"}


def _env_flags(*names: str) -> list[str]:
    """The user's flags from the environment (e.g. CFLAGS), split like a shell."""
    return [flag for name in names for flag in shlex.split(os.environ.get(name, ""))]


def build_jobs() -> int:
    """Default number of modules compiled at once: OVERLAP_BUILD_JOBS or the usable cores."""
    value = os.environ.get("OVERLAP_BUILD_JOBS", "").strip()
    if value:
        try:
            jobs = int(value)
        except ValueError:
            raise SystemExit(f"OVERLAP_BUILD_JOBS must be a positive integer, got {value!r}")
        if jobs < 1:
            raise SystemExit(f"OVERLAP_BUILD_JOBS must be a positive integer, got {value!r}")
        return jobs
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


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
        # The compile command already carries CFLAGS/CPPFLAGS (distutils adds
        # them), but the executable linker gets neither CFLAGS nor LDFLAGS,
        # while the modules' linker gets both: add them here, or a flag such as
        # -fsanitize=address makes the probe fail to link and OpenMP silently
        # disappears from a build that supports it.
        user_link = [] if ctype == "msvc" else _env_flags("LDFLAGS", "CFLAGS", "CPPFLAGS")
        for cflags, lflags in candidates:
            try:
                objs = compiler.compile([src], output_dir=tmp, extra_postargs=cflags)
                compiler.link_executable(
                    objs, "probe", output_dir=tmp,
                    extra_postargs=(lflags or cflags) + user_link,
                )
            except Exception:  # compile or link failed: try the next flag set
                continue
            return cflags, (lflags or cflags)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return [], []


class BuildExtWithOpenMP(build_ext):
    """build_ext that probes for OpenMP once, adds the flags it found, compiles
    the modules in parallel and skips those whose C file and flags are unchanged."""

    def finalize_options(self):
        if self.parallel is None:
            self.parallel = build_jobs()
        super().finalize_options()

    def build_extension(self, ext):
        # distutils rebuilds a module only when a source is newer than it; also
        # rebuild when the flags changed (a debug or sanitizer build must not
        # reuse optimised objects, nor the other way round).
        key = json.dumps(
            {
                "compile": ext.extra_compile_args,
                "link": ext.extra_link_args,
                "macros": ext.define_macros,
                "compiler": getattr(self.compiler, "compiler_so", None),
                "linker": getattr(self.compiler, "linker_so", None),
                "env": {k: os.environ.get(k) for k in ("CC", "CFLAGS", "CPPFLAGS", "LDFLAGS", "LDSHARED")},
                "numpy": np.__version__,
                "python": sys.version,
            },
            sort_keys=True,
        )
        stamp = Path(self.build_temp) / "flags" / f"{ext.name}.json"
        target = Path(self.get_ext_fullpath(ext.name))
        old = stamp.read_text() if stamp.is_file() else None
        if old != key and target.exists() and not self.force:
            target.unlink()
        super().build_extension(ext)
        stamp.parent.mkdir(parents=True, exist_ok=True)
        stamp.write_text(key)

    def build_extensions(self):
        if _truthy("OVERLAP_DISABLE_OPENMP"):
            cflags, lflags = [], []
            print("overlap-metrics: OpenMP disabled by OVERLAP_DISABLE_OPENMP")
        else:
            cflags, lflags = openmp_flags(self.compiler)
            if cflags:
                print(f"overlap-metrics: OpenMP found (compile {cflags}, link {lflags})")
            else:
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
        print(f"overlap-metrics: compiling {len(self.extensions)} modules, {self.parallel} at a time")
        super().build_extensions()


def _fingerprint(pyx: Path, directives: dict) -> str:
    """Everything the generated C of one module depends on, hashed."""
    import Cython

    h = hashlib.sha256()
    h.update(json.dumps([Cython.__version__, np.__version__, directives], sort_keys=True).encode())
    for path in [pyx] + sorted(p for pkg in PACKAGES for p in (HERE / pkg).glob("*.pxd")):
        h.update(str(path.relative_to(HERE)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def header_depends(pkg: str) -> list[str]:
    """The package's C headers and the shared ones, which the generated C
    includes verbatim: a changed header must recompile the module (distutils
    compares these)."""
    dirs = [pkg] + [d for d in SHARED_HEADERS if d != pkg]
    return [os.path.relpath(h, HERE) for d in dirs for h in sorted((HERE / d).glob("*.h"))]


def extensions() -> list[Extension]:
    """One Extension per .pyx; translate to C only the modules whose inputs changed."""
    only = [p for p in os.environ.get("OVERLAP_ONLY", "").split(",") if p.strip()]
    directives = compiler_directives()
    annotate = _truthy("OVERLAP_CYTHON_ANNOTATE")
    stamps = HERE / "build" / "cython-fingerprints"
    fresh, stale, prints = [], [], {}
    for pkg in PACKAGES:
        for pyx in sorted((HERE / pkg).glob("*.pyx")):
            name = f"{pkg.replace('/', '.')}.{pyx.stem}"
            if only and not any(name.startswith(p.strip()) for p in only):
                continue
            c_file = pyx.with_suffix(".c")
            fp = _fingerprint(pyx, directives)
            stamp = stamps / name
            up_to_date = (
                not annotate
                and c_file.is_file()
                and stamp.is_file()
                and stamp.read_text() == fp
            )
            source = c_file if up_to_date else pyx
            ext = Extension(
                name,
                [os.path.relpath(source, HERE)],
                include_dirs=[np.get_include(), str(pyx.parent)]
                + [str(HERE / d) for d in SHARED_HEADERS if HERE / d != pyx.parent],
                define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
                depends=header_depends(pkg),
            )
            if up_to_date:
                fresh.append(ext)
            else:
                stale.append(ext)
                prints[name] = fp
    if stale:
        print(f"overlap-metrics: translating {len(stale)} of {len(stale) + len(fresh)} modules to C")
        # Cython runs its workers through multiprocessing; only fork is safe
        # from inside a build backend.
        import multiprocessing

        nthreads = build_jobs() if multiprocessing.get_start_method() == "fork" else 0
        stale = cythonize(
            stale,
            compiler_directives=directives,
            annotate=annotate,
            force=True,
            nthreads=nthreads if len(stale) > 1 else 0,
        )
        stamps.mkdir(parents=True, exist_ok=True)
        for name, fp in prints.items():
            (stamps / name).write_text(fp)
    return sorted(fresh + stale, key=lambda e: e.name)


if __name__ == "__main__":  # pip's build backend and `python setup.py` both run it as __main__
    setup(ext_modules=extensions(), cmdclass={"build_ext": BuildExtWithOpenMP})
