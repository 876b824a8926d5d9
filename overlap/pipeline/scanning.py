"""Step 1 of the pipeline: every eval sample's best match against train, or within one set.

:func:`scan` reads tables (files of any supported format, dicts of columns,
DataFrames, ``datasets.Dataset``) or takes text fields and TokenSets; its
:class:`ScanResult` carries the scores, the summary at thresholds (``>=``),
the summary per group, and every input column for the per-sample output.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Union

import numpy as np

from .._columns import ArrowColumn, as_list, take, texts_of
from .._progress import ProgressArg, check_progress, make_progress
from .._threads import effective_n_threads
from .._validation import check_int, check_measure, type_name
from .._fields import Handover, as_fields
from ..search import max_overlap, max_overlap_handed
from ..tokensets import Tokenizer, TokenSets
from .dialogue import Samples
from .report import AT, GroupedSummary, OverlapSummary, parse_thresholds, summarize, summarize_by
from .reread import FileStamp, TableAgain, held_by_arrow
from .tables import read_named_columns, row_labels

#: Default tokenizer of the pipeline and the command line: ``"wordpunct"`` on
#: text without CJK, kana or Hangul (token for token), and one token per such
#: character, so Chinese and Japanese text is not one giant token per sentence
#: (docs/tokenizers.md).  ``overlap.TokenSets.from_texts`` keeps ``"wordpunct"``.
DEFAULT_TOKENIZER = "intl"

__all__ = ["ScanResult", "scan", "tokenize_fields", "TextFields", "Log",
           "DEFAULT_TOKENIZER"]

TextFields = Union[Samples, Sequence[Sequence[str]], TokenSets, Sequence[TokenSets]]
Log = Callable[[str], Any]


# ---------------------------------------------------------------- tokenizing
def tokenize_fields(
    data: TextFields,
    name: str = "data",
    *,
    tokenizer: Tokenizer = DEFAULT_TOKENIZER,
    ngram: int = 1,
    n_threads: int | None = None,
    progress: ProgressArg = False,
) -> tuple:
    """Token sets of every field of ``data``.

    Parameters
    ----------
    data : Samples, sequence of text columns, TokenSets or sequence of TokenSets
        :class:`~overlap.pipeline.dialogue.Samples` give two fields (context, response).
        A sequence of str is one field; a sequence of equally long sequences of
        str is one field per column.  TokenSets pass through unchanged.
    name : str
        Argument name for error messages.
    tokenizer, ngram, n_threads
        As in :meth:`TokenSets.from_texts`.
    progress : bool or callable f(done, total), default False
        Texts tokenized so far over all the fields (``total`` is the number of
        fields times the number of rows), reported as
        :meth:`TokenSets.from_texts` reports it; nothing for TokenSets.

    Returns
    -------
    tuple of TokenSets
    """
    check_progress(progress)
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
    if not progress:
        return tuple(
            TokenSets.from_texts(texts_of(col), tokenizer, ngram, n_threads=n_threads)
            for col in columns
        )
    # one bar over all the fields: each field's from_texts reports its own texts
    bar = make_progress(progress, sum(len(c) for c in columns), "tokenize", unit="text")
    seen = [0]

    def field_done(done: int, _total: int) -> None:
        bar.update(done - seen[0])
        seen[0] = done

    out = []
    try:
        for col in columns:
            seen[0] = 0
            out.append(TokenSets.from_texts(texts_of(col), tokenizer, ngram,
                                            n_threads=n_threads, progress=field_done))
    finally:
        bar.close()
    return tuple(out)


# --------------------------------------------------------------------- scan
_TABLE_LIKE = (str, os.PathLike, Mapping)


def is_table_source(x: Any) -> bool:
    """A file path, a mapping of columns, a pandas or a datasets table (not samples)."""
    if isinstance(x, _TABLE_LIKE):
        return True
    mod = type(x).__module__.split(".")[0]
    return mod in ("pandas", "datasets")


def _read_source(source: Any, name: str, fields: Any, fmt: str | None, turns: int,
                 max_line_bytes: int | None = None, progress: ProgressArg = False,
                 arrow: bool = False
                 ) -> tuple[list, dict | None, list[str] | None, list | None]:
    """(text columns, whole table or None, field names or None, row labels or None);
    ``arrow``: a file's columns may stay in Arrow buffers (``read_named_columns``)."""
    if not is_table_source(source):
        return source, None, None, None
    names, cols, table = read_named_columns(source, fields, fmt, turns=turns,
                                            max_line_bytes=max_line_bytes, progress=progress,
                                            arrow=arrow)
    return cols, table, names, row_labels(source)


