"""The join's rules (trt_trace.captures.join), on small columns built here: which device work belongs to
which call. The readers feed it real captures (test_captures_torch_profiler.py, test_captures_nsys.py,
and on a GPU tools/device/profiler_kernels_check.py); these cases pin each rule by itself."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from trt_trace.captures import report
from trt_trace.captures.join import JoinInput, join, union_ns
from trt_trace.captures.model import KERNEL, MEMCPY


def cols(rows: list[tuple], names: tuple[str, ...]) -> dict[str, np.ndarray]:
    return {n: np.asarray([r[i] for r in rows], dtype=np.int64) for i, n in enumerate(names)}


SCOPE = ("thread", "begin", "end", "engine", "phase", "call_id")
API = ("thread", "begin", "end", "corr", "launch")
DEV = ("corr", "kind", "name", "begin", "end", "device", "stream")


def run(scopes: list[tuple], api: list[tuple], dev: list[tuple], engines=("a", "b")):  # noqa: ANN001, ANN201
    inp = JoinInput(cols(scopes, SCOPE), cols(api, API), cols(dev, DEV), np.asarray([10, 10]), np.asarray([1, 2]),
                    list(engines), ["k0", "k1", "k2"], bool(dev))
    return join(inp, "test", "x", "x")


def test_work_belongs_to_the_call_that_launched_it_whatever_its_device_time():
    scopes = [(0, 100, 200, 0, 0, 7), (0, 110, 150, 0, 4, 7),  # call of a, its enqueue scope
              (0, 300, 400, 1, 0, 8), (0, 310, 390, 1, 4, 8)]  # call of b
    api = [(0, 120, 130, 1, 1), (0, 320, 330, 2, 1),
           (1, 320, 330, 3, 1)]  # another thread, inside b's time: not b's
    dev = [(1, KERNEL, 0, 5000, 5100, 0, 7),  # a's kernel runs long after a returned (queued work)
           (2, KERNEL, 1, 5050, 5300, 0, 9),  # b's kernel overlaps a's in time
           (3, KERNEL, 2, 320, 330, 0, 9)]  # runs inside b's time, but another thread launched it
    calls, notes = run(scopes, api, dev)
    assert calls.engine.tolist() == [0, 1] and calls.call_id.tolist() == [7, 8]
    assert calls.kernels.tolist() == [1, 1] and calls.kernel_ns.tolist() == [100, 250]
    assert calls.activities.call.tolist() == [0, 1] and calls.activities.name.tolist() == [0, 1]
    assert calls.activities.phase.tolist() == [4, 4]  # launched inside enqueue
    assert calls.device_begin_ns.tolist() == [5000, 5050] and calls.device_end_ns.tolist() == [5100, 5300]
    assert calls.phase_ns.tolist() == [[0, 0, 0, 40], [0, 0, 0, 80]] and notes == []


def test_nested_calls_give_work_to_the_innermost_call():
    scopes = [(0, 0, 1000, 0, 0, 1), (0, 100, 900, 0, 4, 1),  # outer call, enqueue holds the inner call
              (0, 200, 400, 1, 0, 2), (0, 210, 390, 1, 4, 2)]
    api = [(0, 150, 160, 1, 1), (0, 300, 310, 2, 1), (0, 395, 398, 3, 1), (0, 500, 510, 4, 1)]
    dev = [(1, KERNEL, 0, 2000, 2010, 0, 1), (2, KERNEL, 1, 2010, 2030, 0, 1), (3, MEMCPY, 2, 2030, 2035, 0, 1),
           (4, KERNEL, 0, 2040, 2100, 0, 1)]
    calls, _ = run(scopes, api, dev)
    outer, inner = calls.call_id.tolist().index(1), calls.call_id.tolist().index(2)
    assert calls.kernels[outer] == 2 and calls.kernel_ns[outer] == 70
    assert calls.kernels[inner] == 1 and calls.copies[inner] == 1 and calls.kernel_ns[inner] == 20
    assert calls.copy_ns[inner] == 5 and calls.device_ns[inner] == 25
    # 395..398 lies in the inner call between its enqueue scope's end and the call's: in no phase of it
    phase = dict(zip(calls.activities.begin_ns.tolist(), calls.activities.phase.tolist(), strict=True))
    assert phase == {2000: 4, 2010: 4, 2030: 0, 2040: 4}


def test_back_to_back_phases_and_neighbouring_threads_keep_their_launches():
    """As trt_trace's scopes are in a real capture: a call and its first phase begin together, each phase
    ends where the next begins; two threads with neighbouring ids run calls at the same times; a launch
    whose midpoint is a phase's end belongs to the next phase ([begin, end))."""
    scopes, api, dev = [], [], []
    for thread, engine, call_id in ((0, 0, 1), (1, 1, 2)):  # thread indices 0 and 1: neighbours
        shift = 5 * thread  # the threads' calls overlap in time
        scopes += [(thread, 100 + shift, 200 + shift, engine, 0, call_id)]
        scopes += [(thread, b + shift, e + shift, engine, phase, call_id)
                   for phase, (b, e) in enumerate([(100, 110), (110, 130), (130, 140), (140, 200)], start=1)]
        corr = 10 * (thread + 1)
        api += [(thread, 102 + shift, 104 + shift, corr, 1),  # in workspace, which begins with the call
                (thread, 128 + shift, 132 + shift, corr + 1, 1),  # midpoint 130: the end of inputs, so outputs
                (thread, 150 + shift, 160 + shift, corr + 2, 1)]  # in enqueue, after three touching phases
        dev += [(corr + k, KERNEL, k, 1000 + 100 * thread + 10 * k, 1005 + 100 * thread + 10 * k, 0, 1)
                for k in range(3)]
    calls, notes = run(scopes, api, dev)
    assert notes == [] and calls.call_id.tolist() == [1, 2] and calls.kernels.tolist() == [3, 3]
    assert calls.phase_ns.tolist() == [[10, 20, 10, 60]] * 2
    acts = sorted(zip(calls.activities.call.tolist(), calls.activities.name.tolist(), calls.activities.phase.tolist(),
                      strict=True))
    assert acts == [(c, k, p) for c in (0, 1) for k, p in ((0, 1), (1, 3), (2, 4))]


