"""The Chrome JSON trace: importer rules, one track per engine, nesting, metadata, summary."""

from __future__ import annotations

import torch
from conftest import call_from_threads
from trace_checks import check_trace, load_strict, to_ns

import trt_trace
from trt_trace import standin
from trt_trace.analysis.trace_summary import aggregate, load_events, summary_text


def test_trace_follows_the_importer_rules(tmp_path):
    out = tmp_path / "t.json"
    engines = [standin.make_engine(f"_run_on_acc_{i}_engine", host_us=50 * i) for i in range(3)]
    with trt_trace.tracing(str(out)):
        for _ in range(4):
            for e in engines:
                torch.ops.tensorrt.execute_engine([torch.ones(8)], e)
    events = load_strict(out)
    tracks = check_trace(events)
    assert sorted(tracks.values()) == [f"_run_on_acc_{i}_engine" for i in range(3)]  # one track per engine
    meta = [e for e in events if e["ph"] == "M" and e["name"] == "trt_trace_metadata"]
    first, last = meta[0]["args"], meta[-1]["args"]
    assert first["clock"] == "CLOCK_MONOTONIC" and first["torch_version"] == torch.__version__
    assert first["trt_trace_version"] == trt_trace.__version__
    assert last["dropped_events"] == 0 and "threads" in last
    slices = [e for e in events if e["ph"] == "X"]
    assert len([s for s in slices if s["name"] == "execute_engine"]) == 12
    assert {s["name"] for s in slices} == {"execute_engine", "workspace", "inputs", "outputs", "enqueue"}


def test_concurrent_calls_of_one_engine_never_partially_overlap_on_a_track(tmp_path):
    out = tmp_path / "t.json"
    engine = standin.make_engine("contended_engine", host_us=300)
    with trt_trace.tracing(str(out)):
        call_from_threads(engine, threads=4, calls=10)
    events = load_strict(out)
    tracks = check_trace(events)  # asserts nesting on every track
    assert set(tracks.values()) >= {"contended_engine"}
    assert all(name.startswith("contended_engine") for name in tracks.values())
    calls = [e for e in events if e["ph"] == "X" and e["name"] == "execute_engine"]
    assert len(calls) == 40 and len({c["args"]["thread"] for c in calls}) == 4


def test_summary_agrees_with_the_trace_and_the_live_counters(tmp_path):
    out = tmp_path / "t.json"
    engines = [standin.make_engine(f"sum_engine_{i}", host_us=100 * (i + 1)) for i in range(3)]
    with trt_trace.tracing(str(out)):
        for k in range(6):
            for e in engines[: 1 + k % 3]:
                torch.ops.tensorrt.execute_engine([torch.ones(8)], e)
    events = load_strict(out)
    s = aggregate(events)
    by_name = dict(zip(s.names, s.stats.tolist(), strict=True))
    for name, row in by_name.items():
        calls = [e for e in events if e["ph"] == "X" and e["name"] == "execute_engine"
                 and e["args"]["engine"] == name]
        assert row[0] == len(calls)
        assert row[2] == sum(to_ns(c["dur"]) for c in calls)
        assert abs(row[2] - sum(row[3:7])) <= 4 * row[0]  # phases add up (per-slice ns rounding)
    assert [by_name[f"sum_engine_{i}"][0] for i in range(3)] == [6, 4, 2]
    # The live table (C++ counters) and the file's table list the same calls.
    live = {ln.split()[0]: ln.split()[1] for ln in trt_trace.summary().splitlines()[1:]}
    from_file = {ln.split()[0]: ln.split()[1] for ln in summary_text(str(out)).splitlines()[1:]}
    assert live == from_file


def test_a_trace_cut_short_still_loads(tmp_path):
    out = tmp_path / "t.json"
    engine = standin.make_engine("cut_engine")
    with trt_trace.tracing(str(out)):
        for _ in range(5):
            torch.ops.tensorrt.execute_engine([torch.ones(8)], engine)
    data = out.read_bytes()
    cut = tmp_path / "cut.json"
    cut.write_bytes(data[: int(len(data) * 0.8)])  # as if killed mid-write
    events = load_events(str(cut))
    assert any(e.get("name") == "execute_engine" for e in events)


def test_batches_of_growing_size_reuse_then_replace_the_format_buffer(tmp_path):
    # The drainer drains into one buffer and the writers format into one that they replace only when
    # a batch needs more: drained batches of 1, 40 and 400 calls (each larger than any before, so
    # the formatter's buffer is replaced twice) and a small one after (reused) must all be written.
    from pftrace_checks import check_pftrace, parse  # needs the perfetto package (its protos)

    e = standin.make_engine("growing_batches_engine")
    for name in ("t.json", "t.pftrace"):
        out = tmp_path / name
        with trt_trace.tracing(str(out), gpu=False) as session:
            for calls in (1, 40, 400, 3):
                for _ in range(calls):
                    torch.ops.tensorrt.execute_engine([torch.ones(4)], e)
                session.drainer.drain_once()
        assert not session.drainer.failed
        if name.endswith(".json"):
            calls_written = [s for s in load_strict(out) if s["ph"] == "X" and s["name"] == "execute_engine"]
            check_trace(load_strict(out))
        else:
            calls_written = [s for s in check_pftrace(parse(out)).slices if s[1] == "execute_engine"]
        assert len(calls_written) == 444, name


def test_track_codes_round_trip_and_present_codes_dense_or_sparse():
    # Both writers find a batch's tracks through these: a counting pass for small engine ids, a sort
    # for sparse ones (an engine id in the millions after much engine churn); the same answer both ways.
    import numpy as np

    from trt_trace.io.tracks import decode_track, present_codes, track_codes
    from trt_trace.schema.records import RECORD_DTYPE

    for top_engine in (7, 3_000_000):
        records = np.zeros(6, dtype=RECORD_DTYPE)
        records["engine_id"] = [1, 1, 2, top_engine, top_engine, 2]
        lanes = np.array([0, 1, 0, 0, 2, 0], dtype=np.int64)
        is_gpu = np.array([False, False, True, False, False, False])
        codes, stride = track_codes(records, lanes, is_gpu)
        present = present_codes(codes)
        assert present.tolist() == np.unique(codes).tolist()
        assert {decode_track(c, stride) for c in present.tolist()} == {
            (1, 0, False), (1, 1, False), (2, 0, True), (top_engine, 0, False), (top_engine, 2, False), (2, 0, False)}


def wait_until(condition, timeout_s: float = 30.0) -> None:
    """Returns once `condition()` holds (a condition, not a length of time; fails after `timeout_s`)."""
    import time

    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "the condition never held"
        time.sleep(0.001)


def test_a_held_drainer_drains_nothing_until_released(tmp_path):
    # Drainer.held (for benchmarks that tell the drainer's work apart from the calls'): the thread
    # waits for the block's end, and the records made inside are written after it, none lost.

    e = standin.make_engine("held_drainer_engine")
    out = tmp_path / "t.json"
    with trt_trace.tracing(str(out), gpu=False) as session:
        session.drainer.drain_once()
        before = session.records_written
        with session.drainer.held():
            for _ in range(10):
                torch.ops.tensorrt.execute_engine([torch.ones(4)], e)
            woke = session.drainer.wakes
            wait_until(lambda: session.drainer.wakes > woke)  # the thread has come to drain, and waits
            assert session.records_written == before
        wait_until(lambda: session.records_written > before)  # it drains once the block has ended
    calls = [s for s in load_strict(out) if s["ph"] == "X" and s["name"] == "execute_engine"]
    assert len(calls) == 10