@dataclass(frozen=True)
class ScanResult:
    """Max overlap of every eval sample against train (or against the rest of its file).

    Attributes
    ----------
    score : ndarray of float64, shape (n,)
        Best score under ``measure`` (minimum over fields).
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
    labels, train_labels : list or None
        The row labels of a pandas DataFrame input (its index) or of a
        filtered ``datasets.Dataset`` (row numbers in its parent); None when
        the rows are numbered 0..n-1.
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
    labels: list | None = None
    train_labels: list | None = None
    index_name: Any = None
    measure: str = "dice"

    def __len__(self) -> int:
        return int(self.score.shape[0])

    def to_pandas(self, input_columns: bool = False) -> Any:
        """The per-sample result as a pandas DataFrame indexed like the eval input.

        The index is the eval DataFrame's own index (or a filtered Dataset's
        row numbers; 0..n-1 for other inputs), so ``df.join(res.to_pandas())``
        puts every score on its row, also for a filtered or shuffled ``df``.

        Parameters
        ----------
        input_columns : bool, default False
            False: only the result columns (``score``, ``train_index`` /
            ``match_index`` (positions), ``train_label`` / ``match_label`` when
            the train rows had labels, the match's texts and other train
            columns), ready to ``join``.  True: every column of
            :meth:`to_table` but ``eval_index``.
        """
        from .._optional import require

        pd = require("pandas", "dataframe", "to_pandas()")
        table = self.to_table()
        index = pd.Index(table.pop("eval_index"), name=self.index_name)
        if not input_columns:
            drop = set(self.table or ()) | {f"eval_{f}" for f in self.fields}
            keep = {"score", "train_index", "match_index"}
            table = {k: v for k, v in table.items() if k in keep or k not in drop}
        return pd.DataFrame(table, index=index)

    def to_table(self) -> dict[str, list]:
        """One row per eval sample: its columns, score, match index and both texts.

        Columns: ``eval_index`` (the row's label in a DataFrame or filtered
        Dataset input, else its position); every other column of the eval
        table (ids, labels, language...); ``score``; ``train_index``
        (``match_index`` for an all-vs-rest scan), the match's position, -1
        when nothing overlaps; ``train_label`` (``match_label``), the match's
        label, when the train input had labels (None when nothing overlaps);
        ``eval_F`` and ``train_F`` (``match_F``) for every field, the match's
        text empty when there is none; and ``train_C`` for every other column
        of the train table.
        """
        other = "match" if self.within else "train"
        idx = self.index.tolist()
        out = eval_table_head(self, {f"{other}_index"} | {f"{other}_{f}" for f in self.fields})
        compared = set(self.fields)
        out[f"{other}_index"] = idx
        tl = self.labels if self.within else self.train_labels
        if tl is not None and f"{other}_label" not in out:
            out[f"{other}_label"] = [tl[j] if j >= 0 else None for j in idx]
        for f, ec, tc in zip(self.fields, self.texts, self.train_texts):
            out[f"eval_{f}"] = _column_copy(ec)
            out[f"{other}_{f}"] = take(tc, idx, "")
        if self.train_table is not None and not self.within:
            for c, v in self.train_table.items():
                name = f"train_{c}"
                if c not in compared and name not in out:
                    out[name] = take(v, idx, None)
        return out


def _column_copy(col: Any) -> Any:
    """A list copy of a column; an ArrowColumn (read-only) is shared as it is."""
    return col if isinstance(col, ArrowColumn) else list(col)


def eval_table_head(result: Any, theirs: set[str]) -> dict[str, Any]:
    """The first columns of a scan result's table (``to_table``): ``eval_index``,
    the eval table's other columns (``eval_C`` when ``C`` is also a result
    column: ``theirs``, ``score`` or ``eval_<field>``) and ``score``."""
    out: dict[str, Any] = {
        "eval_index": (list(result.labels) if result.labels is not None
                       else list(range(len(result))))}
    compared = set(result.fields)
    own = {"eval_index", "score"} | theirs | {f"eval_{f}" for f in result.fields}
    if result.table is not None:
        for c, v in result.table.items():
            if c not in compared:
                out[c if c not in own else f"eval_{c}"] = _column_copy(v)
    out["score"] = result.score.tolist()
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
    tokenizer: Tokenizer = DEFAULT_TOKENIZER,
    ngram: int = 1,
    measure: str = "dice",
    n_threads: int | None = None,
    progress: ProgressArg = False,
    log: Log | None = None,
    max_line_bytes: int | None = None,
    read_progress: ProgressArg = False,
    _arrow: bool = False,
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
        Compared columns of table inputs; default: ``context`` and
        ``response`` when the table has both, else ``text``, else its one
        text-like column (:func:`overlap.pipeline.tables.infer_fields`; with
        several, a ValueError lists them).
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
        The default tokenizer here is ``"intl"`` (:data:`DEFAULT_TOKENIZER`):
        ``"wordpunct"`` token for token on text without CJK, kana or Hangul.
    measure : {"dice", "jaccard", "cosine", "overlap", "containment"}, default "dice"
        The score of two samples (docs/measures.md); ``"containment"`` is how
        much of the eval sample lies inside the train sample (without train:
        inside the other sample).
    n_threads : int or None
    progress : bool or callable f(done, total)
        Samples tokenized, then samples searched (a new total starts each step).
    log : callable, optional
        Receives one line of text as each step (read, tokenize, search) starts.
    max_line_bytes : int, optional
        Longest line of a file input (default 64 MiB).
    read_progress : bool or callable f(bytes_read, file_size), default False
        Progress of reading each file input.
    _arrow : bool, default False
        The command line's memory saving: the columns of JSONL and text files
        read by pyarrow stay in Arrow buffers, also in the result's ``texts``
        and tables (read-only sequences of the same values; ``to_table`` then
        holds such columns too).  For the writers of ``overlap.pipeline.tables``.

    Returns
    -------
    ScanResult
        For a DataFrame input, ``to_pandas()`` is indexed by its index.
    """
    ts = parse_thresholds(at)
    turns = check_int(turns, "turns", minimum=1)
    check_measure(measure)
    if log is not None and not callable(log):
        raise TypeError(f"log must be callable or None, got {type_name(log)}")
    say = log or (lambda _msg: None)
    check_progress(progress)
    check_progress(read_progress)
    nt = effective_n_threads(n_threads)
    say("read: " + ("eval" if train is None else "train and eval"))
    rlabels = None
    # (the command line) a train file's Arrow columns go during the search
    # and are read again for the matches' texts: taken before the first read
    rstamp = (FileStamp(train) if _arrow and isinstance(train, (str, os.PathLike))
              and os.path.isfile(train) else None)
    if train is not None:
        rcols, rtable, rnames, rlabels = _read_source(train, "train", fields, fmt, turns,
                                                      max_line_bytes, read_progress, _arrow)
    qcols, qtable, qnames, qlabels = _read_source(queries, "queries", fields, fmt, turns,
                                                  max_line_bytes, read_progress, _arrow)
    if train is not None and fields is None and rnames and qnames and rnames != qnames:
        raise ValueError(f"eval compares {', '.join(qnames)} but train {', '.join(rnames)} "
                         "(inferred); name the compared columns with --fields (fields=)")
    group_values: Any = None
    if by is not None:
        if isinstance(by, str):
            if qtable is None:
                raise ValueError(f"by={by!r} names a column, but queries is not a table")
            if by not in qtable:
                raise ValueError(f"by: no column {by!r} in the eval table "
                                 f"(columns: {', '.join(qtable)})")
            group_values, by_name = as_list(qtable[by]), by
        else:
            group_values, by_name = by, "group"
    say("tokenize: eval" + ("" if train is None else " and train"))
    q = tokenize_fields(qcols, "queries", tokenizer=tokenizer, ngram=ngram, n_threads=nt,
                        progress=progress)
    names = tuple(qnames) if qnames else _field_names(qcols, len(q))
    texts = _texts_of(qcols)
    if train is None:
        r, rtexts, rtable = q, texts, None
    else:
        r = tokenize_fields(rcols, "train", tokenizer=tokenizer, ngram=ngram, n_threads=nt,
                            progress=progress)
        rtexts = _texts_of(rcols)
        if len(q) != len(r):
            raise ValueError(f"queries has {len(q)} field(s) but train has {len(r)}; "
                             "they must have the same fields")
    again = None
    if rstamp is not None and rtable is not None and held_by_arrow(rtable):
        again = TableAgain(rstamp, fields, fmt, len(r[0]), turns=turns,
                           max_line_bytes=max_line_bytes)
        del rcols, rtable, rtexts
        again.let_go()
    n = len(q[0])
    if group_values is not None and len(group_values) != n:
        raise ValueError(f"by has {len(group_values)} values but there are {n} eval samples")
    say("scan: " + ("each sample against the rest" if train is None
                      else f"{n:,} eval against {len(r[0]):,} train samples"))
    if len(r[0]) == 0 or (train is None and n < 2):
        score, index = np.zeros(n), np.full(n, -1, dtype=np.int64)
    elif train is not None and _arrow:
        # (the command line) the train token sets are handed over: where the
        # bit-sliced kernel serves, their hashes go once it numbered the tokens
        held = Handover(as_fields(r, "train"))
        del r
        score, index = max_overlap_handed(as_fields(q, "queries"), held, measure=measure,
                                          n_threads=nt, progress=progress)
    else:
        score, index = max_overlap(q, None if train is None else r, measure=measure,
                                   n_threads=nt, progress=progress)
    if again is not None:  # part of the scan step (the same steps with either reader)
        _, rcols, rtable = again.read()
        rtexts = _texts_of(rcols)
    groups = (summarize_by(score, group_values, by_name, ts)
              if group_values is not None else None)
    return ScanResult(score, index, summarize(score, ts), groups, names, texts, rtexts,
                      qtable, rtable, train is None, qlabels,
                      qlabels if train is None else rlabels,
                      getattr(getattr(queries, "index", None), "name", None)
                      if qlabels is not None and not isinstance(queries, Mapping) else None,
                      measure)


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