def test_nested_calls_that_begin_with_their_outer_call_or_touch_keep_their_launches():
    """An outer call whose first nested call begins with it, and a second nested call that begins where
    the first ends: each launch belongs to the innermost call open at its midpoint."""
    scopes = [(0, 0, 1000, 0, 0, 1), (0, 0, 300, 1, 0, 2), (0, 300, 500, 1, 0, 3)]
    api = [(0, 140, 160, 1, 1), (0, 390, 410, 2, 1), (0, 690, 710, 3, 1), (0, 290, 310, 4, 1),  # mid 300: C's
           (0, 990, 1010, 5, 1)]  # mid 1000, the outer call's end: after it, in no call
    dev = [(k, KERNEL, 0, 2000 + 100 * k, 2010 + 100 * k, 0, 1) for k in (1, 2, 3, 4, 5)]
    calls, notes = run(scopes, api, dev)
    assert notes == [] and calls.call_id.tolist() == [1, 2, 3]
    owner = dict(zip(calls.activities.begin_ns.tolist(), calls.call_id[calls.activities.call].tolist(), strict=True))
    assert owner == {2100: 2, 2200: 3, 2300: 1, 2400: 3}


def test_engine_rows_and_top_kernels_add_up_the_calls():
    scopes = [(0, 0, 100, 0, 0, 1), (0, 200, 300, 0, 0, 2), (0, 400, 450, 1, 0, 3)]
    api = [(0, 10, 20, 1, 1), (0, 30, 40, 2, 1), (0, 210, 220, 3, 1), (0, 410, 420, 4, 1)]
    dev = [(1, KERNEL, 0, 1000, 1100, 0, 1), (2, MEMCPY, 1, 1100, 1110, 0, 1), (3, KERNEL, 0, 1200, 1260, 0, 1),
           (4, KERNEL, 2, 1300, 1305, 0, 1)]
    calls, _ = run(scopes, api, dev)
    a, b = report.engine_rows(calls)
    assert (a.engine, a.calls, a.total_ns, a.kernels, a.kernel_ns, a.copies, a.copy_ns, a.device_ns) == \
        ("a", 2, 200, 2, 160, 1, 10, 170)
    assert (a.p50_ns, a.p99_ns, a.kernel_p50_ns, a.kernel_p99_ns, a.calls_with_device) == (100, 100, 60, 100, 2)
    assert (b.engine, b.calls, b.kernels, b.kernel_ns) == ("b", 1, 1, 5)
    top = [(k.engine, k.name, k.kind, k.count, k.total_ns, k.mean_ns) for k in report.top_kernels(calls)]
    assert top == [("a", "k0", "kernel", 2, 160, 80), ("a", "k1", "memcpy", 1, 10, 10), ("b", "k2", "kernel", 1, 5, 5)]
    assert report.top_kernels(calls, engine="b", n=1)[0].share == 1.0
    text = report.format_engine_table(calls)
    assert "gpu kernels ms" in text and text.splitlines()[1].split()[:2] == ["a", "2"]
    assert "k0" in report.format_top_kernels(calls)


