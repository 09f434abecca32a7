"""Per-layer timing (TRT_TRACE_LAYERS, docs/layers.md) on the stand-in, which mirrors the profiling
methods of Torch-TensorRT 2.11 and 2.13 (csrc/standin/standin_profiling.h): the window, the layers and
their durations, the runtime's state after the window, the private folder, threads, throws,
torch.profiler, engines without the methods, packages in fresh processes, trt_trace.layers(N).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import TERMINAL_SIGNALS, demo_package_now, playing_runtime, run_python, trt_trace_cli

import trt_trace
from trt_trace import standin
from trt_trace.analysis.trace_summary import load_events
from trt_trace.native import ops
from trt_trace.runtime import config
from trt_trace.schema.trace_format import CATEGORY, LAYER_CATEGORY, METADATA_EVENT
from trt_trace.standin import model

# Names as Torch-TensorRT's converters and TensorRT's fusions make them, and some a careless writer
# would break (the runtime writes names into its JSON without escaping them).
LAYERS = (
    ("[CONVOLUTION]-[aten_ops.convolution.default]-[/conv1/convolution] + [RELU]-[aten_ops.relu.default]-[/relu1/relu]",
     40),
    ('Reformatting CopyNode for Input Tensor 0 to "fc", 100%; a|b \\ ünï', 5),
    ("{ForeignNode[/attn/MatMul.../attn/Softmax]}", 25),
)
NAMES = [n for n, _ in LAYERS]


def calls_and_layers(path: str) -> tuple[list[dict], dict[int, list[dict]]]:
    """The trace's execute_engine events in time order, and its layer events by call id (in order)."""
    return calls_and_layers_of(load_events(path))


def calls_and_layers_of(events: list[dict]) -> tuple[list[dict], dict[int, list[dict]]]:
    """calls_and_layers of events already read."""
    calls = sorted((e for e in events if e.get("ph") == "X" and e.get("cat") == CATEGORY
                    and e["name"] == "execute_engine"), key=lambda e: e["ts"])
    layers: dict[int, list[dict]] = {}
    for e in sorted((e for e in events if e.get("cat") == LAYER_CATEGORY), key=lambda e: e["ts"]):
        layers.setdefault(e["args"]["call_id"], []).append(e)
    return calls, layers


def phases_of(path: str) -> dict[tuple[int, str], dict]:
    return {(e["args"]["call_id"], e["name"]): e for e in load_events(path)
            if e.get("ph") == "X" and e.get("cat") == CATEGORY}


def end_metadata(path: str) -> dict:
    metas = [e["args"] for e in load_events(path) if e.get("name") == METADATA_EVENT]
    return metas[-1]


def traced_ns(reported_ms: float) -> int:
    """What the trace must hold for a layer time the profiler was told: the runtime writes the
    float ms times 1000 (a float) with six significant digits (`"dur": <us>`); trt_trace keeps ns."""
    us = np.float32(reported_ms) * np.float32(1000)
    return round(float(f"{float(us):g}") * 1000)


def x() -> torch.Tensor:
    return torch.ones(4)


def call(engine, n: int = 1) -> None:
    for _ in range(n):
        torch.ops.tensorrt.execute_engine([x()], engine)


