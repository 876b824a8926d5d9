"""Typed results of the pipeline: score summaries (overall and per group) and reports.

Every summary counts the samples whose best match scores **at least** (``≥``)
each threshold; a score is exactly 1 when the token sets are identical in every
field.  ``as_dict()`` gives JSON-ready plain values, ``format()`` the text the
command line prints.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from .._validation import check_unit_interval, parse_float_text, type_name

__all__ = [
    "AT",
    "COMPARISON",
    "OverlapSummary",
    "GroupedSummary",
    "summarize",
    "summarize_by",
    "parse_thresholds",
    "CleanSettings",
    "DedupCounts",
    "SampleCounts",
    "CleanReport",
]

#: Default thresholds of a summary: half overlap, the published dedup threshold, identical.
AT = (0.5, 0.8, 1.0)

#: How a summary compares scores with its thresholds (printed with every summary).
COMPARISON = "≥"


def parse_thresholds(at: Any, name: str = "at") -> tuple[float, ...]:
    """Thresholds as a sorted tuple of distinct floats in [0, 1].

    Parameters
    ----------
    at : sequence of float, or comma-separated str ("0.5,0.8,1.0")
    name : str
        Argument name for error messages.
    """
    if isinstance(at, str):
        parts = [p.strip() for p in at.split(",")]
        if "" in parts:
            raise ValueError(
                f"{name} must be comma-separated numbers in [0, 1] with none left empty, "
                f"got {at!r}"
            )
        try:
            at = [parse_float_text(p, name) for p in parts]
        except ValueError:
            raise ValueError(f"{name} must be comma-separated numbers in [0, 1], got {at!r}") from None
    if isinstance(at, (bytes, bytearray)) or not isinstance(at, (Sequence, np.ndarray)):
        raise TypeError(f"{name} must be a sequence of numbers in [0, 1], got {type_name(at)}")
    ts = sorted({check_unit_interval(t, name) for t in at})
    if not ts:
        raise ValueError(f"{name} must hold at least one threshold")
    return tuple(ts)


def _check_scores(scores: Any) -> np.ndarray:
    s = np.asarray(scores, dtype=np.float64)
    if s.ndim != 1:
        raise ValueError(f"scores must be one-dimensional, got shape {s.shape}")
    if s.size and (np.isnan(s).any() or s.min() < 0 or s.max() > 1):
        raise ValueError("scores must be numbers in [0, 1] (no NaN)")
    return s


def _pct(count: int, n: int) -> str:
    return f"{100.0 * count / n:.2f}%" if n else "0.00%"


@dataclass(frozen=True)
class OverlapSummary:
    """Distribution of max-overlap scores: counts at thresholds (``≥``) and the mean.

    Attributes
    ----------
    n : int
        Number of scores.
    at : tuple of float
        The thresholds, ascending.
    counts : tuple of int
        ``counts[k]`` = number of scores ``>= at[k]``.
    identical : int
        Number of scores equal to 1 (token sets identical in every field).
    mean : float
        Mean score (0 when ``n`` is 0).
    """

    n: int
    at: tuple
    counts: tuple
    identical: int
    mean: float

    def count(self, t: float) -> int:
        """Number of scores ``>= t`` (``t`` must be one of :attr:`at`)."""
        return self.counts[self.at.index(t)]

    def share(self, t: float) -> float:
        """Share (0..1) of scores ``>= t``."""
        return self.count(t) / self.n if self.n else 0.0

    @property
    def identical_share(self) -> float:
        return self.identical / self.n if self.n else 0.0

    def as_dict(self) -> dict:
        """Plain JSON-ready dict: ``n``, ``ge_T`` counts and ``ge_T_share``, ``identical``, ``mean``."""
        out: dict[str, Any] = {"n": self.n}
        for t, c in zip(self.at, self.counts):
            out[f"ge_{t:g}"] = c
            out[f"ge_{t:g}_share"] = c / self.n if self.n else 0.0
        out["identical"] = self.identical
        out["mean"] = self.mean
        return out

    def format(self, label: str = "") -> str:
        """One line: counts and percentages (two decimals) at each threshold, and the mean."""
        parts = [f"{COMPARISON}{t:g}: {c:,} ({_pct(c, self.n)})"
                 for t, c in zip(self.at, self.counts)]
        if 1.0 not in self.at:
            parts.append(f"identical: {self.identical:,} ({_pct(self.identical, self.n)})")
        parts.append(f"mean {self.mean:.4f}")
        head = f"{label}: " if label else ""
        return f"{head}{self.n:,} samples | " + " | ".join(parts)


def summarize(scores: Any, at: Any = AT) -> OverlapSummary:
    """Summarise max-overlap scores: counts ``>=`` each threshold, identical, mean.

    Parameters
    ----------
    scores : array-like of float in [0, 1]
    at : sequence of float in [0, 1] or comma-separated str, default :data:`AT`

    Returns
    -------
    OverlapSummary
    """
    s = _check_scores(scores)
    ts = parse_thresholds(at)
    n = int(s.shape[0])
    if n == 0:
        return OverlapSummary(0, ts, tuple(0 for _ in ts), 0, 0.0)
    return OverlapSummary(
        n, ts, tuple(int(np.count_nonzero(s >= t)) for t in ts),
        int(np.count_nonzero(s == 1.0)), float(s.mean()),
    )


@dataclass(frozen=True)
class GroupedSummary:
    """A summary per group (e.g. per language) and overall.

    Attributes
    ----------
    by : str
        The column grouped by.
    groups : dict of str to OverlapSummary
        In order of first appearance.
    overall : OverlapSummary
    """

    by: str
    groups: dict
    overall: OverlapSummary

    def rows(self) -> list[dict]:
        """One plain dict per group, ``overall`` last (for CSV/JSON)."""
        return [{self.by: g, **s.as_dict()} for g, s in self.groups.items()] + \
               [{self.by: "overall", **self.overall.as_dict()}]

    def table(self) -> dict[str, list]:
        """:meth:`rows` as columns (for :func:`overlap.pipeline.tables.write_table`)."""
        rows = self.rows()
        return {k: [r[k] for r in rows] for k in rows[0]}

    def format(self) -> str:
        """An aligned text table: one row per group, ``overall`` last."""
        at = self.overall.at
        head = [self.by, "n"] + [f"{COMPARISON}{t:g}" for t in at] + ["mean"]
        body = []
        for g, s in [*self.groups.items(), ("overall", self.overall)]:
            body.append([str(g), f"{s.n:,}"]
                        + [f"{c:,} ({_pct(c, s.n)})" for c in s.counts] + [f"{s.mean:.4f}"])
        widths = [max(len(r[i]) for r in [head, *body]) for i in range(len(head))]
        lines = []
        for r in [head, *body]:
            cells = [r[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(r[1:], widths[1:])]
            lines.append("  ".join(cells).rstrip())
        return "\n".join(lines)


def summarize_by(scores: Any, groups: Sequence, by: str = "group", at: Any = AT) -> GroupedSummary:
    """Summaries of ``scores`` per value of ``groups`` (same length), plus overall.

    Group values are shown as ``str(value)``; ``None`` becomes ``"(none)"``.
    """
    s = _check_scores(scores)
    if isinstance(groups, (str, bytes)) or not isinstance(groups, (Sequence, np.ndarray)):
        raise TypeError(f"groups must be a sequence of group values, got {type_name(groups)}")
    if len(groups) != s.shape[0]:
        raise ValueError(f"groups has {len(groups)} values but there are {s.shape[0]} scores")
    if not isinstance(by, str):
        raise TypeError(f"by must be str, got {type_name(by)}")
    ts = parse_thresholds(at)
    labels = ["(none)" if g is None else str(g) for g in groups]
    members: dict[str, list[int]] = {}
    for i, g in enumerate(labels):
        members.setdefault(g, []).append(i)
    return GroupedSummary(
        by, {g: summarize(s[np.asarray(ix, dtype=np.int64)], ts) for g, ix in members.items()},
        summarize(s, ts),
    )


# ------------------------------------------------------------------- clean
@dataclass(frozen=True)
class CleanSettings:
    """What :func:`overlap.pipeline.clean` was asked to do."""

    threshold: float
    keep: str
    test_size: int
    valid_size: int
    turns: int
    seed: int
    ngram: int
    tokenizer: str
    n_threads: int
    at: tuple
    measure: str = "dice"


@dataclass(frozen=True)
class DedupCounts:
    """What dedup removed from the pooled units.

    Attributes
    ----------
    units : int
        Units pooled (train, then valid, then test).
    removed, kept, passes, pairs_above_threshold : int
    removed_by_split : dict of str to int
        Removed units per original split.
    removed_units : list of dict
        Every removed unit: ``split``, ``index`` (in its original split),
        ``kept_split`` and ``kept_for`` (the unit it was removed for, in that
        split; as in :attr:`overlap.DedupResult.kept_for`, following the chain
        ends at a kept unit), ``score`` (their ratio) and both ``text`` and
        ``kept_text``.  The same keys as every other report.
    """

    units: int
    removed: int
    kept: int
    passes: int
    pairs_above_threshold: int
    removed_by_split: dict
    removed_units: list = field(default_factory=list)


@dataclass(frozen=True)
class SampleCounts:
    """Samples of one new split through the exact-duplicate removal."""

    before: int
    duplicates_within: int
    in_train: int
    after: int


@dataclass
class CleanReport:
    """Everything :func:`overlap.pipeline.clean` reports (``as_dict()`` is ``report.json``).

    Attributes
    ----------
    settings : CleanSettings
    unit : str
        What a unit is: ``"dialogue"`` or ``"row"``.
    inputs : dict of str to dict
        Per original split: ``units`` and ``samples`` (and ``path`` when read from a file).
    before, after : dict of str to OverlapSummary
        Each eval split's scan against train, on the original and the new split.
    dedup : DedupCounts
    resplit : dict of str to int
        Units per new split.
    samples : dict of str to SampleCounts
    timing_s : dict of str to float
        Seconds per step.
    moved : dict of str to dict
        Per new split, units that came from another original split
        (``from_SPLIT``: count) and, for tables whose splits have different
        columns, ``without_column`` (column: rows of the new split that lack it)
        and ``with_column`` (a column its original split lacked: rows that brought it).
    """

    settings: CleanSettings
    unit: str
    inputs: dict
    before: dict
    dedup: DedupCounts
    resplit: dict
    samples: dict
    after: dict
    timing_s: dict
    moved: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {
            "settings": asdict(self.settings),
            "unit": self.unit,
            "inputs": self.inputs,
            "before": {k: v.as_dict() for k, v in self.before.items()},
            "dedup": asdict(self.dedup),
            "resplit": dict(self.resplit),
            "moved": dict(self.moved),
            "samples": {k: asdict(v) for k, v in self.samples.items()},
            "after": {k: v.as_dict() for k, v in self.after.items()},
            "timing_s": dict(self.timing_s),
        }
