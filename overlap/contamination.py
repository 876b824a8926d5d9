"""N-gram contamination of an eval set by a corpus (SPEC: "N-gram membership").

For every eval sample and every requested ``n``: how many of its n-grams
occur anywhere in the corpus, that number over all its n-grams, the longest
run of consecutive sample tokens covered by found n-grams, the share of its
tokens so covered, and the first corpus row that holds one of them.  Labels
by published rules (:data:`RULES`) are built on those numbers.

Definitions
-----------
The token stream of a text is the tokenizer preset's tokens in text order
(the hashes of :meth:`overlap.TokenSets.from_texts`, before any set is
made).  The n-grams of a sample of ``L`` tokens are its ``L - n + 1`` runs of
``n`` consecutive tokens, counted with repeats (a sample that says the same
n-gram twice has two n-grams, both found or both not).  A sample shorter than
``n`` (``0 < L < n``) has one n-gram: its whole stream.  A sample with no
token has none: 0 n-grams, fraction 0, coverage 0, never contaminated (the
report's ``n_tokens`` column says which samples these are).  An n-gram is
*found* when its tokens occur consecutively in at least one corpus row;
n-grams never cross rows.

Exactness
---------
Token hashes are 64-bit (``overlap.TokenSets``); an n-gram's key is a fixed
function of its token hashes in order (``overlap._kernels._ngram_table``).  A
key match counts only after the corpus row's token hashes are compared with
the eval n-gram's, so two n-grams whose keys collide are never confused.
What remains is the tokenizer's own bound: two distinct tokens with equal
64-bit hashes would be taken for one token (for ``m`` distinct tokens the
chance is about ``m**2 / 2**65``: below 1e-8 for 10 million distinct tokens).

Memory and time
---------------
The eval side is held once: its token stream, a table of its distinct
n-grams (50 to 90 bytes per eval n-gram, every requested ``n`` together),
their first corpus rows (8 bytes each), each sample's first row and text, and while a chunk is probed, per thread a bit per
distinct n-gram and 16 bytes for each n-gram it finds first.  The corpus is read one chunk at a
time (``chunk_rows`` rows; a thread reads and tokenizes the next chunk while
this one is probed, so two chunks are held at most), and every position of
every row is looked up for every n-gram length in the table (the requested ``n`` and the
lengths of shorter samples) in one pass, on ``n_threads`` OpenMP threads.
The result does not depend on the thread count, the chunk size or how the
corpus is cut into shards: each n-gram keeps the lowest corpus row found.
"""

from __future__ import annotations

import numbers
import os
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import _texts, _tokenize
from ._batches import ENGINES
from ._kernels._ngram_table import NOT_FOUND, NgramTable
from ._prefetch import Prefetch
from ._progress import ProgressArg, check_progress, make_progress
from ._threads import effective_n_threads
from ._validation import check_int, check_seed, check_texts, exact_str, type_name
from .stream_readers import Chunk, read_chunks, source_size
from .tokensets import TOKENIZERS, Tokenizer

__all__ = [
    "RULES",
    "Rule",
    "MAX_NGRAM",
    "NgramStats",
    "ContaminationResult",
    "ContaminationScanner",
    "ScanState",
    "contamination",
    "resolve_ngrams",
]

#: Longest n accepted.
MAX_NGRAM = 1024

#: ANDed into every n-gram key; all ones in use.  A test narrows it to make keys
#: collide on purpose and checks that results do not change.
KEY_MASK = (1 << 64) - 1

#: Code points tokenized by one kernel call (Ctrl-C gets through between calls).
TEXT_CHUNK = 1 << 24

_MODE_WHOLE = 3


# ------------------------------------------------------------------- rules
@dataclass(frozen=True)
class Rule:
    """A published contamination rule: its n, how it labels, where it comes from.

    Attributes
    ----------
    name : str
    n : int
        The n-gram length the rule fixes.
    labels : tuple of str
        The labels it gives; the first is "contaminated".
    definition : str
    source : str
    """

    name: str
    n: int
    labels: tuple
    definition: str
    source: str

    def label(self, stats: NgramStats, n_tokens: np.ndarray) -> np.ndarray:
        """The label of every sample from the statistics of the rule's n."""
        out = np.full(n_tokens.shape[0], "clean", dtype=object)
        if self.name == "any":
            out[stats.n_found > 0] = "dirty"
        elif self.name == "palm":
            # >= 70 %, in integers: 10 * found >= 7 * total (never for 0 n-grams)
            out[(stats.n_ngrams > 0) & (10 * stats.n_found >= 7 * stats.n_ngrams)] = "dirty"
        elif self.name == "llama2":
            # clean below 20 %, dirty at 80 % or more, in integers; neither between
            out[(n_tokens > 0) & (5 * stats.covered >= n_tokens)] = "neither"
            out[(n_tokens > 0) & (5 * stats.covered >= 4 * n_tokens)] = "dirty"
        else:  # pragma: no cover - RULES holds only the names above
            raise ValueError(f"unknown rule {self.name!r}")
        return out


