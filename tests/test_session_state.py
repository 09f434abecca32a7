"""The session's state machine (csrc/session/session_control.h): idle -> recording -> stopping -> idle, the
flight recorder a mode of recording; one op starts a session, one stops it; each invalid transition is one
line or a defined outcome, and leaves the running session (if any) as it was."""

from __future__ import annotations

import json
import os

import pytest
import torch

import trt_trace
from trt_trace import standin
from trt_trace.native import ops
from trt_trace.runtime import session as session_module
from trt_trace.runtime.config import Settings

# Ops that only read (a clock, a fact of the build, counts): everything else a start or a stop calls changes
# state and must be its one op.
READING_OPS = {"_clock_now_ns", "_gpu_timing_built", "_writer_status", "_thread_counts", "_metrics_status"}


def calls_of_ops(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    called: list[str] = []
    real = ops._op

    def counted(name: str):
        called.append(name)
        return real(name)

    monkeypatch.setattr(ops, "_op", counted)
    return called


def calls_in(path) -> int:  # noqa: ANN001
    return sum(1 for e in json.loads(path.read_text()) if e.get("ph") == "X" and e.get("name") == "execute_engine")


def run_engine(calls: int = 3) -> None:
    engine = standin.make_engine("state_engine")
    for _ in range(calls):
        torch.ops.tensorrt.execute_engine([torch.ones(4)], engine)


@pytest.mark.parametrize("flight", [False, True])
def test_one_op_starts_a_session_and_one_stops_it(tmp_path, monkeypatch, flight):
    called = calls_of_ops(monkeypatch)
    if flight:
        trt_trace.flight(30, str(tmp_path / "f.json"), layers=2)
    else:
        trt_trace.start(tmp_path / "t.json", layers=2)
    assert [c for c in called if c not in READING_OPS] == ["_session_start"]
    assert ops.session_state() == ("recording", flight)
    run_engine()
    called.clear()
    trt_trace.stop()
    assert [c for c in called if c not in READING_OPS] == ["_session_stop"]
    assert ops.session_state() == ("idle", False)
    assert not ops.get_recording() and not ops.get_profile_execution()


def test_the_end_record_is_built_natively_with_the_sessions_fields(tmp_path):
    trt_trace.start(tmp_path / "t.json", layers=1)
    run_engine(2)
    trt_trace.layers(0)  # on at some point: the end record reports the windows, 0 calls per engine now
    trt_trace.stop()
    events = json.loads((tmp_path / "t.json").read_text())
    end = [e["args"] for e in events if e.get("name") == "trt_trace_metadata"][-1]
    assert list(end) == ["layers", "monotonic_ns", "wall_ns", "records_drained", "dropped_events", "dropped_calls",
                         "threads", "write_failed", "gpu_clock", "ended", "files", "records_written",
                         "events_not_written"]
    assert end["ended"] == "closed" and end["files"] == [str(tmp_path / "t.json")] and not end["write_failed"]
    assert end["layers"]["calls_per_engine"] == 0 and end["records_drained"] == end["records_written"] > 0


def test_stop_when_idle_is_nothing_from_the_api_and_one_line_from_the_op():
    assert trt_trace.stop() is None
    with pytest.raises(RuntimeError, match="trt_trace: no session is recording; start one first"):
        ops.session_stop(False, False)
    with pytest.raises(RuntimeError, match="trt_trace: no session is recording: per-layer timing"):
        ops.session_set_layers(3)
    assert ops.session_state() == ("idle", False)


def test_start_when_recording_is_one_line_and_the_session_goes_on(tmp_path):
    session = trt_trace.start(tmp_path / "t.json")
    run_engine(2)
    with pytest.raises(trt_trace.TraceError, match=r"^already tracing into .*t\.json; call trt_trace\.stop\(\) first$"):
        trt_trace.start(tmp_path / "u.json")
    refused, message, _ = ops.session_start(Settings().native(), str(tmp_path / "v.json"), "json", False, 0, True,
                                            os.getpid(), b"")
    assert (refused, message) == (1, "a session is already recording; stop it first")
    assert not (tmp_path / "u.json").exists() and not (tmp_path / "v.json").exists()
    assert ops.session_state() == ("recording", False) and ops.get_recording()
    run_engine(2)
    trt_trace.stop()
    assert calls_in(tmp_path / "t.json") == 4 and session.failure is None


def test_a_file_that_cannot_be_opened_leaves_the_session_idle(tmp_path):
    before = ops.session_switches()
    refused, message, _ = ops.session_start(Settings().native(), str(tmp_path / "no" / "t.json"), "json", False, 0,
                                            True, os.getpid(), b"")
    assert refused == 4 and "[Errno 2]" in message
    assert ops.session_state() == ("idle", False) and ops.session_switches() == before and not ops.get_recording()


def test_a_fork_while_the_parent_stops_leaves_the_child_without_a_session(tmp_path, monkeypatch):
    # The child of a fork between the stop's start and its end (the session no longer active, its file not
    # ended yet): no session, nothing recording, nothing restarted even with {pid} in the path; the parent's
    # stop ends its file as if no fork had been.
    report = tmp_path / "child.json"
    real_stop = session_module.Session.stop

    def stop_with_a_fork(self, report_limit: bool = True) -> None:
        pid = os.fork()
        if pid == 0:
            try:
                run_engine(1)
                facts = {"active": trt_trace.active() is not None, "state": list(ops.session_state()),
                         "recording": ops.get_recording(), "switch": ops.get_profile_execution()}
                report.write_text(json.dumps(facts))
            finally:
                os._exit(0)
        os.waitpid(pid, 0)
        real_stop(self, report_limit)

    monkeypatch.setattr(session_module.Session, "stop", stop_with_a_fork)
    trt_trace.start(str(tmp_path / "t.{pid}.json"))
    run_engine(2)
    trt_trace.stop()
    assert json.loads(report.read_text()) == {"active": False, "state": ["idle", False], "recording": False,
                                              "switch": False}
    assert [p.name for p in tmp_path.glob("t.*.json")] == [f"t.{os.getpid()}.json"]
    assert calls_in(tmp_path / f"t.{os.getpid()}.json") == 2


def test_active_shows_the_session_exactly_while_its_calls_are_recorded(tmp_path, monkeypatch):
    # Issue 35 item 1: a target counting its calls by polling trt_trace.active() counted fewer than its capture
    # held. The start op turned recording on before Python set the session, and stop() cleared it before the
    # stop op turned recording off: calls right after the one and right before the other went into the trace
    # while active() said None. A call on each side of each op, looked at before and after it runs:
    engine = standin.make_engine("shown_engine")
    seen: list[tuple[bool, bool]] = []

    def call_and_look() -> None:
        before = trt_trace.active() is not None
        torch.ops.tensorrt.execute_engine([torch.ones(4)], engine)
        seen.append((before, trt_trace.active() is not None))

    real_start, real_stop = session_module.Session.start, session_module.Session.stop

    def start(self) -> None:  # noqa: ANN001
        call_and_look()
        real_start(self)
        call_and_look()

    def stop(self, report_limit: bool = True) -> None:  # noqa: ANN001
        call_and_look()
        real_stop(self, report_limit)
        call_and_look()

    monkeypatch.setattr(session_module.Session, "start", start)
    monkeypatch.setattr(session_module.Session, "stop", stop)
    path = tmp_path / "t.json"
    session = trt_trace.start(str(path))
    assert trt_trace.active() is session
    call_and_look()
    trt_trace.stop()
    assert trt_trace.active() is None
    # Outside the ops: not shown, not recorded; between them: shown, before and after, and recorded.
    assert seen == [(False, False), (True, True), (True, True), (True, True), (False, False)]
    assert calls_in(path) == 3
