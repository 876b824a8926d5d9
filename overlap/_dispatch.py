"""Which kernel serves a max_overlap call or a threshold join: the bit-sliced
one or the postings one.

Both kernels are exact and return the same results bit for bit;
:func:`choose_path` picks the faster one from a cost estimate (see
docs/algorithms.md, "Choosing the path"), :func:`use_bitslice` adds what only
the built index knows.  Tests force a path with :data:`FORCE_PATH` (``None``,
``"bitslice"`` or ``"postings"``).
"""

from __future__ import annotations

import os

#: ``None`` chooses by cost; ``"bitslice"`` or ``"postings"`` forces a path
#: wherever the bit-sliced kernel supports the call (tests run both).  The
#: environment variable ``OVERLAP_SEARCH_PATH`` sets it for a whole process
#: (e.g. a CLI test that needs a scan slow enough to interrupt).
FORCE_PATH: str | None = os.environ.get("OVERLAP_SEARCH_PATH") or None

#: The postings kernel runs alone below this many references (two blocks).
MIN_REFS = 1024
#: ... and from this ``min_score`` up, where its prefix filter admits so few
#: postings that it is as fast (two fields of dialogue contexts and responses:
#: about as fast at 0.9).
HIGH_MIN_SCORE = 0.9


def supported(ref_fields: tuple) -> bool:
    """Whether the bit-sliced kernel can run on these references (sets only)."""
    return not ref_fields[0].multiset


def choose_path(ref_fields: tuple, n_queries: int, min_score: float = 0.0) -> str:
    """``"bitslice"`` or ``"postings"`` for one max_overlap call.

    Honours :data:`FORCE_PATH` where the bit-sliced kernel supports the input.
    (:func:`use_bitslice` also falls back to postings when no token got a bitmap.)
    """
    if not supported(ref_fields):
        return "postings"
    if FORCE_PATH is not None:
        if FORCE_PATH not in ("bitslice", "postings"):
            raise ValueError(f"FORCE_PATH must be None, 'bitslice' or 'postings', got {FORCE_PATH!r}")
        return FORCE_PATH
    n = len(ref_fields[0])
    if n < MIN_REFS or n_queries == 0 or min_score >= HIGH_MIN_SCORE:
        return "postings"
    return "bitslice"


def use_bitslice(ref_fields: tuple, n_queries: int, min_score: float, bitslice) -> bool:
    """Whether the bit-sliced kernel serves this call.

    ``bitslice`` is the index's lazy bit-sliced side (``_bitslice_index.LazyBitslice``),
    built here on first use when the cost model picks it: an index where no
    token got a bitmap does the postings kernel's work, so then the postings
    kernel serves (unless :data:`FORCE_PATH` forces the bit-sliced one).
    """
    if choose_path(ref_fields, n_queries, min_score) != "bitslice":
        return False
    return bitslice.index.n_rows > 0 or FORCE_PATH is not None


#: The bit-sliced threshold join serves reference sets of at most this many
#: rows (a bitmap row is then at most 64 words).
JOIN_MAX_REFS = 4096


def use_bitslice_join(ref_fields: tuple, n_queries: int) -> bool:
    """Whether the bit-sliced kernel serves a threshold join (same pairs, same scores).

    Measured on Zipf rows (65,536 probe rows of 10-60 tokens, one thread,
    docs/algorithms.md): against 1,000 references it took 0.5-1.0 us a probe
    row where postings took 1.0-2.5, at every threshold from 0.5 to 1.0 (dice);
    against 4,000, 0.5-1.2 against 0.8-7.0; against 16,000 it lost at 0.8 (2.2
    against 1.6).  Honours :data:`FORCE_PATH` where the bit-sliced kernel
    supports the input (sets).
    """
    if not supported(ref_fields):
        return False
    if FORCE_PATH is not None:
        return choose_path(ref_fields, n_queries) == "bitslice"
    return len(ref_fields[0]) <= JOIN_MAX_REFS and n_queries > 0