#: The rules by name.  Each fixes its own n; :func:`contamination` computes
#: every n they need in one pass.  docs/contamination.md compares them.
RULES = {
    "any": Rule(
        "any", 13, ("dirty", "clean"),
        "dirty when at least one of the sample's 13-grams occurs in the corpus",
        "GPT-3 (Brown et al. 2020, appendix C) and EleutherAI lm-evaluation-harness "
        "decontamination: 13-gram collisions"),
    "palm": Rule(
        "palm", 8, ("dirty", "clean"),
        "dirty when at least 70 % of the sample's 8-grams occur in the corpus",
        "PaLM (Chowdhery et al. 2022, section 8: contaminated when >= 70 % of its "
        "8-grams were seen at least once in training)"),
    "llama2": Rule(
        "llama2", 11, ("dirty", "neither", "clean"),
        "token coverage by found 11-grams (= by found n-grams longer than 10 tokens): "
        "dirty at >= 80 %, clean below 20 %, neither between",
        "Llama 2 (Touvron et al. 2023, appendix A.6), without its skip-gram budget of "
        "four mismatched tokens and with this library's tokenizer, not Llama's"),
}


def resolve_ngrams(ngram: Any, rules: Any) -> tuple[tuple[int, ...], tuple[str, ...]]:
    """The n's to compute (ascending) and the rule names, checked.

    ``ngram``: None, an int or a sequence of ints; ``rules``: None, a name or
    a sequence of names.  With neither, the rule ``"any"`` (n = 13).
    """
    if rules is None:
        names: list[str] = []
    elif isinstance(rules, str):
        names = [rules]
    elif isinstance(rules, Sequence):
        names = list(rules)
    else:
        raise TypeError(f"rules must be a rule name or a list of names, got {type_name(rules)}")
    for r in names:
        if not isinstance(r, str) or r not in RULES:
            raise ValueError(f"rules: unknown rule {r!r} (known: {', '.join(RULES)})")
    names = list(dict.fromkeys(names))
    if ngram is None:
        ns: list[int] = []
    elif isinstance(ngram, numbers.Integral) and not isinstance(ngram, bool):
        ns = [ngram]
    elif isinstance(ngram, Sequence) and not isinstance(ngram, (str, bytes)):
        ns = list(ngram)
        if not ns:
            raise ValueError("ngram must hold at least one n")
    else:
        raise TypeError(f"ngram must be an int or a list of ints, got {type_name(ngram)}")
    ns = [check_int(n, "ngram", minimum=1, maximum=MAX_NGRAM) for n in ns]
    if not ns and not names:
        names = ["any"]
    all_n = sorted(set(ns) | {RULES[r].n for r in names})
    return tuple(all_n), tuple(names)


# ---------------------------------------------------------------- tokens
def _check_tokenizer(tokenizer: Any) -> None:
    if isinstance(tokenizer, str):
        if tokenizer not in TOKENIZERS:
            raise ValueError(f"tokenizer must be one of {sorted(TOKENIZERS)} or a callable, "
                             f"got {tokenizer!r}")
    elif not callable(tokenizer):
        raise TypeError(f"tokenizer must be a preset name or a callable, got "
                        f"{type_name(tokenizer)}")


def _concat(parts: list) -> tuple[np.ndarray, np.ndarray]:
    if len(parts) == 1:
        return parts[0]
    lens = np.concatenate([np.diff(ip) for ip, _ in parts])
    indptr = np.zeros(lens.shape[0] + 1, dtype=np.int64)
    np.cumsum(lens, out=indptr[1:])
    return indptr, np.concatenate([h for _, h in parts])


def utf8_buffers(items: list[str]) -> tuple[np.ndarray, np.ndarray] | None:
    """``(offsets, data)``: the UTF-8 bytes of every str laid end to end, as an
    Arrow string column holds them; None when a str does not encode (a lone
    surrogate: the str scan takes those, as ``TokenSets.from_texts`` does)."""
    total = sum(map(len, items))
    try:
        data = "".join(items).encode("utf-8")
    except UnicodeEncodeError:
        return None
    if len(data) == total:  # every text ASCII: one byte a code point
        lens = np.fromiter(map(len, items), dtype=np.int64, count=len(items))
    else:
        lens = np.fromiter((len(s) if s.isascii() else len(s.encode("utf-8")) for s in items),
                           dtype=np.int64, count=len(items))
    offsets = np.zeros(len(items) + 1, dtype=np.int64)
    np.cumsum(lens, out=offsets[1:])
    return offsets, np.frombuffer(data, dtype=np.uint8)


