"""Loading the stand-in runtime library and making engines."""

from __future__ import annotations

import sys
import threading
from dataclasses import dataclass, fields
from pathlib import Path

import torch

_lock = threading.Lock()
_loaded = False

# Serialized info layout of the real runtime (core/runtime/runtime.h SerializedInfoIndex).
ABI_VERSION = "9"
NAME_IDX, DEVICE_IDX, ENGINE_IDX = 1, 2, 3
SERIALIZATION_LEN = 12


class RealRuntimePresent(RuntimeError):
    pass


def _op_exists(qualified: str) -> bool:
    try:
        torch._C._get_schema(qualified, "")
        return True
    except RuntimeError:
        return False


def load() -> None:
    """Loads the stand-in runtime (once). Raises RealRuntimePresent beside a real one."""
    global _loaded
    if _loaded:
        return
    with _lock:
        if _loaded:
            return
        if _op_exists("tensorrt::execute_engine"):
            if _op_exists("tensorrt::_trt_trace_standin"):
                _loaded = True
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

        _loaded = True


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

    def params_text(self) -> str:
        keys = ("scale", "bias", "activation", "num_inputs", "num_outputs", "repeat", "host_us",
                "workspace_bytes", "fail_every")
        text = ";".join(f"{k}={getattr(self, k)!r}" if isinstance(getattr(self, k), float)
                        else f"{k}={getattr(self, k)}" for k in keys)
        return text + ";dispatch_contiguous=1" if self.dispatch_contiguous else text

    def serialized_info(self) -> list[str]:
        info = [""] * SERIALIZATION_LEN
        info[0] = ABI_VERSION
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
        info[11] = "0"  # requires native multidevice
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
    """What the engine must return, computed independently in float64."""
    y = sum(x.double() for x in inputs) * spec.scale + spec.bias
    if spec.activation == "relu":
        y = torch.relu(y)
    elif spec.activation == "tanh":
        y = torch.tanh(y)
    return [(y * (k + 1)).to(inputs[0].dtype) for k in range(spec.num_outputs)]
