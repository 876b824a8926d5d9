"""Outputs a user can trust: files before the report, special files, modes, missing
folders, full disks, all-or-nothing commits, and text from data that cannot drive
the terminal."""

from __future__ import annotations

import errno
import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

import overlap as _overlap_pkg
from overlap._terminal import encodable, escape_controls
from overlap.pipeline.output import OutputError, OutputWriteError, Outputs, atomic_write

PKG_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(_overlap_pkg.__file__)))
POSIX = pytest.mark.skipif(sys.platform == "win32", reason="POSIX files and signals")


def overlap_cli(*args: str, cwd: Path, env: dict | None = None, **kw) -> subprocess.CompletedProcess:
    e = dict(os.environ, PYTHONPATH=PKG_ROOT, **(env or {}))
    return subprocess.run([sys.executable, "-m", "overlap", *args], cwd=cwd, env=e,
                          capture_output=True, timeout=300, **kw)


def small_table(tmp_path: Path) -> Path:
    p = tmp_path / "in.csv"
    p.write_text("text,lang\nthe cat sat on the mat,en\nthe cat sat on a mat,en\n"
                 "a dog ran,de\nthe dog ran far,de\n", encoding="utf-8")
    return p


# ------------------------------------------------------------------ stdout
@POSIX
def test_a_closed_stdout_costs_no_output_file(tmp_path):
    # `overlap scan ... --out s.csv | head -0`: the files are written before the
    # report, which then finds stdout closed: exit 141, no traceback
    small_table(tmp_path)
    r_fd, w_fd = os.pipe()
    os.close(r_fd)  # the reader is gone before anything is written
    e = dict(os.environ, PYTHONPATH=PKG_ROOT)
    try:
        p = subprocess.run([sys.executable, "-m", "overlap", "scan", "in.csv", "--fields", "text",
                            "--out", "s.csv", "--summary", "sum.csv"], cwd=tmp_path, env=e,
                           stdout=w_fd, stderr=subprocess.PIPE, timeout=300)
    finally:
        os.close(w_fd)
    assert p.returncode == 141, p.stderr.decode()
    assert b"Traceback" not in p.stderr and b"Error" not in p.stderr
    assert (tmp_path / "s.csv").read_text(encoding="utf-8").startswith("eval_index,")
    assert (tmp_path / "sum.csv").exists()


def test_a_console_without_the_symbols_gets_ascii(tmp_path):
    small_table(tmp_path)
    r = overlap_cli("scan", "in.csv", "--fields", "text", "--out", "s.csv", cwd=tmp_path,
                    env={"PYTHONIOENCODING": "cp1252"})
    assert r.returncode == 0, r.stderr.decode("cp1252")
    out = r.stdout.decode("cp1252")
    assert ">=0.5:" in out and "≥" not in out
    assert (tmp_path / "s.csv").exists()


def test_text_from_data_cannot_drive_the_terminal(tmp_path):
    # an OSC (window title) in a group value and a CSI (clear screen) in a column name
    (tmp_path / "in.csv").write_text(
        "text,la\x1b[2Jng\nthe cat sat,\x1b]0;pwned\x07en\nthe cat sat down,\x9bzh\n",
        encoding="utf-8")
    r = overlap_cli("scan", "in.csv", "--fields", "text", "--by", "la\x1b[2Jng", cwd=tmp_path)
    assert r.returncode == 0, r.stderr.decode()
    shown = r.stdout.decode() + r.stderr.decode()
    assert "\x1b" not in shown and "\x07" not in shown and "\x9b" not in shown
    assert "\\x1b]0;pwned\\x07en" in shown


def test_escape_controls_and_encodable():
    assert escape_controls("a\tb\nc\x1b[0m\x7f\x85\u202e") == "a\tb\nc\\x1b[0m\\x7f\\x85\\u202e"
    assert escape_controls("今天 ≥ ok") == "今天 ≥ ok"
    assert encodable("≥0.5 今", "cp1252") == ">=0.5 \\u4eca"
    assert encodable("≥0.5 今", "utf-8") == "≥0.5 今"
    assert encodable("≥", "no-such-codec") == ">="


