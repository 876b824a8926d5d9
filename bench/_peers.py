"""Peer implementations: what a user would run instead of overlap-metrics.

Exact peers (their answers are asserted equal to ours):

* :class:`SparseBruteForce` — the published method on a CPU: binary CSR
  matrices built from the TokenSets hashes, blocked ``Q @ R.T`` sparse products
  (intersection counts), Dice ``2*dot/(|q|+|r|)`` in float64, minimum over the
  fields, top-1 with the lowest index on ties, or every pair at a threshold.
* :class:`SetSimSearchPeer` — SetSimilaritySearch (exact prefix-filtering
  all-pairs / search index) at the Jaccard threshold equivalent to the Dice one.
* :func:`python_token_sets`, :func:`sklearn_binary_matrix` — the reference
  script's tokenizer in plain Python, and scikit-learn's CountVectorizer
  running it (how the matrices of the brute force are usually built).
* :func:`dedup_from_edges` — the published iterative dedup, literally, over the
  ``R > t`` edges that the brute force finds.

Approximate / different-objective peers (reported, never asserted):

* :class:`MinHashLSHPeer` — datasketch MinHash + MinHashLSH (128 permutations).
* :func:`topn_dot` — sparse_dot_topn top-1 by dot product (not Dice).

Every peer imports its third-party package lazily, so this module imports with
numpy and scipy only.
"""

from __future__ import annotations

import re
import string
from collections.abc import Sequence
from fractions import Fraction

import numpy as np
import scipy.sparse as sp

from overlap import TokenSets

__all__ = [
    "as_fields",
    "dice_to_jaccard",
    "threshold_fraction",
    "passes_threshold",
    "passes_measure",
    "exact_measure_pairs",
    "python_sets",
    "SparseBruteForce",
    "SetSimSearchPeer",
    "MinHashLSHPeer",
    "topn_dot",
    "tokenize_reference",
    "python_token_sets",
    "sklearn_binary_matrix",
    "dedup_from_edges",
    "pair_intersections",
    "exact_pairs",
    "recall_precision",
]


def as_fields(x) -> tuple[TokenSets, ...]:
    return (x,) if isinstance(x, TokenSets) else tuple(x)


# ----------------------------------------------------------------- thresholds
def dice_to_jaccard(d: float) -> float:
    """Dice d <=> Jaccard d / (2 - d) (for one pair of sets)."""
    return d / (2.0 - d)


def threshold_fraction(t: float) -> Fraction:
    """The threshold as the decimal fraction it was written as (0.8 -> 4/5)."""
    return Fraction(repr(float(t)))


def passes_threshold(inter, size_a, size_b, t: float) -> np.ndarray:
    """Integer test of ``2*inter/(a+b) >= t``: ``2*inter*q >= p*(a+b)`` for t = p/q.

    Exact (no float rounding): used to compare pair sets on the threshold.
    Pairs of two empty sets never pass (their ratio is defined as 0).
    """
    f = threshold_fraction(t)
    inter = np.asarray(inter, dtype=np.int64)
    tot = np.asarray(size_a, dtype=np.int64) + np.asarray(size_b, dtype=np.int64)
    return (2 * inter * f.denominator >= f.numerator * tot) & (tot > 0) & (inter > 0)


def passes_measure(measure: str, inter, size_a, size_b, t: float) -> np.ndarray:
    """Integer test of ``score >= t`` for t = p/q, no float rounding.

    With i the intersection and a, b the sizes (a the query's): dice
    ``2iq >= p(a+b)``, jaccard ``iq >= p(a+b-i)``, cosine ``i²q² >= p²ab``,
    overlap ``iq >= p*min(a,b)``, containment ``iq >= pa``; a pair that
    shares nothing never passes (its score is 0).
    """
    f = threshold_fraction(t)
    p, q = f.numerator, f.denominator
    # Python ints: p and q of a threshold such as 2/3 (0.6666666666666666) have
    # 16 digits, and the cosine test squares them
    i = np.asarray(inter, dtype=np.int64).astype(object)
    a = np.asarray(size_a, dtype=np.int64).astype(object)
    b = np.asarray(size_b, dtype=np.int64).astype(object)
    if measure == "dice":
        ok = 2 * i * q >= p * (a + b)
    elif measure == "jaccard":
        ok = i * q >= p * (a + b - i)
    elif measure == "cosine":
        ok = i * i * q * q >= p * p * a * b
    elif measure == "overlap":
        ok = i * q >= p * np.minimum(a, b)
    elif measure == "containment":
        ok = i * q >= p * a
    else:
        raise ValueError(f"unknown measure {measure!r}")
    return np.asarray(ok, dtype=bool) & (np.asarray(inter) > 0)


