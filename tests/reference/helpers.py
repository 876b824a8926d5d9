"""Helpers shared by the test files: corpora, strategies, builders, scipy versions.

Test files import these from here, never from one another.
"""

from __future__ import annotations

import builtins
import inspect
import math
import sys
import warnings
from types import SimpleNamespace

import numpy as np
import scipy.stats as ss
from hypothesis import strategies as st

from overlap import TokenSets
from reference import overlap as ref

# Small vocabularies make overlaps, ties and identical rows common.
row = st.lists(st.integers(0, 9), max_size=8)
big_row = st.lists(st.integers(0, 300), min_size=60, max_size=200)


@st.composite
def collections(draw, n_fields=None, min_rows=0, max_rows=25):
    """(list of per-field id lists, n_fields) with empty, tiny, huge and repeated rows."""
    nf = draw(st.integers(1, 3)) if n_fields is None else n_fields
    n = draw(st.integers(min_rows, max_rows))
    pool = [draw(st.one_of(row, row, row, big_row)) for _ in range(max(n // 2, 1))]
    fields = []
    for _ in range(nf):
        col = []
        for _ in range(n):
            # reuse earlier rows often: exact duplicates and ties
            col.append(draw(st.sampled_from(pool)) if draw(st.booleans()) else draw(row))
        fields.append(col)
    return fields


def build(fields, multiset, ngram=1):
    return [TokenSets.from_ids(col, multiset=multiset, ngram=ngram) for col in fields]


def ref_units(fields, multiset, ngram=1):
    n = len(fields[0])
    return [tuple(ref.bag(col[i], ngram, multiset) for col in fields) for i in range(n)]


def as_arrays(rows_, k):
    return (np.array([[s for s, _ in r] for r in rows_], dtype=float).reshape(-1, k),
            np.array([[j for _, j in r] for r in rows_], dtype=np.int64).reshape(-1, k))


def make_corpus(rng, n, vocab=400, zipf=1.3):
    """Zipf tokens with planted near-duplicates: a small realistic corpus."""
    rows_ = []
    for i in range(n):
        if i > 10 and rng.random() < 0.2:
            base = list(rows_[rng.integers(0, i)])
            if base and rng.random() < 0.5:
                base[rng.integers(0, len(base))] = int(rng.integers(0, vocab))
            rows_.append(base)
        else:
            length = int(rng.integers(0, 25))
            rows_.append([int(x) % vocab for x in rng.zipf(zipf, length)])
    return rows_


# ------------------------------------ scipy.stats from the floor (1.9.3) to today


def _pearsonr_probe(*args, **kw):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ss.pearsonr(*args, **kw)
    except ValueError:
        return None


#: scipy before 1.11: pearsonr refuses NaN and inf ("array must not contain
#: infs or NaNs"), takes one-sided p-values from |r| (wrong when r < 0), and
#: near |r| = 1 its r is 1 ulp short where today's is exactly 1, which for a
#: small sample moves the p-value from 0 to ~1e-8.
_PEARSONR_TAKES_NONFINITE = _pearsonr_probe([1.0, 2.0, np.nan], [1.0, 2.0, 3.0]) is not None
_PEARSONR_ONE_SIDED_OK = _pearsonr_probe([1.0, 2.0, 3.0, 4.0], [4.0, 3.0, 1.0, 2.0],
                                         alternative="less").pvalue < 0.5
#: scipy 1.9 and 1.10 (at least): spearmanr and kendalltau give NaN when a
#: variable holds both infinities; today's rank them like any other value.
_RANKS_TAKE_INFINITIES = not math.isnan(
    ss.spearmanr([1.0, 2.0, 3.0, 4.0], [np.inf, -np.inf, np.inf, 0.0])[0])


def old_scipy_differs(theirs, x, y, alternative="two-sided") -> bool:
    """Whether this scipy is an old one whose ``theirs`` differs from today's on
    this input: the comparison is then left out (today's scipy is the reference)."""
    if theirs is not ss.pearsonr:
        return not _RANKS_TAKE_INFINITIES and bool(np.isinf(x).any() or np.isinf(y).any())
    if not _PEARSONR_TAKES_NONFINITE and not (np.isfinite(x).all() and np.isfinite(y).all()):
        return True
    if _PEARSONR_ONE_SIDED_OK:
        return False
    if alternative != "two-sided":
        return True
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = np.corrcoef(np.asarray(x, dtype=float), np.asarray(y, dtype=float))[0, 1]
    return bool(abs(abs(r) - 1.0) < 1e-9)


#: scipy's resampling method objects and their defaults (the classes are new in
#: scipy 1.11; ``rng`` was ``random_state`` before scipy 1.15)
_METHODS = {
    "PermutationMethod": {"n_resamples": 9999, "batch": None, "rng": None},
    "MonteCarloMethod": {"n_resamples": 9999, "batch": None, "rvs": None, "rng": None},
    "BootstrapMethod": {"n_resamples": 9999, "batch": None, "method": "BCa", "rng": None},
}


def scipy_method(name: str, **kw):
    """``scipy.stats.<name>(**kw)``, or on a scipy without the class an object
    with its attributes (metrics accepts either: docs/metrics.md)."""
    cls = getattr(ss, name, None)
    if cls is None:
        return SimpleNamespace(**{**_METHODS[name], **kw})
    if "rng" in kw and "rng" not in inspect.signature(cls).parameters:
        kw["random_state"] = kw.pop("rng")
    return cls(**kw)


def scipy_has_method(f) -> bool:
    """Whether scipy's ``f`` takes ``method=`` objects (pearsonr: scipy 1.11)."""
    return "method" in inspect.signature(f).parameters


def scipy_along_axis(f, x, y, axis):
    """(statistic, pvalue) arrays of ``f(x, y, axis=axis)``; on a scipy whose
    ``f`` has no ``axis`` (pearsonr before 1.13), ``f`` of every 1-D slice of
    the broadcast inputs, which is what ``axis`` means."""
    if "axis" in inspect.signature(f).parameters:
        res = f(x, y, axis=axis)
        return np.asarray(res[0]), np.asarray(res[1])
    x = np.moveaxis(np.asarray(x, dtype=float), axis, -1)
    y = np.moveaxis(np.asarray(y, dtype=float), axis, -1)
    x, y = np.broadcast_arrays(x, y)
    stat = np.empty(x.shape[:-1])
    pvalue = np.empty(x.shape[:-1])
    for i in np.ndindex(stat.shape):
        stat[i], pvalue[i] = f(x[i], y[i])[:2]
    return stat, pvalue


def chunked(fields, sizes):
    """Cut aligned fields into consecutive chunks of the given sizes (cycled)."""
    n = len(fields[0])
    start = p = 0
    while start < n:
        stop = min(n, start + sizes[p % len(sizes)])
        p += 1
        yield tuple(f.take(np.arange(start, stop)) for f in fields)
        start = stop


def without_modules(monkeypatch, *names: str) -> None:
    """Imports of ``names`` (top-level packages) fail from here on, as when they
    are not installed; ``monkeypatch`` (the fixture, or a ``MonkeyPatch.context()``)
    undoes it."""
    real = builtins.__import__

    def fake(name, *a, **k):
        if name.split(".")[0] in names:
            raise ImportError(f"No module named {name!r}")
        return real(name, *a, **k)

    for mod in list(sys.modules):
        if mod.split(".")[0] in names:
            monkeypatch.delitem(sys.modules, mod)
    monkeypatch.setattr(builtins, "__import__", fake)
