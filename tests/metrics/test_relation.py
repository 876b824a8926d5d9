"""metrics relation readers, relation_f1 and upper_bound (CCKS 2019 IPRE)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reference import metrics as ref
import metrics

REPO = Path(__file__).resolve().parents[2]
DATA = Path(os.environ.get("OVERLAP_METRICS_DATA", REPO.parent / "shared" / "data"))
IPRE = DATA / "ipre"
needs_ipre = pytest.mark.skipif(
    not (IPRE / "sent_relation_dev.txt").exists(),
    reason=f"IPRE data not found at {IPRE} (set OVERLAP_METRICS_DATA)",
)


def _write(tmp_path, name, text, encoding="utf-8"):
    p = tmp_path / name
    p.write_bytes(text.encode(encoding))
    return p


# ----------------------------------------------------------------- readers


def test_read_sent_bom_crlf_trailing_blank(tmp_path):
    p = _write(tmp_path, "s.txt", "\ufeffS1\t0\r\nS2\t3 5\r\nS\u00e93\t0 7\r\n\r\n\n")
    lab = metrics.read_sent_relations(p)
    assert list(lab) == ["S1", "S2", "S\u00e93"]
    assert lab["S2"] == {3, 5} and lab["S\u00e93"] == {0, 7} and lab["S1"] == {0}
    assert dict(lab) == {"S1": {0}, "S2": {3, 5}, "S\u00e93": {0, 7}}


def test_read_bag(tmp_path):
    p = _write(tmp_path, "b.txt", "B1\tA\tB\tS1 S2\t0 4\nB2\tC\tD\tS3\t9\n")
    lab = metrics.read_bag_relations(p)
    assert lab["B1"] == {0, 4} and lab["B2"] == {9}
    assert lab.heads == ["A", "C"] and lab.sent_ids == [("S1", "S2"), ("S3",)]


def test_read_relation_ids(tmp_path):
    p = _write(tmp_path, "r.txt", "NA\t0\r\n\u7236\u6bcd\t1\r\n")
    assert metrics.read_relation_ids(p) == {"NA": 0, "\u7236\u6bcd": 1}
    bad = _write(tmp_path, "r2.txt", "NA\t0\nX\t0\n")
    with pytest.raises(ValueError, match=r"r2.txt:2: relation id 0 already used"):
        metrics.read_relation_ids(bad)
    bad = _write(tmp_path, "r3.txt", "NA\t0\nX\tone\n")
    with pytest.raises(ValueError, match=r"r3.txt:2: .*not a non-negative integer"):
        metrics.read_relation_ids(bad)


@pytest.mark.parametrize("body,line,what", [
    ("S1\t0\nS2\t1\t2\n", 2, "expected 2 tab-separated columns, found 3"),
    ("S1\t0\nS2 1\n", 2, "expected 2 tab-separated columns, found 1"),
    ("S1\t0\nS2\t0\nS3\tx\n", 3, "relation id 'x' is not a non-negative integer"),
    ("S1\t-1\n", 1, "relation id '-1' is not a non-negative integer"),
    ("S1\t0\nS2\t64\n", 2, "outside 0..63"),
    ("S1\t0\n\t1\n", 2, "empty item id"),
    ("S1\t0\nS2\t\n", 2, "no relation ids"),
    ("S1\t0\nS2\t3\nS1\t4\n", 3, "duplicate item id 'S1' (first on line 1)"),
    ("S1\t0\n\nS2\t3\n", 2, "blank line before more data"),
    ("S1\t0\nS2\t40\n", 2, "unknown relation id 40"),
])
def test_malformed_lines_name_file_and_line(tmp_path, body, line, what):
    p = _write(tmp_path, "sent_relation_dev.txt", body.replace("\n", "\r\n"))
    rel = range(35) if "unknown" in what else None
    with pytest.raises(ValueError) as exc:
        metrics.read_sent_relations(p, rel)
    msg = str(exc.value)
    assert msg.startswith(f"{p}:{line}: "), msg
    assert what in msg


def test_bag_malformed(tmp_path):
    p = _write(tmp_path, "bag.txt", "B1\tA\tB\tS1\t0\nB2\tA\tB\t0\n")
    with pytest.raises(ValueError, match=r"bag.txt:2: expected 5 .* found 4"):
        metrics.read_bag_relations(p)
    p = _write(tmp_path, "bag2.txt", "B1\tA\tB\t \t0\n")
    with pytest.raises(ValueError, match=r"bag2.txt:1: empty sentence id list"):
        metrics.read_bag_relations(p)
    p = _write(tmp_path, "bad_utf8.txt", "")
    p.write_bytes(b"S1\t0\nS\xff\t1\n")
    with pytest.raises(ValueError, match=r"bad_utf8.txt:2: item id is not valid UTF-8"):
        metrics.read_sent_relations(p)


# ----------------------------------------------------------------- scoring


def test_relation_f1_small_example():
    gold = {"a": [0], "b": [3], "c": [3, 5], "d": [7]}
    pred = {"a": [2], "b": [3], "c": [5, 9, 0]}  # d missing = predicted NA
    res = metrics.relation_f1(gold, pred)
    # n_sys: a(2) + b(3) + c(5, 9) = 4; correct: b3, c5 = 2; gold: b3 c3 c5 d7 = 4
    assert (res.n_sys, res.n_r, res.n_std) == (4, 2, 4)
    assert res.precision == 0.5 and res.recall == 0.5 and res.f1 == 0.5
    assert res.per_relation[3].n_std == 2 and res.per_relation[3].n_r == 1
    assert res.per_relation[2].precision == 0.0
    sub = metrics.relation_f1(gold, pred, subset=["b", "d"])
    assert (sub.n_sys, sub.n_r, sub.n_std) == (1, 1, 2)


def test_relation_f1_undefined_is_zero():
    res = metrics.relation_f1({"a": [0]}, {"a": [0]})
    assert (res.precision, res.recall, res.f1) == (0.0, 0.0, 0.0)


def test_relation_f1_errors():
    with pytest.raises(ValueError, match="'z'.*not in the gold"):
        metrics.relation_f1({"a": [1]}, {"z": [1]})
    with pytest.raises(ValueError, match="outside 0..63"):
        metrics.relation_f1({"a": [64]}, {"a": [1]})
    with pytest.raises(ValueError, match="outside 0..63"):
        metrics.relation_f1({"a": [1]}, {"a": [-2]})
    with pytest.raises(TypeError, match="gold"):
        metrics.relation_f1([("a", [1])], {"a": [1]})
    with pytest.raises(ValueError, match="subset"):
        metrics.relation_f1({"a": [1]}, {"a": [1]}, subset=["q"])
    with pytest.raises(ValueError, match="at least one"):
        metrics.upper_bound({"a": [1]}, [])


def test_per_relation_lists_the_whole_label_set():
    # CCKS overview Tables 5 and 6 list every relation, zero rows too
    gold = {"a": [0], "b": [3], "c": [3, 5], "d": [7]}
    pred = {"a": [2], "b": [3], "c": [5, 0]}
    names = {"NA": 0, "r1": 1, "r2": 2, "r3": 3, "r4": 4, "r5": 5, "r6": 6, "r7": 7}
    res = metrics.relation_f1(gold, pred, relations=names)
    assert list(res.per_relation) == [1, 2, 3, 4, 5, 6, 7]  # id order, NA left out
    zero = res.per_relation[4]
    assert (zero.n_sys, zero.n_r, zero.n_std, zero.f1) == (0, 0, 0, 0.0)
    assert res.per_relation[1].n_std == 0 and res.per_relation[7].n_std == 1
    # the totals do not change; without a label set only occurring relations show
    plain = metrics.relation_f1(gold, pred)
    assert (plain.n_sys, plain.n_r, plain.n_std) == (res.n_sys, res.n_r, res.n_std)
    assert list(plain.per_relation) == [2, 3, 5, 7]
    # an iterable of ids works too, and so does a NA other than 0
    res5 = metrics.relation_f1(gold, pred, relations=range(8), na=5)
    assert list(res5.per_relation) == [0, 1, 2, 3, 4, 6, 7]
    ub = metrics.upper_bound(gold, [pred], relations=names)
    assert list(ub.per_relation) == [1, 2, 3, 4, 5, 6, 7]
    with pytest.raises(ValueError, match="gold has relation id 7, which is not in relations"):
        metrics.relation_f1(gold, pred, relations=[0, 2, 3, 5])
    with pytest.raises(ValueError, match="pred has relation id 2, which is not in relations"):
        metrics.relation_f1(gold, pred, relations=[0, 3, 5, 7])
    with pytest.raises(TypeError, match="relations"):
        metrics.relation_f1(gold, pred, relations="0 1 2")


def test_n_missing_counts_unpredicted_items():
    gold = {"a": [0], "b": [3], "c": [3, 5], "d": [7]}
    assert metrics.relation_f1(gold, {"a": [2], "c": [5]}).n_missing == 2
    assert metrics.relation_f1(gold, {"a": [2], "c": [5]}, subset=["a", "c"]).n_missing == 0
    assert metrics.relation_f1(gold, {"d": [0], "a": [0], "b": [0], "c": [0]}).n_missing == 0
    assert metrics.relation_f1(gold, gold).n_missing == 0


label_sets = st.lists(st.integers(0, 63), min_size=1, max_size=4)


@settings(max_examples=100, deadline=None)
@given(gold=st.dictionaries(st.text(min_size=1, max_size=3), label_sets, min_size=1,
                            max_size=30),
       data=st.data())
def test_relation_f1_matches_reference(gold, data):
    keys = list(gold)
    pred_keys = data.draw(st.lists(st.sampled_from(keys), unique=True))
    pred = {k: data.draw(label_sets) for k in pred_keys}
    subset = data.draw(st.none() | st.lists(st.sampled_from(keys), min_size=1))
    na = data.draw(st.sampled_from([0, 0, 5]))
    res = metrics.relation_f1(gold, pred, subset=subset, na=na)
    want = ref.relation_scores(gold, pred, subset, na)
    assert (res.precision, res.recall, res.f1, res.n_sys, res.n_r, res.n_std) == \
        pytest.approx(want, abs=1e-15)
    if subset is None:
        counts = ref.per_relation_counts(gold, pred, na)
        assert {r: (s.n_sys, s.n_r, s.n_std) for r, s in res.per_relation.items()} == counts
    # upper bound of this prediction and a second system
    other = {k: data.draw(label_sets) for k in keys}
    ub = metrics.upper_bound(gold, [pred, other], subset=subset, na=na)
    chosen = ref.upper_bound_choices(gold, [pred, other], na)
    want = ref.relation_scores(gold, chosen, subset, na)
    assert (ub.n_sys, ub.n_r, ub.n_std) == want[3:]
    assert ub.f1 >= max(metrics.relation_f1(gold, p, subset=subset, na=na).f1
                        for p in (pred, other)) - 1e-15


# ----------------------------------------------------------------- real data


@needs_ipre
@pytest.mark.parametrize("track", ["sent", "bag"])
def test_ipre_dev_self_and_perturbed(track):
    rng = np.random.default_rng(11)
    rel = metrics.read_relation_ids(IPRE / "relation2id.txt")
    path = IPRE / f"{track}_relation_dev.txt"
    reader = metrics.read_sent_relations if track == "sent" else metrics.read_bag_relations
    gold = reader(path, rel)
    plain = ref.read_two_column(path) if track == "sent" else ref.read_bag_file(path)
    assert {k: set(v) for k, v in plain.items()} == {k: set(v) for k, v in gold.items()}
    self_score = metrics.relation_f1(gold, gold)
    assert self_score.f1 == 1.0 and self_score.n_std > 0
    # perturb: drop some items, relabel some, add spurious labels
    pred = {}
    for k, v in plain.items():
        u = rng.random()
        if u < 0.1:
            continue
        if u < 0.3:
            v = [int(rng.integers(0, 35))]
        elif u < 0.35:
            v = list(v) + [int(rng.integers(1, 35))]
        pred[k] = v
    res = metrics.relation_f1(gold, pred)
    want = ref.relation_scores(plain, pred)
    assert (res.precision, res.recall, res.f1, res.n_sys, res.n_r, res.n_std) == \
        pytest.approx(want, abs=1e-15)
    half = list(plain)[::2]
    res = metrics.relation_f1(gold, pred, subset=half)
    assert (res.n_sys, res.n_r, res.n_std) == ref.relation_scores(plain, pred, half)[3:]
    ub = metrics.upper_bound(gold, [pred, {}])
    assert ub.f1 >= res.f1 * 0  # defined, and the perfect system wins outright:
    assert metrics.upper_bound(gold, [pred, gold]).f1 == 1.0


# ----------------------------------------------------------------- prediction reader


def test_read_relation_predictions(tmp_path):
    p = _write(tmp_path, "p.txt", "\ufeffB1\t4\r\nB2\t0 3\r\n")
    lab = metrics.read_relation_predictions(p, "bag")
    assert dict(lab) == {"B1": {4}, "B2": {0, 3}} and lab.heads is None
    p = _write(tmp_path, "p5.txt", "B1\tA\tB\tS1 S2\t4\nB2\tC\tD\tS3\t0\n")
    lab = metrics.read_relation_predictions(p, "bag")
    assert dict(lab) == {"B1": {4}, "B2": {0}} and lab.tails == ["B", "D"]
    p = _write(tmp_path, "mixed.txt", "B1\t4\nB2\tC\tD\tS3\t0\n")
    with pytest.raises(ValueError, match=r"mixed.txt:2: expected 2 tab-separated columns, found 5"):
        metrics.read_relation_predictions(p, "bag")
    with pytest.raises(ValueError, match=r"p5.txt:1: expected 2 tab-separated columns"):
        metrics.read_relation_predictions(p.parent / "p5.txt", "sent")
    with pytest.raises(ValueError, match="track"):
        metrics.read_relation_predictions(p, "doc")
    empty = _write(tmp_path, "empty.txt", "\n\n")
    assert len(metrics.read_relation_predictions(empty, "bag")) == 0
    # the old private name still works
    from metrics.relation import _read_labels
    assert dict(_read_labels(tmp_path / "p.txt", 2, None)) == {"B1": {4}, "B2": {0, 3}}


def test_bag_middle_columns_checked_and_decoded_lazily(tmp_path):
    p = tmp_path / "b.txt"
    p.write_bytes("B1\t\u674e\u70c8\u94a7\t\u738b\u4fa3\t S1  S2 \t0\n".encode() +
                  b"B2\tA\tB\tS3\t4\n")
    lab = metrics.read_bag_relations(p)
    assert lab.heads == ["\u674e\u70c8\u94a7", "A"] and lab.tails == ["\u738b\u4fa3", "B"]
    assert lab.sent_ids == [("S1", "S2"), ("S3",)]
    for bad, col in ((b"\xe4\xb8", 2), (b"\xed\xa0\x80", 3), (b"\xc0\xaf", 2),
                     (b"\xf4\x90\x80\x80", 3), (b"abc\xff", 2)):
        fields = [b"B1", b"A", b"B", b"S1", b"0"]
        fields[col - 1] = bad
        p.write_bytes(b"B0\tA\tB\tS0\t0\n" + b"\t".join(fields) + b"\n")
        with pytest.raises(ValueError, match=rf"b.txt:2: column {col} is not valid UTF-8"):
            metrics.read_bag_relations(p)
    p.write_bytes("B1\tA\tB\t\u3000\t0\n".encode())  # str.strip() removes U+3000
    with pytest.raises(ValueError, match=r"b.txt:1: empty sentence id list"):
        metrics.read_bag_relations(p)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=24))
def test_utf8_check_agrees_with_python(blob):
    from metrics import _relparse
    line = b"B1\t" + blob.replace(b"\t", b"").replace(b"\n", b"") + b"\tB\tS1\t0\n"
    try:
        line.decode("utf-8")
        ok = True
    except UnicodeDecodeError:
        ok = False
    buf = np.frombuffer(line, dtype=np.uint8)
    *_, error = _relparse.scan(buf, 5, (1 << 64) - 1)
    assert (error is None) == ok, (line, error)
