"""Benchmark workloads: the real DailyDialog workload W, or a generated corpus of its shape.

W is the single-turn workload of the overlap study: DailyDialog's original split,
``make_samples(read_dialogues(...), turns=1)``, default ``wordpunct`` tokenizer:
76,053 train, 7,069 validation and 6,740 test (context, response) samples from
11,118 / 1,000 / 1,000 dialogues.  It is read from the shared data folder
(``tests/reference/datadir.py``: ``shared_data_dir()``, override with ``OVERLAP_METRICS_DATA``).
Without it (or with ``OVERLAP_BENCH_GENERATED=1``) the suites run on a seeded
generated corpus of the same shape:

* the same number of dialogues and samples per split;
* utterance lengths log-normal, tuned so that token-set sizes match W's;
* a Zipf(-Mandelbrot) vocabulary, a few punctuation tokens among the most
  frequent ones (dropped or kept by the wordpunct rule exactly as in W), a
  pool of short stock phrases ("thank you") that recur across dialogues;
* planted near-duplicate dialogues (copies of another dialogue, one token
  changed when the copy keeps a ratio > 0.8, else verbatim), so that test and
  validation samples have near-duplicates in train and dedup has work to do.

The scale suite uses :func:`generate_samples`: (context, response) samples as
integer token ids (Zipf vocabulary of 200k), with 10% planted near-duplicates.
"""

from __future__ import annotations

import functools
import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from overlap import TokenSets
from overlap.pipeline.dialogue import Samples, make_samples, read_dialogues


