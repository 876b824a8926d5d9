"""Dialogue corpora: DailyDialog-style files and (context, response) samples."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from ._validation import check_int, type_name

__all__ = ["EOU", "read_dialogues", "parse_dialogue", "Samples", "make_samples"]

#: Utterance terminator of DailyDialog-style files.
EOU = "__eou__"


def parse_dialogue(line: str) -> list[str]:
    """Split one DailyDialog line into stripped utterances (empty ones dropped)."""
    return [u.strip() for u in line.split(EOU) if u.strip()]


def read_dialogues(path: str | os.PathLike) -> list[list[str]]:
    """Read a DailyDialog-style file: one dialogue a line, utterances ended by ``__eou__``.

    Parameters
    ----------
    path : str or path-like
        UTF-8 text (a BOM is ignored); blank lines are skipped.

    Returns
    -------
    list of list of str
        One list of utterances per dialogue, in file order.

    Raises
    ------
    ValueError
        When a non-blank line holds no utterance; the message names file and line.
    """
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or path-like, got {type_name(path)}")
    dialogues = []
    with open(path, encoding="utf-8-sig", newline=None) as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            utts = parse_dialogue(line)
            if not utts:
                raise ValueError(f"{os.fspath(path)}:{lineno}: no utterance on this line")
            dialogues.append(utts)
    return dialogues


@dataclass(frozen=True)
class Samples:
    """(context, response) samples cut from dialogues.

    Attributes
    ----------
    context, response : list of str
    dialogue : ndarray of int64
        Index of the dialogue each sample comes from.
    turn : ndarray of int64
        Index of the response utterance within its dialogue.
    """

    context: list[str]
    response: list[str]
    dialogue: np.ndarray
    turn: np.ndarray

    def __len__(self) -> int:
        return len(self.response)


def make_samples(
    dialogues: Sequence[Sequence[str]], turns: int = 1, *, separator: str = " "
) -> Samples:
    """Cut dialogues into (context, response) samples.

    Every utterance but the first of each dialogue is a response; its context is
    the up to ``turns`` utterances before it, joined with ``separator``.  With
    ``turns=1`` the samples are the consecutive pairs (utterance i, utterance i+1).

    Parameters
    ----------
    dialogues : sequence of sequences of str
    turns : int, default 1
        Context length in utterances (>= 1).
    separator : str, default " "

    Returns
    -------
    Samples
    """
    turns = check_int(turns, "turns", minimum=1)
    if not isinstance(separator, str):
        raise TypeError(f"separator must be str, got {type_name(separator)}")
    if isinstance(dialogues, (str, bytes)):
        raise TypeError("dialogues must be a sequence of utterance lists, got a str")
    ctx, rsp, did, tid = [], [], [], []
    for d, utts in enumerate(_iter_dialogues(dialogues)):
        for t in range(1, len(utts)):
            ctx.append(separator.join(utts[max(0, t - turns):t]))
            rsp.append(utts[t])
            did.append(d)
            tid.append(t)
    return Samples(ctx, rsp, np.asarray(did, dtype=np.int64), np.asarray(tid, dtype=np.int64))


def _iter_dialogues(dialogues: Iterable) -> Iterable[Sequence[str]]:
    for d, utts in enumerate(dialogues):
        if isinstance(utts, str) or not isinstance(utts, Sequence):
            raise TypeError(f"dialogues[{d}] must be a list of str, got {type_name(utts)}")
        for u, x in enumerate(utts):
            if not isinstance(x, str):
                raise TypeError(f"dialogues[{d}][{u}] must be str, got {type_name(x)}")
        yield utts
