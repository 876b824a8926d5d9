"""Relation-extraction F1 of the CCKS 2019 IPRE task (sentence and bag tracks).

Label files are tab-separated, UTF-8 (with or without BOM), ``\\n`` or
``\\r\\n`` line endings:

* ``relation2id.txt``: ``name<TAB>id``;
* sentence track: ``sentID<TAB>relationIDs``;
* bag track: ``bagID<TAB>e_h<TAB>e_t<TAB>sentIDs<TAB>relationIDs``;

relationIDs and sentIDs are space-separated; relation 0 is NA.  Internally an
item's relation set is a 64-bit mask (relation ids 0..63), so scoring is a
few vectorised popcounts.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from . import _relparse
from ._compat import bitwise_count

__all__ = [
    "RelationF1",
    "RelationLabels",
    "RelationScore",
    "read_bag_relations",
    "read_relation_ids",
    "read_relation_predictions",
    "read_sent_relations",
    "relation_f1",
    "upper_bound",
]

MAX_RELATION_ID = 63
_ALL = np.uint64(0xFFFFFFFFFFFFFFFF)


# ----------------------------------------------------------------- labels


class RelationLabels(Mapping):
    """Item id -> frozenset of relation ids, stored as one uint64 mask per item.

    Returned by ``read_sent_relations`` / ``read_bag_relations``; any mapping
    of id -> iterable of ints is accepted wherever a ``RelationLabels`` is.

    Attributes
    ----------
    ids : list of str
        Item ids in file order.
    masks : numpy.ndarray of uint64
        Bit r of ``masks[k]`` is set when item ``ids[k]`` has relation r.
    source : str or None
        File the labels were read from (used in error messages).
    heads, tails : list of str or None
        Bag track only: the two entities of each bag.
    sent_ids : list of tuple of str or None
        Bag track only: the sentences of each bag.
    """

    def __init__(self, ids, masks, *, source=None, heads=None, tails=None, sent_ids=None):
        self.ids = list(ids)
        self.masks = np.ascontiguousarray(masks, dtype=np.uint64)
        if self.masks.shape != (len(self.ids),):
            raise ValueError("masks must have one entry per id")
        self.source = source
        self._heads = heads
        self._tails = tails
        self._sent_ids = sent_ids
        self._raw = None  # (file bytes, spans): middle columns not decoded yet

    @classmethod
    def _from_scan(cls, ids, index, masks, source, raw=None, spans=None):
        labels = cls.__new__(cls)
        labels.ids = ids
        labels.masks = masks
        labels.source = source
        labels._heads = labels._tails = labels._sent_ids = None
        labels._raw = (raw, spans) if spans is not None and spans.shape[1] == 3 else None
        labels.__dict__["index"] = index  # cached_property storage
        return labels

    def _column(self, k: int):
        if self._raw is None:
            return None
        raw, spans = self._raw
        return [raw[a:b].decode("utf-8") for a, b in spans[:, k].tolist()]

    @cached_property
    def index(self) -> dict:
        """Item id -> row."""
        return {k: i for i, k in enumerate(self.ids)}

    @property
    def heads(self):
        """Bag track: the head entity of every bag (None for the sentence track)."""
        if self._heads is None:
            self._heads = self._column(0)
        return self._heads

    @heads.setter
    def heads(self, value):
        self._heads = value

    @property
    def tails(self):
        """Bag track: the tail entity of every bag (None for the sentence track)."""
        if self._tails is None:
            self._tails = self._column(1)
        return self._tails

    @tails.setter
    def tails(self, value):
        self._tails = value

    @property
    def sent_ids(self):
        """Bag track: the sentence ids of every bag, as tuples."""
        if self._sent_ids is None:
            self._sent_ids = self._column(2)
        if self._sent_ids is None:
            return None
        return [tuple(s.split()) for s in self._sent_ids]

    def __getitem__(self, item) -> frozenset:
        return _bits(int(self.masks[self.index[item]]))

    def __iter__(self):
        return iter(self.ids)

    def __len__(self) -> int:
        return len(self.ids)

    def __contains__(self, item) -> bool:
        return item in self.index

    def __repr__(self) -> str:
        src = f" from {self.source!r}" if self.source else ""
        return f"RelationLabels({len(self.ids)} items{src})"


def _bits(mask: int) -> frozenset:
    out = []
    r = 0
    while mask:
        if mask & 1:
            out.append(r)
        mask >>= 1
        r += 1
    return frozenset(out)


def _mask_of(values, what: str) -> int:
    if isinstance(values, (int, np.integer)) and not isinstance(values, bool):
        values = (values,)
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise TypeError(f"{what}: relation ids must be an iterable of ints, got "
                        f"{type(values).__name__}")
    mask = 0
    for v in values:
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"{what}: relation id {v!r} is not an int")
        if not 0 <= v <= MAX_RELATION_ID:
            raise ValueError(f"{what}: relation id {v} is outside 0..{MAX_RELATION_ID}")
        mask |= 1 << int(v)
    return mask


def _as_labels(obj, name: str) -> RelationLabels:
    if isinstance(obj, RelationLabels):
        return obj
    if not isinstance(obj, Mapping):
        raise TypeError(f"{name} must be a mapping of item id -> relation ids "
                        f"(e.g. from read_sent_relations), got {type(obj).__name__}")
    ids = list(obj.keys())
    masks = np.fromiter((_mask_of(obj[k], f"{name}[{k!r}]") for k in ids),
                        dtype=np.uint64, count=len(ids))
    return RelationLabels(ids, masks)


# ----------------------------------------------------------------- readers


def _read_bytes(path) -> tuple[str, bytes]:
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or os.PathLike, got {type(path).__name__}")
    name = os.fspath(path)
    with open(path, "rb") as fh:
        data = fh.read()
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    return name, data


def decode_utf8(data: bytes, name: str) -> str:
    """Decode UTF-8 (BOM already stripped); ValueError ``"<file>:<line>: ..."``
    naming the first bad byte instead of a bare codec error."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        col = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise ValueError(f"{name}:{line}: not valid UTF-8 (byte 0x{data[exc.start]:02x} at "
                         f"byte {col} of the line)") from None


