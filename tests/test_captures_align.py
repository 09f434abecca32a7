"""trt_trace.captures.align on small columns built here: which capture call pairs with which trace call
(by order per engine and thread, or by call id with the thread as a check), and the clock offset the
containment of every pair bounds. Real captures go through it in test_captures_torch_profiler.py,
test_captures_nsys.py and test_captures_cli.py; these cases pin each rule by itself."""

from __future__ import annotations

import numpy as np

from trt_trace.captures import align
from trt_trace.captures.model import CaptureCalls, DeviceActivities

OFFSET = 1_000_000  # the trace's clock minus the capture's


def capture_of(engines: list[str], rows: list[tuple[int, int, int, int, int]]) -> CaptureCalls:
    """rows: (engine index, tid, call_id, begin_ns, end_ns) in the capture's clock."""
    n = len(rows)
    col = lambda k, dtype=np.int64: np.asarray([r[k] for r in rows], dtype=dtype)  # noqa: E731
    zeros = np.zeros(n, dtype=np.int64)
    return CaptureCalls(
        source="nsys", path="x", clock="session", engines=engines, engine=col(0, np.int32), pid=zeros + 1, tid=col(1),
        call_id=col(2), begin_ns=col(3), end_ns=col(4), phase_ns=np.zeros((n, 4), dtype=np.int64),
        has_device_activity=False, launches=zeros.astype(np.int32), launches_unmatched=zeros.astype(np.int32),
        kernels=zeros.astype(np.int32), kernel_ns=zeros, copies=zeros.astype(np.int32), copy_ns=zeros,
        device_ns=zeros, device_begin_ns=zeros - 1, device_end_ns=zeros - 1, activities=DeviceActivities(),
        activity_names=[])


def trace_cols(rows: list[tuple[str, int, int, int, int]]) -> tuple[np.ndarray, ...]:
    """rows: (engine, tid, call_id, begin_ns, end_ns) in the trace's clock -> engine, tid, begin, end, call_id."""
    return (np.asarray([r[0] for r in rows], dtype=object), *(np.asarray([r[k] for r in rows], dtype=np.int64)
                                                               for k in (1, 3, 4, 2)))


def test_the_offset_is_the_middle_of_what_containing_every_call_allows():
    # Each capture scope is the trace call widened by 2 ns before and 6 ns after, on a clock OFFSET behind.
    trace = [("a", 7, 1, 5000, 6000), ("a", 7, 2, 7000, 8000), ("b", 7, 3, 9000, 9500)]
    capture = capture_of(["a", "b"], [(0 if e == "a" else 1, t, -1, b - OFFSET - 2, e2 - OFFSET + 6)
                                      for e, t, _, b, e2 in trace])
    engine, tid, begin, end, _ = trace_cols(trace)
    fit = align.align(capture, engine, tid, begin, end)
    assert (fit.low_ns, fit.high_ns) == (OFFSET - 6, OFFSET + 2) and fit.offset_ns == OFFSET - 2
    assert (fit.matched, fit.unmatched_capture, fit.unmatched_trace) == (3, 0, 0)
    assert fit.contained_within(0)


def test_containment_fails_by_the_slack_it_lacks():
    # Capture scopes 3 ns *inside* the trace calls at each end: no offset contains them, by 6 ns in all.
    trace = [("a", 7, 1, 5000, 6000), ("a", 7, 2, 7000, 8000)]
    capture = capture_of(["a"], [(0, t, -1, b - OFFSET + 3, e - OFFSET - 3) for _, t, _, b, e in trace])
    engine, tid, begin, end, _ = trace_cols(trace)
    fit = align.align(capture, engine, tid, begin, end)
    assert fit.low_ns - fit.high_ns == 6
    assert fit.contained_within(3) and not fit.contained_within(2)


def test_by_order_the_kth_call_of_an_engine_on_a_thread_pairs_with_the_kth():
    trace = [("a", 7, 1, 100, 200), ("b", 7, 2, 300, 400), ("a", 8, 3, 150, 250), ("a", 7, 4, 500, 600),
             ("b", 9, 5, 700, 800)]  # b on thread 9: nothing in the capture
    capture = capture_of(["a", "b"], [(0, 7, -1, 90, 210), (0, 8, -1, 140, 260), (1, 7, -1, 290, 410),
                                      (0, 7, -1, 490, 610), (0, 7, -1, 900, 950)])  # a 3rd call of a on 7: unpaired
    engine, tid, begin, _, _ = trace_cols(trace)
    i, j = align.pair_calls(capture, engine, tid, begin)
    assert sorted(zip(i.tolist(), j.tolist(), strict=True)) == [(0, 0), (1, 2), (2, 1), (3, 3)]


def test_by_call_id_pairs_follow_the_ids_and_a_thread_that_disagrees_unpairs():
    trace = [("a", 7, 11, 100, 200), ("a", 7, 12, 300, 400), ("a", 7, 13, 500, 600), ("a", 7, 14, 700, 800)]
    # The capture's calls in another order than their ids (an nsys export sorted by its own clock); call
    # 13 recorded on another thread: not the same call; 14, the trace's last id, pairs; 99 is in no trace.
    capture = capture_of(["a"], [(0, 7, 12, 90 - OFFSET, 410 - OFFSET), (0, 7, 11, 95 - OFFSET, 205 - OFFSET),
                                 (0, 8, 13, 495 - OFFSET, 605 - OFFSET), (0, 7, 14, 695 - OFFSET, 805 - OFFSET),
                                 (0, 7, 99, 900 - OFFSET, 905 - OFFSET)])
    engine, tid, begin, end, call_id = trace_cols(trace)
    i, j = align.pair_calls(capture, engine, tid, begin, call_id)
    assert sorted(zip(i.tolist(), j.tolist(), strict=True)) == [(0, 1), (1, 0), (3, 3)]
    fit = align.align(capture, engine, tid, begin, end, call_id)
    assert (fit.matched, fit.unmatched_capture, fit.unmatched_trace) == (3, 2, 1)
    # A capture with a call that has no id (-1) pairs by order instead: here the same calls, in time order.
    no_ids = capture_of(["a"], [(0, 7, -1, 95 - OFFSET, 205 - OFFSET), (0, 7, 12, 290 - OFFSET, 410 - OFFSET)])
    i, j = align.pair_calls(no_ids, engine, tid, begin, call_id)
    assert (i.tolist(), j.tolist()) == ([0, 1], [0, 1])


def test_one_pair_is_enough_and_none_is_said():
    trace = [("a", 7, 1, 5000, 6000)]
    engine, tid, begin, end, _ = trace_cols(trace)
    one = align.align(capture_of(["a"], [(0, 7, -1, 4990 - OFFSET, 6010 - OFFSET)]), engine, tid, begin, end)
    assert one.matched == 1 and (one.low_ns, one.high_ns) == (OFFSET - 10, OFFSET + 10) and one.offset_ns == OFFSET
    none = align.align(capture_of(["b"], [(0, 7, -1, 0, 10), (0, 7, -1, 20, 30)]), engine, tid, begin, end)
    assert (none.offset_ns, none.matched, none.unmatched_capture, none.unmatched_trace) == (0, 0, 2, 1)
    assert none.low_ns > none.high_ns and not none.contained_within(0)
