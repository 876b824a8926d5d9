"""The published dialogue-cleaning pipeline, one function per step (SPEC §6).

1. :func:`scan` — every eval sample's max overlap against train (context and
   response fields, the ratio being the minimum over fields), summarised by
   :class:`OverlapSummary`;
2. :func:`dedup_dialogues` — iterative near-duplicate removal of dialogues;
3. :func:`resplit` — the units least overlapping the rest form test and
   validation, the rest train (seeded);
4. :func:`flatten` — (context, response) samples with ``turns`` context turns;
5. :func:`remove_duplicates` — exact duplicate pairs within each split, and
   eval pairs that also occur in train;
6. :func:`write_clean` — the new split and a report.

:func:`clean` runs all of them.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Union

import numpy as np

from .._progress import ProgressArg
from .._threads import effective_n_threads
from .._validation import check_int, check_unit_interval, type_name
from ..dedup import DedupResult, dedup, exact_duplicates
from .dialogue import SPLITS, Samples, make_samples, read_splits, write_dialogues
from ..search import max_overlap
from ..tokensets import Tokenizer, TokenSets

__all__ = [
    "THRESHOLDS",
    "OverlapSummary",
    "ScanResult",
    "Resplit",
    "CleanResult",
    "summarize",
    "tokenize_fields",
    "scan",
    "dedup_dialogues",
    "resplit",
    "flatten",
    "remove_duplicates",
    "clean",
    "write_clean",
    "SPLIT_FILE_NAMES",
]

#: Cut-offs of the distribution summary (a share is of scores strictly above each).
THRESHOLDS = (0.25, 0.5, 0.75, 0.8)

#: Files :func:`write_clean` writes the dialogues of each split to (DailyDialog names).
SPLIT_FILE_NAMES = {
    "train": "dialogues_train.txt",
    "valid": "dialogues_validation.txt",
    "test": "dialogues_test.txt",
}

TextFields = Union[Samples, Sequence[Sequence[str]], TokenSets, Sequence[TokenSets]]
Log = Callable[[str], Any]


# ------------------------------------------------------------------ summary
@dataclass(frozen=True)
class OverlapSummary:
    """Distribution of max-overlap scores, as the overlap study reports it.

    Attributes
    ----------
    n : int
        Number of scores.
    identical : float
        Share (0..1) of scores equal to 1 (token sets identical in every field).
    above : dict of float to float
        Share of scores strictly above each of :data:`THRESHOLDS`.
    mean : float
        Mean score (0 when ``n`` is 0).
    """

    n: int
    identical: float
    above: dict
    mean: float

    def as_dict(self) -> dict:
        """Plain JSON-ready dict (shares as fractions, not percentages)."""
        return {
            "n": self.n,
            "identical": self.identical,
            **{f"above_{t:g}": s for t, s in self.above.items()},
            "mean": self.mean,
        }

    def format(self, label: str = "") -> str:
        """One human-readable line: shares as percentages with two decimals."""
        parts = [f"identical {100 * self.identical:.2f}%"]
        parts += [f">{t:g} {100 * s:.2f}%" for t, s in self.above.items()]
        parts.append(f"mean {self.mean:.4f}")
        head = f"{label}: " if label else ""
        return f"{head}{self.n:,} samples | " + " | ".join(parts)


def summarize(scores: Any, thresholds: Sequence[float] = THRESHOLDS) -> OverlapSummary:
    """Summarise max-overlap scores (share identical, shares above cut-offs, mean).

    Parameters
    ----------
    scores : array-like of float in [0, 1]
    thresholds : sequence of float, default :data:`THRESHOLDS`

    Returns
    -------
    OverlapSummary
    """
    s = np.asarray(scores, dtype=np.float64)
    if s.ndim != 1:
        raise ValueError(f"scores must be one-dimensional, got shape {s.shape}")
    if s.size and (np.isnan(s).any() or s.min() < 0 or s.max() > 1):
        raise ValueError("scores must be numbers in [0, 1] (no NaN)")
    ts = [check_unit_interval(t, "thresholds") for t in thresholds]
    n = int(s.shape[0])
    if n == 0:
        return OverlapSummary(0, 0.0, {t: 0.0 for t in ts}, 0.0)
    return OverlapSummary(
        n,
        float(np.mean(s == 1.0)),
        {t: float(np.mean(s > t)) for t in ts},
        float(s.mean()),
    )


# ---------------------------------------------------------------- tokenizing
def tokenize_fields(
    data: TextFields,
    name: str = "data",
    *,
    tokenizer: Tokenizer = "wordpunct",
    ngram: int = 1,
    n_threads: int | None = None,
) -> tuple:
    """Token sets of every field of ``data``.

    Parameters
    ----------
    data : Samples, sequence of text columns, TokenSets or sequence of TokenSets
        :class:`~overlap.dialogue.Samples` give two fields (context, response).
        A sequence of str is one field; a sequence of equally long sequences of
        str is one field per column.  TokenSets pass through unchanged.
    name : str
        Argument name for error messages.
    tokenizer, ngram, n_threads
        As in :meth:`TokenSets.from_texts`.

    Returns
    -------
    tuple of TokenSets
    """
    if isinstance(data, TokenSets):
        return (data,)
    if isinstance(data, Samples):
        columns: list = [data.context, data.response]
    elif isinstance(data, (str, bytes)) or not isinstance(data, Sequence):
        raise TypeError(
            f"{name} must be Samples, a sequence of text columns or TokenSets, "
            f"got {type_name(data)}"
        )
    elif len(data) and all(isinstance(c, TokenSets) for c in data):
        return tuple(data)
    elif len(data) == 0 or isinstance(data[0], str):
        columns = [data]
    else:
        columns = list(data)
        for f, col in enumerate(columns):
            if isinstance(col, (str, bytes)) or not isinstance(col, Sequence):
                raise TypeError(f"{name}[{f}] must be a sequence of str, got {type_name(col)}")
            if len(col) != len(columns[0]):
                raise ValueError(
                    f"{name}: every field must have the same length; field 0 has "
                    f"{len(columns[0])}, field {f} has {len(col)}"
                )
    return tuple(
        TokenSets.from_texts(col, tokenizer, ngram, n_threads=n_threads) for col in columns
    )


# --------------------------------------------------------------------- scan
@dataclass(frozen=True)
class ScanResult:
    """Max overlap of every eval sample against train.

    Attributes
    ----------
    score : ndarray of float64, shape (n,)
        Best ratio against train (minimum over fields).
    index : ndarray of int64, shape (n,)
        Index of the matched train sample (lowest on ties), -1 when nothing overlaps.
    summary : OverlapSummary
    """

    score: np.ndarray
    index: np.ndarray
    summary: OverlapSummary

    def __len__(self) -> int:
        return int(self.score.shape[0])


def scan(
    queries: TextFields,
    train: TextFields,
    *,
    tokenizer: Tokenizer = "wordpunct",
    ngram: int = 1,
    n_threads: int | None = None,
    progress: ProgressArg = False,
) -> ScanResult:
    """Step 1: every eval sample's max overlap against the training samples.

    Parameters
    ----------
    queries : Samples, text columns or TokenSets
        The eval samples (e.g. test).  Samples use two fields, context and
        response; the ratio of two samples is the minimum over fields.
    train : same fields as ``queries``
    tokenizer, ngram : as in :meth:`TokenSets.from_texts`
    n_threads : int or None
    progress : bool or callable f(done, total)

    Returns
    -------
    ScanResult
    """
    nt = effective_n_threads(n_threads)
    q = tokenize_fields(queries, "queries", tokenizer=tokenizer, ngram=ngram, n_threads=nt)
    r = tokenize_fields(train, "train", tokenizer=tokenizer, ngram=ngram, n_threads=nt)
    if len(q) != len(r):
        raise ValueError(
            f"queries has {len(q)} field(s) but train has {len(r)}; they must have the same fields"
        )
    if len(r[0]) == 0:
        n = len(q[0])
        score, index = np.zeros(n), np.full(n, -1, dtype=np.int64)
    else:
        score, index = max_overlap(q, r, n_threads=nt, progress=progress)
    return ScanResult(score, index, summarize(score))


# -------------------------------------------------------------------- dedup
def _dialogue_texts(dialogues: Sequence[Sequence[str]], name: str) -> list[str]:
    if isinstance(dialogues, (str, bytes)) or not isinstance(dialogues, Sequence):
        raise TypeError(f"{name} must be a sequence of utterance lists, got {type_name(dialogues)}")
    texts = []
    for d, utts in enumerate(dialogues):
        if isinstance(utts, str) or not isinstance(utts, Sequence):
            raise TypeError(f"{name}[{d}] must be a list of str, got {type_name(utts)}")
        for u, x in enumerate(utts):
            if not isinstance(x, str):
                raise TypeError(f"{name}[{d}][{u}] must be str, got {type_name(x)}")
        texts.append(" ".join(utts))
    return texts


def dedup_dialogues(
    dialogues: Sequence[Sequence[str]],
    *,
    threshold: float = 0.8,
    tokenizer: Tokenizer = "wordpunct",
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
    tokenizer, ngram, n_threads, progress
        As in :func:`scan`.

    Returns
    -------
    DedupResult
    """
    texts = _dialogue_texts(dialogues, "dialogues")
    threshold = check_unit_interval(threshold, "threshold")
    nt = effective_n_threads(n_threads)
    units = TokenSets.from_texts(texts, tokenizer, ngram, n_threads=nt)
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
    tokenizer: Tokenizer = "wordpunct",
    ngram: int = 1,
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

    Returns
    -------
    Resplit
    """
    test_size = check_int(test_size, "test_size", minimum=0)
    valid_size = check_int(valid_size, "valid_size", minimum=0)
    seed = check_int(seed, "seed", minimum=0)
    nt = effective_n_threads(n_threads)
    if isinstance(units, TokenSets) or (
        isinstance(units, Sequence) and len(units) and isinstance(units[0], TokenSets)
    ):
        fields = tokenize_fields(units, "units")
    else:
        texts = _dialogue_texts(units, "units")
        fields = (TokenSets.from_texts(texts, tokenizer, ngram, n_threads=nt),)
    n = len(fields[0])
    if test_size + valid_size >= n:
        raise ValueError(
            f"test_size + valid_size must leave at least one unit for train: "
            f"{test_size} + {valid_size} >= {n} units"
        )
    if n > 1 and test_size + valid_size > 0:
        score = max_overlap(fields, None, n_threads=nt, progress=progress).score
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
        Context length in utterances (see :func:`overlap.dialogue.make_samples`).

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
    tokenizer: Tokenizer = "wordpunct",
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


# -------------------------------------------------------------- whole thing
@dataclass
class CleanResult:
    """Everything :func:`clean` produced.

    Attributes
    ----------
    dialogues : dict of str to list of dialogues
        The new split (after dedup and re-split).
    samples : dict of str to Samples
        The cleaned (context, response) samples of every split.
    before, after : dict of str to ScanResult
        Each eval split scanned against train, on the original and the new split.
    dedup : DedupResult
        Over the pooled dialogues (original train, then valid, then test).
    report : dict
        Counts per step, both distributions, settings and timings (JSON-ready).
    files : list of str
        Paths written by :func:`write_clean` (empty until then).
    """

    dialogues: dict
    samples: dict
    before: dict
    after: dict
    dedup: DedupResult
    report: dict
    files: list = field(default_factory=list)


def _coerce_splits(source: Any) -> dict[str, list]:
    if isinstance(source, (str, os.PathLike)):
        return read_splits(source)
    if isinstance(source, Mapping):
        bad = [k for k in source if k not in SPLITS]
        if bad:
            raise ValueError(f"source: unknown split name(s) {bad}; expected {list(SPLITS)}")
        if "train" not in source:
            raise ValueError("source must hold a 'train' split")
        return {k: list(source[k]) for k in SPLITS if k in source}
    raise TypeError(
        "source must be a folder path or a mapping of split name to dialogues, "
        f"got {type_name(source)}"
    )


def clean(
    source: str | os.PathLike | Mapping[str, Sequence[Sequence[str]]],
    out: str | os.PathLike | None = None,
    *,
    threshold: float = 0.8,
    test_size: int | None = None,
    valid_size: int | None = None,
    turns: int = 1,
    seed: int = 0,
    tokenizer: Tokenizer = "wordpunct",
    ngram: int = 1,
    n_threads: int | None = None,
    progress: ProgressArg = False,
    log: Log | None = None,
) -> CleanResult:
    """The whole published pipeline: scan, dedup, re-split, flatten, remove, write.

    Parameters
    ----------
    source : folder path or mapping
        A DailyDialog-style folder (see :func:`overlap.dialogue.find_split_files`)
        or a mapping ``{"train": dialogues, "valid": ..., "test": ...}``.
    out : folder path, optional
        When given, :func:`write_clean` writes the result there.
    threshold : float in [0, 1], default 0.8
        Dedup threshold (strictly greater removes).
    test_size, valid_size : int, optional
        Dialogues in the new test / validation split; default the sizes of the
        original ones (capped so that train keeps at least half of the units).
    turns : int, default 1
        Context turns of the samples.
    seed : int, default 0
    tokenizer, ngram, n_threads, progress
        As in :func:`scan`.
    log : callable, optional
        Receives one line of text as each step starts.

    Returns
    -------
    CleanResult
    """
    threshold = check_unit_interval(threshold, "threshold")
    turns = check_int(turns, "turns", minimum=1)
    seed = check_int(seed, "seed", minimum=0)
    if test_size is not None:
        test_size = check_int(test_size, "test_size", minimum=0)
    if valid_size is not None:
        valid_size = check_int(valid_size, "valid_size", minimum=0)
    if log is not None and not callable(log):
        raise TypeError(f"log must be callable or None, got {type_name(log)}")
    nt = effective_n_threads(n_threads)
    say = log or (lambda _msg: None)
    opts = {"tokenizer": tokenizer, "ngram": ngram, "n_threads": nt}
    timing: dict[str, float] = {}

    def timed(step: str, t0: float) -> None:
        timing[step] = round(time.perf_counter() - t0, 4)

    t0 = time.perf_counter()
    original = _coerce_splits(source)
    evals = [k for k in ("valid", "test") if k in original]
    orig_samples = flatten(original, turns)
    timed("read", t0)

    t0 = time.perf_counter()
    say(f"scan: {', '.join(f'{k} ({len(orig_samples[k]):,} samples)' for k in evals)} "
        f"against train ({len(orig_samples['train']):,} samples)")
    before = {k: scan(orig_samples[k], orig_samples["train"], progress=progress, **opts)
              for k in evals}
    timed("scan_before", t0)

    t0 = time.perf_counter()
    pooled = [d for k in SPLITS if k in original for d in original[k]]
    origin = np.concatenate([np.full(len(original[k]), i, dtype=np.int8)
                             for i, k in enumerate(SPLITS) if k in original])
    say(f"dedup: {len(pooled):,} dialogues at threshold {threshold:g}")
    dd = dedup_dialogues(pooled, threshold=threshold, progress=progress, **opts)
    kept_idx = np.flatnonzero(dd.keep)
    kept = [pooled[i] for i in kept_idx]
    timed("dedup", t0)

    n_kept = len(kept)
    if test_size is None:
        test_size = min(len(original.get("test", [])), n_kept // 4)
    if valid_size is None:
        valid_size = min(len(original.get("valid", [])), n_kept // 4)
    t0 = time.perf_counter()
    say(f"re-split: {n_kept:,} dialogues -> test {test_size:,}, valid {valid_size:,}, "
        f"train the rest (seed {seed})")
    rs = resplit(kept, test_size=test_size, valid_size=valid_size, seed=seed,
                 progress=progress, **opts)
    new = {k: [kept[i] for i in idx] for k, idx in rs.as_dict().items()}
    timed("resplit", t0)

    t0 = time.perf_counter()
    say(f"flatten: samples with {turns} context turn(s)")
    flat = flatten(new, turns)
    timed("flatten", t0)

    t0 = time.perf_counter()
    say("remove: exact duplicate pairs within splits and eval pairs found in train")
    cleaned, dup_counts = remove_duplicates(flat, **opts)
    timed("remove", t0)

    t0 = time.perf_counter()
    say("scan: new eval splits against new train")
    after = {k: scan(cleaned[k], cleaned["train"], progress=progress, **opts)
             for k in ("valid", "test") if len(new[k])}
    timed("scan_after", t0)

    removed_from = {k: int(((~dd.keep) & (origin == i)).sum())
                    for i, k in enumerate(SPLITS) if k in original}
    report = {
        "settings": {"threshold": threshold, "test_size": test_size, "valid_size": valid_size,
                     "turns": turns, "seed": seed, "ngram": ngram,
                     "tokenizer": tokenizer if isinstance(tokenizer, str) else "callable",
                     "n_threads": nt},
        "input": {k: {"dialogues": len(original[k]), "samples": len(orig_samples[k])}
                  for k in original},
        "before": {k: r.summary.as_dict() for k, r in before.items()},
        "dedup": {"dialogues": len(pooled), "removed": dd.n_removed, "kept": n_kept,
                  "passes": dd.passes, "pairs_above_threshold": dd.n_edges,
                  "removed_by_original_split": removed_from},
        "resplit": {k: int(len(v)) for k, v in new.items()},
        "samples": dup_counts,
        "after": {k: r.summary.as_dict() for k, r in after.items()},
        "timing_s": timing,
    }
    result = CleanResult(new, cleaned, before, after, dd, report)
    if out is not None:
        write_clean(out, result)
    return result


def write_clean(out: str | os.PathLike, result: CleanResult) -> list[str]:
    """Step 6: write the new split and the report into folder ``out``.

    Writes ``dialogues_{train,validation,test}.txt`` (DailyDialog format, readable
    by :func:`overlap.dialogue.read_splits`), ``{train,valid,test}.jsonl`` (the
    cleaned samples: context, response, dialogue, turn) and ``report.json``.

    Returns
    -------
    list of str
        The paths written (also stored in ``result.files``).
    """
    if not isinstance(out, (str, os.PathLike)):
        raise TypeError(f"out must be a str or path-like, got {type_name(out)}")
    if not isinstance(result, CleanResult):
        raise TypeError(f"result must be a CleanResult, got {type_name(result)}")
    d = os.fspath(out)
    os.makedirs(d, exist_ok=True)
    files = []
    for k, dialogues in result.dialogues.items():
        p = os.path.join(d, SPLIT_FILE_NAMES[k])
        write_dialogues(p, dialogues)
        files.append(p)
    for k, s in result.samples.items():
        p = os.path.join(d, f"{k}.jsonl")
        with open(p, "w", encoding="utf-8", newline="\n") as fh:
            for c, r, di, t in zip(s.context, s.response, s.dialogue.tolist(), s.turn.tolist()):
                fh.write(json.dumps({"context": c, "response": r, "dialogue": di, "turn": t},
                                    ensure_ascii=False) + "\n")
        files.append(p)
    p = os.path.join(d, "report.json")
    with open(p, "w", encoding="utf-8") as fh:
        json.dump(result.report, fh, indent=2)
        fh.write("\n")
    files.append(p)
    result.files[:] = files
    return files
