"""``OverlapIndex._join_slices`` (the streaming scan's join of a chunk against
the indexed queries): the pairs of the definition, slice after slice, on both
join kernels, whatever the slice length and thread count."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from overlap import OverlapIndex, TokenSets
from overlap._validation import MEASURES
from reference import overlap as ref
from reference.helpers import build, collections, ref_units
from reference.levels import forced_path

SYMMETRIC = [m for m in MEASURES if m != "containment"]


@pytest.mark.parametrize("path", ["bitslice", "postings"])
@settings(max_examples=50, deadline=None)
@given(data=st.data(), multiset=st.booleans(), measure=st.sampled_from(MEASURES),
       threshold=st.sampled_from([0.1, 0.25, 0.5, 2 / 3, 1.0]),
       rows=st.integers(1, 30), n_threads=st.sampled_from([1, 2, 3]))
def test_slices_hold_the_pairs_of_the_definition(path, data, multiset, measure, threshold,
                                                 rows, n_threads):
    lf = data.draw(collections())
    rf = data.draw(collections(n_fields=len(lf)))
    with forced_path(path):
        index = OverlapIndex(build(rf, multiset))
        slices = list(index._join_slices(build(lf, multiset), threshold=threshold, rows=rows,
                                         measure=measure, n_threads=n_threads))
    n = len(lf[0])
    assert len(slices) == -(-n // rows)
    got = []
    for k, (left, right, score) in enumerate(slices):
        assert ((left >= k * rows) & (left < (k + 1) * rows)).all()
        got += zip(left.tolist(), right.tolist(), score.tolist())
    want = ref.join(ref_units(lf, multiset), ref_units(rf, multiset), threshold, measure)
    assert sorted(got) == sorted(want)


def test_slices_refuse_bad_arguments():
    index = OverlapIndex(TokenSets.from_ids([[1, 2]]))
    q = TokenSets.from_ids([[1, 2], [2]])
    for kw, message in [({"threshold": 0.0, "rows": 4}, "threshold"),
                        ({"threshold": 0.5, "rows": 0}, "rows"),
                        ({"threshold": 0.5, "rows": 4, "measure": "nope"}, "measure")]:
        with pytest.raises(ValueError, match=message):
            next(index._join_slices(q, **kw))
