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

Per-layer timing (TRT_TRACE_LAYERS, docs/layers.md "The Python runtime"): while it is on, each call asks
the engine's layer window (the C++ one every engine has) whether it is profiled; a profiled call gets a
TensorRT profiler of trt_trace's own (a `trt.IProfiler` subclass where TensorRT's Python bindings are
loaded) set as the execution context's `profiler` before it is opened, TensorRT reports each layer to it
from inside `execute_async_v3`, and after the call it is taken off again and the layers it heard go to
the tracer, which writes them as the C++ runtime's profiled calls' layers are written.

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
from ..native.python_calls import (
    LAYERED,
    NO_LAYERS,
    NOT_PROFILED_AFTER_ALL,
    PROFILED,
    PROFILED_WANTS_INFO,
    RAISED,
    RETURNED,
    Mark,
)

# module -> (class, call method) pairs: where Torch-TensorRT's Python runtime runs its engines.
WATCHED: dict[str, tuple[tuple[str, str], ...]] = {
    "torch_tensorrt.dynamo.runtime._PythonTorchTensorRTModule": (("PythonTorchTensorRTModule", "forward"),),
    # Where the released 2.13 and 2.14 packages keep their Python engine (the Python runtime rework moved
    # it there and removed PythonTorchTensorRTModule).
    "torch_tensorrt.dynamo.runtime._TRTEngine": (("TRTEngine", "execute"),),
    # The same class under the name it had on the way to 2.13 (upstream's development branch, before the
    # release): a package built from that time.
    "torch_tensorrt.dynamo.runtime._PythonTRTEngine": (("TRTEngine", "execute"),),
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


# base class -> the profiler class made on it (_layer_profiler).
_profiler_classes: dict[type, type] = {}


def _layer_profiler() -> Any:
    """A fresh profiler that keeps what TensorRT reports: a subclass of `tensorrt.IProfiler` where TensorRT's
    Python bindings are loaded (a real execution context takes nothing else), a plain object where they are
    not (the stand-in's context)."""
    trt = sys.modules.get("tensorrt")
    base = getattr(trt, "IProfiler", None)
    if not isinstance(base, type):
        base = object
    cls = _profiler_classes.get(base)
    if cls is None:
        def init(self: Any) -> None:
            if base is not object:
                base.__init__(self)  # the bindings' trampoline: TensorRT calls back into this object
            self.layers = []
            self.closed = False

        def report_layer_time(self: Any, layer_name: str, ms: float) -> None:
            # TensorRT calls this once per layer from inside an enqueue; one left on a context by mistake
            # keeps nothing once its call is over.
            if not self.closed:
                self.layers.append((layer_name, ms))

        cls = type("TrtTraceLayerProfiler", (base,), {"__init__": init, "report_layer_time": report_layer_time,
                                                      "__module__": __name__})
        _profiler_classes[base] = cls
    return cls()


def _cuda_graph_mode() -> bool:
    """Whether Torch-TensorRT's CUDA-graph mode is on (its engines' calls capture and replay graphs, in which
    no layer is reported and a synchronous profile would break a capture)."""
    get_mode = getattr(sys.modules.get("torch_tensorrt.runtime"), "get_cudagraphs_mode", None)
    try:
        return bool(get_mode()) if callable(get_mode) else False
    except Exception:  # a mode it cannot tell: not in CUDA-graph mode as far as trt_trace knows
        return False


def _attach(obj: Any) -> tuple[Any, Any, str]:
    """Sets a fresh profiler on the runtime object's execution context: (context, profiler, "") or, when it
    cannot, (None, None, why)."""
    if _cuda_graph_mode():
        return None, None, ("the runtime's CUDA graph mode replays the engine without TensorRT's enqueue (no layer "
                            "is reported) and a synchronous profile would break its capture")
    try:
        context = obj.context  # 2.13's Python engine makes its context here if it has none yet
        if context is None:
            return None, None, "the engine has no execution context"
        if context.profiler is not None:
            return None, None, ("a profiler of the user's is on its execution context (enable_profiling): trt_trace "
                                "leaves it there")
        profiler = _layer_profiler()
        context.profiler = profiler
    except Exception as exc:
        return None, None, f"its execution context takes no profiler ({type(exc).__name__}: {exc})"
    return context, profiler, ""


def _detach(context: Any, profiler: Any) -> list[tuple[str, int]]:
    """Takes the profiler off again; the layers it heard as (name, ns)."""
    profiler.closed = True
    try:
        # The bindings hand back the object that was set; a wrapper of it would still be of its class.
        if isinstance(context.profiler, type(profiler)):
            context.profiler = None
    except Exception:  # left on: it keeps nothing more (closed), and the window's next call checks again
        pass
    return [(str(name), round(float(ms) * 1_000_000)) for name, ms in profiler.layers]


def _layer_information(obj: Any) -> str | None:
    """The engine inspector's JSON (2.11's get_layer_info, 2.13's get_engine_layer_info), or None."""
    for name in ("get_engine_layer_info", "get_layer_info"):
        method = getattr(obj, name, None)
        if callable(method):
            try:
                return str(method())
            except Exception:  # no inspector: the report goes without it
                return None
    return None


def instrument(cls: type, call_method: str) -> bool:
    """Instruments `cls` (once); False when it is not a runtime that binds and launches itself."""
    if cls.__dict__.get(INSTRUMENTED):
        return True
    if not callable(getattr(cls, call_method, None)) or not callable(getattr(cls, "setup_input_tensors", None)):
        return False
    entry = python_calls.entry()
    begin, mark, end = entry.begin, entry.mark, entry.end
    layers_open, layers_close, close_layers = entry.layers_open, entry.layers_close, python_calls.close_layers
    ids = _ids

    call = getattr(cls, call_method)
    here = _this_thread

    def layered_call(self: Any, eid: int, device: int, args: Any, kwargs: Any) -> Any:
        # Per-layer timing is on: the engine's window decides before the call is opened (it may wait at the
        # engine's gate, the GIL released); a profiled call has trt_trace's profiler on its context. The
        # decision is closed whatever happens (it holds the engine's gate while its window is not over).
        decision = layers_open(eid, device)
        context = profiler = None
        note, info = "", None
        outcome = RAISED  # until the call returned
        try:
            if decision >= PROFILED:
                context, profiler, note = _attach(self)
                if profiler is not None and decision == PROFILED_WANTS_INFO:
                    info = _layer_information(self)
            handle = begin(eid, device, 1)
            if handle:
                here.open = handle
            try:
                out = call(self, *args, **kwargs)
            except BaseException:
                if handle:
                    end(handle, 1)
                    here.open = handle - 1
                raise
            if handle:
                end(handle, 0)
                here.open = handle - 1
            outcome = RETURNED
            return out
        finally:
            if decision != NO_LAYERS:
                if profiler is not None:
                    layers = _detach(context, profiler)
                    close_layers(outcome, "", layers if outcome == RETURNED else None, info)
                else:  # the usual case (after the window): straight to C, nothing to convert
                    layers_close(NOT_PROFILED_AFTER_ALL, note.encode() if note else None, None, None, 0, None)

    def traced_call(self: Any, *args: Any, **kwargs: Any) -> Any:
        known = ids.get(id(self))
        eid = known[1] if known is not None and (known[0] is None or known[0]() is self) else _engine_id(self)
        device = _device_of(args)
        handle = begin(eid, device, 0)
        if handle <= 0:
            if handle == LAYERED:
                return layered_call(self, eid, device, args, kwargs)
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