def _allowed_mask(relations) -> int:
    if relations is None:
        return (1 << 64) - 1
    if isinstance(relations, Mapping):
        values = relations.values()
    elif isinstance(relations, np.ndarray) and relations.ndim != 1:
        raise ValueError(f"relations must be 1-D (relation ids), got an array of shape "
                         f"{relations.shape}")
    elif isinstance(relations, Iterable) and not isinstance(relations, (str, bytes)):
        values = relations
    else:
        raise TypeError("relations must be a mapping name -> id (read_relation_ids) or "
                        f"an iterable of ids, got {type(relations).__name__}")
    return _mask_of(list(values), "relations")


def _parse(name: str, data: bytes, n_cols: int, relations) -> RelationLabels:
    allowed = _allowed_mask(relations)
    buf = np.frombuffer(data, dtype=np.uint8) if data else np.zeros(0, dtype=np.uint8)
    ids, index, masks, spans, error = _relparse.scan(buf, n_cols, allowed)
    if error is not None:
        line, msg = error
        raise ValueError(f"{name}:{line}: {msg}")
    return RelationLabels._from_scan(ids, index, masks, name, data, spans)


def _read_labels(path, n_cols: int, relations) -> RelationLabels:
    """Read a label file with ``n_cols`` columns (kept for older callers; use
    ``read_sent_relations``, ``read_bag_relations`` or
    ``read_relation_predictions``)."""
    name, data = _read_bytes(path)
    return _parse(name, data, n_cols, relations)


def read_relation_ids(path) -> dict:
    """Read ``relation2id.txt`` (``name<TAB>id`` per line) into {name: id}.

    Raises ValueError ``"<file>:<line>: ..."`` for a wrong column count, an
    empty name, an id that is not an integer in 0..63, or a duplicate name or id.
    """
    name, data = _read_bytes(path)
    text = decode_utf8(data, name)
    lines = text.split("\n")
    while lines and not lines[-1].strip():
        lines.pop()
    out: dict = {}
    seen: dict = {}
    for no, line in enumerate(lines, 1):
        line = line.rstrip("\r")
        if not line.strip():
            raise ValueError(f"{name}:{no}: blank line before more data")
        parts = line.split("\t")
        if len(parts) != 2:
            raise ValueError(f"{name}:{no}: expected 2 tab-separated columns, found {len(parts)}")
        rel, rid = parts[0].strip(), parts[1].strip()
        if not rel:
            raise ValueError(f"{name}:{no}: empty relation name")
        if not rid.isdigit() or not rid.isascii():
            raise ValueError(f"{name}:{no}: relation id {rid!r} is not a non-negative integer")
        v = int(rid)
        if v > MAX_RELATION_ID:
            raise ValueError(f"{name}:{no}: relation id {v} is outside 0..{MAX_RELATION_ID}")
        if rel in out:
            raise ValueError(f"{name}:{no}: duplicate relation name {rel!r}")
        if v in seen:
            raise ValueError(f"{name}:{no}: relation id {v} already used by {seen[v]!r}")
        out[rel] = v
        seen[v] = rel
    return out


