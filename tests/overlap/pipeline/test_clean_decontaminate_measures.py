"""``measure=`` in :func:`overlap.pipeline.decontaminate` and :func:`overlap.pipeline.clean`.

- decontaminate against the plain-Python definition (``reference.overlap.decontaminate``)
  for every measure, containment taken in the eval -> train direction;
- Dice (the default) unchanged: the same arrays as each train unit's best
  eval match by :func:`overlap.max_overlap`;
- an eval sample copied inside a long train row: removed under containment, not Dice;
- clean: the dedup, the scans and the re-split with a symmetric measure
  against the definitions; containment refused before any work.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from overlap import TokenSets, max_overlap
from overlap._validation import MEASURES
from overlap.pipeline import clean, decontaminate, resplit, summarize
from overlap.pipeline.decontamination import best_containers
from reference import overlap as ref
from reference.helpers import build, collections, ref_units

SYMMETRIC = [m for m in MEASURES if m != "containment"]


def _table(fields: list) -> dict:
    """Id lists as a table of texts ("t3 t7 ..."), one column per field."""
    return {f"f{k}": [" ".join(f"t{i}" for i in row) for row in col]
            for k, col in enumerate(fields)}


def _units(fields: list) -> list:
    return ref_units(fields, False)


def _check_against_reference(train_f, evals_f, threshold, measure, dedup_measure, keep,
                             dedup_train=True):
    names = [f"f{k}" for k in range(len(train_f))]
    train = {"id": list(range(len(train_f[0]))), **_table(train_f)}
    evals = {k: _table(v) for k, v in evals_f.items()}
    res = decontaminate(train, evals, fields=names, threshold=threshold, measure=measure,
                        dedup_train=dedup_train, dedup_measure=dedup_measure, keep=keep,
                        tokenizer="whitespace", at=[threshold], n_threads=2)
    ev_units = [(k, _units(v)) for k, v in evals_f.items()]
    tr_units = _units(train_f)
    keep_, reason, best, best_index, best_split, dup_of = ref.decontaminate(
        tr_units, ev_units, threshold, measure, dedup_train, None, dedup_measure, keep)
    assert res.keep.tolist() == keep_
    assert res.reason == reason
    assert res.best_score.tolist() == best
    assert res.best_index.tolist() == best_index
    assert res.best_split == best_split
    assert res.train["id"] == [i for i, k in enumerate(keep_) if k]
    dm = measure if dedup_measure is None else dedup_measure
    for u in res.report.removed_units:
        i = u["index"]
        if u["reason"] == "eval-overlap":
            e = dict(ev_units)[u["kept_split"]][u["kept_for"]]
            assert (u["kept_split"], u["kept_for"], u["score"]) == (best_split[i],
                                                                    best_index[i], best[i])
            assert u["score"] == ref.sample_ratio(e, tr_units[i], measure) >= threshold
        else:
            assert u["kept_for"] == dup_of[i]
            assert u["score"] == ref.sample_ratio(tr_units[i], tr_units[dup_of[i]], dm)
    # the summaries: every eval unit's best train match (eval units are the queries)
    kept = [u for u, k in zip(tr_units, keep_) if k]
    for k, units in ev_units:
        before = [r[0][0] for r in ref.max_overlap(units, tr_units, 1, 0.0, measure)]
        after = [r[0][0] for r in ref.max_overlap(units, kept, 1, 0.0, measure)]
        assert res.before[k] == summarize(np.array(before, dtype=float), [threshold])
        assert res.after[k] == summarize(np.array(after, dtype=float), [threshold])
        assert max(after, default=0.0) < threshold or threshold == 0.0
    assert res.report.settings.measure == measure
    assert res.report.settings.dedup_measure == (dm if dedup_train else None)
    return res


@st.composite
def splits(draw):
    nf = draw(st.integers(1, 2))
    train = draw(collections(n_fields=nf, min_rows=0, max_rows=18))
    evals = {"valid": draw(collections(n_fields=nf, min_rows=0, max_rows=6)),
             "test": draw(collections(n_fields=nf, min_rows=1, max_rows=6))}
    return train, evals


@pytest.mark.parametrize("measure", MEASURES)
@settings(max_examples=25, deadline=None)
@given(data=splits(), threshold=st.sampled_from([0.0, 0.5, 2 / 3, 0.75, 1.0]),
       keep=st.sampled_from(["most-overlapped", "first"]))
def test_decontaminate_equals_the_definition(measure, data, threshold, keep):
    train_f, evals_f = data
    if measure == "containment":
        threshold = threshold or 0.25  # containment needs a threshold > 0
        dedup_measure = "overlap"
    else:
        dedup_measure = None
    _check_against_reference(train_f, evals_f, threshold, measure, dedup_measure, keep)


@pytest.mark.parametrize("measure", MEASURES)
def test_decontaminate_without_dedup_and_with_another_dedup_measure(measure):
    rng = np.random.default_rng(5)
    tr = [[list(rng.integers(0, 12, rng.integers(1, 9))) for _ in range(40)]]
    ev = {"test": [[list(rng.integers(0, 12, rng.integers(1, 5))) for _ in range(10)]]}
    res = _check_against_reference(tr, ev, 0.6, measure, None, "most-overlapped",
                                   dedup_train=False)
    assert res.dedup is None and "train-duplicate" not in res.reason
    res = _check_against_reference(tr, ev, 0.6, measure, "jaccard", "first")
    assert res.report.settings.dedup_measure == "jaccard"


def test_dice_is_the_default_and_unchanged():
    rng = np.random.default_rng(8)
    train = {"text": [" ".join(f"w{i}" for i in rng.integers(0, 15, rng.integers(1, 10)))
                      for _ in range(80)]}
    test = {"text": [" ".join(f"w{i}" for i in rng.integers(0, 15, rng.integers(1, 6)))
                     for _ in range(15)]}
    default = decontaminate(train, {"test": test}, fields="text", threshold=0.7,
                            tokenizer="whitespace")
    dice = decontaminate(train, {"test": test}, fields="text", threshold=0.7,
                         tokenizer="whitespace", measure="dice", dedup_measure="dice")
    # each train row's best test row by Dice, as the command has always computed it
    m = max_overlap(TokenSets.from_texts(train["text"], "whitespace"),
                    TokenSets.from_texts(test["text"], "whitespace"))
    for r in (default, dice):
        assert r.best_score.tobytes() == m.score.tobytes()
        np.testing.assert_array_equal(r.best_index, m.index)
    assert default.keep.tolist() == dice.keep.tolist()
    a, b = default.report.as_dict(), dice.report.as_dict()
    a.pop("timing_s"), b.pop("timing_s")
    assert a == b and a["settings"]["measure"] == "dice"
    assert (default.report.removed["eval-overlap"] > 0
            and default.report.removed["train-duplicate"] > 0)  # both steps ran


def test_an_eval_sample_inside_a_long_train_row_goes_only_under_containment():
    question = "what is the capital of france"
    long_row = ("trivia night q " + question + " a paris q how tall is the eiffel tower a "
                "330 metres q name a prime number between ten and fifteen a eleven")
    # a short train row lying inside a long eval sample: the other direction
    inside_eval = "spiders have eight legs"
    train = {"text": [long_row, "the capital of spain is madrid", inside_eval]}
    evals = {"test": {"text": [question, "do " + inside_eval + " or six legs like insects "
                               "and ants and bees and wasps"]}}
    kw = dict(fields="text", tokenizer="whitespace", threshold=0.9, at=[0.9])
    c = decontaminate(train, evals, measure="containment", dedup_train=False, **kw)
    d = decontaminate(train, evals, dedup_train=False, **kw)
    assert c.best_score[0] == 1.0 and c.best_index[0] == 0
    assert d.best_score[0] < 0.4  # Dice: 6 shared tokens of 6 and 27
    assert c.reason == ["eval-overlap", None, None]
    assert d.reason == [None, None, None]
    # the short train row lies wholly inside the second eval sample, but little
    # of that sample lies inside it: containment (eval -> train) keeps it
    assert c.keep[2] and c.best_score[2] == 0.0
    assert c.before["test"].counts == (1,) and c.after["test"].counts == (0,)
    assert d.before["test"].counts == (0,)


@pytest.mark.parametrize("chunk", [1, 2, 3, 7])
def test_best_containers_equals_the_definition_for_every_chunk(chunk):
    rng = np.random.default_rng(chunk)
    tr_ids = [list(rng.integers(0, 10, rng.integers(0, 12))) for _ in range(50)]
    ev_ids = [list(rng.integers(0, 10, rng.integers(0, 5))) for _ in range(17)]
    tr, ev = TokenSets.from_ids(tr_ids), TokenSets.from_ids(ev_ids)
    whole = best_containers((tr,), (ev,), 0.5, 2)
    got = best_containers((tr,), (ev,), 0.5, 1, chunk=chunk)
    np.testing.assert_array_equal(got[0], whole[0])
    np.testing.assert_array_equal(got[1], whole[1])
    ref_ev = [(ref.bag(r),) for r in ev_ids]
    want_score, want_index = [], []
    for t in tr_ids:
        scores = [ref.sample_ratio(e, (ref.bag(t),), "containment") for e in ref_ev]
        best = max([s for s in scores if s >= 0.5], default=0.0)
        want_score.append(best)
        want_index.append(scores.index(best) if best > 0 else -1)
    assert got[0].tolist() == want_score and got[1].tolist() == want_index
    assert max(want_score) == 1.0 and min(want_score) == 0.0  # both cases occur


def test_decontaminate_refusals_name_the_option():
    train, evals = {"text": ["a b c"]}, {"test": {"text": ["a b"]}}
    with pytest.raises(ValueError, match=r"containment' is asymmetric.*the train dedup "
                                         r"\(give dedup_measure a symmetric measure, or "
                                         r"dedup_train=False\).*'overlap'"):
        decontaminate(train, evals, measure="containment")
    with pytest.raises(ValueError, match=r"asymmetric.*the train dedup \(dedup_measure\)"):
        decontaminate(train, evals, dedup_measure="containment")
    with pytest.raises(ValueError, match=r"asymmetric.*the train dedup \(dedup_measure\)"):
        decontaminate(train, evals, dedup_measure="containment", dedup_train=False)
    with pytest.raises(ValueError, match="threshold must be > 0 with measure containment"):
        decontaminate(train, evals, measure="containment", dedup_train=False, threshold=0)
    with pytest.raises(ValueError, match="measure must be one of"):
        decontaminate(train, evals, measure="Dice")


def test_decontaminate_refuses_before_writing(tmp_path):
    out = tmp_path / "out"
    with pytest.raises(ValueError, match="asymmetric"):
        decontaminate({"text": ["a b"]}, {"test": {"text": ["a"]}}, out,
                      measure="containment")
    assert not out.exists()


# --------------------------------------------------------------------- clean
def _pooled(table_splits: dict) -> list:
    return [(ref.bag(ref.tokenize_whitespace(t)),) for k in ("train", "valid", "test")
            for t in table_splits[k]["text"]]


@pytest.mark.parametrize("measure", SYMMETRIC)
@pytest.mark.parametrize("keep", ["most-overlapped", "first"])
def test_clean_dedups_and_scans_with_the_measure(measure, keep):
    rng = np.random.default_rng(13)

    def rows(n, hi):
        return {"text": [" ".join(f"w{i}" for i in rng.integers(0, 20, rng.integers(2, hi)))
                         for _ in range(n)]}

    src = {"train": rows(60, 9), "valid": rows(8, 6), "test": rows(8, 6)}
    res = clean(src, fields="text", threshold=0.6, keep=keep, measure=measure,
                tokenizer="whitespace", test_size=3, valid_size=3, n_threads=2)
    units = _pooled(src)
    if keep == "first":
        present, kept_for = ref.dedup_first(units, 0.6, measure)
    else:
        present, kept_for, _, _ = ref.dedup(units, 0.6, measure)
    assert res.dedup.keep.tolist() == present
    removed = res.report.dedup.removed_units
    assert len(removed) == present.count(False) > 0
    offsets = {"train": 0, "valid": 60, "test": 68}
    for u in removed:
        i = offsets[u["split"]] + u["index"]
        j = offsets[u["kept_split"]] + u["kept_for"]
        assert j == kept_for[i]
        assert u["score"] == ref.sample_ratio(units[i], units[j], measure) > 0.6
    tr = [(ref.bag(ref.tokenize_whitespace(t)),) for t in src["train"]["text"]]
    for k in ("valid", "test"):
        ev = [(ref.bag(ref.tokenize_whitespace(t)),) for t in src[k]["text"]]
        want = [r[0][0] for r in ref.max_overlap(ev, tr, 1, 0.0, measure)]
        assert res.before[k].score.tolist() == want
        assert res.before[k].measure == measure
    assert res.report.settings.measure == measure
    assert res.report.as_dict()["settings"]["measure"] == measure


def test_clean_with_dice_is_unchanged():
    from overlap.pipeline.demo import generate_corpus

    corpus = generate_corpus(60, 8, 8, seed=2).splits
    a = clean(corpus, n_threads=2)
    b = clean(corpus, n_threads=1, measure="dice")
    assert a.dialogues == b.dialogues
    assert a.dedup.keep.tolist() == b.dedup.keep.tolist()
    ra, rb = a.report.as_dict(), b.report.as_dict()
    for r in (ra, rb):
        r.pop("timing_s")
        r["settings"].pop("n_threads")
    assert ra == rb and ra["settings"]["measure"] == "dice"


def test_clean_refuses_containment_before_any_work(tmp_path):
    out = tmp_path / "out"
    with pytest.raises(ValueError, match=r"containment' is asymmetric.*clean's dedup of the "
                                         r"pooled splits, which scores each pair once.*"
                                         r"'overlap'"):
        clean({"train": {"text": ["a b", "a b c"]}}, out, measure="containment")
    assert not out.exists()
    with pytest.raises(ValueError, match="measure must be one of"):
        clean({"train": {"text": ["a b", "a b c"]}}, measure="tanimoto")


@pytest.mark.parametrize("measure", MEASURES)
@settings(max_examples=20, deadline=None)
@given(f=collections(min_rows=2, max_rows=15))
def test_resplit_ranks_by_the_measure(measure, f):
    rs = resplit(build(f, False), test_size=1, valid_size=0, measure=measure)
    want = [r[0][0] for r in ref.max_overlap(ref_units(f, False), None, 1, 0.0, measure)]
    assert rs.score.tolist() == want
