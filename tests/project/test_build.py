"""setup.py's helpers: the OpenMP probe honours CFLAGS/LDFLAGS, build jobs, fingerprints.

Runs only from a source checkout (setup.py next to tests/) with a C compiler.
"""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SETUP = ROOT / "setup.py"

if not SETUP.is_file():
    pytest.skip("setup.py not found: not a source checkout", allow_module_level=True)


@pytest.fixture(scope="module")
def setup_module():
    pytest.importorskip("Cython", reason="setup.py needs Cython")
    spec = importlib.util.spec_from_file_location("_overlap_setup", SETUP)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # __name__ is not "__main__": setup() does not run
    return mod


def _compiler():
    try:
        from setuptools._distutils.ccompiler import new_compiler
        from setuptools._distutils.sysconfig import customize_compiler
    except ImportError:  # pragma: no cover - very old setuptools
        pytest.skip("setuptools' distutils not available")
    cc = new_compiler()
    customize_compiler(cc)
    if cc.compiler_type != "unix" or shutil.which(cc.compiler_so[0]) is None:
        pytest.skip("needs a unix C compiler")
    return cc


def _links(cc, flags: list[str]) -> bool:
    """Can the compiler build and link a trivial program with these flags?"""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "t.c"
        src.write_text("int main(void) { return 0; }\n")
        try:
            objs = cc.compile([str(src)], output_dir=tmp, extra_postargs=flags)
            cc.link_executable(objs, "t", output_dir=tmp, extra_postargs=flags)
        except Exception:
            return False
    return True


def test_openmp_probe_keeps_openmp_under_sanitizer_flags(setup_module, monkeypatch):
    # issue 9 item 4: with CFLAGS=-fsanitize=... the probe compiled with the
    # flag but linked without it, failed, and the build silently lost OpenMP.
    monkeypatch.delenv("CFLAGS", raising=False)
    monkeypatch.delenv("LDFLAGS", raising=False)
    plain = setup_module.openmp_flags(_compiler())
    if not plain[0]:
        pytest.skip("this compiler has no OpenMP")
    san = "-fsanitize=address,undefined"
    if not _links(_compiler(), san.split()):
        pytest.skip("this compiler cannot link sanitizer programs")
    monkeypatch.setenv("CFLAGS", san)
    monkeypatch.setenv("LDFLAGS", san)
    assert setup_module.openmp_flags(_compiler()) == plain


def test_build_jobs(setup_module, monkeypatch):
    monkeypatch.setenv("OVERLAP_BUILD_JOBS", "3")
    assert setup_module.build_jobs() == 3
    monkeypatch.delenv("OVERLAP_BUILD_JOBS")
    assert setup_module.build_jobs() >= 1
    for bad in ("0", "-2", "two"):
        monkeypatch.setenv("OVERLAP_BUILD_JOBS", bad)
        with pytest.raises(SystemExit, match="OVERLAP_BUILD_JOBS"):
            setup_module.build_jobs()


def test_build_ext_defaults_to_parallel(setup_module, monkeypatch):
    from setuptools import Distribution

    monkeypatch.setenv("OVERLAP_BUILD_JOBS", "2")
    cmd = setup_module.BuildExtWithOpenMP(Distribution())
    cmd.initialize_options()
    cmd.finalize_options()
    assert cmd.parallel == 2
    cmd = setup_module.BuildExtWithOpenMP(Distribution())
    cmd.initialize_options()
    cmd.parallel = 1  # an explicit -j wins
    cmd.finalize_options()
    assert cmd.parallel == 1


def test_fingerprint_follows_the_inputs(setup_module, monkeypatch):
    pyx = sorted((ROOT / "overlap").glob("*.pyx"))[0]
    base = setup_module._fingerprint(pyx, setup_module.compiler_directives())
    assert base == setup_module._fingerprint(pyx, setup_module.compiler_directives())
    monkeypatch.setenv("OVERLAP_DEBUG_CYTHON", "1")
    assert base != setup_module._fingerprint(pyx, setup_module.compiler_directives())
    other = sorted((ROOT / "metrics").glob("*.pyx"))[0]
    monkeypatch.delenv("OVERLAP_DEBUG_CYTHON")
    assert base != setup_module._fingerprint(other, setup_module.compiler_directives())



def test_every_included_header_recompiles_its_module(setup_module):
    """A module that includes a package header lists it in depends: editing
    _bitslice_simd.h once rebuilt nothing (the .c was unchanged)."""
    import re

    seen = 0
    for pkg in setup_module.PACKAGES:
        deps = set(setup_module.header_depends(pkg))
        for pyx in (ROOT / pkg).glob("*.pyx"):
            for name in re.findall(r'cdef extern from "([^"<>]+\.h)"', pyx.read_text()):
                if (ROOT / pkg / name).is_file():
                    seen += 1
                    assert f"{pkg}/{name}" in deps, (pyx.name, name)
    assert seen  # _bitslice.pyx includes _bitslice_simd.h
