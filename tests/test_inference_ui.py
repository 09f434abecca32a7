"""A trace with whole inferences (docs/inference.md) opened in the real Perfetto UI (tests/perfetto_ui.py): the
inference track of each calling thread is listed before every engine's track, named "inference · <thread>",
holds one `inference` slice per runner call, and the UI's own SQL finds each inference's six engine calls
(the `execute_engine` slices of its thread within its span) with the durations the file holds. In both formats:
in a native Perfetto trace the inference tracks sit under the process beside the "engines" group, which the UI
lists by name (docs/inference.md)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import demo_package_now

from trt_trace.analysis.trace_summary import load_events
from trt_trace.demo import SERVE_SCRIPT

CALLS = 5


@pytest.fixture(scope="module", params=[".json", ".pftrace"])
def served(tmp_path_factory, request) -> Path:
    """The demo's 6-engine package run CALLS times with only TRT_TRACE_OUT set, in each format."""
    package, _specs = demo_package_now()
    path = tmp_path_factory.mktemp("inference") / f"serve{request.param}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRT_TRACE_") or k == "TRT_TRACE_CACHE_DIR"}
    env.update(TRT_TRACE_OUT=str(path), TRT_TRACE_QUIET="1")
    proc = subprocess.run([sys.executable, "-c", SERVE_SCRIPT, package, str(CALLS)], env=env, capture_output=True,
                          text=True, timeout=300, cwd=path.parent)
    assert proc.returncode == 0, proc.stderr
    return path


def test_the_inference_slices_hold_their_engine_calls_in_the_real_ui(perfetto_ui, served):
    events = load_events(str(served))
    file_infs = sorted((e for e in events if e.get("cat") == "trt_trace.inference"), key=lambda e: e["ts"])
    trace = perfetto_ui.open(str(served))
    assert trace.import_errors() == []
    tracks = [t for t in trace.tracks() if t.depth == 1]
    first = next(i for i, t in enumerate(tracks) if t.name.startswith("inference · "))
    if served.suffix == ".json":
        assert all(not t.name.startswith("_run_on_acc") for t in tracks[:first]), "listed before the engines"
    arg = "args." if served.suffix == ".json" else "debug."  # JSON args / Perfetto debug annotations
    inf_track = tracks[first]
    thread = file_infs[0]["args"]["thread"]
    assert inf_track.name.split(" ")[:3] == ["inference", "·", str(thread)]
    below = [c for c in trace.tracks() if c.uri and c.depth > 1]  # a thread's slices sit on its child track
    ids = ",".join(map(str, inf_track.track_ids + [i for c in below if c.name == inf_track.name
                                                   for i in c.track_ids]))
    infs = trace.query(f"select id, ts, dur, extract_arg(arg_set_id, '{arg}kind') kind from slice "
                       f"where track_id in ({ids}) and name = 'inference' order by ts")
    assert len(infs) == len(file_infs) >= CALLS
    assert [r["dur"] for r in infs] == [round(e["dur"] * 1000) for e in file_infs]
    assert {r["kind"] for r in infs} == {"aoti"}
    inside = trace.query(
        "select i.id, count(*) n, sum(s.dur) engine_ns from slice i join slice s "
        "on s.ts >= i.ts and s.ts < i.ts + i.dur and s.name = 'execute_engine' "
        f"and extract_arg(s.arg_set_id, '{arg}thread') = extract_arg(i.arg_set_id, '{arg}thread') "
        "where i.name = 'inference' group by i.id order by i.ts")
    assert [r["n"] for r in inside] == [6] * len(infs)
    assert all(0 < r["engine_ns"] < i["dur"] for r, i in zip(inside, infs, strict=True))
    trace.close()
