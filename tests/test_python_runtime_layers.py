"""Per-layer timing (TRT_TRACE_LAYERS) through Torch-TensorRT's Python runtime (docs/layers.md, "The Python
runtime"), on the stand-in's runners (trt_trace/standin/python_runtime.py): trt_trace's profiler on the
execution context for the window's calls, each layer as the stand-in's context reported it, laid out as the
C++ runtime's profiled calls' layers are, the layers report, the profiler taken off after each call; 2.11's
PythonTorchTensorRTModule and 2.13's TRTEngine (its context dropped between calls) in this process, and the
import hook with the two variables alone in a fresh process (also 2.13's Python-registered op)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import types
from pathlib import Path

import pytest
import torch
from conftest import python_path, run_python, trt_trace_cli
from test_layers import calls_and_layers_of

import trt_trace
from trt_trace.analysis.trace_summary import load_events
from trt_trace.runtime import python_runtime
from trt_trace.schema.trace_format import CATEGORY, METADATA_EVENT
from trt_trace.standin.python_runtime import PythonTorchTensorRTModule, TRTEngine, fake_package

# Names as TensorRT reports them, and some a careless writer would break.
LAYERS = (
    ("[CONVOLUTION]-[aten_ops.convolution.default]-[/conv1/convolution] + [RELU]-[aten_ops.relu.default]", 300),
    ('Reformatting CopyNode for Input Tensor 0 to "fc", 100%; a|b \\ ünï', 50),
    ("{ForeignNode[/attn/MatMul.../attn/Softmax]}", 200),
)
NAMES = [n for n, _ in LAYERS]


@pytest.fixture(scope="module", autouse=True)
def _instrumented():
    # The import hook instruments the real modules when torch_tensorrt imports them (the fresh-process tests
    # below); here the stand-in's classes are instrumented directly.
    assert python_runtime.instrument(PythonTorchTensorRTModule, "forward")
    assert python_runtime.instrument(TRTEngine, "execute")


def trace_of(path: str) -> tuple[list[dict], dict[int, list[dict]], dict[tuple[int, str], dict], dict]:
    """The trace's execute_engine events in time order, its layer events by call id (in order), its phases by
    (call id, name), and the end metadata's layers report."""
    events = load_events(path)
    calls, layers = calls_and_layers_of(events)
    phases = {(e["args"]["call_id"], e["name"]): e for e in events if e.get("ph") == "X" and e.get("cat") == CATEGORY}
    metas = [e["args"] for e in events if e.get("name") == METADATA_EVENT]
    return calls, layers, phases, metas[-1].get("layers", {"engines": []})


def reported_ns(ms: float) -> int:
    """A layer time as the profiler was told it (a float32 of ms), in the trace's ns."""
    return round(ms * 1_000_000)


def check_window(path: str, engine_name: str, reported: list[tuple[str, float]], n_calls: int, first: int,
                 profiled: int) -> dict:
    """Calls first+1 .. first+profiled of the engine hold its layers, by name and in order, each as the stand-in
    reported it, end to end from the start of the call's enqueue phase; no other call has any. Its report row."""
    calls, layers, phases, report = trace_of(path)
    ids = [c["args"]["call_id"] for c in calls if c["args"]["engine"] == engine_name]
    assert len(ids) == n_calls
    window = ids[first:first + profiled]
    assert sorted(i for i in layers if i in ids) == sorted(window)
    assert len(reported) == profiled * len(NAMES)
    for k, call_id in enumerate(window):
        mine = layers[call_id]
        assert [e["name"] for e in mine] == NAMES == [e["args"]["layer"] for e in mine]
        assert all(e["args"]["engine"] == engine_name for e in mine)
        durations = [round(e["dur"] * 1000) for e in mine]
        told = reported[k * len(NAMES):(k + 1) * len(NAMES)]
        assert [n for n, _ in told] == NAMES
        assert durations == [reported_ns(ms) for _, ms in told]
        assert all(d >= us * 1000 for d, (_, us) in zip(durations, LAYERS, strict=True))  # each spun its time
        starts = [round(e["ts"] * 1000) for e in mine]
        assert starts[0] == round(phases[(call_id, "enqueue")]["ts"] * 1000)
        assert all(abs(starts[i + 1] - starts[i] - durations[i]) <= 1 for i in range(len(mine) - 1))
    (row,) = [r for r in report["engines"] if r["engine"] == engine_name]
    assert (row["profiled_calls"], row["failed_calls"], row["layers"]) == (profiled, 0, NAMES)
    return row


