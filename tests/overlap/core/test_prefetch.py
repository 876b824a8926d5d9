"""The background reader of the pipelined stream scan: order, errors, shutdown, memory."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from overlap import _batches
from overlap._prefetch import Prefetch
from overlap.stream import scan_stream


def test_items_arrive_in_order_and_at_most_two_are_alive():
    alive = []
    made = []

    class Item:
        def __init__(self, i):
            self.i = i
            alive.append(i)

        def __del__(self):
            alive.remove(self.i)

    def items():
        for i in range(50):
            made.append(len(alive))
            yield Item(i)

    seen = []
    for item in Prefetch(items()):
        seen.append(item.i)
        del item
    assert seen == list(range(50))
    assert max(made) <= 1  # when an item is made, at most one other is alive


def test_an_error_of_the_reader_reaches_the_caller_after_the_items_before_it():
    def items():
        yield 1
        yield 2
        raise ValueError("f.jsonl:3: invalid JSON")

    seen = []
    with pytest.raises(ValueError, match="f.jsonl:3"):
        for x in Prefetch(items()):
            seen.append(x)
    assert seen == [1, 2]


@pytest.mark.parametrize("error", [KeyboardInterrupt, RuntimeError])
def test_the_callers_error_stops_the_reader_thread(error):
    closed = threading.Event()

    def items():
        try:
            i = 0
            while True:  # an endless source: only close() ends it
                yield i
                i += 1
        finally:
            closed.set()

    pre = Prefetch(items())
    with pytest.raises(error):
        try:
            for x in pre:
                if x == 3:
                    raise error()
        finally:
            pre.close()
    assert closed.is_set()
    assert not pre._thread.is_alive()


def test_scan_stream_stops_its_reader_on_an_error(tmp_path, monkeypatch):
    # a bad line far into the file: the error names it, and no reader thread is left
    path = tmp_path / "c.jsonl"
    path.write_text("".join(f'{{"text": "w{i} w{i + 1}"}}\n' for i in range(3000))
                    + "not json\n")
    monkeypatch.setattr(_batches, "BLOCK_BYTES", 4096)
    before = threading.active_count()
    for prefetch in (True, False):
        with pytest.raises(ValueError, match=r"c.jsonl:3001: invalid JSON"):
            scan_stream(["w1 w2"], path, chunk_rows=100, prefetch=prefetch)
    assert threading.active_count() == before


def test_prefetch_gives_the_same_result(tmp_path, rng):
    path = tmp_path / "c.jsonl"
    rows = [" ".join(f"t{j}" for j in rng.integers(0, 300, 12)) for _ in range(2000)]
    path.write_text("".join(f'{{"text": "{t}"}}\n' for t in rows))
    ev = rows[::97] + ["t1 t2 t3"]
    for k in (1, 3):
        a = scan_stream(ev, path, chunk_rows=333, top_k=k, prefetch=True)
        b = scan_stream(ev, path, chunk_rows=333, top_k=k, prefetch=False)
        np.testing.assert_array_equal(a.score, b.score)
        np.testing.assert_array_equal(a.index, b.index)
        assert a.match == b.match and a.nbytes == b.nbytes == path.stat().st_size
