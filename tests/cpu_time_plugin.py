"""Per-test CPU time, for finding where the suite's time goes on a loaded machine (issue 32).

Wall time on a shared 2-core machine says more about the neighbours than about the suite; CPU time
does not. With TRT_TRACE_TEST_CPU=<folder> set, tests/conftest.py registers this plugin in every
pytest process (each pytest-xdist worker too), and each writes one JSON line per test to
<folder>/<worker>.jsonl: the CPU seconds of the test process (time.process_time, all its threads),
of its children that were waited for (getrusage(RUSAGE_CHILDREN): a child's own waited-for children
are in its figure), and the wall seconds, setup, call and teardown together. A fixture of module or
session scope is counted in the test that made it (or tore it down). At the end each process adds
one line with its totals, so time spent outside tests (imports, collection) is seen too; the controller
of pytest-xdist workers writes its totals alone (controller.jsonl). A pytest that a test starts records
nothing of its own: it is in that test's children.

    TRT_TRACE_TEST_CPU=/tmp/cpu bash tools/test.sh
    .venv/bin/python tests/cpu_time_plugin.py /tmp/cpu       # rank tests and files by CPU
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


class CpuTimes:
    def __init__(self, folder: Path, runs_tests: bool) -> None:
        """runs_tests: this process runs the tests (a pytest-xdist worker, or pytest without workers), not
        the controller of workers, which writes its totals alone."""
        folder.mkdir(parents=True, exist_ok=True)
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main" if runs_tests else "controller")
        if runs_tests:  # a pytest that a test starts (tests/test_launch.py) is in that test's children's figure
            os.environ.pop("TRT_TRACE_TEST_CPU", None)
        self._out = (folder / f"{worker}.jsonl").open("a", buffering=1)
        self._worker = worker

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Iterator[None]:
        cpu, children, wall = time.process_time(), _children_cpu(), time.perf_counter()
        yield
        self._write({"test": item.nodeid, "cpu": time.process_time() - cpu,
                     "children": _children_cpu() - children, "wall": time.perf_counter() - wall})

    def pytest_unconfigure(self) -> None:
        self._write({"total": True, "cpu": time.process_time(), "children": _children_cpu()})
        self._out.close()

    def _write(self, record: dict) -> None:
        record["worker"] = self._worker
        self._out.write(json.dumps(record) + "\n")


def report(folder: Path, top: int = 30) -> str:
    """Tests and files ranked by CPU seconds (own + children), and the totals."""
    tests: list[dict] = []
    totals: list[dict] = []
    for path in sorted(folder.glob("*.jsonl")):
        for line in path.read_text().splitlines():
            record = json.loads(line)
            (totals if record.get("total") else tests).append(record)
    files: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0, 0])
    for t in tests:
        entry = files[t["test"].split("::", 1)[0]]
        entry[0] += t["cpu"]
        entry[1] += t["children"]
        entry[2] += t["wall"]
        entry[3] += 1
    # The controller's children are the workers, counted in their own lines already.
    own = sum(t["cpu"] for t in totals)
    children = sum(t["children"] for t in totals if t["worker"] != "controller")
    lines = [f"{len(tests)} tests; CPU of the pytest processes {own:.1f} s, of their waited-for children "
             f"{children:.1f} s: {own + children:.1f} s in all; in tests: {sum(t['cpu'] for t in tests):.1f} s + "
             f"{sum(t['children'] for t in tests):.1f} s",
             "", f"slowest {top} tests by CPU (own + children, wall):"]
    for t in sorted(tests, key=lambda t: t["cpu"] + t["children"], reverse=True)[:top]:
        lines.append(f"{t['cpu'] + t['children']:7.2f} s  ({t['cpu']:6.2f} + {t['children']:6.2f}, wall "
                     f"{t['wall']:6.2f})  {t['test']}")
    lines += ["", f"slowest {top} files by CPU (own + children, wall, tests):"]
    for name, (cpu, children, wall, count) in sorted(files.items(), key=lambda f: f[1][0] + f[1][1],
                                                     reverse=True)[:top]:
        lines.append(f"{cpu + children:7.1f} s  ({cpu:6.1f} + {children:6.1f}, wall {wall:6.1f}, {count:3d})  {name}")
    return "\n".join(lines)


if __name__ == "__main__":
    print(report(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 30))
