"""A cudaProfilerApi capture range around each tracing session (TRT_TRACE_CUDA_PROFILER=session), so that
`nsys profile --capture-range=cudaProfilerApi` records what the session records and nothing else: the
window of `trt-trace capture`, a `tracing()` block, a TRT_TRACE_OUT run from its first call.

cudaProfilerStart is called right before the session turns recording on; cudaProfilerStop once it has
stopped and drained, after the GPU spans of its last calls (the drain waits for them), so the kernels of the
last recorded calls are inside the range. Calls stay on the session's control path (start, stop): the engine
calls themselves pay nothing.

Which cudaProfilerStart: the one the process's global symbols name (libcudart, as torch's global
dependencies load it; a tool's interposed one, as the tests' stub), else torch's own CUDA runtime binding
once CUDA is initialized. A process with neither (a CPU build of torch) gets one line and no range; a
failing call (its cudaError_t) one line too. Never raises into a session."""

from __future__ import annotations

import ctypes
import os
from collections.abc import Callable

from . import config

_open_pid = 0  # the process whose range is open (a forked child has none of its own)
_warned = False
_MODE_UNREAD = "?"
_mode: str | None = _MODE_UNREAD  # TRT_TRACE_CUDA_PROFILER, read at the first session (its line once)


def _bad_fork() -> bool:
    """A forked child of a process that initialized CUDA: no CUDA call works here (its session has no GPU spans)."""
    try:
        import torch.cuda  # loaded already (a session is starting); kept out of this module's import (the CLI's)

        return bool(torch.cuda._is_in_bad_fork())
    except (ImportError, AttributeError):
        return False


def _functions() -> tuple[Callable[[], int], Callable[[], int]] | None:
    """(cudaProfilerStart, cudaProfilerStop) returning their cudaError_t, or None where there are none."""
    try:
        process = ctypes.CDLL(None)
        start, stop = process.cudaProfilerStart, process.cudaProfilerStop
        start.restype = stop.restype = ctypes.c_int
        start.argtypes = stop.argtypes = []
        return start, stop
    except (AttributeError, OSError):
        pass
    try:
        import torch  # loaded already (a session is starting); kept out of this module's import (the CLI's)

        if torch.cuda.is_initialized():
            cudart = torch.cuda.cudart()
            return (lambda: int(cudart.cudaProfilerStart())), (lambda: int(cudart.cudaProfilerStop()))
    except Exception:  # noqa: BLE001 (a broken CUDA set-up: the line below says there is no range)
        pass
    return None


def _warn_once(message: str) -> None:
    """The process's one line about its range; after it, no more calls (the runtime has said no)."""
    global _warned, _mode
    if not _warned:
        _warned = True
        config.warn(message)
    _mode = None


def begin() -> None:
    """At a session's start, before recording turns on: cudaProfilerStart where TRT_TRACE_CUDA_PROFILER=session."""
    global _open_pid, _mode
    if _mode == _MODE_UNREAD:
        _mode = config.cuda_profiler_from_env()
    if _open_pid == os.getpid() or _mode is None or _bad_fork():
        return
    functions = _functions()
    if functions is None:
        _warn_once("TRT_TRACE_CUDA_PROFILER: no CUDA runtime in this process (no cudaProfilerStart); no capture "
                   "range")
        return
    error = functions[0]()
    if error:
        _warn_once(f"TRT_TRACE_CUDA_PROFILER: cudaProfilerStart failed (cudaError_t {error}); no capture range")
        return
    _open_pid = os.getpid()


def end() -> None:
    """At a session's stop, after its last drain: cudaProfilerStop where begin() opened the range."""
    global _open_pid
    if _open_pid != os.getpid():
        return
    _open_pid = 0
    functions = _functions()
    error = functions[1]() if functions is not None else -1
    if error:
        _warn_once(f"TRT_TRACE_CUDA_PROFILER: cudaProfilerStop failed (cudaError_t {error})")
