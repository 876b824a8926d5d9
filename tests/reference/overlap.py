"""Plain-Python definitions of everything the overlap kernels compute.

Slow and obvious on purpose: the kernels are tested against these.
"""

from __future__ import annotations

import re
import string
import math
from collections import Counter

PUNCT = string.punctuation
WORDPUNCT = re.compile(r"\w+|[^\w\s]+")


def tokenize_wordpunct(text: str) -> list[str]:
    """The published reference's rule: regex tokens, minus substrings of punctuation."""
    return [t for t in WORDPUNCT.findall(text.lower()) if t not in PUNCT]


def tokenize_whitespace(text: str) -> list[str]:
    return text.lower().split()


def tokenize_char(text: str) -> list[str]:
    return [c for c in text.lower() if not c.isspace()]


M64 = (1 << 64) - 1


def fmix64(k: int) -> int:
    k ^= k >> 33
    k = (k * 0xFF51AFD7ED558CCD) & M64
    k ^= k >> 33
    k = (k * 0xC4CEB9FE1A85EC53) & M64
    return k ^ (k >> 33)


def token_hash(token: str, seed: int = 0) -> int:
    """FNV-1a over the UTF-8 bytes (surrogates as 3 bytes), then fmix64."""
    h = 0xCBF29CE484222325 ^ fmix64((seed + 0x9E3779B97F4A7C15) & M64)
    data = token.encode("utf-8", "surrogatepass")
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & M64
    return fmix64(h ^ ((len(data) * 0x9E3779B97F4A7C15) & M64))


def id_hash(x: int, seed: int = 0) -> int:
    return fmix64(x ^ fmix64(seed ^ 0x5BD1E9955BD1E995))


def ngram_hash(hashes: list[int]) -> int:
    g = hashes[0]
    for h in hashes[1:]:
        g = fmix64(((g * 0x9E3779B97F4A7C15) & M64) ^ ((h + 0x632BE59BD9B4E019) & M64))
    return g


def ngrams(tokens: list, k: int) -> list[tuple]:
    return [tuple(tokens[i:i + k]) for i in range(len(tokens) - k + 1)]


def bag(tokens: list, k: int = 1, multiset: bool = False) -> Counter:
    grams = ngrams(tokens, k)
    c = Counter(grams)
    if not multiset:
        c = Counter({g: 1 for g in c})
    return c


def dice(u: Counter, v: Counter) -> float:
    """2|u ∩ v| / (|u| + |v|), 0 when both are empty (multiset-aware)."""
    su, sv = sum(u.values()), sum(v.values())
    if su + sv == 0:
        return 0.0
    inter = sum(min(c, v[g]) for g, c in u.items() if g in v)
    return 2.0 * inter / (su + sv)


def measure_score(measure: str, u: Counter, v: Counter) -> float:
    """The specification's float64 expression of ``measure`` (u the query or
    left side); 0 when the rows share nothing (multiset-aware)."""
    a, b = sum(u.values()), sum(v.values())
    i = sum(min(c, v[g]) for g, c in u.items() if g in v)
    if i == 0:
        return 0.0
    if measure == "dice":
        return 2.0 * i / (a + b)
    if measure == "jaccard":
        return i / (a + b - i)
    if measure == "cosine":
        return i / math.sqrt(a * b)
    if measure == "overlap":
        return i / min(a, b)
    if measure == "containment":
        return i / a
    raise ValueError(measure)


def sample_ratio(x: tuple, y: tuple, measure: str = "dice") -> float:
    """Multi-field ratio: the minimum over fields."""
    if measure == "dice":
        return min(dice(a, b) for a, b in zip(x, y))
    return min(measure_score(measure, a, b) for a, b in zip(x, y))


def max_overlap(queries: list, references: list | None, top_k: int = 1,
                min_score: float = 0.0, measure: str = "dice"):
    """Brute force top-k: lists of (score, index), ties to the lowest index."""
    self_mode = references is None
    refs = queries if self_mode else references
    out = []
    for i, q in enumerate(queries):
        cands = []
        for j, r in enumerate(refs):
            if self_mode and i == j:
                continue
            s = sample_ratio(q, r, measure)
            if s > 0.0 and s >= min_score:
                cands.append((-s, j))
        cands.sort()
        row = [(-s, j) for s, j in cands[:top_k]]
        row += [(0.0, -1)] * (top_k - len(row))
        out.append(row)
    return out


def restrict_rows(rows: list, keep) -> list:
    """Every row's tokens that ``keep`` holds, in their order (repeats kept)."""
    keep = set(keep)
    return [[t for t in row if t in keep] for row in rows]


def max_overlap_above(queries: list, references: list, floors: list, top_k: int = 1,
                      measure: str = "dice"):
    """Brute-force top-k of every query among the references scoring at least
    its own floor: query ``i`` as :func:`max_overlap` with ``min_score=floors[i]``."""
    return [max_overlap([q], references, top_k, f, measure)[0]
            for q, f in zip(queries, floors)]


