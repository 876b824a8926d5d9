"""Inflating gzip (``.gz``) files: with ISA-L when the optional ``isal`` package
is installed, else with the stdlib's ``zlib``; the same bytes and errors either way.

:class:`GzipInflating` reads a gzip file as :func:`gzip.open` does: every
member of a file of concatenated members, NUL padding after a member
skipped, an empty file empty.  ISA-L's inflate (``isal.isal_zlib``, the
``fastgz`` extra) is 2-3x faster than zlib's, and both run without the GIL.
Inflating on a background thread, one 2 MiB piece ahead of the reader, was
tried: reading a 121 MB ``.gz`` with the arrow engine on two busy cores, it
was no faster and took 10% more CPU time, so the reader's thread inflates.
Headers are parsed here (a whole header is handed to the decoder at once),
the deflate data and the trailer's checks are the decoder's.  A file
neither decoder can read is a ValueError naming it and the byte where it
went wrong, with the same words for both:

* a file that does not start with a gzip member ("not gzip data"),
* bytes after the last member that do not start one,
* a member whose compressed data or checks (CRC-32, length, header CRC)
  are wrong ("damaged"),
* a member cut short ("truncated").

The stdlib's :class:`gzip.GzipFile` said none of these with the file's name,
and read past a wrong header CRC.
"""

from __future__ import annotations

import io
import zlib
from types import ModuleType
from typing import IO, Any, cast

__all__ = ["GZIP_INPUT", "gzip_decoder", "GzipInflating"]

#: Compressed bytes read from the file at a time.
GZIP_INPUT = 1 << 20

_MAGIC = b"\x1f\x8b"
_DEFLATE = 8  # the one compression method
_FHCRC, _FEXTRA, _FNAME, _FCOMMENT, _RESERVED = 2, 4, 8, 16, 0xE0  # header flags
_GZIP_WBITS = 31  # a gzip header and trailer around a deflate stream with a 32 KiB window


def gzip_decoder() -> tuple[str, ModuleType, tuple[type[BaseException], ...]]:
    """``(name, module, errors)``: the fastest gzip decoder installed.

    ``module`` has ``decompressobj(wbits)`` (the ``zlib`` API); ``errors``
    are the exceptions it raises on damaged data."""
    try:
        from isal import isal_zlib
    except ImportError:
        return "zlib", zlib, (zlib.error,)
    error = cast("type[BaseException]", isal_zlib.error)  # its stubs say an instance
    return "isal", isal_zlib, (error, zlib.error)


class GzipInflating(io.RawIOBase):
    """The inflated bytes of the gzip file ``raw`` (named ``path`` in errors)."""

    def __init__(self, raw: IO[bytes], path: str) -> None:
        self._raw, self._path = raw, path
        self.decoder, self._zlib, self._errors = gzip_decoder()
        self._d: Any = None  # the decompressor of the member being read
        self._data = b""  # bytes read from the file and not yet inflated
        self._at = 0  # where self._data starts in the file
        self._member = 0  # where the member being read starts
        self._members = 0  # members started
        self._ended = False  # the file has no more bytes

    def readable(self) -> bool:
        return True

    def _error(self, what: str) -> ValueError:
        return ValueError(f"{self._path}: cannot inflate this gzip file: {what}")

    def _more(self) -> bool:
        """Append the next bytes of the file to ``_data``; False at its end."""
        if self._ended:
            return False
        chunk = self._raw.read(GZIP_INPUT)
        if not chunk:
            self._ended = True
            return False
        self._data = self._data + chunk if self._data else chunk
        return True

    def _start_member(self) -> bool:
        """Start the next member; False at the end of the file."""
        if self._members:  # NUL bytes may pad a file after a member
            while True:
                rest = self._data.lstrip(b"\0")
                self._at += len(self._data) - len(rest)
                self._data = rest
                if rest or not self._more():
                    break
        while len(self._data) < len(_MAGIC) and self._more():
            pass
        if not self._data:
            return False
        if not self._data.startswith(_MAGIC):
            if self._members:
                raise self._error(f"the bytes from byte {self._at} on (after the last gzip "
                                  "member) are not gzip data")
            raise self._error("it is not gzip data (no gzip magic number at its start)")
        self._member = self._at
        self._members += 1
        # the whole header goes to the decoder at once: ISA-L (isal 1.9) misreads a
        # header with a header CRC, or with two optional fields, split between calls
        while not self._header_read():
            if not self._more():
                raise self._truncated()
        self._d = self._zlib.decompressobj(_GZIP_WBITS)
        return True

    def _header_read(self) -> bool:
        """Whether ``_data`` holds the whole header of the member it starts with;
        a header the gzip format does not allow is damage."""
        data = self._data
        if len(data) < 10:
            return False
        if data[2] != _DEFLATE or data[3] & _RESERVED:
            raise self._damaged()
        flags, end = data[3], 10
        if flags & _FEXTRA:
            if len(data) < end + 2:
                return False
            end += 2 + int.from_bytes(data[end:end + 2], "little")
        for field in (_FNAME, _FCOMMENT):
            if flags & field:
                nul = data.find(b"\0", end)
                if nul < 0:
                    return False
                end = nul + 1
        if flags & _FHCRC:
            end += 2
        if len(data) < end:
            return False
        if flags & _FHCRC and (int.from_bytes(data[end - 2:end], "little")
                               != zlib.crc32(data[:end - 2]) & 0xFFFF):
            raise self._damaged()
        return True

    def _damaged(self) -> ValueError:
        return self._error(f"the gzip member at byte {self._member} is damaged")

    def _truncated(self) -> ValueError:
        return self._error(f"it is truncated (the gzip member at byte {self._member} has "
                           "no end)")

    def readinto(self, buf: Any) -> int:
        want = len(buf)
        if want == 0:
            return 0
        while True:
            if self._d is None and not self._start_member():
                return 0
            if not self._data:
                self._more()
            data = self._data
            try:
                out = self._d.decompress(data, want)
            except self._errors:
                raise self._damaged() from None
            ended = self._d.eof
            rest = self._d.unused_data if ended else self._d.unconsumed_tail
            self._at += len(data) - len(rest)
            self._data = rest
            if ended:
                self._d = None
            if out:
                n = len(out)
                buf[:n] = out
                return n
            if not ended and len(rest) == len(data) and not self._more():
                raise self._truncated()

    def close(self) -> None:
        """Close this stream and the file."""
        self._d, self._data = None, b""
        try:
            self._raw.close()
        finally:
            super().close()