def test_the_next_n_calls_after_the_first_have_their_layers_as_the_runtime_measured_them(tmp_path, runtime_version):
    engine = standin.make_engine("layered_engine", layers=LAYERS)
    path = str(tmp_path / "t.json")
    with trt_trace.tracing(path, layers=3):
        call(engine, 7)
    reported = engine._trt_trace_standin_reported()
    state = engine._trt_trace_standin_state()
    assert state["profiled_calls"] == 3 and state["profile_execution"] == 0 and state["calls"] == 7
    calls, layers = calls_and_layers(path)
    ids = [c["args"]["call_id"] for c in calls]
    assert len(ids) == 7 and sorted(layers) == ids[1:4]  # after the first call, the next three
    phases = phases_of(path)
    assert len(reported) == 3 * len(LAYERS)
    for k, call_id in enumerate(ids[1:4]):
        mine = layers[call_id]
        assert [e["name"] for e in mine] == NAMES == [e["args"]["layer"] for e in mine]
        assert all(e["args"]["engine"] == "layered_engine" for e in mine)
        durations = [round(e["dur"] * 1000) for e in mine]
        assert durations == [traced_ns(ms) for ms in reported[3 * k: 3 * k + 3]]
        assert all(d >= us * 1000 for d, (_, us) in zip(durations, LAYERS, strict=True))  # each spins its cost
        # Laid end to end from the start of the call's enqueue phase.
        starts = [round(e["ts"] * 1000) for e in mine]
        assert starts[0] == round(phases[(call_id, "enqueue")]["ts"] * 1000)
        assert all(abs(starts[i + 1] - starts[i] - durations[i]) <= 1 for i in range(len(mine) - 1))
    report = end_metadata(path)["layers"]
    (row,) = report["engines"]
    assert (row["engine"], row["profiled_calls"], row["failed_calls"], row["layers"]) == ("layered_engine", 3, 0, NAMES)
    assert row["layer_information"] == {"Layers": NAMES, "Bindings": ["input_0", "output_0"]}
    assert end_metadata(path)["layers"]["calls_per_engine"] == 3
    assert ops.layer_private_folder() == ""


@pytest.mark.parametrize("version, contexts", [("2.11", 4), ("2.13", 2), ("2.14", 2)])
def test_a_dynamic_engine_gets_its_user_managed_context_back(tmp_path, version, contexts):
    with playing_runtime(version):
        engine = standin.make_engine("dynamic_engine", layers=LAYERS[:1], dynamic=True, workspace_bytes=64)
        with trt_trace.tracing(str(tmp_path / "t.json"), layers=2):
            call(engine, 5)
        state = engine._trt_trace_standin_state()
        # 2.11: disable_profiling() makes a static context at once, the strategy switched off and on two
        # more; 2.13 and 2.14: made at the first call, dropped each time, made once at the next call with the
        # engine's strategy.
        assert (state["contexts_created"], state["context_user_managed"], state["static_context_workspaces"]) == (
            contexts, 1, 0)
        # What trt_trace puts right: the runtime's own disable_profiling() on 2.11 leaves a static context.
        other = standin.make_engine("dynamic_engine_2", layers=LAYERS[:1], dynamic=True, workspace_bytes=64)
        other.enable_profiling()
        call(other)
        other.disable_profiling()
        call(other, 2)
        assert other._trt_trace_standin_state()["static_context_workspaces"] == (2 if version == "2.11" else 0)


@pytest.mark.parametrize("version", ["2.13", "2.14"])
def test_a_context_dropped_inside_the_window_gets_the_profiler_again(tmp_path, version):
    # 2.13+ drop the execution context, and the profiler on it, when the runtime settings change (a runtime
    # cache, here between every two calls): each profiled call still has its layers, since trt_trace
    # attaches a fresh profiler (enable_profiling) before every profiled call.
    with playing_runtime(version):
        engine = standin.make_engine("dropped_context_engine", layers=LAYERS)
    path = str(tmp_path / "t.json")
    with trt_trace.tracing(path, layers=3):
        call(engine)  # the first call after the switch: as usual
        for k in range(3):
            engine.update_runtime_settings(0, 0, torch.classes.tensorrt.RuntimeCacheHandle(str(tmp_path / f"c{k}")))
            call(engine)
    assert engine.num_execution_contexts_created() == 4  # the first call's, then one after each drop
    calls, layers = calls_and_layers(path)
    assert len(calls) == 4 and sorted(layers) == [c["args"]["call_id"] for c in calls[1:]]
    assert all([e["name"] for e in mine] == NAMES for mine in layers.values())


def test_outside_the_window_calls_are_the_runtimes_normal_ones(tmp_path):
    own_prefix = tmp_path / "users_prefix"
    own_prefix.mkdir()
    engine = standin.make_engine("window_engine", layers=LAYERS)
    engine.profile_path_prefix = str(own_prefix)
    with trt_trace.tracing(str(tmp_path / "t.json"), layers=2):
        call(engine, 3)  # the window: calls 2 and 3
        folder = ops.layer_private_folder()
        after = engine._trt_trace_standin_state()
        call(engine, 4)
    assert after["profile_execution"] == 0 and after["profiled_calls"] == 2
    assert engine._trt_trace_standin_state()["profiled_calls"] == 2
    assert engine.profile_path_prefix == str(own_prefix) and not list(own_prefix.iterdir())
    assert folder and not Path(folder).exists()  # the private folder went with the session
    _, layers = calls_and_layers(str(tmp_path / "t.json"))
    assert len(layers) == 2


