"""The AVX-512 kernels of the tokenizer's ASCII scan (``overlap/_ascii_simd.h``)
at their own edges, against the plain-Python definition.

The kernels classify a row 64 bytes at a time, list its runs, and hash eight
runs at a time from 8-byte words read no further than the row's last 8 bytes.
So the cases here are: rows of every length around 8 and 64 bytes, a run
crossing a 64-byte edge at every offset, runs of 1 to 200 bytes (one word
read, several, many blocks), runs ending on the row's last byte, a byte
>= 0x80 anywhere (the row then takes the non-ASCII path), and punctuation and
'_' runs split across blocks.  Each case runs at every CPU level that changes
the scan (``levels.ASCII_SCAN_LEVELS``), so the byte-by-byte scan meets the
same rows; where the CPU lacks AVX-512 that is the only level, and the test of
the switch itself is skipped with the reason.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from overlap import TokenSets, _tokenize
from overlap._kernels import _cpu
from reference import overlap as ref
from reference.levels import ASCII_SCAN_LEVELS, cpu_level

WORDPUNCT, WHITESPACE, INTL = 0, 1, 4
REF_TOKENS = {WORDPUNCT: ref.tokenize_wordpunct, WHITESPACE: ref.tokenize_whitespace,
              INTL: ref.tokenize_wordpunct}  # no ASCII code point is an intl single


@pytest.fixture(params=ASCII_SCAN_LEVELS, autouse=True)
def level(request):
    with cpu_level(request.param):
        yield request.param


def _ordered(texts: list[str], mode: int, seed: int = 0):
    data = "".join(texts).encode("utf-8")
    offsets = np.cumsum([0] + [len(t.encode("utf-8")) for t in texts]).astype(np.int64)
    indptr, hashes, _ = _tokenize.scan_utf8(offsets, np.frombuffer(data, dtype=np.uint8), mode,
                                            seed, 1, False, 2, ordered=True)
    return [hashes[indptr[i]:indptr[i + 1]].tolist() for i in range(len(texts))]


def _check(texts: list[str], modes=(WORDPUNCT, WHITESPACE, INTL), seed: int = 0) -> None:
    for mode in modes:
        got = _ordered(texts, mode, seed)
        for text, row in zip(texts, got):
            want = [ref.token_hash(t, seed) for t in REF_TOKENS[mode](text)]
            assert row == want, (mode, text)


def test_the_switch_follows_the_cpu_level():
    if not _tokenize.ascii_simd():
        with cpu_level(_cpu.cpu_level()):
            if not _tokenize.ascii_simd():
                pytest.skip("this CPU does not run AVX-512 F/BW/DQ/VL: the byte-by-byte "
                            "scan is the only one (tested at every level)")
    with cpu_level(0):
        assert not _tokenize.ascii_simd()
    with cpu_level(_cpu.cpu_level()):
        assert _tokenize.ascii_simd()


def test_rows_of_every_length_around_the_kernels_edges():
    # a row of n bytes for n in 0..140: word runs, a punctuation run, spaces
    base = "Ab_9 ,x.. THE(zz) __ q!?;" * 8
    texts = [base[:n] for n in range(0, 141)]
    texts += [base[k:k + n] for k in range(1, 9) for n in (7, 8, 9, 63, 64, 65, 127, 128, 129)]
    _check(texts)


@pytest.mark.parametrize("length", [1, 2, 7, 8, 9, 15, 16, 17, 24, 63, 64, 65, 130, 200])
def test_a_run_across_every_offset_of_a_block_edge(length):
    texts = []
    for start in range(40, 140):  # the run's first byte before, on and after 64 and 128
        run = ("AbCdEfGh" * 30)[:length]
        texts.append("x" * (start - 1) + " " + run + " tail")
        texts.append("y" * (start - 1) + " " + run)               # the run ends the row
        texts.append("," * start + run + "..")                    # runs of other bytes around it
        texts.append("." * (start - 1) + "_" + run[: max(0, length - 1)] + "_")
    _check(texts)


@pytest.mark.parametrize("length", [1, 2, 3, 8, 9, 33, 70])
def test_punctuation_runs_across_a_block_edge(length):
    # substrings of string.punctuation go, other runs of other bytes stay:
    # "()" and "_" go, "((" and "__" stay, a run of 33 cannot be a substring
    runs = ["()", "_", "((", "__", "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~", "~}", "..."]
    texts = []
    for run in runs:
        piece = (run * length)[: max(length, len(run))]
        for start in range(58, 70):
            texts.append("w" * start + piece + "w")
            texts.append("w" * (start - 1) + " " + piece + " w")
            texts.append("w" * (start - 1) + " " + piece)
    _check(texts)


@pytest.mark.parametrize("where", [0, 1, 7, 8, 9, 62, 63, 64, 65, 100, -1])
@pytest.mark.parametrize("char", ["é", "İ", "Σ", "\u2028", "😀"])
def test_a_byte_above_0x7f_anywhere_sends_the_row_to_the_non_ascii_path(where, char):
    row = list("The quick_brown fox, jumps (over) the lazy dog ... " * 3)
    row.insert(len(row) if where == -1 else where, char)
    text = "".join(row)
    # the arrow column and the str path agree on the row, and with the neighbours
    texts = ["plain ascii row, long enough: 0123456789", text, "Another ASCII Row!"]
    col = TokenSets.from_texts(_arrow(texts))
    want = TokenSets.from_texts(texts)
    assert np.array_equal(col.indptr, want.indptr)
    assert np.array_equal(col.hashes, want.hashes)
    _check([texts[0], texts[2]])


def _arrow(texts):
    pa = pytest.importorskip("pyarrow", reason="optional extra pyarrow is not installed")
    return pa.array(texts, pa.large_string())


def test_every_class_of_ascii_byte_on_both_sides_of_a_block_edge():
    # each of the 128 code points at positions 62-66 of a row of words
    texts = []
    for c in range(128):
        for at in (62, 63, 64, 65, 66):
            row = ["k"] * 80
            row[at] = chr(c)
            row[at - 2] = " "
            texts.append("".join(row))
    _check(texts)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.text(st.sampled_from("aZ_09 \t.,()!~\x00\x7f"), max_size=300), min_size=1,
                max_size=6), st.sampled_from([WORDPUNCT, WHITESPACE, INTL]),
       st.sampled_from([0, 1, 2**64 - 1]))
def test_random_rows_of_few_classes(texts, mode, seed):
    _check(texts, (mode,), seed)


def test_one_long_run_over_many_blocks_and_sets():
    texts = ["Z" * 1000, "q" * 4096 + " " + "Q" * 4095, "_" * 513, "." * 700 + "a" * 3]
    _check(texts)
    for mode in (WORDPUNCT, WHITESPACE):
        data = "".join(texts).encode()
        offsets = np.cumsum([0] + [len(t) for t in texts]).astype(np.int64)
        indptr, hashes, counts = _tokenize.scan_utf8(offsets, np.frombuffer(data, np.uint8),
                                                     mode, 5, 2, True, 2)
        for i, text in enumerate(texts):
            toks = [ref.token_hash(t, 5) for t in REF_TOKENS[mode](text)]
            want = {ref.ngram_hash(list(g)): c for g, c in ref.bag(toks, 2, True).items()}
            assert hashes[indptr[i]:indptr[i + 1]].tolist() == sorted(want)
            assert counts[indptr[i]:indptr[i + 1]].tolist() == [want[h] for h in sorted(want)]


GUARD_CHILD = r"""
import ctypes, mmap, sys
import numpy as np
from overlap import _tokenize
from overlap._kernels import _cpu
_cpu.set_simd_level(int(sys.argv[1]))
page = mmap.PAGESIZE
buf = mmap.mmap(-1, 2 * page, prot=mmap.PROT_READ | mmap.PROT_WRITE)
start = ctypes.addressof(ctypes.c_char.from_buffer(buf))
libc = ctypes.CDLL(None, use_errno=True)
libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
if libc.mprotect(start + page, page, 0) != 0:  # PROT_NONE
    raise OSError(ctypes.get_errno(), "mprotect")
