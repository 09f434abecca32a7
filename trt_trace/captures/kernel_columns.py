"""The per-engine table's capture columns: `gpu kernels ms` (per call, the union of the call's kernel
intervals, added up over the engine's calls) and `kernels/call`, from the kernels a capture's reader
joined to each call (join.py), plus the top kernels of each engine (`summary --kernels`).

The summary (trace_summary.py) adds up these sums per process and engine as it adds up its own
columns, for the calls its window keeps: a call's row in the capture is its `call_id` there
(trace_readers.py). The text columns go after trt_trace's own, row by row in the table's order.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import orjson

from . import report
from .model import CaptureCalls

# Per row of the table, int64: calls whose launched work the capture holds, kernels, the sum of each
# call's kernel union (ns), memcpy/memset activities, the sum of their unions (ns), launches without work,
# calls in whose time the capture holds no CUDA activity at all (left out of the kernel columns: their 0 is
# the profiler's gap, not the call's kernel time).
SUMS = ("calls_with_device", "kernels", "kernel_ns", "copies", "copy_ns", "launches_unmatched", "calls_no_cuda")
_K = {name: i for i, name in enumerate(SUMS)}


@dataclass
class KernelSums:
    """What the summary's rows add up from one capture, by the summary's group keys."""

    capture: CaptureCalls | None = None
    by_key: dict[int, np.ndarray] = field(default_factory=dict)
    kept: list[np.ndarray] = field(default_factory=list)  # capture rows of the calls counted

    def add(self, keys: list[int], calls: np.ndarray, capture: CaptureCalls) -> None:
        """One chunk of calls (readers' CALL_DTYPE rows, `call_id` = the row in the capture), grouped by
        the summary's keys (pid << 32 | engine id, sorted)."""
        self.capture = capture
        full = (calls["pid"].astype(np.uint64) << np.uint64(32)) | calls["engine_id"].astype(np.uint64)
        codes = np.searchsorted(np.asarray(keys, dtype=np.uint64), full)
        idx = calls["call_id"].astype(np.int64)
        self.kept.append(idx)
        cols = (((capture.kernels[idx] + capture.copies[idx]) > 0).astype(np.int64), capture.kernels[idx],
                capture.kernel_ns[idx], capture.copies[idx], capture.copy_ns[idx], capture.launches_unmatched[idx],
                capture.no_cuda_activity()[idx])
        sums = np.zeros((len(keys), len(SUMS)), dtype=np.int64)
        for j, col in enumerate(cols):
            np.add.at(sums[:, j], codes, col.astype(np.int64))
        for g, key in enumerate(keys):
            row = self.by_key.get(key)
            if row is None:
                self.by_key[key] = sums[g].copy()
            else:
                row += sums[g]

    def rows(self, keys: list[int]) -> np.ndarray:
        return np.array([self.by_key.get(k, np.zeros(len(SUMS), dtype=np.int64)) for k in keys],
                        dtype=np.int64).reshape(len(keys), len(SUMS))

    def kept_rows(self) -> np.ndarray:
        return np.unique(np.concatenate(self.kept)) if self.kept else np.zeros(0, dtype=np.int64)


def notes(capture: CaptureCalls) -> list[str]:
    """The capture's own notes (what its reader left out), and where it holds no kernels, why."""
    out = [f"{capture.path}: {n}" for n in capture.notes]
    if not capture.has_device_activity:
        how = ("record with activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]" if capture.source ==
               "torch.profiler" else "profile with nsys profile --trace=cuda,nvtx")
        out.append(f"{capture.path}: no CUDA activity in this {capture.source} capture, so no kernel time ({how})")
    return out


def _ms(ns: int) -> str:
    return f"{ns / 1e6:.3f}"


def _order(doc: dict, names: list[str], stats_calls: np.ndarray) -> list[int]:
    """The table's rows (as the native formatter ordered them) as indexes into names."""
    used: set[int] = set()
    order = []
    for row in doc.get("engines", []):
        for i, name in enumerate(names):
            if i not in used and name == row.get("engine") and int(stats_calls[i]) == row.get("calls"):
                used.add(i)
                order.append(i)
                break
    return order


def _fields(sums: np.ndarray, calls: int) -> dict:
    calls -= int(sums[_K["calls_no_cuda"]])  # the capture's gaps count as no call of the kernel columns
    return {"gpu_kernels_ms": int(sums[_K["kernel_ns"]]) / 1e6,
            "kernels_per_call": round(int(sums[_K["kernels"]]) / calls, 4) if calls else None,
            "calls_without_cuda_activity": int(sums[_K["calls_no_cuda"]]),
            "calls_with_kernels": int(sums[_K["calls_with_device"]]), "kernels": int(sums[_K["kernels"]]),
            "copies": int(sums[_K["copies"]]), "copy_ms": int(sums[_K["copy_ns"]]) / 1e6,
            "launches_unmatched": int(sums[_K["launches_unmatched"]])}


def add_columns(text: str, json_doc: dict, names: list[str], calls: np.ndarray, sums: np.ndarray) -> str:
    """The text table with `gpu kernels ms` and `kernels/call` after each row (header, engines, ALL)."""
    order = _order(json_doc, names, calls)
    lines = text.split("\n")
    if not lines or len(order) != len(names):
        return text
    head = f" {'gpu kernels ms':>15} {'kernels/call':>13}"

    def cells(s: np.ndarray, n: int) -> str:
        n -= int(s[_K["calls_no_cuda"]])
        per_call = f"{int(s[_K['kernels']]) / n:.2f}" if n else "-"
        return f" {_ms(int(s[_K['kernel_ns']])):>15} {per_call:>13}"

    lines[0] += head
    for k, i in enumerate(order, start=1):
        lines[k] += cells(sums[i], int(calls[i]))
    k = len(order) + 1
    if k < len(lines) and lines[k].startswith("ALL "):
        lines[k] += cells(sums.sum(axis=0), int(calls.sum()))
    return "\n".join(lines)


def add_json_fields(table_json: str, names: list[str], calls: np.ndarray, sums: np.ndarray,
                    capture: CaptureCalls) -> dict:
    doc = orjson.loads(table_json)
    doc["capture"] = {"source": capture.source, "cuda_activity": capture.has_device_activity}
    if capture.has_device_activity:
        order = _order(doc, names, calls)
        for row, i in zip(doc.get("engines", []), order, strict=False):
            row.update(_fields(sums[i], int(calls[i])))
        if isinstance(doc.get("all"), dict):
            doc["all"].update(_fields(sums.sum(axis=0), int(calls.sum())))
    return doc


def top_kernels_text(capture: CaptureCalls, kept: np.ndarray, n: int) -> str:
    """The top kernels of each engine over the calls the table counted (summary --kernels)."""
    return report.format_top_kernels(capture, n=n, calls_kept=kept)