def test_off_costs_no_profiling_and_no_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    engine = standin.make_engine("plain_engine", layers=LAYERS)
    with trt_trace.tracing(str(tmp_path / "t.json")):
        call(engine, 5)
    state = engine._trt_trace_standin_state()
    assert (state["profiled_calls"], state["contexts_created"]) == (0, 1)
    path = str(tmp_path / "t.json")
    assert calls_and_layers(path)[1] == {} and "layers" not in end_metadata(path)
    assert list((tmp_path / "tmp").iterdir()) == []


def test_threads_never_see_a_toggle_under_a_running_call(tmp_path):
    engine = standin.make_engine("threads_engine", layers=(("a", 30), ("b", 10)), host_us=20)
    path = str(tmp_path / "t.json")
    barrier = threading.Barrier(5)
    wrong = []

    def worker() -> None:
        barrier.wait()
        for _ in range(40):
            if not torch.equal(torch.ops.tensorrt.execute_engine([x()], engine)[0], x()):
                wrong.append(1)

    with trt_trace.tracing(path, layers=4):
        threads = [threading.Thread(target=worker) for _ in range(4)]
        for t in threads:
            t.start()
        barrier.wait()
        for _ in range(6):  # re-armed while the threads call: new windows open among running calls
            trt_trace.layers(4)
        for t in threads:
            t.join()
    state = engine._trt_trace_standin_state()
    assert not wrong and state["unsafe_toggles"] == 0 and state["profile_execution"] == 0
    calls, layers = calls_and_layers(path)
    assert len(calls) == 160
    assert all([e["name"] for e in group] == ["a", "b"] for group in layers.values())
    assert len(layers) == state["profiled_calls"] >= 4
    report = end_metadata(path)["layers"]["engines"][0]
    assert report["profiled_calls"] == state["profiled_calls"]


def test_the_stand_in_counts_a_toggle_made_under_a_running_call():
    """The check the test above relies on: the real runtime's methods take no lock, the stand-in's
    mirror counts a toggle that would free what a running call uses."""
    engine = standin.make_engine("slow_engine", layers=(("slow", 300_000),))
    t = threading.Thread(target=call, args=(engine,))
    t.start()
    while engine._trt_trace_standin_state()["calls"] == 0:  # counted under the engine's lock
        pass
    engine.enable_profiling()
    t.join()
    engine.disable_profiling()
    assert engine._trt_trace_standin_state()["unsafe_toggles"] == 1


def test_an_engine_that_throws_inside_its_window(tmp_path):
    engine = standin.make_engine("failing_engine", layers=LAYERS[:2], fail_every=3)
    errors = []
    path = str(tmp_path / "t.json")
    with trt_trace.tracing(path, layers=4):
        for _ in range(9):
            try:
                call(engine)
            except RuntimeError as exc:
                errors.append(str(exc))
    # Calls 3, 6, 9 fail; the window is calls 2-5: call 3 is profiled and fails.
    assert len(errors) == 3 and all("stand-in fault injection" in e for e in errors)
    state = engine._trt_trace_standin_state()
    assert state["profile_execution"] == 0 and state["profiled_calls"] == 3  # (call 3 failed before its layers)
    calls, layers = calls_and_layers(path)
    failed = [c["args"]["call_id"] for c in calls if c["args"].get("error")]
    assert len(layers) == 3 and not set(layers) & set(failed)
    row = end_metadata(path)["layers"]["engines"][0]
    assert (row["profiled_calls"], row["failed_calls"]) == (3, 1)


