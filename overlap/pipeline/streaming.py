"""Step 1 against a training corpus bigger than memory: :func:`scan_corpus`.

The eval table is read whole (it is small); the training corpus (a file or a
directory of shards) is streamed chunk by chunk through
:func:`overlap.stream.scan_stream`.  The result has the same summary (counts
``>=`` each threshold, per group) as :func:`overlap.pipeline.scan` on the same
data, and its per-sample table has the same columns plus where each match
lives: the shard file and the row in it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._progress import ProgressArg
from .._threads import effective_n_threads
from .._validation import check_int, check_measure, check_unit_interval, type_name
from ..stream import StreamScanResult, scan_stream
from .._lines import line_limit
from ..stream_readers import STREAM_FORMATS, shard_format, shard_paths
from ..tokensets import Tokenizer
from .report import AT, GroupedSummary, OverlapSummary, parse_thresholds, summarize, summarize_by
from .scanning import DEFAULT_TOKENIZER, Log, eval_table_head, is_table_source
from .tables import read_named_fields, row_labels

__all__ = ["CorpusScanResult", "scan_corpus", "STREAM_FORMATS"]


@dataclass(frozen=True)
class CorpusScanResult:
    """Max overlap of every eval sample against a streamed training corpus.

    Attributes
    ----------
    score : ndarray of float64, shape (n,)
        Best score under ``measure`` (minimum over fields); 0 when nothing
        scores ``min_score``.
    index : ndarray of int64, shape (n,)
        Global corpus row of the match (rows numbered over the shards in
        reading order; lowest on ties), -1 when there is none.
    summary : OverlapSummary
        Counts of scores ``>=`` each threshold.
    groups : GroupedSummary or None
        The summary per value of the ``by`` column, and overall.
    fields : tuple of str
        The compared fields.
    texts : tuple of lists of str
        The eval samples' compared texts, one list per field.
    table : dict of str to list or None
        Every column of the eval table.
    stream : StreamScanResult
        The raw streaming result: matched texts, shards, rows and bytes read.
    """

    score: np.ndarray
    index: np.ndarray
    summary: OverlapSummary
    groups: GroupedSummary | None
    fields: tuple
    texts: tuple
    table: dict | None
    stream: StreamScanResult
    labels: list | None = None
    measure: str = "dice"

    def __len__(self) -> int:
        return int(self.score.shape[0])

    @property
    def n_references(self) -> int:
        """Rows read from the corpus."""
        return self.stream.n_references

    def to_table(self) -> dict[str, list]:
        """One row per eval sample: its columns, score, where the match is, both texts.

        Columns: ``eval_index`` (the row's label for a DataFrame input, as in
        :meth:`overlap.pipeline.ScanResult.to_table`); every other column of the eval table;
        ``score``; ``train_index`` (the global corpus row, -1 when nothing
        matches); ``train_shard`` and ``train_shard_row`` (the file and the
        row in it, empty and -1 without a match); then ``eval_F`` and
        ``train_F`` for every field.  The columns shared with
        :meth:`overlap.pipeline.ScanResult.to_table` hold the same values as
        an in-memory scan of the same data.
        """
        idx = self.index.tolist()
        out = eval_table_head(self, {"train_index", "train_shard", "train_shard_row"}
                              | {f"train_{f}" for f in self.fields})
        out["train_index"] = idx
        where = [self.stream.locate(j) if j >= 0 else ("", -1) for j in idx]
        out["train_shard"] = [w[0] for w in where]
        out["train_shard_row"] = [w[1] for w in where]
        for f, ec in zip(self.fields, self.texts):
            out[f"eval_{f}"] = list(ec)
            out[f"train_{f}"] = ["" if m is None else m for m in self.stream.match[f]]
        return out


def scan_corpus(
    queries: Any,
    corpus: str | os.PathLike | Sequence,
    *,
    fields: Sequence[str] | str | None = None,
    at: Any = AT,
    by: str | Sequence | None = None,
    turns: int = 1,
    fmt: str | None = None,
    corpus_format: str | None = None,
    chunk_rows: int = 65536,
    min_score: float = 0.0,
    tokenizer: Tokenizer = DEFAULT_TOKENIZER,
    ngram: int = 1,
    measure: str = "dice",
    n_threads: int | None = None,
    progress: ProgressArg = False,
    log: Log | None = None,
    max_line_bytes: int | None = None,
) -> CorpusScanResult:
    """Step 1 with the training samples streamed from disk: bounded memory, exact result.

    Parameters
    ----------
    queries : table
        The eval samples, as in :func:`overlap.pipeline.scan`: a file path
        (CSV, TSV, JSONL, Parquet, DailyDialog text), a dict of columns, a
        pandas DataFrame or a ``datasets.Dataset``.
    corpus : path or sequence of paths
        The training corpus: a JSONL / CSV / TSV / Parquet / text file, a
        directory of such shards (read in sorted name order) or a list of
        files (see :func:`overlap.stream_readers.read_chunks`).
    fields : sequence of str or comma-separated str, optional
        The compared columns, present in both; default: inferred from the
        eval table as in :func:`overlap.pipeline.scan` (``text`` for a plain
        text or a ``text`` column, ``context,response`` for DailyDialog).
    at, by, turns, fmt
        As in :func:`overlap.pipeline.scan` (``fmt`` is the eval format).
        DailyDialog corpus shards are cut with one context turn.
    corpus_format : {"jsonl", "csv", "tsv", "parquet", "text", "dailydialog"}, optional
        Format of every corpus file; default from the file extensions (a
        ``.txt`` shard holding ``__eou__`` is DailyDialog).
    chunk_rows : int, default 65536
        Corpus rows held in memory at a time.
    min_score : float in [0, 1], default 0
        Best matches scoring below it are reported as score 0, no match
        (a contamination check at 0.5 or more also runs faster).
    tokenizer, ngram, measure, n_threads
        As in :func:`overlap.pipeline.scan`.
    progress : bool or callable f(bytes_done, bytes_total)
    log : callable, optional
        Receives one line of text as each step starts.
    max_line_bytes : int, optional
        Longest line of the eval file and of every corpus shard, after gzip
        inflation (default 64 MiB); a longer one is an error naming the file
        and the line.

    Returns
    -------
    CorpusScanResult
        Its scores and indices equal those of ``scan(queries, corpus_rows)``
        with every corpus row in memory.
    """
    ts = parse_thresholds(at)
    turns = check_int(turns, "turns", minimum=1)
    chunk_rows = check_int(chunk_rows, "chunk_rows", minimum=1)
    min_score = check_unit_interval(min_score, "min_score")
    check_measure(measure)
    if corpus_format is not None and corpus_format not in STREAM_FORMATS:
        raise ValueError(f"corpus_format must be one of {', '.join(STREAM_FORMATS)}, "
                         f"got {corpus_format!r}")
    if log is not None and not callable(log):
        raise TypeError(f"log must be callable or None, got {type_name(log)}")
    if not is_table_source(queries):
        raise TypeError("queries must be a table (a file path, a dict of columns, a "
                        f"DataFrame or a datasets.Dataset), got {type_name(queries)}")
    say = log or (lambda _msg: None)
    nt = effective_n_threads(n_threads)
    shards = shard_paths(corpus, corpus_format)  # checks the corpus before any reading
    if turns != 1 and any(shard_format(p, corpus_format) == "dailydialog" for p in shards):
        raise ValueError("turns: DailyDialog corpus shards are streamed with one context "
                         "turn; scan them with --train (scan) for --turns "
                         f"{turns}")
    say("read: eval")
    names, cols, table = read_named_fields(queries, fields, fmt, turns=turns,
                                           max_line_bytes=max_line_bytes)
    group_values = None
    if by is not None:
        if isinstance(by, str):
            if by not in table:
                raise ValueError(f"by: no column {by!r} in the eval table "
                                 f"(columns: {', '.join(table)})")
            group_values, by_name = table[by], by
        else:
            group_values, by_name = by, "group"
        if len(group_values) != len(cols[0]):
            raise ValueError(f"by has {len(group_values)} values but there are "
                             f"{len(cols[0])} eval samples")
    source = os.fspath(corpus) if isinstance(corpus, (str, os.PathLike)) else shards
    say(f"scan: {len(cols[0]):,} eval samples against {_describe(corpus, shards)}, "
        f"{chunk_rows:,} row{'' if chunk_rows == 1 else 's'} at a time")
    with line_limit(max_line_bytes):
        res = scan_stream(dict(zip(names, cols)), source, fields=names, fmt=corpus_format,
                          tokenizer=tokenizer, ngram=ngram, chunk_rows=chunk_rows,
                          min_score=min_score, measure=measure, n_threads=nt,
                          progress=progress)
    score = np.ascontiguousarray(res.score, dtype=np.float64)
    index = np.ascontiguousarray(res.index, dtype=np.int64)
    groups = (summarize_by(score, group_values, by_name, ts)
              if group_values is not None else None)
    return CorpusScanResult(score, index, summarize(score, ts), groups, tuple(names),
                            tuple(cols), table, res, row_labels(queries), measure)


def _describe(corpus: Any, shards: list[str]) -> str:
    n = len(shards)
    what = os.fspath(corpus) if isinstance(corpus, (str, os.PathLike)) else "the corpus"
    return what if n == 1 and what == shards[0] else f"{what} ({n:,} shard file(s))"
