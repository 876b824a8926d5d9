"""The whole pipeline in one call: :func:`clean`, and :func:`write_clean` for its files.

Input: a DailyDialog-style folder, a mapping of split name to dialogues, or to
files of any name and format, or to tables.  A unit is a dialogue (cut into
(context, response) samples) or a table row.  The output folder is checked
before any work and written all at once (:mod:`overlap.pipeline.output`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._progress import ProgressArg
from .._threads import effective_n_threads
from .._validation import MEASURE_LABELS, check_int, check_measure, check_unit_interval, type_name
from ..dedup import DedupResult, dedup
from ..search import ratio
from ..tokensets import Tokenizer, TokenSets
from ._splits import EXT, Split, dialogues_of, input_paths, read_split, take_rows, unit_text
from .dialogue import SPLIT_FILE_NAMES, SPLITS, find_split_files, write_dialogues
from .output import Outputs, write_result_folder
from .report import AT, CleanReport, CleanSettings, DedupCounts, parse_thresholds
from .scanning import DEFAULT_TOKENIZER, Log, scan, tokenize_fields
from .steps import KEEP, dedup_first_fields, exact_duplicate_masks, flatten, resplit
from .tables import infer_format, write_table

__all__ = ["CleanResult", "clean", "write_clean", "plan_clean_outputs", "clean_layout",
           "SPLIT_FILE_NAMES"]


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


def _read_clean_source(source: Any, fields: Any, fmt: str | None) -> tuple[str, dict]:
    """(unit kind, split name -> Split) of a folder, a mapping of dialogues or of files."""
    if isinstance(source, (str, os.PathLike)):
        paths = find_split_files(source)
        if any(infer_format(p, fmt) != "dailydialog" for p in paths.values()):
            return _read_clean_source(paths, fields, fmt)  # plain text: one sample a line
        splits = {k: dialogues_of(p) for k, p in paths.items()}
        return "dialogue", {k: Split(d, [], len(d), paths[k], "dailydialog")
                            for k, d in splits.items()}
    if not isinstance(source, Mapping):
        raise TypeError("source must be a folder path or a mapping of split name to "
                        f"dialogues, files or tables, got {type_name(source)}")
    bad = [k for k in source if k not in SPLITS]
    if bad:
        raise ValueError(f"source: unknown split name(s) {bad}; expected {list(SPLITS)}")
    if "train" not in source:
        raise ValueError("source must hold a 'train' split")
    out: dict[str, Split] = {}
    kinds = set()
    field_names: dict[str, list] = {}
    for k in SPLITS:
        if k not in source:
            continue
        kinds.add(read_split(source[k], fields, fmt, out, k, field_names))
    if len(kinds) > 1:
        raise ValueError("source: every split must be of the same kind (all DailyDialog "
                         "dialogues or all tables)")
    kind = kinds.pop()
    for sp in out.values():
        sp.n = len(sp.units) if kind == "dialogue" else len(sp.columns[0])
    if kind == "row":
        widths = {len(sp.columns) for sp in out.values()}
        if len(widths) > 1 or len({tuple(v) for v in field_names.values()}) > 1:
            got = "; ".join(f"{k}: {', '.join(v)}" for k, v in field_names.items())
            raise ValueError(f"source: every split must have the same fields ({got}); name "
                             "them with --fields")
    return kind, out


def _where(k: str, sp: Split) -> str:
    return sp.path if sp.path else f"the {k} table"


def _refuse_column_loss(original: dict) -> None:
    """Re-splitting tables whose columns differ would move rows into a split lacking them."""
    cols = {k: list(sp.units) for k, sp in original.items()}
    for k, have in cols.items():
        for j, other in cols.items():
            missing = [c for c in have if c not in other]
            if j != k and missing:
                c = ", ".join(repr(x) for x in missing)
                raise ValueError(
                    f"{_where(j, original[j])}: has no column {c}, which "
                    f"{_where(k, original[k])} has; re-splitting would move {k} rows into "
                    f"{j} and {j} rows without it into {k}. For a fixed benchmark remove the "
                    "overlap from train instead (overlap clean --train/--test without "
                    "--resplit, or overlap decontaminate); to re-split anyway give "
                    "--allow-unlabelled-move (allow_unlabelled_move=True)")


def _moved_rows(kind: str, original: dict, names: list, origin: np.ndarray,
                new_pos: dict) -> dict:
    """Per new split: units that came from another original split, and columns they lack."""
    moved: dict = {}
    for k, pos in new_pos.items():
        src = origin[pos]
        entry: dict[str, Any] = {}
        for i, name in enumerate(names):
            c = int(np.count_nonzero(src == i))
            if name != k and c:
                entry[f"from_{name}"] = c
        if kind == "row" and k in original:
            have = list(original[k].units)
            lacking = {col: int(sum(int(np.count_nonzero(src == i)) for i, name in
                                    enumerate(names) if col not in original[name].units))
                       for col in have}
            lacking = {col: c for col, c in lacking.items() if c}
            if lacking:
                entry["without_column"] = lacking
            extra = {col: int(sum(int(np.count_nonzero(src == i)) for i, name in
                                  enumerate(names) if col in original[name].units))
                     for sp in original.values() for col in sp.units if col not in have}
            extra = {col: c for col, c in extra.items() if c}
            if extra:
                entry["with_column"] = extra
        if entry:
            moved[k] = entry
    return moved


def clean_layout(source: Any, fmt: str | None = None) -> tuple[str, dict[str, str]]:
    """(unit kind, output format per split) of a :func:`clean` source, without reading it.

    For planning the output files (:func:`plan_clean_outputs`) before any work.
    """
    if isinstance(source, (str, os.PathLike)):
        paths = find_split_files(source)
        if all(infer_format(p, fmt) == "dailydialog" for p in paths.values()):
            return "dialogue", {}
        source = paths
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
    out = {k: (f if f in EXT else "jsonl") for k, f in formats.items()}
    return unit, {k: out.get(k, out.get("train", "jsonl")) for k in SPLITS}


def plan_clean_outputs(outputs: Outputs, out: str | os.PathLike, unit: str,
                       formats: Mapping[str, str], splits: Sequence[str] = SPLITS) -> list[str]:
    """Plan (in ``outputs``) the files :func:`write_clean` writes into folder ``out``."""
    d = outputs.directory(out)
    names = []
    for k in splits:
        if unit == "dialogue":
            names += [SPLIT_FILE_NAMES[k], f"{k}.jsonl"]
        else:
            names.append(f"{k}.{EXT[formats.get(k, 'jsonl')]}")
    names.append("report.json")
    return [outputs.file_in(d, n) for n in names]


def clean(
    source: Any,
    out: str | os.PathLike | None = None,
    *,
    fields: Sequence[str] | str | None = None,
    fmt: str | None = None,
    threshold: float = 0.8,
    keep: str = "most-overlapped",
    measure: str = "dice",
    test_size: int | None = None,
    valid_size: int | None = None,
    turns: int = 1,
    seed: int = 0,
    at: Any = AT,
    tokenizer: Tokenizer = DEFAULT_TOKENIZER,
    ngram: int = 1,
    n_threads: int | None = None,
    progress: ProgressArg = False,
    log: Log | None = None,
    overwrite: bool = False,
    allow_unlabelled_move: bool = False,
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
        Compared columns of tables; default as in :func:`scan` (``context``
        and ``response``, else ``text``, else the one text-like column).
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
    measure : {"dice", "jaccard", "cosine", "overlap"}, default "dice"
        The score of two units (docs/measures.md), the minimum over fields,
        in every step: the scans before and after, the dedup, and the
        re-split's "least overlapping".  The dedup scores each pair of the
        pooled units once, so ``"containment"`` (asymmetric) is refused
        (ValueError) as by :func:`overlap.dedup`; ``"overlap"`` is the
        symmetric "lies inside" measure.  To remove train rows that contain a
        fixed eval sample use :func:`overlap.pipeline.decontaminate`, which
        takes containment in the eval → train direction.
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
    allow_unlabelled_move : bool, default False
        Re-splitting moves rows between splits.  When the input tables do not
        all have the same columns (typically a test set without a ``label``
        column), moved rows would lose those columns or arrive without them,
        so ``clean`` refuses (ValueError) unless this is True; the report then
        counts the rows that moved without them (``report.moved``).  For a
        published benchmark, whose eval splits are fixed, use
        :func:`overlap.pipeline.decontaminate` instead.

    Returns
    -------
    CleanResult
    """
    threshold = check_unit_interval(threshold, "threshold")
    check_measure(measure, self_join=True, call="clean's dedup of the pooled splits")
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
    if not isinstance(allow_unlabelled_move, bool):
        raise TypeError(f"allow_unlabelled_move must be a bool, got "
                        f"{type_name(allow_unlabelled_move)}")
    nt = effective_n_threads(n_threads)
    say = log or (lambda _msg: None)
    opts: dict[str, Any] = {"tokenizer": tokenizer, "ngram": ngram, "n_threads": nt}
    timing: dict[str, float] = {}
    outputs = None
    if out is not None:
        outputs = Outputs(input_paths(source), overwrite=overwrite)
        outputs.directory(out)
        outputs.check()

    def timed(step: str, t0: float) -> None:
        timing[step] = round(time.perf_counter() - t0, 4)

    t0 = time.perf_counter()
    say("read: the input splits")
    kind, original = _read_clean_source(source, fields, fmt)
    names = list(original)
    if kind == "row" and not allow_unlabelled_move:
        _refuse_column_loss(original)
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
                      measure=measure, progress=progress, **opts) for k in evals}
    timed("scan_before", t0)

    t0 = time.perf_counter()
    origin = np.concatenate([np.full(original[k].n, i, dtype=np.int64)
                             for i, k in enumerate(names)])
    local = np.concatenate([np.arange(original[k].n, dtype=np.int64) for k in names])
    by = "" if measure == "dice" else f" by {MEASURE_LABELS[measure]}"
    say(f"dedup: {total:,} {what} at threshold {threshold:g}{by} (keep {keep})")
    units: tuple[TokenSets, ...]
    if kind == "dialogue":
        pooled_texts = [" ".join(d) for k in names for d in original[k].units]
        units = (TokenSets.from_texts(pooled_texts, tokenizer, ngram, n_threads=nt),)
    else:
        units = tuple(TokenSets.from_texts([t for k in names for t in original[k].columns[f]],
                                           tokenizer, ngram, n_threads=nt)
                      for f in range(len(original["train"].columns)))
    if keep == "first":
        dd = dedup_first_fields(units, threshold, nt, progress, measure=measure)
    else:
        dd = dedup(units, threshold=threshold, measure=measure, n_threads=nt,
                   progress=progress)
    kept_idx = np.flatnonzero(dd.keep)
    removed_idx = np.flatnonzero(~dd.keep)
    pair_scores = (ratio(tuple(u.take(removed_idx) for u in units),
                         tuple(u.take(dd.kept_for[removed_idx]) for u in units),
                         measure=measure, n_threads=nt)
                   if removed_idx.size else np.zeros(0))
    removed_units = []
    for i, sc in zip(removed_idx.tolist(), pair_scores.tolist()):
        j = int(dd.kept_for[i])
        si, sj = names[origin[i]], names[origin[j]]
        removed_units.append({
            "split": si, "index": int(local[i]), "kept_split": sj, "kept_for": int(local[j]),
            "score": sc, "text": unit_text(kind, original[si], int(local[i])),
            "kept_text": unit_text(kind, original[sj], int(local[j])),
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
                 valid_size=valid_size, seed=seed, measure=measure, n_threads=nt,
                 progress=progress)
    new_pos = {k: kept_idx[idx] for k, idx in rs.as_dict().items()}  # pooled indices
    moved = _moved_rows(kind, original, names, origin, new_pos)
    timed("resplit", t0)

    t0 = time.perf_counter()
    new_dialogues: dict = {}
    new_tables: dict = {}
    if kind == "dialogue":
        say(f"flatten: samples with {turns} context turn(s)")
        pooled = [d for k in names for d in original[k].units]
        new_dialogues = {k: [pooled[i] for i in pos.tolist()] for k, pos in new_pos.items()}
        flat = flatten(new_dialogues, turns)
        new_fields: dict[str, tuple[list, ...]] = {
            k: (s.context, s.response) for k, s in flat.items()}
    else:
        pooled_cols = list(dict.fromkeys(c for k in names for c in original[k].units))
        pooled_table = {c: [v for k in names
                            for v in original[k].units.get(c, [None] * original[k].n)]
                        for c in pooled_cols}
        new_tables = {k: take_rows(pooled_table, pos) for k, pos in new_pos.items()}
        fcols = range(len(original["train"].columns))
        pooled_fields = [[t for k in names for t in original[k].columns[f]] for f in fcols]
        new_fields = {k: tuple([col[i] for i in pos.tolist()] for col in pooled_fields)
                      for k, pos in new_pos.items()}
    timed("flatten", t0)

    t0 = time.perf_counter()
    say("remove: exact duplicate samples within splits and eval samples found in train")
    tok = {k: tokenize_fields(list(f), k, progress=progress, **opts)
           for k, f in new_fields.items()}
    masks, dup_counts = exact_duplicate_masks(tok, "train", nt)
    cleaned_fields = {k: tuple([t for t, m in zip(col, masks[k].tolist()) if m]
                               for col in f) for k, f in new_fields.items()}
    samples: dict = {}
    if kind == "dialogue":
        samples = {k: s.take(masks[k]) for k, s in flat.items()}
    else:
        new_tables = {k: take_rows(t, np.flatnonzero(masks[k])) for k, t in new_tables.items()}
    timed("remove", t0)

    t0 = time.perf_counter()
    say("scan: new eval splits against new train")
    after = {k: scan(list(cleaned_fields[k]), list(cleaned_fields["train"]), at=ts,
                     measure=measure, progress=progress, **opts)
             for k in ("valid", "test") if len(new_pos[k])}
    timed("scan_after", t0)

    report = CleanReport(
        settings=CleanSettings(threshold, keep, test_size, valid_size, turns, seed, ngram,
                               tokenizer if isinstance(tokenizer, str) else "callable", nt, ts,
                               measure=measure),
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
        moved=moved,
    )
    formats = {k: (sp.fmt if sp.fmt in EXT else "jsonl") for k, sp in original.items()}
    formats = {k: formats.get(k, formats["train"]) for k in SPLITS}
    result = CleanResult(kind, new_dialogues, new_tables, samples, before, after, dd, report,
                         formats)
    if outputs is not None and out is not None:
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
    def write_data(outs: Outputs, d: str) -> list[str]:
        files = []
        if result.unit == "dialogue":
            for k, dialogues in result.dialogues.items():
                p = os.path.join(d, SPLIT_FILE_NAMES[k])
                write_dialogues(outs.stage(p), dialogues)
                files.append(p)
            for k, s in result.samples.items():
                p = os.path.join(d, f"{k}.jsonl")
                write_table(outs.stage(p), {"context": s.context, "response": s.response,
                                            "dialogue": s.dialogue.tolist(),
                                            "turn": s.turn.tolist()}, "jsonl")
                files.append(p)
        else:
            for k, table in result.tables.items():
                f = result.formats.get(k, "jsonl")
                p = os.path.join(d, f"{k}.{EXT[f]}")
                write_table(outs.stage(p), table, f)
                files.append(p)
        return files

    return write_result_folder(
        out, result, CleanResult,
        lambda o: plan_clean_outputs(o, out, result.unit, result.formats), overwrite, outputs,
        write_data)
