"""GPU spans in the trace (layout only; the CUDA events themselves are checked on a GPU by
tools/device/gpu_timing_check.py): GPU tracks per engine, flow arrows from enqueue, the gpu column."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch
from conftest import playing_runtime
from trace_checks import check_trace, load_strict, to_ns

import trt_trace
from trt_trace import standin
from trt_trace.analysis.trace_summary import aggregate, summary_text
from trt_trace.io.writers import ChromeJsonWriter
from trt_trace.native import ops
from trt_trace.schema.records import RECORD_DTYPE, STATS_COLUMNS
from trt_trace.schema.trace_format import Flag, Phase


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
    # The same with the runtime's hand-off events made per call, and with the caches scrubbed between calls.
    per_call = ops.gpu_event_host_ns(0, 200, hand_off=2)
    scrubbed = ops.gpu_event_host_ns(0, 200, hand_off=2, scrub_kib=256)
    if torch.cuda.is_available():  # the GPU machine's CUDA build
        assert ns > 0 and sampled > 0 and handed_off > 0 and per_call > 0
        assert scrubbed != -1.0  # a difference of two passes: its sign is the machine's
    else:
        assert ns == sampled == handed_off == per_call == scrubbed == -1.0  # CPU-only build: no events to record
    assert ops.gpu_event_host_ns(-1, 10) == -1.0
    assert ops.gpu_event_host_ns(0, 0) == -1.0
    assert ops.gpu_event_host_ns(0, 10, every=0) == -1.0
    assert ops.gpu_event_host_ns(0, 10, hand_off=3) == -1.0
    assert ops.gpu_event_host_ns(0, 10, scrub_kib=-1) == -1.0


def test_gpu_timings_own_steps_are_timed_only_when_asked(tmp_path):
    # ops.gpu_self_time (benchmark support): per step, the ns the calling threads spent in it and how
    # often it ran, while switched on; nothing while off.
    device = 0 if torch.cuda.is_available() else -1
    engine = standin.make_engine("self_timed", device=device)
    x = [torch.ones(4, device="cuda" if device == 0 else "cpu")]
    ops.gpu_self_time(False)
    with trt_trace.tracing(str(tmp_path / "off.json")):
        torch.ops.tensorrt.execute_engine(x, engine)
    assert all(v == (0, 0) for v in ops.gpu_self_time(True).values())  # (switches it on)
    with trt_trace.tracing(str(tmp_path / "on.json")):
        for _ in range(5):
            torch.ops.tensorrt.execute_engine(x, engine)
    timed = ops.gpu_self_time(False)
    assert list(timed) == list(ops.GPU_SELF_STEPS)
    if device < 0:
        assert all(v == (0, 0) for v in timed.values())  # no CUDA call, no GPU event: no step ran
        return
    torch.cuda.synchronize()
    # Every call measured: a start and an end each; from the default stream the stand-in hands its work
    # to its own stream (both versions), so each call also has the engine stream's start and end.
    assert {step: times for step, (_, times) in timed.items()} == dict.fromkeys(ops.GPU_SELF_STEPS, 5)
    assert all(ns > 0 for ns, _ in timed.values())


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
    # The first measured call and every get_caller_wait_every()-th after it record the caller's pair too;
    # the others only the engine stream's (their CUDA calls cost the inference thread).
    every = ops.get_caller_wait_every()
    assert every > 1 and sorted(waits) == sorted(gpu)[::every]
    caller_id = stream.stream_id & 0xFFFFFFFF
    for call_id, span in gpu.items():
        # A span may sit on a second GPU lane ("… GPU (2)"): two calls' GPU times, each placed through
        # the clock anchor of its own drain, can overlap by a few µs, and a track's slices must nest.
        assert span["args"]["engine_stream"] is True
        assert re.fullmatch(rf"wait_{caller} GPU( \(\d+\))?", tracks[span["tid"]]), tracks[span["tid"]]
        if call_id not in waits:
            continue
        wait = waits[call_id]
        assert span["args"]["stream"] != wait["args"]["stream"]
        assert wait["args"]["stream"] == caller_id and wait["tid"] == span["tid"]
        assert wait["ts"] <= span["ts"] and span["ts"] + span["dur"] <= wait["ts"] + wait["dur"] + 1e-3
    # The table's gpu column is the engine's own work.
    s = aggregate(events)
    by_name = dict(zip(s.names, s.stats.tolist(), strict=True))
    assert by_name[f"wait_{caller}"][7] == sum(to_ns(e["dur"]) for e in gpu.values())


@pytest.mark.skipif(not torch.cuda.is_available(), reason="GPU spans need CUDA (run by tools/device/device_check.sh)")
@pytest.mark.parametrize("every", [1, 3])
def test_caller_wait_every_sets_which_measured_calls_get_a_wait(tmp_path, monkeypatch, every):
    # 2.11 hands every call's work to the engine's own stream; TRT_TRACE_CALLER_WAIT_EVERY=1 gives each
    # measured call both pairs, 3 every third (the first of the session included), and each session
    # starts its count afresh.
    monkeypatch.setenv("TRT_TRACE_CALLER_WAIT_EVERY", str(every))
    try:
        with playing_runtime("2.11"):
            engine = standin.make_engine(f"waits_every_{every}", device=0)
            x = [torch.ones(1 << 10, device="cuda")]
            for session in range(2):
                out = tmp_path / f"s{session}.json"
                with trt_trace.tracing(str(out)):
                    for _ in range(7):
                        torch.ops.tensorrt.execute_engine(x, engine)
                    torch.cuda.synchronize()
                events = load_strict(out)
                gpu = sorted(e["args"]["call_id"] for e in events if e.get("name") == "gpu" and e["ph"] == "X")
                waits = sorted(e["args"]["call_id"] for e in events
                               if e.get("name") == "caller stream wait" and e["ph"] == "X")
                assert len(gpu) == 7 and waits == gpu[::every], (session, gpu, waits)
    finally:
        ops.set_caller_wait_every(8)


# Where the caller is, call by call: runs of calls from the default stream and from an own stream,
# long and short, so that the runtime's choice changes under every state of the wait countdown.
STREAM_SWITCHES = (["default"] * 10 + ["own"] * 3 + ["default"] * 2 + ["own"] + ["default"] * 9 + ["own"] * 5
                   + ["default", "own"] * 6 + ["default"] * 20 + ["own"] * 10 + ["default"] * 8)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="GPU spans need CUDA (run by tools/device/device_check.sh)")
@pytest.mark.parametrize("every", [1, 3])
def test_every_measured_call_gets_one_span_whatever_stream_the_runtime_picks(tmp_path, every):
    # 2.13 runs the engine on its pool stream while the caller is on the default stream and on the
    # caller's own stream otherwise. The caller switches streams between calls: each of the 80 calls
    # gets exactly one gpu span, on the engine's stream where the runtime handed the work over and on
    # the caller's where not, and the caller-stream waits fall where the countdown puts them.
    assert len(STREAM_SWITCHES) == 80
    with playing_runtime("2.13"):
        engine = standin.make_engine(f"switching_{every}", device=0)
        x = [torch.ones(1 << 10, device="cuda")]
        own = torch.cuda.Stream()
        out = tmp_path / "switching.json"
        with trt_trace.tracing(str(out), gpu_every=every):
            for where in STREAM_SWITCHES:
                with torch.cuda.stream(own if where == "own" else torch.cuda.default_stream()):
                    torch.ops.tensorrt.execute_engine(x, engine)
            torch.cuda.synchronize()
    events = load_strict(out)
    ids = sorted(e["args"]["call_id"] for e in events if e.get("name") == "execute_engine" and e["ph"] == "X")
    gpu = [e for e in events if e.get("name") == "gpu" and e["ph"] == "X"]
    waits = {e["args"]["call_id"] for e in events if e.get("name") == "caller stream wait" and e["ph"] == "X"}
    assert len(ids) == 80
    measured = [k for k in range(80) if k % every == 0]  # 1 in `every` per thread and engine, the first included
    # Exactly one span per measured call, none for the others.
    assert sorted(e["args"]["call_id"] for e in gpu) == [ids[k] for k in measured]
    by_call = {e["args"]["call_id"]: e for e in gpu}
    own_id = own.stream_id & 0xFFFFFFFF
    wait_every = ops.get_caller_wait_every()
    left, expected_waits = 0, []  # the countdown of csrc/stats/gpu_sampling.h, played over the measured calls
    for k in measured:
        span = by_call[ids[k]]
        if STREAM_SWITCHES[k] == "own":  # on the caller's stream: one caller-stream span
            assert span["args"].get("engine_stream") is not True and span["args"]["stream"] == own_id, (k, span)
            left = 0
        else:  # handed to the engine's stream
            assert span["args"]["engine_stream"] is True and span["args"]["stream"] != own_id, (k, span)
            if left == 0:
                expected_waits.append(ids[k])
                left = wait_every - 1
            else:
                left -= 1
    assert sorted(waits) == expected_waits
    # The table counts every span, and the CUDA calls without one as sampled out, none else.
    s = aggregate(events)
    row = dict(zip(STATS_COLUMNS, dict(zip(s.names, s.stats.tolist(), strict=True))[f"switching_{every}"],
                   strict=True))
    assert (row["gpu_calls"], row["gpu_sampled_out"]) == (len(measured), 80 - len(measured))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="GPU spans need CUDA (run by tools/device/device_check.sh)")
def test_a_capture_of_a_call_that_records_only_the_engine_stream_is_flagged_and_replays(tmp_path):
    # 2.11 hands the work to the engine's stream: after a first call with both pairs, a measured call
    # makes no capture query before the call, so the one on the engine's stream (which joins the
    # capture through the runtime's hand-off) must see the capture: no event, the call flagged.
    with playing_runtime("2.11"):
        spec = standin.EngineSpec(name="captured_engine_only", device=0)
        engine = standin.make_engine(spec.name, device=0)
        x = torch.randn(1 << 10, device="cuda")
        side = torch.cuda.Stream()
        graph = torch.cuda.CUDAGraph()
        out = tmp_path / "captured.json"
        with trt_trace.tracing(str(out)):
            with torch.cuda.stream(side):
                torch.ops.tensorrt.execute_engine([x], engine)  # both pairs
                torch.cuda.synchronize()
                with torch.cuda.graph(graph, stream=side):
                    y = torch.ops.tensorrt.execute_engine([x], engine)[0]  # engine stream only, captured
            graph.replay()
            torch.cuda.synchronize()
    assert torch.allclose(y, standin.reference_outputs(spec, [x])[0])
    events = load_strict(out)
    calls = sorted((e for e in events if e.get("name") == "execute_engine" and e["ph"] == "X"),
                   key=lambda e: e["args"]["call_id"])
    gpu = {e["args"]["call_id"] for e in events if e.get("name") == "gpu" and e["ph"] == "X"}
    assert len(calls) == 2 and [bool(c["args"].get("captured")) for c in calls] == [False, True]
    assert gpu == {calls[0]["args"]["call_id"]}
