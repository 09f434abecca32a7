"""The suite gives one result however it is launched: from a terminal, as a shell's background job
(SIGINT ignored), under nohup, setsid or a process manager (SIGTERM ignored too), with no terminal at
all (CI). Each test that signals a child sets in the child what it relies on (conftest.TERMINAL_SIGNALS),
or tests the tool's own handling on purpose (`trt-trace view` takes Ctrl-C itself). Here a sample of
those tests runs in a pytest started the hard way, and must pass."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import with_signals_ignored

HERE = Path(__file__).resolve().parent

# One of each way a test signals a child: Ctrl-C to `trt-trace view`, a program's SIGINT and SIGTERM to
# itself while traced (autostart), SIGTERM with per-layer timing on, SIGUSR1 to the flight recorder.
SAMPLE = [
    "test_viewer.py::test_a_relative_path_is_served_as_the_readme_runs_it",
    "test_viewer.py::test_a_busy_port_moves_to_the_next_free_one",
    "test_robustness.py::test_exit_paths_leave_a_loadable_trace[SIGINT-True-.json]",
    "test_robustness.py::test_exit_paths_leave_a_loadable_trace[SIGTERM-True-.pftrace]",
    "test_verb_inputs_outputs.py::test_ctrl_c_on_the_demo_is_one_line_and_no_traceback",
    "test_layers.py::test_nothing_is_left_in_the_temporary_directory[SIGTERM]",
    "test_flight_recorder.py::test_sigusr1_dumps_and_the_program_runs_on",
]
IGNORED = ("SIGINT", "SIGTERM", "SIGUSR1")


def test_the_wrapper_starts_a_program_with_the_signals_ignored():
    code = f"import signal; print(*(signal.getsignal(getattr(signal, n)) is signal.SIG_IGN for n in {IGNORED!r}))"
    proc = subprocess.run(with_signals_ignored([sys.executable, "-c", code], IGNORED), capture_output=True, text=True,
                          timeout=60)
    assert proc.stdout.split() == ["True"] * len(IGNORED), proc.stderr


def test_signal_sending_tests_pass_when_the_suite_starts_with_signals_ignored(tmp_path):
    # A session of its own (setsid: no controlling terminal), no stdin, SIGINT, SIGTERM and SIGUSR1 ignored.
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
               *(str(HERE / t) for t in SAMPLE)]
    proc = subprocess.run(with_signals_ignored(command, IGNORED), capture_output=True, text=True, timeout=600,
                          cwd=tmp_path, stdin=subprocess.DEVNULL, start_new_session=True,
                          env={k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")})
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert f"{len(SAMPLE)} passed" in proc.stdout, proc.stdout[-2000:]
