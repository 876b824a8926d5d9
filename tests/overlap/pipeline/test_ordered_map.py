"""overlap._ordered_map.map_in_order: results in order, errors in their turn,
a bounded number of items in flight, nothing left running when the caller stops."""

from __future__ import annotations

import contextvars
import threading
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from overlap._ordered_map import map_in_order


def _serial(fn, items):
    """The definition: ``(item, fn(item))`` in order; the first error raised in its turn."""
    out = []
    try:
        for item in items:
            out.append((item, fn(item)))
    except Exception as e:
        return out, repr(e)
    return out, None


def _parallel(fn, items, workers):
    out = []
    try:
        for pair in map_in_order(fn, items, workers):
            out.append(pair)
    except Exception as e:
        return out, repr(e)
    return out, None


def _items(values, fail_at):
    for i, v in enumerate(values):
        if i == fail_at:
            raise KeyError(f"iterator failed at {i}")
        yield v


@settings(max_examples=200, deadline=None)
@given(values=st.lists(st.integers(-5, 20), max_size=40), workers=st.integers(0, 6),
       fail_at=st.one_of(st.none(), st.integers(0, 40)), seed=st.integers(0, 2**32 - 1))
def test_equals_the_serial_loop(values, workers, fail_at, seed):
    def fn(v):
        time.sleep(((v * 2654435761 + seed) % 7) * 1e-5)  # finish out of order
        if v < 0:
            raise ValueError(f"negative {v}")
        return v * v

    assert (_parallel(fn, _items(values, fail_at), workers)
            == _serial(fn, _items(values, fail_at)))


@pytest.mark.parametrize("workers", [2, 3, 5])
def test_at_most_workers_plus_one_items_are_in_flight(workers):
    lock = threading.Lock()
    state = {"out": 0, "most": 0}

    def items():
        for i in range(50):
            with lock:
                state["out"] += 1
                state["most"] = max(state["most"], state["out"])
            yield i

    for i, r in map_in_order(lambda v: v + 1, items(), workers):
        assert r == i + 1
        with lock:
            state["out"] -= 1
    assert state["most"] == workers + 1


def test_a_caller_that_stops_early_leaves_nothing_running():
    started, finished = [], []
    release = threading.Event()

    def fn(v):
        started.append(v)
        release.wait(5)
        finished.append(v)
        return v

    gen = map_in_order(fn, iter(range(100)), 3)
    release.set()
    assert next(gen) == (0, 0)
    gen.close()
    # the items not started were dropped; every one started has finished
    assert sorted(started) == sorted(finished)
    assert len(started) <= 4
    assert not [t for t in threading.enumerate() if t.name.startswith("overlap-parse")]


def test_each_call_sees_the_callers_context_variables():
    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")
    token = var.set("the caller's")
    try:
        got = [r for _, r in map_in_order(lambda v: (var.get(), v), range(10), 3)]
    finally:
        var.reset(token)
    assert got == [("the caller's", v) for v in range(10)]


def test_the_work_runs_on_worker_threads_and_one_worker_on_the_caller():
    here = threading.current_thread().name
    names = {r for _, r in map_in_order(lambda v: threading.current_thread().name, range(9), 3)}
    assert names and all(n.startswith("overlap-parse") for n in names)
    assert {r for _, r in map_in_order(lambda v: threading.current_thread().name,
                                       range(3), 1)} == {here}
