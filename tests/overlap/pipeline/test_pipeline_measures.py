"""``measure=`` through the pipeline: scan (in memory and streamed),
dedup_first and the histogram, against the library and the definitions."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import overlap
from overlap import TokenSets
from overlap._validation import MEASURES
from overlap.pipeline import dedup_first, scan, scan_corpus
from reference import overlap as ref
from reference.helpers import build, collections, ref_units

SYMMETRIC = [m for m in MEASURES if m != "containment"]
WORDS = "the cat sat on a mat dog ran far away red blue".split()


def _table(rng, n):
    return {"context": [" ".join(rng.choice(WORDS, rng.integers(0, 7))) for _ in range(n)],
            "response": [" ".join(rng.choice(WORDS, rng.integers(1, 4))) for _ in range(n)],
            "lang": [["en", "de"][i % 2] for i in range(n)]}


def _units(table):
    return [tuple(ref.bag(ref.tokenize_wordpunct(table[f][i].lower()))
                  for f in ("context", "response")) for i in range(len(table["context"]))]


@pytest.mark.parametrize("measure", MEASURES)
def test_scan_scores_with_the_measure(measure):
    rng = np.random.default_rng(3)
    ev, tr = _table(rng, 30), _table(rng, 80)
    res = scan(ev, tr, measure=measure, tokenizer="wordpunct", by="lang", n_threads=2)
    want = ref.max_overlap(_units(ev), _units(tr), 1, 0.0, measure)
    assert res.score.tolist() == [row[0][0] for row in want]
    assert res.index.tolist() == [row[0][1] for row in want]
    assert res.measure == measure
    assert res.summary.n == 30
    rest = scan(tr, measure=measure, tokenizer="wordpunct")
    want = ref.max_overlap(_units(tr), None, 1, 0.0, measure)
    assert rest.score.tolist() == [row[0][0] for row in want]
    assert rest.index.tolist() == [row[0][1] for row in want]


@pytest.mark.parametrize("measure", MEASURES)
def test_streamed_scan_equals_the_in_memory_scan(tmp_path, measure):
    rng = np.random.default_rng(4)
    ev, tr = _table(rng, 25), _table(rng, 70)
    path = tmp_path / "train.jsonl"
    path.write_text("".join(json.dumps({"context": c, "response": r}) + "\n"
                            for c, r in zip(tr["context"], tr["response"])))
    whole = scan(ev, {k: tr[k] for k in ("context", "response")}, measure=measure)
    for chunk_rows in (1, 9, 1000):
        got = scan_corpus(ev, path, fields="context,response", chunk_rows=chunk_rows,
                          measure=measure)
        np.testing.assert_array_equal(got.score, whole.score)
        np.testing.assert_array_equal(got.index, whole.index)
        assert got.measure == measure


@pytest.mark.parametrize("measure", SYMMETRIC)
@settings(max_examples=30, deadline=None)
@given(data=st.data(), multiset=st.booleans(), threshold=st.sampled_from([0.0, 0.5, 2 / 3, 0.8]))
def test_dedup_first_with_a_measure_keeps_the_earliest(measure, data, multiset, threshold):
    f = data.draw(collections(max_rows=20))
    got = dedup_first(build(f, multiset), threshold=threshold, measure=measure)
    keep, kept_for = ref.dedup_first(ref_units(f, multiset), threshold, measure)
    assert got.keep.tolist() == keep
    assert got.kept_for.tolist() == kept_for


def test_bad_measures_are_refused_before_any_work(tmp_path):
    with pytest.raises(ValueError, match="measure must be one of"):
        scan(["a b"], ["a"], measure="Jaccard")
    with pytest.raises(ValueError, match="measure must be one of"):
        scan_corpus({"text": ["a"]}, tmp_path / "missing.jsonl", measure="tanimoto")
    with pytest.raises(ValueError, match="containment.*asymmetric"):
        dedup_first(TokenSets.from_ids([[1], [1, 2]]), measure="containment")


def test_histogram_names_the_measure():
    pytest.importorskip("matplotlib", reason="the histogram PNG needs the plot extra")
    from overlap.pipeline.plot import histogram_figure

    fig = histogram_figure([0.1, 0.9], measure="jaccard")
    assert fig.axes[0].get_xlabel() == "max overlap score (Jaccard, min over fields)"
    fig = histogram_figure([0.1, 0.9])
    assert fig.axes[0].get_xlabel() == "max overlap score (Dice, min over fields)"
    with pytest.raises(ValueError, match="measure must be one of"):
        histogram_figure([0.1], measure="dice!")


def test_scan_and_library_agree_on_containment_direction():
    # the eval sample lies wholly inside the longer train sample
    ev = {"text": ["red blue"]}
    tr = {"text": ["red blue sky sea far away mat", "red dog"]}
    res = scan(ev, tr, measure="containment")
    assert (res.score.tolist(), res.index.tolist()) == ([1.0], [0])
    q, r = TokenSets.from_texts(ev["text"]), TokenSets.from_texts(tr["text"])
    assert overlap.max_overlap(q, r).index.tolist() == [1]  # Dice prefers the short one
