"""Calls → launches → device activities: the one join behind every capture reader.

Both profilers record the same three things, each in its own words:

- **scopes**: trt_trace's call and phase scopes of each engine call, on the calling thread
  (torch.profiler's `trt::<engine>/...` user scopes, the NVTX ranges of the `trt_trace` domain);
- **API calls**: the CUDA runtime and driver calls, on the thread that made them, each with the
  correlation id CUPTI gave it;
- **device activities**: kernels, copies and memsets, each with the correlation id of the API call
  that launched it.

A call's device work is found in two steps, and only the first uses time: the API calls made on the
call's own thread while its scope was open (host timestamps of one thread, which is how the
profiler itself nests them), then, through their correlation ids, exactly the activities they
launched. Device timestamps are never compared with host ones, so a kernel that runs long after its
call returned (queued work) still belongs to its call, and a kernel of another engine that happens
to overlap it never does.

Everything is vectorised over numpy columns; the only Python loop is over the calls of threads
whose calls nest (an engine called from inside another engine's call), to find the innermost one.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .model import KERNEL, PHASE_CODES, CaptureCalls, DeviceActivities

_I64 = np.int64


@dataclass
class JoinInput:
    """What a reader collected. Threads are dense keys (thread_pid / thread_tid give each one's OS
    ids); engines and activity names are indices into the reader's name lists."""

    scopes: dict[str, np.ndarray]  # thread, begin, end, engine, phase (0 call, 1..4 host phase), call_id
    api: dict[str, np.ndarray]  # thread, begin, end, corr, launch (1: a call that launches device work)
    device: dict[str, np.ndarray]  # corr, kind, name, begin, end, device, stream
    thread_pid: np.ndarray
    thread_tid: np.ndarray
    engines: list[str]
    activity_names: list[str]
    has_device_activity: bool


