"""Python side of the fake TensorRT runtime (faketrt.cu): loading, plans, engines, export fakes.

    lib = faketrt.load("build/faketrt")                       # before the Torch-TensorRT runtime
    torch.ops.load_library("torch_tensorrt/lib/libtorchtrt_runtime.so")
    plan = faketrt.Plan("_run_on_acc_0_engine", gpu_us=40)
    engine = faketrt.make_engine(plan)                        # torch.classes.tensorrt.Engine
    outs = torch.ops.tensorrt.execute_engine([x], engine)     # outs[0] is a copy of x
    faketrt.work_ns(plan.name)                                # the engine's own GPU time per call
    faketrt.layer_ns(plan.name)                               # each layer time a profiler was told

An engine with `layers` runs one spinning kernel per layer and reports them to a profiler by name,
as TensorRT reports its layers (faketrt.cu says how).

The engine object is built from the 2.11 runtime's serialized info: 11 strings, ABI "8".
"""

from __future__ import annotations

import ctypes
import os
from dataclasses import dataclass, field
from pathlib import Path

ABI_VERSION = "8"  # Torch-TensorRT 2.11
STATS = ("enqueues", "failed", "profiler_reports", "allocator_calls", "device_memory_sets", "captured",
         "last_stream", "profiled_enqueues", "waited_enqueues", "layer_reports", "static_memory_sets")

_lib: ctypes.CDLL | None = None


def load(lib_dir: str | os.PathLike) -> ctypes.CDLL:
    """Loads libnvinfer.so.10, libnvinfer_plugin.so.10 and (where built) libnvonnxparser.so.10
    globally: the runtime and the Python bindings then find them by soname."""
    global _lib
    if _lib is None:
        d = Path(lib_dir)
        _lib = ctypes.CDLL(str(d / "libnvinfer.so.10"), mode=ctypes.RTLD_GLOBAL)
        ctypes.CDLL(str(d / "libnvinfer_plugin.so.10"), mode=ctypes.RTLD_GLOBAL)
        if (d / "libnvonnxparser.so.10").exists():  # only the Python bindings link it
            ctypes.CDLL(str(d / "libnvonnxparser.so.10"), mode=ctypes.RTLD_GLOBAL)
        _lib.faketrt_work_ns.restype = ctypes.c_int32
        _lib.faketrt_stats.restype = ctypes.c_int32
        _lib.faketrt_layer_ns.restype = ctypes.c_int32
        _lib.faketrt_spin_stamps.restype = ctypes.c_int32
        _lib.faketrt_fixed_cost_probe.restype = ctypes.c_int32
        _lib.faketrt_fixed_cost_probe.argtypes = [ctypes.c_int64, ctypes.c_int32]
    return _lib


@dataclass(frozen=True)
class Plan:
    """One fake engine: inputs (name, dtype, shape; -1 = any size), outputs copying an input each."""

    name: str
    inputs: tuple[tuple[str, str, tuple[int, ...]], ...] = (("x", "float32", (-1, -1)),)
    outputs: tuple[tuple[str, str], ...] = (("y", "x"),)  # (name, input it copies)
    gpu_us: float = 0.0
    host_us: float = 0.0
    fail_every: int = 0
    fail_stage: str = "enqueue"  # or "infer_shapes"
    workspace: int = 0
    copy: bool = True
    time_work: bool = True
    extra: dict = field(default_factory=dict)
    # (name, GPU us) per layer, in execution order: a spinning kernel each, reported under its name.
    layers: tuple[tuple[str, float], ...] = ()

    def text(self) -> str:
        lines = ["faketrt-plan 1", f"name={self.name}"]
        lines += [f"input={n}:{dt}:{'x'.join(str(d) for d in shape)}" for n, dt, shape in self.inputs]
        lines += [f"output={n}:{src}" for n, src in self.outputs]
        lines += [f"gpu_ns={int(self.gpu_us * 1000)}", f"host_ns={int(self.host_us * 1000)}",
                  f"fail_every={self.fail_every}", f"fail_stage={self.fail_stage}", f"workspace={self.workspace}",
                  f"copy={int(self.copy)}", f"time_work={int(self.time_work)}"]
        for name, us in self.layers:
            assert "\n" not in name, "a layer name is one line of the plan"
            lines.append(f"layer={int(us * 1000)}:{name}")
        return "\n".join(lines) + "\n"


def serialized_info(plan: Plan, device: int = 0, dynamic: bool = False,
                    requires_output_allocator: bool = False) -> list[str]:
    """The 11 fields of Torch-TensorRT 2.11's serialized engine info."""
    import torch

    major, minor = torch.cuda.get_device_capability(device)
    return [
        ABI_VERSION,
        plan.name,
        f"{device}%{major}%{minor}%0%{torch.cuda.get_device_name(device)}",
        plan.text(),
        "%".join(n for n, _, _ in plan.inputs),
        "%".join(n for n, _ in plan.outputs),
        "0",             # hardware compatible
        "",              # serialized metadata (opaque to C++)
        "linux_x86_64",  # target platform
        "1" if requires_output_allocator else "0",
        "1" if dynamic else "0",  # resource allocation strategy: 1 = Dynamic
    ]


