"""Fixed-eval decontamination: clean train against a benchmark's eval splits, which stay as they are.

For a published benchmark (GLUE, MINT, any leaderboard) the test set is fixed;
the standard move is to remove from **train** whatever overlaps the eval
splits, then deduplicate train itself.  :func:`decontaminate` does that:

1. every train unit's best match in every eval split (the score of two units,
   under ``measure``, is the minimum over the compared fields; with
   ``measure="containment"`` it is how much of the **eval** unit lies inside
   the train unit, |E ∩ T| / |E|);
2. train units whose best eval score is **at least** (``>=``) ``threshold``
   are removed (reason ``eval-overlap``), the same comparison as a scan's
   counts: after it, no eval unit has a train match scoring ``>= threshold``;
3. the remaining train units are deduplicated (:func:`overlap.dedup`: a unit
   goes when its ratio to one still present is **strictly greater** than
   ``dedup_threshold`` under ``dedup_measure``; reason ``train-duplicate``).

Eval splits are read, never written.  The cleaned train keeps every column and
the original row order.  Re-splitting (pooling the splits and dealing them
again) is :func:`overlap.pipeline.clean`, for a corpus you own.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from .._progress import ProgressArg
from .._threads import effective_n_threads
from .._validation import MEASURE_LABELS, check_measure, check_unit_interval, type_name
from ..dedup import DedupResult, dedup
from ..search import OverlapIndex, max_overlap, ratio
from ..tokensets import Tokenizer, TokenSets
from ._splits import EXT, Split, read_split, take_rows, unit_text
from .dialogue import SPLIT_FILE_NAMES, write_dialogues
from .output import Outputs, write_result_folder
from .report import AT, OverlapSummary, parse_thresholds, summarize
from .scanning import DEFAULT_TOKENIZER, Log, tokenize_fields
from .steps import KEEP, dedup_first_fields
from .tables import infer_format, write_table

__all__ = ["MODE", "REASONS", "DecontaminationSettings", "DecontaminationReport",
           "DecontaminationResult", "decontaminate", "write_decontaminated",
           "plan_decontaminate_outputs", "decontaminate_layout", "best_containers",
           "check_decontaminate_measures"]

#: The name of this mode in reports and on the command line.
MODE = "fixed-eval"

#: Why a train unit was removed: it overlaps an eval unit, or it duplicates a kept train unit.
REASONS = ("eval-overlap", "train-duplicate")


@dataclass(frozen=True)
class DecontaminationSettings:
    """What :func:`decontaminate` was asked to do."""

    threshold: float
    dedup_threshold: float | None  # None: train was not deduplicated
    keep: str
    fields: tuple
    tokenizer: str
    ngram: int
    n_threads: int
    at: tuple
    measure: str = "dice"
    dedup_measure: str | None = "dice"  # None: train was not deduplicated


@dataclass
class DecontaminationReport:
    """What :func:`decontaminate` removed and why (``as_dict()`` is ``report.json``).

    Attributes
    ----------
    settings : DecontaminationSettings
    unit : str
        ``"row"`` (tables) or ``"dialogue"`` (DailyDialog files).
    inputs : dict of str to dict
        Per split (train and every eval split): ``units`` (and ``path``).
    before, after : dict of str to OverlapSummary
        Every eval split's best matches in the original and the cleaned train.
    removed : dict
        ``eval-overlap`` and ``train-duplicate`` counts, ``total``, and
        ``by_eval_split`` (eval-overlap removals per eval split of the best match).
    kept : int
        Train units left.
    dedup : dict
        ``passes`` and ``pairs_above_threshold`` of the train dedup.
    removed_units : list of dict
        Every removed train unit, in train order: ``split`` ("train"),
        ``index`` (its row in train), ``reason`` (one of :data:`REASONS`),
        ``kept_split`` and ``kept_for`` (the unit it was removed for: its best
        eval match, or the train unit it duplicates), ``score`` (their ratio),
        ``text`` and ``kept_text``.
    timing_s : dict of str to float
    """

    settings: DecontaminationSettings
    unit: str
    inputs: dict
    before: dict
    after: dict
    removed: dict
    kept: int
    dedup: dict
    removed_units: list
    timing_s: dict
    mode: str = MODE

    def as_dict(self) -> dict:
        return {
            "mode": self.mode,
            "settings": asdict(self.settings),
            "unit": self.unit,
            "inputs": self.inputs,
            "before": {k: v.as_dict() for k, v in self.before.items()},
            "removed": self.removed,
            "kept": self.kept,
            "dedup": self.dedup,
            "after": {k: v.as_dict() for k, v in self.after.items()},
            "removed_units": self.removed_units,
            "timing_s": dict(self.timing_s),
        }


@dataclass
class DecontaminationResult:
    """Everything :func:`decontaminate` produced.

    Attributes
    ----------
    unit : str
        ``"row"`` or ``"dialogue"``.
    train : dict of columns, or list of dialogues
        The cleaned train: the kept units with every column, in the original order.
    keep : ndarray of bool
        Per original train unit: kept.
    reason : list of str or None
        Per original train unit: ``None`` (kept), ``"eval-overlap"`` or ``"train-duplicate"``.
    best_score, best_index : ndarray
        Per original train unit: its best score against any eval split, and
        that eval unit's index (-1 when nothing overlaps).  With
        ``measure="containment"`` only matches scoring at least the threshold
        are searched (score 0 and index -1 for a train unit with none).
    best_split : list of str or None
        Per original train unit: the eval split of that match (ties: the split
        given first, then the lowest index); None when nothing overlaps.
    dedup : DedupResult or None
        The train dedup, over the units left after the eval-overlap removal
        (indices into those); None when train was not deduplicated.
    before, after : dict of str to OverlapSummary
    report : DecontaminationReport
    format : str
        The train file's format (what :func:`write_decontaminated` writes).
    files : list of str
        Paths written by :func:`write_decontaminated` (empty until then).
    """

    unit: str
    train: Any
    keep: np.ndarray
    reason: list
    best_score: np.ndarray
    best_index: np.ndarray
    best_split: list
    dedup: DedupResult | None
    before: dict
    after: dict
    report: DecontaminationReport
    format: str = "jsonl"
    files: list = field(default_factory=list)


def _check_evals(evals: Any) -> dict:
    if not isinstance(evals, Mapping):
        raise TypeError("evals must be a mapping of eval split name to file, table or "
                        f"dialogues, got {type_name(evals)}")
    if not evals:
        raise ValueError("evals must hold at least one eval split (e.g. {'test': 'test.csv'})")
    for k in evals:
        if not isinstance(k, str) or not k or k == "train":
            raise ValueError(f"evals: split names must be non-empty str other than 'train', "
                             f"got {k!r}")
    return dict(evals)


def _output_name(unit: str, fmt: str) -> str:
    return SPLIT_FILE_NAMES["train"] if unit == "dialogue" else f"train.{EXT[fmt]}"


def check_decontaminate_measures(measure: Any, dedup_measure: Any, dedup_train: bool,
                                 threshold: float, names: tuple = ("measure", "dedup_measure",
                                                                   "dedup_train=False")) -> str:
    """:func:`decontaminate`'s ``measure`` and ``dedup_measure``; returns the dedup's measure.

    ``names`` are how the error messages name the two options and the way to
    skip the dedup (the command line passes its own spellings).
    """
    mname, dname, skip = names
    check_measure(measure)
    if measure == "containment" and threshold == 0.0:
        raise ValueError(f"threshold must be > 0 with {mname} containment: train units are "
                         "found by a threshold join of the eval units against train, and at 0 "
                         "every pair qualifies")
    dmeasure = measure if dedup_measure is None else dedup_measure
    if dedup_train or dedup_measure is not None:
        check_measure(dmeasure, self_join=True,
                      call=(f"the train dedup (give {dname} a symmetric measure, or {skip})"
                            if dedup_measure is None else f"the train dedup ({dname})"))
    return dmeasure


#: Eval units joined against train at a time by :func:`best_containers` (bounds the pairs held).
CONTAINER_CHUNK = 65536


def best_containers(train: tuple, evals: tuple, threshold: float, n_threads: int,
                    progress: ProgressArg = False,
                    chunk: int = CONTAINER_CHUNK) -> tuple[np.ndarray, np.ndarray]:
    """Per train unit: its best eval unit by containment of the eval unit in it.

    The score of eval unit ``e`` and train unit ``t`` is |E ∩ T| / |E| (how
    much of the eval unit lies inside the train unit; the minimum over
    fields), the direction a fixed eval set asks about.  Only pairs scoring at
    least ``threshold`` (> 0) are found: a threshold join of the eval units
    (the queries) against an index over train, ``chunk`` eval units at a time,
    so memory grows with the pairs of one chunk.

    Returns
    -------
    score, index : ndarray (float64, int64), one per train unit
        The best score and its eval unit (ties: the lowest eval index); 0 and
        -1 for a train unit that no eval unit reaches the threshold in.
    """
    n, m = len(train[0]), len(evals[0])
    score = np.zeros(n)
    index = np.full(n, -1, dtype=np.int64)
    if n == 0 or m == 0:
        return score, index
    idx = OverlapIndex(train, n_threads=n_threads)
    for start in range(0, m, chunk):
        rows = np.arange(start, min(start + chunk, m), dtype=np.int64)
        queries = evals if rows.size == m else tuple(t.take(rows) for t in evals)
        j = idx.join(queries, threshold=threshold, measure="containment",
                     n_threads=n_threads, progress=progress)
        if not len(j):
            continue
        # per train unit: its best pair of the chunk, the lowest eval index on ties
        order = np.lexsort((j.left, -j.score, j.right))
        right = j.right[order]
        first = np.ones(right.shape[0], dtype=bool)
        first[1:] = right[1:] != right[:-1]
        r, s, e = right[first], j.score[order][first], j.left[order][first] + start
        better = s > score[r]  # earlier chunks (lower eval indices) keep ties
        score[r[better]], index[r[better]] = s[better], e[better]
    return score, index


def decontaminate_layout(train: Any, fmt: str | None = None) -> tuple[str, str]:
    """(unit kind, output format) of a :func:`decontaminate` train input, without reading it."""
    if isinstance(train, (str, os.PathLike)):
        f = infer_format(train, fmt)
        return ("dialogue", f) if f == "dailydialog" else ("row", f if f in EXT else "jsonl")
    if isinstance(train, Mapping) or type(train).__module__.split(".")[0] in ("pandas",
                                                                               "datasets"):
        return "row", "jsonl"
    return "dialogue", "dailydialog"


def plan_decontaminate_outputs(outputs: Outputs, out: str | os.PathLike, unit: str,
                               fmt: str) -> list[str]:
    """Plan (in ``outputs``) the files :func:`write_decontaminated` writes into ``out``."""
    d = outputs.directory(out)
    return [outputs.file_in(d, _output_name(unit, fmt)), outputs.file_in(d, "report.json")]


def decontaminate(
    train: Any,
    evals: Mapping[str, Any],
    out: str | os.PathLike | None = None,
    *,
    fields: Sequence[str] | str | None = None,
    fmt: str | None = None,
    threshold: float = 0.8,
    dedup_train: bool = True,
    dedup_threshold: float | None = None,
    keep: str = "most-overlapped",
    measure: str = "dice",
    dedup_measure: str | None = None,
    at: Any = AT,
    tokenizer: Tokenizer = DEFAULT_TOKENIZER,
    ngram: int = 1,
    n_threads: int | None = None,
    progress: ProgressArg = False,
    log: Log | None = None,
    overwrite: bool = False,
) -> DecontaminationResult:
    """Remove from train what overlaps the (fixed) eval splits, then dedup train.

    Parameters
    ----------
    train : file path, table or dialogues
        A CSV/TSV/JSONL/Parquet file or a table (dict of columns, pandas
        DataFrame, ``datasets.Dataset``): a unit is a row, compared on
        ``fields``.  A DailyDialog ``.txt`` file or a list of dialogues: a unit
        is a dialogue (the token set of all its utterances).
    evals : mapping of split name to file path, table or dialogues
        The fixed eval splits (e.g. ``{"valid": "dev.csv", "test": "test.csv"}``),
        of the same kind and fields as train; read, never written.  They need
        not have train's other columns (a test set without labels is fine).
    out : folder path, optional
        When given, :func:`write_decontaminated` writes the cleaned train and
        ``report.json`` there (checked before any work: never an input, never
        inside an input folder, empty unless ``overwrite``).
    fields : sequence of str or comma-separated str, optional
        Compared columns of tables.  Default: ``context`` and ``response`` when
        the tables have both, else ``text``, else their one text-like column
        (see :func:`overlap.pipeline.tables.infer_fields`).
    fmt : str, optional
        Format of the files (default: from each extension).
    threshold : float in [0, 1], default 0.8
        A train unit whose best match in any eval split scores **at least**
        this is removed (in (0, 1] with ``measure="containment"``).
    dedup_train : bool, default True
        Then deduplicate the remaining train units.
    dedup_threshold : float in [0, 1], optional
        Dedup threshold (a unit goes when its ratio to one still present is
        strictly greater); default ``threshold``.
    keep : {"most-overlapped", "first"}, default "most-overlapped"
        Which train unit of near-duplicates stays (as in :func:`overlap.pipeline.clean`).
    measure : {"dice", "jaccard", "cosine", "overlap", "containment"}, default "dice"
        The score of an eval unit and a train unit (docs/measures.md), the
        minimum over fields.  ``"containment"`` is taken in the eval → train
        direction: |E ∩ T| / |E|, how much of the eval unit E lies inside the
        train unit T, so an eval sample copied inside a long train row scores
        1.0 however long the row.  With it only matches scoring at least
        ``threshold`` are searched (``best_score`` / ``best_index`` are 0 / -1
        below it) and ``threshold`` must be > 0.
    dedup_measure : {"dice", "jaccard", "cosine", "overlap"}, optional
        The measure of the train dedup; default ``measure``.  Dedup scores
        each pair of train units once, so it refuses ``"containment"``: with
        ``measure="containment"`` give a symmetric one here (``"overlap"``
        is the closest) or ``dedup_train=False``.
    at : thresholds of the before/after summaries, default (0.5, 0.8, 1.0)
    tokenizer, ngram, n_threads, progress
        As in :func:`overlap.pipeline.scan`.
    log : callable, optional
        Receives one line of text as each step starts.
    overwrite : bool, default False

    Returns
    -------
    DecontaminationResult
    """
    threshold = check_unit_interval(threshold, "threshold")
    if not isinstance(dedup_train, bool):
        raise TypeError(f"dedup_train must be a bool, got {type_name(dedup_train)}")
    dmeasure = check_decontaminate_measures(measure, dedup_measure, dedup_train, threshold)
    dthr = (threshold if dedup_threshold is None
            else check_unit_interval(dedup_threshold, "dedup_threshold"))
    if keep not in KEEP:
        raise ValueError(f"keep must be one of {', '.join(KEEP)}, got {keep!r}")
    ts = parse_thresholds(at)
    evals = _check_evals(evals)
    if log is not None and not callable(log):
        raise TypeError(f"log must be callable or None, got {type_name(log)}")
    nt = effective_n_threads(n_threads)
    say = log or (lambda _msg: None)
    outputs = None
    if out is not None:
        unit0, fmt0 = decontaminate_layout(train, fmt)
        outputs = Outputs([os.fspath(v) for v in [train, *evals.values()]
                           if isinstance(v, (str, os.PathLike))], overwrite=overwrite)
        plan_decontaminate_outputs(outputs, out, unit0, fmt0)
        outputs.check()
    timing: dict[str, float] = {}

    def timed(step: str, t0: float) -> None:
        timing[step] = round(time.perf_counter() - t0, 4)

    t0 = time.perf_counter()
    say("read: train and the eval splits")
    splits: dict[str, Split] = {}
    field_names: dict[str, list] = {}
    kinds = {read_split(train, fields, fmt, splits, "train", field_names)}
    for k, v in evals.items():
        kinds.add(read_split(v, fields, fmt, splits, k, field_names))
    if len(kinds) > 1:
        raise ValueError("train and the eval splits must be of the same kind (all DailyDialog "
                         "dialogues or all tables)")
    kind = kinds.pop()
    for sp in splits.values():
        sp.n = len(sp.units) if kind == "dialogue" else len(sp.columns[0])
    if kind == "row" and len({tuple(v) for v in field_names.values()}) > 1:
        got = "; ".join(f"{k}: {', '.join(v)}" for k, v in field_names.items())
        raise ValueError(f"train and the eval splits must have the same fields ({got}); "
                         "name them with --fields (fields=)")
    timed("read", t0)

    t0 = time.perf_counter()
    say("tokenize: train and the eval splits")
    opts: dict[str, Any] = {"tokenizer": tokenizer, "ngram": ngram, "n_threads": nt}
    tok: dict[str, tuple] = {}
    for k, sp in splits.items():
        if kind == "dialogue":
            tok[k] = (TokenSets.from_texts([" ".join(d) for d in sp.units], progress=progress,
                                           **opts),)
        else:
            tok[k] = tokenize_fields(list(sp.columns), k, progress=progress, **opts)
    timed("tokenize", t0)

    n = splits["train"].n
    t0 = time.perf_counter()
    what = "dialogues" if kind == "dialogue" else "rows"
    say(f"scan: {n:,} train {what} against " +
        ", ".join(f"{k} ({splits[k].n:,})" for k in evals))
    best_score = np.zeros(n)
    best_index = np.full(n, -1, dtype=np.int64)
    best_split_id = np.full(n, -1, dtype=np.int64)
    names = list(evals)
    before: dict[str, OverlapSummary] = {}
    for s, k in enumerate(names):
        if splits[k].n == 0 or n == 0:
            before[k] = summarize(np.zeros(splits[k].n), ts)
            continue
        if measure == "containment":  # the eval unit inside the train unit: eval queries
            score, index = best_containers(tok["train"], tok[k], threshold, nt, progress)
        else:  # a symmetric measure: each train unit's best eval unit directly
            score, index = max_overlap(tok["train"], tok[k], measure=measure, n_threads=nt,
                                       progress=progress)
        better = score > best_score  # ties stay with the split given first
        best_score[better], best_index[better] = score[better], index[better]
        best_split_id[better] = s
        before[k] = summarize(max_overlap(tok[k], tok["train"], measure=measure, n_threads=nt,
                                          progress=progress).score, ts)
    timed("scan", t0)

    overlap_mask = (best_score >= threshold) & (best_index >= 0)  # never for no match
    rest = np.flatnonzero(~overlap_mask)
    keep_mask = ~overlap_mask
    dd: DedupResult | None = None
    dup_of = np.full(n, -1, dtype=np.int64)
    t0 = time.perf_counter()
    if dedup_train:
        by = "" if dmeasure == "dice" else f" by {MEASURE_LABELS[dmeasure]}"
        say(f"dedup: {rest.size:,} train {what} at threshold {dthr:g}{by} (keep {keep})")
        units = tuple(t.take(rest) for t in tok["train"])
        if keep == "first":
            dd = dedup_first_fields(units, dthr, nt, progress, measure=dmeasure)
        else:
            dd = dedup(units, threshold=dthr, measure=dmeasure, n_threads=nt,
                       progress=progress)
        gone = np.flatnonzero(~dd.keep)
        keep_mask[rest[gone]] = False
        dup_of[rest[gone]] = rest[dd.kept_for[gone]]
    timed("dedup", t0)

    t0 = time.perf_counter()
    say("scan: the eval splits against the cleaned train")
    kept_idx = np.flatnonzero(keep_mask)
    kept_tok = tuple(t.take(kept_idx) for t in tok["train"])
    after = {}
    for k in names:
        sc = (max_overlap(tok[k], kept_tok, measure=measure, n_threads=nt,
                          progress=progress).score
              if splits[k].n and kept_idx.size else np.zeros(splits[k].n))
        after[k] = summarize(sc, ts)
    timed("scan_after", t0)

    dups = np.flatnonzero(dup_of >= 0)
    dup_scores = (ratio(tuple(t.take(dups) for t in tok["train"]),
                        tuple(t.take(dup_of[dups]) for t in tok["train"]),
                        measure=dmeasure, n_threads=nt)
                  if dups.size else np.zeros(0))
    dup_score = dict(zip(dups.tolist(), dup_scores.tolist()))
    best_split = [names[s] if s >= 0 else None for s in best_split_id.tolist()]
    reason: list = [None] * n
    removed_units = []
    tr = splits["train"]
    for i in np.flatnonzero(~keep_mask).tolist():
        ks: str
        if overlap_mask[i]:
            ks, kf, why = str(best_split[i]), int(best_index[i]), float(best_score[i])
            reason[i] = "eval-overlap"
        else:
            ks, kf, why = "train", int(dup_of[i]), float(dup_score[i])
            reason[i] = "train-duplicate"
        removed_units.append({
            "split": "train", "index": i, "reason": reason[i], "kept_split": ks,
            "kept_for": kf, "score": why, "text": unit_text(kind, tr, i),
            "kept_text": unit_text(kind, splits[ks], kf),
        })
    n_overlap = int(overlap_mask.sum())
    n_dup = int(dups.size)
    report = DecontaminationReport(
        settings=DecontaminationSettings(
            threshold, dthr if dedup_train else None, keep,
            tuple(field_names.get("train", ())) if kind == "row" else (),
            tokenizer if isinstance(tokenizer, str) else "callable", ngram, nt, ts,
            measure=measure, dedup_measure=dmeasure if dedup_train else None),
        unit=kind,
        inputs={k: {"units": sp.n, **({"path": sp.path} if sp.path else {})}
                for k, sp in splits.items()},
        before=before, after=after,
        removed={"eval-overlap": n_overlap, "train-duplicate": n_dup,
                 "total": n_overlap + n_dup,
                 "by_eval_split": {k: int(((best_split_id == s) & overlap_mask).sum())
                                   for s, k in enumerate(names)}},
        kept=int(kept_idx.size),
        dedup={"passes": dd.passes if dd is not None else 0,
               "pairs_above_threshold": dd.n_edges if dd is not None else 0},
        removed_units=removed_units, timing_s=timing,
    )
    cleaned = ([tr.units[i] for i in kept_idx.tolist()] if kind == "dialogue"
               else take_rows(tr.units, kept_idx))
    out_fmt = "dailydialog" if kind == "dialogue" else (tr.fmt if tr.fmt in EXT else "jsonl")
    result = DecontaminationResult(kind, cleaned, keep_mask, reason, best_score, best_index,
                                   best_split, dd, before, after, report, out_fmt)
    if outputs is not None and out is not None:
        with outputs:
            write_decontaminated(out, result, outputs=outputs)
    return result


def write_decontaminated(out: str | os.PathLike, result: DecontaminationResult, *,
                         overwrite: bool = False, outputs: Outputs | None = None) -> list[str]:
    """Write the cleaned train and ``report.json`` into folder ``out``.

    The train file is ``train.EXT`` in train's format with every column
    (``dialogues_train.txt`` for DailyDialog input; JSONL for in-memory
    tables).  Both files are written to temporary names and renamed together
    at the end, so a failure leaves neither.  Eval splits are never written.

    Parameters
    ----------
    out : folder path
        Must be empty unless ``overwrite``.
    result : DecontaminationResult
    overwrite : bool, default False
    outputs : Outputs, optional
        Planned by the caller (with :func:`plan_decontaminate_outputs`), who
        commits it; ``overwrite`` is then ignored.

    Returns
    -------
    list of str
        The paths written (also stored in ``result.files``).
    """
    def write_data(outs: Outputs, d: str) -> list[str]:
        p = os.path.join(d, _output_name(result.unit, result.format))
        if result.unit == "dialogue":
            write_dialogues(outs.stage(p), result.train)
        else:
            write_table(outs.stage(p), result.train, result.format)
        return [p]

    return write_result_folder(
        out, result, DecontaminationResult,
        lambda o: plan_decontaminate_outputs(o, out, result.unit, result.format), overwrite,
        outputs, write_data)
