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

from scipy import sparse
from scipy.sparse import csgraph

from .._progress import ProgressArg
from .._threads import effective_n_threads
from .._validation import check_int, check_unit_interval, type_name
from ..dedup import DedupResult, dedup, exact_duplicates
from ..search import max_overlap, overlap_join, ratio
from ..tokensets import Tokenizer, TokenSets
from .dialogue import (EOU, SPLITS, Samples, find_split_files, make_samples, read_dialogues,
                       write_dialogues)
from .output import Outputs
from .report import (AT, CleanReport, CleanSettings, DedupCounts, GroupedSummary,
                     OverlapSummary, SampleCounts, parse_thresholds, summarize, summarize_by)
from .tables import infer_format, read_fields, write_table

__all__ = [
    "AT",
    "THRESHOLDS",
    "KEEP",
    "OverlapSummary",
    "GroupedSummary",
    "CleanReport",
    "ScanResult",
    "Resplit",
    "CleanResult",
    "summarize",
    "tokenize_fields",
    "scan",
    "dedup_dialogues",
    "dedup_first",
    "resplit",
    "flatten",
    "remove_duplicates",
    "clean",
    "write_clean",
    "plan_clean_outputs",
    "clean_layout",
    "SPLIT_FILE_NAMES",
]

#: Former name of :data:`AT` (the summary thresholds, compared with ``>=``).
THRESHOLDS = AT

#: Files :func:`write_clean` writes the dialogues of each split to (DailyDialog names).
SPLIT_FILE_NAMES = {
    "train": "dialogues_train.txt",
    "valid": "dialogues_validation.txt",
    "test": "dialogues_test.txt",
}

TextFields = Union[Samples, Sequence[Sequence[str]], TokenSets, Sequence[TokenSets]]
Log = Callable[[str], Any]


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
_TABLE_LIKE = (str, os.PathLike, Mapping)


def _is_table_source(x: Any) -> bool:
    if isinstance(x, _TABLE_LIKE):
        return True
    mod = type(x).__module__.split(".")[0]
    return mod in ("pandas", "datasets")


def _read_source(source: Any, name: str, fields: Any, fmt: str | None,
                 turns: int) -> tuple[list, dict | None, list[str] | None]:
    """(text columns, whole table or None, field names or None) of one scan input."""
    if not _is_table_source(source):
        return source, None, None
    names = _default_fields(source, fields)
    cols, table = read_fields(source, names, fmt, turns=turns)
    return cols, table, list(names)


def _default_fields(source: Any, fields: Any) -> Any:
    if fields is not None:
        return fields
    return ("context", "response")


@dataclass(frozen=True)
class ScanResult:
    """Max overlap of every eval sample against train (or against the rest of its file).

    Attributes
    ----------
    score : ndarray of float64, shape (n,)
        Best ratio (minimum over fields).
    index : ndarray of int64, shape (n,)
        Index of the matched sample (lowest on ties), -1 when nothing overlaps.
    summary : OverlapSummary
        Counts of scores ``>=`` each threshold.
    groups : GroupedSummary or None
        The summary per value of the ``by`` column, and overall.
    fields : tuple of str
        Names of the compared fields (``field0``... for bare text columns).
    texts, train_texts : tuple of lists of str
        The compared texts of the eval and train samples (``train_texts`` is
        ``texts`` for an all-vs-rest scan).
    table, train_table : dict of str to list, or None
        Every column of the inputs that were tables (ids, labels, language...).
    within : bool
        True for an all-vs-rest scan of one collection (no train).
    """

    score: np.ndarray
    index: np.ndarray
    summary: OverlapSummary
    groups: GroupedSummary | None = None
    fields: tuple = ()
    texts: tuple = ()
    train_texts: tuple = ()
    table: dict | None = None
    train_table: dict | None = None
    within: bool = False

    def __len__(self) -> int:
        return int(self.score.shape[0])

    def to_table(self) -> dict[str, list]:
        """One row per eval sample: its columns, score, match index and both texts.

        Columns: ``eval_index``; every other column of the eval table (ids,
        labels, language...); ``score``; ``train_index`` (``match_index`` for an
        all-vs-rest scan), -1 when nothing overlaps; ``eval_F`` and ``train_F``
        (``match_F``) for every field, the match's text empty when there is none;
        and ``train_C`` for every other column of the train table.
        """
        other = "match" if self.within else "train"
        idx = self.index.tolist()
        out: dict[str, list] = {"eval_index": list(range(len(self)))}
        compared = set(self.fields)
        own = {"eval_index", "score", f"{other}_index"} | \
            {f"eval_{f}" for f in self.fields} | {f"{other}_{f}" for f in self.fields}
        if self.table is not None:
            for c, v in self.table.items():
                if c not in compared:
                    out[c if c not in own else f"eval_{c}"] = list(v)
        out["score"] = self.score.tolist()
        out[f"{other}_index"] = idx
        for f, ec, tc in zip(self.fields, self.texts, self.train_texts):
            out[f"eval_{f}"] = list(ec)
            out[f"{other}_{f}"] = [tc[j] if j >= 0 else "" for j in idx]
        if self.train_table is not None and not self.within:
            for c, v in self.train_table.items():
                name = f"train_{c}"
                if c not in compared and name not in out:
                    out[name] = [v[j] if j >= 0 else None for j in idx]
        return out