def join(left: list, right: list | None, threshold: float, measure: str = "dice"):
    """All (i, j, score) with score >= threshold (i < j for a self-join)."""
    self_mode = right is None
    rs = left if self_mode else right
    out = []
    for i, a in enumerate(left):
        for j, b in enumerate(rs):
            if self_mode and j <= i:
                continue
            s = sample_ratio(a, b, measure)
            if s >= threshold and s > 0.0:
                out.append((i, j, s))
    return out


def dedup(units: list, threshold: float, measure: str = "dice"):
    """The published iterative method, literally (SPEC §5)."""
    n = len(units)
    present = [True] * n
    kept_for = [-1] * n
    passes = 0
    while True:
        passes += 1
        protected = [False] * n
        removed = False
        for i in range(n):
            if not present[i] or protected[i]:
                continue
            best, best_s = -1, -1.0
            for j in range(n):
                if j == i or not present[j]:
                    continue
                s = sample_ratio(units[i], units[j], measure)
                if s > best_s:
                    best, best_s = j, s
            if best >= 0 and best_s > threshold:
                present[i] = False
                kept_for[i] = best
                protected[best] = True
                removed = True
        if not removed:
            break
    # clusters: connected components of R > t, labelled by the smallest member
    label = list(range(n))

    def find(a):
        while label[a] != a:
            label[a] = label[label[a]]
            a = label[a]
        return a

    for i in range(n):
        for j in range(i + 1, n):
            if sample_ratio(units[i], units[j], measure) > threshold:
                ri, rj = find(i), find(j)
                if ri != rj:
                    label[max(ri, rj)] = min(ri, rj)
    cluster = [find(i) for i in range(n)]
    return present, kept_for, passes, cluster


def dedup_first(units: list, threshold: float, measure: str = "dice"):
    """Keep the earliest unit of every group: unit j goes when a kept i < j
    scores strictly above the threshold; ``kept_for[j]`` is the lowest such i."""
    keep, kept_for = [True] * len(units), [-1] * len(units)
    for j in range(len(units)):
        for i in range(j):
            if keep[i] and sample_ratio(units[i], units[j], measure) > threshold:
                keep[j], kept_for[j] = False, i
                break
    return keep, kept_for


def exact_duplicates(units: list) -> list[int]:
    """Label = smallest index of the units with identical token sets."""
    first: dict = {}
    out = []
    for i, u in enumerate(units):
        key = tuple(frozenset(f.items()) for f in u)
        out.append(first.setdefault(key, i))
    return out


def decontaminate(train: list, evals: list, threshold: float, measure: str = "dice",
                  dedup_train: bool = True, dedup_threshold: float | None = None,
                  dedup_measure: str | None = None, keep: str = "most-overlapped"):
    """Fixed-eval decontamination, literally.

    ``train``: units; ``evals``: (split name, units) pairs in the order given.
    The score of eval unit E and train unit T is ``sample_ratio(E, T, measure)``:
    the eval unit is the query, so containment is |E ∩ T| / |E|.  A train
    unit's best match is its highest score over the splits in order, then the
    eval units in order (ties to the first); scores of 0 never count, and with
    containment neither do scores below the threshold.  A unit whose best
    match scores >= threshold goes ("eval-overlap"); the rest are deduplicated
    (strictly greater than ``dedup_threshold`` under ``dedup_measure``, both
    defaulting to the eval ones; "train-duplicate").

    Returns (keep, reason, best_score, best_index, best_split, dup_of), one
    entry per train unit; ``dup_of`` is the train unit a duplicate went for.
    """
    n = len(train)
    best, best_index, best_split = [0.0] * n, [-1] * n, [None] * n
    for t in range(n):
        for name, units in evals:
            for j, e in enumerate(units):
                s = sample_ratio(e, train[t], measure)
                if measure == "containment" and s < threshold:
                    continue
                if s > 0.0 and s > best[t]:
                    best[t], best_index[t], best_split[t] = s, j, name
    reason: list = [None] * n
    for t in range(n):
        if best_index[t] >= 0 and best[t] >= threshold:
            reason[t] = "eval-overlap"
    dup_of = [-1] * n
    if dedup_train:
        rest = [t for t in range(n) if reason[t] is None]
        units = [train[t] for t in rest]
        dthr = threshold if dedup_threshold is None else dedup_threshold
        dm = measure if dedup_measure is None else dedup_measure
        if keep == "first":
            kept, kept_for = dedup_first(units, dthr, dm)
        else:
            kept, kept_for, _, _ = dedup(units, dthr, dm)
        for k, t in enumerate(rest):
            if not kept[k]:
                reason[t], dup_of[t] = "train-duplicate", rest[kept_for[k]]
    keep_ = [r is None for r in reason]
    return keep_, reason, best, best_index, best_split, dup_of
