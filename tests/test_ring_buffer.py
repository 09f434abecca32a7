"""The per-thread lock-free rings: order, wrap-around, drops, several producers."""

from __future__ import annotations

import threading

import numpy as np
from conftest import drain_all, in_thread

from trt_trace.native import ops


def _counts_for(tid: int) -> dict:
    rows = [r for r in ops.thread_counts().tolist() if r[0] == tid]
    assert rows, f"no counts for thread {tid}"
    tid_, produced, dropped, capacity, _alive, dropped_calls = rows[-1]
    return {"produced": produced, "dropped": dropped, "capacity": capacity, "dropped_calls": dropped_calls}


def _push_in_new_thread(count: int, engine_id: int, first_seq: int) -> int:
    def body():
        ops.push_synthetic(count, engine_id, first_seq)
        return threading.get_native_id()

    return in_thread(body)


def test_record_layout_matches_numpy_dtype():
    # Every record kind of csrc/common/record.h, field by field (names, offsets, sizes), as C++ declares it
    # and as trt_trace/schema/records.py mirrors it.
    from trt_trace.schema import records

    assert ops.record_layout() == records.layout()
    assert records.layout()[0] == "span:40"
    assert records.RECORD_DTYPE.names == records.KIND_DTYPES["span"].names


def test_record_layout_check_catches_a_moved_field(monkeypatch):
    # The comparison above is not vacuous: a mirror with two fields swapped, or one renamed, differs.
    from trt_trace.schema import records

    kinds = {k: list(v) for k, v in records.RECORD_KINDS.items()}
    layer = kinds["layer"]
    layer[-1] = ("stream", layer[-1][1])  # the layer's name id under the span's field name
    monkeypatch.setattr(records, "KIND_DTYPES", {k: np.dtype(v) for k, v in kinds.items()})
    assert ops.record_layout() != records.layout()


def test_the_phase_list_is_one_list_in_both_languages():
    # csrc/common/phases.h and trt_trace/schema/phases.py: the names by Record.phase, and the table's columns made
    # from them, are the same in C++ and Python.
    from trt_trace.schema import phases

    assert ops._op("_phase_names")() == list(phases.PHASE_NAMES)
    assert ops.stats_columns() == list(phases.STATS_COLUMNS)
    assert [p.name for p in phases.Phase] == [p.name for p in phases.PHASES]
    # The host phases follow the call (Record.phase 1..n), and the kinds past the public phases get the same
    # values on both sides (they are derived from the list on both).
    host = len(phases.HOST_PHASES)
    assert [i for i, p in enumerate(phases.PHASES) if p.host] == list(range(1, host + 1))
    assert ops._op("_record_kinds")() == [host, phases.LAYER_RECORD, phases.INFERENCE_RECORD]
    assert phases.DURATIONS == ("total", "workspace", "inputs", "outputs", "enqueue", "gpu")


def test_order_is_preserved():
    ops.push_synthetic(1000, 7, 100)
    recs = drain_all()
    mine = recs[recs["engine_id"] == 7]
    assert mine["begin_ns"].tolist() == list(range(100, 1100))


def test_wrap_around_keeps_order_and_loses_nothing():
    ops.set_buffer_capacity(64)
    try:
        seen = []
        barrier_push = threading.Event()
        barrier_drained = threading.Event()

        def producer():
            # 10 rounds of 50 into a 64-slot ring: the ring wraps several times.
            for k in range(10):
                ops.push_synthetic(50, 8, k * 50)
                barrier_push.set()
                barrier_drained.wait()
                barrier_drained.clear()
            return threading.get_native_id()

        t = threading.Thread(target=producer)
        t.start()
        for _ in range(10):
            barrier_push.wait()
            barrier_push.clear()
            recs = drain_all()
            seen += recs[recs["engine_id"] == 8]["begin_ns"].tolist()
            barrier_drained.set()
        t.join()
        assert seen == list(range(500))
    finally:
        ops.set_buffer_capacity(1 << 16)


def test_full_ring_counts_drops_exactly():
    ops.set_buffer_capacity(64)
    try:
        tid = _push_in_new_thread(100, 9, 0)
    finally:
        ops.set_buffer_capacity(1 << 16)
    recs = drain_all()
    mine = recs[recs["engine_id"] == 9]
    counts = _counts_for(tid)
    assert counts["capacity"] == 64
    assert len(mine) == 64
    assert mine["begin_ns"].tolist() == list(range(64))  # the oldest are kept, the overflow is dropped
    assert counts["produced"] == 100
    assert counts["dropped"] == 36
    assert counts["dropped_calls"] == 36  # each synthetic record is a whole call
    assert len(mine) + counts["dropped"] == counts["produced"]


def test_several_producers_while_draining():
    n_threads, per_thread = 4, 20000
    ops.set_buffer_capacity(1024)
    stop = threading.Event()
    collected = []

    def consumer():
        while not stop.is_set():
            collected.append(drain_all())
        collected.append(drain_all())

    tids = []

    def producer(k):
        tids.append(threading.get_native_id())
        for chunk in range(0, per_thread, 500):
            ops.push_synthetic(500, 100 + k, chunk)

    try:
        c = threading.Thread(target=consumer)
        c.start()
        ps = [threading.Thread(target=producer, args=(k,)) for k in range(n_threads)]
        for p in ps:
            p.start()
        for p in ps:
            p.join()
        stop.set()
        c.join()
    finally:
        ops.set_buffer_capacity(1 << 16)
    recs = np.concatenate(collected)
    for k, tid in zip(range(n_threads), tids, strict=True):
        mine = recs[recs["engine_id"] == 100 + k]
        seq = mine["begin_ns"]
        assert np.all(np.diff(seq) > 0), "per-thread order must hold"
        assert set(mine["thread_id"].tolist()) <= set(tids)
        counts = _counts_for(tid)
        assert counts["produced"] == per_thread
        assert len(mine) + counts["dropped"] == per_thread