def scan(
    queries: Any,
    train: Any = None,
    *,
    fields: Sequence[str] | str | None = None,
    at: Any = AT,
    by: str | Sequence | None = None,
    turns: int = 1,
    fmt: str | None = None,
    tokenizer: Tokenizer = "wordpunct",
    ngram: int = 1,
    n_threads: int | None = None,
    progress: ProgressArg = False,
    log: Log | None = None,
) -> ScanResult:
    """Step 1: every eval sample's max overlap against the training samples.

    Parameters
    ----------
    queries : table or text fields
        The eval samples (e.g. test).  A *table* is a file path (CSV, TSV,
        JSONL, Parquet, DailyDialog text), a dict of columns, a pandas
        DataFrame or a ``datasets.Dataset``; its ``fields`` are compared and
        its other columns travel to :meth:`ScanResult.to_table`.  *Text fields*
        are :class:`~overlap.pipeline.dialogue.Samples` (context and response),
        a list of str (one field), a list of equally long lists of str (one
        per field) or TokenSets.  The ratio of two samples is the minimum over
        fields.
    train : same kind and fields as ``queries``, or None
        None scans ``queries`` against itself, all against the rest (each
        sample's best match among the *other* samples: duplicates inside one
        split).
    fields : sequence of str or comma-separated str, optional
        Compared columns of table inputs; default ``("context", "response")``.
    at : sequence of float in [0, 1] or comma-separated str, default (0.5, 0.8, 1.0)
        Thresholds of the summary (counts of scores ``>=`` each).
    by : str or sequence, optional
        A column of the eval table (or one value per eval sample) to summarise
        per group, plus overall.
    turns : int, default 1
        Context turns when a DailyDialog file is cut into samples.
    fmt : str, optional
        Format of file inputs (default: from the extension).
    tokenizer, ngram : as in :meth:`TokenSets.from_texts`
    n_threads : int or None
    progress : bool or callable f(done, total)
    log : callable, optional
        Receives one line of text as each step (read, tokenize, search) starts.

    Returns
    -------
    ScanResult
    """
    ts = parse_thresholds(at)
    turns = check_int(turns, "turns", minimum=1)
    if log is not None and not callable(log):
        raise TypeError(f"log must be callable or None, got {type_name(log)}")
    say = log or (lambda _msg: None)
    nt = effective_n_threads(n_threads)
    say("read: " + ("eval" if train is None else "train and eval"))
    if train is not None:
        rcols, rtable, rnames = _read_source(train, "train", fields, fmt, turns)
    qcols, qtable, qnames = _read_source(queries, "queries", fields, fmt, turns)
    group_values = None
    if by is not None:
        if isinstance(by, str):
            if qtable is None:
                raise ValueError(f"by={by!r} names a column, but queries is not a table")
            if by not in qtable:
                raise ValueError(f"by: no column {by!r} in the eval table "
                                 f"(columns: {', '.join(qtable)})")
            group_values, by_name = qtable[by], by
        else:
            group_values, by_name = by, "group"
    say("tokenize: eval" + ("" if train is None else " and train"))
    q = tokenize_fields(qcols, "queries", tokenizer=tokenizer, ngram=ngram, n_threads=nt)
    names = tuple(qnames) if qnames else _field_names(qcols, len(q))
    texts = _texts_of(qcols)
    if train is None:
        r, rtexts, rtable = q, texts, None
    else:
        r = tokenize_fields(rcols, "train", tokenizer=tokenizer, ngram=ngram, n_threads=nt)
        rtexts = _texts_of(rcols)
        if len(q) != len(r):
            raise ValueError(f"queries has {len(q)} field(s) but train has {len(r)}; "
                             "they must have the same fields")
    n = len(q[0])
    if group_values is not None and len(group_values) != n:
        raise ValueError(f"by has {len(group_values)} values but there are {n} eval samples")
    say("scan: " + ("each sample against the rest" if train is None
                      else f"{n:,} eval against {len(r[0]):,} train samples"))
    if len(r[0]) == 0 or (train is None and n < 2):
        score, index = np.zeros(n), np.full(n, -1, dtype=np.int64)
    else:
        score, index = max_overlap(q, None if train is None else r, n_threads=nt,
                                   progress=progress)
    groups = (summarize_by(score, group_values, by_name, ts)
              if group_values is not None else None)
    return ScanResult(score, index, summarize(score, ts), groups, names, texts, rtexts,
                      qtable, rtable, train is None)


