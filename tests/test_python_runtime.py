"""Torch-TensorRT's Python runtime, traced like the C++ one (trt_trace/runtime/python_runtime.py), on the
stand-in's runners (trt_trace/standin/python_runtime.py): 2.11's PythonTorchTensorRTModule in this
process, and in fresh processes the import hook with TRT_TRACE_OUT alone and 2.13's Python-registered
tensorrt::execute_engine (it cannot share a process with the stand-in's C++ runtime)."""

from __future__ import annotations

import json
import re
import threading
import types
from pathlib import Path

import pytest
import torch
from conftest import Frozen, drain_all, python_path, run_python
from trace_checks import check_trace, load_strict

import trt_trace
from trt_trace.analysis.trace_summary import aggregate
from trt_trace.native import ops
from trt_trace.runtime import python_runtime
from trt_trace.schema.trace_format import Flag, Phase
from trt_trace.standin.python_runtime import PythonTorchTensorRTModule, fake_package

WS, IN, OUT, ENQ = 1, 2, 3, 4
HOST_US = (300, 600, 900, 1200)  # workspace, inputs, outputs, enqueue: spun by the stand-in per section


@pytest.fixture(scope="module", autouse=True)
def _instrumented():
    # The import hook instruments the real module when torch_tensorrt imports it; here the stand-in's class
    # is instrumented directly (the hook itself: test_the_import_hook_traces_a_fresh_process).
    assert python_runtime.instrument(PythonTorchTensorRTModule, "forward")


def calls_of(recs) -> dict[int, dict[int, tuple[int, int, int, int]]]:
    """{call_id: {phase: (begin, end, flags, engine id)}}"""
    out: dict[int, dict[int, tuple[int, int, int, int]]] = {}
    for r in recs.tolist():
        out.setdefault(r[2], {})[r[5]] = (r[0], r[1], r[6], r[3])
    return out


def check_partition(phases: dict) -> None:
    """Phases lie inside the call, in order, never overlap and add up to it exactly."""
    b, e = phases[Phase.CALL][:2]
    cursor = b
    for p in (WS, IN, OUT, ENQ):
        if p in phases:
            assert phases[p][0] == cursor, (p, phases)
            cursor = phases[p][1]
    assert cursor == e


def traced(fn, *args, n: int = 1):
    ops.set_profile_execution(True)
    try:
        return [fn(*args) for _ in range(n)]
    finally:
        ops.set_profile_execution(False)


def engine_name(phases: dict) -> str:
    return ops.engine_names()[phases[Phase.CALL][3]]


def test_calls_are_traced_named_with_the_four_phases_in_order_and_outputs_right():
    module = PythonTorchTensorRTModule("py_engine_a", scale=3.0, host_us=HOST_US)
    x = torch.randn(8, 16)
    outs = traced(module, x, n=6)
    assert all(torch.equal(y, x * 3.0) for y in outs)
    calls = calls_of(drain_all())
    assert len(calls) == 6
    for phases in calls.values():
        assert set(phases) == {Phase.CALL, WS, IN, OUT, ENQ}
        check_partition(phases)
        assert engine_name(phases) == "py_engine_a"
        assert not phases[Phase.CALL][2] & Flag.ERROR
        # Each section's spin lands in its phase (a lower bound: a loaded machine only adds).
        for p, us in zip((WS, IN, OUT, ENQ), HOST_US, strict=True):
            assert phases[p][1] - phases[p][0] >= us * 1000, (p, phases)
    assert python_runtime.open_calls() == 0


def test_each_module_is_its_own_engine_and_the_table_and_metrics_count_them():
    a, b = PythonTorchTensorRTModule("py_table_a"), PythonTorchTensorRTModule("py_table_b", inputs=2)
    x = torch.ones(4)
    traced(a, x, n=5)
    traced(b, x, x, n=3)
    calls = calls_of(drain_all())
    assert sorted(engine_name(p) for p in calls.values()) == ["py_table_a"] * 5 + ["py_table_b"] * 3
    rows = {ln.split()[0]: ln.split() for ln in str(trt_trace.dump_engine_timing()).splitlines() if ln.strip()}
    assert rows["py_table_a"][1] == "5" and rows["py_table_b"][1] == "3"
    metrics = ops.metrics_text()
    for name, n in (("py_table_a", 5), ("py_table_b", 3)):
        assert re.search(rf'trt_trace_engine_calls_total{{engine="{name}"}} {n}\b', metrics), metrics


def test_pre_allocated_outputs_skip_the_outputs_phase_and_the_next_calls_outputs_stay_in_enqueue():
    module = PythonTorchTensorRTModule("py_prealloc", host_us=HOST_US)
    module.set_pre_allocated_outputs(True)
    x = torch.randn(4, 4)
    outs = traced(module, x, n=4)
    assert all(torch.equal(y, x * 2.0) for y in outs)
    calls = [c for _, c in sorted(calls_of(drain_all()).items())]
    assert OUT in calls[0]  # the first call allocates its outputs
    for phases in calls[1:]:
        assert OUT not in phases, phases  # then they are the ones made after the previous launch
        check_partition(phases)
        # The allocation made after the launch (for the next call) is enqueue's tail, not an outputs phase.
        assert phases[ENQ][1] - phases[ENQ][0] >= (HOST_US[3] + HOST_US[2]) * 1000


