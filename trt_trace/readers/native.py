"""The readers' native code (csrc/readers: libtrt_trace_read, no torch), loaded with ctypes.

ctypes releases the GIL for the length of each call, so chunks can be parsed on two threads."""

from __future__ import annotations

import ctypes
from functools import cache
from pathlib import Path

import numpy as np

from .columns import CALL_DTYPE, SLICE_DTYPE, layout

_i64, _u64, _i32, _u32, _ptr = ctypes.c_int64, ctypes.c_uint64, ctypes.c_int32, ctypes.c_uint32, ctypes.c_void_p


class NativeReaderError(ImportError):
    pass


@cache
def lib() -> ctypes.CDLL:
    here = Path(__file__).resolve().parent.parent
    path = here / "_trt_trace_read.so"
    if not path.exists():
        raise NativeReaderError(f"trt_trace: the reader library is missing from {here}; reinstall the package "
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
        "tt_joiner_partial": (_i64, [_ptr, _ptr, _ptr, _i64]),
        "tt_json_encode": (_i64, [_ptr, _i64, _ptr, _ptr, _ptr, _i64, _i64, _u64, _ptr, _ptr, _i64, _ptr, _i64]),
        "tt_format_table": (_i64, [_ptr, _ptr, _i64, _ptr, _ptr, _i64, _i64, ctypes.c_char_p, _i32, _i64, _i64, _i64,
                                   _ptr, _i64]),
        "tt_scaled_gpu_ns": (None, [_ptr, _i64, _ptr]),
        "tt_layout": (_i64, [_ptr, _i64]),
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
        self._out = np.empty(self.TAKE, dtype=CALL_DTYPE)

    def add(self, slices: np.ndarray) -> None:
        if len(slices):
            s = np.ascontiguousarray(slices)
            self._lib.tt_joiner_add(self._j, s.ctypes.data, len(s))

    def take(self) -> list[np.ndarray]:
        parts = []
        while True:
            n = self._lib.tt_joiner_take(self._j, self._out.ctypes.data, len(self._out))
            if n == 0:
                return parts
            parts.append(self._out[:n].copy())

    def end(self) -> None:
        self._lib.tt_joiner_end(self._j)

    def orphan_spans(self) -> int:
        return int(self._lib.tt_joiner_orphan_spans(self._j))

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


def format_table(names: list[str], stats: np.ndarray, percentiles: np.ndarray | None, all_percentiles: tuple[int, int],
                 percentiles_of: str, json: bool, gpu_every: int, dropped: int, threads_with_drops: int) -> str:
    """The per-engine table (csrc/ops/timing_table.cpp, the formatter of every table)."""
    encoded = [n.encode("utf-8", "surrogateescape") for n in names]
    blob = b"".join(encoded)
    offsets = np.zeros(len(names) + 1, dtype=np.int64)
    np.cumsum([len(e) for e in encoded], out=offsets[1:])
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


__all__ = ["SLICE_DTYPE", "Joiner", "format_table", "lib", "scaled_gpu_ns"]
