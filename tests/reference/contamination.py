"""Plain-Python definitions of n-gram membership and the contamination rules.

Tokens are strings from the presets' regex definitions (``reference.overlap``),
so two distinct tokens are never taken for one: this is the definition the
hashed implementation must equal.  Written from SPEC.md ("N-gram membership")
and docs/contamination.md, independently of ``overlap.contamination``.
"""

from __future__ import annotations

import re
import string
from fractions import Fraction

from reference import overlap as ref

# the intl preset (docs/tokenizers.md), from the Unicode block chart
INTL_RANGES = [
    (0x3040, 0x30FF), (0x31F0, 0x31FF), (0x3400, 0x4DBF), (0x4E00, 0x9FFF),
    (0xAC00, 0xD7AF), (0xF900, 0xFAFF), (0xFF66, 0xFF9F), (0x1AFF0, 0x1B16F),
    (0x20000, 0x3FFFF),
]
_CLASS = "".join(f"\\U{a:08x}-\\U{b:08x}" for a, b in INTL_RANGES)
INTL = re.compile(f"(?=[{_CLASS}])\\w|(?:(?![{_CLASS}])\\w)+|[^\\w\\s]+")

#: rule name -> n
RULE_N = {"any": 13, "palm": 8, "llama2": 11}


def tokenize(text: str, tokenizer="wordpunct") -> list[str]:
    if callable(tokenizer):
        return list(tokenizer(text))
    if tokenizer == "wordpunct":
        return ref.tokenize_wordpunct(text)
    if tokenizer == "whitespace":
        return ref.tokenize_whitespace(text)
    if tokenizer == "char":
        return ref.tokenize_char(text)
    if tokenizer == "intl":
        return [t for t in INTL.findall(text.lower()) if t not in string.punctuation]
    raise ValueError(tokenizer)


def sample_ngrams(tokens: list, n: int) -> list[tuple]:
    """Every n-gram with repeats; a shorter sample has its whole stream; an empty one none."""
    if not tokens:
        return []
    if len(tokens) < n:
        return [tuple(tokens)]
    return [tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1)]


def first_rows(corpus_tokens: list[list], grams: set) -> dict:
    """The first corpus row holding each n-gram of ``grams`` (any length), by brute force."""
    lengths = {len(g) for g in grams}
    out: dict = {}
    for r, toks in enumerate(corpus_tokens):
        for k in lengths:
            for i in range(len(toks) - k + 1):
                g = tuple(toks[i:i + k])
                if g in grams and g not in out:
                    out[g] = r
    return out


def membership(eval_texts: list[str], corpus_texts: list[str], n: int,
               tokenizer="wordpunct") -> list[dict]:
    """Per sample: n_tokens, n_ngrams, n_found, fraction, covered, coverage,
    longest_run, first_row (-1 when none)."""
    ev = [tokenize(t, tokenizer) for t in eval_texts]
    co = [tokenize(t, tokenizer) for t in corpus_texts]
    grams = {g for toks in ev for g in sample_ngrams(toks, n)}
    first = first_rows(co, grams)
    out = []
    for toks in ev:
        gs = sample_ngrams(toks, n)
        width = min(n, len(toks))
        cov = [False] * len(toks)
        found = 0
        for p, g in enumerate(gs):
            if g in first:
                found += 1
                for j in range(p, p + width):
                    cov[j] = True
        run = best = 0
        for c in cov:
            run = run + 1 if c else 0
            best = max(best, run)
        rows = [first[g] for g in gs if g in first]
        out.append({
            "n_tokens": len(toks),
            "n_ngrams": len(gs),
            "n_found": found,
            "fraction": found / len(gs) if gs else 0.0,
            "covered": sum(cov),
            "coverage": sum(cov) / len(toks) if toks else 0.0,
            "longest_run": best,
            "first_row": min(rows) if rows else -1,
        })
    return out


def label(rule: str, m: dict) -> str:
    """A sample's label under a rule, from its membership at the rule's n."""
    if rule == "any":  # GPT-3 / lm-evaluation-harness: any 13-gram found
        return "dirty" if m["n_found"] >= 1 else "clean"
    if rule == "palm":  # PaLM: at least 70 % of the 8-grams found
        return ("dirty" if m["n_ngrams"] and Fraction(m["n_found"], m["n_ngrams"])
                >= Fraction(7, 10) else "clean")
    if rule == "llama2":  # token coverage by found 11-grams: >= 80 % dirty, < 20 % clean
        if not m["n_tokens"]:
            return "clean"
        c = Fraction(m["covered"], m["n_tokens"])
        return "dirty" if c >= Fraction(4, 5) else "clean" if c < Fraction(1, 5) else "neither"
    raise ValueError(rule)
