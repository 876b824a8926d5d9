"""``TokenSets``: a frozen collection of hashed token sets (or bags), CSR-style."""

from __future__ import annotations

import numbers
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Union

import numpy as np

from . import _ids, _texts, _tokenize
from ._row_builder import RowBuilder
from ._progress import ProgressArg, check_progress, make_progress
from ._threads import effective_n_threads, threads_for
from ._validation import (
    MAX_C_INT,
    check_csr,
    check_int,
    check_seed,
    check_texts,
    exact_str,
    row_indices,
    type_name,
)

__all__ = ["TokenSets", "TOKENIZERS", "Provenance", "HASH_VERSION"]

#: Tokenizer presets; each lower-cases the text with ``str.lower()`` first.
TOKENIZERS = {"wordpunct": 0, "whitespace": 1, "char": 2, "intl": 4}
_MODE_WHOLE = 3

#: Version of the token and n-gram hash functions; bumped if they ever change.
HASH_VERSION = 1

#: Code points tokenized by one kernel call of ``from_texts`` (about 0.1-0.3 s).
TEXT_CHUNK = 1 << 24

#: A callable tokenizer's progress is reported every 8,192 texts.
_CALLABLE_EVERY_MASK = 8191

Tokenizer = Union[str, Callable[[str], Sequence[str]]]


@dataclass(frozen=True)
class Provenance:
    """How the hashes of a :class:`TokenSets` were made.

    Two collections can only share tokens when they were hashed the same way;
    comparing, searching or joining incompatible ones raises ``ValueError``
    instead of silently finding nothing.

    Attributes
    ----------
    source : {"texts", "ids", "unknown"}
        The constructor: :meth:`TokenSets.from_texts`, :meth:`TokenSets.from_ids`
        (and :meth:`TokenSets.from_flat_ids`),
        or raw arrays (:meth:`TokenSets.from_csr` without a provenance), which
        are compatible with anything.
    tokenizer : str or None
        The preset's name, ``"callable:<name>"`` for a callable, None otherwise.
    ngram : int or None
    multiset : bool or None
    seed : int or None
    hash_version : int or None
        :data:`HASH_VERSION` of the library that hashed them.
    """

    source: str
    tokenizer: str | None = None
    ngram: int | None = None
    multiset: bool | None = None
    seed: int | None = None
    hash_version: int | None = None

    @classmethod
    def unknown(cls) -> Provenance:
        """Raw hashes of unknown origin: compatible with every provenance."""
        return cls("unknown")

    @property
    def known(self) -> bool:
        return self.source != "unknown"

    def compatible(self, other: Provenance) -> bool:
        """Can hashes made this way equal hashes made the ``other`` way?"""
        if not self.known or not other.known:
            return True
        return self == other

    def describe(self) -> str:
        if not self.known:
            return "raw hashes of unknown origin"
        tok = "" if self.tokenizer is None else f"tokenizer={self.tokenizer!r}, "
        return (
            f"TokenSets.from_{self.source}({tok}ngram={self.ngram}, "
            f"multiset={self.multiset}, seed={self.seed}) with hash version {self.hash_version}"
        )


def _callable_name(fn: Callable) -> str:
    name = getattr(fn, "__qualname__", None) or type(fn).__qualname__
    module = getattr(fn, "__module__", None) or type(fn).__module__
    return f"callable:{module}.{name}"


def _merged_provenance(parts: Sequence[TokenSets], name: str) -> Provenance:
    """The provenance of stacked parts; ValueError when two cannot mix."""
    first = None
    for i, ts in enumerate(parts):
        p = ts.provenance
        if not p.known:
            continue
        if first is None:
            first = (i, p)
        elif not p.compatible(first[1]):
            raise ValueError(
                f"{name}[{first[0]}] and {name}[{i}] were hashed differently, so their "
                f"tokens cannot match: {name}[{first[0]}] by {first[1].describe()}, "
                f"{name}[{i}] by {p.describe()}"
            )
    return Provenance.unknown() if first is None else first[1]


def _frozen(a: np.ndarray) -> np.ndarray:
    # callers hand over arrays nobody else holds (fresh kernel output or copies)
    a.flags.writeable = False
    return a


