"""The splits of a pipeline source, shared by :mod:`.cleaning` and :mod:`.decontamination`.

A split is a DailyDialog file or a list of dialogues (unit: a dialogue), or a
file or table of named text fields (unit: a row).  Private to the package:
the names here are public so that both steps (and the command line, for the
input files it must not overwrite) use them without reaching into each other.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._validation import type_name
from .dialogue import EOU, read_dialogues
from .tables import infer_format, read_named_fields

#: Output file extension of each table format (other inputs are written as JSON lines).
EXT = {"csv": "csv", "tsv": "tsv", "jsonl": "jsonl", "parquet": "parquet"}


@dataclass
class Split:
    """One split of the input: dialogues, or a table with its compared columns."""

    units: Any          # list of dialogues, or a table (dict of columns)
    columns: list       # text columns compared (table input)
    n: int
    path: str | None = None
    fmt: str = "jsonl"


def read_split(v: Any, fields: Any, fmt: str | None, out: dict, k: str,
               field_names: dict | None = None) -> str:
    """Read one split (a file, a table or dialogues) into ``out[k]``; returns its unit kind.

    The compared fields of a table (named, or inferred when ``fields`` is None)
    go to ``field_names[k]``.
    """
    names = None
    if isinstance(v, (str, os.PathLike)):
        f = infer_format(v, fmt)
        p = os.fspath(v)
        if f == "dailydialog":
            if not os.path.isfile(p):
                raise FileNotFoundError(f"{p}: no such file")
            out[k] = Split(dialogues_of(p), [], 0, p, f)
            return "dialogue"
        names, cols, table = read_named_fields(p, fields, f)
        out[k] = Split(table, cols, 0, p, f)
    elif isinstance(v, Mapping) or type(v).__module__.split(".")[0] in ("pandas", "datasets"):
        names, cols, table = read_named_fields(v, fields)
        out[k] = Split(table, cols, 0)
    elif isinstance(v, (str, bytes)) or not isinstance(v, Sequence):
        raise TypeError(f"source[{k!r}] must be a file path, a table or a list of dialogues, "
                        f"got {type_name(v)}")
    else:
        out[k] = Split(list(v), [], 0)
        return "dialogue"
    if field_names is not None:
        field_names[k] = names
    return "row"


def dialogues_of(path: str) -> list:
    """The dialogues of a DailyDialog file; a file with none is an error naming it."""
    dialogues = read_dialogues(path)
    if not dialogues:
        raise ValueError(f"{path}: no dialogue (0 samples read)")
    return dialogues


def take_rows(table: dict, idx: np.ndarray) -> dict:
    ix = idx.tolist()
    return {c: [v[i] for i in ix] for c, v in table.items()}


def unit_text(kind: str, sp: Split, i: int) -> str:
    if kind == "dialogue":
        return f" {EOU} ".join(sp.units[i])
    return " | ".join(col[i] for col in sp.columns)


def input_paths(source: Any) -> list[str]:
    if isinstance(source, (str, os.PathLike)):
        return [os.fspath(source)]
    if isinstance(source, Mapping):
        return [os.fspath(v) for v in source.values() if isinstance(v, (str, os.PathLike))]
    return []
