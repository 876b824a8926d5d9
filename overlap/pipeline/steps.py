"""Steps 2-5 of the published dialogue-cleaning pipeline, one function per step.

1. :func:`overlap.pipeline.scanning.scan` — every eval sample's max overlap
   against train (the ratio of two samples being the minimum over fields);
2. :func:`dedup_dialogues` — iterative near-duplicate removal of dialogues
   (:func:`dedup_first` keeps the earliest unit instead);
3. :func:`resplit` — the units least overlapping the rest form test and
   validation, the rest train (seeded);
4. :func:`flatten` — (context, response) samples with ``turns`` context turns;
5. :func:`remove_duplicates` — exact duplicate pairs within each split, and
   eval pairs that also occur in train;
6. :func:`overlap.pipeline.cleaning.write_clean` — the new split and a report.

:func:`overlap.pipeline.cleaning.clean` runs all of them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._fields import Handover, as_fields
from .._progress import ProgressArg, check_progress
from .._threads import effective_n_threads
from .._validation import check_int, check_measure, check_unit_interval, type_name
from ..dedup import DedupResult, dedup, exact_duplicates, self_join_edges
from ..search import max_overlap
from ..tokensets import Tokenizer, TokenSets
from .dialogue import Samples, checked_dialogues, make_samples
from .report import SampleCounts
from .scanning import DEFAULT_TOKENIZER, tokenize_fields

__all__ = [
    "KEEP",
    "Resplit",
    "dedup_dialogues",
    "dedup_first",
    "resplit",
    "flatten",
    "remove_duplicates",
]

#: What a dedup keeps of a group of near-duplicates: the published method's
#: choice (the unit a removed one overlaps most with) or the earliest unit.
KEEP = ("most-overlapped", "first")


# -------------------------------------------------------------------- dedup
def _dialogue_texts(dialogues: Sequence[Sequence[str]], name: str) -> list[str]:
    if isinstance(dialogues, (str, bytes)) or not isinstance(dialogues, Sequence):
        raise TypeError(f"{name} must be a sequence of utterance lists, got {type_name(dialogues)}")
    return [" ".join(utts) for utts in checked_dialogues(dialogues, name)]


def dedup_dialogues(
    dialogues: Sequence[Sequence[str]],
    *,
    threshold: float = 0.8,
    keep: str = "most-overlapped",
    tokenizer: Tokenizer = DEFAULT_TOKENIZER,
    ngram: int = 1,
    n_threads: int | None = None,
    progress: ProgressArg = False,
) -> DedupResult:
    """Step 2: iterative near-duplicate removal of whole dialogues.

    A dialogue's token set is the set of tokens of all its utterances; see
    :func:`overlap.dedup` for the method.

    Parameters
    ----------
    dialogues : sequence of lists of str
    threshold : float in [0, 1], default 0.8
        A dialogue is removed when its ratio to a present one is strictly greater.
    keep : {"most-overlapped", "first"}, default "most-overlapped"
        The published method (:func:`overlap.dedup`), or :func:`dedup_first`.
    tokenizer, ngram, n_threads, progress
        As in :func:`scan`.

    Returns
    -------
    DedupResult
    """
    texts = _dialogue_texts(dialogues, "dialogues")
    threshold = check_unit_interval(threshold, "threshold")
    if keep not in KEEP:
        raise ValueError(f"keep must be one of {', '.join(KEEP)}, got {keep!r}")
    nt = effective_n_threads(n_threads)
    units = TokenSets.from_texts(texts, tokenizer, ngram, n_threads=nt)
    if keep == "first":
        return dedup_first(units, threshold=threshold, n_threads=nt, progress=progress)
    return dedup(units, threshold=threshold, n_threads=nt, progress=progress)


# ------------------------------------------------------------------ resplit
@dataclass(frozen=True)
class Resplit:
    """Indices of the units of each new split.

    Attributes
    ----------
    train, valid, test : ndarray of int64
        Unit indices, ascending.
    score : ndarray of float64
        Every unit's max overlap against all the other units.
    """

    train: np.ndarray
    valid: np.ndarray
    test: np.ndarray
    score: np.ndarray

    def as_dict(self) -> dict[str, np.ndarray]:
        return {"train": self.train, "valid": self.valid, "test": self.test}


def resplit(
    units: Sequence[Sequence[str]] | TokenSets | Sequence[TokenSets],
    *,
    test_size: int,
    valid_size: int = 0,
    seed: int = 0,
    tokenizer: Tokenizer = DEFAULT_TOKENIZER,
    ngram: int = 1,
    measure: str = "dice",
    n_threads: int | None = None,
    progress: ProgressArg = False,
) -> Resplit:
    """Step 3: the units least overlapping the rest become test and validation.

    Every unit's max overlap against all other units is computed; the
    ``test_size + valid_size`` lowest (ties broken by a seeded shuffle) are
    dealt at random (seeded) into test and validation; the rest is train.

    Parameters
    ----------
    units : sequence of dialogues (lists of str), or TokenSets (one per field)
    test_size, valid_size : int >= 0
        Their sum must leave at least one unit for train.
    seed : int, default 0
        Same inputs and seed give the same split.
    tokenizer, ngram, n_threads, progress
        As in :func:`scan` (ignored for TokenSets, except n_threads/progress).
    measure : {"dice", "jaccard", "cosine", "overlap", "containment"}, default "dice"
        The score of the max overlap (docs/measures.md); with ``"containment"``
        a unit's score is how much of it lies inside its best other unit.

    Returns
    -------
    Resplit
    """
    test_size = check_int(test_size, "test_size", minimum=0)
    valid_size = check_int(valid_size, "valid_size", minimum=0)
    seed = check_int(seed, "seed", minimum=0)
    check_measure(measure)
    nt = effective_n_threads(n_threads)
    if isinstance(units, TokenSets) or (
        isinstance(units, Sequence) and len(units) and isinstance(units[0], TokenSets)
    ):
        fields = tokenize_fields(units, "units")
    else:
        texts = _dialogue_texts(units, "units")  # type: ignore[arg-type]
        fields = (TokenSets.from_texts(texts, tokenizer, ngram, n_threads=nt),)
    n = len(fields[0])
    if test_size + valid_size >= n:
        raise ValueError(
            f"test_size + valid_size must leave at least one unit for train: "
            f"{test_size} + {valid_size} >= {n} units"
        )
    if n > 1 and test_size + valid_size > 0:
        score = max_overlap(fields, None, measure=measure, n_threads=nt,
                            progress=progress).score
    else:
        score = np.zeros(n)
    rng = np.random.default_rng(seed)
    tiebreak = rng.permutation(n)
    order = np.lexsort((tiebreak, score))
    chosen = order[: test_size + valid_size]
    dealt = chosen[rng.permutation(chosen.shape[0])]
    test = np.sort(dealt[:test_size]).astype(np.int64)
    valid = np.sort(dealt[test_size:]).astype(np.int64)
    train_mask = np.ones(n, dtype=bool)
    train_mask[chosen] = False
    return Resplit(np.flatnonzero(train_mask).astype(np.int64), valid, test, score)


# ------------------------------------------------------------------ flatten
def flatten(
    splits: Mapping[str, Sequence[Sequence[str]]], turns: int = 1
) -> dict[str, Samples]:
    """Step 4: cut every split's dialogues into (context, response) samples.

    Parameters
    ----------
    splits : mapping of split name to dialogues
    turns : int, default 1
        Context length in utterances (see :func:`overlap.pipeline.dialogue.make_samples`).

    Returns
    -------
    dict of str to Samples
    """
    if not isinstance(splits, Mapping):
        raise TypeError(
            f"splits must be a mapping of split name to dialogues, got {type_name(splits)}"
        )
    turns = check_int(turns, "turns", minimum=1)
    return {name: make_samples(d, turns) for name, d in splits.items()}


# ------------------------------------------------------- duplicate removal
def remove_duplicates(
    samples: Mapping[str, Samples],
    *,
    train: str = "train",
    tokenizer: Tokenizer = DEFAULT_TOKENIZER,
    ngram: int = 1,
    n_threads: int | None = None,
) -> tuple[dict[str, Samples], dict[str, dict[str, int]]]:
    """Step 5: drop exact duplicate (context, response) pairs.

    Within every split only the first of identical pairs stays; then every
    other split loses the pairs that also occur in ``train``.  Two pairs are
    identical when both fields have the same token set (the score-1 matches of
    :func:`scan`).

    Parameters
    ----------
    samples : mapping of split name to Samples
    train : str, default "train"
        The key of the training split.
    tokenizer, ngram, n_threads
        As in :func:`scan`.

    Returns
    -------
    cleaned : dict of str to Samples
    counts : dict of str to dict
        Per split: ``before``, ``duplicates_within``, ``in_train`` and ``after``.
    """
    if not isinstance(samples, Mapping):
        raise TypeError(
            f"samples must be a mapping of split name to Samples, got {type_name(samples)}"
        )
    for k, v in samples.items():
        if not isinstance(v, Samples):
            raise TypeError(f"samples[{k!r}] must be Samples, got {type_name(v)}")
    if train not in samples:
        raise ValueError(
            f"train={train!r} is not a key of samples ({', '.join(map(str, samples))})"
        )
    nt = effective_n_threads(n_threads)

    def fields_of(s: Samples) -> tuple:
        return tokenize_fields(s, tokenizer=tokenizer, ngram=ngram, n_threads=nt)

    cleaned: dict[str, Samples] = {}
    counts: dict[str, dict[str, int]] = {}
    tokens: dict[str, tuple] = {}
    for name, s in samples.items():
        f = fields_of(s)
        first = exact_duplicates(f, n_threads=nt) == np.arange(len(s))
        cleaned[name] = s.take(first)
        tokens[name] = tuple(ts.take(first) for ts in f)
        counts[name] = {"before": len(s), "duplicates_within": int((~first).sum())}
    n_train = len(cleaned[train])
    for name in samples:
        if name == train:
            counts[name]["in_train"] = 0
        else:
            both = tuple(
                TokenSets.from_csr(
                    np.concatenate([a.indptr, b.indptr[1:] + a.nnz]),
                    np.concatenate([a.hashes, b.hashes]),
                )
                for a, b in zip(tokens[train], tokens[name])
            )
            label = exact_duplicates(both, n_threads=nt)[n_train:]
            fresh = label >= n_train
            cleaned[name] = cleaned[name].take(fresh)
            counts[name]["in_train"] = int((~fresh).sum())
        counts[name]["after"] = len(cleaned[name])
    return cleaned, counts


def dedup_first(
    units: TokenSets | Sequence[TokenSets],
    *,
    threshold: float = 0.8,
    measure: str = "dice",
    n_threads: int | None = None,
    progress: ProgressArg = False,
    _log: Callable[[str], Any] | None = None,
) -> DedupResult:
    """Near-duplicate removal that keeps the earliest unit of every group.

    Units are visited in index order; unit ``j`` is removed when a kept unit
    ``i < j`` has ``R(i, j) > threshold`` (``kept_for[j]`` is the lowest such
    ``i``).  One pass; no two kept units have ``R > threshold``.  The
    published method (:func:`overlap.dedup`) instead keeps the unit a removed
    one overlaps most with.

    Parameters
    ----------
    units : TokenSets or sequence of TokenSets (one per field)
    threshold : float in [0, 1], default 0.8
    measure : {"dice", "jaccard", "cosine", "overlap"}, default "dice"
        As in :func:`overlap.dedup` (``"containment"`` is refused).
    n_threads : int or None
    progress : bool or callable f(done, total)
        Progress of the threshold self-join.

    Returns
    -------
    DedupResult
        ``passes`` is 1; ``cluster`` and ``n_edges`` as in :func:`overlap.dedup`.
    """
    threshold = check_unit_interval(threshold, "threshold")
    check_measure(measure, self_join=True, call="dedup")
    check_progress(progress)
    nt = effective_n_threads(n_threads)
    fields = tokenize_fields(units, "units")
    return dedup_first_fields(fields, threshold, nt, progress, _log, measure)


def dedup_first_fields(fields: tuple | Handover, threshold: float, nt: int,
                       progress: ProgressArg, log: Callable[[str], Any] | None = None,
                       measure: str = "dice") -> DedupResult:
    """:func:`dedup_first` of fields already tokenized (or a :class:`~overlap._fields.Handover`
    of checked ones), with checked arguments (the pipeline's steps call it;
    ``log`` gets the step lines)."""
    n = fields.n_rows if isinstance(fields, Handover) else len(fields[0])
    if n < 2:
        return DedupResult(np.ones(n, dtype=bool), np.full(n, -1, dtype=np.int64), 1,
                           np.arange(n, dtype=np.int64), 0)
    if not isinstance(fields, Handover):
        fields = as_fields(fields, "units")
    left, right, _ = self_join_edges(fields, threshold, nt, progress, log, measure)
    if log is not None:
        log(f"dedup: keeping the first of {left.shape[0]:,} pairs above the threshold")
    order = np.lexsort((left, right))
    left, right = left[order], right[order]
    keep = np.ones(n, dtype=bool)
    kept_for = np.full(n, -1, dtype=np.int64)
    for a, b in zip(left.tolist(), right.tolist()):  # b ascending, a < b ascending within b
        if keep[b] and keep[a]:
            keep[b] = False
            kept_for[b] = a
    # scipy.sparse costs 0.2 s to import: only the dedup that needs it pays
    from scipy import sparse
    from scipy.sparse import csgraph

    graph = sparse.coo_matrix((np.ones(left.shape[0]), (left, right)), shape=(n, n))
    _, comp = csgraph.connected_components(graph, directed=False)
    smallest = np.full(comp.max() + 1, n, dtype=np.int64)
    np.minimum.at(smallest, comp, np.arange(n, dtype=np.int64))
    return DedupResult(keep, kept_for, 1, smallest[comp], int(left.shape[0]))


def exact_duplicate_masks(fields: Mapping[str, tuple], train: str, nt: int
                          ) -> tuple[dict[str, np.ndarray], dict[str, SampleCounts]]:
    """Rows to keep per split: first of identical rows within, and none also in train."""
    keep: dict[str, np.ndarray] = {}
    within: dict[str, int] = {}
    for name, f in fields.items():
        n = len(f[0])
        first = exact_duplicates(f, n_threads=nt) == np.arange(n) if n else np.ones(0, bool)
        keep[name] = first
        within[name] = int((~first).sum())
    tr = tuple(ts.take(keep[train]) for ts in fields[train])
    n_train = len(tr[0])
    counts: dict[str, SampleCounts] = {}
    for name, f in fields.items():
        in_train = 0
        if name != train and len(f[0]):
            mine = np.flatnonzero(keep[name])
            both = tuple(
                TokenSets.from_csr(np.concatenate([a.indptr, b.indptr[1:] + a.nnz]),
                                   np.concatenate([a.hashes, b.hashes]))
                for a, b in zip(tr, (ts.take(mine) for ts in f))
            )
            label = exact_duplicates(both, n_threads=nt)[n_train:]
            fresh = label >= n_train
            keep[name][mine[~fresh]] = False
            in_train = int((~fresh).sum())
        counts[name] = SampleCounts(len(f[0]), within[name], in_train, int(keep[name].sum()))
    return keep, counts
