"""A generated dialogue corpus for the demo, the docs and tests (no download).

:func:`generate_corpus` makes a small DailyDialog-like corpus with what real
corpora suffer from: generic utterances ("thank you ."), near-duplicate
dialogues inside train, and eval dialogues that are near copies of training
dialogues.  :func:`scale_fields` makes large token-set corpora quickly (from
integer ids) for timing runs.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .._validation import check_int, check_unit_interval, type_name
from .dialogue import SPLIT_FILE_NAMES, write_dialogues
from ..tokensets import TokenSets

__all__ = ["DemoCorpus", "generate_corpus", "write_corpus", "scale_fields"]

_WORDS = """
the a to you i it is and of that in we have do what for be this my your not
me can are on with so but was just will no like know get go there they at
all if about how one would want think some out here now time good see when
up yes well going really right make did then could from them more an very
take her him come help want need day work home money today tomorrow night
morning week year family friend friends room car house job office price
ticket bank store book phone email meeting party dinner lunch coffee tea
restaurant hotel train bus airport weather rain sun movie music game school
class teacher student doctor problem idea question answer plan trip weekend
shopping dress shirt shoes size color cheap expensive new old nice great
sorry thanks please sure maybe never always often sometimes late early
wait look call tell ask say buy pay try find give keep leave meet read write
speak listen watch play open close start stop finish change move live
""".split()

_STOCK = [
    "thank you .", "thanks a lot .", "you are welcome .", "yes .", "no .", "ok .",
    "sure .", "really ?", "what ?", "why ?", "how are you ?", "i am fine , thanks .",
    "see you tomorrow .", "good morning .", "goodbye .", "that sounds great .",
    "i see .", "me too .", "of course .", "what do you mean ?",
]


@dataclass(frozen=True)
class DemoCorpus:
    """A generated corpus and what was planted in it.

    Attributes
    ----------
    splits : dict of str to list of dialogues
        ``"train"``, ``"valid"`` and ``"test"``.
    near_duplicates : int
        Train dialogues that are perturbed copies of earlier train dialogues.
    leaked : dict of str to int
        Eval dialogues (per split) that are perturbed copies of train dialogues.
    """

    splits: dict
    near_duplicates: int
    leaked: dict


class _Gen:
    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        w = 1.0 / np.arange(1, len(_WORDS) + 1) ** 0.9
        self.p = w / w.sum()

    def utterance(self) -> str:
        if self.rng.random() < 0.15:
            return _STOCK[int(self.rng.integers(len(_STOCK)))]
        n = int(self.rng.integers(3, 15))
        words = self.rng.choice(len(_WORDS), size=n, p=self.p)
        end = "?" if self.rng.random() < 0.3 else "."
        return " ".join(_WORDS[i] for i in words) + " " + end

    def dialogue(self) -> list[str]:
        return [self.utterance() for _ in range(int(self.rng.integers(3, 10)))]

    def perturb(self, dialogue: Sequence[str], rate: float) -> list[str]:
        """Copy with about ``rate`` of the utterances getting one word replaced."""
        out = []
        for u in dialogue:
            toks = u.split()
            if len(toks) > 2 and self.rng.random() < rate:
                j = int(self.rng.integers(len(toks) - 1))
                toks[j] = _WORDS[int(self.rng.integers(len(_WORDS)))]
            out.append(" ".join(toks))
        return out


def generate_corpus(
    n_train: int = 2000,
    n_valid: int = 200,
    n_test: int = 200,
    *,
    near_duplicate_rate: float = 0.05,
    leak_rate: float = 0.2,
    seed: int = 0,
) -> DemoCorpus:
    """Generate a DailyDialog-like corpus with planted overlap.

    Parameters
    ----------
    n_train, n_valid, n_test : int
        Dialogues per split (``n_train`` >= 1).
    near_duplicate_rate : float in [0, 1], default 0.05
        Share of train dialogues (after the first) replaced by a perturbed copy
        of an earlier train dialogue.
    leak_rate : float in [0, 1], default 0.2
        Share of valid and test dialogues that are perturbed copies of train ones.
    seed : int, default 0
        The same arguments give the same corpus.

    Returns
    -------
    DemoCorpus
    """
    n_train = check_int(n_train, "n_train", minimum=1)
    n_valid = check_int(n_valid, "n_valid", minimum=0)
    n_test = check_int(n_test, "n_test", minimum=0)
    near_duplicate_rate = check_unit_interval(near_duplicate_rate, "near_duplicate_rate")
    leak_rate = check_unit_interval(leak_rate, "leak_rate")
    seed = check_int(seed, "seed", minimum=0)
    g = _Gen(seed)
    train: list[list[str]] = []
    near = 0
    for i in range(n_train):
        if i and g.rng.random() < near_duplicate_rate:
            train.append(g.perturb(train[int(g.rng.integers(i))], 0.3))
            near += 1
        else:
            train.append(g.dialogue())
    splits = {"train": train}
    leaked = {}
    for name, n in (("valid", n_valid), ("test", n_test)):
        dialogues, k = [], 0
        for _ in range(n):
            if g.rng.random() < leak_rate:
                dialogues.append(g.perturb(train[int(g.rng.integers(n_train))], 0.5))
                k += 1
            else:
                dialogues.append(g.dialogue())
        splits[name] = dialogues
        leaked[name] = k
    return DemoCorpus(splits, near, leaked)


def write_corpus(directory: str | os.PathLike, corpus: DemoCorpus | dict) -> list[str]:
    """Write a corpus as DailyDialog files (``dialogues_{train,validation,test}.txt``).

    Returns
    -------
    list of str
        The paths written.
    """
    if not isinstance(directory, (str, os.PathLike)):
        raise TypeError(f"directory must be a str or path-like, got {type_name(directory)}")
    splits = corpus.splits if isinstance(corpus, DemoCorpus) else corpus
    if not isinstance(splits, dict):
        raise TypeError(f"corpus must be a DemoCorpus or a dict of splits, got {type_name(corpus)}")
    os.makedirs(directory, exist_ok=True)
    paths = []
    for name, dialogues in splits.items():
        if name not in SPLIT_FILE_NAMES:
            raise ValueError(f"corpus: unknown split {name!r}")
        p = os.path.join(os.fspath(directory), SPLIT_FILE_NAMES[name])
        write_dialogues(p, dialogues)
        paths.append(p)
    return paths


def scale_fields(
    n: int,
    *,
    vocabulary: int = 50_000,
    duplicate_rate: float = 0.05,
    seed: int = 0,
) -> tuple[TokenSets, TokenSets]:
    """A large (context, response) corpus as token sets, made from integer ids.

    Lengths follow a DailyDialog-like spread (3-30 tokens), tokens a Zipf-like
    law over ``vocabulary`` ids; ``duplicate_rate`` of the samples are copies of
    earlier ones with one token changed in each field.

    Parameters
    ----------
    n : int
        Number of samples.
    vocabulary : int, default 50000
    duplicate_rate : float in [0, 1], default 0.05
    seed : int, default 0

    Returns
    -------
    (TokenSets, TokenSets)
        Context and response fields.
    """
    n = check_int(n, "n", minimum=1)
    vocabulary = check_int(vocabulary, "vocabulary", minimum=2)
    duplicate_rate = check_unit_interval(duplicate_rate, "duplicate_rate")
    seed = check_int(seed, "seed", minimum=0)
    rng = np.random.default_rng(seed)
    out = []
    dup = rng.random(n) < duplicate_rate
    dup[0] = False
    src = (rng.random(n) * np.arange(n)).astype(np.int64)
    for _ in range(2):
        lengths = rng.integers(3, 31, size=n)
        ids = (vocabulary * rng.random(int(lengths.sum())) ** 2.5).astype(np.int64)
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        seqs = [ids[s:s + k] for s, k in zip(starts.tolist(), lengths.tolist())]
        for i in np.flatnonzero(dup).tolist():
            s = seqs[src[i]].copy()
            s[int(rng.integers(len(s)))] = int(rng.integers(vocabulary))
            seqs[i] = s
        out.append(TokenSets.from_ids(seqs))
    return out[0], out[1]