def _load_datadir():
    """tests/reference/datadir.py (where the shared data lives), loaded by its path: it
    serves the tests and the benchmarks, so it is not part of the installed
    package, and tests/ is not a package."""
    path = Path(__file__).resolve().parents[1] / "tests" / "reference" / "datadir.py"
    spec = importlib.util.spec_from_file_location("bench._datadir", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_datadir = _load_datadir()
DATA_ENV = _datadir.DATA_ENV
shared_data_dir = _datadir.shared_data_dir

__all__ = [
    "DATA_ENV",
    "SPLITS",
    "W_DIALOGUES",
    "W_SAMPLES",
    "Zipf",
    "Workload",
    "load_workload",
    "shared_data_dir",
    "generate_dialogue_ids",
    "generate_dialogues",
    "generate_samples",
    "GeneratedSamples",
    "take_rows",
    "word",
]

SPLITS = ("train", "validation", "test")
W_DIALOGUES = {"train": 11_118, "validation": 1_000, "test": 1_000}
W_SAMPLES = {"train": 76_053, "validation": 7_069, "test": 6_740}

#: Environment variable that forces the generated corpus even when W is present.
GENERATED_ENV = "OVERLAP_BENCH_GENERATED"

# Shape of W, tuned once so that the generated corpus matches W's summary
# statistics: distinct wordpunct tokens per context 3/6/9/14/26 at the
# 5/25/50/75/95th percentiles (generated: 3/6/9/15/28), train vocabulary 17k
# (18k), 28.9k test-train context pairs at Dice >= 0.8 (27.5k), 178k train
# self-join pairs (159k), 2,083 dialogues removed by dedup at 0.8 (1,955).
# Lengths count generated tokens before "." "," "?" "!" are dropped.
LEN_LOG_MEAN = 2.55
LEN_LOG_STD = 0.74
MAX_LEN = 260
#: Same, for the id corpus of the scale suite (no tokens are dropped there):
#: distinct ids per context 3/6/9/14/27 (mean 11), like W's.
IDS_LEN_LOG_MEAN = 2.3
ZIPF_EXPONENT = 1.3
ZIPF_OFFSET = 2.7
W_VOCAB = 20_000
STOCK_PHRASES = 2_000
STOCK_FRACTION = 0.04
DIALOGUE_DUP_FRACTION = 0.15
#: A copy gets one token changed only when its source has at least this many
#: distinct tokens: then Dice(copy, source) >= 2(n-1)/(2n+1) > 0.8.
EDIT_MIN_DISTINCT = 8

# Punctuation among the most frequent "words" of the generated text corpus, at
# these Zipf ranks.  "." "," "?" "!" are substrings of string.punctuation and
# so dropped by wordpunct; "’" "..." "?!" are kept, as in W.
PUNCT_AT_RANK = {0: ".", 3: ",", 8: "?", 10: "’", 30: "!", 120: "...", 400: "?!"}
DROPPED_RANKS = frozenset({0, 3, 8, 30})


class Zipf:
    """Token ids 0..vocab_size-1 with P(id = r) proportional to 1 / (r + offset)**exponent."""

    def __init__(self, vocab_size: int, exponent: float | None = None,
                 offset: float | None = None) -> None:
        exponent = ZIPF_EXPONENT if exponent is None else exponent
        offset = ZIPF_OFFSET if offset is None else offset
        w = 1.0 / (np.arange(vocab_size, dtype=np.float64) + offset) ** exponent
        self.cdf = np.cumsum(w / w.sum())
        self.cdf[-1] = 1.0
        self.vocab_size = vocab_size

    def draw(self, rng: np.random.Generator, n: int) -> np.ndarray:
        ids = np.searchsorted(self.cdf, rng.random(n), side="right")
        return np.minimum(ids, self.vocab_size - 1).astype(np.int64)


def utterance_lengths(rng: np.random.Generator, n: int,
                      log_mean: float | None = None) -> np.ndarray:
    """Token counts per utterance, log-normal like W's, in [1, MAX_LEN]."""
    log_mean = LEN_LOG_MEAN if log_mean is None else log_mean
    x = np.rint(rng.lognormal(log_mean, LEN_LOG_STD, n))
    return np.clip(x, 1, MAX_LEN).astype(np.int64)


def take_rows(indptr: np.ndarray, data: np.ndarray, rows: np.ndarray):
    """Gather CSR rows ``rows`` (in that order): returns ``(indptr, data)``."""
    rows = np.asarray(rows, dtype=np.int64)
    starts = indptr[rows]
    lens = indptr[rows + 1] - starts
    out_ptr = np.zeros(rows.shape[0] + 1, dtype=np.int64)
    np.cumsum(lens, out=out_ptr[1:])
    gather = np.repeat(starts - out_ptr[:-1], lens) + np.arange(out_ptr[-1])
    return out_ptr, data[gather]


def _row_distinct(indptr: np.ndarray, data: np.ndarray, dropped: np.ndarray | None = None):
    """Distinct values per CSR row (ignoring ``dropped`` values)."""
    rows = np.repeat(np.arange(indptr.shape[0] - 1), np.diff(indptr))
    vals = data
    if dropped is not None and dropped.size:
        keep = ~np.isin(vals, dropped)
        rows, vals = rows[keep], vals[keep]
    base = int(data.max(initial=0)) + 1
    key = np.sort(rows * base + vals)
    first = np.ones(key.shape[0], dtype=bool)
    first[1:] = key[1:] != key[:-1]
    return np.bincount(key[first] // base, minlength=indptr.shape[0] - 1)


def _dialogue_sizes(rng: np.random.Generator, n_dialogues: int, n_samples: int) -> np.ndarray:
    """Utterances per dialogue (each >= 2) whose samples (size - 1) add up to n_samples."""
    mean_extra = n_samples / n_dialogues - 1.0  # samples beyond the first, on average
    k = 2.0
    sizes = 2 + rng.negative_binomial(k, k / (k + mean_extra), n_dialogues)
    sizes = np.minimum(sizes, 35)
    diff = n_samples - int((sizes - 1).sum())
    while diff:
        idx = rng.integers(0, n_dialogues, abs(diff))
        if diff > 0:
            np.add.at(sizes, idx, 1)
        else:
            np.add.at(sizes, idx, -1)
            sizes = np.maximum(sizes, 2)
        diff = n_samples - int((sizes - 1).sum())
    return sizes.astype(np.int64)


def _utterances(rng: np.random.Generator, zipf: Zipf, n: int, log_mean: float | None = None):
    """``n`` utterances as CSR token ids: fresh Zipf text, some from a stock-phrase pool."""
    # the stock pool: short phrases (1-5 tokens) picked with a Zipf law over the pool
    plen = np.minimum(utterance_lengths(rng, STOCK_PHRASES), 5)
    pptr = np.zeros(STOCK_PHRASES + 1, dtype=np.int64)
    np.cumsum(plen, out=pptr[1:])
    pdata = zipf.draw(rng, int(pptr[-1]))
    stock = rng.random(n) < STOCK_FRACTION
    pick = Zipf(STOCK_PHRASES, exponent=1.0, offset=1.0).draw(rng, int(stock.sum()))
    lengths = utterance_lengths(rng, n, log_mean)
    lengths[stock] = plen[pick]
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=indptr[1:])
    data = zipf.draw(rng, int(indptr[-1]))
    srows = np.flatnonzero(stock)
    if srows.size:
        # write each picked phrase over its utterance's slot
        sptr, sdata = take_rows(pptr, pdata, pick)
        pos = np.repeat(indptr[srows] - sptr[:-1], plen[pick]) + np.arange(sdata.shape[0])
        data[pos] = sdata
    return indptr, data


def _edit_one(rng: np.random.Generator, zipf: Zipf, indptr: np.ndarray, data: np.ndarray,
              rows: np.ndarray, protected: np.ndarray | None = None) -> None:
    """Replace one token (not a ``protected`` id) in each of ``rows`` by a fresh Zipf id."""
    if rows.size == 0:
        return
    starts, lens = indptr[rows], indptr[rows + 1] - indptr[rows]
    for _ in range(64):
        pos = starts + (rng.random(rows.shape[0]) * lens).astype(np.int64)
        new = zipf.draw(rng, rows.shape[0])
        ok = np.ones(rows.shape[0], dtype=bool)
        if protected is not None and protected.size:
            ok = ~np.isin(data[pos], protected) & ~np.isin(new, protected)
        data[pos[ok]] = new[ok]
        rows, starts, lens = rows[~ok], starts[~ok], lens[~ok]
        if rows.size == 0:
            return


# --------------------------------------------------------------------------- text corpus
_CONS = "bcdfghjklmnprstvwxz"
_VOWELS = "aeiou"
_SYLLABLES = [c + v for c in _CONS for v in _VOWELS]


def word(token_id: int) -> str:
    """The generated word of a token id: punctuation at a few ranks, else pseudo-words.

    Pseudo-words are the id in bijective base 95 written with fixed two-letter
    syllables (so distinct ids give distinct words); every 97th id gets an
    accent, so the non-ASCII path of the tokenizer is exercised too.
    """
    if token_id in PUNCT_AT_RANK:
        return PUNCT_AT_RANK[token_id]
    k = token_id + 1
    parts = []
    base = len(_SYLLABLES)
    while k > 0:
        k, r = divmod(k - 1, base)
        parts.append(_SYLLABLES[r])
    w = "".join(reversed(parts))
    return w + "é" if token_id % 97 == 5 else w


def generate_dialogue_ids(seed: int = 20261129, vocab_size: int = W_VOCAB,
                          dialogues: dict | None = None, samples: dict | None = None):
    """Dialogues of W's shape as token ids.

    Returns
    -------
    sizes : ndarray of int64
        Utterances per dialogue, splits concatenated in ``SPLITS`` order.
    indptr, data : CSR token ids of every utterance, dialogue after dialogue.
    planted : ndarray of int64, shape (k, 2)
        (copy, source) dialogue indices; every copy has ratio > 0.8 to its
        source under the wordpunct tokenizer.
    """
    dialogues = dict(W_DIALOGUES if dialogues is None else dialogues)
    samples = dict(W_SAMPLES if samples is None else samples)
    rng = np.random.default_rng(seed)
    zipf = Zipf(vocab_size)
    sizes = np.concatenate([_dialogue_sizes(rng, dialogues[s], samples[s]) for s in SPLITS])
    n_d = sizes.shape[0]
    indptr, data = _utterances(rng, zipf, int(sizes.sum()))
    dstart = np.zeros(n_d + 1, dtype=np.int64)
    np.cumsum(sizes, out=dstart[1:])
    # dialogue-level CSR over tokens: one row per dialogue
    d_indptr = indptr[dstart]
    dropped = np.asarray(sorted(DROPPED_RANKS), dtype=np.int64)
    punct = np.asarray(sorted(PUNCT_AT_RANK), dtype=np.int64)
    # plant: a copy keeps its own size, so sources are drawn among dialogues of equal size
    planted_mask = rng.random(n_d) < DIALOGUE_DUP_FRACTION
    copies, sources = [], []
    free = np.flatnonzero(~planted_mask)
    for size in np.unique(sizes[planted_mask]):
        cand = free[sizes[free] == size]
        want = np.flatnonzero(planted_mask & (sizes == size))
        if cand.size == 0:
            continue
        copies.append(want)
        sources.append(cand[rng.integers(0, cand.size, want.size)])
    copies = np.concatenate(copies) if copies else np.zeros(0, dtype=np.int64)
    sources = np.concatenate(sources) if sources else np.zeros(0, dtype=np.int64)
    order = np.argsort(copies)
    copies, sources = copies[order], sources[order]
    # copy token data utterance by utterance (same sizes, so the copied utterance
    # lengths replace the copy's own: rebuild the CSR)
    utt_src = np.arange(int(sizes.sum()), dtype=np.int64)
    for c, s in zip(copies, sources):
        utt_src[dstart[c]:dstart[c + 1]] = np.arange(dstart[s], dstart[s + 1])
    indptr, data = take_rows(indptr, data, utt_src)
    d_indptr = indptr[dstart]
    distinct = _row_distinct(d_indptr, data, dropped)
    edit = copies[distinct[sources] >= EDIT_MIN_DISTINCT]
    # one token of one random utterance per edited copy (in dialogue token space)
    data = data.copy()
    _edit_one(rng, zipf, d_indptr, data, edit, protected=punct)
    return sizes, indptr, data, np.stack([copies, sources], axis=1)


def generate_dialogues(seed: int = 20261129, **kwargs):
    """W-shaped dialogues as text: ``({split: [[utterance, ...], ...]}, planted)``.

    ``planted`` holds (copy, source) indices into the dialogues of all splits
    concatenated in ``SPLITS`` order (train, validation, test).
    """
    sizes, indptr, data, planted = generate_dialogue_ids(seed, **kwargs)
    vocab = [word(i) for i in range(int(data.max(initial=0)) + 1)]
    toks = [vocab[i] for i in data.tolist()]
    utts = [" ".join(toks[a:b]) for a, b in zip(indptr[:-1].tolist(), indptr[1:].tolist())]
    out, u, d = {}, 0, 0
    counts = kwargs.get("dialogues") or W_DIALOGUES
    for split in SPLITS:
        lst = []
        for _ in range(counts[split]):
            lst.append(utts[u:u + int(sizes[d])])
            u += int(sizes[d])
            d += 1
        out[split] = lst
    return out, planted


# --------------------------------------------------------------------------- W
class Workload:
    """Dialogues, samples and token sets of W (or of the generated stand-in)."""

    def __init__(self, dialogues: dict, source: str, real: bool,
                 planted: np.ndarray | None = None) -> None:
        self.dialogues = dialogues
        self.source = source
        self.real = real
        self.planted = planted
        self.samples: dict[str, Samples] = {
            s: make_samples(dialogues[s], turns=1) for s in SPLITS
        }

    @property
    def name(self) -> str:
        return "W (DailyDialog)" if self.real else "generated W-shaped corpus"

    @functools.cached_property
    def sets(self) -> dict:
        """{split: (context TokenSets, response TokenSets)}, wordpunct."""
        return {
            s: (TokenSets.from_texts(sm.context), TokenSets.from_texts(sm.response))
            for s, sm in self.samples.items()
        }

    @functools.cached_property
    def all_texts(self) -> list[str]:
        """Every context and response of every split (179,724 texts on W)."""
        out: list[str] = []
        for s in SPLITS:
            out += self.samples[s].context
            out += self.samples[s].response
        return out

    @functools.cached_property
    def queries_test_valid(self) -> tuple:
        """Test then validation samples, two fields."""
        t, v = self.sets["test"], self.sets["validation"]
        return tuple(_concat(a, b) for a, b in zip(t, v))

    @functools.cached_property
    def dialogue_texts(self) -> list[str]:
        """Each dialogue's whole text (utterances joined by a space), train+valid+test."""
        return [" ".join(d) for s in SPLITS for d in self.dialogues[s]]

    @functools.cached_property
    def dialogue_units(self) -> TokenSets:
        return TokenSets.from_texts(self.dialogue_texts)

    def describe(self) -> dict:
        return {
            "workload": self.name,
            "workload_source": self.source,
            **{f"samples_{s}": len(self.samples[s]) for s in SPLITS},
            "dialogues": sum(len(self.dialogues[s]) for s in SPLITS),
        }


def _concat(a: TokenSets, b: TokenSets) -> TokenSets:
    return TokenSets.concat([a, b])


@functools.lru_cache(maxsize=None)
def load_workload() -> Workload:
    """W from the shared data folder, else the generated corpus of its shape."""
    d = shared_data_dir()
    files = None if d is None else {s: Path(d) / "dailydialog" / f"dialogues_{s}.txt"
                                   for s in SPLITS}
    forced = os.environ.get(GENERATED_ENV, "") not in ("", "0")
    if files and not forced and all(f.is_file() for f in files.values()):
        dialogues = {s: read_dialogues(f) for s, f in files.items()}
        return Workload(dialogues, str(files["train"].parent), real=True)
    seed = 20261129
    dialogues, planted = generate_dialogues(seed)
    why = "forced by " + GENERATED_ENV if forced else "shared data not found"
    return Workload(dialogues, f"generated (seed={seed}; {why})", real=False, planted=planted)


# --------------------------------------------------------------------------- scale
@dataclass(frozen=True)
class GeneratedSamples:
    """(context, response) samples as CSR token ids, plus the planted near-duplicates.

    Rows ``[0, n_corpus)`` are the corpus, the rest (if any) are queries.
    ``planted[:, 0]`` are rows that are near-copies of ``planted[:, 1]`` (always a
    corpus row that is not itself planted); both fields of every planted pair
    have ratio > 0.8.
    """

    context_indptr: np.ndarray
    context_ids: np.ndarray
    response_indptr: np.ndarray
    response_ids: np.ndarray
    n_corpus: int
    planted: np.ndarray

    def __len__(self) -> int:
        return int(self.context_indptr.shape[0] - 1)

    def token_sets(self, rows: slice | None = None) -> tuple[TokenSets, TokenSets]:
        """(context, response) TokenSets of ``rows`` (hashed with ``from_ids``)."""
        rows = slice(0, len(self)) if rows is None else rows
        idx = np.arange(len(self))[rows]
        out = []
        for ip, ids in ((self.context_indptr, self.context_ids),
                        (self.response_indptr, self.response_ids)):
            p, d = take_rows(ip, ids, idx)
            out.append(TokenSets.from_ids(np.split(d.astype(np.uint64), p[1:-1])))
        return tuple(out)

    def corpus(self) -> tuple[TokenSets, TokenSets]:
        return self.token_sets(slice(0, self.n_corpus))

    def queries(self) -> tuple[TokenSets, TokenSets]:
        return self.token_sets(slice(self.n_corpus, len(self)))


def generate_samples(n_samples: int, *, n_queries: int = 0, vocab_size: int = 200_000,
                     dup_fraction: float = 0.10, seed: int = 7) -> GeneratedSamples:
    """A corpus of ``n_samples`` (context, response) samples (plus ``n_queries`` queries).

    Samples are consecutive utterance pairs of generated dialogues (W's shape:
    lengths, dialogue sizes, stock phrases), over a Zipf vocabulary of
    ``vocab_size`` ids.  ``dup_fraction`` of all rows (corpus and queries) are
    then replaced by near-copies of random non-planted corpus rows: each field
    is copied, with one token changed when the field has at least 8 distinct
    tokens (so each field keeps a ratio > 0.8 to its source).
    """
    rng = np.random.default_rng(seed)
    zipf = Zipf(vocab_size)
    total = n_samples + n_queries
    n_d = max(1, round(total / (W_SAMPLES["train"] / W_DIALOGUES["train"])))
    sizes = _dialogue_sizes(rng, n_d, total)
    indptr, data = _utterances(rng, zipf, int(sizes.sum()), IDS_LEN_LOG_MEAN)
    dstart = np.concatenate([[0], np.cumsum(sizes)])
    # sample k of dialogue d, response turn t (1..size-1): context = utterance
    # dstart[d] + t - 1, response = the next one
    sstart = np.concatenate([[0], np.cumsum(sizes - 1)])
    within = np.arange(total) - np.repeat(sstart[:-1], sizes - 1)  # t - 1
    ctx_u = np.repeat(dstart[:-1], sizes - 1) + within
    rsp_u = ctx_u + 1
    n_plant = int(round(dup_fraction * total))
    planted_rows = np.sort(rng.choice(total, n_plant, replace=False))
    is_planted = np.zeros(total, dtype=bool)
    is_planted[planted_rows] = True
    pool = np.flatnonzero(~is_planted[:n_samples])
    sources = pool[rng.integers(0, pool.size, n_plant)]
    ctx_u[planted_rows] = ctx_u[sources]
    rsp_u[planted_rows] = rsp_u[sources]
    fields = []
    for u in (ctx_u, rsp_u):
        p, d = take_rows(indptr, data, u)
        d = d.copy()
        sub_ptr, sub = take_rows(p, d, planted_rows)
        distinct = _row_distinct(sub_ptr, sub)
        _edit_one(rng, zipf, p, d, planted_rows[distinct >= EDIT_MIN_DISTINCT])
        fields += [p, d]
    return GeneratedSamples(fields[0], fields[1], fields[2], fields[3], n_samples,
                            np.stack([planted_rows, sources], axis=1))