def _field_names(cols: Any, k: int) -> tuple:
    if isinstance(cols, Samples):
        return ("context", "response")
    return ("text",) if k == 1 else tuple(f"field{i}" for i in range(k))


def _texts_of(cols: Any) -> tuple:
    """The compared texts (empty tuple for TokenSets inputs, which have none)."""
    if isinstance(cols, Samples):
        return (cols.context, cols.response)
    if isinstance(cols, TokenSets) or (isinstance(cols, Sequence) and len(cols)
                                       and isinstance(cols[0], TokenSets)):
        return ()
    if isinstance(cols, Sequence) and (len(cols) == 0 or isinstance(cols[0], str)):
        return (cols,)
    return tuple(cols)

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
    keep: str = "most-overlapped",
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
#: What :func:`clean` keeps of a group of near-duplicates.
KEEP = ("most-overlapped", "first")


@dataclass
class CleanResult:
    """Everything :func:`clean` produced.

    Attributes
    ----------
    unit : str
        ``"dialogue"`` (DailyDialog-style input) or ``"row"`` (table input).
    dialogues : dict of str to list of dialogues
        The new split (after dedup and re-split); empty for table input.
    tables : dict of str to table
        The cleaned rows of every new split (table input); empty for dialogues.
    samples : dict of str to Samples
        The cleaned (context, response) samples of every split (dialogue input).
    before, after : dict of str to ScanResult
        Each eval split scanned against train, on the original and the new split.
    dedup : DedupResult
        Over the pooled units (original train, then valid, then test).
    report : CleanReport
        Counts per step (with every removed unit and its text), both
        distributions, settings and timings; ``report.as_dict()`` is ``report.json``.
    files : list of str
        Paths written by :func:`write_clean` (empty until then).
    """

    unit: str
    dialogues: dict
    tables: dict
    samples: dict
    before: dict
    after: dict
    dedup: DedupResult
    report: CleanReport
    formats: dict = field(default_factory=dict)
    files: list = field(default_factory=list)


@dataclass
class _Split:
    """One split of the input: dialogues, or a table with its compared columns."""

    units: Any          # list of dialogues, or a table (dict of columns)
    columns: list       # text columns compared (table input)
    n: int
    path: str | None = None
    fmt: str = "jsonl"