def test_the_output_allocator_path_has_its_phases():
    module = PythonTorchTensorRTModule("py_allocator", host_us=HOST_US, requires_output_allocator=True)
    x = torch.randn(5)
    outs = traced(module, x, n=3)
    assert all(torch.equal(y, x * 2.0) for y in outs)
    for phases in calls_of(drain_all()).values():
        assert set(phases) == {Phase.CALL, WS, IN, OUT, ENQ}
        check_partition(phases)
        assert phases[OUT][1] - phases[OUT][0] >= HOST_US[2] * 1000


def test_an_engine_that_raises_is_flagged_and_the_exception_reaches_the_caller_unchanged():
    module = PythonTorchTensorRTModule("py_failing", fail_enqueue=True)
    with pytest.raises(RuntimeError, match="stand-in engine py_failing: enqueue failed"):
        traced(module, torch.ones(3))
    with pytest.raises(AssertionError, match="Wrong number of inputs"):
        traced(module, torch.ones(3), torch.ones(3))
    assert python_runtime.open_calls() == 0
    calls = calls_of(drain_all())
    assert len(calls) == 2
    for phases in calls.values():
        assert phases[Phase.CALL][2] & Flag.ERROR
        check_partition(phases)
    good = PythonTorchTensorRTModule("py_after_failure")
    traced(good, torch.ones(3), n=2)  # tracing goes on
    assert [engine_name(p) for p in calls_of(drain_all()).values()] == ["py_after_failure"] * 2


def test_untraced_calls_leave_nothing_and_run_unchanged():
    module = PythonTorchTensorRTModule("py_untraced")
    x = torch.randn(3)
    assert torch.equal(module(x), x * 2.0)
    assert len(drain_all()) == 0
    assert python_runtime.open_calls() == 0



def test_a_class_that_cannot_be_instrumented_is_one_warning_line_and_the_import_goes_on(capsys):
    class Runtime(metaclass=Frozen):
        def forward(self, *inputs: torch.Tensor) -> None:
            return None

        def setup_input_tensors(self, *args: object) -> None:
            return None

    module = types.ModuleType("user_runtime")
    module.Runtime = Runtime
    python_runtime.instrument_module(module, [("Runtime", "forward"), ("Missing", "forward")])
    assert capsys.readouterr().err == "trt_trace: user_runtime.Runtime runs untraced (TypeError: frozen class)\n"
    assert python_runtime.INSTRUMENTED not in Runtime.__dict__ and Runtime().forward() is None


