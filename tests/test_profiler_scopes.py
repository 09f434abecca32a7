"""torch.profiler integration: engine calls and phases as user scopes `trt::<engine>/<phase>`."""

from __future__ import annotations

from pathlib import Path

import orjson
import torch
from conftest import drain_all

import trt_trace
from trt_trace import standin
from trt_trace.trace_summary import load_events

PHASES = ("workspace", "inputs", "outputs", "enqueue")
SLACK_US = 1.0  # phase boundaries are taken inside the boundary op (see csrc/hook/profiler_scopes.h)


def profile_calls(engine, inputs, n: int, path: Path) -> list[dict]:
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        for _ in range(n):
            torch.ops.tensorrt.execute_engine(inputs, engine)
    prof.export_chrome_trace(str(path))
    doc = orjson.loads(path.read_bytes())
    return [e for e in doc["traceEvents"] if e.get("ph") == "X"]


def inside(inner: dict, outer: dict, slack: float = 0.0) -> bool:
    return (inner["ts"] >= outer["ts"] - slack
            and inner["ts"] + inner["dur"] <= outer["ts"] + outer["dur"] + slack)


def test_profiler_sees_engine_calls_and_phases_without_a_trace_file(tmp_path):
    engine = standin.make_engine("prof_engine", host_us=200, num_outputs=2)
    events = profile_calls(engine, [torch.randn(16, 16)], 5, tmp_path / "prof.json")
    calls = [e for e in events if e["name"] == "trt::prof_engine/execute_engine"]
    ops = [e for e in events if e["name"] == "tensorrt::execute_engine"]
    assert len(calls) == 5 and len(ops) == 5
    for call in calls:
        # The call scope nests in the profiler's own event of the op, exactly.
        assert any(inside(call, op) for op in ops)
        phases = [e for e in events if e["name"].startswith("trt::prof_engine/") and e is not call
                  and inside(e, call, SLACK_US)]
        names = [e["name"].rsplit("/", 1)[1] for e in sorted(phases, key=lambda e: e["ts"])]
        # Phases in the runtime's order; between the two output allocations a short enqueue may appear.
        assert names[:3] == ["workspace", "inputs", "outputs"] and names[-1] == "enqueue", names
        assert set(names) == set(PHASES)
        # They follow each other without overlapping (the gaps between them are the profiler's own cost
        # of closing one scope and opening the next), and enqueue holds the 200 us launch.
        ordered = sorted(phases, key=lambda e: e["ts"])
        for a, b in zip(ordered, ordered[1:], strict=False):
            assert a["ts"] + a["dur"] <= b["ts"] + 1e-3, (a, b)
        enqueue = sum(e["dur"] for e in phases if e["name"].endswith("/enqueue"))
        assert enqueue >= 200
    # Untraced by trt_trace: nothing went into its buffers.
    assert len(drain_all()) == 0


def test_profiler_and_trace_file_agree(tmp_path):
    engine = standin.make_engine("both_engine", host_us=300)
    trace = tmp_path / "t.json"
    with trt_trace.tracing(str(trace)):
        events = profile_calls(engine, [torch.randn(8, 8)], 4, tmp_path / "prof.json")
    prof_calls = sorted(e["dur"] for e in events if e["name"] == "trt::both_engine/execute_engine")
    ours = sorted(e["dur"] for e in load_events(str(trace))
                  if e.get("ph") == "X" and e.get("name") == "execute_engine")
    assert len(prof_calls) == len(ours) == 4
    for a, b in zip(prof_calls, ours, strict=True):
        assert abs(a - b) <= max(2.0, 0.05 * b), (prof_calls, ours)


def test_key_averages_list_engine_phases():
    engine = standin.make_engine("avg_engine")
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        for _ in range(3):
            torch.ops.tensorrt.execute_engine([torch.randn(4, 4)], engine)
    counts = {a.key: a.count for a in prof.key_averages()}
    assert counts.get("trt::avg_engine/execute_engine") == 3
    for phase in ("workspace", "inputs", "outputs", "enqueue"):
        assert counts.get(f"trt::avg_engine/{phase}", 0) >= 3


def test_no_scopes_and_same_results_without_a_profiler():
    engine = standin.make_engine("plain_engine")
    x = [torch.randn(4, 4)]
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]):
        inside_out = torch.ops.tensorrt.execute_engine(x, engine)
    outside_out = torch.ops.tensorrt.execute_engine(x, engine)
    assert torch.equal(inside_out[0], outside_out[0])
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        torch.mm(x[0], x[0])
    assert not any(a.key.startswith("trt::") for a in prof.key_averages())