def read_sent_relations(path, relations=None) -> RelationLabels:
    """Read a sentence-track file (``sentID<TAB>relationIDs``).

    Parameters
    ----------
    path : str or os.PathLike
    relations : mapping or iterable of int, optional
        The valid relation ids (e.g. ``read_relation_ids(...)``); any other id
        is an error.  Without it, ids 0..63 are accepted.

    Returns
    -------
    RelationLabels

    Raises
    ------
    ValueError
        ``"<file>:<line>: <problem>"`` for a wrong column count, an empty id,
        a relation id that is not an integer, out of 0..63 or unknown, an empty
        relation list, a duplicate item id, invalid UTF-8, or a blank line
        before more data (trailing blank lines are fine).
    """
    return _read_labels(path, 2, relations)


def read_bag_relations(path, relations=None) -> RelationLabels:
    """Read a bag-track file (``bagID<TAB>e_h<TAB>e_t<TAB>sentIDs<TAB>relationIDs``).

    Same rules and errors as ``read_sent_relations``; the result also carries
    ``heads``, ``tails`` and ``sent_ids``.
    """
    return _read_labels(path, 5, relations)


def read_relation_predictions(path, track: str = "sent", relations=None) -> RelationLabels:
    """Read a system's predictions for the sentence or the bag track.

    Sentence track: ``sentID<TAB>relationIDs``.  Bag track: either the five
    gold columns (``bagID<TAB>e_h<TAB>e_t<TAB>sentIDs<TAB>relationIDs``) or
    just ``bagID<TAB>relationIDs``; the first non-blank line decides, and
    every line must then have that many columns.

    Parameters
    ----------
    path : str or os.PathLike
    track : {"sent", "bag"}
    relations : mapping or iterable of int, optional
        The valid relation ids, as for ``read_sent_relations``.

    Returns
    -------
    RelationLabels

    Raises
    ------
    ValueError
        ``"<file>:<line>: <problem>"``, as the gold readers.
    """
    if track not in ("sent", "bag"):
        raise ValueError(f"track must be 'sent' or 'bag', got {track!r}")
    name, data = _read_bytes(path)
    n_cols = 2
    if track == "bag":
        buf = np.frombuffer(data, dtype=np.uint8) if data else np.zeros(0, dtype=np.uint8)
        n_cols = 2 if _relparse.count_columns(buf) == 2 else 5
    return _parse(name, data, n_cols, relations)


# ----------------------------------------------------------------- scoring


@dataclass(frozen=True)
class RelationScore:
    """Precision, recall and F1 with the counts they come from."""

    precision: float
    recall: float
    f1: float
    n_sys: int
    n_r: int
    n_std: int

    @classmethod
    def from_counts(cls, n_sys: int, n_r: int, n_std: int) -> "RelationScore":
        p = n_r / n_sys if n_sys else 0.0
        r = n_r / n_std if n_std else 0.0
        f = 2 * p * r / (p + r) if p + r > 0 else 0.0
        return cls(p, r, f, int(n_sys), int(n_r), int(n_std))


