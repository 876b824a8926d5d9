"""Safe output: never over an input, never half a file, never half a set of files.

Every command and every writer of the application layer writes through this
module.

- :func:`atomic_write` writes one file to a temporary name in the same folder
  and renames it over the target only once the file is complete, so an
  interrupted or failing write leaves the old file (or no file), never a half one.
- :class:`Outputs` plans a command's whole set of output files before any work:
  it refuses a target that is one of the inputs or lies inside an input folder,
  refuses an existing file or non-empty folder unless ``overwrite``, and checks
  that every target folder is writable.  The files are then written to
  temporary names (:meth:`Outputs.stage`) and renamed into place together by
  :meth:`Outputs.commit`; on any failure (or Ctrl-C) :meth:`Outputs.abort`
  deletes the temporary files and the folders it created, so a failure midway
  leaves no partial set of outputs.  The renames run with SIGINT, SIGTERM and
  SIGHUP held back (delivered once they end), and a rename that fails puts back every file replaced
  before it: the set of outputs is all new or all old.

A file that is replaced keeps its permission bits; a special file (a device
such as ``/dev/null``, a pipe, a socket) is never replaced by a regular one.
A write that fails for want of space names the output it was writing.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import signal
import stat
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import IO, Any

from .._validation import type_name

__all__ = ["OutputError", "OutputWriteError", "atomic_write", "temporary_name", "Outputs",
           "planned", "write_json"]


class OutputError(ValueError):
    """An output location that must not or cannot be written (the message says why)."""


class OutputWriteError(OSError):
    """Writing an output failed (disk full, quota, I/O error); the message names it."""

    def __str__(self) -> str:
        return str(self.strerror)


#: errno values of a write that failed because of the device, not the data
_DEVICE_ERRORS = {errno.ENOSPC, errno.EFBIG, errno.EIO, errno.EROFS,
                  getattr(errno, "EDQUOT", errno.ENOSPC)}

#: signals held back while a set of outputs is renamed into place
_HELD = tuple(getattr(signal, n) for n in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, n))


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """Hold back SIGINT/SIGTERM/SIGHUP for the block; each that came is raised again
    once it ends (Ctrl-C then raises KeyboardInterrupt).

    The Python-level handlers are swapped, not the thread's signal mask: a
    signal may reach any thread (OpenMP's workers too), but Python runs its
    handlers in the main thread, the only one allowed to swap them.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    came: list[int] = []
    old = {}
    for sig in _HELD:
        with contextlib.suppress(OSError, ValueError):
            old[sig] = signal.signal(sig, lambda signum, frame: came.append(signum))
    try:
        yield
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
        for sig in dict.fromkeys(came):
            signal.raise_signal(sig)


def _special_kind(path: str) -> str | None:
    """What ``path`` is when it exists and is neither a regular file nor a folder."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    for test, kind in ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISFIFO, "a named pipe"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return kind
    return "a special file"


def _keep_mode(tmp: str, target: str) -> None:
    """Give ``tmp`` the permission bits of the regular file ``target`` it will replace."""
    try:
        st = os.stat(target)
    except OSError:
        return
    if stat.S_ISREG(st.st_mode):
        os.chmod(tmp, stat.S_IMODE(st.st_mode))


def _named_write_error(e: OSError, shown: str) -> OSError:
    """``e`` as an OutputWriteError naming ``shown`` when the device failed, else ``e``."""
    if isinstance(e, OutputWriteError) or e.errno not in _DEVICE_ERRORS:
        return e
    return OutputWriteError(e.errno, f"{shown}: could not be written ({e.strerror}); "
                                     "the output was not changed")


def _fspath(path: Any, name: str) -> str:
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"{name} must be a str or path-like, got {type_name(path)}")
    p = os.fspath(path)
    if not isinstance(p, str) or not p:
        raise ValueError(f"{name} must be a non-empty path, got {path!r}")
    return p


def temporary_name(path: str | os.PathLike, kind: str = "partial") -> str:
    """A fresh hidden name next to ``path`` that keeps its extension.

    ``out/scores.csv`` -> ``out/.scores.partial-1a2b3c4d.csv``: same folder (so the
    final rename is atomic), same extension (so format inference still works).
    ``kind`` names what the file is (``replaced``: an old output moved aside).
    """
    p = os.fspath(path)
    folder, base = os.path.split(p)
    stem, ext = os.path.splitext(base)
    return os.path.join(folder, f".{stem}.{kind}-{secrets.token_hex(4)}{ext}")


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike, mode: str = "w", **open_kwargs: Any) -> Iterator[IO]:
    """Open a temporary file next to ``path``; rename it to ``path`` when the block ends.

    When the block raises (or is interrupted) the temporary file is deleted and
    ``path`` is left as it was.

    Parameters
    ----------
    path : str or path-like
    mode : {"w", "wb"}
    **open_kwargs
        Passed to :func:`open` (encoding, newline).
    """
    p = _fspath(path, "path")
    if mode not in ("w", "wb"):
        raise ValueError(f"mode must be 'w' or 'wb', got {mode!r}")
    kind = _special_kind(p)
    if kind is not None:
        raise OutputError(f"{p}: is {kind}; refusing to replace it with a file")
    tmp = temporary_name(p)
    try:
        try:
            with open(tmp, mode, **open_kwargs) as fh:
                yield fh
        except OSError as e:
            raise _named_write_error(e, p) from e
        _keep_mode(tmp, p)
        os.replace(tmp, p)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise


def _real(p: str) -> str:
    return os.path.realpath(os.path.abspath(p))


def _inside(child: str, parent: str) -> bool:
    """True when real path ``child`` is ``parent`` or lies below it."""
    try:
        return os.path.commonpath([child, parent]) == parent
    except ValueError:  # different drives
        return False


def _nearest_existing(p: str) -> str:
    d = os.path.abspath(p)
    while not os.path.exists(d):
        parent = os.path.dirname(d)
        if parent == d:
            break
        d = parent
    return d


class Outputs:
    """The output files of one run: checked before the work, committed together.

    Parameters
    ----------
    inputs : iterable of path
        Files and folders the run reads.  No output may be one of them or lie
        inside an input folder.
    overwrite : bool, default False
        Allow replacing existing output files and writing into a non-empty
        output folder (only the files this run writes are replaced).
    make_parents : bool, default True
        Create missing folders above an output.  False refuses an output
        whose folder does not exist (the command line's default; ``--parents``
        allows it), so that a mistyped path is not silently created.

    Notes
    -----
    Use: ``outs = Outputs([input_path]); target = outs.file(out_path);
    outs.check()`` before the work, then ``with outs: write(outs.stage(target))``
    (commit on success, abort on any exception).
    """

    def __init__(self, inputs: Iterable[str | os.PathLike] = (), *, overwrite: bool = False,
                 make_parents: bool = True):
        if not isinstance(overwrite, bool):
            raise TypeError(f"overwrite must be a bool, got {type_name(overwrite)}")
        if not isinstance(make_parents, bool):
            raise TypeError(f"make_parents must be a bool, got {type_name(make_parents)}")
        self.overwrite = overwrite
        self.make_parents = make_parents
        self._writing: str | None = None  # the output staged last (named in write errors)
        self._inputs: list[tuple[str, str]] = []  # (as given, real path)
        for x in inputs:
            p = _fspath(x, "inputs")
            self._inputs.append((p, _real(p)))
        self._files: dict[str, str] = {}  # final path -> as given
        self._dirs: list[str] = []
        self._staged: dict[str, str] = {}  # final path -> temporary path
        self._created: list[str] = []  # folders made by this run, outermost first
        self.written: list[str] = []

    # ------------------------------------------------------------- planning
    def _refuse_inputs(self, given: str, real: str) -> None:
        for name, r in self._inputs:
            same = real == r
            if not same and os.path.exists(real) and os.path.exists(r):
                with contextlib.suppress(OSError):
                    same = os.path.samefile(real, r)
            if same:
                raise OutputError(f"{given}: is the input {name}; refusing to write over an input")
            if os.path.isdir(r) and _inside(real, r):
                raise OutputError(
                    f"{given}: lies inside the input folder {name}; choose an output "
                    "outside it"
                )

    def _check_parent(self, given: str, real: str) -> None:
        parent = os.path.dirname(real)
        if not self.make_parents and not os.path.isdir(parent):
            shown = os.path.dirname(given) or parent
            raise OutputError(
                f"{given}: the folder {shown} does not exist; create it first "
                "(or give --parents, make_parents=True)"
            )

    def file(self, path: str | os.PathLike) -> str:
        """Plan the output file ``path``; returns it as a str.

        Raises
        ------
        OutputError
            When it is an input or inside an input folder, is a folder, or
            exists and ``overwrite`` is False.
        """
        given = _fspath(path, "path")
        real = _real(given)
        self._refuse_inputs(given, real)
        if os.path.isdir(real):
            raise OutputError(f"{given}: is a folder, expected a file name")
        kind = _special_kind(real)
        if kind is not None:
            raise OutputError(f"{given}: is {kind}; refusing to replace it with a file")
        if os.path.lexists(given) and not self.overwrite:
            raise OutputError(f"{given}: exists; give --overwrite (overwrite=True) to replace it")
        self._check_parent(given, real)
        if real in self._files:
            raise OutputError(f"{given}: named twice as an output")
        self._files[real] = given
        return given

    def directory(self, path: str | os.PathLike) -> str:
        """Plan the output folder ``path`` (created when missing); returns it as a str.

        Raises
        ------
        OutputError
            When it is an input or inside an input folder, is a file, or is a
            non-empty folder and ``overwrite`` is False.
        """
        given = _fspath(path, "path")
        real = _real(given)
        self._refuse_inputs(given, real)
        if not os.path.exists(real):
            self._check_parent(given, real)
        if os.path.exists(real):
            if not os.path.isdir(real):
                raise OutputError(f"{given}: exists and is not a folder")
            if os.listdir(real) and not self.overwrite:
                raise OutputError(
                    f"{given}: folder is not empty; give --overwrite (overwrite=True) to "
                    "write into it"
                )
        self._dirs.append(real)
        return given

    def file_in(self, folder: str, name: str) -> str:
        """Plan the file ``name`` inside an output folder planned with :meth:`directory`."""
        path = os.path.join(folder, name)
        real = _real(path)
        self._refuse_inputs(path, real)
        if os.path.isdir(real):
            raise OutputError(f"{path}: is a folder, expected a file name")
        kind = _special_kind(real)
        if kind is not None:
            raise OutputError(f"{path}: is {kind}; refusing to replace it with a file")
        self._files[real] = path
        return path

    def check(self) -> None:
        """Check every planned location is writable (call before the work starts).

        Raises
        ------
        OutputError
            Naming the first location that cannot be written.
        """
        folders = {os.path.dirname(r) for r in self._files} | set(self._dirs)
        for d in sorted(folders):
            base = _nearest_existing(d)
            shown = d if base == d else f"{d} (its existing parent {base})"
            if not os.path.isdir(base):
                raise OutputError(f"{shown}: not a folder; cannot write there")
            try:
                fd, probe = tempfile.mkstemp(prefix=".overlap-probe-", dir=base)
            except OSError as e:
                raise OutputError(f"{shown}: cannot write there ({e.strerror})") from None
            os.close(fd)
            os.remove(probe)

    # ------------------------------------------------------------ writing
    def _makedirs(self, d: str) -> None:
        missing = []
        while d and not os.path.isdir(d):
            missing.append(d)
            parent = os.path.dirname(d)
            if parent == d:
                break
            d = parent
        for m in reversed(missing):
            os.mkdir(m)
            self._created.append(m)

    def stage(self, path: str | os.PathLike) -> str:
        """The temporary path to write planned output ``path`` to (its folder is created).

        The file appears under its real name only at :meth:`commit`.
        """
        real = _real(_fspath(path, "path"))
        if real not in self._files:
            raise ValueError(f"{os.fspath(path)}: not a planned output (plan it with file())")
        self._makedirs(os.path.dirname(real))
        tmp = temporary_name(real)
        self._staged[real] = tmp
        self._writing = self._files[real]
        return tmp

    def commit(self) -> list[str]:
        """Rename every staged file into place, all or none; returns the paths, as planned.

        Signals are held back for the renames.  Each file replaced is first
        moved aside; when a rename fails, every file renamed before it is put
        back (a new file removed) and the error is raised.
        """
        done: list[str] = []
        moved: list[tuple[str, str | None]] = []  # (target, its old file moved aside)
        with _signals_held():
            try:
                for real, tmp in self._staged.items():
                    if not os.path.exists(tmp):
                        continue  # planned but not written (e.g. a plot without matplotlib)
                    _keep_mode(tmp, real)
                    aside = None
                    if os.path.lexists(real):
                        aside = temporary_name(real, "replaced")
                        os.replace(real, aside)
                    moved.append((real, aside))
                    try:
                        os.replace(tmp, real)
                    except OSError:
                        if aside is not None:
                            os.replace(aside, real)
                        moved.pop()
                        raise
                    done.append(self._files[real])
            except BaseException:
                for real, aside in reversed(moved):
                    with contextlib.suppress(OSError):
                        if aside is None:
                            os.remove(real)
                        else:
                            os.replace(aside, real)
                self.abort()
                raise
            for _, aside in moved:
                if aside is not None:
                    with contextlib.suppress(OSError):
                        os.remove(aside)
            self._staged.clear()
        self.written = done
        return done

    def abort(self) -> None:
        """Delete the staged files and the folders this run created (when empty)."""
        with _signals_held():
            for tmp in self._staged.values():
                with contextlib.suppress(OSError):
                    os.remove(tmp)
            self._staged.clear()
            for d in reversed(self._created):
                with contextlib.suppress(OSError):
                    os.rmdir(d)
            self._created.clear()

    def __enter__(self) -> Outputs:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is None:
            self.commit()
            return
        self.abort()
        if isinstance(exc, OSError) and self._writing is not None:
            named = _named_write_error(exc, self._writing)
            if named is not exc:
                raise named from exc


@contextlib.contextmanager
def planned(outputs: Outputs | None, plan: Callable[[Outputs], None],
            overwrite: bool = False) -> Iterator[Outputs]:
    """The caller's ``outputs``, or new ones planned by ``plan`` and checked here.

    A writer that takes ``outputs=`` from a caller (who commits them) or makes
    its own: its own are committed when the block ends, or aborted when it
    raises; the caller's are left to the caller.
    """
    if outputs is not None:
        yield outputs
        return
    own = Outputs(overwrite=overwrite)
    plan(own)
    own.check()
    with own:
        yield own


def write_json(outputs: Outputs, path: str, data: Any) -> None:
    """Stage ``data`` as indented UTF-8 JSON for the planned output ``path``."""
    import json

    with open(outputs.stage(path), "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=2, ensure_ascii=False)
        fh.write("\n")


def write_result_folder(out: Any, result: Any, kind: type, plan: Callable[[Outputs], None],
                        overwrite: bool, outputs: Outputs | None,
                        write_data: Callable[[Outputs, str], list[str]]) -> list[str]:
    """Write a pipeline result into folder ``out``: its data files, then ``report.json``.

    ``result`` must be a ``kind`` (with ``report`` and ``files``);
    ``write_data(outputs, folder)`` stages the data files and returns their
    paths.  The outputs are the caller's or new ones made by ``plan``
    (:func:`planned`); the paths written are returned and stored in
    ``result.files``.
    """
    if not isinstance(out, (str, os.PathLike)):
        raise TypeError(f"out must be a str or path-like, got {type_name(out)}")
    if not isinstance(result, kind):
        raise TypeError(f"result must be a {kind.__name__}, got {type_name(result)}")
    d = os.fspath(out)
    with planned(outputs, plan, overwrite) as outs:
        files = write_data(outs, d)
        p = os.path.join(d, "report.json")
        write_json(outs, p, result.report.as_dict())
        files.append(p)
    result.files[:] = files
    return files
