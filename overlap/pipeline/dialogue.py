"""Dialogue corpora: DailyDialog-style files and (context, response) samples."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from .._lines import EOU  # the utterance terminator, re-exported
from .._progress import ProgressArg, check_progress
from .._readers import Lines, dialogue_lines, parse_dialogue
from .._validation import check_int, row_indices, type_name
from .output import atomic_write

__all__ = [
    "EOU",
    "SPLITS",
    "SPLIT_FILE_NAMES",
    "read_dialogues",
    "parse_dialogue",
    "Samples",
    "make_samples",
    "find_split_files",
    "read_splits",
    "format_dialogue",
    "write_dialogues",
]


def read_dialogues(path: str | os.PathLike, *,
                   max_line_bytes: int | None = None,
                   progress: ProgressArg = False) -> list[list[str]]:
    """Read a DailyDialog-style file: one dialogue a line, utterances ended by ``__eou__``.

    Parameters
    ----------
    path : str or path-like
        UTF-8 text (a BOM is ignored); blank lines are skipped.
    max_line_bytes : int, optional
        Longest line read (default 64 MiB, ``overlap._lines.MAX_LINE_BYTES``).
    progress : bool or callable f(bytes_read, file_size), default False
        Progress of the reading in bytes, reported every 4,096 lines and at the
        end (``bytes_read`` then reaches ``file_size``).

    Returns
    -------
    list of list of str
        One list of utterances per dialogue, in file order.

    Raises
    ------
    ValueError
        When a non-blank line holds no utterance or is not UTF-8; the message
        names file and line.
    """
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or path-like, got {type_name(path)}")
    check_progress(progress)
    src = Lines(os.fspath(path), max_line_bytes, progress)
    complete = False
    try:
        dialogues = [utts for _, utts in dialogue_lines(src)]
        complete = True
    finally:
        src.close(complete)
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

    def take(self, rows) -> Samples:
        """A new Samples holding ``rows`` (indices or a boolean mask), in that order."""
        idx = row_indices(rows, len(self), "samples")
        return Samples(
            [self.context[i] for i in idx],
            [self.response[i] for i in idx],
            self.dialogue[idx],
            self.turn[idx],
        )


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
    for d, utts in enumerate(checked_dialogues(dialogues)):
        for t in range(1, len(utts)):
            ctx.append(separator.join(utts[max(0, t - turns):t]))
            rsp.append(utts[t])
            did.append(d)
            tid.append(t)
    return Samples(ctx, rsp, np.asarray(did, dtype=np.int64), np.asarray(tid, dtype=np.int64))


def checked_dialogues(dialogues: Iterable, name: str = "dialogues"
                      ) -> Iterator[Sequence[str]]:
    """Every dialogue of ``dialogues``, each checked to be a list of str
    (errors name it ``name[d]`` or ``name[d][u]``)."""
    for d, utts in enumerate(dialogues):
        if isinstance(utts, str) or not isinstance(utts, Sequence):
            raise TypeError(f"{name}[{d}] must be a list of str, got {type_name(utts)}")
        for u, x in enumerate(utts):
            if not isinstance(x, str):
                raise TypeError(f"{name}[{d}][{u}] must be str, got {type_name(x)}")
        yield utts


# --------------------------------------------------------------- split folders

#: Canonical split names, in the order the pipeline uses them.
SPLITS = ("train", "valid", "test")

#: Files the pipeline writes the dialogues of each split to (DailyDialog's names).
SPLIT_FILE_NAMES = {
    "train": "dialogues_train.txt",
    "valid": "dialogues_validation.txt",
    "test": "dialogues_test.txt",
}

#: File names accepted for each split (DailyDialog's first, then plain ones).
SPLIT_FILES = {
    "train": ("dialogues_train.txt", "train.txt"),
    "valid": ("dialogues_validation.txt", "dialogues_valid.txt", "valid.txt", "validation.txt"),
    "test": ("dialogues_test.txt", "test.txt"),
}


def find_split_files(directory: str | os.PathLike) -> dict[str, str]:
    """Locate the train/valid/test files of a DailyDialog-style folder.

    Accepts DailyDialog's names (``dialogues_train.txt``,
    ``dialogues_validation.txt``, ``dialogues_test.txt``) and plain ones
    (``train.txt``, ``valid.txt``, ``test.txt``).

    Parameters
    ----------
    directory : str or path-like

    Returns
    -------
    dict
        Split name (``"train"``, ``"valid"``, ``"test"``) to file path, for the
        splits present.  ``"train"`` is always present.

    Raises
    ------
    ValueError
        When the folder is missing, holds no train file, or holds two files for
        one split.
    """
    if not isinstance(directory, (str, os.PathLike)):
        raise TypeError(f"directory must be a str or path-like, got {type_name(directory)}")
    d = os.fspath(directory)
    if not os.path.exists(d):
        raise ValueError(f"{d}: no such folder")
    if not os.path.isdir(d):
        raise ValueError(f"{d}: not a directory")
    found: dict[str, str] = {}
    for split, names in SPLIT_FILES.items():
        hits = [n for n in names if os.path.isfile(os.path.join(d, n))]
        if len(hits) > 1:
            raise ValueError(f"{d}: two files for the {split} split: {', '.join(hits)}")
        if hits:
            found[split] = os.path.join(d, hits[0])
    if "train" not in found:
        raise ValueError(
            f"{d}: no train file (expected one of {', '.join(SPLIT_FILES['train'])})"
        )
    return found


def read_splits(directory: str | os.PathLike) -> dict[str, list[list[str]]]:
    """Read every split of a DailyDialog-style folder (see :func:`find_split_files`).

    Returns
    -------
    dict
        Split name to its dialogues (lists of utterances), in file order.
    """
    return {split: read_dialogues(path) for split, path in find_split_files(directory).items()}


def format_dialogue(utterances: Sequence[str]) -> str:
    """One DailyDialog line (without newline): every utterance followed by ``__eou__``.

    Raises
    ------
    ValueError
        When an utterance contains a line break or ``__eou__`` (it would not read back).
    """
    out = []
    for u, x in enumerate(utterances):
        if not isinstance(x, str):
            raise TypeError(f"utterances[{u}] must be str, got {type_name(x)}")
        if EOU in x or "\n" in x or "\r" in x:
            raise ValueError(
                f"utterances[{u}] contains {EOU!r} or a line break and cannot be written"
            )
        out.append(f"{x.strip()} {EOU}")
    return " ".join(out)


def write_dialogues(path: str | os.PathLike, dialogues: Sequence[Sequence[str]]) -> None:
    """Write dialogues to a DailyDialog-style file that :func:`read_dialogues` reads back.

    Parameters
    ----------
    path : str or path-like
    dialogues : sequence of sequences of str
        Dialogues with no utterance are skipped (they have no line form).
    """
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or path-like, got {type_name(path)}")
    if isinstance(dialogues, (str, bytes)):
        raise TypeError("dialogues must be a sequence of utterance lists, got a str")
    lines = [format_dialogue(utts) for utts in checked_dialogues(dialogues) if len(utts)]
    with atomic_write(path, "w", encoding="utf-8", newline="\n") as fh:
        for line in lines:
            fh.write(line + "\n")
