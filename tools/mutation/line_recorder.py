"""Which tests run which lines of the mutated module (mutants.py --select lines). mutants.py copies
this file into its copy of the installed package's folder, whose sitecustomize.py calls install() in
every Python process that starts there during the recording run: the pytest process (through
mutants_plugin.py, which also names the running test) and every child process a test starts (CLI
runs, traced programs: they inherit the test's name in TRT_MUTANTS_TEST).

The record: one file per process under TRT_MUTANTS_LINES, a `line<TAB>test` row written and flushed
the first time a test runs a line, so that a child that is killed or leaves by os._exit has already
written what it ran. The test "" is code run outside any test (collection, imports)."""

from __future__ import annotations

import os
import sys
import threading
from typing import Any

TEST_ENV = "TRT_MUTANTS_TEST"
TARGET_ENV = "TRT_MUTANTS_TARGET"  # the mutated module's file in the copy
LINES_ENV = "TRT_MUTANTS_LINES"  # folder of the record; unset: not recording


class Recorder:
    def __init__(self, target: str, folder: str) -> None:
        self.target = target
        self.folder = folder
        self.test = os.environ.get(TEST_ENV, "")
        self.seen: set[tuple[str, int]] = set()
        self.pid = -1
        self.out: Any = None

    def _write(self, line: int) -> None:
        if self.pid != os.getpid():  # a forked child writes a file of its own
            self.pid = os.getpid()
            self.out = open(os.path.join(self.folder, f"{self.pid}.lines"), "a", buffering=1)  # noqa: SIM115
        self.out.write(f"{line}\t{self.test}\n")

    def global_trace(self, frame: Any, event: str, arg: Any) -> Any:
        return self.local_trace if frame.f_code.co_filename == self.target else None

    def local_trace(self, frame: Any, event: str, arg: Any) -> Any:
        if event == "line":
            key = (self.test, frame.f_lineno)
            if key not in self.seen:
                self.seen.add(key)
                self._write(frame.f_lineno)
        return self.local_trace


recorder: Recorder | None = None


def install() -> None:
    """Records this process's lines of the target module, where a recording run asked for it."""
    global recorder
    target, folder = os.environ.get(TARGET_ENV), os.environ.get(LINES_ENV)
    if recorder is not None or not target or not folder:
        return
    recorder = Recorder(target, folder)
    sys.settrace(recorder.global_trace)
    threading.settrace(recorder.global_trace)