def exact_measure_pairs(a: TokenSets, b: TokenSets, left, right, t: float,
                        measure: str) -> set:
    """The candidate pairs (i, j) that pass ``t`` under ``measure`` by the integer test."""
    left = np.asarray(left, dtype=np.int64)
    right = np.asarray(right, dtype=np.int64)
    inter = pair_intersections(a, b, left, right)
    ok = passes_measure(measure, inter, a.sizes[left], b.sizes[right], t)
    return set(zip(left[ok].tolist(), right[ok].tolist()))


def python_sets(ts: TokenSets) -> list[list[int]]:
    """Each row as a list of Python ints (the hashes), for pure-Python peers."""
    h = ts.hashes.tolist()
    ip = ts.indptr.tolist()
    return [h[a:b] for a, b in zip(ip[:-1], ip[1:])]


def pair_intersections(a: TokenSets, b: TokenSets, left, right) -> np.ndarray:
    """|a[i] ∩ b[j]| for every pair, by Python set intersection (independent of ours)."""
    sa, sb = python_sets(a), python_sets(b)
    out = np.empty(len(left), dtype=np.int64)
    for k, (i, j) in enumerate(zip(np.asarray(left).tolist(), np.asarray(right).tolist())):
        out[k] = len(set(sa[i]).intersection(sb[j]))
    return out


def exact_pairs(a: TokenSets, b: TokenSets, left, right, t: float) -> set:
    """The subset of candidate pairs (i, j) that pass ``t`` by the integer test."""
    left = np.asarray(left, dtype=np.int64)
    right = np.asarray(right, dtype=np.int64)
    inter = pair_intersections(a, b, left, right)
    ok = passes_threshold(inter, a.sizes[left], b.sizes[right], t)
    return set(zip(left[ok].tolist(), right[ok].tolist()))


def recall_precision(found: set, truth: set) -> tuple[float, float]:
    hit = len(found & truth)
    recall = hit / len(truth) if truth else 1.0
    precision = hit / len(found) if found else 1.0
    return recall, precision


