"""Ctrl-C sent to a running ``python -m overlap`` command, for the CLI tests."""

from __future__ import annotations

import signal
import subprocess
import sys


def interrupt_after(args: list[str], marker: bytes, *, cwd, env) -> tuple[int, bytes, str]:
    """Run ``python -m overlap ARGS``, send SIGINT once ``marker`` shows on its
    stderr (the command is then inside the loop under test), and return
    ``(exit code, stdout, stderr)``."""
    p = subprocess.Popen([sys.executable, "-m", "overlap", *args], cwd=cwd, env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        first = b""
        while marker not in first:
            chunk = p.stderr.read1(64)
            assert chunk, "the command ended before " + repr(marker) + ": " + first.decode()
            first += chunk
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=60)
    finally:
        p.kill()
    return p.returncode, out, (first + err).decode()


def assert_interrupted(code: int, out: bytes, err: str) -> None:
    """Exit 130, nothing on stdout, no traceback, and one last line saying so."""
    assert code == 130, err
    assert err.strip().splitlines()[-1].split("\r")[-1].strip().endswith("overlap: interrupted")
    assert "Traceback" not in err and out == b""