class TokenSets:
    """A collection of ``n`` token sets stored as sorted, unique hash rows.

    Row ``i`` holds ``hashes[indptr[i]:indptr[i + 1]]`` in ascending order with no
    repeats.  With ``multiset=True`` a parallel ``counts`` array (uint32) keeps
    each token's multiplicity and the sizes are the sums of counts.

    Build one with :meth:`from_texts`, :meth:`from_ids` (or :meth:`from_flat_ids`) or
    :meth:`from_csr`.
    Instances are immutable (their arrays are read-only) and picklable.

    Attributes
    ----------
    indptr : ndarray of int64, shape (n + 1,)
    hashes : ndarray of uint64, shape (nnz,)
    counts : ndarray of uint32, shape (nnz,), or None for sets
    sizes : ndarray of int64, shape (n,)
        |row|: the number of distinct tokens, or the sum of counts for bags.
    multiset : bool
    provenance : Provenance
        How the hashes were made (tokenizer, n-gram, seed, hash version); kept
        by :meth:`take`, :meth:`concat` and pickling.
    """

    __slots__ = ("_indptr", "_hashes", "_counts", "_provenance", "_sizes")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError(
            "build TokenSets with TokenSets.from_texts(...), from_ids(...) or from_csr(...)"
        )

    @classmethod
    def _trusted(
        cls,
        indptr: np.ndarray,
        hashes: np.ndarray,
        counts: np.ndarray | None,
        provenance: Provenance | None = None,
    ):
        self = object.__new__(cls)
        self._provenance = Provenance.unknown() if provenance is None else provenance
        self._indptr = _frozen(np.ascontiguousarray(indptr, dtype=np.int64))
        self._hashes = _frozen(np.ascontiguousarray(hashes, dtype=np.uint64))
        self._counts = None if counts is None else _frozen(
            np.ascontiguousarray(counts, dtype=np.uint32)
        )
        if counts is None:
            sizes = np.diff(self._indptr)
        else:
            csum = np.zeros(self._hashes.shape[0] + 1, dtype=np.int64)
            np.cumsum(self._counts, out=csum[1:])
            sizes = csum[self._indptr[1:]] - csum[self._indptr[:-1]]
        self._sizes = _frozen(np.ascontiguousarray(sizes, dtype=np.int64))
        return self

    # ------------------------------------------------------------------ build
    @classmethod
    def from_texts(
        cls,
        texts: Sequence[str],
        tokenizer: Tokenizer = "wordpunct",
        ngram: int = 1,
        multiset: bool = False,
        n_threads: int | None = None,
        *,
        seed: int = 0,
        progress: ProgressArg = False,
    ) -> TokenSets:
        """Tokenize and hash texts.

        Parameters
        ----------
        texts : sequence of str, or an Arrow string column
            A list (or any sequence) of str, a numpy str array, a pandas Series;
            or a pyarrow ``Array``/``ChunkedArray`` of ``string`` or
            ``large_string`` (``string_view`` is cast), or a pandas Series of
            Arrow-backed strings, read from its buffers with no Python str per
            row (only rows holding U+0130 or U+03A3 are lower-cased by Python);
            the same token sets as the list of the same strings.
            A null row is a ``TypeError`` naming it, as ``None`` in a list is.
        tokenizer : {"wordpunct", "whitespace", "char", "intl"} or callable
            ``"wordpunct"`` (default) lower-cases, takes the matches of
            ``\\w+|[^\\w\\s]+`` and drops every token that is a substring of
            ``string.punctuation`` (the published reference's rule).
            ``"intl"`` is ``"wordpunct"`` except that every word character in
            ``overlap._tokenize.INTL_RANGES`` (kana, CJK ideographs, Hangul
            syllables) is a token of its own, for mixed-script text (see
            docs/tokenizers.md).
            ``"whitespace"`` lower-cases and splits on whitespace.  ``"char"``
            lower-cases and makes every non-space character a token.  A callable
            ``str -> list[str]`` receives the text unchanged.
        ngram : int, default 1
            Make the set out of contiguous ``ngram``-grams of the token list;
            texts with fewer tokens give the empty set.
        multiset : bool, default False
            Keep token counts (bag semantics) instead of sets.
        n_threads : int or None
            Threads for hashing (None: all cores).
        seed : int, default 0
            Hash seed; sets built with different seeds are not comparable.
        progress : bool or callable f(done, total), default False
            Texts tokenized so far, reported after every chunk of about
            16 million characters (a callable tokenizer: every 8,192 texts) and
            at the end, where ``done`` reaches ``total``; True shows a bar on
            stderr.  Ctrl-C stops the call between chunks.

        Returns
        -------
        TokenSets
        """
        # an Arrow string column (or an Arrow-backed pandas Series) is read from
        # its buffers; None for anything else
        col = _texts.arrow_column(texts, "texts")
        # check_texts hands back exact str objects (subclasses are copied), and
        # str.lower of an exact str is an exact str: the kernel reads only those
        items = check_texts(texts, "texts") if col is None else None
        n = len(items) if col is None else len(col)
        ngram = check_int(ngram, "ngram", minimum=1, maximum=MAX_C_INT)
        multiset = _check_bool(multiset, "multiset")
        seed = check_seed(seed)
        check_progress(progress)
        nt = threads_for(n, effective_n_threads(n_threads), 2048)
        if isinstance(tokenizer, str):
            if tokenizer not in TOKENIZERS:
                raise ValueError(
                    f"tokenizer must be one of {sorted(TOKENIZERS)} or a callable, "
                    f"got {tokenizer!r}"
                )
        elif not callable(tokenizer):
            raise TypeError(
                f"tokenizer must be a preset name or a callable, got {type_name(tokenizer)}"
            )
        if col is not None and not isinstance(tokenizer, str):
            items = check_texts(col.to_pylist(), "texts")  # a callable takes str
            col = None
        bar = make_progress(progress, n, "from_texts", unit="text")
        try:
            if col is not None:
                return cls._from_arrow(col, str(tokenizer), ngram, multiset, seed, nt, bar)
            return cls._from_texts(items, tokenizer, ngram, multiset, seed, nt, bar)
        finally:
            bar.close()

    @classmethod
    def _from_arrow(cls, col: Any, tokenizer: str, ngram: int, multiset: bool, seed: int,
                    nt: int, bar: Any) -> TokenSets:
        """:meth:`from_texts` of an Arrow string column (no nulls) with a preset."""
        prov = Provenance("texts", tokenizer, ngram, multiset, seed, HASH_VERSION)
        # about TEXT_CHUNK bytes a kernel call, so that Ctrl-C gets through between them
        pieces = _texts.pieces(col, TEXT_CHUNK)
        out = RowBuilder(sum(p[1].shape[0] - 1 for p in pieces), multiset)
        for base, offsets, data in pieces:
            rows = _tokenize.scan_utf8(offsets, data, TOKENIZERS[tokenizer], seed, ngram,
                                       multiset, nt, "texts", base)
            bar.update(offsets.shape[0] - 1)
            if len(pieces) == 1:
                return cls._trusted(*rows, prov)
            out.add(*rows)
            del rows
        return cls._trusted(*out.result(), prov)

    @classmethod
    def _from_texts(cls, items: list, tokenizer: Tokenizer, ngram: int, multiset: bool,
                    seed: int, nt: int, bar: Any) -> TokenSets:
        """:meth:`from_texts` on checked arguments; ``bar.update(n)`` after every n texts."""
        if isinstance(tokenizer, str):
            tok_name = str(tokenizer)
            prov = Provenance("texts", tok_name, ngram, multiset, seed, HASH_VERSION)
            out = RowBuilder(len(items), multiset)
            # a kernel call at a time is not interruptible: chunks of about
            # TEXT_CHUNK code points let Ctrl-C through between them
            chunks = list(_text_chunks(items, TEXT_CHUNK))
            for a, b in chunks:
                lowered = [str.lower(t) for t in items[a:b]]
                indptr, raw = _tokenize.scan_texts(lowered, TOKENIZERS[tokenizer], seed, nt)
                del lowered
                rows = _tokenize.finalize_rows(indptr, raw, ngram, multiset, nt)
                del indptr, raw
                bar.update(b - a)
                if len(chunks) == 1:
                    return cls._trusted(*rows, prov)
                out.add(*rows)
                del rows
            return cls._trusted(*out.result(), prov)
        else:
            tok_name = _callable_name(tokenizer)
            tokens: list[str] = []
            lengths = np.empty(len(items), dtype=np.int64)
            for i, text in enumerate(items):
                toks = tokenizer(text)
                if isinstance(toks, str) or not isinstance(toks, Sequence):
                    raise TypeError(
                        f"tokenizer must return a list of str; for texts[{i}] it returned "
                        f"{type_name(toks)}"
                    )
                toks = list(toks)  # one pass: its length is what was appended
                for j, t in enumerate(toks):
                    if type(t) is not str:
                        if not isinstance(t, str):
                            raise TypeError(
                                f"tokenizer returned a {type_name(t)} token for texts[{i}]; "
                                "tokens must be str"
                            )
                        toks[j] = exact_str(t)
                tokens.extend(toks)
                lengths[i] = len(toks)
                if not (i + 1) & _CALLABLE_EVERY_MASK:
                    bar.update(_CALLABLE_EVERY_MASK + 1)
            _, raw = _tokenize.scan_texts(tokens, _MODE_WHOLE, seed, nt)
            indptr = np.zeros(len(items) + 1, dtype=np.int64)
            np.cumsum(lengths, out=indptr[1:])
        prov = Provenance("texts", tok_name, ngram, multiset, seed, HASH_VERSION)
        out = cls._trusted(*_tokenize.finalize_rows(indptr, raw, ngram, multiset, nt), prov)
        bar.update(len(items) & _CALLABLE_EVERY_MASK)  # the texts since the last report
        return out

    @classmethod
    def from_ids(
        cls,
        sequences: Sequence[Sequence[int]] | Sequence[np.ndarray],
        ngram: int = 1,
        multiset: bool = False,
        n_threads: int | None = None,
        *,
        seed: int = 0,
    ) -> TokenSets:
        """Build token sets from pre-tokenized integer ids (e.g. ``input_ids``).

        Parameters
        ----------
        sequences : sequence of id sequences, 2-D integer array, or Arrow list column
            One id sequence per text, each of non-negative integers (any width
            up to uint64): a sequence (list, tuple, pandas Series...) of lists,
            tuples or 1-D integer arrays; a 2-D integer array, each row one
            sequence; or a pyarrow ``ListArray``, ``LargeListArray``,
            ``FixedSizeListArray`` or ``ChunkedArray`` of integer lists (a
            tokenized ``input_ids`` column), read from its buffers.  A null
            Arrow row is a ``ValueError`` naming it (``.fill_null([])`` makes
            nulls empty rows).  Repeats collapse, or are counted with
            ``multiset=True``.  For ids already flat, see :meth:`from_flat_ids`.
        ngram, multiset, n_threads, seed
            As in :meth:`from_texts`.  A unigram's hash is a bijection of its id,
            so distinct ids never collide.

        Returns
        -------
        TokenSets

        Notes
        -----
        Rows are checked in bulk (one concatenation, one check of all ids);
        an error names the first wrong row and what was wrong.  A 2-D
        C-contiguous int64/uint64 array and an Arrow column of int64/uint64
        (one chunk) are hashed without copying the ids.
        """
        if isinstance(sequences, (str, bytes)) or not hasattr(sequences, "__len__") or (
            isinstance(sequences, np.ndarray) and sequences.ndim == 0
        ):
            raise TypeError(
                f"sequences must be a sequence of id sequences, got {type_name(sequences)}"
            )
        ngram = check_int(ngram, "ngram", minimum=1, maximum=MAX_C_INT)
        multiset = _check_bool(multiset, "multiset")
        seed = check_seed(seed)
        nt = threads_for(len(sequences), effective_n_threads(n_threads), 2048)
        ids, indptr = _ids.sequences_ids(sequences)
        return cls._from_id_rows(ids, indptr, ngram, multiset, nt, seed)

    @classmethod
    def from_flat_ids(
        cls,
        values: Any,
        offsets: Any,
        ngram: int = 1,
        multiset: bool = False,
        n_threads: int | None = None,
        *,
        seed: int = 0,
    ) -> TokenSets:
        """Build token sets from flat ids: row ``i`` is ``values[offsets[i]:offsets[i + 1]]``.

        The same token sets as :meth:`from_ids` of the rows, without a Python
        object per row (e.g. the ``values`` and ``offsets`` of an Arrow list
        column, or a tokenizer's flat output).

        Parameters
        ----------
        values : array-like of non-negative int, shape (nnz,)
            Every id, row after row.  int64/uint64 arrays are hashed without a copy.
        offsets : array-like of int, shape (n + 1,)
            Row boundaries: starts at 0, non-decreasing, ends at ``len(values)``.
        ngram, multiset, n_threads, seed
            As in :meth:`from_texts`.

        Returns
        -------
        TokenSets
        """
        ngram = check_int(ngram, "ngram", minimum=1, maximum=MAX_C_INT)
        multiset = _check_bool(multiset, "multiset")
        seed = check_seed(seed)
        ids, indptr = _ids.flat_ids(values, offsets)
        nt = threads_for(indptr.shape[0] - 1, effective_n_threads(n_threads), 2048)
        return cls._from_id_rows(ids, indptr, ngram, multiset, nt, seed)

    @classmethod
    def _from_id_rows(cls, ids: np.ndarray, indptr: np.ndarray, ngram: int, multiset: bool,
                      nt: int, seed: int) -> TokenSets:
        """Hash checked uint64 ids and make the rows ``indptr`` bounds into token sets."""
        raw = _tokenize.hash_ids(ids, seed, nt)
        prov = Provenance("ids", None, ngram, multiset, seed, HASH_VERSION)
        return cls._trusted(*_tokenize.finalize_rows(indptr, raw, ngram, multiset, nt), prov)

    @classmethod
    def from_csr(
        cls,
        indptr: Any,
        hashes: Any,
        counts: Any = None,
        *,
        provenance: Provenance | None = None,
    ) -> TokenSets:
        """Wrap raw CSR arrays after checking them.

        Parameters
        ----------
        indptr : array-like of int, shape (n + 1,)
            Row boundaries: starts at 0, non-decreasing, ends at ``len(hashes)``.
        hashes : array-like of uint64
            Each row sorted ascending with no repeats.
        counts : array-like of int, optional
            Multiplicities (>= 1) for a multiset, aligned with ``hashes``.
        provenance : Provenance, optional
            How the hashes were made (e.g. ``ts.provenance`` of the collection
            they came from).  None means unknown: compatible with anything.

        Returns
        -------
        TokenSets
            Holding copies: later changes to the inputs do not leak in.
        """
        if provenance is not None and not isinstance(provenance, Provenance):
            raise TypeError(
                f"provenance must be a Provenance or None, got {type_name(provenance)}"
            )
        ip, h, c = check_csr(indptr, hashes, counts)
        if provenance is not None and provenance.multiset is not None and (
            provenance.multiset != (c is not None)
        ):
            raise ValueError(
                f"provenance says multiset={provenance.multiset} but counts is "
                f"{'given' if c is not None else 'None'}"
            )
        return cls._trusted(ip.copy(), h.copy(), None if c is None else c.copy(), provenance)

    # -------------------------------------------------------------- accessors
    @property
    def indptr(self) -> np.ndarray:
        return self._indptr

    @property
    def hashes(self) -> np.ndarray:
        return self._hashes

    @property
    def counts(self) -> np.ndarray | None:
        return self._counts

    @property
    def sizes(self) -> np.ndarray:
        return self._sizes

    @property
    def multiset(self) -> bool:
        return self._counts is not None

    @property
    def provenance(self) -> Provenance:
        """How the hashes were made (see :class:`Provenance`)."""
        return self._provenance

    @property
    def nnz(self) -> int:
        """Total number of stored (distinct per row) tokens."""
        return int(self._hashes.shape[0])

    def __len__(self) -> int:
        return int(self._indptr.shape[0] - 1)

    def row(self, i: int) -> np.ndarray:
        """The sorted hashes of row ``i`` (a read-only view)."""
        n = len(self)
        if isinstance(i, bool) or not isinstance(i, numbers.Integral):
            raise TypeError(f"i must be an int, got {type_name(i)}")
        if not -n <= i < n:
            raise IndexError(f"row {i} out of range for {n} token sets")
        i = int(i) % n
        return self._hashes[self._indptr[i]:self._indptr[i + 1]]

    @classmethod
    def concat(cls, parts: Sequence[TokenSets]) -> TokenSets:
        """Stack collections row-wise (e.g. test and validation queries as one).

        Parameters
        ----------
        parts : sequence of TokenSets
            All sets or all multisets, hashed the same way (same provenance,
            or raw hashes of unknown provenance).

        Returns
        -------
        TokenSets
            With the parts' provenance.
        """
        if isinstance(parts, TokenSets) or not isinstance(parts, Sequence):
            raise TypeError(f"parts must be a sequence of TokenSets, got {type_name(parts)}")
        for i, ts in enumerate(parts):
            if not isinstance(ts, TokenSets):
                raise TypeError(f"parts[{i}] must be a TokenSets, got {type_name(ts)}")
        if not parts:
            return cls._trusted(np.zeros(1, np.int64), np.zeros(0, np.uint64), None)
        if len({ts.multiset for ts in parts}) > 1:
            raise ValueError("parts mix sets and multisets (multiset=True/False)")
        prov = _merged_provenance(parts, "parts")
        offsets = np.cumsum([0] + [ts.nnz for ts in parts[:-1]])
        indptr = np.concatenate(
            [parts[0].indptr[:1]] + [ts.indptr[1:] + off for ts, off in zip(parts, offsets)]
        )
        hashes = np.concatenate([ts.hashes for ts in parts])
        counts = np.concatenate([ts.counts for ts in parts]) if parts[0].multiset else None
        return cls._trusted(indptr, hashes, counts, prov)

    def take(self, rows: Any) -> TokenSets:
        """A new TokenSets holding ``rows`` (indices or a boolean mask), in that order."""
        idx = row_indices(rows, len(self), "token sets")
        starts = self._indptr[idx]
        lens = self._indptr[idx + 1] - starts
        indptr = np.zeros(idx.shape[0] + 1, dtype=np.int64)
        np.cumsum(lens, out=indptr[1:])
        gather = np.repeat(starts - indptr[:-1], lens) + np.arange(indptr[-1])
        counts = None if self._counts is None else self._counts[gather]
        return TokenSets._trusted(indptr, self._hashes[gather], counts, self._provenance)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TokenSets):
            return NotImplemented
        return (
            np.array_equal(self._indptr, other._indptr)
            and np.array_equal(self._hashes, other._hashes)
            and self.multiset == other.multiset
            and (self._counts is None or np.array_equal(self._counts, other._counts))
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        kind = "bags" if self.multiset else "sets"
        return f"TokenSets({len(self)} {kind}, {self.nnz} tokens)"

    def __reduce__(self):
        return (_rebuild, (self._indptr, self._hashes, self._counts, self._provenance))

    def __setattr__(self, name: str, value: Any) -> None:
        if hasattr(self, "_sizes"):
            raise AttributeError("TokenSets is immutable")
        object.__setattr__(self, name, value)


def _text_chunks(items: list, budget: int) -> list[tuple[int, int]]:
    """``(start, stop)`` ranges of ``items`` holding about ``budget`` code points each."""
    n = len(items)
    if n == 0:
        return [(0, 0)]
    ends = np.cumsum(np.fromiter(map(len, items), dtype=np.int64, count=n))
    if ends[-1] <= budget:
        return [(0, n)]
    cuts = np.searchsorted(ends, np.arange(budget, int(ends[-1]), budget), side="left") + 1
    bounds = np.unique(np.concatenate([[0], np.minimum(cuts, n), [n]]))
    return list(zip(bounds[:-1].tolist(), bounds[1:].tolist()))


def _rebuild(indptr, hashes, counts, provenance=None):
    return TokenSets._trusted(indptr, hashes, counts, provenance)


def _check_bool(value: Any, name: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a bool, got {type_name(value)}")
    return bool(value)
