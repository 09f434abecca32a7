"""torch.ops.trt_trace.*, the tensorrt:: aliases and the Python API."""

from __future__ import annotations

import re

import pytest
import torch
from conftest import call_from_threads

import trt_trace
from trt_trace import standin
from trt_trace.native import ops
from trt_trace.schema.records import STATS_COLUMNS


def run_engine(name, n, host_us=0):
    engine = standin.make_engine(name, host_us=host_us)
    for _ in range(n):
        torch.ops.tensorrt.execute_engine([torch.ones(4)], engine)
    return engine


def test_switch_on_and_off():
    assert torch.ops.trt_trace.get_profile_execution() is False
    torch.ops.trt_trace.set_profile_execution(True)
    assert trt_trace.get_profile_execution() is True
    torch.ops.trt_trace.set_profile_execution(False)
    assert ops.get_profile_execution() is False


def test_dump_engine_timing_prints_and_returns_the_table(capfd):
    torch.ops.trt_trace.set_profile_execution(True)
    run_engine("slow_engine", 3, host_us=2000)
    run_engine("fast_engine", 5)
    torch.ops.trt_trace.set_profile_execution(False)
    text = torch.ops.trt_trace.dump_engine_timing()
    printed = capfd.readouterr().out
    assert text in printed
    lines = text.splitlines()
    assert lines[0].split() == ["engine", "calls", "total", "ms", "share", "%", "cum", "%", "p50", "ms", "p99", "ms",
                                "workspace", "inputs", "outputs", "enqueue"]
    rows = {ln.split()[0]: ln.split()[1:] for ln in lines[1:]}
    assert list(rows)[:2] == ["slow_engine", "fast_engine"]  # sorted by total
    assert rows["slow_engine"][0] == "3" and rows["fast_engine"][0] == "5" and rows["ALL"][0] == "8"
    assert float(rows["slow_engine"][1]) >= 6.0  # 3 calls x 2 ms launch cost
    # The phases add up to the total (to rounding of the printed figures).
    for name in ("slow_engine", "fast_engine", "ALL"):
        total, phases = float(rows[name][1]), [float(v) for v in rows[name][6:10]]
        assert abs(total - sum(phases)) <= 0.003


def test_reset_zeroes_the_counters():
    torch.ops.trt_trace.set_profile_execution(True)
    run_engine("reset_engine", 2)
    torch.ops.trt_trace.set_profile_execution(False)
    assert "reset_engine" in trt_trace.summary()
    torch.ops.trt_trace.reset()
    assert "reset_engine" not in trt_trace.summary()
    assert re.search(r"^ALL\s+0\s", trt_trace.summary(), re.M)


def test_counters_from_many_threads_add_up_across_resets():
    # Each thread counts into its own table; a snapshot sums them, reset() subtracts a baseline, and
    # the tables of exited threads go to new ones with their counts: every call counted once.

    engine = standin.make_engine("threads_counter_engine")
    col = {name: i for i, name in enumerate(STATS_COLUMNS)}

    def row() -> list[int]:
        names = ops.engine_names()
        if "threads_counter_engine" not in names:
            return [0] * len(STATS_COLUMNS)
        return ops.engine_stats()[names.index("threads_counter_engine")].tolist()

    ops.set_profile_execution(True)
    try:
        call_from_threads(engine, threads=4, calls=25)
        first = row()
        assert first[col["calls"]] == 100
        host = sum(first[col[p]] for p in ("workspace_ns", "inputs_ns", "outputs_ns", "enqueue_ns"))
        assert first[col["total_ns"]] == host > 0  # the phases partition each call
        ops.reset()
        assert row()[col["calls"]] == 0
        # New threads take over the exited threads' tables, counts and all.
        call_from_threads(engine, threads=3, calls=10)
        assert row()[col["calls"]] == 30
    finally:
        ops.set_profile_execution(False)


def test_tensorrt_namespace_aliases():
    torch.ops.tensorrt.set_profile_execution(True)
    assert trt_trace.get_profile_execution()
    run_engine("alias_engine", 1)
    torch.ops.tensorrt.set_profile_execution(False)
    assert "alias_engine" in torch.ops.tensorrt.dump_engine_timing()


def test_context_manager_and_errors(tmp_path):
    out = tmp_path / "ctx.json"
    with trt_trace.tracing(str(out)) as session:
        assert trt_trace.active() is session
        with pytest.raises(trt_trace.TraceError, match="already tracing"):
            trt_trace.start(str(tmp_path / "other.json"))
        run_engine("ctx_engine", 2)
    assert trt_trace.active() is None and not trt_trace.get_profile_execution()
    assert "ctx_engine" in trt_trace.summary(str(out))
    with pytest.raises(trt_trace.TraceError, match="does not exist"):
        trt_trace.start(str(tmp_path / "missing" / "t.json"))
    with pytest.raises(trt_trace.TraceError, match="is a directory"):
        trt_trace.start(str(tmp_path))
    assert trt_trace.stop() is None


