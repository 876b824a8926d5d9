"""pytest plugin for CI: fewer hypothesis examples per property test.

The floor job runs the whole suite again, on the oldest numpy, scipy, pyarrow
and pandas: it is there for what those versions do differently, which the
first examples of a property test meet as well as the last (CI's profile is
derandomized, so they are the first examples the ``all`` job runs too).  With
``OVERLAP_CI_HYPOTHESIS_SCALE=S`` every test's example count ``n`` (its own
``@settings(max_examples=n)`` or the profile's) becomes
``max(min(n, 10), round(n * S))``.

Loaded with ``-p hypothesis_scale`` (``.ci`` on ``PYTHONPATH``), before pytest
imports the test files, whose ``@settings`` decorators then build scaled
settings.  It checks that the scaling took, so a hypothesis release that
builds settings another way fails the job instead of running the full counts
unnoticed.
"""

from __future__ import annotations

import os

import hypothesis

FLOOR = 10


def _scale() -> float:
    raw = os.environ.get("OVERLAP_CI_HYPOTHESIS_SCALE", "1")
    try:
        scale = float(raw)
    except ValueError:
        raise SystemExit(f"OVERLAP_CI_HYPOTHESIS_SCALE must be a number, got {raw!r}") from None
    if not 0 < scale <= 1:
        raise SystemExit(f"OVERLAP_CI_HYPOTHESIS_SCALE must be in (0, 1], got {raw!r}")
    return scale


def scaled(n: int, scale: float) -> int:
    return max(min(n, FLOOR), round(n * scale))


SCALE = _scale()
_scaling = False  # on from the plugin's import; off while it builds its own profile

if SCALE < 1:
    _init = hypothesis.settings.__init__

    def _scaled_init(self, parent=None, **kwargs):
        if _scaling and "max_examples" in kwargs:
            kwargs["max_examples"] = scaled(kwargs["max_examples"], SCALE)
        _init(self, parent, **kwargs)

    hypothesis.settings.__init__ = _scaled_init
    _scaling = True
    _probe = hypothesis.settings(max_examples=400).max_examples
    if _probe != scaled(400, SCALE):
        raise SystemExit(f"hypothesis_scale: settings(max_examples=400) gave {_probe}, "
                         f"expected {scaled(400, SCALE)}: this hypothesis builds settings "
                         "another way")


def pytest_sessionstart(session):
    """The tests without a count of their own: the profile that tests/conftest.py
    loaded, with its count scaled (before the test files are imported)."""
    global _scaling
    if SCALE >= 1:
        return
    current = hypothesis.settings.default
    _scaling = False
    try:
        hypothesis.settings.register_profile(
            "ci-scaled", parent=current, max_examples=scaled(current.max_examples, SCALE))
    finally:
        _scaling = True
    hypothesis.settings.load_profile("ci-scaled")


def pytest_report_header(config):
    if SCALE < 1:
        return (f"hypothesis examples scaled by {SCALE}: n -> max(min(n, {FLOOR}), "
                f"round(n * {SCALE}))")
    return None
