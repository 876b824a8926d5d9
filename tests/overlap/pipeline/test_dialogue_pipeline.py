"""The dialogue pipeline, step by step, against plain-Python definitions."""

from __future__ import annotations

import copy
import json
import os

import numpy as np
import pytest

from overlap.pipeline.demo import generate_corpus
from overlap.pipeline.dialogue import make_samples, read_splits
from overlap.pipeline import (
    THRESHOLDS,
    clean,
    dedup_dialogues,
    flatten,
    remove_duplicates,
    resplit,
    scan,
    summarize,
    tokenize_fields,
)
from overlap import TokenSets
from reference import overlap as ref


def toks(text: str) -> frozenset:
    return frozenset(ref.tokenize_wordpunct(text))


def bags(texts):
    return [ref.bag(ref.tokenize_wordpunct(t)) for t in texts]


@pytest.fixture(scope="module")
def corpus():
    return generate_corpus(60, 12, 12, near_duplicate_rate=0.2, leak_rate=0.4, seed=11).splits


def test_summarize_matches_plain_python(rng):
    s = np.round(rng.random(500), 1)  # many exact 0.25/0.5/0.8-ish ties and ones
    s[:7] = 1.0
    got = summarize(s, at=(0.25, 0.5, 0.8, 1.0))
    assert got.n == 500
    assert got.identical == sum(x == 1.0 for x in s)
    for t in (0.25, 0.5, 0.8, 1.0):  # at least (>=), so the ties at each threshold count
        assert got.count(t) == sum(x >= t for x in s)
        assert got.share(t) == sum(x >= t for x in s) / 500
    assert got.mean == pytest.approx(sum(s) / 500, rel=1e-12)
    line = got.format("test")
    assert f"≥0.8: {got.count(0.8):,} ({100 * got.share(0.8):.2f}%)" in line
    assert summarize(s).at == THRESHOLDS == (0.5, 0.8, 1.0)
    assert summarize([]).n == 0
    with pytest.raises(ValueError, match="scores"):
        summarize([0.5, 1.5])
    with pytest.raises(ValueError, match="scores"):
        summarize([np.nan])


def test_scan_matches_brute_force(corpus):
    train, test = make_samples(corpus["train"]), make_samples(corpus["test"])
    res = scan(test, train, n_threads=2)
    q = list(zip(bags(test.context), bags(test.response)))
    r = list(zip(bags(train.context), bags(train.response)))
    expect = ref.max_overlap(q, r)
    np.testing.assert_array_equal(res.score, [row[0][0] for row in expect])
    np.testing.assert_array_equal(res.index, [row[0][1] for row in expect])
    assert res.summary == summarize(res.score)
    assert res.summary.identical > 0  # the planted leaks


def test_scan_accepts_columns_and_checks_them():
    res = scan([["a b", "x"]], [["a b c", "a b"]])
    np.testing.assert_array_equal(res.index, [1, -1])
    res1 = scan(["a b", "x"], ["a b c", "a b"])  # one field as a plain list
    np.testing.assert_array_equal(res1.score, res.score)
    with pytest.raises(ValueError, match="same fields"):
        scan([["a"], ["b"]], [["a"]])
    with pytest.raises(ValueError, match="field 1 has 2"):
        tokenize_fields([["a"], ["b", "c"]], "queries")
    with pytest.raises(TypeError, match="queries"):
        scan(3, ["a"])
    empty = scan(["a"], [])
    assert empty.index.tolist() == [-1] and empty.score.tolist() == [0.0]


def test_dedup_dialogues_matches_published_method(corpus):
    dialogues = corpus["train"]
    before = copy.deepcopy(dialogues)
    res = dedup_dialogues(dialogues, threshold=0.6)
    units = [(b,) for b in bags([" ".join(d) for d in dialogues])]
    present, kept_for, passes, cluster = ref.dedup(units, 0.6)
    np.testing.assert_array_equal(res.keep, present)
    np.testing.assert_array_equal(res.kept_for, kept_for)
    assert res.passes == passes and res.n_removed > 0
    assert dialogues == before
    with pytest.raises(ValueError, match="threshold"):
        dedup_dialogues(dialogues, threshold=1.5)
    with pytest.raises(TypeError, match=r"dialogues\[0\]"):
        dedup_dialogues(["not a list of utterances"])


