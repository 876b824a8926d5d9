"""Reading text files line by line, safely: shared by the whole-file and the chunked readers.

* :func:`bounded_lines` reads raw lines with ``readline(limit)``, so a line
  longer than :func:`max_line_bytes` (default :data:`MAX_LINE_BYTES`, 64 MiB)
  is refused with its file and line number before it is held in memory (also
  inside a ``.gz`` or ``.zst`` that inflates to one huge line).
* :func:`open_binary` opens a file for reading bytes, inflating ``.gz``
  (gzip: :mod:`overlap._gzip`, by the optional ``isal`` package or the
  stdlib's ``zlib``) and ``.zst`` (Zstandard, by pyarrow or the optional
  ``zstandard`` package) files; :func:`uncompressed_name` is the name the
  format is told from.
* :func:`line_limit` sets that limit for a block of code (the command line's
  ``--max-line-bytes``); readers also take ``max_line_bytes=`` directly.
* :func:`text_file_kind` is the one rule for ``.txt`` files: DailyDialog when
  the first non-empty line holds ``__eou__``, else one sample per line.
* :func:`check_str` refuses lone surrogates (``"\\ud800"`` is valid JSON but
  not encodable text) at read time, naming file and line.
* :func:`json_line` parses one JSON line, turning a too-deep nesting
  (``RecursionError``) into a ``ValueError`` with file and line.
"""

from __future__ import annotations

import contextlib
import contextvars
import io
import json
import os
import re
from collections.abc import Iterator
from typing import IO, Any

from ._gzip import GzipInflating
from ._optional import MissingExtra

__all__ = ["MAX_LINE_BYTES", "max_line_bytes", "line_limit", "bounded_lines",
           "text_file_kind", "check_str", "check_values", "json_line", "check_path_name",
           "EOU", "COMPRESSIONS", "uncompressed_name", "open_binary"]

#: Default longest line read, in bytes (after inflation of a compressed file).
MAX_LINE_BYTES = 64 * 1024 * 1024

#: Inflated bytes of a ``.zst`` file read at a time.
ZSTD_BUFFER = 1 << 20
#: Inflated bytes of a ``.gz`` file read at a time (a larger read goes straight
#: to the decoder).
GZIP_BUFFER = 1 << 20

#: Utterance terminator of DailyDialog-style files.
EOU = "__eou__"

_LIMIT: contextvars.ContextVar[int] = contextvars.ContextVar("overlap_max_line_bytes",
                                                             default=MAX_LINE_BYTES)
_SURROGATE = re.compile("[\ud800-\udfff]")
# a JSON \u escape of a surrogate code point (a valid pair decodes to one character)
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def max_line_bytes(value: int | None = None) -> int:
    """``value`` checked, or the limit in force (:func:`line_limit`, default 64 MiB)."""
    if value is None:
        return _LIMIT.get()
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"max_line_bytes must be an int, got {type(value).__name__}")
    if value < 1:
        raise ValueError(f"max_line_bytes must be >= 1, got {value}")
    return value


@contextlib.contextmanager
def line_limit(value: int | None) -> Iterator[None]:
    """Within the block, readers refuse lines longer than ``value`` bytes (None: unchanged)."""
    if value is None:
        yield
        return
    token = _LIMIT.set(max_line_bytes(value))
    try:
        yield
    finally:
        _LIMIT.reset(token)


def too_long(path: str, lineno: int, limit: int) -> ValueError:
    return ValueError(f"{path}:{lineno}: line longer than {limit:,} bytes (the limit; "
                      f"raise it with --max-line-bytes or max_line_bytes=)")


def bounded_lines(fh: IO[bytes], path: str, limit: int | None = None,
                  first_line: int = 0) -> Iterator[bytes]:
    """Raw lines of a binary file (newline kept), each at most ``limit`` bytes.

    Raises ValueError naming ``path`` and the line when a line is longer; at
    most ``limit + 1`` bytes of it are ever read into memory.  ``first_line``:
    the lines of ``path`` before the first line of ``fh`` (a stream that starts
    inside the file).
    """
    limit = max_line_bytes(limit)
    lineno = first_line
    readline = fh.readline
    while True:
        raw = readline(limit + 1)
        if not raw:
            return
        lineno += 1
        if len(raw) > limit and not (len(raw) == limit + 1 and raw.endswith(b"\n")):
            raise too_long(path, lineno, limit)
        yield raw


