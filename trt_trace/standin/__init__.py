"""A stand-in for the Torch-TensorRT runtime, for tests and the demo.

Real TensorRT cannot run on this project's machines, so this package provides a library that
registers exactly what the real `libtorchtrt_runtime.so` registers (op `tensorrt::execute_engine`
at CompositeExplicitAutograd, torchbind class `tensorrt.Engine`, same `__str__` text, pickling and
`__obj_flatten__`) and executes calls in the real order. The tracer never depends on it.

    from trt_trace import standin
    standin.load()
    engine = standin.make_engine("_run_on_acc_0_engine", scale=2.0, host_us=50)
    out = torch.ops.tensorrt.execute_engine([x], engine)

It plays Torch-TensorRT 2.11, 2.13 or 2.14, whose serialized engines (ABI "8" and 11 fields, "9" and
12, "10" and 13), handling of inputs off the engine's device, streams and execution contexts differ
(2.14 adds aliased outputs and optimization profiles): `TRT_TRACE_STANDIN_RUNTIME=2.11`, `=2.13` (the
default) or `=2.14` picks the version for the process, `runtime_version()` says which is played, and
`use_runtime()` switches it in-process (for tests).

It refuses to load where the real runtime is loaded (both cannot own the `tensorrt` namespace).
"""

from .runtime import (
    RUNTIME_VERSIONS,
    EngineSpec,
    EnqueueGate,
    load,
    make_engine,
    reference_outputs,
    runtime_version,
    use_runtime,
)

__all__ = ["RUNTIME_VERSIONS", "EngineSpec", "EnqueueGate", "load", "make_engine", "reference_outputs",
           "runtime_version", "use_runtime"]
