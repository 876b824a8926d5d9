"""What the postings index build holds at once (issue 29: ``overlap dedup``'s peak).

The build numbers every stored token (``inverse``, 4 bytes a token) and
keeps the vocabulary hash tables; both must be gone before
``ReferenceIndex`` makes its own columns (the entry signatures, 8 bytes an
entry), which is where the dedup's peak is reached.  Results are covered by
the search and dedup tests; here only what is alive when.
"""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

from overlap import _dispatch, _index, dedup, overlap_join
from overlap._kernels import _postings, _postings_search, _vocab
from reference import overlap as ref
from reference.helpers import build, ref_units


def _columns(seed: int, n: int, n_fields: int) -> list:
    """``n_fields`` columns of ``n`` rows of 0-11 ids below 40 (duplicates, empty rows)."""
    rng = np.random.default_rng(seed)
    return [[rng.integers(0, 40, int(rng.integers(0, 12))).tolist() for _ in range(n)]
            for _ in range(n_fields)]


@pytest.fixture
def watched(monkeypatch):
    """Weak references to the build's token ids and hash tables, and whether each
    was still alive when ReferenceIndex was called."""
    seen: dict = {"inverse": [], "tables": [], "alive_at_index": []}
    build_postings = _postings.build_postings
    vocab_table = _vocab.vocab_table
    reference_index = _postings_search.ReferenceIndex

    def spy_build(coll, inverse, *args):
        seen["inverse"].append(weakref.ref(inverse))
        return build_postings(coll, inverse, *args)

    def spy_vocab(hashes, out=None, n_threads=1):
        keys, inv, tkeys, tids, df = vocab_table(hashes, out, n_threads)
        seen["tables"] += [weakref.ref(tkeys), weakref.ref(tids)]
        return keys, inv, tkeys, tids, df

    def spy_index(*args, **kwargs):
        gc.collect()  # only reference counts may keep them: no cycles hold them
        seen["alive_at_index"].append([r() is not None for r in seen["inverse"]]
                                      + [r() is not None for r in seen["tables"]])
        return reference_index(*args, **kwargs)

    monkeypatch.setattr(_postings, "build_postings", spy_build)
    monkeypatch.setattr(_vocab, "vocab_table", spy_vocab)
    monkeypatch.setattr(_postings_search, "ReferenceIndex", spy_index)
    # the postings kernel answers (the bit-sliced one builds tables of its own)
    monkeypatch.setattr(_dispatch, "FORCE_PATH", "postings")
    return seen


@pytest.mark.parametrize("fields", [1, 2])
@pytest.mark.parametrize("multiset", [False, True])
@pytest.mark.parametrize("renumbered", [False, True])
def test_token_ids_and_build_tables_go_before_the_index(watched, monkeypatch, fields,
                                                        multiset, renumbered):
    monkeypatch.setattr(_index, "RENUMBER_MIN_ROWS", 0 if renumbered else 1 << 62)
    cols = _columns(fields, 60, fields)
    got = overlap_join(build(cols, multiset), threshold=0.5)
    assert len(watched["alive_at_index"]) == 1
    # the token ids of the postings build, and the hash tables of its
    # vocabularies (the compact ones are the index's own)
    assert len(watched["inverse"]) == 1 and len(watched["tables"]) == 2 * fields
    assert watched["alive_at_index"] == [[False] * (1 + 2 * fields)]
    # and the join is still the definition's
    want = ref.join(ref_units(cols, multiset), None, 0.5)
    assert list(zip(got.left.tolist(), got.right.tolist())) == [(i, j) for i, j, _ in want]


def test_dedup_result_unchanged_by_the_early_release(watched):
    cols = _columns(7, 80, 1)
    res = dedup(build(cols, False), threshold=0.6)
    keep, kept_for, passes, cluster = ref.dedup(ref_units(cols, False), 0.6)
    assert res.keep.tolist() == keep and res.passes == passes
    assert res.kept_for.tolist() == kept_for and res.cluster.tolist() == cluster
    assert watched["alive_at_index"] == [[False, False, False]]