# ----------------------------------------------------------------- scipy brute force
class SparseBruteForce:
    """Blocked sparse-matrix brute force over binary CSR matrices (exact).

    Parameters
    ----------
    queries : TokenSets or sequence of TokenSets (one per field)
    references : same, or None for all-vs-rest / self-join of ``queries``
    block : int
        Query rows per sparse product (bounds the memory of one product).

    The matrices (one column per distinct hash of the field, data 1.0) are built
    in ``__init__``; :meth:`top1` and :meth:`join` are the timed parts.
    """

    def __init__(self, queries, references=None, *, block: int = 256) -> None:
        qf = as_fields(queries)
        self.self_mode = references is None
        rf = qf if self.self_mode else as_fields(references)
        if len(qf) != len(rf):
            raise ValueError("queries and references need the same number of fields")
        self.block = int(block)
        self.nq, self.nr = len(qf[0]), len(rf[0])
        self.Q, self.RT, self.qsize, self.rsize = [], [], [], []
        for q, r in zip(qf, rf):
            vocab = np.unique(q.hashes if self.self_mode
                              else np.concatenate([q.hashes, r.hashes]))
            Q = self._binary(q, vocab)
            R = Q if self.self_mode else self._binary(r, vocab)
            self.Q.append(Q)
            self.RT.append(R.T.tocsr())
            self.qsize.append(q.sizes.astype(np.float64))
            self.rsize.append(r.sizes.astype(np.float64))

    @staticmethod
    def _binary(ts: TokenSets, vocab: np.ndarray) -> sp.csr_matrix:
        cols = np.searchsorted(vocab, ts.hashes).astype(np.int32)
        data = np.ones(cols.shape[0], dtype=np.float32)
        return sp.csr_matrix((data, cols, ts.indptr.copy()), shape=(len(ts), vocab.shape[0]))

    def matrices(self):
        """(Q, R.T) of every field: the prebuilt inputs of the products."""
        return list(zip(self.Q, self.RT))

    def _scores(self, lo: int, hi: int) -> sp.csr_matrix:
        """Dice of query rows lo:hi against every reference (min over fields), canonical CSR."""
        out = None
        for Q, RT, qs, rs in zip(self.Q, self.RT, self.qsize, self.rsize):
            P = Q[lo:hi] @ RT  # intersection counts, exact in float32 (< 2**24)
            rows = np.repeat(np.arange(hi - lo), np.diff(P.indptr))
            dice = 2.0 * P.data.astype(np.float64) / (qs[lo + rows] + rs[P.indices])
            D = sp.csr_matrix((dice, P.indices, P.indptr), shape=P.shape)
            out = D if out is None else out.minimum(D)
        if not out.has_canonical_format:
            out.sum_duplicates()
        return out

    def _entries(self, lo: int, hi: int):
        M = self._scores(lo, hi)
        rows = np.repeat(np.arange(hi - lo, dtype=np.int64), np.diff(M.indptr))
        cols = M.indices.astype(np.int64)
        data = M.data
        keep = data > 0.0
        if self.self_mode:
            keep &= cols != rows + lo
        return M.indptr, rows, cols, data, keep

    def top1(self) -> tuple[np.ndarray, np.ndarray]:
        """Best score and lowest-index argmax per query (-1 and 0 when nothing overlaps)."""
        score = np.zeros(self.nq, dtype=np.float64)
        index = np.full(self.nq, -1, dtype=np.int64)
        for lo in range(0, self.nq, self.block):
            hi = min(self.nq, lo + self.block)
            _, rows, cols, data, keep = self._entries(lo, hi)
            rows, cols, data = rows[keep], cols[keep], data[keep]
            if rows.size == 0:
                continue
            starts = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]])
            r = rows[starts]
            best = np.maximum.reduceat(data, starts)
            is_best = data == np.repeat(best, np.diff(np.r_[starts, rows.size]))
            cand = np.where(is_best, cols, np.iinfo(np.int64).max)
            score[lo + r] = best
            index[lo + r] = np.minimum.reduceat(cand, starts)  # columns ascend: lowest wins
        return score, index

    def topk(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The k best (score descending, index ascending) per query, shape (nq, k).

        Missing matches are score 0 and index -1, as in ``max_overlap(top_k=k)``.
        """
        score = np.zeros((self.nq, k), dtype=np.float64)
        index = np.full((self.nq, k), -1, dtype=np.int64)
        for lo in range(0, self.nq, self.block):
            hi = min(self.nq, lo + self.block)
            _, rows, cols, data, keep = self._entries(lo, hi)
            rows, cols, data = rows[keep], cols[keep], data[keep]
            order = np.lexsort((cols, -data, rows))
            rows, cols, data = rows[order], cols[order], data[order]
            starts = np.searchsorted(rows, rows, side="left")
            rank = np.arange(rows.shape[0]) - starts
            sel = rank < k
            score[lo + rows[sel], rank[sel]] = data[sel]
            index[lo + rows[sel], rank[sel]] = cols[sel]
        return score, index

    def join(self, threshold: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every pair with float64 Dice >= threshold (i < j in self mode), sorted."""
        L, R, S = [], [], []
        for lo in range(0, self.nq, self.block):
            hi = min(self.nq, lo + self.block)
            _, rows, cols, data, keep = self._entries(lo, hi)
            keep &= data >= threshold
            if self.self_mode:
                keep &= cols > rows + lo
            L.append(rows[keep] + lo)
            R.append(cols[keep])
            S.append(data[keep])
        left = np.concatenate(L) if L else np.zeros(0, dtype=np.int64)
        right = np.concatenate(R) if R else np.zeros(0, dtype=np.int64)
        score = np.concatenate(S) if S else np.zeros(0, dtype=np.float64)
        order = np.lexsort((right, left))
        return left[order], right[order], score[order]


# ----------------------------------------------------------------- SetSimilaritySearch
class SetSimSearchPeer:
    """SetSimilaritySearch at the Jaccard threshold equivalent to a Dice threshold
    (or at the threshold of its own ``jaccard``, ``cosine`` or ``containment``).

    The threshold is lowered by 1e-9 so that no pair exactly on the
    threshold is lost to float rounding inside the peer; its candidates are then
    settled with the exact integer test (:func:`exact_pairs`,
    :func:`exact_measure_pairs`).  Empty sets are left out (their score is 0:
    they never join).  Its ``containment`` is ours: how much of the query lies
    inside the indexed set.

    Parameters
    ----------
    references : TokenSets (one field)
    threshold : float
        Dice threshold (or ``measure``'s).
    measure : {"dice", "jaccard", "cosine", "containment"}
    """

    def __init__(self, references: TokenSets, threshold: float, measure: str = "dice") -> None:
        from SetSimilaritySearch import SearchIndex

        self.threshold = threshold
        if measure == "dice":
            name, self.jaccard = "jaccard", dice_to_jaccard(threshold) - 1e-9
            self.peer_threshold = self.jaccard
        elif measure in ("jaccard", "cosine", "containment"):
            name, self.peer_threshold = measure, threshold - 1e-9
        else:
            raise ValueError(f"SetSimilaritySearch has no {measure!r}")
        sets = python_sets(references)
        self.ref_ids = np.flatnonzero(references.sizes > 0)
        self.ref_sets = [sets[j] for j in self.ref_ids.tolist()]
        self.index = SearchIndex(self.ref_sets, similarity_func_name=name,
                                 similarity_threshold=self.peer_threshold)

    def query_all(self, query_sets: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
        """Candidate pairs (query, reference) of every non-empty query."""
        L, R = [], []
        q = self.index.query
        for i, s in enumerate(query_sets):
            if s:
                for j, _ in q(s):
                    L.append(i)
                    R.append(j)
        return np.asarray(L, dtype=np.int64), self.ref_ids[np.asarray(R, dtype=np.int64)]

    @staticmethod
    def self_join(ts: TokenSets, threshold: float) -> tuple[np.ndarray, np.ndarray]:
        """All-pairs (i < j) candidates of one collection with ``SetSimilaritySearch.all_pairs``."""
        from SetSimilaritySearch import all_pairs

        sets = python_sets(ts)
        ids = np.flatnonzero(ts.sizes > 0)
        nonempty = [sets[j] for j in ids.tolist()]
        jac = dice_to_jaccard(threshold) - 1e-9
        pairs = [(x, y) for x, y, _ in all_pairs(nonempty, similarity_func_name="jaccard",
                                                 similarity_threshold=jac)]
        arr = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
        a, b = ids[arr[:, 0]], ids[arr[:, 1]]
        return np.minimum(a, b), np.maximum(a, b)


# ----------------------------------------------------------------- datasketch
class MinHashLSHPeer:
    """datasketch MinHash + MinHashLSH over the TokenSets hashes (approximate).

    Tokens are our 64-bit hashes, fed with ``hashfunc=int`` and the ``affine64``
    scheme (no re-hashing of strings).  The LSH threshold is the Jaccard
    equivalent of the Dice threshold; its raw candidates are what a user gets.
    """

    def __init__(self, references: TokenSets, threshold: float, *, num_perm: int = 128,
                 seed: int = 1) -> None:
        from datasketch import MinHashLSH

        self.num_perm, self.seed = num_perm, seed
        self.lsh = MinHashLSH(threshold=dice_to_jaccard(threshold), num_perm=num_perm)
        sets = python_sets(references)
        self.ref_ids = np.flatnonzero(references.sizes > 0)
        mhs = self.minhashes([sets[j] for j in self.ref_ids.tolist()])
        self._ref_minhashes = mhs
        with self.lsh.insertion_session() as session:
            for j, m in zip(self.ref_ids.tolist(), mhs):
                session.insert(j, m, check_duplication=False)

    def minhashes(self, sets: list[list[int]]):
        from datasketch import MinHash

        return MinHash.bulk(sets, num_perm=self.num_perm, seed=self.seed, hashfunc=int,
                            scheme="affine64")

    def query_all(self, query_sets: list[list[int]]) -> set:
        """Candidate pairs (query, reference): MinHash every query, then query the LSH."""
        ids = [i for i, s in enumerate(query_sets) if s]
        mhs = self.minhashes([query_sets[i] for i in ids])
        out = set()
        q = self.lsh.query
        for i, m in zip(ids, mhs):
            for j in q(m):
                out.add((i, j))
        return out

    def self_pairs(self) -> set:
        """Self-join candidates (i < j) of the indexed collection itself."""
        out = set()
        q = self.lsh.query
        for i, m in zip(self.ref_ids.tolist(), self._ref_minhashes):
            for j in q(m):
                if j != i:
                    out.add((min(i, j), max(i, j)))
        return out


# ----------------------------------------------------------------- sparse_dot_topn
def topn_dot(Q: sp.csr_matrix, RT: sp.csr_matrix, n_threads: int | None = None):
    """Top-1 reference per query by dot product (sparse_dot_topn): (dot, index)."""
    from sparse_dot_topn import sp_matmul_topn

    C = sp_matmul_topn(Q, RT, top_n=1, sort=True, n_threads=n_threads)
    n = Q.shape[0]
    counts = np.diff(C.indptr)
    dot = np.zeros(n, dtype=np.float64)
    index = np.full(n, -1, dtype=np.int64)
    has = counts > 0
    dot[has] = C.data[C.indptr[:-1][has]]
    index[has] = C.indices[C.indptr[:-1][has]]
    return dot, index


# ----------------------------------------------------------------- tokenization
_WORDPUNCT = re.compile(r"\w+|[^\w\s]+")
_PUNCT = string.punctuation


def tokenize_reference(text: str) -> list[str]:
    """The published script's tokenizer: lower-case, regex, drop substrings of punctuation."""
    return [t for t in _WORDPUNCT.findall(text.lower()) if t not in _PUNCT]


def python_token_sets(texts: Sequence[str]) -> list[set]:
    """One Python set of token strings per text."""
    return [set(tokenize_reference(t)) for t in texts]


def sklearn_binary_matrix(texts: Sequence[str]) -> sp.csr_matrix:
    """scikit-learn CountVectorizer(binary=True) running the reference tokenizer."""
    from sklearn.feature_extraction.text import CountVectorizer

    return CountVectorizer(analyzer=tokenize_reference, binary=True,
                           dtype=np.int8).fit_transform(texts)


# ----------------------------------------------------------------- dedup
def dedup_from_edges(n: int, left, right, score, threshold: float):
    """The published iterative dedup (SPEC §5), run on the ``R > threshold`` edges.

    Each pass visits units in index order; a present, unprotected unit whose
    best present neighbour scores > threshold is removed, that neighbour
    (lowest index on ties) becomes ``kept_for`` and protected for the pass.
    Only edges can make a unit's best ratio exceed the threshold, so the
    adjacency lists give the same answer as scanning every present unit.

    Returns ``keep, kept_for, passes, cluster`` (cluster = connected component
    of the edge graph labelled by its smallest member).
    """
    from scipy.sparse.csgraph import connected_components

    left = np.asarray(left, dtype=np.int64)
    right = np.asarray(right, dtype=np.int64)
    score = np.asarray(score, dtype=np.float64)
    strict = score > threshold
    left, right, score = left[strict], right[strict], score[strict]
    nbr: list[list[tuple[int, float]]] = [[] for _ in range(n)]
    for a, b, s in zip(left.tolist(), right.tolist(), score.tolist()):
        nbr[a].append((b, s))
        nbr[b].append((a, s))
    for lst in nbr:
        lst.sort()
    present = [True] * n
    kept_for = [-1] * n
    passes = 0
    while True:
        passes += 1
        protected = [False] * n
        removed = False
        for i in range(n):
            if not present[i] or protected[i] or not nbr[i]:
                continue
            best, best_s = -1, -1.0
            for j, s in nbr[i]:
                if present[j] and s > best_s:
                    best, best_s = j, s
            if best >= 0:
                present[i] = False
                kept_for[i] = best
                protected[best] = True
                removed = True
        if not removed:
            break
    g = sp.coo_matrix((np.ones(left.shape[0]), (left, right)), shape=(n, n))
    _, labels = connected_components(g, directed=False)
    smallest = np.full(labels.max() + 1 if n else 0, n, dtype=np.int64)
    np.minimum.at(smallest, labels, np.arange(n))
    return (np.asarray(present, dtype=bool), np.asarray(kept_for, dtype=np.int64), passes,
            smallest[labels])
