"""A stand-in for Torch-TensorRT's Python runtime, for tests and the demo (docs/stand-in.md).

Two runners, shaped as the real ones are where trt_trace looks (trt_trace/runtime/python_runtime.py):

- `PythonTorchTensorRTModule` (2.11's `torch_tensorrt.dynamo.runtime.PythonTorchTensorRTModule`): an
  `nn.Module` with `name`, `engine`, `context`, whose `forward(*inputs)` runs the steps in the real order:
  contiguous inputs and the shape key, `setup_input_tensors` (shapes and addresses bound), output
  shapes, `create_output_tensors` (skipped with pre-allocated outputs; `create_output_allocator` on the
  data-dependent path), output addresses, then the launch section: `_caller_stream` chosen,
  `context.execute_async_v3(stream)`, and pre-allocated outputs made for the next call.
- `TRTEngine` (2.13 and later without the C++ runtime: a Python engine object in module
  `torch_tensorrt.dynamo.runtime._TRTEngine`, its `execute(inputs)`), with the same steps, its execution
  context made at first use and dropped by `invalidate_context()` (as 2.13's is), and
  `register_python_op()`, which registers `tensorrt::execute_engine` from Python as such a build does
  (only in a process where no other runtime defines the op: the stand-in's C++ runtime and this op cannot
  share one process).

The engine computes `output_i = input_i * scale`. Host time per step (`host_us`: workspace, inputs,
outputs, enqueue) is spun, so phases have a known order and length. `fake_package(root)` writes a
`torch_tensorrt` package of these classes, for a process that imports it as the real one is imported.
The stand-in's context takes tensors where TensorRT takes addresses (it has no memory of its own).

Layers (`layers`: (name, us) in execution order) are spun one after another inside the enqueue. With a
profiler on the context (its `profiler` property, as TensorRT's Python bindings have it), each layer is
timed and, once all have run, reported to it once per layer, in order, as TensorRT does from inside a
profiled enqueue: `profiler.report_layer_time(name, ms)`, ms a float32 as TensorRT's. The engine keeps
what it reported (`engine.reported`). The runners' own profiling methods are 2.11's and 2.13's
(`enable_profiling` puts a printing `Profiler` on the context where none is, `disable_profiling` drops
the context).
"""

from __future__ import annotations

import ctypes
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

try:  # torch's base of opaque objects (what a Python engine object passed through the dispatcher subclasses)
    from torch._opaque_base import OpaqueBase as _EngineBase
except ImportError:  # an older torch: no Python-registered op with an opaque engine there
    _EngineBase = object

# The real runner's section order; host_us gives one spin per section, in microseconds.
SECTIONS = ("workspace", "inputs", "outputs", "enqueue")


def _spin(us: float) -> None:
    if us <= 0:
        return
    end = time.perf_counter_ns() + int(us * 1000)
    while time.perf_counter_ns() < end:
        pass


class Profiler:
    """trt.Profiler: prints each layer's time as TensorRT reports it."""

    def report_layer_time(self, layer_name: str, ms: float) -> None:
        sys.stdout.write(f"{layer_name}: {ms}ms\n")


class FakeEngineInspector:
    """trt.EngineInspector: the engine's layer information as JSON."""

    def __init__(self, engine: FakeCudaEngine) -> None:
        self.engine = engine

    def get_engine_information(self, format: Any = None) -> str:  # noqa: A002 (TensorRT's name)
        return json.dumps({"Layers": [n for n, _ in self.engine.layers],
                           "Bindings": self.engine.input_names + self.engine.output_names})


class FakeCudaEngine:
    """What the runners read of a deserialized engine (trt.ICudaEngine)."""

    def __init__(self, name: str, input_names: Sequence[str], output_names: Sequence[str], scale: float,
                 enqueue_us: float, fail_enqueue: bool, layers: Sequence[tuple[str, float]] = ()) -> None:
        self.name = name
        self.layers = [(str(n), float(us)) for n, us in layers]
        self.reported: list[tuple[str, float]] = []  # (name, ms) as told to a profiler, in order
        self.contexts_created = 0
        self.input_names = list(input_names)
        self.output_names = list(output_names)
        self.scale = scale
        self.enqueue_us = enqueue_us
        self.fail_enqueue = fail_enqueue
        self.num_io_tensors = len(self.input_names) + len(self.output_names)
        self.enqueues = 0

    def create_execution_context(self) -> FakeExecutionContext:
        self.contexts_created += 1
        return FakeExecutionContext(self)

    def create_engine_inspector(self) -> FakeEngineInspector:
        return FakeEngineInspector(self)


