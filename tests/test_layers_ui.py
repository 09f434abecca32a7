"""Per-layer traces (TRT_TRACE_LAYERS) opened in the real Perfetto UI (tests/perfetto_ui.py), in both
formats: each engine's layer track is where it is designed to be (JSON: "<engine> layers <tid>", tid =
engine id * 1000 + 950, right after the engine's other tracks; native: "layers" under the engine),
its slices are the profiled calls' layers, named after them, with the layer, engine and call id in
their args and the durations the file holds.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import demo_package_now
from perfetto_ui import Track

from trt_trace.analysis.trace_summary import load_events
from trt_trace.demo import SERVE_SCRIPT
from trt_trace.schema.trace_format import LAYER_CATEGORY

FORMATS = ("json", "pftrace")
CALLS = 3  # TRT_TRACE_LAYERS


@pytest.fixture(scope="module")
def layered_runs(tmp_path_factory) -> dict[str, Path]:
    """The demo's 6-engine package run 8 times with only TRT_TRACE_OUT and TRT_TRACE_LAYERS set, per format."""
    package, _specs = demo_package_now()
    out = {}
    for fmt in FORMATS:
        path = tmp_path_factory.mktemp("layers") / f"layers.{fmt}"
        env = {k: v for k, v in os.environ.items() if not k.startswith("TRT_TRACE_") or k == "TRT_TRACE_CACHE_DIR"}
        env.update(TRT_TRACE_OUT=str(path), TRT_TRACE_LAYERS=str(CALLS), TRT_TRACE_QUIET="1")
        proc = subprocess.run([sys.executable, "-c", SERVE_SCRIPT, package, "8"], env=env, capture_output=True,
                              text=True, timeout=300, cwd=path.parent)
        assert proc.returncode == 0, proc.stderr
        out[fmt] = path
    return out


def layer_tracks(tracks: list[Track], fmt: str) -> dict[str, Track]:
    """engine -> its layer track, checking that it comes right after the engine's other tracks."""
    out: dict[str, Track] = {}
    if fmt == "json":
        engines = [t for t in tracks if t.depth == 1 and not t.name.startswith("trt_trace")]
        for i, t in enumerate(engines):
            if " layers " not in t.name:
                continue
            engine, tid = t.name.rsplit(" layers ", 1)
            assert int(tid) % 1000 == 950, t.name
            assert engines[i - 1].name.startswith(engine + " "), "the layer track follows its engine's tracks"
            # A thread's slices are on its own child track, which repeats the thread's name.
            below = []
            for c in tracks[tracks.index(t) + 1:]:
                if c.depth <= t.depth:
                    break
                below.append(c)
            out[engine] = Track(t.depth, t.name, t.uri, t.track_ids + [i for c in below for i in c.track_ids])
        return out
    engine = ""
    for i, t in enumerate(tracks):
        if t.depth == 2:
            engine = t.name
        elif t.depth == 3 and t.name == "layers":
            assert tracks[i - 1].depth == 3 and tracks[i - 1].name in ("host", "GPU"), "after the host/GPU lanes"
            out[engine] = t
    return out


@pytest.mark.parametrize("fmt", FORMATS)
def test_layer_tracks_in_the_real_ui(perfetto_ui, layered_runs, fmt):
    from trt_trace.standin import model

    path = layered_runs[fmt]
    file_layers = [e for e in load_events(str(path)) if e.get("cat") == LAYER_CATEGORY]
    trace = perfetto_ui.open(str(path))
    assert trace.import_errors() == []
    arg = "args." if fmt == "json" else "debug."
    found = layer_tracks(trace.tracks(), fmt)
    specs = model.demo_specs(6)
    assert set(found) == {s.name for s in specs}
    for spec in specs:
        ids = ",".join(map(str, found[spec.name].track_ids))
        rows = trace.query(f"select name, dur, extract_arg(arg_set_id, '{arg}layer') layer, "
                           f"extract_arg(arg_set_id, '{arg}engine') engine, "
                           f"extract_arg(arg_set_id, '{arg}call_id') call_id from slice where track_id in ({ids}) "
                           "order by ts")
        names = [n for n, _ in spec.layers]
        assert [r["name"] for r in rows] == names * CALLS
        assert all(r["layer"] == r["name"] and r["engine"] == spec.name for r in rows)
        assert len({r["call_id"] for r in rows}) == CALLS
        mine = sorted((e for e in file_layers if e["args"]["engine"] == spec.name), key=lambda e: e["ts"])
        assert [r["dur"] for r in rows] == [round(e["dur"] * 1000) for e in mine]  # to the ns
    trace.close()