def test_calls_on_many_threads_are_all_traced_on_their_threads():
    # A module each (the real class binds into its one execution context: it is not for sharing across
    # threads), two per thread, called in turn while the others run.
    own = [(PythonTorchTensorRTModule(f"py_thread_{i}", host_us=(0, 20, 20, 50)),
            PythonTorchTensorRTModule(f"py_other_{i}", scale=3.0)) for i in range(6)]
    barrier = threading.Barrier(6)
    errors: list[BaseException] = []

    def worker(i: int) -> None:
        try:
            barrier.wait()
            x = torch.full((4,), float(i))
            for _ in range(25):
                assert torch.equal(own[i][0](x), x * 2.0)
                assert torch.equal(own[i][1](x), x * 3.0)
        except BaseException as exc:  # noqa: BLE001 (reported below)
            errors.append(exc)

    ops.set_profile_execution(True)
    try:
        threads = [threading.Thread(target=worker, args=(i,)) for i in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        ops.set_profile_execution(False)
    assert errors == []
    recs = drain_all()
    calls = calls_of(recs)
    names = [engine_name(p) for p in calls.values()]
    assert len(names) == 300
    assert all(names.count(f"py_thread_{i}") == 25 and names.count(f"py_other_{i}") == 25 for i in range(6))
    for phases in calls.values():
        assert set(phases) == {Phase.CALL, WS, IN, OUT, ENQ}
        check_partition(phases)
    # Each thread's calls on its thread: both of a thread's modules on one thread id, six ids in all.
    tids: dict[str, set[int]] = {}
    for r in recs.tolist():
        if r[5] == Phase.CALL:
            tids.setdefault(ops.engine_names()[r[3]], set()).add(r[4])
    assert all(len(t) == 1 for t in tids.values())
    assert all(tids[f"py_thread_{i}"] == tids[f"py_other_{i}"] for i in range(6))
    assert len(set().union(*tids.values())) == 6
    assert python_runtime.open_calls() == 0


def test_torch_compile_with_a_backend_that_returns_the_python_runtime_is_traced():
    trt = PythonTorchTensorRTModule("py_compiled", scale=2.0)

    def backend(gm: torch.fx.GraphModule, example_inputs: list[torch.Tensor]) -> torch.fx.GraphModule:
        # As Torch-TensorRT's backend does with use_python_runtime=True: the graph becomes a call of the engine.
        graph = torch.fx.Graph()
        xs = [graph.placeholder(f"x{i}") for i in range(len(example_inputs))]
        graph.output((graph.call_module("trt", tuple(xs)),))
        root = torch.nn.Module()
        root.trt = trt
        return torch.fx.GraphModule(root, graph)

    compiled = torch.compile(lambda x: x * 2.0, backend=backend, fullgraph=True)
    x = torch.randn(6)
    outs = traced(compiled, x, n=4)
    assert all(torch.equal(y, x * 2.0) for y in outs)
    calls = calls_of(drain_all())
    assert [engine_name(p) for p in calls.values()] == ["py_compiled"] * 4
    for phases in calls.values():
        check_partition(phases)
        assert set(phases) >= {Phase.CALL, IN, OUT, ENQ}


def test_a_flight_dump_holds_the_python_runtimes_calls(tmp_path):
    module = PythonTorchTensorRTModule("py_flight")
    trt_trace.flight(30, str(tmp_path / "f.json"))
    try:
        for _ in range(4):
            module(torch.ones(4))
        path = trt_trace.dump()
    finally:
        trt_trace.stop()
    events = load_strict(path)
    check_trace(events)
    summary = aggregate(events)
    assert summary.names == ["py_flight"] and summary.stats[0][0] == 4


CHILD = """
import json, sys, torch
import torch_tensorrt
from torch_tensorrt.dynamo.runtime import PythonTorchTensorRTModule
m = PythonTorchTensorRTModule("{name}", host_us=(100, 100, 100, 100))
x = torch.randn(8)
ok = all(torch.equal(m(x), x * 2.0) for _ in range({n}))
print(json.dumps({{"ok": ok, "instrumented": PythonTorchTensorRTModule.__dict__.get("_trt_trace_instrumented")}}))
"""


def phases_per_call(events: list[dict]) -> dict[int, list[str]]:
    """{call id: its slices' names in time order} of a JSON trace."""
    out: dict[int, list[tuple[float, str]]] = {}
    for e in events:
        if e.get("ph") == "X" and e.get("cat") == "trt_trace":
            out.setdefault(e["args"]["call_id"], []).append((e["ts"], e["name"]))
    return {k: [n for _, n in sorted(v)] for k, v in out.items()}


def test_the_import_hook_traces_a_fresh_process_with_trt_trace_out_alone(tmp_path):
    site = fake_package(tmp_path / "site")
    out = tmp_path / "pyrt.json"
    r = run_python(CHILD.format(name="py_hooked", n=7), {"TRT_TRACE_OUT": str(out), "PYTHONPATH": python_path(site)})
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout.splitlines()[-1]) == {"ok": True, "instrumented": True}
    events = load_strict(out)
    check_trace(events)
    summary = aggregate(events)
    assert summary.names == ["py_hooked"] and summary.stats[0][0] == 7
    calls = phases_per_call(events)
    assert len(calls) == 7
    assert all(names == ["execute_engine", "workspace", "inputs", "outputs", "enqueue"] for names in calls.values())


OP_CHILD = """
import json, torch
import torch_tensorrt.dynamo.runtime._TRTEngine as pyengine
engine = pyengine.TRTEngine("{name}", scale=4.0, host_us=(100, 100, 100, 100))
x = torch.randn(8)
ok = all(torch.equal(torch.ops.tensorrt.execute_engine([x], engine)[0], x * 4.0) for _ in range({n}))
print(json.dumps({{"ok": ok, "schema": str(torch.ops.tensorrt.execute_engine.default._schema)}}))
"""


def test_the_python_registered_op_is_traced_once_per_call_with_the_python_engines_name(tmp_path: Path):
    site = fake_package(tmp_path / "site")
    out = tmp_path / "pyop.json"
    r = run_python(OP_CHILD.format(name="py_op_engine", n=5),
                   {"TRT_TRACE_OUT": str(out), "PYTHONPATH": python_path(site)})
    assert r.returncode == 0, r.stderr
    child = json.loads(r.stdout.splitlines()[-1])
    assert child["ok"]
    assert "PyObject engine" in child["schema"]  # the op as 2.13 registers it from Python
    events = load_strict(out)
    check_trace(events)
    summary = aggregate(events)
    # Named from the Python engine, and once per call: the C++ hook hands a Python engine's call on untraced.
    assert summary.names == ["py_op_engine"] and summary.stats[0][0] == 5
    assert all(names == ["execute_engine", "workspace", "inputs", "outputs", "enqueue"]
               for names in phases_per_call(events).values())


def test_a_class_that_binds_nothing_itself_is_left_alone():
    class Wrapper(torch.nn.Module):  # calls an op and binds nothing: its calls are traced where they run
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x

    assert not python_runtime.instrument(Wrapper, "forward")
    assert "forward" in Wrapper.__dict__ and Wrapper.forward.__name__ == "forward"
    assert not Wrapper.__dict__.get(python_runtime.INSTRUMENTED)