def test_the_python_runtimes_window_has_its_layers_as_its_profiler_heard_them(tmp_path):
    module = PythonTorchTensorRTModule("py_layered", scale=3.0, layers=LAYERS)
    x = torch.randn(8)
    path = str(tmp_path / "t.json")
    seen: list[object] = []  # what was on the context while each call ran
    run_before = module.context.execute_async_v3

    def watching(stream: int) -> bool:
        seen.append(module.context.profiler)
        return run_before(stream)
    module.context.execute_async_v3 = watching
    with trt_trace.tracing(path, layers=3):
        outs = [module(x) for _ in range(7)]
    assert all(torch.equal(y, x * 3.0) for y in outs)
    row = check_window(path, "py_layered", module.engine.reported, n_calls=7, first=1, profiled=3)
    assert row["layer_information"] == {"Layers": NAMES, "Bindings": ["input_0", "output_0"]}
    assert row["note"] == "" and row["unreadable_calls"] == 0
    # A profiler of trt_trace's own on the context for calls 2-4 only, a fresh one each, taken off after each.
    assert seen[0] is None and seen[4:] == [None] * 3
    assert all(type(p).__name__ == "TrtTraceLayerProfiler" for p in seen[1:4]) and len({id(p) for p in seen[1:4]}) == 3
    assert module.context.profiler is None and not module.profiling_enabled
    assert python_runtime.open_calls() == 0
    # The layers verb reads them back: the profiled calls and each layer.
    out = subprocess.run([*trt_trace_cli(), "layers", path, "--json"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    (mine,) = [e for e in json.loads(out.stdout)["engines"] if e["engine"] == "py_layered"]
    assert mine["profiled_calls"] == 3 and sorted(r["layer"] for r in mine["layers"]) == sorted(NAMES)
    totals = {r["layer"]: r["total_ns"] for r in mine["layers"]}
    assert totals == {name: sum(reported_ns(ms) for n, ms in module.engine.reported if n == name) for name in NAMES}


def test_a_13_engine_whose_context_is_dropped_between_calls_gets_the_profiler_each_time(tmp_path):
    engine = TRTEngine("py_engine_layered", scale=2.0, layers=LAYERS)
    x = torch.randn(4)
    path = str(tmp_path / "t.json")
    with trt_trace.tracing(path, layers=2):
        for _ in range(5):
            assert torch.equal(engine.execute([x])[0], x * 2.0)
            engine.invalidate_context()  # as 2.13 does on a new runtime setting or weight-streaming budget
    check_window(path, "py_engine_layered", engine.engine.reported, n_calls=5, first=1, profiled=2)
    assert engine.engine.contexts_created == 5 and engine.context.profiler is None


def test_off_the_context_never_gets_a_profiler(tmp_path):
    module = PythonTorchTensorRTModule("py_not_layered", layers=LAYERS)
    path = str(tmp_path / "t.json")
    with trt_trace.tracing(path):
        for _ in range(4):
            module(torch.ones(4))
    calls, layers, _, report = trace_of(path)
    assert len(calls) == 4 and layers == {} and report["engines"] == []
    assert module.engine.reported == [] and module.context.profiler is None


def test_the_users_own_profiler_stays_and_the_window_says_why(tmp_path, capsys):
    module = PythonTorchTensorRTModule("py_own_profiler", layers=LAYERS)
    module.enable_profiling()  # 2.11's: a printing trt.Profiler on the context
    mine = module.context.profiler
    path = str(tmp_path / "t.json")
    with trt_trace.tracing(path, layers=2):
        for _ in range(4):
            module(torch.ones(4))
    _, layers, _, report = trace_of(path)
    assert layers == {}
    (row,) = report["engines"]
    assert row["profiled_calls"] == 0 and "a profiler of the user's is on its execution context" in row["note"]
    assert module.context.profiler is mine and module.profiling_enabled
    assert capsys.readouterr().out.count(f"{NAMES[0]}: ") == 4  # the user's profiler printed every call


def test_the_runtimes_cuda_graph_mode_ends_the_window_unprofiled(tmp_path, monkeypatch):
    # Torch-TensorRT's switch, as its runtime package answers it (the stand-in's package has none).
    monkeypatch.setitem(sys.modules, "torch_tensorrt.runtime", types.SimpleNamespace(get_cudagraphs_mode=lambda: True))
    module = PythonTorchTensorRTModule("py_cudagraphs", layers=LAYERS)
    path = str(tmp_path / "t.json")
    with trt_trace.tracing(path, layers=2):
        for _ in range(4):
            module(torch.ones(4))
    _, layers, _, report = trace_of(path)
    (row,) = report["engines"]
    assert layers == {} and module.engine.reported == [] and row["profiled_calls"] == 0
    assert "CUDA graph mode" in row["note"]


def test_calls_under_torch_profiler_are_still_profiled(tmp_path):
    # The C++ runtime's profiled steps fail under torch.profiler (its RecordProfile); the Python runtime's
    # calls with trt_trace's profiler do not use it.
    engine = TRTEngine("py_under_torch_profiler", layers=LAYERS)
    path = str(tmp_path / "t.json")
    with trt_trace.tracing(path, layers=2), torch.profiler.profile():
        for _ in range(4):
            engine.execute([torch.ones(4)])
    row = check_window(path, "py_under_torch_profiler", engine.engine.reported, n_calls=4, first=1, profiled=2)
    assert row["skipped"]["torch_profiler"] == 0


def test_a_call_that_raises_inside_the_window_counts_and_its_profiler_is_taken_off(tmp_path):
    module = PythonTorchTensorRTModule("py_layered_fails", layers=LAYERS)
    path = str(tmp_path / "t.json")
    with trt_trace.tracing(path, layers=2):
        module(torch.ones(4))
        module.engine.fail_enqueue = True
        with pytest.raises(RuntimeError, match="enqueue failed"):
            module(torch.ones(4))
        module.engine.fail_enqueue = False
        module(torch.ones(4))
        module(torch.ones(4))
    calls, layers, _, report = trace_of(path)
    ids = [c["args"]["call_id"] for c in calls]
    assert len(ids) == 4 and sorted(layers) == [ids[2]]
    (row,) = report["engines"]
    assert (row["profiled_calls"], row["failed_calls"]) == (1, 1)
    assert module.context.profiler is None and python_runtime.open_calls() == 0


def test_threads_each_engine_its_window_and_a_shared_engine_profiled_once_at_a_time(tmp_path):
    modules = [PythonTorchTensorRTModule(f"py_thread_{i}", layers=LAYERS) for i in range(3)]
    shared = TRTEngine("py_shared_layered", layers=LAYERS)
    barrier = threading.Barrier(4)
    errors: list[BaseException] = []

    def run(module: PythonTorchTensorRTModule | None) -> None:
        try:
            barrier.wait()
            for _ in range(6):
                if module is not None:
                    module(torch.ones(4))
                shared.execute([torch.ones(4)])
        except BaseException as exc:  # noqa: BLE001 (failed below)
            errors.append(exc)
    path = str(tmp_path / "t.json")
    with trt_trace.tracing(path, layers=2):
        threads = [threading.Thread(target=run, args=(m,)) for m in [*modules, None]]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert errors == []
    for m in modules:
        check_window(path, m.name, m.engine.reported, n_calls=6, first=1, profiled=2)
    # The shared engine: 24 calls from 4 threads, two of them profiled, one at a time (the gate): had another
    # call run while trt_trace's profiler was on the context, its layers would be among the profiled call's
    # and the stand-in would have reported more.
    check_window(path, "py_shared_layered", shared.engine.reported, n_calls=24, first=1, profiled=2)
    assert shared.context.profiler is None


CHILD = """
import json, torch
import torch_tensorrt
from torch_tensorrt.dynamo.runtime import PythonTorchTensorRTModule
from torch_tensorrt.dynamo.runtime._TRTEngine import TRTEngine
layers = {layers!r}
m = PythonTorchTensorRTModule("py_hooked_layered", layers=layers)
e = TRTEngine("py_op_layered", scale=4.0, layers=layers)
x = torch.randn(8)
ok = all(torch.equal(m(x), x * 2.0) for _ in range(5))
ok = ok and all(torch.equal(torch.ops.tensorrt.execute_engine([x], e)[0], x * 4.0) for _ in range(5))
print(json.dumps({{"ok": ok, "m": m.engine.reported, "e": e.engine.reported}}))
"""


def test_the_two_variables_alone_in_a_fresh_process_time_the_layers_of_both_python_runners(tmp_path: Path):
    site = fake_package(tmp_path / "site")
    out = tmp_path / "pyrt.json"
    r = run_python(CHILD.format(layers=LAYERS), {"TRT_TRACE_OUT": str(out), "TRT_TRACE_LAYERS": "2",
                                                 "PYTHONPATH": python_path(site)})
    assert r.returncode == 0, r.stderr
    child = json.loads(r.stdout.splitlines()[-1])
    assert child["ok"]
    # The 2.11 module, and 2.13's Python engine through its Python-registered op (traced once per call).
    check_window(str(out), "py_hooked_layered", [tuple(t) for t in child["m"]], n_calls=5, first=1, profiled=2)
    check_window(str(out), "py_op_layered", [tuple(t) for t in child["e"]], n_calls=5, first=1, profiled=2)