data = np.frombuffer(buf, dtype=np.uint8, count=page)  # the readable page only
out = []
for row in sys.stdin.read().split("\n"):
    raw = row.encode()
    buf[page - len(raw):page] = raw  # the row's last byte is the page's
    offsets = np.array([page - len(raw), page], dtype=np.int64)
    for mode in (0, 1):
        indptr, hashes, _ = _tokenize.scan_utf8(offsets, data, mode, 0, 1, False, 1,
                                                ordered=True)
        out.append(" ".join(map(str, hashes.tolist())))
print("\n".join(out))
"""


def test_no_read_past_a_row_that_ends_at_an_unreadable_page(level):
    """Each row is the last bytes of a page followed by a page that cannot be
    read: a kernel that read one byte past the row would end the child with
    SIGSEGV.  The hashes are the definition's."""
    import os
    import subprocess
    import sys

    if sys.platform != "linux":
        pytest.skip("needs mprotect on an anonymous map (Linux)")
    words = "Ab cdefghij KLMNOPQRSTUV w_x_y, z... (q) 0123456789abcdefg"
    rows = [words[:n] for n in range(1, len(words) + 1)]
    rows += ["x" * n for n in (7, 8, 9, 15, 16, 17, 63, 64, 65, 100)]
    rows += ["a " * 40 + "b" * n for n in range(1, 20)]
    root = os.path.dirname(os.path.dirname(os.path.abspath(_tokenize.__file__)))
    res = subprocess.run([sys.executable, "-c", GUARD_CHILD, str(level)], input="\n".join(rows),
                         capture_output=True, text=True, cwd=root,
                         env=dict(os.environ, PYTHONPATH=root))
    assert res.returncode == 0, res.stderr[-2000:]
    got = res.stdout[:-1].split("\n")  # print ended it with one newline
    assert len(got) == 2 * len(rows)
    for i, row in enumerate(rows):
        for k, mode in enumerate((WORDPUNCT, WHITESPACE)):
            want = [ref.token_hash(t) for t in REF_TOKENS[mode](row)]
            assert got[2 * i + k] == " ".join(map(str, want)), (mode, row)