def _read_clean_source(source: Any, fields: Any, fmt: str | None) -> tuple[str, dict]:
    """(unit kind, split name -> _Split) of a folder, a mapping of dialogues or of files."""
    if isinstance(source, (str, os.PathLike)):
        paths = find_split_files(source)
        splits = {k: read_dialogues(p) for k, p in paths.items()}
        return "dialogue", {k: _Split(d, [], len(d), paths[k], "dailydialog")
                            for k, d in splits.items()}
    if not isinstance(source, Mapping):
        raise TypeError("source must be a folder path or a mapping of split name to "
                        f"dialogues, files or tables, got {type_name(source)}")
    bad = [k for k in source if k not in SPLITS]
    if bad:
        raise ValueError(f"source: unknown split name(s) {bad}; expected {list(SPLITS)}")
    if "train" not in source:
        raise ValueError("source must hold a 'train' split")
    out: dict[str, _Split] = {}
    kinds = set()
    for k in SPLITS:
        if k not in source:
            continue
        v = source[k]
        if isinstance(v, (str, os.PathLike)):
            f = infer_format(v, fmt)
            p = os.fspath(v)
            if f == "dailydialog":
                if not os.path.isfile(p):
                    raise FileNotFoundError(f"{p}: no such file")
                out[k] = _Split(read_dialogues(p), [], 0, p, f)
                kinds.add("dialogue")
            else:
                cols, table = read_fields(p, fields or ("context", "response"), f)
                out[k] = _Split(table, cols, 0, p, f)
                kinds.add("row")
        elif isinstance(v, Mapping) or type(v).__module__.split(".")[0] in ("pandas", "datasets"):
            cols, table = read_fields(v, fields or ("context", "response"))
            out[k] = _Split(table, cols, 0)
            kinds.add("row")
        else:
            out[k] = _Split(list(v), [], 0)
            kinds.add("dialogue")
    if len(kinds) > 1:
        raise ValueError("source: every split must be of the same kind (all DailyDialog "
                         "dialogues or all tables)")
    kind = kinds.pop()
    for sp in out.values():
        sp.n = len(sp.units) if kind == "dialogue" else len(sp.columns[0])
    if kind == "row":
        widths = {len(sp.columns) for sp in out.values()}
        if len(widths) > 1:
            raise ValueError("source: every split must have the same fields")
    return kind, out


def _take_rows(table: dict, idx: np.ndarray) -> dict:
    ix = idx.tolist()
    return {c: [v[i] for i in ix] for c, v in table.items()}