# ------------------------------------------------------------------ targets
@POSIX
def test_a_special_file_is_never_replaced(tmp_path):
    # `--out /dev/null --overwrite` as root replaced the device with a file; a
    # named pipe stands in for it here
    small_table(tmp_path)
    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)
    r = overlap_cli("dedup", "in.csv", "--fields", "text", "--out", "pipe.csv", "--overwrite",
                    cwd=tmp_path)
    assert r.returncode == 2 and "is a named pipe" in r.stderr.decode()
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    with pytest.raises(OutputError, match="named pipe"):
        with atomic_write(fifo) as fh:
            fh.write("x")
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


@POSIX
def test_an_overwritten_file_keeps_its_mode(tmp_path):
    small_table(tmp_path)
    out = tmp_path / "out.csv"
    out.write_text("old\n")
    os.chmod(out, 0o600)
    r = overlap_cli("dedup", "in.csv", "--fields", "text", "--out", "out.csv", "--overwrite",
                    cwd=tmp_path)
    assert r.returncode == 0, r.stderr.decode()
    assert out.read_text(encoding="utf-8").startswith("text,lang")
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o600
    with atomic_write(out) as fh:
        fh.write("new\n")
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o600


def test_a_missing_output_folder_is_refused_unless_asked(tmp_path):
    small_table(tmp_path)
    r = overlap_cli("dedup", "in.csv", "--fields", "text", "--out", "no/such/dir/o.csv",
                    cwd=tmp_path)
    assert r.returncode == 2 and "no/such/dir does not exist" in r.stderr.decode()
    assert not (tmp_path / "no").exists()
    r = overlap_cli("dedup", "in.csv", "--fields", "text", "--out", "no/such/dir/o.csv",
                    "--parents", cwd=tmp_path)
    assert r.returncode == 0, r.stderr.decode()
    assert (tmp_path / "no/such/dir/o.csv").exists()


def test_a_full_disk_names_the_output(tmp_path):
    small_table(tmp_path)
    code = (
        "import errno, sys, overlap.pipeline.tables as t\n"
        "def full(path, table, fmt=None, **kw):\n"
        "    open(path, 'w').write('half')\n"
        "    raise OSError(errno.ENOSPC, 'No space left on device')\n"
        "t.write_table = full\n"
        "from overlap.cli import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    r = subprocess.run([sys.executable, "-c", code, "dedup", "in.csv", "--fields", "text",
                        "--out", "out.csv"], cwd=tmp_path, capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=PKG_ROOT), timeout=120)
    assert r.returncode == 1
    assert r.stderr.strip().splitlines()[-1] == ("overlap: error: out.csv: could not be written (No space left "
                                "on device); the output was not changed")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.csv"]


# ------------------------------------------------------------------ commits
def _two_outputs(tmp_path: Path) -> tuple[Outputs, Path, Path]:
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("old a")
    outs = Outputs(overwrite=True)
    outs.file(a)
    outs.file(b)
    outs.check()
    Path(outs.stage(a)).write_text("new a")
    Path(outs.stage(b)).write_text("new b")
    return outs, a, b


def test_a_rename_that_fails_puts_back_the_set(tmp_path, monkeypatch):
    outs, a, b = _two_outputs(tmp_path)
    real_replace = os.replace

    def failing(src, dst):
        if os.fspath(dst) == os.fspath(b):
            raise OSError(errno.EXDEV, "cross-device link")
        return real_replace(src, dst)

    monkeypatch.setattr(os, "replace", failing)
    with pytest.raises(OSError, match="cross-device"):
        outs.commit()
    monkeypatch.undo()
    assert a.read_text() == "old a" and not b.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt"]


@POSIX
def test_ctrl_c_during_the_renames_waits_for_the_whole_set(tmp_path, monkeypatch,
                                                          sigint_reaches_children):
    outs, a, b = _two_outputs(tmp_path)
    real_replace = os.replace
    sent = []

    def interrupting(src, dst):
        if not sent:
            sent.append(dst)
            os.kill(os.getpid(), signal.SIGINT)
        return real_replace(src, dst)

    monkeypatch.setattr(os, "replace", interrupting)
    with pytest.raises(KeyboardInterrupt):
        outs.commit()
    monkeypatch.undo()
    assert sent and a.read_text() == "new a" and b.read_text() == "new b"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt", "b.txt"]


