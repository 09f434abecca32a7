"""Per-engine figures of a capture (model.CaptureCalls): the rows of the engine table, the top kernels of
each engine, and their text. Plain data first (EngineRow, KernelRow), text second, so that the CLI
and the readers registry can lay them out as they lay out trt_trace's own tables.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..schema.trace_format import HOST_PHASES
from .model import KIND_NAMES, CaptureCalls


def order_statistic(values: np.ndarray, p: float) -> int:
    """The p-th percentile as a value some call really had (the ceil(p n / 100)-th smallest), -1 if none:
    the definition trt_trace's own tables use."""
    if len(values) == 0:
        return -1
    k = max(1, -(-int(p * len(values)) // 100))
    return int(np.partition(values, k - 1)[k - 1])


@dataclass(frozen=True)
class EngineRow:
    engine: str
    calls: int
    total_ns: int  # host time of the calls (their scopes)
    phase_ns: tuple[int, int, int, int]  # workspace, inputs, outputs, enqueue
    p50_ns: int
    p99_ns: int
    calls_with_device: int  # calls whose launched work the capture holds
    kernels: int
    kernel_ns: int  # sum over calls of each call's kernel union
    kernel_p50_ns: int  # per call, over calls_with_device (-1: none)
    kernel_p99_ns: int
    copies: int
    copy_ns: int
    device_ns: int  # sum over calls of each call's union of all its device work
    launches_unmatched: int
    calls_no_cuda: int = 0  # calls in whose time the capture holds no CUDA record (its gap, captures.md)


@dataclass(frozen=True)
class KernelRow:
    engine: str
    name: str
    kind: str  # "kernel", "memcpy", "memset"
    count: int
    total_ns: int  # the sum of the activities' own durations
    mean_ns: int
    share: float  # of the engine's summed activity time


def engine_rows(calls: CaptureCalls) -> list[EngineRow]:
    """One row per engine, the most host time first."""
    rows = []
    gap = calls.no_cuda_activity()
    for e, name in enumerate(calls.engines):
        m = calls.engine == e
        if not m.any():
            continue
        total = calls.total_ns[m]
        with_device = m & ((calls.kernels + calls.copies) > 0)
        rows.append(EngineRow(
            engine=name, calls=int(m.sum()), total_ns=int(total.sum()),
            phase_ns=tuple(int(v) for v in calls.phase_ns[m].sum(axis=0)),  # type: ignore[arg-type]
            p50_ns=order_statistic(total, 50), p99_ns=order_statistic(total, 99),
            calls_with_device=int(with_device.sum()), kernels=int(calls.kernels[m].sum()),
            kernel_ns=int(calls.kernel_ns[m].sum()),
            kernel_p50_ns=order_statistic(calls.kernel_ns[with_device], 50),
            kernel_p99_ns=order_statistic(calls.kernel_ns[with_device], 99),
            copies=int(calls.copies[m].sum()), copy_ns=int(calls.copy_ns[m].sum()),
            device_ns=int(calls.device_ns[m].sum()), launches_unmatched=int(calls.launches_unmatched[m].sum()),
            calls_no_cuda=int((m & gap).sum())))
    rows.sort(key=lambda r: (-r.total_ns, r.engine))
    return rows


def top_kernels(calls: CaptureCalls, engine: str | None = None, n: int = 10,
                calls_kept: np.ndarray | None = None) -> list[KernelRow]:
    """The device activities of each engine (or of one), grouped by name, the most time first: n per engine.
    calls_kept: only the activities of these calls (rows of `calls`), e.g. a summary's window."""
    acts = calls.activities
    out: list[KernelRow] = []
    kept = np.ones(len(acts), dtype=bool)
    if calls_kept is not None and len(acts):
        kept = np.isin(acts.call, calls_kept)
    for e, name in enumerate(calls.engines):
        if engine is not None and name != engine:
            continue
        m = (calls.engine[acts.call] == e) & kept if len(acts) else np.zeros(0, dtype=bool)
        if not m.any():
            continue
        dur = (acts.end_ns - acts.begin_ns)[m]
        key = acts.name[m].astype(np.int64) * len(KIND_NAMES) + acts.kind[m]
        keys, inverse = np.unique(key, return_inverse=True)
        sums = np.zeros(len(keys), dtype=np.int64)
        np.add.at(sums, inverse, dur)
        counts = np.bincount(inverse, minlength=len(keys))
        whole = int(dur.sum()) or 1
        for i in np.argsort(-sums, kind="stable")[:n]:
            out.append(KernelRow(engine=name, name=calls.activity_names[int(keys[i]) // len(KIND_NAMES)],
                                 kind=KIND_NAMES[int(keys[i]) % len(KIND_NAMES)], count=int(counts[i]),
                                 total_ns=int(sums[i]), mean_ns=int(sums[i]) // int(counts[i]),
                                 share=float(sums[i]) / whole))
    return out


def _ms(ns: int) -> str:
    return f"{ns / 1e6:.3f}" if ns >= 0 else "-"


def format_engine_table(calls: CaptureCalls) -> str:
    """The per-engine table of a capture, with the exact kernel time where the capture has CUDA activity."""
    rows = engine_rows(calls)
    all_ns = sum(r.total_ns for r in rows) or 1
    width = max([len("engine"), *(len(r.engine) for r in rows)])
    head = [f"{'engine':<{width}}", f"{'calls':>7}", f"{'total ms':>10}", f"{'share %':>8}", f"{'p50 ms':>8}",
            f"{'p99 ms':>8}", *(f"{p:>10}" for p in HOST_PHASES)]
    device = calls.has_device_activity
    if device:
        head += [f"{'gpu kernels ms':>15}", f"{'kernels/call':>13}", f"{'copies ms':>10}"]
    lines = [" ".join(head)]
    for r in rows:
        cells = [f"{r.engine:<{width}}", f"{r.calls:>7}", f"{_ms(r.total_ns):>10}",
                 f"{100 * r.total_ns / all_ns:>8.1f}", f"{_ms(r.p50_ns):>8}", f"{_ms(r.p99_ns):>8}",
                 *(f"{_ms(v):>10}" for v in r.phase_ns)]
        if device:
            recorded = r.calls - r.calls_no_cuda  # the capture's gap is no call of the kernel columns
            per_call = f"{r.kernels / recorded:.2f}" if recorded else "-"
            cells += [f"{_ms(r.kernel_ns):>15}", f"{per_call:>13}", f"{_ms(r.copy_ns):>10}"]
        lines.append(" ".join(cells))
    lines.append(f"({calls.source} capture {calls.path}: {len(calls)} calls"
                 + ("" if device else "; no CUDA activity recorded, so no kernel time") + ")")
    lines += [f"note: {n}" for n in calls.notes]
    return "\n".join(lines)


def format_top_kernels(calls: CaptureCalls, n: int = 10, calls_kept: np.ndarray | None = None) -> str:
    rows = top_kernels(calls, n=n, calls_kept=calls_kept)
    if not rows:
        return "no device activity launched by engine calls in this capture"
    lines = []
    for engine in dict.fromkeys(r.engine for r in rows):
        lines.append(f"{engine}:")
        lines.append(f"  {'count':>7} {'total ms':>10} {'mean us':>9} {'share %':>8}  kind    name")
        for r in (r for r in rows if r.engine == engine):
            name = r.name if len(r.name) <= 100 else r.name[:97] + "..."
            lines.append(f"  {r.count:>7} {_ms(r.total_ns):>10} {r.mean_ns / 1e3:>9.2f} {100 * r.share:>8.1f}  "
                         f"{r.kind:<7} {name}")
    return "\n".join(lines)