class FakeExecutionContext:
    """trt.IExecutionContext's calls the runners make; addresses are the tensors themselves."""

    def __init__(self, engine: FakeCudaEngine) -> None:
        self.engine = engine
        self.shapes: dict[str, tuple[int, ...]] = {}
        self.bound: dict[str, torch.Tensor] = {}
        self.profiler: Any = None  # TensorRT's IExecutionContext.profiler: None, or what reports each layer

    def set_input_shape(self, name: str, shape: tuple[int, ...]) -> bool:
        self.shapes[name] = tuple(shape)
        return True

    def get_tensor_shape(self, name: str) -> tuple[int, ...]:
        # Output i has input i's shape (elementwise engine).
        i = self.engine.output_names.index(name)
        return self.shapes[self.engine.input_names[i]]

    def infer_shapes(self) -> list[str]:
        return []

    def set_tensor_address(self, name: str, tensor: torch.Tensor) -> bool:
        self.bound[name] = tensor
        return True

    def execute_async_v3(self, stream_handle: int) -> bool:
        engine = self.engine
        _spin(engine.enqueue_us)
        if engine.fail_enqueue:
            raise RuntimeError(f"stand-in engine {engine.name}: enqueue failed")
        for i, out_name in enumerate(engine.output_names):
            torch.mul(self.bound[engine.input_names[i]], engine.scale, out=self.bound[out_name])
        profiler = self.profiler
        times: list[tuple[str, float]] = []
        for name, us in engine.layers:  # the engine's work, layer by layer; timed when profiled
            start = time.perf_counter_ns()
            _spin(us)
            if profiler is not None:
                times.append((name, ctypes.c_float((time.perf_counter_ns() - start) / 1e6).value))
        engine.enqueues += 1
        # A profiled enqueue reports once all its layers ran, before it returns (TensorRT's default).
        for name, ms in times:
            engine.reported.append((name, ms))
            profiler.report_layer_time(name, ms)
        return True


class OutputAllocator:
    """The data-dependent path's output allocator: buffers made when the engine asks."""

    def __init__(self, dtypes: dict[str, torch.dtype]) -> None:
        self.dtypes = dtypes
        self.buffers: dict[str, torch.Tensor] = {}