def token_streams(texts: Any, tokenizer: Tokenizer, seed: int, n_threads: int,
                  name: str = "texts", checked: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """``(indptr, hashes)``: every text's token hashes in text order.

    The hashes of :meth:`overlap.TokenSets.from_texts` with the same tokenizer
    and seed (before n-grams, sorting and de-duplication).  ``texts``: a
    sequence of str or an Arrow string column; ``checked``: a list that
    ``check_texts`` returned (not checked again).
    """
    col = None if checked else _texts.arrow_column(texts, name)
    if col is not None and isinstance(tokenizer, str):
        parts = []
        for base, offsets, data in _texts.pieces(col, TEXT_CHUNK):
            ip, h, _ = _tokenize.scan_utf8(offsets, data, TOKENIZERS[tokenizer], seed, 1,
                                           False, n_threads, name, base, True)
            parts.append((ip, h))
        return _concat(parts)
    items = texts if checked else check_texts(col.to_pylist() if col is not None else texts,
                                              name)
    if isinstance(tokenizer, str):
        mode = TOKENIZERS[tokenizer]
        parts = []
        a, n = 0, len(items)
        # slices of about TEXT_CHUNK code points: the tokenizer's scratch is 8
        # bytes per byte of a slice, and Ctrl-C gets through between slices
        while a < n or not parts:
            b, size = a, 0
            while b < n and (size == 0 or size + len(items[b]) <= TEXT_CHUNK):
                size += len(items[b])
                b += 1
            buffers = utf8_buffers(items[a:b])
            if buffers is not None:  # the bytes path: several times faster than the str scan
                ip, h, _ = _tokenize.scan_utf8(buffers[0], buffers[1], mode, seed, 1, False,
                                               n_threads, name, a, True)
                parts.append((ip, h))
            else:
                lowered = [str.lower(t) for t in items[a:b]]
                parts.append(_tokenize.scan_texts(lowered, mode, seed, n_threads))
            a = b
        return _concat(parts)
    tokens: list[str] = []
    lengths = np.empty(len(items), dtype=np.int64)
    for i, text in enumerate(items):
        toks = tokenizer(text)
        if isinstance(toks, str) or not isinstance(toks, Sequence):
            raise TypeError(f"tokenizer must return a list of str; for {name}[{i}] it "
                            f"returned {type_name(toks)}")
        toks = list(toks)
        for j, t in enumerate(toks):
            if type(t) is not str:
                if not isinstance(t, str):
                    raise TypeError(f"tokenizer returned a {type_name(t)} token for "
                                    f"{name}[{i}]; tokens must be str")
                toks[j] = exact_str(t)
        tokens.extend(toks)
        lengths[i] = len(toks)
    _, raw = _tokenize.scan_texts(tokens, _MODE_WHOLE, seed, n_threads)
    indptr = np.zeros(len(items) + 1, dtype=np.int64)
    np.cumsum(lengths, out=indptr[1:])
    return indptr, raw


# ---------------------------------------------------------------- results
@dataclass(frozen=True)
class NgramStats:
    """Membership of every eval sample's n-grams for one n.

    Attributes
    ----------
    n : int
    n_ngrams : ndarray of int64
        The sample's n-grams: ``max(L - n + 1, 1)`` for ``L > 0`` tokens, 0 for none.
    n_found : ndarray of int64
        Those that occur in at least one corpus row.
    fraction : ndarray of float64
        ``n_found / n_ngrams`` (0 for a sample with no token).
    longest_run : ndarray of int64
        Longest run of consecutive sample tokens covered by found n-grams.
    covered : ndarray of int64
        Tokens covered by at least one found n-gram.
    coverage : ndarray of float64
        ``covered / n_tokens`` (0 for a sample with no token).
    first_row : ndarray of int64
        Lowest global corpus row holding one of the sample's n-grams, -1 if none.
    """

    n: int
    n_ngrams: np.ndarray
    n_found: np.ndarray
    fraction: np.ndarray
    longest_run: np.ndarray
    covered: np.ndarray
    coverage: np.ndarray
    first_row: np.ndarray


@dataclass
class ContaminationResult:
    """N-gram membership of every eval sample in a corpus.

    Attributes
    ----------
    n_tokens : ndarray of int64
        Tokens of every eval sample.
    stats : dict of int to NgramStats
        One entry per n computed.
    labels : dict of str to ndarray of str
        For every rule asked for, the label of every sample (see :data:`RULES`).
    rules : tuple of str
    match : dict of int to list
        For every n, the text of each sample's first matching corpus row
        (``None`` where there is none, or when texts were not kept).
    groups : list or None
        The group label of every sample, when given.
    shards : list of (path, first_row, n_rows)
        Where each global row number comes from (``"<memory>"`` for texts given in memory).
    n_rows, nbytes : int
        Corpus rows and bytes read.
    seconds : float
    """

    n_tokens: np.ndarray
    stats: dict
    labels: dict
    rules: tuple
    match: dict
    groups: list | None = None
    shards: list = field(default_factory=list)
    n_rows: int = 0
    nbytes: int = 0
    seconds: float = 0.0

    def __len__(self) -> int:
        return int(self.n_tokens.shape[0])

    def locate(self, row: int) -> tuple[str, int]:
        """``(shard path, row within the shard)`` of a global corpus row."""
        for path, first, n in self.shards:
            if first <= row < first + n:
                return path, row - first
        raise IndexError(f"row {row} is not in the corpus ({self.n_rows} rows)")

    def contaminated(self, rule: str) -> np.ndarray:
        """Boolean mask: the samples a rule labels ``"dirty"``."""
        if rule not in self.labels:
            raise ValueError(f"rule {rule!r} was not computed (have: {', '.join(self.labels)})")
        return self.labels[rule] == "dirty"

    def summary(self) -> list[dict]:
        """Per group (in first-seen order, labels as str) and ``"overall"`` (in
        parentheses if a group has that name): samples, for every n
        the samples with a found n-gram (``found_N``), and for every rule the
        contaminated (``dirty``) count and percentage (``RULE_dirty``, ``RULE_pct``)."""
        n = len(self)
        parts: list[tuple[str, np.ndarray]] = []
        if self.groups is not None:
            names = [str(x) for x in self.groups]
            g = np.array(names, dtype=object)
            parts = [(k, g == k) for k in dict.fromkeys(names)]
        # the overall row's name never collides with a group's
        overall = "overall"
        while any(k == overall for k, _ in parts):
            overall = f"({overall})"
        parts.append((overall, np.ones(n, dtype=bool)))
        rows = []
        for name, mask in parts:
            m = int(mask.sum())
            row: dict[str, Any] = {"group": name, "samples": m}
            for k, st in self.stats.items():
                row[f"found_{k}"] = int((st.n_found[mask] > 0).sum())
            for r in self.rules:
                d = int((self.labels[r][mask] == "dirty").sum())
                row[f"{r}_dirty"] = d
                row[f"{r}_pct"] = round(100.0 * d / m, 2) if m else 0.0
            rows.append(row)
        return rows

    def to_table(self, group_name: str = "group") -> dict[str, list]:
        """One row per eval sample: group, index, tokens, per n the counts, fraction,
        longest run, coverage, first matching row (global, shard, row in shard) and
        its text; per rule the label."""
        n = len(self)
        t: dict[str, list] = {}
        if self.groups is not None:
            t[group_name] = list(self.groups)
        t["sample"] = list(range(n))
        t["n_tokens"] = self.n_tokens.tolist()
        for k, s in self.stats.items():
            t[f"ngrams_{k}"] = s.n_ngrams.tolist()
            t[f"found_{k}"] = s.n_found.tolist()
            t[f"fraction_{k}"] = [round(x, 6) for x in s.fraction.tolist()]
            t[f"longest_run_{k}"] = s.longest_run.tolist()
            t[f"coverage_{k}"] = [round(x, 6) for x in s.coverage.tolist()]
            rows = s.first_row.tolist()
            t[f"first_row_{k}"] = rows
            where = [self.locate(r) if r >= 0 else ("", -1) for r in rows]
            t[f"shard_{k}"] = [w[0] for w in where]
            t[f"shard_row_{k}"] = [w[1] for w in where]
            t[f"match_{k}"] = ["" if x is None else x for x in self.match[k]]
        for r in self.rules:
            t[f"label_{r}"] = self.labels[r].tolist()
        return t


def _per_sample(indptr: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """n-grams per sample and their offsets (the order :meth:`NgramTable.add` uses)."""
    lens = np.diff(indptr)
    counts = np.where(lens >= n, lens - n + 1, np.minimum(lens, 1))
    ptr = np.zeros(lens.shape[0] + 1, dtype=np.int64)
    np.cumsum(counts, out=ptr[1:])
    return counts, ptr


def _segment_min(values: np.ndarray, ptr: np.ndarray, empty: int) -> np.ndarray:
    out = np.full(ptr.shape[0] - 1, empty, dtype=np.int64)
    nz = np.flatnonzero(np.diff(ptr) > 0)
    if nz.shape[0]:
        out[nz] = np.minimum.reduceat(values, ptr[nz])
    return out


def _coverage(indptr: np.ndarray, counts: np.ndarray, ptr: np.ndarray, found: np.ndarray,
              n: int) -> tuple[np.ndarray, np.ndarray]:
    """Tokens covered by found n-grams, and the longest covered run, per sample."""
    ns = indptr.shape[0] - 1
    total = int(indptr[-1])
    lens = np.diff(indptr)
    sample = np.repeat(np.arange(ns, dtype=np.int64), counts)
    pos = np.arange(ptr[-1], dtype=np.int64) - ptr[sample]
    start = indptr[sample] + pos
    length = np.minimum(lens[sample], n)
    diff = np.zeros(total + 1, dtype=np.int64)
    np.add.at(diff, start[found], 1)
    np.add.at(diff, (start + length)[found], -1)
    mask = np.cumsum(diff[:-1]) > 0
    csum = np.zeros(total + 1, dtype=np.int64)
    np.cumsum(mask, out=csum[1:])
    covered = csum[indptr[1:]] - csum[indptr[:-1]]
    longest = np.zeros(ns, dtype=np.int64)
    if total and mask.any():
        owner = np.repeat(np.arange(ns, dtype=np.int64), lens)
        is_start = np.zeros(total, dtype=bool)
        is_start[indptr[:-1][lens > 0]] = True
        run_start = mask & (is_start | ~np.r_[False, mask[:-1]])
        run_id = np.cumsum(run_start) - 1
        run_len = np.bincount(run_id[mask], minlength=int(run_start.sum()))
        np.maximum.at(longest, owner[run_start], run_len)
    return covered, longest


@dataclass
class ScanState:
    """What a scan of (part of) a corpus found: mergeable across shards.

    ``found_at`` is the lowest row (numbered from this part's start) holding
    each distinct eval n-gram; ``first_row`` and ``match`` the lowest row and
    its text per sample and n.
    """

    found_at: np.ndarray
    first_row: dict
    match: dict
    shards: list
    n_rows: int
    nbytes: int


class ContaminationScanner:
    """Eval n-gram tables and what a corpus streamed through :meth:`add` holds of them.

    Parameters
    ----------
    eval_texts : sequence of str or Arrow string column
    ngram, rules, tokenizer, seed, keep_text, n_threads
        As in :func:`contamination`.
    """

    def __init__(self, eval_texts: Any, *, ngram: Any = None, rules: Any = None,
                 tokenizer: Tokenizer = "wordpunct", seed: int = 0, keep_text: bool = True,
                 n_threads: int | None = None) -> None:
        self.ns, self.rules = resolve_ngrams(ngram, rules)
        _check_tokenizer(tokenizer)
        self.tokenizer = tokenizer
        self.seed = check_seed(seed)
        if not isinstance(keep_text, bool):
            raise TypeError(f"keep_text must be a bool, got {type_name(keep_text)}")
        self.keep_text = keep_text
        self.n_threads = effective_n_threads(n_threads)
        self.indptr, tokens = token_streams(eval_texts, tokenizer, self.seed, self.n_threads,
                                            "eval_texts")
        ne = self.indptr.shape[0] - 1
        self.n_tokens = np.diff(self.indptr)
        self._counts = {}
        self._ptr = {}
        for n in self.ns:
            self._counts[n], self._ptr[n] = _per_sample(self.indptr, n)
        capacity = int(sum(int(p[-1]) for p in self._ptr.values()))
        self.table = NgramTable(tokens, capacity, max(self.ns), KEY_MASK)
        self._uids = {n: self.table.add(self.indptr, n) for n in self.ns}
        self.found_at = np.full(self.table.n_unique, NOT_FOUND, dtype=np.int64)
        self.first_row = {n: np.full(ne, NOT_FOUND, dtype=np.int64) for n in self.ns}
        self.match: dict = {n: [None] * ne for n in self.ns}
        self.shards: list[list] = []
        self.n_rows = 0
        self.nbytes = 0

    @property
    def n_unique(self) -> int:
        """Distinct eval n-grams in the table (every n together)."""
        return int(self.table.n_unique)

    def add(self, texts: Any, *, path: str = "<memory>", nbytes: int = 0,
            checked: bool = False) -> None:
        """Probe the next corpus rows (a sequence of str or an Arrow string column);
        they are numbered from the rows added so far.  ``checked``: ``texts`` is
        a list that ``check_texts`` returned."""
        self.add_tokens(texts, *self.tokens(texts, checked), path=path, nbytes=nbytes)

    def tokens(self, texts: Any, checked: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """``(indptr, hashes)`` of corpus rows, for :meth:`add_tokens`.  Reads no
        state of the scanner but its settings: another thread may tokenize the
        next rows while these are probed."""
        return token_streams(texts, self.tokenizer, self.seed, self.n_threads, "corpus",
                             checked)

    def add_tokens(self, texts: Any, indptr: np.ndarray, tokens: np.ndarray, *,
                   path: str = "<memory>", nbytes: int = 0) -> None:
        """:meth:`add` of rows already tokenized by :meth:`tokens` (``texts``: the
        rows themselves, for the text of new matches)."""
        first = self.n_rows
        m = indptr.shape[0] - 1
        if not self.shards or self.shards[-1][0] != path:
            self.shards.append([path, first, 0])
        self.shards[-1][2] += m
        self.n_rows += m
        self.nbytes += nbytes
        if m == 0:
            return
        before = self.found_at.copy()
        self.table.probe(indptr, tokens, first, self.found_at, self.n_threads)
        if not (self.found_at < before).any():
            return
        for n in self.ns:
            rows = _segment_min(self.found_at[self._uids[n]], self._ptr[n], NOT_FOUND)
            new = np.flatnonzero(rows < self.first_row[n])
            self.first_row[n][new] = rows[new]
            if self.keep_text and new.shape[0]:  # the text of new matches only
                lst = self.match[n]
                for i, r in zip(new.tolist(), rows[new].tolist()):
                    lst[i] = _text_at(texts, r - first)

    def add_chunk(self, chunk: Chunk, field_name: str = "text") -> None:
        """:meth:`add` of one chunk of :func:`overlap.stream_readers.read_chunks`."""
        col = _chunk_column(chunk, field_name)
        self.add_chunk_tokens(chunk, col, *self.tokens(col))

    def add_chunk_tokens(self, chunk: Chunk, col: Any, indptr: np.ndarray,
                         tokens: np.ndarray) -> None:
        """:meth:`add_chunk` of a chunk column already tokenized by :meth:`tokens`."""
        if chunk.first_row != self.n_rows:
            raise ValueError(f"chunk of {chunk.path} starts at row {chunk.first_row}, "
                             f"expected {self.n_rows}")
        self.add_tokens(col, indptr, tokens, path=chunk.path, nbytes=chunk.nbytes)

    def state(self) -> ScanState:
        """What was found so far (rows numbered from this scanner's first row)."""
        return ScanState(self.found_at.copy(), {n: v.copy() for n, v in self.first_row.items()},
                         {n: list(v) for n, v in self.match.items()},
                         [tuple(s) for s in self.shards], self.n_rows, self.nbytes)

    def absorb(self, part: ScanState) -> None:
        """Lay a part scanned elsewhere (e.g. a shard on a worker) after the rows so far."""
        off = self.n_rows
        if part.found_at.shape != self.found_at.shape:
            raise ValueError("absorb: the part was scanned with other eval n-grams")
        shifted = np.where(part.found_at != NOT_FOUND, part.found_at + off, NOT_FOUND)
        np.minimum(self.found_at, shifted, out=self.found_at)
        for n in self.ns:
            rows = np.where(part.first_row[n] != NOT_FOUND, part.first_row[n] + off, NOT_FOUND)
            new = np.flatnonzero(rows < self.first_row[n])
            self.first_row[n][new] = rows[new]
            for i in new.tolist():
                self.match[n][i] = part.match[n][i]
        self.shards += [[p, a + off, k] for p, a, k in part.shards]
        self.n_rows += part.n_rows
        self.nbytes += part.nbytes

    def result(self, groups: Sequence | None = None, seconds: float = 0.0
               ) -> ContaminationResult:
        """The statistics and labels of everything added so far."""
        stats = {}
        for n in self.ns:
            counts, ptr = self._counts[n], self._ptr[n]
            found = self.found_at[self._uids[n]] != NOT_FOUND
            csum = np.zeros(found.shape[0] + 1, dtype=np.int64)
            np.cumsum(found, out=csum[1:])
            n_found = csum[ptr[1:]] - csum[ptr[:-1]]
            covered, longest = _coverage(self.indptr, counts, ptr, found, n)
            with np.errstate(invalid="ignore", divide="ignore"):
                fraction = np.where(counts > 0, n_found / np.maximum(counts, 1), 0.0)
                coverage = np.where(self.n_tokens > 0,
                                    covered / np.maximum(self.n_tokens, 1), 0.0)
            first = np.where(self.first_row[n] == NOT_FOUND, -1, self.first_row[n])
            stats[n] = NgramStats(n, counts.astype(np.int64), n_found, fraction, longest,
                                  covered.astype(np.int64), coverage, first)
        labels = {r: RULES[r].label(stats[RULES[r].n], self.n_tokens) for r in self.rules}
        return ContaminationResult(
            self.n_tokens.astype(np.int64), stats, labels, self.rules,
            {n: list(v) for n, v in self.match.items()},
            None if groups is None else list(groups),
            [tuple(s) for s in self.shards], self.n_rows, self.nbytes, seconds)


def _text_at(texts: Any, i: int) -> str:
    v = texts[i]
    return v if isinstance(v, str) else v.as_py() if hasattr(v, "as_py") else str(v)


def _check_groups(groups: Any, n: int) -> list | None:
    if groups is None:
        return None
    if isinstance(groups, (str, bytes, dict)) or (
            isinstance(groups, np.ndarray) and groups.ndim != 1):
        raise TypeError(f"groups must be a sequence of labels, got {type_name(groups)}")
    try:
        out = list(groups)
    except TypeError:
        raise TypeError(f"groups must be a sequence of labels, got {type_name(groups)}") \
            from None
    if len(out) != n:
        raise ValueError(f"groups has {len(out)} labels for {n} eval samples")
    return out


def _chunk_column(chunk: Any, field_name: str, rows_checked: bool = False) -> Any:
    """The corpus column of a chunk, checked: a list of str or an Arrow string column.

    ``rows_checked``: the chunk comes from :func:`overlap.stream_readers.read_chunks`,
    which checks every row's field is a str (no second look at each row here).
    """
    if not isinstance(chunk, Chunk):
        raise TypeError(f"the corpus yielded a {type_name(chunk)}, expected a Chunk")
    if field_name not in chunk.columns:
        raise ValueError(f"{chunk.path}: no field {field_name!r} in the chunk "
                         f"(has {', '.join(chunk.columns)})")
    col = chunk.columns[field_name]
    # an Arrow column (the arrow reader's) is checked by the tokenizer in
    # bulk (strings, no nulls); a list is checked here, row by row
    if not rows_checked and _texts.arrow_column(col, field_name) is None and not all(
            type(v) is str for v in col):
        i = next(i for i, v in enumerate(col) if not isinstance(v, str))
        raise ValueError(f"{chunk.path}: row {chunk.shard_row + i + 1} of the shard has no "
                         f"text in field {field_name!r} (got {type_name(col[i])})")
    return col


def _chunk_parts(chunks: Iterable, field_name: str, rows_checked: bool) -> Iterator:
    """The parts (see :func:`_tokenized`) of chunks (of ``read_chunks`` or a caller)."""
    for chunk in chunks:
        col = _chunk_column(chunk, field_name, rows_checked)
        yield col, chunk.path, chunk.nbytes, chunk.first_row, False, chunk.nbytes


def _tokenized(scanner: ContaminationScanner, parts: Iterable) -> Iterator:
    """``(texts, indptr, hashes, path, nbytes, first_row, step)`` of every part
    ``(texts, path, nbytes, first_row, checked, step)`` of the corpus: the
    reading and the tokenizing, which :class:`overlap._prefetch.Prefetch` runs on
    its thread while the caller probes (``first_row``: None for rows in memory;
    ``step``: the progress made)."""
    for texts, path, nbytes, first_row, checked, step in parts:
        yield (texts, *scanner.tokens(texts, checked), path, nbytes, first_row, step)


def _is_path(x: Any) -> bool:
    return isinstance(x, (str, os.PathLike))


def contamination(
    eval_texts: Any,
    corpus: Any,
    *,
    ngram: int | Sequence[int] | None = None,
    rules: str | Sequence[str] | None = None,
    groups: Sequence | None = None,
    field: str = "text",
    fmt: str | None = None,
    tokenizer: Tokenizer = "wordpunct",
    seed: int = 0,
    chunk_rows: int = 65536,
    keep_text: bool = True,
    n_threads: int | None = None,
    progress: ProgressArg = False,
    engine: str | None = None,
) -> ContaminationResult:
    """N-gram membership of every eval sample in a corpus, and labels by published rules.

    Parameters
    ----------
    eval_texts : sequence of str, or an Arrow string column
        The eval samples (in memory).
    corpus : path, sequence of str, Arrow string column, or iterable of Chunk
        A file or a directory of shards (JSONL, CSV/TSV, Parquet, text; read
        ``chunk_rows`` rows at a time by :func:`overlap.stream_readers.read_chunks`,
        rows numbered over the shards in name order); or the corpus texts in
        memory (a list of str is texts, never paths); or chunks already read.
    ngram : int or sequence of int, optional
        The n's to report (1 to :data:`MAX_NGRAM`), besides those the rules need.
    rules : str or sequence of str, optional
        Names in :data:`RULES` (``"any"``: 13-grams, ``"palm"``: 8-grams,
        ``"llama2"``: 11-grams).  With neither ``ngram`` nor ``rules``: ``"any"``.
    groups : sequence, optional
        A group label per eval sample (e.g. its language), for :meth:`ContaminationResult.summary`.
    field : str, default "text"
        The corpus column read from files.
    fmt : str, optional
        The format of every corpus file, instead of the extensions.
    tokenizer, seed
        As in :meth:`overlap.TokenSets.from_texts`, for both sides.
    chunk_rows : int, default 65536
        Corpus rows held at a time.  The result does not depend on it.
    keep_text : bool, default True
        Keep the text of every sample's first matching row.
    n_threads : int or None
        Threads of the tokenizer and the probe; the result does not depend on it.
    progress : bool or callable
        True: a bar over the bytes read (rows for a corpus in memory), with
        MB/s; a callable receives ``(done, total)``.
    engine : {"auto", "arrow", "python"}, optional
        How corpus files are read, as in :func:`overlap.stream_readers.read_chunks`
        (default: ``OVERLAP_READER``, else Arrow when pyarrow is installed).
        The result does not depend on it.

    Returns
    -------
    ContaminationResult
    """
    t0 = time.perf_counter()
    if isinstance(field, bool) or not isinstance(field, str):
        raise TypeError(f"field must be a str, got {type_name(field)}")
    chunk_rows = check_int(chunk_rows, "chunk_rows", minimum=1)
    if engine is not None and (not isinstance(engine, str) or engine not in ENGINES):
        raise ValueError(f"engine must be one of {', '.join(ENGINES)}, got {engine!r}")
    scanner = ContaminationScanner(eval_texts, ngram=ngram, rules=rules, tokenizer=tokenizer,
                                   seed=seed, keep_text=keep_text, n_threads=n_threads)
    grp = _check_groups(groups, scanner.indptr.shape[0] - 1)
    check_progress(progress)
    if _is_path(corpus):
        try:
            total = source_size(corpus, fmt)
        except (TypeError, ValueError) as e:  # say it in this function's words
            msg = str(e)
            if msg.startswith("source: "):
                msg = msg[len("source: "):]
            raise type(e)(f"corpus: {msg}" if "fmt" not in msg else msg) from None
        unit = "B"
        # read_chunks checks every row's field is a str
        parts = _chunk_parts(read_chunks(corpus, [field], fmt=fmt, chunk_rows=chunk_rows,
                                         engine=engine), field, True)
    else:
        col = _texts.arrow_column(corpus, "corpus")
        if col is not None:
            total, unit = len(col), "row"
            parts = ((col.slice(a, chunk_rows), "<memory>", 0, None, False,
                      min(chunk_rows, total - a)) for a in range(0, total, chunk_rows))
        elif isinstance(corpus, (Sequence, np.ndarray)) and not isinstance(corpus, bytes):
            items = check_texts(corpus, "corpus")
            total, unit = len(items), "row"
            parts = ((items[a:a + chunk_rows], "<memory>", 0, None, True,
                      len(items[a:a + chunk_rows])) for a in range(0, total, chunk_rows))
        elif isinstance(corpus, Iterable) and not isinstance(corpus, bytes):
            total, unit = 0, "B"
            parts = _chunk_parts(corpus, field, False)
        else:
            raise TypeError("corpus must be a path, a sequence of str, an Arrow string column "
                            f"or an iterable of Chunk, got {type_name(corpus)}")
    bar = make_progress(progress, total, "contamination", unit)
    # the next rows are read and tokenized on another thread while these are probed
    work = Prefetch(_tokenized(scanner, parts), name="overlap-contamination")
    try:
        for texts, indptr, tokens, path, nbytes, first_row, step in work:
            if first_row is not None and first_row != scanner.n_rows:
                raise ValueError(f"chunk of {path} starts at row {first_row}, "
                                 f"expected {scanner.n_rows}")
            scanner.add_tokens(texts, indptr, tokens, path=path, nbytes=nbytes)
            del texts, indptr, tokens
            bar.update(step)
    finally:
        work.close()
        bar.close()
    return scanner.result(grp, time.perf_counter() - t0)
