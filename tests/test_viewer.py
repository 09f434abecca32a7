"""`trt-trace view`: run the command, open the URL it prints in the real UI (tests/perfetto_ui.py),
ask the UI's trace processor what it loaded; Ctrl-C ends it cleanly; a busy port moves on; without
the `view` extra, one line names the install command."""

from __future__ import annotations

import os
import selectors
import signal
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path
from urllib.parse import unquote

import numpy as np
import pytest
import torch
from conftest import with_signals_ignored
from test_gpu_tracks import call_records
from test_perfetto_ui import write_records

import trt_trace
from trt_trace import standin
from trt_trace.analysis.merge import merge
from trt_trace.schema.records import RECORD_DTYPE
from trt_trace.schema.trace_format import Phase


def trt_trace_cmd() -> list[str]:
    return [os.path.join(os.path.dirname(sys.executable), "trt-trace")]


class View:
    """A running `trt-trace view` and the URL it printed."""

    def __init__(self, trace: Path | str, *extra: str, env: dict[str, str] | None = None,
                 cwd: Path | None = None, ignoring: tuple[str, ...] = ()) -> None:
        # Faulthandler: a view that hangs shows where (SIGABRT, below). `ignoring`: signals ignored from its
        # start, as a shell starts a background job. Otherwise the view inherits what the suite was given:
        # its Ctrl-C is its own handling (it stops however started), tested on purpose.
        env = {**(os.environ if env is None else env), "PYTHONFAULTHANDLER": "1"}
        command = trt_trace_cmd() + ["view", str(trace), *extra]
        self.proc = subprocess.Popen(with_signals_ignored(command, ignoring) if ignoring else command, env=env,
                                     cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # The URL line, or a failure with the view's threads if it never comes (a view that spins).
        with selectors.DefaultSelector() as sel:
            sel.register(self.proc.stdout, selectors.EVENT_READ)
            if not sel.select(timeout=60):
                self.proc.send_signal(signal.SIGABRT)
                _out, err = self.proc.communicate(timeout=20)
                raise AssertionError(f"trt-trace view printed no URL within 60 s; its threads:\n{err}")
        line = self.proc.stdout.readline()
        assert line.startswith("Perfetto UI with "), (line, self.proc.stderr.read() if self.proc.poll() else "")
        self.url = line.rsplit(" ", 1)[1].strip()

    def trace_url(self) -> str:
        """The trace's own address, from the UI's deep link."""
        return unquote(self.url.split("url=", 1)[1])

    def interrupt(self) -> tuple[int, str]:
        """Ctrl-C, as a terminal sends it; (exit code, stderr)."""
        self.proc.send_signal(signal.SIGINT)
        try:
            _out, err = self.proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.send_signal(signal.SIGABRT)  # faulthandler prints every thread's stack
            _out, err = self.proc.communicate(timeout=20)
            raise AssertionError(f"trt-trace view did not stop on Ctrl-C within 20 s; its threads:\n{err}") from None
        return self.proc.returncode, err


def synthetic_trace(path: Path) -> None:
    rows = call_records(1, 1, 1_000_000, 1_030_000, 1_200_000) + call_records(2, 2, 1_500_000, 1_530_000, 1_700_000)
    records = np.array(rows, dtype=RECORD_DTYPE)
    gpu = records["phase"] == Phase.GPU
    write_records(path, [records[~gpu], records[gpu]], ["", "view_a", "view_b"])


def cut_short(path: Path) -> None:
    """What a SIGKILL leaves: no closing ], the last event half-written."""
    data = path.read_bytes().rstrip()
    assert data.endswith(b"]")
    path.write_bytes(data[:-1].rstrip()[:-25])


def merged_trace(path: Path, tmp_path: Path, monkeypatch) -> None:
    engine = standin.make_engine("view_merged")
    inputs = []
    for rank in (0, 1):
        monkeypatch.setenv("RANK", str(rank))
        inputs.append(str(tmp_path / f"r{rank}.json"))
        with trt_trace.tracing(inputs[-1]):
            for _ in range(4):
                torch.ops.tensorrt.execute_engine([torch.ones(4)], engine)
    merge(inputs, str(path))


@pytest.mark.parametrize("kind,calls", [("json", 2), ("cut short", 2), ("pftrace", 2), ("merged", 8)])
def test_view_serves_the_trace_to_the_ui(perfetto_ui, tmp_path, monkeypatch, kind, calls):
    path = tmp_path / ("t.pftrace" if kind == "pftrace" else "t.json")
    if kind == "merged":
        merged_trace(path, tmp_path, monkeypatch)
    else:
        synthetic_trace(path)
    if kind == "cut short":
        cut_short(path)
    view = View(path, "--port", "0", "--no-browser")
    try:
        trace = perfetto_ui.open_url(view.url, f"trt-trace view {kind}")
        assert trace.scalar("select count(*) from slice where name = 'execute_engine'") == calls
        assert trace.import_errors() == [] or kind == "cut short"
        trace.close()
    finally:
        code, err = view.interrupt()
    assert code == 0 and "Traceback" not in err, err
    assert err.strip().splitlines()[-1] == "trt-trace view: stopped"


def test_a_relative_path_is_served_as_the_readme_runs_it(tmp_path):
    # `trt-trace view trace.json --no-browser` from the trace's own directory, as the README has it
    # (a relative path once made the name look-up spin forever, printing nothing).
    synthetic_trace(tmp_path / "trace.json")
    view = View("trace.json", "--no-browser", "--port", "0", cwd=tmp_path)
    try:
        with urllib.request.urlopen(view.trace_url(), timeout=30) as response:
            assert response.read() == (tmp_path / "trace.json").read_bytes()
        assert view.trace_url().endswith("/trace/trace.json")
    finally:
        code, err = view.interrupt()
    assert code == 0 and err.strip().splitlines()[-1] == "trt-trace view: stopped", err


def signal_mask(pid: int, field: str) -> int:
    """A mask of /proc/PID/status (SigIgn: ignored signals, SigCgt: caught ones); signal n is bit n-1."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1], 16)
    raise AssertionError(f"no {field} in /proc/{pid}/status")


def test_a_view_started_with_ctrl_c_ignored_still_stops_on_it(tmp_path):
    # `trt-trace view t.json &` in a script, `nohup ... &`: the shell starts it with SIGINT ignored. It says
    # "Ctrl-C stops", so it takes SIGINT itself; SIGTERM, which it does not ask for, stays as it was given.
    path = tmp_path / "t.json"
    synthetic_trace(path)
    view = View(path, "--port", "0", "--no-browser", ignoring=("SIGINT", "SIGTERM"))
    try:
        caught, ignored = signal_mask(view.proc.pid, "SigCgt"), signal_mask(view.proc.pid, "SigIgn")
        assert caught >> (signal.SIGINT - 1) & 1 and not ignored >> (signal.SIGINT - 1) & 1
        assert ignored >> (signal.SIGTERM - 1) & 1
    finally:
        code, err = view.interrupt()
    assert code == 0 and err.strip().splitlines()[-1] == "trt-trace view: stopped", err


@pytest.mark.parametrize("found", [signal.SIG_IGN, signal.SIG_DFL])
def test_the_view_puts_back_the_ctrl_c_handling_it_found(found):
    # The command also runs inside other Python programs (main(["view", ...])): after it, theirs is back.
    from trt_trace.viewer import ctrl_c_stops

    before = signal.signal(signal.SIGINT, found)
    try:
        with ctrl_c_stops():
            assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
        assert signal.getsignal(signal.SIGINT) == found
    finally:
        signal.signal(signal.SIGINT, before)


def test_two_traces_of_one_name_get_two_addresses_and_one_trace_keeps_its_own(tmp_path, monkeypatch):
    from trt_trace.viewer import ViewerServer

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    synthetic_trace(tmp_path / "a" / "t.json")
    synthetic_trace(tmp_path / "b" / "t.json")
    monkeypatch.chdir(tmp_path)
    server = ViewerServer(0)
    try:
        first = server.add("a/t.json")
        assert server.add("a/t.json") == first == server.add(str(tmp_path / "a" / "t.json"))
        second = server.add("b/t.json")
        assert second != first and second.endswith("t-2.json")
    finally:
        server.close()


def test_a_busy_port_moves_to_the_next_free_one(tmp_path):
    path = tmp_path / "t.json"
    synthetic_trace(path)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        view = View(path, "--port", str(port), "--no-browser")
        try:
            served = int(view.url.split("/")[2].split(":")[1])
            assert served > port
        finally:
            code, err = view.interrupt()
    assert code == 0 and "Traceback" not in err


def test_with_no_display_it_says_so_and_serves_on(perfetto_ui, tmp_path):
    # A GPU host over ssh: no display, so no browser (never a text browser taking the terminal).
    path = tmp_path / "t.json"
    synthetic_trace(path)
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "BROWSER")}
    view = View(path, "--port", "0", env=env)
    try:
        trace = perfetto_ui.open_url(view.url, "trt-trace view, no display")
        assert trace.scalar("select count(*) from slice where name = 'execute_engine'") == 2
        trace.close()
    finally:
        code, err = view.interrupt()
    assert code == 0 and "no browser to open here; open the URL above" in err, err


@pytest.mark.parametrize("case", ["no extra", "no file", "bad port"])
def test_without_the_extra_or_the_file_one_line_and_a_non_zero_exit(tmp_path, case):
    path = tmp_path / "t.json"
    if case == "no extra":
        synthetic_trace(path)
    if case == "bad port":
        synthetic_trace(path)
    hide = "sys.modules['viztracer'] = None; " if case == "no extra" else ""  # as if not installed
    argv = ["view", str(path), "--no-browser"] + (["--port", "70000"] if case == "bad port" else [])
    code = f"import sys; {hide}from trt_trace.cli import main; sys.exit(main({argv!r}))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert proc.returncode == (2 if case == "bad port" else 1) and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    expected = {"no extra": "pip install 'trt_trace[view]'", "no file": "no such file",
                "bad port": "is not a port"}[case]
    assert expected in lines[0] and lines[0].startswith("trt-trace view: ")


def test_a_missing_browser_fails_the_ui_tests_loudly(tmp_path):
    # CI must never pass by skipping them: with no Chromium the fixture fails, naming the set-up step.
    tests = Path(__file__).parent
    env = dict(os.environ, TRT_TRACE_CHROMIUM=str(tmp_path / "no-chromium"))
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tests / "test_perfetto_ui.py"),
               "-k", "omnibox and json"]
    proc = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout[-2000:]
    assert "no Chromium at" in proc.stdout and "tools/setup_env.sh" in proc.stdout
    assert "1 error" in proc.stdout and "skipped" not in proc.stdout
