"""Field lists of TokenSets: coercion and compatibility checks.

A *fields* argument is one :class:`~overlap.TokenSets` or a sequence of equally
long ones (one per field of a sample).  Two sides of a comparison must have the
same number of fields, the same kind (sets or multisets), and field ``f`` of
one side must have been hashed the same way as field ``f`` of the other (see
:class:`~overlap.tokensets.Provenance`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ._kernels._collection import MAX_FIELDS
from ._validation import type_name
from .tokensets import TokenSets


class Handover:
    """Checked fields (:func:`as_fields`) handed to a self-join by their only holder.

    An index over a large set of rows copies them in size order
    (``_index.renumbers_by_size``); a self-join then reads only that copy.
    An index built from a Handover (``OverlapIndex._build``) takes the
    fields out exactly once and lets them go right after the copy is made,
    before its postings are built; it then answers only its self-join.  A
    caller that keeps no reference of its own (``overlap dedup`` without
    ``--report``, through ``overlap.dedup.self_join_edges``) has the fields'
    hashes freed there: 8 bytes a token less at the peak.  The results are
    the same either way.

    ``lean=True`` also builds the self-join's postings without their entry
    signatures (``ReferenceIndex(signatures=False)``): 8 bytes a stored
    token less again, for a slower join (500,000 generated rows at 0.8:
    1.84-2.01 s against 1.24-1.49 s).  The command line's ``overlap dedup``,
    reading files that may not fit twice, asks for it; :func:`overlap.dedup`
    does not.
    """

    __slots__ = ("_fields", "n_rows", "lean")

    def __init__(self, fields: tuple, lean: bool = False) -> None:
        self._fields: tuple | None = fields
        self.n_rows = len(fields[0])
        self.lean = bool(lean)

    def take(self) -> tuple:
        """The fields; RuntimeError if they were taken already."""
        fields, self._fields = self._fields, None
        if fields is None:
            raise RuntimeError("Handover: the fields were taken already")
        return fields


def as_fields(x: Any, name: str) -> tuple:
    """One TokenSets, or a non-empty sequence of equally long TokenSets (fields)."""
    if isinstance(x, TokenSets):
        return (x,)
    if isinstance(x, (str, bytes)) or not isinstance(x, Sequence):
        raise TypeError(
            f"{name} must be a TokenSets or a sequence of TokenSets (one per field), "
            f"got {type_name(x)}"
        )
    fields = tuple(x)
    if not fields:
        raise ValueError(f"{name} must have at least one field, got an empty sequence")
    if len(fields) > MAX_FIELDS:
        raise ValueError(f"{name}: at most {MAX_FIELDS} fields are supported, got {len(fields)}")
    for f, ts in enumerate(fields):
        if not isinstance(ts, TokenSets):
            raise TypeError(f"{name}[{f}] must be a TokenSets, got {type_name(ts)}")
    n = len(fields[0])
    for f, ts in enumerate(fields):
        if len(ts) != n:
            raise ValueError(
                f"{name}: every field must have the same number of rows; field 0 has "
                f"{n}, field {f} has {len(ts)}"
            )
    kinds = {ts.multiset for ts in fields}
    if len(kinds) > 1:
        raise ValueError(f"{name}: fields mix sets and multisets (multiset=True/False)")
    return fields


def _field_name(name: str, fields: tuple, f: int) -> str:
    return name if len(fields) == 1 else f"{name}[{f}]"


def check_compatible(left: tuple, right: tuple, lname: str, rname: str) -> None:
    """Raise ValueError unless ``left`` and ``right`` can be compared field by field."""
    if len(left) != len(right):
        raise ValueError(
            f"{lname} has {len(left)} field(s) but {rname} has {len(right)}; "
            "they must have the same fields"
        )
    if left[0].multiset != right[0].multiset:
        raise ValueError(
            f"{lname} and {rname} must both be sets or both multisets (multiset=...)"
        )
    for f, (a, b) in enumerate(zip(left, right)):
        if not a.provenance.compatible(b.provenance):
            raise ValueError(
                f"{_field_name(lname, left, f)} and {_field_name(rname, right, f)} were "
                f"hashed differently, so their tokens cannot match: "
                f"{_field_name(lname, left, f)} by {a.provenance.describe()}, "
                f"{_field_name(rname, right, f)} by {b.provenance.describe()}"
            )
