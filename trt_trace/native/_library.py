"""Loads the compiled tracer library (the hook and the torch.ops.trt_trace ops)."""

from __future__ import annotations

import ctypes
import functools
import sys
import threading
from collections.abc import Callable
from pathlib import Path

# torch lists in dir(torch.ops.<namespace>) only the ops already looked up: import trt_trace looks up
# every public op (no leading underscore) of its namespace, and the tensorrt aliases it registers
# (csrc/ops/tensorrt_aliases.cpp), so that dir() shows them all.
ALIAS_NAMESPACE = "tensorrt"
ALIASES = ("set_profile_execution", "dump_engine_timing")


def public_ops(namespace: str = "trt_trace") -> list[str]:
    """The public ops the dispatcher holds in `namespace` (trt_trace's: all it registers without a leading _)."""
    import torch  # heavy: this module's import stays torch-free (the CLI's reading verbs, the start-up hook)

    prefix = namespace + "::"
    names = {n[len(prefix):].split(".", 1)[0] for n in torch._C._dispatch_get_all_op_names() if n.startswith(prefix)}
    if namespace == ALIAS_NAMESPACE:
        return sorted(n for n in names if n in ALIASES)
    return sorted(n for n in names if not n.startswith("_"))


# The compiled libraries sit at the package's top (setup.py: trt_trace._trt_trace, trt_trace._trt_trace_read).
PACKAGE_DIR = Path(__file__).resolve().parents[1]


def library_path() -> Path:
    found = sorted(p for p in PACKAGE_DIR.glob("_trt_trace*.so") if not p.name.startswith("_trt_trace_read"))
    if not found:
        raise ImportError(
            f"trt_trace: the compiled library is missing from {PACKAGE_DIR}; install the package with "
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


_load_lock = threading.Lock()
_loaded = False
_loading_thread: int | None = None  # the thread inside load() now (it imports torch there)
_after_load: list[Callable[[], None]] = []  # what that import's start-up hook left for after the load


def load() -> None:
    """Loads the library once, also when threads call at once (one that raised runs again); registers
    the execute_engine hook and the ops.

    `import torch` inside it runs the TRT_TRACE_OUT start-up hook (trt_trace_autostart.py) when trt_trace
    is imported before torch; that hook needs the library, so it asks `after_load` and runs once the
    load has finished, outside the lock, instead of waiting on a load that waits on it."""
    global _loaded, _loading_thread
    if _loaded:
        return
    if _loading_thread == threading.get_ident():
        raise RuntimeError("trt_trace: the tracer library's load was re-entered from inside itself "
                           "(a start-up hook run by `import torch`); that hook must use _library.after_load")
    with _load_lock:
        if _loaded:
            return
        _loading_thread = threading.get_ident()
        try:
            import torch  # here, inside the load: its start-up hook then finds loading_here() (see above)

            torch.ops.load_library(str(library_path()))
            _loaded = True
        finally:
            _loading_thread = None
            deferred = list(_after_load)
            _after_load.clear()
    for fn in deferred:  # also after a failed load: the hook then reports the failure in its own line
        fn()


def loading_here() -> bool:
    """Whether this thread is inside load() now (inside the `import torch` it does)."""
    return _loading_thread == threading.get_ident()


def after_load(fn: Callable[[], None]) -> None:
    """Runs `fn` now, or, when this thread is inside load() (a hook run by its `import torch`), right
    after the load has finished."""
    if loading_here():
        _after_load.append(fn)
    else:
        fn()


def load_at_import() -> None:
    """`import trt_trace`: loads the library and looks up the public ops so dir() lists them. A
    missing or broken build is one line here; the API then raises the same error when used."""
    try:
        load()
        import torch  # loaded by load() just above; the module's import stays torch-free

        for namespace in ("trt_trace", ALIAS_NAMESPACE):
            ns = getattr(torch.ops, namespace)
            for name in public_ops(namespace):
                hasattr(ns, name)  # the look-up itself adds the op to dir(ns)
    except Exception as exc:
        try:
            sys.stderr.write(f"trt_trace: the tracer is not installed ({exc})\n")
        except Exception:
            pass


def c_function(name: str, restype: type | None, *argtypes: type, release_gil: bool = False) -> ctypes._CFuncPtr:
    """A C entry point of the loaded library (`extern "C"`, called through ctypes on a hot path from
    Python), bound with its types; the library is loaded first. PyDLL opens the loaded library itself:
    dlopen finds it, no second copy. release_gil: for a function that may wait on a lock that a thread
    running Python holds (that thread needs the GIL to let it go)."""
    load()
    f = getattr(_gil_free_dll() if release_gil else _dll(), name)
    f.restype = restype
    f.argtypes = list(argtypes)
    return f


@functools.cache
def _dll() -> ctypes.PyDLL:
    return ctypes.PyDLL(str(library_path()))


@functools.cache
def _gil_free_dll() -> ctypes.CDLL:
    return ctypes.CDLL(str(library_path()))