def decode_line(raw: bytes, path: str, lineno: int, first: bool = False) -> str:
    """One raw line as str (a BOM on the first line dropped), errors with file and line."""
    try:
        return raw.decode("utf-8-sig" if first else "utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"{path}:{lineno}: not UTF-8 text ({e.reason})") from None


#: Compressed inputs: the suffix and what inflates it (see :func:`open_binary`).
COMPRESSIONS = (".gz", ".zst")


def uncompressed_name(path: str) -> str:
    """``path`` without a compression suffix (``a.jsonl.zst`` -> ``a.jsonl``)."""
    for suffix in COMPRESSIONS:
        if path.endswith(suffix):
            return path[:-len(suffix)]
    return path


class _Inflating(io.RawIOBase):
    """The inflated bytes of a compressed stream (``read(n)``), as a raw stream;
    a file the decoder refuses (truncated, not Zstandard) is a ValueError
    naming it."""

    def __init__(self, inflater: Any, path: str, check_end: Any = None) -> None:
        self._inflater, self._path, self._check_end = inflater, path, check_end

    def readable(self) -> bool:
        return True

    def readinto(self, buf: Any) -> int:
        try:
            data = self._inflater.read(len(buf))
        except Exception as e:  # pyarrow's OSError, zstandard's ZstdError
            raise ValueError(f"{self._path}: cannot inflate this Zstandard file: "
                             f"{str(e) or type(e).__name__}") from None
        if not data and self._check_end is not None:
            check, self._check_end = self._check_end, None
            check()
        n = len(data)
        buf[:n] = data
        return n

    def close(self) -> None:
        try:
            self._inflater.close()
        finally:
            super().close()


class InflatedReader(io.BufferedReader):
    """A buffered reader of inflated bytes; ``fileobj`` is the compressed file
    (its position: the compressed bytes read)."""

    fileobj: IO[bytes]


_ZSTD_MAGIC = 0xFD2FB528
_FCS_BYTES = (0, 2, 4, 8)
_DID_BYTES = (0, 1, 2, 4)


def check_zstd_frames(path: str) -> None:
    """Refuse a Zstandard file whose frames do not end exactly at its end.

    The ``zstandard`` package's reader ends quietly at a truncated frame; this
    walk of the frame and block headers (RFC 8878), seeking over the block
    contents, finds it."""
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        def take(n: int) -> bytes:
            b = f.read(n)
            if len(b) != n:
                raise ValueError(f"{path}: cannot inflate this Zstandard file: it is truncated")
            return b

        while f.tell() < size:
            magic = int.from_bytes(take(4), "little")
            if 0x184D2A50 <= magic <= 0x184D2A5F:  # a skippable frame
                f.seek(int.from_bytes(take(4), "little"), os.SEEK_CUR)
                continue
            if magic != _ZSTD_MAGIC:
                raise ValueError(f"{path}: cannot inflate this Zstandard file: a frame "
                                 f"at byte {f.tell() - 4} has no Zstandard magic number")
            fhd = take(1)[0]
            single = (fhd >> 5) & 1
            fcs = _FCS_BYTES[fhd >> 6] or single
            take((0 if single else 1) + _DID_BYTES[fhd & 3] + fcs)
            last = 0
            while not last:
                h = int.from_bytes(take(3), "little")
                last, kind = h & 1, (h >> 1) & 3
                f.seek(1 if kind == 1 else h >> 3, os.SEEK_CUR)
            if (fhd >> 2) & 1:
                f.seek(4, os.SEEK_CUR)
        if f.tell() != size:
            raise ValueError(f"{path}: cannot inflate this Zstandard file: it is truncated")


def _open_zstd(raw: IO[bytes], path: str) -> tuple[Any, Any]:
    """``(compressed file, read(n) source of its inflated bytes)`` of a Zstandard
    file opened as ``raw``: pyarrow's decoder (on its own handle of the file,
    read without the GIL), else the ``zstandard`` package's (every frame)."""
    try:
        import pyarrow as pa
    except ImportError:
        pass
    else:
        src = pa.OSFile(path)
        raw.close()
        return src, pa.CompressedInputStream(src, "zstd")
    try:
        import zstandard
    except ImportError:
        raise MissingExtra(f"{path}: reading .zst needs pyarrow or zstandard, neither is "
                           "installed: pip install 'overlap-metrics[zstd]'") from None
    return raw, zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True,
                                                           closefd=False)