def test_resplit_takes_the_least_overlapping_units(corpus):
    dialogues = corpus["train"] + corpus["test"]
    rs = resplit(dialogues, test_size=10, valid_size=7, seed=3)
    n = len(dialogues)
    assert len(rs.test) == 10 and len(rs.valid) == 7 and len(rs.train) == n - 17
    assert sorted(np.concatenate([rs.train, rs.valid, rs.test]).tolist()) == list(range(n))
    units = [(b,) for b in bags([" ".join(d) for d in dialogues])]
    expect = [row[0][0] for row in ref.max_overlap(units, None)]
    np.testing.assert_array_equal(rs.score, expect)
    held = np.concatenate([rs.valid, rs.test])
    assert rs.score[held].max() <= rs.score[rs.train].min()
    again = resplit(dialogues, test_size=10, valid_size=7, seed=3)
    for a, b in zip(rs.as_dict().values(), again.as_dict().values()):
        np.testing.assert_array_equal(a, b)
    other = resplit(dialogues, test_size=10, valid_size=7, seed=4)
    assert not np.array_equal(rs.test, other.test)  # seed deals test/valid differently
    with pytest.raises(ValueError, match="test_size"):
        resplit(dialogues, test_size=n, valid_size=0)
    with pytest.raises(TypeError, match="valid_size"):
        resplit(dialogues, test_size=1, valid_size=1.5)


def test_flatten_is_make_samples_per_split(corpus):
    flat = flatten(corpus, turns=2)
    for k, d in corpus.items():
        s = make_samples(d, 2)
        assert flat[k].context == s.context and flat[k].response == s.response
    with pytest.raises(TypeError, match="splits"):
        flatten([corpus["train"]])


def test_remove_duplicates_matches_plain_python():
    train = make_samples([["hi", "hello", "hi", "hello"], ["how are you", "fine"],
                          ["Hi !", "Hello ."]])
    test = make_samples([["hi", "hello"], ["what", "now"], ["what", "now"], ["x", "fine"]])
    cleaned, counts = remove_duplicates({"train": train, "test": test})

    def plain(s, seen):
        keep, mine = [], set()
        for c, r in zip(s.context, s.response):
            key = (toks(c), toks(r))
            if key not in mine and key not in seen:
                keep.append((c, r))
            mine.add(key)
        return keep, mine

    tr_keep, tr_keys = plain(train, set())
    te_keep, _ = plain(test, tr_keys)
    assert list(zip(cleaned["train"].context, cleaned["train"].response)) == tr_keep
    assert list(zip(cleaned["test"].context, cleaned["test"].response)) == te_keep
    assert counts["train"] == {"before": 5, "duplicates_within": 2, "in_train": 0, "after": 3}
    assert counts["test"]["in_train"] == 1 and counts["test"]["duplicates_within"] == 1
    with pytest.raises(ValueError, match="train"):
        remove_duplicates({"test": test})


def test_clean_end_to_end(corpus, tmp_path):
    before = copy.deepcopy(corpus)
    res = clean(corpus, tmp_path / "out", test_size=8, valid_size=5, turns=2, seed=1)
    assert corpus == before
    rep = res.report
    assert rep.resplit == {"train": rep.dedup.kept - 13, "valid": 5, "test": 8}
    # every kept unit is in exactly one new split and nothing is left near-duplicated
    new = read_splits(tmp_path / "out")
    assert new == res.dialogues
    pooled = [u for k in ("train", "valid", "test") for u in new[k]]
    units = [(b,) for b in bags([" ".join(d) for d in pooled])]
    assert all(s <= 0.8 for row in ref.max_overlap(units, None) for s, _ in row)
    # before/after match scans recomputed from the returned data
    orig = flatten(corpus, 2)
    assert rep.before["test"] == scan(orig["test"], orig["train"]).summary
    after = scan(res.samples["test"], res.samples["train"])
    assert rep.after["test"] == after.summary
    assert after.summary.identical == 0
    assert json.loads((tmp_path / "out" / "report.json").read_text()) == json.loads(
        json.dumps(rep.as_dict()))
    assert len((tmp_path / "out" / "test.jsonl").read_text().splitlines()) == len(
        res.samples["test"])


def test_clean_validates_before_work(corpus):
    with pytest.raises(ValueError, match="threshold"):
        clean(corpus, threshold=-0.1)
    with pytest.raises(TypeError, match="test_size"):
        clean(corpus, test_size="5")
    with pytest.raises(ValueError, match="unknown split"):
        clean({"train": corpus["train"], "dev": []})
    with pytest.raises(TypeError, match="source"):
        clean(42)
    with pytest.raises(TypeError, match="log"):
        clean(corpus, log="print")


def test_clean_with_train_only(corpus):
    res = clean({"train": corpus["train"]}, test_size=6)
    assert res.before == {} and list(res.after) == ["test"]
    assert [len(res.dialogues[k]) for k in ("train", "valid", "test")] == [
        res.report.dedup.kept - 6, 0, 6]


