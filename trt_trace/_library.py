"""Loads the compiled tracer library (the hook and the torch.ops.trt_trace ops)."""

from __future__ import annotations

import threading
from pathlib import Path

_lock = threading.Lock()
_loaded = False


def library_path() -> Path:
    here = Path(__file__).resolve().parent
    found = sorted(here.glob("_trt_trace*.so"))
    if not found:
        raise ImportError(
            f"trt_trace: the compiled library is missing from {here}; install the package with "
            "`pip install --no-build-isolation .` (see README)"
        )
    return found[0]


def load() -> None:
    """Loads the library once; registers the execute_engine hook and the ops."""
    global _loaded
    if _loaded:
        return
    with _lock:
        if _loaded:
            return
        import torch

        torch.ops.load_library(str(library_path()))
        _loaded = True