def dedup_first(
    units: TokenSets | Sequence[TokenSets],
    *,
    threshold: float = 0.8,
    n_threads: int | None = None,
    progress: ProgressArg = False,
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
    n_threads : int or None
    progress : bool or callable f(done, total)
        Progress of the threshold self-join.

    Returns
    -------
    DedupResult
        ``passes`` is 1; ``cluster`` and ``n_edges`` as in :func:`overlap.dedup`.
    """
    threshold = check_unit_interval(threshold, "threshold")
    nt = effective_n_threads(n_threads)
    fields = tokenize_fields(units, "units")
    return _dedup_first(fields, threshold, nt, progress)


def _dedup_first(fields: tuple, threshold: float, nt: int, progress: ProgressArg) -> DedupResult:
    n = len(fields[0])
    t = max(threshold, float(np.nextafter(0.0, 1.0)))
    if n < 2:
        return DedupResult(np.ones(n, dtype=bool), np.full(n, -1, dtype=np.int64), 1,
                           np.arange(n, dtype=np.int64), 0)
    j = overlap_join(fields, None, threshold=t, n_threads=nt, progress=progress)
    strict = j.score > threshold
    left, right = j.left[strict], j.right[strict]
    order = np.lexsort((left, right))
    left, right = left[order], right[order]
    keep = np.ones(n, dtype=bool)
    kept_for = np.full(n, -1, dtype=np.int64)
    for a, b in zip(left.tolist(), right.tolist()):  # b ascending, a < b ascending within b
        if keep[b] and keep[a]:
            keep[b] = False
            kept_for[b] = a
    graph = sparse.coo_matrix((np.ones(left.shape[0]), (left, right)), shape=(n, n))
    _, comp = csgraph.connected_components(graph, directed=False)
    smallest = np.full(comp.max() + 1, n, dtype=np.int64)
    np.minimum.at(smallest, comp, np.arange(n, dtype=np.int64))
    return DedupResult(keep, kept_for, 1, smallest[comp], int(left.shape[0]))


def _unit_text(kind: str, sp: _Split, i: int) -> str:
    if kind == "dialogue":
        return f" {EOU} ".join(sp.units[i])
    return " | ".join(col[i] for col in sp.columns)


def _exact_duplicate_masks(fields: Mapping[str, tuple], train: str, nt: int
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


def clean_layout(source: Any, fmt: str | None = None) -> tuple[str, dict[str, str]]:
    """(unit kind, output format per split) of a :func:`clean` source, without reading it.

    For planning the output files (:func:`plan_clean_outputs`) before any work.
    """
    if isinstance(source, (str, os.PathLike)):
        return "dialogue", {}
    if not isinstance(source, Mapping):
        raise TypeError("source must be a folder path or a mapping of split name to "
                        f"dialogues, files or tables, got {type_name(source)}")
    formats = {}
    for k, v in source.items():
        if isinstance(v, (str, os.PathLike)):
            formats[k] = infer_format(v, fmt)
        elif isinstance(v, Mapping) or type(v).__module__.split(".")[0] in ("pandas", "datasets"):
            formats[k] = "jsonl"
        else:
            formats[k] = "dailydialog"
    unit = "dialogue" if formats.get("train") == "dailydialog" else "row"
    out = {k: (f if f in _EXT else "jsonl") for k, f in formats.items()}
    return unit, {k: out.get(k, out.get("train", "jsonl")) for k in SPLITS}


def _input_paths(source: Any) -> list[str]:
    if isinstance(source, (str, os.PathLike)):
        return [os.fspath(source)]
    if isinstance(source, Mapping):
        return [os.fspath(v) for v in source.values() if isinstance(v, (str, os.PathLike))]
    return []


def plan_clean_outputs(outputs: Outputs, out: str | os.PathLike, unit: str,
                       formats: Mapping[str, str], splits: Sequence[str] = SPLITS) -> list[str]:
    """Plan (in ``outputs``) the files :func:`write_clean` writes into folder ``out``."""
    d = outputs.directory(out)
    names = []
    for k in splits:
        if unit == "dialogue":
            names += [SPLIT_FILE_NAMES[k], f"{k}.jsonl"]
        else:
            names.append(f"{k}.{_EXT[formats.get(k, 'jsonl')]}")
    names.append("report.json")
    return [outputs.file_in(d, n) for n in names]


_EXT = {"csv": "csv", "tsv": "tsv", "jsonl": "jsonl", "parquet": "parquet"}


def clean(
    source: Any,
    out: str | os.PathLike | None = None,
    *,
    fields: Sequence[str] | str | None = None,
    fmt: str | None = None,
    threshold: float = 0.8,
    keep: str = "most-overlapped",
    test_size: int | None = None,
    valid_size: int | None = None,
    turns: int = 1,
    seed: int = 0,
    at: Any = AT,
    tokenizer: Tokenizer = "wordpunct",
    ngram: int = 1,
    n_threads: int | None = None,
    progress: ProgressArg = False,
    log: Log | None = None,
    overwrite: bool = False,
) -> CleanResult:
    """The whole published pipeline: scan, dedup, re-split, flatten, remove, write.

    Parameters
    ----------
    source : folder path or mapping
        A DailyDialog-style folder (see :func:`overlap.pipeline.dialogue.find_split_files`),
        or a mapping ``{"train": x, "valid": x, "test": x}`` (train required)
        whose values are all dialogues (lists of utterances), or all files
        of any name (DailyDialog ``.txt``, CSV, TSV, JSONL, Parquet) or tables
        (dicts of columns, DataFrames, ``datasets.Dataset``).  For dialogues a
        unit is a dialogue, cut into (context, response) samples; for tables a
        unit is a row, compared on ``fields``.
    out : folder path, optional
        When given, :func:`write_clean` writes the result there.  Checked before
        any work: it must not be an input or inside an input folder, must be
        writable, and must be empty unless ``overwrite``.
    fields : sequence of str or comma-separated str, optional
        Compared columns of tables (default ``("context", "response")``).
    fmt : str, optional
        Format of the files (default: from each extension).
    threshold : float in [0, 1], default 0.8
        Dedup threshold (strictly greater removes).
    keep : {"most-overlapped", "first"}, default "most-overlapped"
        Which unit of near-duplicates stays.  ``"most-overlapped"`` is the
        published method (:func:`overlap.dedup`): units are visited in order
        (train first), and a removed unit's best match — the unit it overlaps
        most with — is kept.  ``"first"`` keeps the earliest unit of each
        group: a unit goes when an earlier kept unit overlaps it above the
        threshold.
    test_size, valid_size : int, optional
        Units in the new test / validation split; default the sizes of the
        original ones.  Never shrunk: when dedup leaves too few units for
        them and at least one train unit, ``clean`` raises ValueError.
    turns : int, default 1
        Context turns of the samples (dialogue input).
    seed : int, default 0
    at : thresholds of the before/after summaries, default (0.5, 0.8, 1.0)
    tokenizer, ngram, n_threads, progress
        As in :func:`scan`.
    log : callable, optional
        Receives one line of text as each step starts (the first line gives
        the split sizes clean will produce).
    overwrite : bool, default False
        Allow writing into a non-empty ``out``.

    Returns
    -------
    CleanResult
    """
    threshold = check_unit_interval(threshold, "threshold")
    turns = check_int(turns, "turns", minimum=1)
    seed = check_int(seed, "seed", minimum=0)
    ts = parse_thresholds(at)
    if keep not in KEEP:
        raise ValueError(f"keep must be one of {', '.join(KEEP)}, got {keep!r}")
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
    outputs = None
    if out is not None:
        outputs = Outputs(_input_paths(source), overwrite=overwrite)
        outputs.directory(out)
        outputs.check()

    def timed(step: str, t0: float) -> None:
        timing[step] = round(time.perf_counter() - t0, 4)

    t0 = time.perf_counter()
    say("read: the input splits")
    kind, original = _read_clean_source(source, fields, fmt)
    names = list(original)
    evals = [k for k in ("valid", "test") if k in original]
    total = sum(sp.n for sp in original.values())
    if test_size is None:
        test_size = original["test"].n if "test" in original else 0
    if valid_size is None:
        valid_size = original["valid"].n if "valid" in original else 0
    if test_size + valid_size >= total:
        raise ValueError(f"test_size + valid_size must leave at least one unit for train: "
                         f"{test_size} + {valid_size} >= {total} units in the input")
    what = "dialogues" if kind == "dialogue" else "rows"
    say(f"plan: new split test {test_size:,} and valid {valid_size:,} {what} (never "
        f"shrunk), train the rest of the {total:,} after dedup")
    if kind == "dialogue":
        orig_samples = flatten({k: sp.units for k, sp in original.items()}, turns)
        orig_fields = {k: (s.context, s.response) for k, s in orig_samples.items()}
    else:
        orig_fields = {k: tuple(sp.columns) for k, sp in original.items()}
    timed("read", t0)

    t0 = time.perf_counter()
    if evals:
        say(f"scan: {', '.join(f'{k} ({len(orig_fields[k][0]):,} samples)' for k in evals)} "
            f"against train ({len(orig_fields['train'][0]):,} samples)")
    before = {k: scan(list(orig_fields[k]), list(orig_fields["train"]), at=ts,
                      progress=progress, **opts) for k in evals}
    timed("scan_before", t0)

    t0 = time.perf_counter()
    origin = np.concatenate([np.full(original[k].n, i, dtype=np.int64)
                             for i, k in enumerate(names)])
    local = np.concatenate([np.arange(original[k].n, dtype=np.int64) for k in names])
    say(f"dedup: {total:,} {what} at threshold {threshold:g} (keep {keep})")
    if kind == "dialogue":
        pooled_texts = [" ".join(d) for k in names for d in original[k].units]
        units = (TokenSets.from_texts(pooled_texts, tokenizer, ngram, n_threads=nt),)
    else:
        units = tuple(TokenSets.from_texts([t for k in names for t in original[k].columns[f]],
                                           tokenizer, ngram, n_threads=nt)
                      for f in range(len(original["train"].columns)))
    if keep == "first":
        dd = _dedup_first(units, threshold, nt, progress)
    else:
        dd = dedup(units, threshold=threshold, n_threads=nt, progress=progress)
    kept_idx = np.flatnonzero(dd.keep)
    removed_idx = np.flatnonzero(~dd.keep)
    pair_scores = (ratio(tuple(u.take(removed_idx) for u in units),
                         tuple(u.take(dd.kept_for[removed_idx]) for u in units), n_threads=nt)
                   if removed_idx.size else np.zeros(0))
    removed_units = []
    for i, sc in zip(removed_idx.tolist(), pair_scores.tolist()):
        j = int(dd.kept_for[i])
        si, sj = names[origin[i]], names[origin[j]]
        removed_units.append({
            "split": si, "index": int(local[i]), "kept_split": sj, "kept_index": int(local[j]),
            "score": sc, "text": _unit_text(kind, original[si], int(local[i])),
            "kept_text": _unit_text(kind, original[sj], int(local[j])),
        })
    timed("dedup", t0)

    n_kept = int(kept_idx.shape[0])
    if test_size + valid_size >= n_kept:
        raise ValueError(
            f"dedup kept {n_kept:,} of {total:,} {what}: too few for test {test_size:,} + "
            f"valid {valid_size:,} and a train split; give smaller test/valid sizes "
            "(clean never shrinks them on its own)")
    t0 = time.perf_counter()
    say(f"re-split: {n_kept:,} {what} -> test {test_size:,}, valid {valid_size:,}, "
        f"train {n_kept - test_size - valid_size:,} (seed {seed})")
    rs = resplit(tuple(u.take(kept_idx) for u in units), test_size=test_size,
                 valid_size=valid_size, seed=seed, n_threads=nt, progress=progress)
    new_pos = {k: kept_idx[idx] for k, idx in rs.as_dict().items()}  # pooled indices
    timed("resplit", t0)

    t0 = time.perf_counter()
    new_dialogues: dict = {}
    new_tables: dict = {}
    if kind == "dialogue":
        say(f"flatten: samples with {turns} context turn(s)")
        pooled = [d for k in names for d in original[k].units]
        new_dialogues = {k: [pooled[i] for i in pos.tolist()] for k, pos in new_pos.items()}
        flat = flatten(new_dialogues, turns)
        new_fields = {k: (s.context, s.response) for k, s in flat.items()}
    else:
        pooled_cols = list(dict.fromkeys(c for k in names for c in original[k].units))
        pooled_table = {c: [v for k in names
                            for v in original[k].units.get(c, [None] * original[k].n)]
                        for c in pooled_cols}
        new_tables = {k: _take_rows(pooled_table, pos) for k, pos in new_pos.items()}
        fcols = range(len(original["train"].columns))
        pooled_fields = [[t for k in names for t in original[k].columns[f]] for f in fcols]
        new_fields = {k: tuple([col[i] for i in pos.tolist()] for col in pooled_fields)
                      for k, pos in new_pos.items()}
    timed("flatten", t0)

    t0 = time.perf_counter()
    say("remove: exact duplicate samples within splits and eval samples found in train")
    tok = {k: tokenize_fields(list(f), k, **opts) for k, f in new_fields.items()}
    masks, dup_counts = _exact_duplicate_masks(tok, "train", nt)
    cleaned_fields = {k: tuple([t for t, m in zip(col, masks[k].tolist()) if m]
                               for col in f) for k, f in new_fields.items()}
    samples: dict = {}
    if kind == "dialogue":
        samples = {k: s.take(masks[k]) for k, s in flat.items()}
    else:
        new_tables = {k: _take_rows(t, np.flatnonzero(masks[k])) for k, t in new_tables.items()}
    timed("remove", t0)

    t0 = time.perf_counter()
    say("scan: new eval splits against new train")
    after = {k: scan(list(cleaned_fields[k]), list(cleaned_fields["train"]), at=ts,
                     progress=progress, **opts)
             for k in ("valid", "test") if len(new_pos[k])}
    timed("scan_after", t0)

    report = CleanReport(
        settings=CleanSettings(threshold, keep, test_size, valid_size, turns, seed, ngram,
                               tokenizer if isinstance(tokenizer, str) else "callable", nt, ts),
        unit=kind,
        inputs={k: {"units": sp.n, "samples": len(orig_fields[k][0]),
                    **({"path": sp.path} if sp.path else {})} for k, sp in original.items()},
        before={k: r.summary for k, r in before.items()},
        dedup=DedupCounts(total, dd.n_removed, n_kept, dd.passes, dd.n_edges,
                          {k: int(((~dd.keep) & (origin == i)).sum())
                           for i, k in enumerate(names)}, removed_units),
        resplit={k: int(len(v)) for k, v in new_pos.items()},
        samples=dup_counts,
        after={k: r.summary for k, r in after.items()},
        timing_s=timing,
    )
    formats = {k: (sp.fmt if sp.fmt in _EXT else "jsonl") for k, sp in original.items()}
    formats = {k: formats.get(k, formats["train"]) for k in SPLITS}
    result = CleanResult(kind, new_dialogues, new_tables, samples, before, after, dd, report,
                         formats)
    if outputs is not None:
        plan_clean_outputs(outputs, out, kind, formats)
        with outputs:
            write_clean(out, result, outputs=outputs)
    return result


def write_clean(out: str | os.PathLike, result: CleanResult, *, overwrite: bool = False,
                outputs: Outputs | None = None) -> list[str]:
    """Step 6: write the new split and the report into folder ``out``.

    Dialogue input: ``dialogues_{train,validation,test}.txt`` (DailyDialog
    format, readable by :func:`overlap.pipeline.dialogue.read_splits`) and
    ``{train,valid,test}.jsonl`` (the cleaned samples: context, response,
    dialogue, turn).  Table input: ``{train,valid,test}.EXT`` with every column
    of the cleaned rows, in the input's format (JSONL for in-memory tables).
    Always ``report.json``.  Every file is written to a temporary name and all
    are renamed into place together at the end, so a failure leaves none.

    Parameters
    ----------
    out : folder path
        Must be empty unless ``overwrite``.
    result : CleanResult
    overwrite : bool, default False
    outputs : Outputs, optional
        Planned by the caller (with :func:`plan_clean_outputs`), who commits it;
        ``overwrite`` is then ignored.

    Returns
    -------
    list of str
        The paths written (also stored in ``result.files``).
    """
    if not isinstance(out, (str, os.PathLike)):
        raise TypeError(f"out must be a str or path-like, got {type_name(out)}")
    if not isinstance(result, CleanResult):
        raise TypeError(f"result must be a CleanResult, got {type_name(result)}")
    own = outputs is None
    if own:
        outputs = Outputs(overwrite=overwrite)
        plan_clean_outputs(outputs, out, result.unit, result.formats)
        outputs.check()
    d = os.fspath(out)
    files = []
    try:
        if result.unit == "dialogue":
            for k, dialogues in result.dialogues.items():
                p = os.path.join(d, SPLIT_FILE_NAMES[k])
                write_dialogues(outputs.stage(p), dialogues)
                files.append(p)
            for k, s in result.samples.items():
                p = os.path.join(d, f"{k}.jsonl")
                write_table(outputs.stage(p), {"context": s.context, "response": s.response,
                                               "dialogue": s.dialogue.tolist(),
                                               "turn": s.turn.tolist()}, "jsonl")
                files.append(p)
        else:
            for k, table in result.tables.items():
                f = result.formats.get(k, "jsonl")
                p = os.path.join(d, f"{k}.{_EXT[f]}")
                write_table(outputs.stage(p), table, f)
                files.append(p)
        p = os.path.join(d, "report.json")
        with open(outputs.stage(p), "w", encoding="utf-8") as fh:
            json.dump(result.report.as_dict(), fh, indent=2, ensure_ascii=False)
            fh.write("\n")
        files.append(p)
    except BaseException:
        if own:
            outputs.abort()
        raise
    if own:
        outputs.commit()
    result.files[:] = files
    return files

