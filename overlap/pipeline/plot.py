"""Histograms of overlap distributions: a PNG (matplotlib) or text for the terminal.

The PNG uses matplotlib's object API (``Figure`` + Agg canvas), never pyplot, so
it touches no global state and works without a display.  matplotlib is an
optional extra (``pip install 'overlap-metrics[plot]'``), imported when used.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from .._validation import MEASURE_LABELS, check_int, check_measure, type_name
from .._optional import MissingExtra, require
from .output import atomic_write

__all__ = ["histogram_counts", "text_histogram", "histogram_figure", "save_histogram",
           "have_matplotlib"]


def _series(series: Any) -> dict[str, np.ndarray]:
    if isinstance(series, Mapping):
        items = list(series.items())
    else:
        items = [("scores", series)]
    if not items:
        raise ValueError("series must hold at least one set of scores")
    out = {}
    for label, s in items:
        a = np.asarray(s, dtype=np.float64)
        if a.ndim != 1:
            raise ValueError(f"series[{label!r}] must be one-dimensional, got shape {a.shape}")
        if a.size and (np.isnan(a).any() or a.min() < 0 or a.max() > 1):
            raise ValueError(f"series[{label!r}] must hold scores in [0, 1] (no NaN)")
        out[str(label)] = a
    return out


def histogram_counts(scores: Any, bins: int = 10) -> tuple[np.ndarray, np.ndarray]:
    """Counts of scores in ``bins`` equal bins over [0, 1] (1.0 falls in the last).

    Returns
    -------
    counts : ndarray of int64, shape (bins,)
    edges : ndarray of float64, shape (bins + 1,)
    """
    bins = check_int(bins, "bins", minimum=1)
    if isinstance(scores, Mapping):
        raise TypeError("scores must be an array of scores, got a mapping")
    a = _series(scores)["scores"]
    edges = np.linspace(0.0, 1.0, bins + 1)
    counts, _ = np.histogram(a, bins=edges)
    return counts.astype(np.int64), edges


def text_histogram(series: Any, *, bins: int = 10, width: int = 40) -> str:
    """A histogram drawn with characters, one row per bin, one column per series.

    Parameters
    ----------
    series : array-like of scores, or mapping of label to array-like
    bins : int, default 10
    width : int, default 40
        Characters of the longest bar.

    Returns
    -------
    str
        Lines ``[lo, hi)  ####  count (share%)`` for every bin and series.
    """
    data = _series(series)
    bins = check_int(bins, "bins", minimum=1)
    width = check_int(width, "width", minimum=1)
    hist = {k: histogram_counts(v, bins)[0] for k, v in data.items()}
    edges = np.linspace(0.0, 1.0, bins + 1)
    top = max(1, max(int(h.max()) if h.size else 0 for h in hist.values()))
    lines = []
    for label, h in hist.items():
        total = max(1, int(h.sum()))
        if len(hist) > 1 or label != "scores":
            lines.append(f"{label} (n={int(h.sum()):,})")
        for b in range(bins):
            close = "]" if b == bins - 1 else ")"
            bar = "#" * int(round(width * h[b] / top))
            lines.append(
                f"  [{edges[b]:.2f}, {edges[b + 1]:.2f}{close} {bar:<{width}} "
                f"{int(h[b]):>8,} ({100 * h[b] / total:6.2f}%)"
            )
    return "\n".join(lines)


def have_matplotlib() -> bool:
    """True when matplotlib can be imported."""
    try:
        require("matplotlib", "plot", "plotting")
    except MissingExtra:
        return False
    return True


def histogram_figure(series: Any, *, bins: int = 20, title: str = "Max overlap against train",
                     measure: str = "dice"):
    """A matplotlib ``Figure`` with one histogram (share of samples per bin) per series.

    Parameters
    ----------
    series : array-like of scores, or mapping of label to array-like
    bins : int, default 20
    title : str
    measure : str, default "dice"
        The measure of the scores, named on the x axis.

    Returns
    -------
    matplotlib.figure.Figure
    """
    data = _series(series)
    bins = check_int(bins, "bins", minimum=1)
    if not isinstance(title, str):
        raise TypeError(f"title must be str, got {type_name(title)}")
    check_measure(measure)
    figure = require("matplotlib.figure", "plot", "plotting")
    fig = figure.Figure(figsize=(7, 4), dpi=100, layout="constrained")
    ax = fig.add_subplot()
    edges = np.linspace(0.0, 1.0, bins + 1)
    for label, a in data.items():
        weights = np.full(a.shape[0], 100.0 / max(a.shape[0], 1))
        ax.hist(a, bins=edges, weights=weights, histtype="stepfilled", alpha=0.45,
                label=f"{label} (n={a.shape[0]:,}, mean {a.mean() if a.size else 0:.3f})")
    ax.set_xlim(0, 1)
    ax.set_xlabel(f"max overlap score ({MEASURE_LABELS[measure]}, min over fields)")
    ax.set_ylabel("% of samples")
    ax.set_title(title)
    ax.set_ylim(0, ax.get_ylim()[1] * 1.3)  # room for the legend above the bars
    ax.legend(loc="upper right")
    return fig


def save_histogram(
    path: str | os.PathLike, series: Any, *, bins: int = 20,
    title: str = "Max overlap against train", measure: str = "dice",
) -> str:
    """Write :func:`histogram_figure` as a PNG; returns the path.

    Raises
    ------
    overlap.pipeline.tables.MissingExtra
        When matplotlib is not installed.
    """
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or path-like, got {type_name(path)}")
    fig = histogram_figure(series, bins=bins, title=title, measure=measure)
    backend = require("matplotlib.backends.backend_agg", "plot", "plotting")
    backend.FigureCanvasAgg(fig)
    with atomic_write(path, "wb") as fh:
        fig.savefig(fh, format="png")
    return os.fspath(path)
