"""examples/serve.py, the program the README traces: the stand-in package served in a loop with
--calls, --threads and --sleep, traced by TRT_TRACE_OUT alone (tests/test_readme.py runs the README's
commands with it as written)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
from conftest import demo_package_now

from trt_trace.analysis.trace_summary import summary_text

SERVE = Path(__file__).resolve().parent.parent / "examples" / "serve.py"


def _serve(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRT_TRACE_") or k == "TRT_TRACE_CACHE_DIR"}
    env["TRT_TRACE_OUT"] = str(tmp_path / "trace.json")
    return subprocess.run([sys.executable, str(SERVE), *args], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)


def test_every_thread_serves_its_calls_and_each_is_traced(tmp_path):
    _path, specs = demo_package_now()  # the package serve.py builds (cached by content)
    p = _serve(tmp_path, "--calls", "3", "--threads", "2", "--sleep", "0.001")
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    assert p.stdout.startswith("served 6 calls of ") and "on 2 thread(s)" in p.stdout
    doc = orjson.loads(summary_text(str(tmp_path / "trace.json"), json=True))
    assert sorted(r["engine"] for r in doc["engines"]) == sorted(s.name for s in specs)
    assert {r["calls"] for r in doc["engines"]} == {6} and doc["ended"] == "closed"


def test_a_bad_flag_is_one_line_before_any_work(tmp_path):
    for bad, said in ((["--calls", "0"], "give a number of calls >= 1"), (["--threads", "x"], "'x' is not a number"),
                      (["--sleep", "-1"], "give seconds >= 0"), (["--sleep", "nan"], "give seconds >= 0")):
        p = _serve(tmp_path, *bad)
        assert p.returncode == 2 and said in p.stderr and "Traceback" not in p.stderr, (bad, p.stderr)
        assert not (tmp_path / "trace.json").exists()