def test_calls_under_torch_profiler_are_not_profiled_and_do_not_fail(tmp_path):
    """The runtime's own profiling under a recording torch.profiler fails the call (its per-step
    RecordProfile: "Profiler is already enabled on this thread"); trt_trace leaves those calls out."""
    engine = standin.make_engine("profiled_engine", layers=LAYERS[:1])
    other = standin.make_engine("profiled_engine_2", layers=LAYERS[:1])
    other.enable_profiling()
    with pytest.raises(RuntimeError, match="Profiler is already enabled on this thread"):
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]):
            call(other)
    other.disable_profiling()
    path = str(tmp_path / "t.json")
    with trt_trace.tracing(path, layers=3):
        call(engine, 2)  # the first, and one profiled
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]):
            call(engine, 2)
        call(engine, 3)
    row = end_metadata(path)["layers"]["engines"][0]
    assert (row["profiled_calls"], row["skipped"]["torch_profiler"]) == (3, 2)
    assert engine._trt_trace_standin_state()["profile_execution"] == 0


def test_an_engine_without_the_runtimes_profiling_methods(tmp_path):
    path = tmp_path / "t.json"
    code = ("import torch\nfrom trt_trace import standin\n"
            "e = standin.make_engine('old_engine', layers=(('a', 5),))\n"
            "assert not hasattr(e, 'enable_profiling')\n"
            "for _ in range(4): torch.ops.tensorrt.execute_engine([torch.ones(4)], e)\n")
    done = run_python(code, {"TRT_TRACE_OUT": str(path), "TRT_TRACE_LAYERS": "2", "TRT_TRACE_STANDIN_PROFILING": "0",
                             "TRT_TRACE_QUIET": "1"})
    assert done.returncode == 0, done.stderr
    assert calls_and_layers(str(path))[1] == {}
    row = end_metadata(str(path))["layers"]["engines"][0]
    assert row["profiled_calls"] == 0 and "no enable_profiling" in row["note"]
    out = subprocess.run([*trt_trace_cli(), "layers", str(path)], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.startswith("old_engine: no per-layer timing (its runtime has no enable")


def test_an_engine_with_native_multi_device_collectives_is_left_alone(tmp_path):
    with playing_runtime("2.13"):
        spec = standin.EngineSpec("multidevice_engine", layers=LAYERS[:1])
        info = spec.serialized_info()
        info[11] = "1"
        engine = torch.classes.tensorrt.Engine(info)
        path = str(tmp_path / "t.json")
        with trt_trace.tracing(path, layers=2):
            call(engine, 4)
    assert engine._trt_trace_standin_state()["profiled_calls"] == 0
    assert "native multi-device" in end_metadata(path)["layers"]["engines"][0]["note"]


def test_a_package_in_a_fresh_process_with_only_the_two_variables(tmp_path):
    package, specs = demo_package_now()
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    path = tmp_path / "t.json"
    code = ("import sys, torch\nfrom trt_trace.standin import model\n"
            "runner = model.load_package(sys.argv[1])\n"
            "for _ in range(6): runner(torch.randn(8, 64))\n")
    env = {"TRT_TRACE_OUT": str(path), "TRT_TRACE_LAYERS": "3", "TMPDIR": str(tmp)}
    done = subprocess.run([sys.executable, "-c", code, package], capture_output=True, text=True, timeout=300,
                          env={**{k: v for k, v in os.environ.items() if not k.startswith("TRT_TRACE_")
                                  or k in ("TRT_TRACE_CACHE_DIR", "TRT_TRACE_STANDIN_RUNTIME")}, **env},
                          cwd=str(tmp_path))
    assert done.returncode == 0, done.stderr
    calls, layers = calls_and_layers(str(path))
    by_engine: dict[str, list[int]] = {}
    for c in calls:
        by_engine.setdefault(c["args"]["engine"], []).append(c["args"]["call_id"])
    assert set(by_engine) == {s.name for s in specs}
    for spec in specs:
        ids = by_engine[spec.name]
        assert sorted(i for i in layers if i in ids) == ids[1:4]
        assert all([e["name"] for e in layers[i]] == [n for n, _ in spec.layers] for i in ids[1:4])
    # Nothing of trt_trace's left in the process's temporary directory (torch's own cache of Inductor, which
    # loading a package may create there, aside).
    assert [p for p in tmp.iterdir() if not p.name.startswith("torchinductor_")] == []


def test_layers_switched_on_and_off_in_a_running_process(tmp_path):
    engine = standin.make_engine("running_engine", layers=LAYERS[:2])
    path = str(tmp_path / "t.json")
    with pytest.raises(trt_trace.TraceError, match="no tracing session"):
        trt_trace.layers(3)
    with trt_trace.tracing(path):
        call(engine, 3)
        trt_trace.layers(2)
        call(engine, 4)  # the first after the switch, then two profiled, then a normal one
        for bad in (-1, True, 1.5, config.MAX_LAYER_CALLS + 1):
            with pytest.raises(trt_trace.TraceError, match="layers must be a whole number"):
                trt_trace.layers(bad)
        trt_trace.layers(5)
        call(engine, 2)  # the first, then one profiled: the window is open
        assert engine._trt_trace_standin_state()["profile_execution"] == 1
        trt_trace.layers(0)
        assert engine._trt_trace_standin_state()["profile_execution"] == 0  # back to normal at once
        call(engine, 2)
    calls, layers = calls_and_layers(path)
    ids = [c["args"]["call_id"] for c in calls]
    assert sorted(layers) == [ids[4], ids[5], ids[8]]
    row = end_metadata(path)["layers"]["engines"][0]
    assert row["profiled_calls"] == 3 and "4 call(s) before its window was over" in row["note"]


@pytest.mark.parametrize("raw, value, warning", [
    ("4", 4, None), (" 7 ", 7, None), ("0", 0, None),
    ("abc", 0, "TRT_TRACE_LAYERS='abc' is not a number of calls; use e.g. 10"),
    ("-3", 0, "TRT_TRACE_LAYERS='-3' is not a number of calls"),
    (str(config.MAX_LAYER_CALLS + 5), config.MAX_LAYER_CALLS, f"is over {config.MAX_LAYER_CALLS} calls"),
])
def test_the_variable(monkeypatch, capsys, raw, value, warning):
    monkeypatch.setenv("TRT_TRACE_LAYERS", raw)
    assert config.from_env().layers == value
    err = capsys.readouterr().err
    assert (warning in err and err.count("\n") == 1) if warning else err == ""


def test_an_engine_let_go_of_inside_its_window(tmp_path, monkeypatch):
    """A window holds its engine weakly: the program may drop it; the window's end then has nothing to
    turn off, and the folder goes as usual."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))
    path = str(tmp_path / "t.json")
    with trt_trace.tracing(path, layers=5):
        engine = standin.make_engine("dropped_engine", layers=LAYERS[:1])
        call(engine, 3)  # the first, two profiled: the window is open
        state = engine._trt_trace_standin_state()
        del engine
        ops.sweep_engines()
        other = standin.make_engine("other_engine", layers=LAYERS[:1])
        call(other, 3)
    assert state["profile_execution"] == 1 and list(tmp.iterdir()) == []
    assert len(calls_and_layers(path)[1]) == 4


def test_the_variable_without_an_output_file_says_so(tmp_path):
    done = run_python("import torch", {"TRT_TRACE_LAYERS": "3"})
    assert done.returncode == 0 and done.stderr == (
        "trt_trace: TRT_TRACE_LAYERS is set but TRT_TRACE_OUT is not: per-layer times go into a trace; set "
        "TRT_TRACE_OUT=trace.json too (running untraced)\n")


def test_the_runtimes_cuda_graph_mode_ends_the_window_unprofiled(tmp_path):
    engine = standin.make_engine("graph_engine", layers=LAYERS[:1])
    path = str(tmp_path / "t.json")
    torch.ops.tensorrt.set_cudagraphs_mode(1)
    try:
        with trt_trace.tracing(path, layers=2):
            call(engine, 4)
    finally:
        torch.ops.tensorrt.set_cudagraphs_mode(0)
    assert engine._trt_trace_standin_state()["profiled_calls"] == 0 and calls_and_layers(path)[1] == {}
    assert "CUDA graph mode" in end_metadata(path)["layers"]["engines"][0]["note"]


def test_trt_trace_run_layers(tmp_path):
    path = tmp_path / "t.json"
    code = ("import torch\nfrom trt_trace import standin\ne = standin.make_engine('run_engine', layers=(('a', 5),))\n"
            "for _ in range(5): torch.ops.tensorrt.execute_engine([torch.ones(4)], e)\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRT_TRACE_") or k == "TRT_TRACE_CACHE_DIR"}
    done = subprocess.run([*trt_trace_cli(), "run", "--layers", "2", "-o", str(path), "--", sys.executable, "-c",
                           code], capture_output=True, text=True, env=env, cwd=str(tmp_path), timeout=120)
    assert done.returncode == 0, done.stderr
    assert len(calls_and_layers(str(path))[1]) == 2
    bad = subprocess.run([*trt_trace_cli(), "run", "--layers", "-1", "--", sys.executable, "-c", "pass"],
                         capture_output=True, text=True, env=env, cwd=str(tmp_path))
    assert bad.returncode == 2
    assert bad.stderr.strip() == "trt-trace run: --layers must be a number of calls from 0 to 1048576, not -1"


def test_a_fork_inside_the_window(tmp_path, monkeypatch):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))
    engine = standin.make_engine("fork_engine", layers=LAYERS[:2])
    path = str(tmp_path / "t.json")
    with trt_trace.tracing(path, layers=4):
        call(engine, 2)  # the first, one profiled: the window is open
        folder = Path(ops.layer_private_folder())
        before = {p: p.stat().st_mtime_ns for p in folder.rglob("*") if p.is_file()}
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: its copy of the engine, out of the window, never into the parent's folder
            try:
                call(engine, 3)
                state = engine._trt_trace_standin_state()
                os.write(write, json.dumps(state).encode())
            finally:
                os._exit(0)
        os.close(write)
        child = json.loads(os.read(read, 4096))
        os.waitpid(pid, 0)
        after = {p: p.stat().st_mtime_ns for p in folder.rglob("*") if p.is_file()}
        call(engine, 4)
    assert (child["profile_execution"], child["profiled_calls"]) == (0, 1)
    assert after == before  # the child wrote nothing into the parent's folder
    assert engine._trt_trace_standin_state()["profiled_calls"] == 4
    assert len(calls_and_layers(path)[1]) == 4
    assert list(tmp.iterdir()) == []


@pytest.mark.parametrize("how", ["normal exit", "exception", "SIGTERM", "window open at exit"])
def test_nothing_is_left_in_the_temporary_directory(tmp_path, how):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    path = tmp_path / "t.json"
    n = 1000 if how == "window open at exit" else 2
    code = (TERMINAL_SIGNALS + "import os, signal, torch\n"
            "from trt_trace import standin\nfrom trt_trace.native import ops\n"
            "e = standin.make_engine('exit_engine', layers=(('a', 5), ('b', 5)))\n"
            "for _ in range(4): torch.ops.tensorrt.execute_engine([torch.ones(4)], e)\n"
            f"assert ops.layer_private_folder() != '' or {n} < 4\n"
            f"how = {how!r}\n"
            "if how == 'exception': raise SystemExit('boom')\n"
            "if how == 'SIGTERM': os.kill(os.getpid(), signal.SIGTERM)\n")
    done = run_python(code, {"TRT_TRACE_OUT": str(path), "TRT_TRACE_LAYERS": str(n), "TMPDIR": str(tmp),
                             "TRT_TRACE_QUIET": "1"})
    assert done.returncode == {"exception": 1, "SIGTERM": -signal.SIGTERM}.get(how, 0), done.stderr
    assert list(tmp.iterdir()) == []
    assert len(calls_and_layers(str(path))[1]) == min(n, 3)


def test_folders_of_processes_that_are_gone_are_removed(tmp_path, monkeypatch):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid = int(dead.stdout)
    old, fresh, alive = (tmp / f"trt_trace_layers_{dead_pid}_old", tmp / f"trt_trace_layers_{dead_pid}_new",
                         tmp / f"trt_trace_layers_{os.getppid()}_alive")
    for folder in (old, fresh, alive):
        (folder / "1").mkdir(parents=True)
        (folder / "1" / "x_engine_execution_profile.trace").write_text("[\n]\n")
    for folder in (old, alive):
        os.utime(folder, (0, 1_000_000))
    engine = standin.make_engine("sweep_engine", layers=LAYERS[:1])
    with trt_trace.tracing(str(tmp_path / "t.json"), layers=1):
        call(engine, 2)
    assert sorted(p.name for p in tmp.iterdir()) == sorted([fresh.name, alive.name])


def test_the_layers_table_of_both_formats(tmp_path):
    a = standin.make_engine("table_a", layers=LAYERS)
    b = standin.make_engine("table_b", layers=LAYERS[1:])
    for suffix in (".json", ".pftrace"):
        path = str(tmp_path / f"t{suffix}")
        with trt_trace.tracing(path, layers=3):
            for _ in range(5):
                call(a)
                call(b)
        events = [e for e in load_events(path) if e.get("cat") == LAYER_CATEGORY]
        expected = {}
        for engine in ("table_a", "table_b"):
            mine = [e for e in events if e["args"]["engine"] == engine]
            total = sum(round(e["dur"] * 1000) for e in mine)
            rows = []
            for name in dict.fromkeys(e["name"] for e in mine):
                durations = sorted(round(e["dur"] * 1000) for e in mine if e["name"] == name)
                rows.append({"layer": name, "calls": len(durations), "total_ns": sum(durations),
                             "share": 100 * sum(durations) / total, "p50_ns": durations[(len(durations) - 1) // 2],
                             "mean_ns": sum(durations) / len(durations), "max_ns": max(durations)})
            rows.sort(key=lambda r: (-r["total_ns"], r["layer"]))
            expected[engine] = rows
        out = subprocess.run([*trt_trace_cli(), "layers", path, "--json"], capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        doc = json.loads(out.stdout)
        got = {e["engine"]: e["layers"] for e in doc["engines"]}
        assert set(got) == set(expected)
        for engine, rows in expected.items():
            inexact = ("share", "mean_ns")  # floats: rounded in the JSON
            assert [{k: v for k, v in r.items() if k not in inexact} for r in got[engine]] == [
                {k: v for k, v in r.items() if k not in inexact} for r in rows]
            for key in inexact:
                assert [r[key] for r in got[engine]] == pytest.approx([r[key] for r in rows], abs=1e-3)
        assert all(e["profiled_calls"] == 3 and e["gpu_p50_ns"] == -1 for e in doc["engines"])
        text = subprocess.run([*trt_trace_cli(), "layers", path], capture_output=True, text=True).stdout
        assert text.startswith("table_a: 3 profiled calls, 3 layers\n")
        assert "table_b: 3 profiled calls, 2 layers" in text and "no GPU span for these calls" in text


def test_the_layers_table_of_a_cut_file_and_of_a_file_without_layers(tmp_path):
    engine = standin.make_engine("cut_engine", layers=LAYERS)
    path = tmp_path / "t.json"
    with trt_trace.tracing(str(path), layers=3):
        call(engine, 5)
    text = path.read_text()
    last = text.rfind('"cat":"trt_trace.layer"')  # cut inside the last profiled call's last layer
    cut = tmp_path / "cut.json"
    cut.write_text(text[: text.rfind("{", 0, last)] + '{"ph":"X","cat":"trt_')
    out = subprocess.run([*trt_trace_cli(), "layers", str(cut)], capture_output=True, text=True)
    assert out.returncode == 0 and "cut_engine: 2 profiled calls" in out.stdout
    assert "cut short: 1 profiled call with layers missing left out" in out.stdout
    plain = tmp_path / "plain.json"
    with trt_trace.tracing(str(plain)):
        call(engine, 2)
    none = subprocess.run([*trt_trace_cli(), "layers", str(plain)], capture_output=True, text=True)
    assert none.returncode == 1 and none.stderr.startswith(f"trt-trace layers: {plain} has no per-layer timing")
    missing = subprocess.run([*trt_trace_cli(), "layers", str(tmp_path / "nope.json")], capture_output=True, text=True)
    assert (missing.returncode, missing.stderr) == (1, f"trt-trace layers: {tmp_path / 'nope.json'}: no such file\n")


def test_the_demo_shows_layers(tmp_path):
    demo_package_now()  # the demo's package, cached
    out = subprocess.run([*trt_trace_cli(), "demo", "--layers", "2", "--calls", "4", "--out", str(tmp_path / "d.json")],
                         capture_output=True, text=True, timeout=300, cwd=str(tmp_path))
    assert out.returncode == 0, out.stderr
    for i, spec in enumerate(model.demo_specs(6)):
        assert f"{spec.name}: 2 profiled calls, {len(model.demo_layers(i))} layers" in out.stdout