def test_launches_are_counted_once_per_correlation_id_and_lost_work_is_said():
    scopes = [(0, 0, 100, 0, 0, 1)]
    api = [(0, 10, 20, 5, 1), (0, 10, 20, 5, 1),  # a runtime and a driver row of one launch
           (0, 30, 40, 6, 1),  # a launch whose kernel the capture lost
           (0, 50, 60, 7, 0)]  # an event record: no device work, not a launch
    dev = [(5, KERNEL, 0, 200, 210, 0, 1)]
    calls, notes = run(scopes, api, dev)
    assert calls.launches.tolist() == [2] and calls.launches_unmatched.tolist() == [1]
    assert notes == ["1 launch(es) inside calls have no device activity in the capture (in 1 call(s))"]


def test_phase_scopes_outside_calls_are_left_out_and_said():
    calls, notes = run([(0, 0, 100, 0, 0, 1), (0, 10, 90, 0, 2, 1), (0, 200, 300, 0, 3, 1)], [], [])
    assert calls.phase_ns.tolist() == [[0, 80, 0, 0]] and not calls.has_device_activity
    assert calls.device_begin_ns.tolist() == [-1] and calls.device_end_ns.tolist() == [-1]  # the model's "none"
    assert notes == ["1 phase scope(s) outside every call scope left out"]


def brute_union(intervals: list[tuple[int, int]]) -> int:
    total, reach = 0, None
    for b, e in sorted(intervals):
        e = max(e, b)
        if reach is None or b >= reach:
            total += e - b
            reach = e
        elif e > reach:
            total += e - reach
            reach = e
    return total


@given(st.lists(st.tuples(st.integers(0, 5), st.integers(-10**12, 10**12), st.integers(0, 10**6)), max_size=60))
def test_union_per_group_equals_the_plain_sweep(rows):
    group = np.asarray([r[0] for r in rows], dtype=np.int64)
    begin = np.asarray([r[1] for r in rows], dtype=np.int64)
    end = begin + np.asarray([r[2] for r in rows], dtype=np.int64)
    got = union_ns(group, begin, end, 6)
    for g in range(6):
        assert got[g] == brute_union([(int(b), int(e)) for gg, b, e in zip(group, begin, end, strict=True) if gg == g])


def test_union_of_groups_too_far_apart_to_lift_takes_the_loop():
    group = np.asarray([0, 0, 1, 1], dtype=np.int64)
    begin = np.asarray([0, 5, 0, 2**61], dtype=np.int64)
    end = np.asarray([10, 20, 2**61 + 10, 2**61 + 20], dtype=np.int64)
    assert union_ns(group, begin, end, 2).tolist() == [20, 2**61 + 20]