BAD_KEYWORDS = [
    ("buffer_events", "abc", "buffer_events must be a positive number of events per thread, not 'abc'"),
    ("buffer_events", 0, "buffer_events must be a whole number of events per thread from 1"),
    ("buffer_events", -5, "buffer_events must be a whole number"),
    ("buffer_events", 2.5, "buffer_events must be a whole number"),
    ("buffer_events", 1 << 31, "to 1073741824"),
    ("nvtx", "yes", "nvtx must be True or False, not 'yes'"),
    ("gpu", 2, "gpu must be True or False, not 2"),
    ("split", None, "split must be True or False, not None"),
    ("max_bytes", -1, "max_bytes must be a whole number of bytes from 0"),
    ("max_bytes", "1G", "max_bytes must be a whole number of bytes"),
    ("format", "xml", "unknown trace format 'xml'; use json or perfetto"),
    ("format", 3, "format must be 'json', 'perfetto' or None"),
    ("gpu_every", "8", "gpu_every must be a whole number of calls from 1"),
]


@pytest.mark.parametrize("how", ["start", "tracing", "flight"])
@pytest.mark.parametrize("keyword,value,words", BAD_KEYWORDS)
def test_every_keyword_of_start_tracing_and_flight_checks_its_value(tmp_path, how, keyword, value, words):
    path = str(tmp_path / "t.json")
    if how == "flight" and keyword == "max_bytes":  # flight()'s own max_bytes is its memory cap (below)
        words = words.replace("from 0", "from 1")
    with pytest.raises(trt_trace.TraceError) as raised:
        if how == "start":
            trt_trace.start(path, **{keyword: value})
        elif how == "tracing":
            with trt_trace.tracing(path, **{keyword: value}):
                pass
        else:
            trt_trace.flight(30, path, **{keyword: value})
    message = str(raised.value)
    assert "\n" not in message and words in message, message
    assert trt_trace.active() is None and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("call,words", [
    (lambda p: trt_trace.flight("30", p), "window must be a positive number of seconds, not '30'"),
    (lambda p: trt_trace.flight(float("nan"), p), "window must be a positive number of seconds, not nan"),
    (lambda p: trt_trace.flight(float("inf"), p), "not inf"),
    (lambda p: trt_trace.flight(True, p), "not True"),
    (lambda p: trt_trace.flight(30, p, on_exit="no"), "on_exit must be True or False, not 'no'"),
    (lambda p: trt_trace.flight(30, p, max_bytes=0), "max_bytes must be a whole number of bytes from 1"),
    (lambda p: trt_trace.flight(30, p, buffer=5), "flight() takes no keyword 'buffer'"),
    (lambda p: trt_trace.start(42), "the trace path must be a file name such as 'trace.json', not 42"),
])
def test_flights_own_keywords_and_the_path_check_theirs(tmp_path, call, words):
    with pytest.raises(trt_trace.TraceError) as raised:
        call(str(tmp_path / "f.json"))
    assert "\n" not in str(raised.value) and words in str(raised.value), str(raised.value)
    assert trt_trace.active() is None


def test_keywords_take_what_the_environment_takes_and_a_path_object(tmp_path):
    with trt_trace.tracing(tmp_path / "t.json", buffer_events="256k") as session:
        assert ops.buffer_capacity() == 256 * 1024 and session.path == str(tmp_path / "t.json")


def test_no_setting_of_a_session_outlives_it(tmp_path, monkeypatch):
    # Each C++ switch a session sets from its Settings is back as the session found it after stop().
    monkeypatch.setenv("TRT_TRACE_CALLER_WAIT_EVERY", "3")
    monkeypatch.setenv("TRT_TRACE_ENGINE_STREAM", "0")
    ops.set_buffer_capacity(1 << 16)
    ops.set_gpu_every(1)
    ops.set_caller_wait_every(8)
    ops.set_engine_stream_spans(True)
    ops.set_gpu_timing(True)
    ops.set_nvtx(False)
    before = ops.session_switches()
    with trt_trace.tracing(str(tmp_path / "t.json"), buffer_events=1024, gpu_every=4, nvtx=True, gpu=False):
        assert (ops.buffer_capacity(), ops.get_gpu_every(), ops.get_caller_wait_every()) == (1024, 4, 3)
        assert not ops.get_engine_stream_spans() and not ops.get_gpu_timing() and ops.get_nvtx()
    assert (ops.buffer_capacity(), ops.get_gpu_every(), ops.get_caller_wait_every()) == (1 << 16, 1, 8)
    assert ops.get_engine_stream_spans() and not ops.get_nvtx()
    assert torch.ops.trt_trace._gpu_timing_switch()  # on again (a CPU build has no GPU timing but keeps the switch)
    assert ops.session_switches() == before
