"""The .pyi stubs of the compiled modules agree with the modules (mypy.stubtest).

stubtest normally type-checks the whole package around the stubs, and errors in
unrelated .py files would stop it; so the stubs are copied into a stub-only
tree (empty package ``__init__.pyi``) and checked against the imported modules.
Needs mypy (``pip install ".[dev]"``); CI's "stubs" job installs it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import metrics
import overlap

pytest.importorskip("mypy.stubtest", reason="stubtest needs mypy: pip install '.[dev]'")

PACKAGES = {"overlap": Path(overlap.__file__).parent, "metrics": Path(metrics.__file__).parent}


def _dotted(pkg: str, root: Path, path: Path) -> str:
    """The module name of ``path`` (a stub or a compiled module) under package ``pkg``."""
    rel = path.relative_to(root)
    return ".".join([pkg, *rel.parent.parts, path.name.split(".")[0]])


MODULES = sorted(_dotted(pkg, d, p) for pkg, d in PACKAGES.items() for p in d.rglob("*.pyi"))

# Cython adds these to every module and extension type; they are not API.
_CYTHON_ARTIFACTS = ("__test__", "__reduce_cython__", "__setstate_cython__", "__pyx_capi__")
# mypy >= 1.18 also asks for @disjoint_base (PEP 800) on extension types; a
# stub-style choice, not a disagreement with the module.
_STYLE_ONLY = "is a disjoint base at runtime"

KNOWN: dict[str, str] = {}


def test_every_compiled_module_has_a_stub():
    suffixes = (".so", ".pyd")
    missing = [
        _dotted(pkg, d, p)
        for pkg, d in PACKAGES.items()
        for p in d.rglob("*")
        if p.name.endswith(suffixes) and not (p.parent / (p.name.split(".")[0] + ".pyi")).exists()
    ]
    assert MODULES, "no .pyi stubs found next to the imported packages"
    assert not missing, f"compiled modules without a .pyi stub: {missing}"


@pytest.fixture(scope="module")
def stubtest_report(tmp_path_factory) -> dict[str, list[str]]:
    work = tmp_path_factory.mktemp("stubtest")
    root = work / "stubs"
    for pkg, d in PACKAGES.items():
        for stub in d.rglob("*.pyi"):
            target = root / pkg / stub.relative_to(d)
            for folder in [target.parent, *target.parent.parents]:
                if folder == root:
                    break
                folder.mkdir(parents=True, exist_ok=True)
                (folder / "__init__.pyi").touch()
            shutil.copy(stub, target)
    config = work / "mypy.ini"
    config.write_text("[mypy]\n")
    # the run-time side: exactly the modules this test session imported
    roots = {str(d.parent) for d in PACKAGES.values()}
    pythonpath = os.pathsep.join([*sorted(roots), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env = dict(os.environ, MYPYPATH=str(root), PYTHONPATH=pythonpath)
    proc = subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", "--concise", "--mypy-config-file", str(config),
         *MODULES],
        capture_output=True, text=True, env=env, cwd=work, timeout=600,
    )
    report: dict[str, list[str]] = {m: [] for m in MODULES}
    for line in proc.stdout.splitlines():
        name = line.split(" ", 1)[0]
        if not line.strip() or name.rsplit(".", 1)[-1] in _CYTHON_ARTIFACTS or _STYLE_ONLY in line:
            continue
        module = next((m for m in MODULES if name == m or name.startswith(m + ".")), None)
        if module is None:  # not a per-object line: keep it visible
            report.setdefault("<stubtest>", []).append(line)
        else:
            report[module].append(line)
    if proc.returncode not in (0, 1) or proc.stderr.strip():
        report.setdefault("<stubtest>", []).append(
            f"exit {proc.returncode}; stderr: {proc.stderr.strip()[-2000:]}")
    return report


def test_stubtest_ran_cleanly(stubtest_report):
    assert not stubtest_report.get("<stubtest>"), "\n".join(stubtest_report["<stubtest>"])


@pytest.mark.parametrize(
    "module",
    [pytest.param(m, marks=pytest.mark.xfail(strict=True, reason=KNOWN[m])) if m in KNOWN else m
     for m in MODULES],
)
def test_stub_matches_module(module, stubtest_report):
    problems = stubtest_report[module]
    assert not problems, "\n".join(problems)
