"""The whole inference (docs/inference.md): each call of the model recorded as a parent of its engine calls.

- An AOTInductor package's runner: `AOTICompiledModel.__call__` (torch._inductor.package, what
  `torch._inductor.aoti_load_package` returns) is wrapped in its class, once, when its module is imported
  (the Python runtime's import watch, python_runtime.after_import) or at once where it already is: every
  package, however and whenever loaded, with no change to the user's code (`TRT_TRACE_OUT` alone).
- An eager model (or any callable, e.g. a serving handler): `trt_trace.inference(model)`, explicit, since
  no global hook can tell which module is "the model" without a cost on every submodule's call.

Each wrapper opens an inference through the tracer's C entry (native/inference_calls.py), runs the call
and closes it, flagged where it raised: two ctypes calls, nothing else. Only the outermost inference of a
thread is recorded. Nothing here raises into the user's program: a class that cannot be wrapped is one
warning line and runs without inferences.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from types import ModuleType
from typing import Any, TypeVar

from ..native import inference_calls
from ..native.inference_calls import Kind
from . import python_runtime

AOTI_MODULE = "torch._inductor.package.package"  # where AOTICompiledModel is defined (torch 2.6 to 2.13)
AOTI_CLASS = "AOTICompiledModel"
WRAPPED = "_trt_trace_inference"  # set on a wrapper (and a wrapped class) once it is

T = TypeVar("T")


def _traced(call: Callable[..., Any], kind: int) -> Callable[..., Any]:
    """`call` inside an inference of `kind`."""
    entry = inference_calls.entry()
    begin, end = entry.begin, entry.end

    @functools.wraps(call)
    def run(*args: Any, **kwargs: Any) -> Any:
        handle = begin()
        if not handle:  # not recording, or inside another inference of this thread
            return call(*args, **kwargs)
        try:
            out = call(*args, **kwargs)
        except BaseException:
            end(handle, kind, 1)
            raise
        end(handle, kind, 0)
        return out

    setattr(run, WRAPPED, True)
    return run


def wrap_aoti_class(cls: type) -> bool:
    """Wraps cls.__call__ once; False where it was already."""
    if cls.__dict__.get(WRAPPED):
        return False
    cls.__call__ = _traced(cls.__call__, Kind.AOTI)  # type: ignore[method-assign]
    setattr(cls, WRAPPED, True)
    return True


def _after_aoti_import(module: ModuleType) -> None:
    python_runtime.change_class(module, AOTI_CLASS, wrap_aoti_class, "without inferences")


def install() -> None:
    """Wraps the package runner now where its module is imported, and whenever it is imported from now on."""
    python_runtime.after_import(AOTI_MODULE, _after_aoti_import)


def inference(model: T) -> T:
    """`model` with each call recorded as an inference: an nn.Module's `forward` (the same module returned,
    its `forward` replaced on the instance), or any other callable (a wrapper returned; also a decorator).
    Wrap after copying: a deepcopy of the module keeps calling the original's wrapper."""
    forward = getattr(model, "forward", None)
    if callable(forward) and hasattr(model, "_call_impl"):  # an nn.Module: torch calls self.forward
        if not getattr(forward, WRAPPED, False):
            object.__setattr__(model, "forward", _traced(forward, Kind.MODULE))
        return model
    if not callable(model):
        raise TypeError(f"trt_trace.inference() takes a module or a callable, not {type(model).__name__}")
    if getattr(model, WRAPPED, False):
        return model
    return _traced(model, Kind.MODULE)  # type: ignore[return-value]