class _Runner:
    """The steps both runners share, in the real runner's order and under its method names."""

    name: str
    engine: FakeCudaEngine
    context: FakeExecutionContext

    def _setup(self, name: str, scale: float, inputs: int, host_us: Sequence[float] | None,
               fail_enqueue: bool, requires_output_allocator: bool, layers: Sequence[tuple[str, float]] = ()) -> None:
        self.name = name
        self.input_names = [f"input_{i}" for i in range(inputs)]
        self.output_names = [f"output_{i}" for i in range(inputs)]
        us = list(host_us) if host_us is not None else [0.0] * len(SECTIONS)
        if len(us) != len(SECTIONS):
            raise ValueError(f"host_us: one time per section {SECTIONS}, got {len(us)}")
        self.host_us = dict(zip(SECTIONS, us, strict=True))
        self.engine = FakeCudaEngine(name, self.input_names, self.output_names, scale, self.host_us["enqueue"],
                                     fail_enqueue, layers)
        self._make_context()
        self.requires_output_allocator = requires_output_allocator
        self.use_pre_allocated_outputs = False
        self.pre_allocated_outputs: list[torch.Tensor] = []
        self.output_allocator: OutputAllocator | None = None
        self.output_dtypes: list[torch.dtype] = []
        self.output_shapes: list[tuple[int, ...]] = []
        self.shape_key: str | None = None
        self._caller_stream = None

    def _make_context(self) -> None:
        self.context = self.engine.create_execution_context()

    def setup_input_tensors(self, contiguous_inputs: list[torch.Tensor], cudagraphs_enabled: bool,
                            need_cudagraphs_record: bool) -> None:
        _spin(self.host_us["inputs"])
        self.output_dtypes = [t.dtype for t in contiguous_inputs]
        for name, tensor in zip(self.input_names, contiguous_inputs, strict=True):
            self.context.set_input_shape(name, tuple(tensor.shape))
            self.context.set_tensor_address(name, tensor)

    def create_output_tensors(self) -> list[torch.Tensor]:
        _spin(self.host_us["outputs"])
        device = self._device
        return [torch.empty(shape, dtype=dtype, device=device)
                for shape, dtype in zip(self.output_shapes, self.output_dtypes, strict=True)]

    def create_output_allocator(self) -> None:
        _spin(self.host_us["outputs"])
        if self.output_allocator is None:
            self.output_allocator = OutputAllocator(dict(zip(self.output_names, self.output_dtypes, strict=True)))

    def _run(self, inputs: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        contiguous = [t.contiguous() for t in inputs]
        self._device = contiguous[0].device if contiguous else torch.device("cpu")
        _spin(self.host_us["workspace"])
        key = "".join(str(tuple(t.shape)) for t in contiguous)
        shape_changed = key != self.shape_key
        self.shape_key = key
        if len(contiguous) != len(self.input_names):
            raise AssertionError(f"Wrong number of inputs, expect {len(self.input_names)} get {len(contiguous)}.")
        self.setup_input_tensors(contiguous, False, False)
        if shape_changed:
            self.context.infer_shapes()
        if self.requires_output_allocator:
            return self._run_with_allocator()
        reuse = self.use_pre_allocated_outputs and bool(self.pre_allocated_outputs) and not shape_changed
        if reuse:
            outputs = self.pre_allocated_outputs
        else:
            self.output_shapes = [tuple(self.context.get_tensor_shape(n)) for n in self.output_names]
            outputs = self.create_output_tensors()
        for name, tensor in zip(self.output_names, outputs, strict=True):
            self.context.set_tensor_address(name, tensor)
        self._caller_stream = _current_stream(self._device)
        self.context.execute_async_v3(0)
        if self.use_pre_allocated_outputs:  # the next call's outputs, made after this one's launch
            self.pre_allocated_outputs = self.create_output_tensors()
        return outputs

    def _run_with_allocator(self) -> list[torch.Tensor]:
        self.create_output_allocator()
        assert self.output_allocator is not None
        self.output_shapes = [tuple(self.context.get_tensor_shape(n)) for n in self.output_names]
        for name, shape, dtype in zip(self.output_names, self.output_shapes, self.output_dtypes, strict=True):
            self.output_allocator.buffers[name] = torch.empty(shape, dtype=dtype, device=self._device)
            self.context.set_tensor_address(name, self.output_allocator.buffers[name])
        self._caller_stream = _current_stream(self._device)
        self.context.execute_async_v3(0)
        return [self.output_allocator.buffers[n].clone() for n in self.output_names]


def _current_stream(device: torch.device) -> Any:
    return torch.cuda.current_stream(device) if device.type == "cuda" else None


class PythonTorchTensorRTModule(_Runner, torch.nn.Module):
    """The stand-in for 2.11's PythonTorchTensorRTModule: `forward(*inputs)` returns one tensor per input
    (a single tensor for one input, as the real one does)."""

    def __init__(self, name: str = "", *, scale: float = 2.0, inputs: int = 1,
                 host_us: Sequence[float] | None = None, fail_enqueue: bool = False,
                 requires_output_allocator: bool = False, layers: Sequence[tuple[str, float]] = ()) -> None:
        torch.nn.Module.__init__(self)
        self.profiling_enabled = False
        self._setup(name, scale, inputs, host_us, fail_enqueue, requires_output_allocator, layers)

    def set_pre_allocated_outputs(self, enable: bool) -> None:
        self.use_pre_allocated_outputs = enable

    # 2.11's profiling methods: a profiler (printing, unless one is given) on the context where it has none;
    # off: the context dropped and made again at once.
    def enable_profiling(self, profiler: Any = None) -> None:
        if not self.context.profiler:
            self.context.profiler = Profiler() if profiler is None else profiler
        self.profiling_enabled = True

    def disable_profiling(self) -> None:
        del self.context
        self.context = self.engine.create_execution_context()
        self.profiling_enabled = False

    def get_layer_info(self) -> str:
        return self.engine.create_engine_inspector().get_engine_information()

    def forward(self, *inputs: torch.Tensor) -> torch.Tensor | tuple[torch.Tensor, ...]:
        outputs = self._run(inputs)
        return outputs[0] if len(outputs) == 1 else tuple(outputs)


class TRTEngine(_Runner, _EngineBase):  # type: ignore[misc, valid-type]
    """The stand-in for 2.13's Python engine object (no C++ runtime): `execute(inputs)` returns the outputs."""

    def __init__(self, name: str = "", *, scale: float = 2.0, inputs: int = 1,
                 host_us: Sequence[float] | None = None, fail_enqueue: bool = False,
                 layers: Sequence[tuple[str, float]] = ()) -> None:
        self._profile_execution = False
        self._setup(name, scale, inputs, host_us, fail_enqueue, False, layers)

    def _make_context(self) -> None:
        self._context: FakeExecutionContext | None = None  # made at first use, as 2.13's is

    @property
    def context(self) -> FakeExecutionContext:
        if self._context is None:
            self._context = self.engine.create_execution_context()
        return self._context

    def invalidate_context(self) -> None:
        """Drops the context (2.13 does on every change of runtime settings); the next use makes one."""
        self._context = None

    def execute(self, inputs: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        return self._run(inputs)

    # 2.13's profiling methods: a printing profiler on the context where it has none; off: the context dropped.
    def enable_profiling(self) -> None:
        if not self.context.profiler:
            self.context.profiler = Profiler()
        self._profile_execution = True

    def disable_profiling(self) -> None:
        self.invalidate_context()
        self._profile_execution = False

    def get_engine_layer_info(self) -> str:
        return self.engine.create_engine_inspector().get_engine_information()


def register_python_op() -> None:
    """Registers `tensorrt::execute_engine(Tensor[] input_tensors, PyObject engine) -> Tensor[]` from Python,
    its engine a `TRTEngine`, as 2.13 and later do without the C++ runtime (once per process)."""
    # torch's opaque objects are recent and private: imported only where this variant is played.
    from torch._library.opaque_object import register_opaque_type

    global _op_registered
    if _op_registered:
        return
    try:
        torch._C._get_schema("tensorrt::execute_engine", "")
    except RuntimeError:
        pass
    else:
        raise RuntimeError("trt_trace.standin: tensorrt::execute_engine is defined in this process already (a C++ "
                           "runtime: the stand-in's or a real one); the Python-registered op needs a process "
                           "without one")
    register_opaque_type(TRTEngine, typ="reference")

    @torch.library.custom_op("tensorrt::execute_engine", mutates_args=())
    def execute_engine(input_tensors: list[torch.Tensor], engine: TRTEngine) -> list[torch.Tensor]:
        return engine.execute(input_tensors)  # fresh output tensors: none aliases an input

    @execute_engine.register_fake
    def _(input_tensors: list[torch.Tensor], engine: TRTEngine) -> list[torch.Tensor]:
        return [torch.empty_like(t) for t in input_tensors]

    _op_registered = True


_op_registered = False


FAKE_PACKAGE = {
    "torch_tensorrt/__init__.py": "import torch  # noqa: F401  (first, as the real package does)\n"
                                  "from . import dynamo  # noqa: F401\n",
    "torch_tensorrt/dynamo/__init__.py": "from . import runtime  # noqa: F401\n",
    "torch_tensorrt/dynamo/runtime/__init__.py":
        "from ._PythonTorchTensorRTModule import PythonTorchTensorRTModule  # noqa: F401\n",
    "torch_tensorrt/dynamo/runtime/_PythonTorchTensorRTModule.py":
        "from trt_trace.standin.python_runtime import PythonTorchTensorRTModule  # noqa: F401\n",
    "torch_tensorrt/dynamo/runtime/_TRTEngine.py":
        "from trt_trace.standin.python_runtime import TRTEngine, register_python_op  # noqa: F401\n"
        "register_python_op()\n",
}


def fake_package(root: str | Path) -> Path:
    """Writes a `torch_tensorrt` package whose Python runtime modules (the names trt_trace watches) hold
    the stand-in's classes; put `root` on sys.path. Returns root."""
    root = Path(root)
    for rel, text in FAKE_PACKAGE.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root
