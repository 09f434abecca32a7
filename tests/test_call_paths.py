"""Every way a real deployment calls tensorrt::execute_engine is traced (under each Torch-TensorRT
version the stand-in plays)."""

from __future__ import annotations

import pytest
import torch
from conftest import drain_all

import trt_trace
from trt_trace import standin
from trt_trace.native import ops
from trt_trace.schema.trace_format import Phase
from trt_trace.standin import model

pytestmark = pytest.mark.usefixtures("runtime_version")


def call_records():
    recs = drain_all()
    return recs[recs["phase"] == Phase.CALL]


def test_eager():
    engine = standin.make_engine("eager_engine")
    ops.set_profile_execution(True)
    torch.ops.tensorrt.execute_engine([torch.ones(3)], engine)
    ops.set_profile_execution(False)
    assert len(call_records()) == 1


def test_inference_mode():
    engine = standin.make_engine("inference_engine")
    ops.set_profile_execution(True)
    with torch.inference_mode():
        torch.ops.tensorrt.execute_engine([torch.ones(3)], engine)
    with torch.no_grad():
        torch.ops.tensorrt.execute_engine([torch.ones(3)], engine)
    ops.set_profile_execution(False)
    assert len(call_records()) == 2


class ScriptedEngineModule(torch.nn.Module):
    def __init__(self, engine):
        super().__init__()
        self.engine = engine

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.ops.tensorrt.execute_engine([x], self.engine)[0] + 1


def test_torchscript_and_a_saved_torchscript_module(tmp_path):
    scripted = torch.jit.script(ScriptedEngineModule(standin.make_engine("ts_engine")))
    scripted.save(str(tmp_path / "m.ts"))  # pickles the engine in the version's layout
    loaded = torch.jit.load(str(tmp_path / "m.ts"))  # unpickling checks it
    ops.set_profile_execution(True)
    for _ in range(3):
        scripted(torch.ones(3))
        loaded(torch.ones(3))
    ops.set_profile_execution(False)
    calls = call_records()
    assert len(calls) == 6
    assert {ops.engine_names()[int(i)] for i in calls["engine_id"]} == {"ts_engine"}
    assert len(set(calls["engine_id"].tolist())) == 2  # the loaded module holds an engine of its own


def test_aoti_package_every_engine_traced_and_outputs_equal_eager(demo_package, tmp_path):
    path, specs = demo_package
    runner = model.load_package(path)
    eager = model.StandInModel(specs).eval()
    x = torch.randn(8, 64)
    with trt_trace.tracing(str(tmp_path / "t.json")):
        for _ in range(3):
            got = runner(x)
    torch.testing.assert_close(got, eager(x), rtol=1e-4, atol=1e-5)
    from trt_trace.analysis.trace_summary import aggregate, load_events

    s = aggregate(load_events(str(tmp_path / "t.json")))
    assert sorted(s.names) == sorted(spec.name for spec in specs)
    assert s.stats[:, 0].tolist() == [3] * len(specs)  # every engine called 3 times, all traced
