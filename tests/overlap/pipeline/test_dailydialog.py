"""The single-turn DailyDialog workload through the public API (needs shared data)."""

from __future__ import annotations

import numpy as np
import pytest

from overlap import OverlapIndex, TokenSets, dedup
from overlap.pipeline.dialogue import make_samples, read_dialogues

pytestmark = pytest.mark.data


@pytest.fixture(scope="module")
def workload(dailydialog_dir):
    train = make_samples(read_dialogues(dailydialog_dir / "dialogues_train.txt"))
    test = make_samples(read_dialogues(dailydialog_dir / "dialogues_test.txt"))
    assert (len(train), len(test)) == (76053, 6740)  # the study's sample counts

    def fields(s):
        return [TokenSets.from_texts(s.context), TokenSets.from_texts(s.response)]

    return fields(train), fields(test)


def brute_force_best(q, refs):
    """Best (score, index) of query row q by a dense scan with scipy sparse products."""
    import scipy.sparse as sp

    scores = None
    for qf, rf in zip(q, refs):
        vocab, inv = np.unique(np.concatenate([rf.hashes, qf.hashes]), return_inverse=True)
        r_cols, q_cols = inv[: rf.nnz], inv[rf.nnz:]
        r_rows = np.repeat(np.arange(len(rf)), rf.sizes)
        q_rows = np.repeat(np.arange(len(qf)), qf.sizes)
        rm = sp.csr_matrix((np.ones(rf.nnz), (r_rows, r_cols)), shape=(len(rf), len(vocab)))
        qm = sp.csr_matrix((np.ones(qf.nnz), (q_rows, q_cols)), shape=(len(qf), len(vocab)))
        inter = (qm @ rm.T).toarray()
        denom = qf.sizes[:, None] + rf.sizes[None, :]
        with np.errstate(invalid="ignore", divide="ignore"):
            d = np.where(denom > 0, 2.0 * inter / np.maximum(denom, 1), 0.0)
        scores = d if scores is None else np.minimum(scores, d)
    best = scores.argmax(axis=1)  # first maximum = lowest index
    best_score = scores[np.arange(scores.shape[0]), best]
    best[best_score == 0] = -1
    return best_score, best


def test_test_vs_train_equals_brute_force_on_a_sample(workload):
    train, test = workload
    res = OverlapIndex(train).max_overlap(test)
    sample = np.random.default_rng(7).choice(len(test[0]), size=300, replace=False)
    q = [f.take(sample) for f in test]
    want_score, want_index = brute_force_best(q, train)
    np.testing.assert_array_equal(res.score[sample], want_score)
    np.testing.assert_array_equal(res.index[sample], want_index)
    # a large share of DailyDialog's test samples also occur verbatim in train
    assert 0.1 < (res.score == 1.0).mean() < 0.5


def test_context_only_and_thread_invariance(workload):
    train, test = workload
    idx = OverlapIndex(train[:1])
    one = idx.max_overlap(test[:1], n_threads=1)
    two = idx.max_overlap(test[:1], n_threads=2)
    np.testing.assert_array_equal(one.score, two.score)
    np.testing.assert_array_equal(one.index, two.index)


def test_dialogue_dedup_runs_on_units(dailydialog_dir):
    dialogues = read_dialogues(dailydialog_dir / "dialogues_test.txt")
    units = TokenSets.from_texts([" ".join(d) for d in dialogues])
    res = dedup(units, threshold=0.8)
    assert res.keep.sum() + res.n_removed == len(dialogues)
    assert res.n_removed > 0
