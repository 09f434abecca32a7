"""Traces Torch-TensorRT's Python runtime: engines run from Python never reach the BackendSelect hook.

Two classes run an engine from Python: `PythonTorchTensorRTModule` (`use_python_runtime=True`, or no C++
runtime; its `forward` binds inputs and outputs and calls `execute_async_v3` through TensorRT's Python
bindings) and, from 2.13 on, the Python engine object (`TRTEngine`, its `execute`) behind the
`tensorrt::execute_engine` op that a build without the C++ runtime registers from Python (the C++ hook
hands calls with a Python engine object straight on: this module traces them).

Each is instrumented in its class, once, when its module is imported (`install()`: a meta-path finder;
a module imported earlier is instrumented at once), so the user's code does not change:

- the call method (`forward` / `execute`) opens a call of the object's engine through the tracer's C entry
  (trt_trace/native/python_calls.py; the same call scope, records, rings, counters, GPU events, NVTX and
  profiler scopes as a hooked call) and closes it, flagged when it raised;
- `setup_input_tensors` marks the input set-up, `create_output_tensors` (and `create_output_allocator`,
  the data-dependent path) the output set-up, and the first assignment of `_caller_stream` (the launch
  section's first step) the start of enqueue (docs/phase-model.md#the-python-runtime).

A class that lacks `setup_input_tensors` (a wrapper that calls the op) is left alone: its calls are
traced where they run. Nothing here raises into the user's program: a class that cannot be instrumented
is one warning line and runs untraced.
"""

from __future__ import annotations

import functools
import importlib.abc
import importlib.machinery
import sys
import threading
import weakref
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

from ..native import python_calls
from ..native.python_calls import Mark

# module -> (class, call method) pairs: where Torch-TensorRT's Python runtime runs its engines.
WATCHED: dict[str, tuple[tuple[str, str], ...]] = {
    "torch_tensorrt.dynamo.runtime._PythonTorchTensorRTModule": (("PythonTorchTensorRTModule", "forward"),),
    "torch_tensorrt.dynamo.runtime._PythonTRTEngine": (("TRTEngine", "execute"),),
    # Where the released 2.13 and 2.14 packages keep their Python engine (the Python runtime rework moved
    # it there and removed PythonTorchTensorRTModule): the same class and steps.
    "torch_tensorrt.dynamo.runtime._TRTEngine": (("TRTEngine", "execute"),),
}
INSTRUMENTED = "_trt_trace_instrumented"  # set on a class once it is
# module -> what to do with it right after it has run (inference.py's package runner): the same watch.
AFTER_IMPORT: dict[str, Callable[[ModuleType], None]] = {}

_lock = threading.Lock()
# Python-runtime calls this thread has open (an attribute `open` > 0): the marks skip their C call outside a
# traced call (tracing off costs the call method's one C call, not five).
_this_thread = threading.local()
# id(engine object) -> (weak reference to it, engine id): the tracer's id for each Python engine object,
# kept beside the object, not in it (its state is pickled and copied; a copy is another engine).
_ids: dict[int, tuple[Callable[[], Any] | None, int]] = {}


def _forget(key: int) -> Callable[[Any], None]:
    def forget(_ref: Any) -> None:
        _ids.pop(key, None)

    return forget


def _engine_id(obj: Any) -> int:
    """The engine id of a Python engine object: a new one at its first call, named by its `name`."""
    key = id(obj)
    with _lock:
        known = _ids.get(key)
        if known is not None and (known[0] is None or known[0]() is obj):
            return known[1]
        name = getattr(obj, "name", "") or ""
        eid = python_calls.engine_id(str(name))
        try:
            ref: Callable[[], Any] | None = weakref.ref(obj, _forget(key))
        except TypeError:  # no weak references to it: kept by address
            ref = None
        _ids[key] = (ref, eid)
        return eid


def _device_of(args: Sequence[Any]) -> int:
    """The CUDA device of the first input (forward(*inputs), or execute(inputs)); -1: not on CUDA."""
    if not args:
        return -1
    first = args[0]
    if first.__class__ is list or first.__class__ is tuple:
        if not first:
            return -1
        first = first[0]
    get_device = getattr(first, "get_device", None)
    if get_device is None:
        return -1
    try:
        return int(get_device())
    except Exception:  # not a tensor after all: the call runs untimed on the GPU
        return -1


