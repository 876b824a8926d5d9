"""A pytest plugin that runs scipy's installed tests with ``metrics`` swapped in.

``scipy.stats.pearsonr``, ``spearmanr`` and ``kendalltau`` are replaced by thin
wrappers that only rename scipy's argument names to ours (``a, b`` -> ``x, y``)
and call ``metrics.pearson``/``spearman``/``kendall`` with exactly the
arguments the test gave -- no defaults added, nothing translated -- so a
feature we lack shows up as a failing test.  Only the tests that reach these
functions are kept: the items of the correlation test classes and every test
whose source names ``stats.pearsonr``/``stats.spearmanr``/``stats.kendalltau``
(``mstats.*`` calls alone do not reach them).

Use::

    python -m pytest -p tests.reference.scipy_suite.plugin \\
        <scipy>/stats/tests/test_stats.py <scipy>/stats/tests/test_mstats_basic.py

with the worktree (or any checkout whose ``metrics`` should be measured) first
on ``PYTHONPATH``.  ``python -m tests.reference.scipy_suite`` runs it and prints the
counts by class.
"""

from __future__ import annotations

import inspect
import re

import pytest

import metrics

_TARGETS = {"pearsonr": "pearson", "spearmanr": "spearman", "kendalltau": "kendall"}
_RENAME = {"spearmanr": {"a": "x", "b": "y"}}
_CLASS_RE = re.compile(r"Pearson|Spearman|Kendall|^TestCorr$")
_SOURCE_RE = re.compile(r"(?<![m.\w])(?:stats\.)?(pearsonr|spearmanr|kendalltau)\s*\(")
_MSTATS_ONLY_RE = re.compile(r"mstats(?:_basic)?\.(pearsonr|spearmanr|kendalltau)")


def _wrapper(scipy_name: str):
    ours = getattr(metrics, _TARGETS[scipy_name])
    rename = _RENAME.get(scipy_name, {})

    def call(*args, **kwargs):
        kwargs = {rename.get(k, k): v for k, v in kwargs.items()}
        return ours(*args, **kwargs)

    call.__name__ = call.__qualname__ = scipy_name
    call.__doc__ = ours.__doc__
    call._metrics_adapter = True
    return call


def pytest_configure(config):
    import scipy.stats

    try:  # scipy >= 1.15 marks tests by the function's array-API capabilities
        from scipy._lib._array_api import xp_capabilities_table as table
    except ImportError:
        table = None
    for name in _TARGETS:
        original = getattr(scipy.stats, name)
        wrapper = _wrapper(name)
        if table is not None and original in table:
            table[wrapper] = table[original]
        setattr(scipy.stats, name, wrapper)


def _reaches(item) -> bool:
    cls = getattr(item, "cls", None)
    if cls is not None and _CLASS_RE.search(cls.__name__):
        if item.module.__name__.endswith("test_mstats_basic"):
            return _mentions_stats(item)
        return True
    return _mentions_stats(item)


def _mentions_stats(item) -> bool:
    try:
        src = inspect.getsource(item.function)
    except (OSError, TypeError):
        return False
    src = _MSTATS_ONLY_RE.sub("", src)
    return bool(_SOURCE_RE.search(src))


def pytest_collection_modifyitems(config, items):
    keep = [it for it in items if _reaches(it)]
    deselected = [it for it in items if not _reaches(it)]
    if deselected:
        config.hook.pytest_deselected(items=deselected)
    items[:] = keep


@pytest.fixture(autouse=True)
def _metrics_swapped_in():
    """Fail loudly if something restored scipy's own functions."""
    import scipy.stats

    for name in _TARGETS:
        assert getattr(getattr(scipy.stats, name), "_metrics_adapter", False), name
    yield