class RelationF1:
    """Result of ``relation_f1``: micro-averaged scores and ``per_relation``.

    Attributes
    ----------
    precision, recall, f1 : float
    n_sys, n_r, n_std : int
        Predicted non-NA labels, correct ones, gold non-NA labels.
    n_items : int
        Items scored.
    n_missing : int
        Scored gold items that have no prediction at all (scored as NA).
    per_relation : dict
        Relation id -> RelationScore, in id order (computed on first access):
        every non-NA relation of the label set when ``relation_f1`` was given
        one (``relations=``), zero rows included, as the CCKS overview's
        per-relation tables list them; otherwise every non-NA relation that
        occurs in the gold or the predictions.
    """

    def __init__(self, gold_masks: np.ndarray, pred_masks: np.ndarray, na: int,
                 relations=None, n_missing: int = 0):
        self._g = gold_masks
        self._p = pred_masks
        self.na = na
        self._relations = None if relations is None else sorted(int(r) for r in relations)
        self.n_missing = int(n_missing)
        keep = _ALL ^ np.uint64(1 << na)
        g = gold_masks & keep
        p = pred_masks & keep
        self.n_items = int(g.shape[0])
        score = RelationScore.from_counts(
            int(bitwise_count(p).sum(dtype=np.int64)),
            int(bitwise_count(g & p).sum(dtype=np.int64)),
            int(bitwise_count(g).sum(dtype=np.int64)),
        )
        self.precision, self.recall, self.f1 = score.precision, score.recall, score.f1
        self.n_sys, self.n_r, self.n_std = score.n_sys, score.n_r, score.n_std

    @cached_property
    def per_relation(self) -> dict:
        def bit_counts(m):
            bits = np.unpackbits(m.astype("<u8").view(np.uint8).reshape(-1, 8),
                                 axis=1, bitorder="little")
            return bits.sum(axis=0, dtype=np.int64)

        keep = _ALL ^ np.uint64(1 << self.na)
        g = self._g & keep
        p = self._p & keep
        n_std, n_sys, n_r = bit_counts(g), bit_counts(p), bit_counts(g & p)
        if self._relations is not None:
            rows = [r for r in self._relations if r != self.na]
        else:
            rows = [r for r in range(64) if n_std[r] or n_sys[r]]
        return {r: RelationScore.from_counts(n_sys[r], n_r[r], n_std[r]) for r in rows}

    def __repr__(self) -> str:
        return (f"RelationF1(precision={self.precision:.6f}, recall={self.recall:.6f}, "
                f"f1={self.f1:.6f}, n_sys={self.n_sys}, n_r={self.n_r}, n_std={self.n_std})")


def _where(labels: RelationLabels, row: int) -> str:
    if labels.source:
        return f"{labels.source}:{row + 1}: "
    return ""


def _aligned_pred(gold: RelationLabels, pred: RelationLabels, with_presence: bool = False,
                  name: str = "pred"):
    """Prediction masks in gold order (0 = predicted NA for missing items);
    with ``with_presence``, also a bool array: has gold item k a prediction.
    ``name`` is the caller's argument, for the error messages."""
    if pred.ids == gold.ids:
        if with_presence:
            return pred.masks, np.ones(len(gold.ids), dtype=bool)
        return pred.masks
    out = np.zeros(len(gold.ids), dtype=np.uint64)
    index = gold.index
    rows = np.empty(len(pred.ids), dtype=np.intp)
    for k, item in enumerate(pred.ids):
        j = index.get(item)
        if j is None:
            raise ValueError(f"{_where(pred, k)}{name} has a prediction for item {item!r}, "
                             "which is not in the gold labels")
        rows[k] = j
    if np.unique(rows).shape[0] != rows.shape[0]:  # only possible for odd mappings
        raise ValueError(f"{name} has duplicate item ids")
    out[rows] = pred.masks
    if with_presence:
        present = np.zeros(len(gold.ids), dtype=bool)
        present[rows] = True
        return out, present
    return out


def _subset_rows(gold: RelationLabels, subset) -> np.ndarray | None:
    if subset is None:
        return None
    if isinstance(subset, (str, bytes)) or not isinstance(subset, Iterable):
        raise TypeError(f"subset must be an iterable of item ids, got {type(subset).__name__}")
    if isinstance(subset, np.ndarray) and subset.ndim != 1:
        raise ValueError(f"subset must be 1-D (item ids), got an array of shape {subset.shape}")
    index = gold.index
    rows = []
    for item in subset:
        try:
            j = index.get(item)
        except TypeError:  # unhashable: a list, an array...
            raise TypeError(f"subset: item {item!r} is not an item id (unhashable "
                            f"{type(item).__name__})") from None
        if j is None:
            raise ValueError(f"subset: item {item!r} is not in the gold labels")
        rows.append(j)
    rows = np.unique(np.asarray(rows, dtype=np.intp))
    return rows


def _check_na(na) -> int:
    if isinstance(na, bool) or not isinstance(na, (int, np.integer)):
        raise TypeError(f"na must be an int, got {type(na).__name__}")
    if not 0 <= na <= MAX_RELATION_ID:
        raise ValueError(f"na must be in 0..{MAX_RELATION_ID}, got {na}")
    return int(na)


