"""The one n_threads rule shared by every parallel entry point."""

from __future__ import annotations

import pytest

import overlap
from overlap._threads import MAX_THREADS, effective_n_threads, usable_cores


def test_positive_counts_are_capped_at_the_usable_cores():
    cores = usable_cores()
    if not overlap.openmp_enabled():
        assert effective_n_threads(3) == 1
        return
    assert effective_n_threads(1) == 1
    assert effective_n_threads(3) == min(3, cores)
    assert effective_n_threads(MAX_THREADS) == cores


@pytest.mark.parametrize("bad", [MAX_THREADS + 1, 2**31 - 1, 2**63, 10**30])
def test_absurd_counts_are_rejected(bad):
    with pytest.raises(ValueError, match=f"n_threads must be at most {MAX_THREADS}"):
        effective_n_threads(bad)


def test_none_uses_all_cores_or_omp_num_threads(monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    if not overlap.openmp_enabled():
        assert effective_n_threads(None) == 1
        return
    assert 1 <= effective_n_threads(None) <= usable_cores()
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert effective_n_threads(None) == 1
    monkeypatch.setenv("OMP_NUM_THREADS", "5")
    assert effective_n_threads(None) == min(5, usable_cores())


def test_negative_counts_back_from_all_cores():
    if not overlap.openmp_enabled():
        pytest.skip("build without OpenMP: every count resolves to 1")
    assert effective_n_threads(-1) == usable_cores()
    with pytest.raises(ValueError, match="n_threads"):
        effective_n_threads(-(usable_cores() + 1))


@pytest.mark.parametrize("bad, exc", [(0, ValueError), (1.5, TypeError), (True, TypeError),
                                      ("2", TypeError)])
def test_bad_values(bad, exc):
    with pytest.raises(exc, match="n_threads"):
        effective_n_threads(bad)


def test_openmp_flag_is_a_bool():
    assert isinstance(overlap.openmp_enabled(), bool)


@pytest.mark.parametrize("env", ["²", "٣", "1_0", "-2", "0", "abc", ""])
def test_an_omp_num_threads_that_is_not_a_plain_count_is_ignored(monkeypatch, env):
    # str.isdigit accepts '²' and '٣', which int() refuses or reads: such a
    # value must neither fail every call nor be read as a count
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    default = effective_n_threads(None)
    monkeypatch.setenv("OMP_NUM_THREADS", env)
    assert effective_n_threads(None) == default