def make_engine(plan: Plan, **kwargs):  # noqa: ANN201 (a torch.ScriptObject)
    import torch

    return torch.classes.tensorrt.Engine(serialized_info(plan, **kwargs))


def work_ns(name: str, max_calls: int = 1 << 16) -> list[int]:
    """The engine's own GPU work per enqueue since the last read (waits for pending work)."""
    assert _lib is not None, "faketrt.load() first"
    buf = (ctypes.c_int64 * max_calls)()
    n = _lib.faketrt_work_ns(name.encode(), buf, max_calls)
    return list(buf[:n])


def layer_ns(name: str, max_layers: int = 1 << 20) -> list[int]:
    """Each layer time reported to a profiler since the last read, in ns (layer by layer, call by call)."""
    assert _lib is not None, "faketrt.load() first"
    buf = (ctypes.c_int64 * max_layers)()
    n = _lib.faketrt_layer_ns(name.encode(), buf, max_layers)
    return list(buf[:n])


def spin_stamps(name: str, max_calls: int = 1 << 16) -> list[tuple[int, int]]:
    """Each spin kernel of engine `name` since the last read, in launch order: (first, last) %globaltimer
    reading in ns, as the kernel itself took them (no profiler, no CUDA events). Waits for the device."""
    assert _lib is not None, "faketrt.load() first"
    buf = (ctypes.c_int64 * (2 * max_calls))()
    n = _lib.faketrt_spin_stamps(name.encode(), buf, 2 * max_calls)
    assert n >= 0, "faketrt_spin_stamps: cudaMemcpyFromSymbol failed"
    return [(buf[k], buf[k + 1]) for k in range(0, n, 2)]


def fixed_cost_probe(count: int = 50, ns: int = 0) -> list[tuple[int, int]]:
    """`count` launches of the spin's code as `fixed_cost_probe` (ns long, default 0) outside any engine call;
    their stamps (a profiler's capture holds their kernel records: what it sees beyond the stamps)."""
    assert _lib is not None, "faketrt.load() first"
    rc = _lib.faketrt_fixed_cost_probe(ns, count)
    assert rc == 0, f"faketrt_fixed_cost_probe: CUDA error {rc}"
    return spin_stamps("fixed_cost_probe", count)


def stats(name: str) -> dict[str, int]:
    assert _lib is not None, "faketrt.load() first"
    buf = (ctypes.c_int64 * len(STATS))()
    n = _lib.faketrt_stats(name.encode(), buf, len(STATS))
    return dict(zip(STATS[:n], buf[:n], strict=True))


_export_fakes_registered = False


def register_export_fakes() -> None:
    """A fake class for tensorrt::Engine (from the 11 flattened pairs) and a fake kernel for
    tensorrt::execute_engine, so torch.export and AOTInductor can trace calls of these engines
    without torch_tensorrt. Once per process: torch refuses a second fake for the same operator."""
    global _export_fakes_registered
    if _export_fakes_registered:
        return
    _export_fakes_registered = True
    import torch

    def plan_outputs(pairs: dict) -> list[int]:
        for value in pairs.values():
            text = value
            if isinstance(value, str) and not value.startswith("faketrt-plan"):
                try:
                    import base64

                    text = base64.b64decode(value, validate=True).decode()
                except Exception:  # noqa: BLE001 (not this field)
                    continue
            if isinstance(text, str) and text.startswith("faketrt-plan"):
                lines = text.splitlines()
                inputs = [ln[6:].split(":")[0] for ln in lines if ln.startswith("input=")]
                return [inputs.index(ln[7:].split(":")[1]) for ln in lines if ln.startswith("output=")]
        raise ValueError("no faketrt plan among the engine's fields")

    @torch._library.register_fake_class("tensorrt::Engine")
    class FakeEngine:
        def __init__(self, pairs: dict) -> None:
            self.pairs = pairs
            self.sources = plan_outputs(pairs)

        @classmethod
        def __obj_unflatten__(cls, flattened_pairs) -> FakeEngine:  # noqa: ANN001
            return cls(dict(flattened_pairs))

    @torch.library.register_fake("tensorrt::execute_engine")
    def _fake(inputs: list[torch.Tensor], engine) -> list[torch.Tensor]:  # noqa: ANN001
        real = getattr(engine, "wrapped_obj", engine)
        return [torch.empty_like(inputs[k]) for k in real.sources]