# ------------------------------------------------------------ new behaviour
def test_summary_counts_scores_at_least_the_threshold():
    from overlap.pipeline import summarize_by

    s = np.array([0.8, 0.8, 0.79999999, 1.0, 0.0, 2 * 4 / 10, 2 * 12 / 30])
    got = summarize(s, at="0.8,1.0")
    assert got.count(0.8) == 5 and got.count(1.0) == 1 and got.identical == 1
    g = summarize_by(s, ["a", "b", "a", "b", None, "a", "a"], "lang", at=[0.8])
    assert {k: v.count(0.8) for k, v in g.groups.items()} == {"a": 3, "b": 2, "(none)": 0}
    assert g.overall == summarize(s, at=[0.8])
    with pytest.raises(ValueError, match="at"):
        summarize(s, at="0.5,x")
    with pytest.raises(ValueError, match="at"):
        summarize(s, at=[1.5])


def test_scan_all_against_the_rest_matches_brute_force(corpus):
    test = make_samples(corpus["test"])
    res = scan(test)
    fields_ = list(zip(bags(test.context), bags(test.response)))
    want = ref.max_overlap(fields_, None)
    assert res.within
    assert [r[0][0] if r else 0.0 for r in want] == res.score.tolist()
    t = res.to_table()
    j = int(res.index[0])
    assert t["match_response"][0] == (test.response[j] if j >= 0 else "")


def test_dedup_keep_first_keeps_the_earliest_and_leaves_no_pair_above(corpus):
    from overlap.pipeline import dedup_dialogues, dedup_first

    texts = [" ".join(d) for d in corpus["train"]]
    units = (TokenSets.from_texts(texts),)
    res = dedup_first(units, threshold=0.8, n_threads=2)
    one = dedup_first(units, threshold=0.8, n_threads=1)
    assert np.array_equal(res.keep, one.keep) and np.array_equal(res.kept_for, one.kept_for)
    via = dedup_dialogues(corpus["train"], keep="first")
    assert np.array_equal(via.keep, res.keep)
    kept = [texts[i] for i in np.flatnonzero(res.keep)]
    b = [(x,) for x in bags(kept)]
    assert all(s <= 0.8 for row in ref.max_overlap(b, None) for s, _ in row)
    for i in np.flatnonzero(~res.keep).tolist():
        j = int(res.kept_for[i])
        assert j < i and res.keep[j]  # removed for an earlier unit that stays
    # plain-Python reference of the rule: greedy in index order
    b = bags(texts)
    keep = []
    for i, x in enumerate(b):
        if not any(ref.sample_ratio((x,), (b[j],)) > 0.8 for j in keep):
            keep.append(i)
    assert np.flatnonzero(res.keep).tolist() == keep and res.n_removed >= 1
    with pytest.raises(ValueError, match="keep"):
        dedup_dialogues(corpus["train"], keep="last")


def test_clean_keeps_sizes_or_says_why(corpus):
    n = sum(len(v) for v in corpus.values())
    with pytest.raises(ValueError, match="never shrinks"):
        clean(corpus, test_size=n // 2, valid_size=n // 2 - 3)
    lines = []
    clean(corpus, test_size=5, valid_size=4, log=lines.append)
    assert lines[1].startswith("plan: new split test 5 and valid 4 dialogues")


def test_outputs_refuse_and_roll_back(tmp_path):
    from overlap.pipeline import OutputError, Outputs

    src = tmp_path / "in"
    src.mkdir()
    (src / "a.txt").write_text("x")
    with pytest.raises(OutputError, match="input"):
        Outputs([src / "a.txt"]).file(src / "a.txt")
    with pytest.raises(OutputError, match="inside the input folder"):
        Outputs([src]).directory(src / "sub")
    outs = Outputs([src])
    d = outs.directory(tmp_path / "new" / "deeper")
    files = [outs.file_in(d, n) for n in ("one.txt", "two.txt")]
    outs.check()
    with pytest.raises(RuntimeError):
        with outs:
            for f in files:
                with open(outs.stage(f), "w") as fh:
                    fh.write("data")
            raise RuntimeError("midway")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in"]  # nothing, not even folders
    outs = Outputs([src])
    d = outs.directory(tmp_path / "new")
    f = outs.file_in(d, "one.txt")
    with outs:
        with open(outs.stage(f), "w") as fh:
            fh.write("data")
    assert os.listdir(tmp_path / "new") == ["one.txt"] and outs.written == [f]
