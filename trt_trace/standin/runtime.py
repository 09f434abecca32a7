"""Loading the stand-in runtime library, choosing the Torch-TensorRT version it plays, making engines.

The stand-in plays Torch-TensorRT 2.11, 2.13 or 2.14 (csrc/standin/standin_runtime_version.h says
what differs: ABI "8" and 11 serialized-info fields, "9" and 12, "10" and 13; inputs off the engine's
device, streams, the lazy context; 2.14's aliased outputs and optimization profiles).
`TRT_TRACE_STANDIN_RUNTIME=2.11|2.13|2.14` (default 2.13) picks it for the whole process, read
once when the library loads; child processes inherit the variable, so an AOTInductor package built
in one process loads in its children. `use_runtime()` switches it in-process for tests: engines
made (or unpickled) afterwards follow the new version, engines made before keep theirs.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, fields
from pathlib import Path

import torch

from ..native._library import once

# Serialized-info indices shared by every runtime version; how many fields there are and the ABI
# string come from the loaded runtime's own ops (torch.ops.tensorrt.SERIALIZATION_LEN, ABI_VERSION).
NAME_IDX, DEVICE_IDX, ENGINE_IDX = 1, 2, 3
REQUIRES_NATIVE_MULTIDEVICE_IDX = 11  # in runtimes with 12 fields and more
ALIASED_IO_IDX = 12  # in runtimes with 13 fields (2.14)

RUNTIME_VERSIONS = ("2.11", "2.13", "2.14")


class RealRuntimePresent(RuntimeError):
    pass


def _op_exists(qualified: str) -> bool:
    try:
        torch._C._get_schema(qualified, "")
        return True
    except RuntimeError:
        return False


@once
def load() -> None:
    """Loads the stand-in runtime (once). Raises RealRuntimePresent beside a real one."""
    if _op_exists("tensorrt::execute_engine"):
        if _op_exists("tensorrt::_trt_trace_standin"):
            return
        raise RealRuntimePresent(
            "trt_trace.standin: a real Torch-TensorRT runtime is already loaded in this process "
            "(tensorrt::execute_engine exists); the stand-in is for machines without TensorRT"
        )
    if "torch_tensorrt" in sys.modules:
        raise RealRuntimePresent(
            "trt_trace.standin: torch_tensorrt is imported in this process; the stand-in runtime "
            "cannot be loaded beside the real one"
        )
    found = sorted(Path(__file__).resolve().parent.glob("_runtime*.so"))
    if not found:
        raise ImportError("trt_trace.standin: compiled runtime missing; reinstall trt_trace (see README)")
    torch.ops.load_library(str(found[0]))
    from . import fake  # noqa: F401  (registers the fake class and kernel for export)


def runtime_version() -> str:
    """The Torch-TensorRT version the stand-in plays now: "2.11", "2.13" or "2.14"."""
    load()
    return torch.ops.tensorrt._trt_trace_standin_runtime()


def use_runtime(version: str) -> str:
    """Plays `version` ("2.11", "2.13" or "2.14") from now on in this process; returns the previous one.

    For tests: a real process has one runtime. Engines made before keep their version (their
    calls, pickling and __obj_flatten__ follow it); packages and pickles of the other version no
    longer load, as between the real runtimes. Child processes get the version only through
    TRT_TRACE_STANDIN_RUNTIME.
    """
    if version not in RUNTIME_VERSIONS:
        raise ValueError(f"trt_trace.standin: runtime version must be one of {', '.join(RUNTIME_VERSIONS)}, "
                         f"got {version!r}")
    load()
    return torch.ops.tensorrt._trt_trace_standin_set_runtime(version)


@dataclass(frozen=True)
class EngineSpec:
    """What a stand-in engine computes and costs (see csrc/standin/standin_engine.h)."""

    name: str
    scale: float = 1.0
    bias: float = 0.0
    activation: str = "relu"
    num_inputs: int = 1
    num_outputs: int = 1
    repeat: int = 1
    host_us: int = 0
    workspace_bytes: int = 0
    dynamic: bool = False  # Dynamic resource allocation: a workspace tensor per call
    fail_every: int = 0
    device: int = -1  # CUDA device index, -1 for CPU
    # `.contiguous()` of each input through the dispatcher even when contiguous (benchmarks: the runtime's
    # view, contiguous and empty per call); only written when set, so existing engines serialize as before.
    dispatch_contiguous: bool = False
    # (name, us) per layer, in execution order (CPU engines): host work of a known cost inside enqueue,
    # which Torch-TensorRT's profiler (enable_profiling) times and reports by name, as TensorRT reports
    # its layers. Names are any text (TensorRT's look like "[CONVOLUTION]-[aten_ops...]-[conv1] + [RELU]-...").
    layers: tuple[tuple[str, int], ...] = ()
    # (output, input) index pairs (2.14): the output is bound to the input's storage, written through and
    # returned in its place, not allocated (Torch-TensorRT's aliased IO, e.g. a KV-cache update).
    aliased: tuple[tuple[int, int], ...] = ()
    # (min, max) of every input's dimension 0 per optimization profile (2.14); empty: one profile.
    profiles: tuple[tuple[int, int], ...] = ()

    def params_text(self) -> str:
        keys = ("scale", "bias", "activation", "num_inputs", "num_outputs", "repeat", "host_us",
                "workspace_bytes", "fail_every")
        text = ";".join(f"{k}={getattr(self, k)!r}" if isinstance(getattr(self, k), float)
                        else f"{k}={getattr(self, k)}" for k in keys)
        if self.dispatch_contiguous:
            text += ";dispatch_contiguous=1"
        if self.layers:  # the separators of this text, escaped in names (csrc/standin/standin_engine.cpp)
            escaped = (n.replace("%", "%25").replace(";", "%3B").replace("|", "%7C") for n, _ in self.layers)
            text += ";layers=" + "|".join(f"{int(us)}:{n}" for (_, us), n in zip(self.layers, escaped, strict=True))
        if self.profiles:  # part of the plan, as a TensorRT engine holds its profiles
            text += ";profiles=" + "|".join(f"{int(lo)}:{int(hi)}" for lo, hi in self.profiles)
        return text

    def serialized_info(self) -> list[str]:
        """The fields in the layout of the runtime version played now."""
        load()
        info = [""] * int(torch.ops.tensorrt.SERIALIZATION_LEN())
        info[0] = torch.ops.tensorrt.ABI_VERSION()
        info[NAME_IDX] = self.name
        info[DEVICE_IDX] = f"{self.device}%9%0%1%stand-in" if self.device >= 0 else "-1%0%0%0%cpu"
        info[ENGINE_IDX] = self.params_text()
        info[4] = "%".join(f"input_{i}" for i in range(self.num_inputs))
        info[5] = "%".join(f"output_{i}" for i in range(self.num_outputs))
        info[6] = "0"  # hardware compatible
        info[7] = ""  # serialized metadata
        info[8] = "linux_x86_64"
        info[9] = "0"  # requires output allocator
        info[10] = "1" if self.dynamic else "0"
        if len(info) > REQUIRES_NATIVE_MULTIDEVICE_IDX:
            info[REQUIRES_NATIVE_MULTIDEVICE_IDX] = "0"
        if len(info) > ALIASED_IO_IDX:  # the runtime's records: output@input@kind, joined with %
            info[ALIASED_IO_IDX] = "%".join(f"output_{o}@input_{i}@user" for o, i in self.aliased)
        elif self.aliased:
            raise ValueError(f"trt_trace.standin: aliased outputs need Torch-TensorRT 2.14 (ABI \"10\"), the "
                             f"stand-in plays {runtime_version()}")
        return info

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))


def make_engine(name: str, **params) -> torch.ScriptObject:
    """A stand-in engine object (torch.classes.tensorrt.Engine) with the given EngineSpec fields."""
    load()
    spec = EngineSpec(name=name, **params)
    return torch.classes.tensorrt.Engine(spec.serialized_info())


def reference_outputs(spec: EngineSpec, inputs: list[torch.Tensor]) -> list[torch.Tensor]:
    """What the engine must return, computed independently in float64 (an aliased output too: the call
    also writes it into its input)."""
    y = sum(x.double() for x in inputs) * spec.scale + spec.bias
    if spec.activation == "relu":
        y = torch.relu(y)
    elif spec.activation == "tanh":
        y = torch.tanh(y)
    return [(y * (k + 1)).to(inputs[0].dtype) for k in range(spec.num_outputs)]


class EnqueueGate:
    """While the gate is closed every stand-in call waits in its enqueue: a test can act while calls
    are under way, knowing they are (wait_for), instead of sleeping. Opened again on leaving."""

    def __init__(self) -> None:
        load()

    def __enter__(self) -> EnqueueGate:
        torch.ops.tensorrt._trt_trace_standin_close_gate(True)
        return self

    def __exit__(self, *exc: object) -> None:
        self.open()

    def open(self) -> None:
        torch.ops.tensorrt._trt_trace_standin_close_gate(False)

    @staticmethod
    def waiting() -> int:
        """Calls waiting at the gate now."""
        return int(torch.ops.tensorrt._trt_trace_standin_at_gate())

    def wait_for(self, calls: int, timeout_s: float = 60.0) -> None:
        """Returns once `calls` calls wait at the gate (AssertionError after `timeout_s`)."""
        deadline = time.monotonic() + timeout_s
        while self.waiting() < calls:
            if time.monotonic() > deadline:
                raise AssertionError(f"{self.waiting()} of {calls} calls reached the stand-in's enqueue gate")
            time.sleep(0.001)