def _label_set(relations, na: int, gold_masks, other_masks) -> list[int] | None:
    """The ids of a label set (mapping name -> id or iterable of ids), checked
    to cover every relation in the labels; None when not given."""
    if relations is None:
        return None
    allowed = _allowed_mask(relations)
    ids = sorted(_bits(allowed))
    outside = _ALL ^ np.uint64(allowed | (1 << na))
    for what, masks in (("gold", gold_masks), ("pred", other_masks)):
        bad = masks & outside
        if bad.any():
            extra = sorted(_bits(int(np.bitwise_or.reduce(bad))))
            raise ValueError(f"{what} has relation id {extra[0]}, which is not in relations "
                             f"and is not na ({na})")
    return ids


def relation_f1(gold, pred, *, subset=None, na: int = 0, relations=None) -> RelationF1:
    """CCKS 2019 IPRE F1 (sentence or bag track: items are sentences or bags).

    Over the scored items: N_sys = number of predicted non-NA labels (an item
    predicted with two non-NA labels counts twice); N_r = those in the item's
    gold set; N_std = number of gold non-NA labels.  P = N_r / N_sys,
    R = N_r / N_std, F1 = 2PR / (P + R), each 0 where undefined.  NA never
    counts, in gold or prediction.

    Parameters
    ----------
    gold, pred : RelationLabels or mapping id -> iterable of int
        A gold item missing from ``pred`` is predicted NA; a ``pred`` item that
        is not in ``gold`` is an error.
    subset : iterable of item ids, optional
        Score only these items (e.g. the leaderboard's fixed half).
    na : int
        The NA relation id.
    relations : mapping name -> id or iterable of int, optional
        The label set (e.g. ``read_relation_ids("relation2id.txt")``): then
        ``per_relation`` lists every non-NA relation of it, zero rows
        included, and a relation outside it in gold or pred is a ValueError.

    Returns
    -------
    RelationF1
        Also counts, in ``n_missing``, the scored gold items without a
        prediction.
    """
    na = _check_na(na)
    gold = _as_labels(gold, "gold")
    pred = _as_labels(pred, "pred")
    p, present = _aligned_pred(gold, pred, with_presence=True)
    g = gold.masks
    rows = _subset_rows(gold, subset)
    if rows is not None:
        g, p, present = g[rows], p[rows], present[rows]
    labels = _label_set(relations, na, g, p)
    return RelationF1(g, p, na, labels, n_missing=int(present.size - np.count_nonzero(present)))


def upper_bound(gold, preds, *, subset=None, na: int = 0, relations=None) -> RelationF1:
    """F1 of an oracle that picks, for every item, the best of N systems.

    For each item the oracle takes, among the N systems' predictions, the one
    with the most correct non-NA labels; ties go to the prediction with fewer
    non-NA labels, then to the earlier system.  The chosen predictions are
    scored with ``relation_f1``.  (The oracle picks one system's whole
    prediction per item; it does not merge labels found by different systems.)

    Parameters
    ----------
    gold : RelationLabels or mapping
    preds : sequence of RelationLabels or mappings (at least one)
    subset, na, relations : as ``relation_f1``

    Returns
    -------
    RelationF1
        With an extra attribute ``choices``: for every scored item (gold
        order), the index of the chosen system.
    """
    na = _check_na(na)
    gold = _as_labels(gold, "gold")
    if isinstance(preds, (Mapping, str, bytes)) or not isinstance(preds, Iterable):
        raise TypeError("preds must be a sequence of predictions (mappings), got "
                        f"{type(preds).__name__}")
    if isinstance(preds, np.ndarray) and preds.ndim == 0:
        raise TypeError("preds must be a sequence of predictions (mappings), got a 0-d array")
    preds = [_as_labels(p, f"preds[{i}]") for i, p in enumerate(preds)]
    if not preds:
        raise ValueError("preds must hold at least one system's predictions")
    keep = _ALL ^ np.uint64(1 << na)
    stack = np.stack([_aligned_pred(gold, p, name=f"preds[{i}]")
                      for i, p in enumerate(preds)])  # (N, items)
    g = gold.masks
    correct = bitwise_count(stack & g & keep).astype(np.int64)
    size = bitwise_count(stack & keep).astype(np.int64)
    choice = np.argmax(correct * 128 - size, axis=0)  # first maximum = earlier system
    chosen = stack[choice, np.arange(g.shape[0])]
    rows = _subset_rows(gold, subset)
    if rows is not None:
        g, chosen, choice = g[rows], chosen[rows], choice[rows]
    labels = _label_set(relations, na, g, stack.ravel())
    result = RelationF1(g, chosen, na, labels)
    result.choices = choice
    return result
