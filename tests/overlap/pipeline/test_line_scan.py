"""``_line_scan.jsonl_block_facts`` (one C pass over a JSONL block) equals the
plain-Python definition of what the arrow reader checks, on random and
adversarial blocks: braces at the very start and end, runs of spaces, tabs and
carriage returns between ``}`` and ``{``, other bytes that break the run,
newlines (which do too), and every byte value."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from overlap._line_scan import bom_after_newline, count_byte, jsonl_block_facts

from reference.readers import jsonl_block_facts as reference_facts

PIECES = [b"}", b"{", b"[", b"]", b" ", b"\t", b"\r", b"\n", b"x", b'"', b"\\", b"\x00",
          b"\xff", b"} {", b"}\r\t {", b"}\n{", b'{"text": "a"}', b"}}{{"]


@settings(max_examples=500, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(PIECES), st.binary(max_size=8)), max_size=40))
def test_facts_equal_the_definition(parts):
    block = b"".join(parts)
    assert jsonl_block_facts(block) == reference_facts(block)


def test_edges():
    assert jsonl_block_facts(b"") == (0, 0, False)
    assert jsonl_block_facts(b"}") == (0, 0, False)
    assert jsonl_block_facts(b"}{") == (0, 1, True)
    assert jsonl_block_facts(b"} \t\r{") == (0, 1, True)
    assert jsonl_block_facts(b"}\n{") == (1, 1, False)
    assert jsonl_block_facts(b"} x {") == (0, 1, False)
    assert jsonl_block_facts(b"}   ") == (0, 0, False)
    big = b'{"text": "a", "b": [1]}\n' * 100_000
    assert jsonl_block_facts(big) == (100_000, 200_000, False)
    assert jsonl_block_facts(big + b"{}  {}") == (100_000, 200_002, True)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300), st.integers(0, 255))
def test_count_byte_equals_bytes_count(block, byte):
    assert count_byte(block, byte) == block.count(bytes([byte]))


def test_count_byte_long_and_empty():
    assert count_byte(b"", 10) == 0
    block = (b"ab\ncd\n" * 50_001) + b"\xff\n"
    assert count_byte(block, 10) == 100_003
    assert count_byte(block, 0xFF) == 1
    assert count_byte(memoryview(block)[3:9], 10) == 2


BOM_PIECES = [b"\n", b"\xef", b"\xbb", b"\xbf", b"\xef\xbb\xbf", b"\n\xef\xbb\xbf", b"x", b"\xef\xbc\x8c"]


@settings(max_examples=500, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(BOM_PIECES), st.binary(max_size=6)), max_size=30))
def test_bom_after_newline_equals_find(parts):
    block = b"".join(parts)
    assert bom_after_newline(block) == (block.find(b"\n\xef\xbb\xbf") >= 0)


def test_bom_after_newline_edges():
    assert not bom_after_newline(b"")
    assert not bom_after_newline(b"\xef\xbb\xbf{}")  # the file's first line
    assert bom_after_newline(b"\n\xef\xbb\xbf")
    assert not bom_after_newline(b"\n\xef\xbb")
    assert bom_after_newline(b"{}\n" * 100_000 + b"\n\xef\xbb\xbf{}")
    assert not bom_after_newline(b"\xef\xbc\x8c\n" * 100_000)
