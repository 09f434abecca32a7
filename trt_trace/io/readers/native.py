"""The readers' native code (csrc/readers: libtrt_trace_read, no torch), loaded with ctypes.

ctypes releases the GIL for the length of each call, so chunks can be parsed on two threads."""

from __future__ import annotations

import ctypes
from functools import cache

import numpy as np

from ...native._library import PACKAGE_DIR
from ...schema.phases import STATS_COLUMNS
from .columns import CALL_DTYPE, SLICE_DTYPE, layout

_i64, _u64, _i32, _u32, _ptr = ctypes.c_int64, ctypes.c_uint64, ctypes.c_int32, ctypes.c_uint32, ctypes.c_void_p


class NativeReaderError(ImportError):
    pass


@cache
def lib() -> ctypes.CDLL:
    path = PACKAGE_DIR / "_trt_trace_read.so"
    if not path.exists():
        raise NativeReaderError(f"trt_trace: the reader library is missing from {PACKAGE_DIR}; reinstall the package "
                                "with `pip install --no-build-isolation .` (see README)")
    so = ctypes.CDLL(str(path))
    sigs = {
        "tt_json_parse": (_i64, [_ptr, _i64, _i32, _ptr, _i64, _ptr, _i64, _ptr, _ptr]),
        "tt_pf_parse": (_i64, [_ptr, _i64, _i64, _ptr, _ptr, _ptr, _ptr, _i64, _u64, _u32, _ptr, _ptr, _i64, _ptr,
                               _ptr]),
        "tt_joiner_new": (_ptr, [_i64, _i64]),
        "tt_joiner_free": (None, [_ptr]),
        "tt_joiner_add": (None, [_ptr, _ptr, _i64]),
        "tt_joiner_end": (None, [_ptr]),
        "tt_joiner_take": (_i64, [_ptr, _ptr, _i64]),
        "tt_joiner_orphan_spans": (_i64, [_ptr]),
        "tt_joiner_backwards_spans": (_i64, [_ptr]),
        "tt_joiner_partial": (_i64, [_ptr, _ptr, _ptr, _i64]),
        "tt_json_encode": (_i64, [_ptr, _i64, _ptr, _ptr, _ptr, _i64, _i64, _u64, _ptr, _ptr, _i64, _ptr, _i64]),
        "tt_view_packets": (_i64, [_i64, _ptr, _ptr, _ptr, _ptr, _ptr, _ptr, _ptr, _ptr, _i64, _ptr, _ptr, _ptr,
                                   _ptr, _ptr, _ptr, _i64]),
        "tt_format_table": (_i64, [_ptr, _ptr, _i64, _ptr, _ptr, _i64, _i64, ctypes.c_char_p, _i32, _i64, _i64, _i64,
                                   _ptr, _i64]),
        "tt_scaled_gpu_ns": (None, [_ptr, _i64, _ptr]),
        "tt_layout": (_i64, [_ptr, _i64]),
        "tt_slice_facts": (_i64, [_ptr, _i64, _ptr, _ptr, _i64]),
        "tt_call_groups": (_i64, [_ptr, _i64, _ptr, _i32, _ptr, _ptr, _ptr, _ptr, _i64]),
    }
    for name, (restype, argtypes) in sigs.items():
        fn = getattr(so, name)
        fn.restype = restype
        fn.argtypes = argtypes
    found = native_layout(so)
    if found != layout():
        raise NativeReaderError(f"trt_trace: the reader library's layout {found} is not the package's {layout()}; "
                                "reinstall the package")
    return so


def native_layout(so: ctypes.CDLL | None = None) -> list[int]:
    so = so or lib()
    out = np.zeros(32, dtype=np.int64)
    n = so.tt_layout(out.ctypes.data, len(out))
    return out[:n].tolist()


def packed(pieces: list[bytes]) -> tuple[bytes, np.ndarray]:
    """The pieces joined, and int64 offsets with piece k at blob[off[k]:off[k + 1]]: how the native
    functions take a list of strings."""
    offsets = np.zeros(len(pieces) + 1, dtype=np.int64)
    np.cumsum([len(p) for p in pieces], out=offsets[1:])
    return b"".join(pieces), offsets


def address(buf: bytearray | np.ndarray | bytes) -> int:
    """The address of a buffer's first byte (bytes: read-only, never written by the callee)."""
    if isinstance(buf, np.ndarray):
        return buf.ctypes.data
    if isinstance(buf, bytes):
        return ctypes.cast(ctypes.c_char_p(buf), ctypes.c_void_p).value or 0
    return ctypes.addressof((ctypes.c_char * max(len(buf), 1)).from_buffer(buf)) if len(buf) else 0


