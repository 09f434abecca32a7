"""Loads the compiled tracer library (the hook and the torch.ops.trt_trace ops)."""

from __future__ import annotations

import functools
import sys
import threading
from collections.abc import Callable
from pathlib import Path

# The ops a user looks for, made visible to dir(): torch lists only ops already looked up.
PUBLIC_OPS = {
    "trt_trace": ("set_profile_execution", "get_profile_execution", "dump_engine_timing", "reset",
                  "set_nvtx", "get_nvtx"),
    "tensorrt": ("set_profile_execution", "dump_engine_timing"),
}



def library_path() -> Path:
    here = Path(__file__).resolve().parent
    found = sorted(p for p in here.glob("_trt_trace*.so") if not p.name.startswith("_trt_trace_read"))
    if not found:
        raise ImportError(
            f"trt_trace: the compiled library is missing from {here}; install the package with "
            "`pip install --no-build-isolation .` (see README)"
        )
    return found[0]


def once(fn: Callable[[], None]) -> Callable[[], None]:
    """Runs `fn` the first time only, also when threads call at once; one that raised runs again."""
    lock = threading.Lock()
    done = False

    @functools.wraps(fn)
    def run() -> None:
        nonlocal done
        if done:
            return
        with lock:
            if not done:
                fn()
                done = True

    return run


@once
def load() -> None:
    """Loads the library once; registers the execute_engine hook and the ops."""
    import torch

    torch.ops.load_library(str(library_path()))


def load_at_import() -> None:
    """`import trt_trace`: loads the library and looks up the public ops so dir() lists them. A
    missing or broken build is one line here; the API then raises the same error when used."""
    try:
        load()
        import torch

        for namespace, names in PUBLIC_OPS.items():
            ns = getattr(torch.ops, namespace)
            for name in names:
                hasattr(ns, name)  # the look-up itself adds the op to dir(ns)
    except Exception as exc:
        try:
            sys.stderr.write(f"trt_trace: the tracer is not installed ({exc})\n")
        except Exception:
            pass