def test_write_errors_other_than_the_device_pass_unchanged(tmp_path):
    outs = Outputs()
    target = outs.file(tmp_path / "x.csv")
    with pytest.raises(PermissionError):
        with outs:
            outs.stage(target)
            raise PermissionError(errno.EACCES, "denied")
    with pytest.raises(OutputWriteError, match="x.csv: could not be written"):
        with outs:
            outs.stage(target)
            raise OSError(errno.EDQUOT, "Disk quota exceeded")


# ------------------------------------------------------------------ --out -
def test_scan_out_dash_writes_the_scores_to_stdout_and_the_report_to_stderr(tmp_path):
    small_table(tmp_path)
    r = overlap_cli("scan", "in.csv", "--fields", "text", "--out", "-", cwd=tmp_path)
    assert r.returncode == 0, r.stderr.decode()
    lines = r.stdout.decode("utf-8").splitlines()
    assert lines[0].startswith("eval_index,lang,score,") and len(lines) == 5
    err = r.stderr.decode()
    assert "scores written to stdout (csv)" in err and "eval: 4 samples" in err
    assert not (tmp_path / "-").exists()


def test_out_format_names_the_format_for_stdout_and_files(tmp_path):
    import json

    small_table(tmp_path)
    r = overlap_cli("scan", "in.csv", "--fields", "text", "--out", "-", "--out-format", "jsonl",
                    cwd=tmp_path)
    rows = [json.loads(x) for x in r.stdout.decode("utf-8").splitlines()]
    assert [x["eval_index"] for x in rows] == [0, 1, 2, 3]
    r = overlap_cli("scan", "in.csv", "--fields", "text", "--out", "scores.data",
                    "--out-format", "tsv", cwd=tmp_path)
    assert r.returncode == 0, r.stderr.decode()
    assert (tmp_path / "scores.data").read_text(encoding="utf-8").startswith("eval_index\tlang")


def test_dedup_out_dash_writes_the_kept_rows_in_the_input_form(tmp_path):
    small_table(tmp_path)
    r = overlap_cli("dedup", "in.csv", "--fields", "text", "--out", "-", cwd=tmp_path)
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout.decode("utf-8").splitlines() == [
        "text,lang", "the cat sat on a mat,en", "a dog ran,de", "the dog ran far,de"]
    assert "-> stdout" in r.stderr.decode()
    (tmp_path / "d.txt").write_text("a b c __eou__ d e __eou__\na b c __eou__ d e __eou__\n",
                                    encoding="utf-8")
    r = overlap_cli("dedup", "d.txt", "--out", "-", cwd=tmp_path)
    assert r.stdout.decode("utf-8") == "a b c __eou__ d e __eou__\n"


def test_stdout_refuses_parquet_and_only_out_may_be_dash(tmp_path):
    small_table(tmp_path)
    r = overlap_cli("dedup", "in.csv", "--fields", "text", "--out", "-", "--out-format",
                    "parquet", cwd=tmp_path)
    assert r.returncode == 2 and "Parquet is binary" in r.stderr.decode()
    r = overlap_cli("scan", "in.csv", "--fields", "text", "--summary", "-", cwd=tmp_path)
    assert r.returncode == 2 and "only --out can be -" in r.stderr.decode()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.csv"]


def test_stdout_data_is_utf8_whatever_the_console(tmp_path):
    (tmp_path / "in.csv").write_text("text\n今天天气 好\n今天天气 好 吧\n", encoding="utf-8")
    r = overlap_cli("scan", "in.csv", "--out", "-", cwd=tmp_path,
                    env={"PYTHONIOENCODING": "cp1252"})
    assert r.returncode == 0, r.stderr.decode("cp1252", "replace")
    assert "今天天气 好 吧" in r.stdout.decode("utf-8")
