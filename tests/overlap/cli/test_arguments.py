"""The command line's arguments and messages: strict numbers, counted nouns, early Ctrl-C."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

import overlap as _overlap_pkg
from overlap.cli import _counted, main
from overlap.pipeline.report import parse_thresholds

PKG_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(_overlap_pkg.__file__)))


@pytest.mark.parametrize("at", ["0.8,,1", ",0.5", "0.5,", "0.5, ,0.8"])
def test_at_refuses_an_empty_threshold(at):
    with pytest.raises(ValueError, match="none left empty"):
        parse_thresholds(at, "--at")


@pytest.mark.parametrize("at", ["0.8,1_0", "0x1", "nan", "٠.5", "inf"])
def test_at_refuses_what_is_not_a_plain_decimal(at):
    with pytest.raises(ValueError, match="--at"):
        parse_thresholds(at, "--at")


def test_at_accepts_plain_decimals():
    assert parse_thresholds(" 1 ,0.5, 8e-1", "--at") == (0.5, 0.8, 1.0)


@pytest.mark.parametrize("option,value", [
    ("--threads", "1_0"), ("--threads", "²"), ("--threads", "٣"), ("--threads", " 2"),
    ("--at", "0.8,,1"), ("--chunk-rows", "1_000"), ("--min-score", "0_5"),
])
def test_scan_refuses_numbers_python_would_stretch(tmp_path, capsys, option, value):
    assert main(["scan", str(tmp_path / "x.txt"), option, value]) == 2
    assert option in capsys.readouterr().err


@pytest.mark.parametrize("n,noun,text", [
    (0, "pair", "0 pairs"), (1, "pair", "1 pair"), (2, "pair", "2 pairs"),
    (1, "pass", "1 pass"), (3, "pass", "3 passes"), (1234, "pair", "1,234 pairs"),
])
def test_counted_nouns(n, noun, text):
    assert _counted(n, noun) == text


def test_dedup_says_one_pair(tmp_path, capsys):
    (tmp_path / "in.csv").write_text("text\na b c d\na b c d\nx y z\n", encoding="utf-8")
    assert main(["dedup", str(tmp_path / "in.csv"), "--fields", "text",
                 "--out", str(tmp_path / "out.csv")]) == 0
    out = capsys.readouterr()
    said = out.out + out.err
    assert "2 passes," in said and "1 pair above" in said, said


def _python(code: str, cwd) -> subprocess.CompletedProcess:
    """``python -c code`` in a fresh interpreter, with this session's package first."""
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=cwd,
                          env=dict(os.environ, PYTHONPATH=PKG_ROOT), timeout=120)


def test_importing_the_package_loads_no_kernel(tmp_path):
    # the command's entry point starts before numpy and the kernels are loaded,
    # so that Ctrl-C during their import is answered like any other Ctrl-C
    code = ("import sys, overlap, overlap.cli\n"
            "print(sorted(m for m in ('numpy', 'overlap._kernels._postings_search', 'overlap.tokensets')"
            " if m in sys.modules))\n")
    r = _python(code, tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"


def test_parsing_the_arguments_loads_no_scipy(tmp_path):
    # scipy.sparse costs 0.2 s, and only dedup's component labels need it:
    # the parser (which reads constants of the pipeline's modules) and
    # --version do without
    code = ("import sys\n"
            "from overlap.cli import main\n"
            "try:\n"
            "    main(['--version'])\n"
            "except SystemExit:\n"
            "    pass\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'scipy'))\n")
    r = _python(code, tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().splitlines()[-1] == "[]", r.stdout


def test_lazy_names_are_the_real_ones():
    import overlap.search
    import overlap.tokensets

    assert _overlap_pkg.TokenSets is overlap.tokensets.TokenSets
    assert _overlap_pkg.max_overlap is overlap.search.max_overlap
    assert set(_overlap_pkg.__all__) <= set(dir(_overlap_pkg))
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _overlap_pkg.nope  # noqa: B018


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT delivery differs on Windows")
def test_ctrl_c_while_the_command_imports_numpy_exits_130(tmp_path, sigint_reaches_children):
    # SIGINT arrives while numpy is being imported, the window of the first
    # ~0.3 s of every run: one line and exit 130, no traceback
    code = (
        "import builtins, os, signal, sys\n"
        "real = builtins.__import__\n"
        "def imp(name, *a, **k):\n"
        "    if name == 'numpy' and 'numpy' not in sys.modules:\n"
        "        builtins.__import__ = real\n"
        "        os.kill(os.getpid(), signal.SIGINT)\n"
        "    return real(name, *a, **k)\n"
        "builtins.__import__ = imp\n"
        "from overlap.cli import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    r = subprocess.run([sys.executable, "-c", code, "scan", "x.txt"], cwd=tmp_path,
                       env=dict(os.environ, PYTHONPATH=PKG_ROOT), capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 130, r.stderr
    assert r.stderr.strip() == "overlap: interrupted"


def test_a_submodule_import_hides_no_public_function(tmp_path):
    # overlap.dedup is the function, also after the module overlap.dedup is imported
    code = ("import overlap, overlap.dedup, overlap.dask\n"
            "import overlap.dedup as m\n"
            "from overlap.dedup import DedupResult\n"
            "print(callable(overlap.dedup), overlap.dedup.__module__, DedupResult.__name__)\n")
    r = _python(code, tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["True", "overlap.dedup", "DedupResult"]