def _zstd_end_check(path: str) -> Any:
    """What checks the end of a ``.zst`` file: nothing for pyarrow's decoder
    (it refuses a truncated frame), the frame walk for zstandard's."""
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        return lambda: check_zstd_frames(path)
    return None


def open_binary(path: str) -> IO[bytes]:
    """``path`` opened for reading bytes, inflated when its name ends in ``.gz``
    (gzip: the ``isal`` package or ``zlib`` inflates it, :mod:`overlap._gzip`)
    or ``.zst`` (Zstandard: pyarrow or the ``zstandard`` package inflates it).

    The stream of a compressed file has ``fileobj``, the file itself (whose
    position is the compressed bytes read)."""
    raw = open(path, "rb")
    try:
        if path.endswith(".gz"):
            reader = InflatedReader(GzipInflating(raw, path), GZIP_BUFFER)
            reader.fileobj = raw
            return reader
        if path.endswith(".zst"):
            file, inflater = _open_zstd(raw, path)
            try:
                reader = InflatedReader(_Inflating(inflater, path, _zstd_end_check(path)),
                                        ZSTD_BUFFER)
            except BaseException:
                file.close()
                raise
            reader.fileobj = file
            return reader
    except BaseException:
        raw.close()
        raise
    return raw


def text_file_kind(path: str | os.PathLike, probe_lines: int = 1,
                   limit: int | None = None) -> str:
    """``"dailydialog"`` or ``"text"``: the one reading rule for ``.txt`` files.

    A file is DailyDialog (one dialogue a line, utterances ended by
    ``__eou__``) when its first non-empty line holds ``__eou__``; otherwise it
    is plain text, one sample per line.  Only the start of the file is read.
    """
    p = os.fspath(path)
    seen = 0
    with contextlib.closing(open_binary(p)) as fh:
        for raw in bounded_lines(fh, p, limit):
            if not raw.strip():
                continue
            if EOU.encode() in raw:
                return "dailydialog"
            seen += 1
            if seen >= probe_lines:
                break
    return "text"


def check_str(value: str, path: str, lineno: int | str, what: str = "text") -> None:
    """Refuse a str holding a lone surrogate (it cannot be written as UTF-8)."""
    m = _SURROGATE.search(value)
    if m is not None:
        where = f"{path}:{lineno}" if isinstance(lineno, int) else f"{path}: {lineno}"
        raise ValueError(f"{where}: {what} holds a lone surrogate "
                         f"(\\u{ord(m.group()):04x}), which is not a character")


def check_values(obj: Any, path: str, lineno: int) -> None:
    """Every str in a parsed JSON value (keys too) free of lone surrogates."""
    stack = [obj]
    while stack:
        x = stack.pop()
        if isinstance(x, str):
            check_str(x, path, lineno, "a JSON string")
        elif isinstance(x, dict):
            for k, v in x.items():
                check_str(k, path, lineno, "a JSON key")
                stack.append(v)
        elif isinstance(x, list):
            stack.extend(x)


def json_line(raw: bytes, text: str, path: str, lineno: int) -> Any:
    """Parse one JSONL line; bad JSON, deep nesting and lone surrogates name file and line."""
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}:{lineno}: invalid JSON: {e.msg}") from None
    except RecursionError:
        raise ValueError(f"{path}:{lineno}: JSON nested too deeply to read") from None
    if _SURROGATE_ESCAPE.search(raw):
        check_values(obj, path, lineno)
    return obj


def check_path_name(path: str) -> None:
    """Refuse a file name that is not valid UTF-8 (it could not be written in outputs)."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"{ascii(path)}: the file name is not valid UTF-8; rename the "
                         "file") from None
