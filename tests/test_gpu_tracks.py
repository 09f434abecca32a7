"""GPU spans in the trace (layout only; the CUDA events themselves are checked on a GPU by
tools/device/gpu_timing_check.py): GPU tracks per engine, flow arrows from enqueue, the gpu column."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from trace_checks import check_trace, load_strict, to_ns

import trt_trace
from trt_trace import ops, standin
from trt_trace.records import RECORD_DTYPE
from trt_trace.trace_format import Flag, Phase
from trt_trace.trace_summary import aggregate, summary_text
from trt_trace.writers import ChromeJsonWriter


def call_records(call_id, engine, begin, gpu_begin, gpu_end, stream=7, flags=0, wait=None):
    """A CUDA call as the drain hands it over: call, 4 phases, its GPU span and, with wait=(begin,
    end), the caller-stream wait before it (an engine on a stream of its own, as in 2.11)."""
    b = [begin, begin + 10_000, begin + 20_000, begin + 30_000, begin + 100_000]
    rows = [(b[0], b[4], call_id, engine, 42, 0, flags, 0, 0)]
    rows += [(b[p], b[p + 1], call_id, engine, 42, p + 1, flags, 0, 0) for p in range(4)]
    if wait is not None:
        rows.append((wait[0], wait[1], call_id, engine, 42, Phase.CALLER_WAIT, flags, 0, 3))
    gpu_flags = flags | (Flag.ENGINE_STREAM if wait else 0)
    rows.append((gpu_begin, gpu_end, call_id, engine, 42, Phase.GPU, gpu_flags, 0, stream))
    return rows


def test_gpu_tracks_flows_and_table(tmp_path):
    rows = []
    # Engine 1: two calls whose GPU spans overlap (two streams) -> two GPU lanes.
    rows += call_records(1, 1, 1_000_000, 1_030_000, 1_500_000, stream=7)
    rows += call_records(2, 1, 1_200_000, 1_230_000, 1_400_000, stream=9)
    rows += call_records(3, 2, 2_000_000, 2_040_000, 2_090_000)
    records = np.array(rows, dtype=RECORD_DTYPE)
    out = tmp_path / "gpu.json"
    writer = ChromeJsonWriter(str(out), lambda: ["", "engine_a", "engine_b"])
    writer.begin("test", {})
    writer.write(records[records["phase"] != Phase.GPU])  # host records first, GPU spans resolve later
    writer.write(records[records["phase"] == Phase.GPU])
    writer.finish({"dropped_events": 0, "threads": []})
    events = load_strict(out)
    tracks = check_trace(events)
    names = sorted(tracks.values())
    assert "engine_a GPU" in names and "engine_a GPU (2)" in names and "engine_b GPU" in names
    gpu = [e for e in events if e.get("name") == "gpu" and e["ph"] == "X"]
    assert len(gpu) == 3 and all(tracks[e["tid"]].startswith(e["args"]["engine"] + " GPU") for e in gpu)
    starts = {e["id"]: e for e in events if e["ph"] == "s"}
    ends = {e["id"]: e for e in events if e["ph"] == "f"}
    assert set(starts) == set(ends) == {1, 2, 3}
    for call_id, s in starts.items():
        assert tracks[s["tid"]] in ("engine_a", "engine_a (2)", "engine_b")  # from the host track
        assert ends[call_id]["bp"] == "e" and "GPU" in tracks[ends[call_id]["tid"]]
    s = aggregate(events)
    by_name = dict(zip(s.names, s.stats.tolist(), strict=True))
    assert by_name["engine_a"][7] == 470_000 + 170_000 and by_name["engine_a"][8] == 2
    table = summary_text(str(out))
    assert table.splitlines()[0].split()[-2:] == ["gpu", "ms"]


def test_cpu_build_reports_no_gpu_timing():
    if torch.cuda.is_available():
        return
    assert ops.set_gpu_timing(True) is False
    assert ops.get_gpu_timing() is False


def test_gpu_event_host_cost_probe():
    # The benchmark probe behind tools/device/gpu_timing_check.py's "GPU events alone" figure.
    ns = ops.gpu_event_host_ns(0, 10)
    sampled = ops.gpu_event_host_ns(0, 80, every=8)
    # Four events per measured call (the engine-stream pair too), less the same hand-offs untraced.
    handed_off = ops.gpu_event_host_ns(0, 200, hand_off=True)
    if torch.cuda.is_available():  # the GPU machine's CUDA build
        assert ns > 0 and sampled > 0 and handed_off > 0
    else:
        assert ns == sampled == handed_off == -1.0  # CPU-only build: no events to record
    assert ops.gpu_event_host_ns(-1, 10) == -1.0
    assert ops.gpu_event_host_ns(0, 0) == -1.0
    assert ops.gpu_event_host_ns(0, 10, every=0) == -1.0


@pytest.mark.skipif(not torch.cuda.is_available(), reason="GPU spans need CUDA (run by tools/device/device_check.sh)")
@pytest.mark.parametrize("caller", ["default", "own"])
def test_an_engine_on_its_own_stream_gets_a_caller_stream_wait_around_its_span(tmp_path, runtime_version, caller):
    # The stand-in hands work to the engine's pool stream with c10 events (2.11 always, 2.13 from the
    # default stream), as the real runtime does: such a call has its engine-stream span inside a
    # caller-stream wait; a call on the caller's own stream (2.13) has one caller-stream span.
    engine = standin.make_engine(f"wait_{caller}", device=0, repeat=8)
    x = [torch.ones(1 << 18, device="cuda")]
    stream = torch.cuda.Stream() if caller == "own" else torch.cuda.default_stream()
    out = tmp_path / "waits.json"
    with torch.cuda.stream(stream), trt_trace.tracing(str(out)):
        for _ in range(10):
            torch.ops.tensorrt.execute_engine(x, engine)
        torch.cuda.synchronize()
    events = load_strict(out)
    tracks = check_trace(events)
    gpu = {e["args"]["call_id"]: e for e in events if e.get("name") == "gpu" and e["ph"] == "X"}
    waits = {e["args"]["call_id"]: e for e in events if e.get("name") == "caller stream wait" and e["ph"] == "X"}
    assert len(gpu) == 10
    own_stream = runtime_version == "2.11" or caller == "default"
    if not own_stream:
        assert waits == {} and not any(e["args"].get("engine_stream") for e in gpu.values())
        return
    assert sorted(waits) == sorted(gpu)
    caller_id = stream.stream_id & 0xFFFFFFFF
    for call_id, span in gpu.items():
        wait = waits[call_id]
        assert span["args"]["engine_stream"] is True and span["args"]["stream"] != wait["args"]["stream"]
        assert wait["args"]["stream"] == caller_id and wait["tid"] == span["tid"]
        assert tracks[span["tid"]] == f"wait_{caller} GPU"
        assert wait["ts"] <= span["ts"] and span["ts"] + span["dur"] <= wait["ts"] + wait["dur"] + 1e-3
    # The table's gpu column is the engine's own work.
    s = aggregate(events)
    by_name = dict(zip(s.names, s.stats.tolist(), strict=True))
    assert by_name[f"wait_{caller}"][7] == sum(to_ns(e["dur"]) for e in gpu.values())