class Joiner:
    """Slices in, whole calls out (csrc/readers/call_joiner.cpp)."""

    TAKE = 1 << 16

    def __init__(self, gpu_window: int, open_cap: int) -> None:
        self._lib = lib()
        self._j = self._lib.tt_joiner_new(gpu_window, open_cap)

    def add(self, slices: np.ndarray) -> None:
        if len(slices):
            s = np.ascontiguousarray(slices)
            self._lib.tt_joiner_add(self._j, s.ctypes.data, len(s))

    def take(self) -> list[np.ndarray]:
        parts = []
        while True:
            ready = self._lib.tt_joiner_take(self._j, None, 0)  # how many calls are ready
            if ready == 0:
                return parts
            out = np.empty(min(ready, self.TAKE), dtype=CALL_DTYPE)  # written in place: no copy after
            n = self._lib.tt_joiner_take(self._j, out.ctypes.data, len(out))
            parts.append(out[:n])

    def end(self) -> None:
        self._lib.tt_joiner_end(self._j)

    def orphan_spans(self) -> int:
        return int(self._lib.tt_joiner_orphan_spans(self._j))

    def backwards_spans(self) -> int:
        """Slices that end before they begin (a damaged file), left out of the calls."""
        return int(self._lib.tt_joiner_backwards_spans(self._j))

    def partial(self) -> tuple[np.ndarray, np.ndarray]:
        n = self._lib.tt_joiner_partial(self._j, None, None, 0)
        pids = np.zeros(n, dtype=np.uint64)
        ids = np.zeros(n, dtype=np.uint64)
        if n:
            self._lib.tt_joiner_partial(self._j, pids.ctypes.data, ids.ctypes.data, n)
        return pids, ids

    def __del__(self) -> None:
        j, self._j = getattr(self, "_j", None), None
        if j:
            self._lib.tt_joiner_free(j)


_NO_BEGIN = np.iinfo(np.int64).max


def slice_facts(slices: np.ndarray) -> tuple[int | None, np.ndarray]:
    """(the earliest begin of the X slices, None if none; int64 [k, 3] rows (pid, engine id, first
    row) of the distinct (pid, engine) pairs of the call slices, in order of first appearance)."""
    s = np.ascontiguousarray(slices)
    low = np.zeros(1, dtype=np.int64)
    cap = 16
    while True:
        pairs = np.empty(3 * cap, dtype=np.int64)
        n = lib().tt_slice_facts(s.ctypes.data, len(s), low.ctypes.data, pairs.ctypes.data, cap)
        if n <= cap:
            first = int(low[0])
            return (None if first == _NO_BEGIN else first), pairs[: 3 * n].reshape(n, 3)
        cap = n


GROUP_STATS = len(STATS_COLUMNS)  # tt_call_groups' stats columns, the last (gpu_sampled_out) counted always


def call_groups(calls: np.ndarray, columns: tuple[int, ...]) -> tuple[list[int], np.ndarray, list[list[np.ndarray]]]:
    """Calls grouped by (pid << 32 | engine id), in key order (csrc/readers/call_groups.cpp): (the
    keys, int64 [groups, GROUP_STATS] sums, per column of `columns` (Call.ns indices) the values of
    each group, the GPU column only where a call has a span)."""
    c = np.ascontiguousarray(calls)
    n = len(c)
    cols = np.array(columns, dtype=np.int32)
    values = np.empty(max(len(cols) * n, 1), dtype=np.int64)
    cap = 16
    while True:
        keys = np.empty(cap, dtype=np.uint64)
        stats = np.empty(cap * GROUP_STATS, dtype=np.int64)
        counts = np.empty(max(len(cols) * cap, 1), dtype=np.int64)
        g = lib().tt_call_groups(c.ctypes.data, n, cols.ctypes.data, len(cols), keys.ctypes.data, stats.ctypes.data,
                                 counts.ctypes.data, values.ctypes.data, cap)
        if g <= cap:
            break
        cap = g
    per_column = []
    for k in range(len(cols)):
        bounds = np.concatenate(([0], np.cumsum(counts[k * cap: k * cap + g]))).tolist()
        base = k * n
        per_column.append([values[base + bounds[i]: base + bounds[i + 1]] for i in range(g)])
    return keys[:g].tolist(), stats[: g * GROUP_STATS].reshape(g, GROUP_STATS), per_column


def format_table(names: list[str], stats: np.ndarray, percentiles: np.ndarray | None, all_percentiles: tuple[int, int],
                 percentiles_of: str, json: bool, gpu_every: int, dropped: int, threads_with_drops: int) -> str:
    """The per-engine table (csrc/stats/timing_table.cpp, the formatter of every table)."""
    blob, offsets = packed([n.encode("utf-8", "surrogateescape") for n in names])
    stats = np.ascontiguousarray(stats, dtype=np.int64)
    pct = None if percentiles is None else np.ascontiguousarray(percentiles, dtype=np.int64)
    cap = 4096 + 256 * (len(names) + 1) + len(blob) * 2
    for _ in range(2):
        out = ctypes.create_string_buffer(cap)
        n = lib().tt_format_table(blob, offsets.ctypes.data, len(names), stats.ctypes.data,
                                  None if pct is None else pct.ctypes.data, int(all_percentiles[0]),
                                  int(all_percentiles[1]), percentiles_of.encode(), int(json), int(gpu_every),
                                  int(dropped), int(threads_with_drops), ctypes.addressof(out), cap)
        if n <= cap:
            return out.raw[:n].decode("utf-8", "surrogateescape")
        cap = n
    raise RuntimeError("tt_format_table: the table did not fit")


def scaled_gpu_ns(stats: np.ndarray) -> np.ndarray:
    """Each row's GPU ns scaled to all its CUDA calls, by the tables' own formula (int64 [rows])."""
    stats = np.ascontiguousarray(stats, dtype=np.int64)
    out = np.zeros(len(stats), dtype=np.int64)
    if len(stats):
        lib().tt_scaled_gpu_ns(stats.ctypes.data, len(stats), out.ctypes.data)
    return out


__all__ = ["SLICE_DTYPE", "Joiner", "format_table", "lib", "scaled_gpu_ns", "slice_facts", "call_groups"]
