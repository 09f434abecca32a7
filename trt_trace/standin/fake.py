"""Fake (meta) registrations so torch.export and AOTInductor can trace calls of stand-in engines.

Mirrors what torch_tensorrt registers for the real runtime: a fake class for tensorrt::Engine built
from `__obj_flatten__` pairs, and a fake kernel for tensorrt::execute_engine. The pairs are one per
serialized-info field of the runtime version played (11 in 2.11, 12 in 2.13, 13 in 2.14); the fake checks them
against the loaded runtime's layout ops, so an engine of another version fails export here.
"""

from __future__ import annotations

import base64
from collections.abc import Callable

import torch


def _parse_params(text: str) -> dict[str, str]:
    return dict(kv.split("=", 1) for kv in text.split(";") if kv)


def _does_nothing(result: object) -> Callable[..., object]:
    return lambda self, *args: result


# The real class's other methods, each doing nothing, so that export does not warn that the fake lacks them
# (torch looks each method of the real object up on the fake one).
_OtherMethods = type("_OtherMethods", (), {name: _does_nothing(result) for name, result in (
    ("enable_profiling", None), ("disable_profiling", None), ("set_profile_format", None),
    ("get_engine_layer_info", ""), ("dump_engine_layer_info", None), ("dump_engine_layer_info_to_file", None),
    ("profile_path_prefix_getter", ""), ("profile_path_prefix_setter", None), ("_trt_trace_standin_state", {}),
    ("_trt_trace_standin_reported", []), ("use_dynamically_allocated_resources", None),
    ("use_pre_allocated_outputs_getter", False), ("use_pre_allocated_outputs_setter", None),
    ("num_execution_contexts_created", 0), ("update_runtime_settings", None), ("set_active_profile", None))})


@torch._library.register_fake_class("tensorrt::Engine")
class FakeStandInEngine(_OtherMethods):
    def __init__(self, flattened: dict[str, str]) -> None:
        self.flattened = flattened
        self.name = flattened.get("name", "")
        params = _parse_params(base64.b64decode(flattened["serialized_engine"]).decode())
        self.num_outputs = int(params.get("num_outputs", "1"))

    @classmethod
    def __obj_unflatten__(cls, flattened_pairs) -> FakeStandInEngine:  # noqa: ANN001
        pairs = tuple(flattened_pairs)
        fields, abi = int(torch.ops.tensorrt.SERIALIZATION_LEN()), torch.ops.tensorrt.ABI_VERSION()
        version = dict(pairs).get("version")
        if len(pairs) != fields or version != abi:
            raise RuntimeError(f"tensorrt::Engine flattened into {len(pairs)} fields of ABI {version!r}; the "
                               f"loaded runtime has {fields} fields of ABI {abi!r} (an engine of another version)")
        return cls(dict(pairs))

    def __str__(self) -> str:
        return f"Torch-TensorRT TensorRT Engine:\n  Name: {self.name}\n"


@torch.library.register_fake("tensorrt::execute_engine")
def _fake_execute_engine(inputs: list[torch.Tensor], engine) -> list[torch.Tensor]:  # noqa: ANN001
    real = getattr(engine, "wrapped_obj", engine)
    return [torch.empty_like(inputs[0]) for _ in range(real.num_outputs)]
