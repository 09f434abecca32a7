"""Models made of stand-in engines, and their AOTInductor packages (cached by content).

The model has the shape of a Torch-TensorRT partitioned graph: engines `_run_on_acc_<i>_engine`
with plain torch ops (the `_run_on_gpu_<i>` segments) between them. Packaging it exports with
torch.export and compiles with `aoti_compile_and_package`; the engines are pickled into the
package and the AOTInductor proxy executor calls `tensorrt::execute_engine` on them through the
dispatcher, as it does for real Torch-TensorRT packages. The pickled engines carry the serialized
info of the runtime version played when the package was built (see runtime.py), so the cache keeps
one package per version and a package loads only under the version that built it.

    specs = demo_specs(6)
    path = package_model(specs, example_input=torch.randn(8, 64))
    runner = load_package(path)
    out = runner(x)
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import torch

from ..runtime import config
from .runtime import EngineSpec, load, make_engine, runtime_version


class StandInModel(torch.nn.Module):
    """engine 0 -> torch ops -> engine 1 -> ... ; the output of each engine feeds the next."""

    def __init__(self, specs: list[EngineSpec]) -> None:
        super().__init__()
        load()
        self.specs = list(specs)
        for spec in self.specs:
            setattr(self, spec.name, make_engine(**_spec_kwargs(spec)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for i, spec in enumerate(self.specs):
            args = [x] + [x * 0.5 for _ in range(spec.num_inputs - 1)]
            outs = torch.ops.tensorrt.execute_engine(args, getattr(self, spec.name))
            y = outs[0] if len(outs) == 1 else outs[0] + 0.25 * outs[-1]
            x = torch.sin(y) * 0.5 + 0.1 * i  # a segment left to PyTorch
        return x


def _spec_kwargs(spec: EngineSpec) -> dict:
    return {f: getattr(spec, f) for f in EngineSpec.field_names()}


# Layers of the demo's CPU engines: names as Torch-TensorRT's converters and TensorRT's fusions name
# them, with costs in microseconds (engine i takes a different share of each).
DEMO_LAYERS = (
    ("[CONVOLUTION]-[aten_ops.convolution.default]-[/conv{i}/convolution] + [RELU]-[aten_ops.relu.default]-"
     "[/relu{i}/relu]", 40),
    ("Reformatting CopyNode for Input Tensor 0 to [MATRIX_MULTIPLY]-[aten_ops.mm.default]-[/fc{i}/mm]", 4),
    ("[MATRIX_MULTIPLY]-[aten_ops.mm.default]-[/fc{i}/mm]", 25),
    ("{{ForeignNode[/attn{i}/MatMul.../attn{i}/Softmax]}}", 60),
    ("[ELEMENTWISE]-[aten_ops.add.Tensor]-[/add{i}/add]", 6),
)


def demo_layers(i: int) -> tuple[tuple[str, int], ...]:
    """Engine i's layers: 3 to 5 of DEMO_LAYERS, their costs scaled by the engine."""
    picked = DEMO_LAYERS[: 3 + i % 3] if i % 2 == 0 else DEMO_LAYERS[1:]
    return tuple((name.format(i=2 * i), max(1, round(us * (1 + 0.5 * (i % 4))))) for name, us in picked)


def demo_specs(n: int = 6, device: int = -1) -> list[EngineSpec]:
    """n engines with clearly different host costs and shapes of work; on the CPU, with layers."""
    out = []
    for i in range(n):
        out.append(
            EngineSpec(
                name=f"_run_on_acc_{2 * i}_engine",
                scale=1.0 + 0.1 * i,
                bias=0.05 * i,
                activation=("tanh", "none", "relu")[i % 3],
                num_inputs=1 + (i % 2),
                num_outputs=1 + (i % 3),
                repeat=1 + 2 * i,
                host_us=(15, 60, 5, 200, 30, 100, 10, 45)[i % 8],
                workspace_bytes=(1 << 20) if i % 2 else 0,
                dynamic=bool(i % 2),
                device=device,
                layers=demo_layers(i) if device < 0 else (),
            )
        )
    return out


def cache_dir() -> Path:
    path = Path(config.cache_dir()) / "aoti_packages"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _cache_key(specs: list[EngineSpec], example_input: torch.Tensor) -> str:
    h = hashlib.sha256()
    h.update(torch.__version__.encode())
    h.update(runtime_version().encode())  # the engines are pickled in that version's layout
    h.update(Path(__file__).read_bytes())  # the model's code is part of the package
    for spec in specs:
        h.update(repr(spec).encode())
    h.update(repr((tuple(example_input.shape), str(example_input.dtype), str(example_input.device))).encode())
    return h.hexdigest()[:20]


def package_model(specs: list[EngineSpec], example_input: torch.Tensor, path: str | None = None) -> str:
    """Exports and AOTInductor-compiles a StandInModel; returns the .pt2 path (reused when cached)."""
    target = Path(path) if path else cache_dir() / f"standin_{runtime_version()}_{_cache_key(specs, example_input)}.pt2"
    if target.exists():
        return str(target)
    model = StandInModel(specs).eval()
    with torch.no_grad():
        exported = torch.export.export(model, (example_input,), strict=False)
        tmp = target.with_suffix(f".tmp{os.getpid()}.pt2")
        torch._inductor.aoti_compile_and_package(exported, package_path=str(tmp))
    os.replace(tmp, target)  # atomic: concurrent builders never see half a package
    return str(target)


def load_package(path: str):
    """Loads a package built by package_model (the stand-in runtime must be loaded first)."""
    load()
    return torch._inductor.aoti_load_package(path)