def _sorted_by_thread(thread: np.ndarray, begin: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Order by (thread, begin, longer first): how nested scopes open."""
    return np.lexsort((-(end - begin), begin, thread))


def _innermost_segments(thread: np.ndarray, begin: np.ndarray, end: np.ndarray,
                        order: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per thread, the pieces of time during which one scope is the innermost open one: (thread,
    begin, end, scope) of each piece, sorted by thread then time. Scopes given in `order`
    (_sorted_by_thread). Where scopes never nest these are the scopes themselves."""
    t, b, e = thread[order], begin[order], end[order]
    same = t[1:] == t[:-1]
    if not np.any(same & (b[1:] < e[:-1])):  # no scope starts inside the previous one of its thread
        return t, b, e, order
    st, sb, se, sc = [], [], [], []
    stack: list[tuple[int, int]] = []  # (end, scope)
    pos = 0
    cur = None

    def emit(th: int, lo: int, hi: int, scope: int) -> None:
        if hi > lo:
            st.append(th)
            sb.append(lo)
            se.append(hi)
            sc.append(scope)

    for th, lo, hi, scope in zip(t.tolist(), b.tolist(), e.tolist(), order.tolist(), strict=True):
        if th != cur:
            while stack:
                top_end, top = stack.pop()
                emit(cur, pos, top_end, top)
                pos = top_end
            cur, pos = th, lo
        while stack and stack[-1][0] <= lo:
            top_end, top = stack.pop()
            emit(th, pos, top_end, top)
            pos = top_end
        if stack:
            emit(th, pos, lo, stack[-1][1])
            hi = min(hi, stack[-1][0])  # a scope that outlives its parent (rounding): clipped to it
        stack.append((hi, scope))
        pos = lo
    while stack:
        top_end, top = stack.pop()
        emit(cur, pos, top_end, top)
        pos = top_end
    return (np.asarray(st, dtype=_I64), np.asarray(sb, dtype=_I64), np.asarray(se, dtype=_I64),
            np.asarray(sc, dtype=_I64))


def _locate(seg_thread: np.ndarray, seg_begin: np.ndarray, seg_end: np.ndarray, seg_value: np.ndarray,
            thread: np.ndarray, t: np.ndarray) -> np.ndarray:
    """seg_value of the segment of the same thread holding time t (begin <= t < end), -1 where none.
    Segments sorted by (thread, begin) and disjoint within a thread."""
    out = np.full(len(t), -1, dtype=_I64)
    if len(seg_thread) == 0 or len(t) == 0:
        return out
    order = np.argsort(thread, kind="stable")
    th_sorted = thread[order]
    for th in np.unique(seg_thread):
        s0, s1 = np.searchsorted(seg_thread, [th, th + 1])
        q0, q1 = np.searchsorted(th_sorted, [th, th + 1])
        if q0 == q1:
            continue
        q = order[q0:q1]
        idx = np.searchsorted(seg_begin[s0:s1], t[q], side="right") - 1
        ok = idx >= 0
        idx = np.where(ok, idx, 0) + s0
        ok &= t[q] < seg_end[idx]
        out[q[ok]] = seg_value[idx[ok]]
    return out


def union_ns(group: np.ndarray, begin: np.ndarray, end: np.ndarray, n_groups: int) -> np.ndarray:
    """int64 [n_groups]: per group, the length of the union of its intervals [begin, end)."""
    out = np.zeros(n_groups, dtype=_I64)
    if len(group) == 0:
        return out
    end = np.maximum(end, begin)
    order = np.lexsort((begin, group))
    g, b, e = group[order], begin[order], end[order]
    first = np.ones(len(g), dtype=bool)
    first[1:] = g[1:] != g[:-1]
    rank = np.cumsum(first) - 1  # dense group number in sorted order
    base = b[first][rank]  # each group's first begin
    rb, re = b - base, e - base  # >= 0, small: within a group's own extent
    span = int(re.max()) + 1
    if span * (int(rank[-1]) + 1) < (1 << 62):
        # A running maximum per group at once: groups lifted apart by `span` each.
        lifted = np.maximum.accumulate(re + rank * span)
        prev_end = np.empty_like(re)
        prev_end[1:] = lifted[:-1] - rank[1:] * span
        prev_end[first] = rb[first]
        piece = np.maximum(re - np.maximum(rb, prev_end), 0)
    else:  # extents too long to lift apart in int64: the plain loop
        piece = np.zeros(len(g), dtype=_I64)
        reach = 0
        for i, (fi, lo, hi) in enumerate(zip(first.tolist(), rb.tolist(), re.tolist(), strict=True)):
            if fi:
                reach = lo
            piece[i] = max(0, hi - max(lo, reach))
            reach = max(reach, hi)
    np.add.at(out, g, piece)
    return out


def join(inp: JoinInput, source: str, path: str, clock: str) -> tuple[CaptureCalls, list[str]]:
    """The per-call table of a capture, and notes on what could not be placed."""
    notes: list[str] = []
    s = inp.scopes
    is_call = s["phase"] == 0
    calls = np.flatnonzero(is_call)
    # Calls in time order: the row order of the result.
    calls = calls[np.lexsort((s["thread"][calls], s["begin"][calls]))]
    n = len(calls)
    row_of_scope = np.full(len(s["phase"]), -1, dtype=_I64)
    row_of_scope[calls] = np.arange(n, dtype=_I64)

    c_thread, c_begin, c_end = s["thread"][calls], s["begin"][calls], s["end"][calls]
    corder = _sorted_by_thread(c_thread, c_begin, c_end)
    seg_t, seg_b, seg_e, seg_row = _innermost_segments(c_thread, c_begin, c_end, corder)

    # Phase scopes → their call (the innermost call holding their midpoint), durations summed per phase.
    phases = np.flatnonzero(~is_call)
    p_thread, p_begin, p_end = s["thread"][phases], s["begin"][phases], s["end"][phases]
    p_row = _locate(seg_t, seg_b, seg_e, seg_row, p_thread, p_begin + (p_end - p_begin) // 2)
    placed = p_row >= 0
    if not placed.all():
        notes.append(f"{int((~placed).sum())} phase scope(s) outside every call scope left out")
    phase_ns = np.zeros((n, len(PHASE_CODES) - 1), dtype=_I64)  # the host phases
    np.add.at(phase_ns, (p_row[placed], s["phase"][phases][placed].astype(_I64) - 1),
              (p_end - p_begin)[placed])

    # API calls → the call whose scope was open on their thread (their midpoint: one thread's host clock).
    a = inp.api
    a_row = _locate(seg_t, seg_b, seg_e, seg_row, a["thread"], a["begin"] + (a["end"] - a["begin"]) // 2)
    inside = np.flatnonzero(a_row >= 0)
    a_row_in, a_corr_in, a_launch_in = a_row[inside], a["corr"][inside], a["launch"][inside]
    a_mid_in = (a["begin"] + (a["end"] - a["begin"]) // 2)[inside]
    a_thread_in = a["thread"][inside]
    # The phase scope that held each API call (the launch's phase; 0 where none did).
    pk = np.flatnonzero(placed)
    porder = _sorted_by_thread(p_thread[pk], p_begin[pk], p_end[pk])
    ps_t, ps_b, ps_e, ps_i = _innermost_segments(p_thread[pk], p_begin[pk], p_end[pk], porder)
    a_phase_scope = _locate(ps_t, ps_b, ps_e, ps_i, a_thread_in, a_mid_in)
    a_phase = np.zeros(len(inside), dtype=np.int8)
    has = a_phase_scope >= 0
    same_call = np.zeros(len(inside), dtype=bool)
    same_call[has] = p_row[pk][a_phase_scope[has]] == a_row_in[has]
    a_phase[same_call] = s["phase"][phases][pk][a_phase_scope[same_call]]

    # Device activities → the API call with their correlation id, if it was inside a call.
    d = inp.device
    uniq, first = np.unique(a_corr_in, return_index=True)
    pos = np.searchsorted(uniq, d["corr"])
    pos_c = np.minimum(pos, max(len(uniq) - 1, 0))
    matched = (pos < len(uniq)) & (uniq[pos_c] == d["corr"]) if len(uniq) else np.zeros(len(d["corr"]), dtype=bool)
    launch_of = first[pos_c[matched]]  # index into the inside arrays
    act_row = a_row_in[launch_of]
    kind = d["kind"][matched].astype(np.int8)
    begin, end = d["begin"][matched], d["end"][matched]
    acts = DeviceActivities(call=act_row, kind=kind, name=d["name"][matched].astype(np.int32), begin_ns=begin,
                            end_ns=end, device=d["device"][matched].astype(np.int32), stream=d["stream"][matched],
                            phase=a_phase[launch_of])
    order = np.lexsort((begin, act_row))
    acts = DeviceActivities(**{f: getattr(acts, f)[order] for f in DeviceActivities.__dataclass_fields__})

    # Launches per call, one per correlation id (an export can hold a runtime and a driver row of one
    # launch): API calls that launched work the capture holds, or that should have (by name).
    is_launch = np.zeros(len(uniq), dtype=bool)
    np.logical_or.at(is_launch, np.searchsorted(uniq, a_corr_in), a_launch_in != 0)
    with_work = np.isin(uniq, d["corr"])
    counted = with_work | is_launch
    lost = is_launch & ~with_work
    u_row = a_row_in[first]
    launches = np.bincount(u_row[counted], minlength=n).astype(np.int32)
    launches_unmatched = np.bincount(u_row[lost], minlength=n).astype(np.int32)
    if inp.has_device_activity and lost.any():
        notes.append(f"{int(lost.sum())} launch(es) inside calls have no device activity in the capture "
                     f"(in {int((launches_unmatched > 0).sum())} call(s))")

    api_calls = np.bincount(a_row_in, minlength=n).astype(np.int32)
    gap = int((api_calls == 0).sum())
    if inp.has_device_activity and gap:
        notes.append(f"{gap} call(s) have no CUDA activity in the capture: the profiler recorded none in their "
                     f"time (left out of gpu kernels ms and kernels/call)")

    is_kernel = acts.kind == KERNEL
    kernels = np.bincount(acts.call[is_kernel], minlength=n).astype(np.int32)
    copies = np.bincount(acts.call[~is_kernel], minlength=n).astype(np.int32)
    device_begin = np.full(n, -1, dtype=_I64)
    device_end = np.full(n, -1, dtype=_I64)
    if len(acts):
        big = np.iinfo(_I64).max
        lo = np.full(n, big, dtype=_I64)
        np.minimum.at(lo, acts.call, acts.begin_ns)
        hi = np.full(n, -1, dtype=_I64)
        np.maximum.at(hi, acts.call, acts.end_ns)
        got = lo != big
        device_begin[got], device_end[got] = lo[got], hi[got]
    out = CaptureCalls(
        source=source, path=path, clock=clock, engines=list(inp.engines),
        engine=s["engine"][calls].astype(np.int32), pid=inp.thread_pid[c_thread], tid=inp.thread_tid[c_thread],
        call_id=s["call_id"][calls], begin_ns=c_begin, end_ns=c_end, phase_ns=phase_ns,
        has_device_activity=inp.has_device_activity, launches=launches, launches_unmatched=launches_unmatched,
        kernels=kernels, kernel_ns=union_ns(acts.call[is_kernel], acts.begin_ns[is_kernel], acts.end_ns[is_kernel], n),
        copies=copies, copy_ns=union_ns(acts.call[~is_kernel], acts.begin_ns[~is_kernel], acts.end_ns[~is_kernel], n),
        device_ns=union_ns(acts.call, acts.begin_ns, acts.end_ns, n), device_begin_ns=device_begin,
        device_end_ns=device_end, activities=acts, activity_names=list(inp.activity_names), api_calls=api_calls)
    return out, notes