def instrument(cls: type, call_method: str) -> bool:
    """Instruments `cls` (once); False when it is not a runtime that binds and launches itself."""
    if cls.__dict__.get(INSTRUMENTED):
        return True
    if not callable(getattr(cls, call_method, None)) or not callable(getattr(cls, "setup_input_tensors", None)):
        return False
    entry = python_calls.entry()
    begin, mark, end = entry.begin, entry.mark, entry.end
    ids = _ids

    call = getattr(cls, call_method)
    here = _this_thread

    def traced_call(self: Any, *args: Any, **kwargs: Any) -> Any:
        known = ids.get(id(self))
        eid = known[1] if known is not None and (known[0] is None or known[0]() is self) else _engine_id(self)
        handle = begin(eid, _device_of(args))
        if not handle:
            return call(self, *args, **kwargs)
        here.open = handle
        try:
            out = call(self, *args, **kwargs)
        except BaseException:
            end(handle, 1)
            here.open = handle - 1
            raise
        end(handle, 0)
        here.open = handle - 1
        return out

    def marked(method: Callable[..., Any], first: Mark, then: Mark) -> Callable[..., Any]:
        def run(self: Any, *args: Any, **kwargs: Any) -> Any:
            if not getattr(here, "open", 0):
                return method(self, *args, **kwargs)
            mark(first)
            out = method(self, *args, **kwargs)
            mark(then)
            return out

        run.__name__ = method.__name__
        run.__qualname__ = getattr(method, "__qualname__", method.__name__)
        run.__doc__ = method.__doc__
        return run

    traced_call.__name__ = call.__name__
    traced_call.__qualname__ = getattr(call, "__qualname__", call.__name__)
    traced_call.__doc__ = call.__doc__
    setattr(cls, call_method, traced_call)
    cls.setup_input_tensors = marked(cls.setup_input_tensors, Mark.INPUTS_BEGIN, Mark.INPUTS_END)
    for name in ("create_output_tensors", "create_output_allocator"):
        method = getattr(cls, name, None)
        if callable(method):
            setattr(cls, name, marked(method, Mark.OUTPUTS_BEGIN, Mark.OUTPUTS_END))
    default = getattr(cls, "_caller_stream", None)
    if not hasattr(type(default), "__set__"):  # a plain attribute: its assignment opens the launch section
        def get_stream(self: Any) -> Any:
            return self.__dict__.get("_caller_stream", default)

        def set_stream(self: Any, value: Any) -> None:
            self.__dict__["_caller_stream"] = value
            if getattr(here, "open", 0):
                mark(Mark.ENQUEUE_BEGIN)

        cls._caller_stream = property(get_stream, set_stream)
    setattr(cls, INSTRUMENTED, True)
    return True


def change_class(module: ModuleType, class_name: str, change: Callable[[type], object], without: str) -> None:
    """Applies `change` to the class `class_name` of a just-imported module, where the module has one. Where
    it raises: one warning line, the class then running `without` trt_trace's change ("untraced"), and
    never an error in the user's import."""
    cls = getattr(module, class_name, None)
    if not isinstance(cls, type):
        return
    try:
        change(cls)
    except Exception as exc:  # never break the user's import
        try:
            sys.stderr.write(f"trt_trace: {module.__name__}.{class_name} runs {without} "
                             f"({type(exc).__name__}: {exc})\n")
        except Exception:
            pass


def instrument_module(module: ModuleType, classes: Sequence[tuple[str, str]]) -> None:
    """Instruments the named classes of a just-imported runtime module; one warning line on failure."""
    for class_name, call_method in classes:
        change_class(module, class_name, functools.partial(instrument, call_method=call_method), "untraced")


class _RuntimeModuleFinder(importlib.abc.MetaPathFinder):
    """Instruments each watched module right after it has run (its loader's exec_module wrapped)."""

    def find_spec(self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
                  ) -> importlib.machinery.ModuleSpec | None:
        classes = WATCHED.get(fullname)
        then = AFTER_IMPORT.get(fullname)
        if classes is None and then is None:
            return None
        spec = None
        for finder in list(sys.meta_path):
            find = getattr(finder, "find_spec", None)
            if finder is self or find is None:
                continue
            spec = find(fullname, path, target)
            if spec is not None:
                break
        loader = spec.loader if spec is not None else None
        exec_module = getattr(loader, "exec_module", None)
        if exec_module is None:
            return spec

        def exec_then_instrument(module: ModuleType) -> None:
            exec_module(module)
            if classes is not None:
                instrument_module(module, classes)
            if then is not None:
                then(module)

        loader.exec_module = exec_then_instrument  # type: ignore[union-attr]
        return spec


def install() -> None:
    """Instruments the Python runtime now where it is imported, and whenever it is imported from now on."""
    if not any(isinstance(f, _RuntimeModuleFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _RuntimeModuleFinder())
    for name, classes in WATCHED.items():
        module = sys.modules.get(name)
        if module is not None:
            instrument_module(module, classes)


def after_import(name: str, then: Callable[[ModuleType], None]) -> None:
    """Runs `then(module)` on module `name` now where it is imported, and right after it runs from now on."""
    AFTER_IMPORT[name] = then
    if not any(isinstance(f, _RuntimeModuleFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _RuntimeModuleFinder())
    module = sys.modules.get(name)
    if module is not None:
        then(module)


def open_calls() -> int:
    """Python-runtime calls open on this thread (0 between calls)."""
    return python_calls.open_calls()
