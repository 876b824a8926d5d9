"""Plain-Python definition of what a gzip file holds (RFC 1952 and the ``gzip``
tool's rules), the reference of :mod:`overlap._gzip`; and a builder of members.

A file is zero or more members one after another; NUL bytes may follow a
member (padding, skipped); an empty file is empty.  :func:`inflate` returns
the inflated bytes or raises :class:`GzipDamage` with what is wrong and
where: ``"not gzip"`` (the file does not start with a member), ``"trailing"``
(bytes after a member, past its padding, that do not start one: at their
offset), ``"damaged"`` (a member's header, data or checks are wrong: at the
member's start) and ``"truncated"`` (a member cut short: at its start).
Headers are parsed and checks (header CRC-16, CRC-32, length) computed here;
the deflate data are inflated by zlib's raw decoder.
"""

from __future__ import annotations

import struct
import zlib

MAGIC = b"\x1f\x8b"
_FHCRC, _FEXTRA, _FNAME, _FCOMMENT, _RESERVED = 2, 4, 8, 16, 0xE0


class GzipDamage(ValueError):
    """``kind`` ("not gzip", "trailing", "damaged", "truncated") at byte ``offset``."""

    def __init__(self, kind: str, offset: int) -> None:
        super().__init__(f"{kind} at byte {offset}")
        self.kind, self.offset = kind, offset


def inflate(data: bytes) -> bytes:
    """Every member of the gzip file ``data`` inflated, in order (see the module notes)."""
    out, at, members = [], 0, 0
    while True:
        if members:
            while at < len(data) and data[at] == 0:
                at += 1
        if at == len(data):
            return b"".join(out)
        if data[at:at + 2] != MAGIC:
            raise GzipDamage("trailing" if members else "not gzip", at)
        members += 1
        body, at = _member(data, at)
        out.append(body)


def _member(data: bytes, start: int) -> tuple[bytes, int]:
    """The inflated bytes of the member at ``start``, and where it ends."""

    def need(end: int) -> None:
        if end > len(data):
            raise GzipDamage("truncated", start)

    need(start + 10)
    method, flags = data[start + 2], data[start + 3]
    if method != 8 or flags & _RESERVED:
        raise GzipDamage("damaged", start)
    p = start + 10
    if flags & _FEXTRA:
        need(p + 2)
        p += 2 + int.from_bytes(data[p:p + 2], "little")
        need(p)
    for flag in (_FNAME, _FCOMMENT):
        if flags & flag:
            nul = data.find(b"\0", p)
            if nul < 0:
                raise GzipDamage("truncated", start)
            p = nul + 1
    if flags & _FHCRC:
        need(p + 2)
        if int.from_bytes(data[p:p + 2], "little") != zlib.crc32(data[start:p]) & 0xFFFF:
            raise GzipDamage("damaged", start)
        p += 2
    d = zlib.decompressobj(-15)
    try:
        body = d.decompress(data[p:])
    except zlib.error:
        raise GzipDamage("damaged", start) from None
    if not d.eof:
        raise GzipDamage("truncated", start)
    p = len(data) - len(d.unused_data)
    need(p + 8)
    crc, size = struct.unpack("<II", data[p:p + 8])
    if crc != zlib.crc32(body) or size != len(body) & 0xFFFFFFFF:
        raise GzipDamage("damaged", start)
    return body, p + 8


def member(payload: bytes, level: int = 6, name: bytes | None = None,
           comment: bytes | None = None, extra: bytes | None = None,
           header_crc: bool = False, mtime: int = 0) -> bytes:
    """One gzip member of ``payload``: deflate ``level`` (0: stored blocks) and
    the optional header fields (file name, comment, extra field, header CRC)."""
    flags = ((_FEXTRA if extra is not None else 0) | (_FNAME if name is not None else 0)
             | (_FCOMMENT if comment is not None else 0) | (_FHCRC if header_crc else 0))
    head = MAGIC + bytes([8, flags]) + struct.pack("<I", mtime) + b"\0\xff"
    if extra is not None:
        head += struct.pack("<H", len(extra)) + extra
    for field in (name, comment):
        if field is not None:
            head += field.replace(b"\0", b"") + b"\0"
    if header_crc:
        head += struct.pack("<H", zlib.crc32(head) & 0xFFFF)
    c = zlib.compressobj(level, zlib.DEFLATED, -15)
    body = c.compress(payload) + c.flush()
    return head + body + struct.pack("<II", zlib.crc32(payload), len(payload) & 0xFFFFFFFF)
