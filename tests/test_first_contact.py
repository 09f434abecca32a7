"""What a new user meets first: import installs everything, a file holds only its own session's
calls, a forked child keeps its parent's settings, a cut file adds up, readable process names."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import orjson
import torch
from conftest import run_python, trt_trace_cli

import trt_trace
from trt_trace import standin
from trt_trace.analysis.trace_summary import aggregate, load_events, summary_text
from trt_trace.native import ops
from trt_trace.schema.records import STATS_COLUMNS

FRESH_IMPORT = """
import json, torch
{import_line}
out = {{
    "listed": sorted(n for n in dir(torch.ops.tensorrt) if "profil" in n.lower() or "timing" in n.lower()),
    # The ops dir() lists (the namespace object's own attributes, such as `name`, are not ops).
    "trt_trace_listed": sorted(n for n in dir(torch.ops.trt_trace) if not n.startswith("_")
                               and isinstance(getattr(torch.ops.trt_trace, n), torch._ops.OpOverloadPacket)),
    "ops": hasattr(torch.ops.trt_trace, "set_profile_execution"),
}}
from trt_trace import standin
e = standin.make_engine("first_contact_engine")
with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
    torch.ops.tensorrt.execute_engine([torch.ones(4)], e)
out["scopes"] = sorted({{ev.name for ev in prof.events() if ev.name.startswith("trt::")}})
torch.ops.tensorrt.set_profile_execution(True)
torch.ops.tensorrt.execute_engine([torch.ones(4)], e)
out["table"] = torch.ops.tensorrt.dump_engine_timing()
print(json.dumps(out))
"""


PUBLIC_TRT_TRACE_OPS = (
    "set_profile_execution", "get_profile_execution", "dump_engine_timing", "timing_table", "reset", "set_nvtx",
    "get_nvtx", "set_gpu_timing", "get_gpu_timing", "set_gpu_every", "get_gpu_every", "set_caller_wait_every",
    "get_caller_wait_every", "gpu_clock_stats",
)


def _fresh_import(import_line: str) -> dict:
    proc = run_python(FRESH_IMPORT.format(import_line=import_line))
    assert proc.returncode == 0, proc.stderr
    return orjson.loads(proc.stdout.splitlines()[-1])


def test_import_installs_ops_aliases_hook_and_profiler_scopes():
    for line in ("import trt_trace", "import torch, trt_trace"):
        out = _fresh_import(line)
        assert out["listed"] == ["dump_engine_timing", "set_profile_execution"], line
        # Every public op, listed by dir() right after the import (torch lists only ops looked up).
        assert out["trt_trace_listed"] == sorted(PUBLIC_TRT_TRACE_OPS), line
        assert out["ops"]
        assert {"trt::first_contact_engine/execute_engine", "trt::first_contact_engine/enqueue"} <= set(
            out["scopes"]), out["scopes"]
        assert "first_contact_engine" in out["table"]


def test_import_alone_pulls_in_torch_but_the_start_up_hook_does_not(tmp_path):
    proc = run_python("import sys, trt_trace; print('torch' in sys.modules)")
    assert proc.returncode == 0 and proc.stdout.strip() == "True", proc.stderr
    proc = run_python("import sys; print('torch' in sys.modules)", {"TRT_TRACE_OUT": str(tmp_path / "t.json")})
    assert proc.stdout.strip() == "False" and not (tmp_path / "t.json").exists()


def _calls_in(path) -> list[dict]:
    return [e for e in load_events(str(path)) if e.get("ph") == "X" and e.get("name") == "execute_engine"]


def test_the_switch_alone_counts_but_records_nothing_for_a_later_file(tmp_path):
    ops.set_recording(False)  # as a user's process: no session, only the switch
    engine = standin.make_engine("switch_then_session")
    ops.set_profile_execution(True)
    for _ in range(3):
        torch.ops.tensorrt.execute_engine([torch.ones(4)], engine)
    ops.set_profile_execution(False)
    assert ops.pending() == 0  # the switch alone writes into the engine table only
    assert "switch_then_session" in trt_trace.summary()
    out = tmp_path / "t.json"
    with trt_trace.tracing(str(out)):
        for _ in range(2):
            torch.ops.tensorrt.execute_engine([torch.ones(4)], engine)
    assert len(_calls_in(out)) == 2
    # The switch as the session found it (off) comes back after it.
    assert not trt_trace.get_profile_execution()


def test_records_left_in_the_rings_never_reach_a_later_file(tmp_path):
    # The hook tests' way: recording into the rings with no session (conftest), nothing drained.
    engine = standin.make_engine("left_in_rings")
    ops.set_profile_execution(True)
    for _ in range(3):
        torch.ops.tensorrt.execute_engine([torch.ones(4)], engine)
    ops.set_profile_execution(False)
    assert ops.pending() > 0
    out = tmp_path / "t.json"
    with trt_trace.tracing(str(out)):
        for _ in range(2):
            torch.ops.tensorrt.execute_engine([torch.ones(4)], engine)
    assert len(_calls_in(out)) == 2


def test_a_call_that_outlives_its_session_is_not_in_the_next_file(tmp_path):
    slow = standin.make_engine("outlives_session", host_us=300_000)
    fast = standin.make_engine("next_session_engine")
    first, second = tmp_path / "first.json", tmp_path / "second.json"
    trt_trace.start(str(first))
    with standin.EnqueueGate() as gate:
        worker = threading.Thread(target=lambda: torch.ops.tensorrt.execute_engine([torch.ones(4)], slow))
        worker.start()
        gate.wait_for(1)  # the slow call is under way, held in its enqueue
        trt_trace.stop()
        trt_trace.start(str(second))
    worker.join()
    torch.ops.tensorrt.execute_engine([torch.ones(4)], fast)
    trt_trace.stop()
    names = [e["args"]["engine"] for e in _calls_in(second)]
    assert names == ["next_session_engine"], names
    assert _calls_in(first) == []  # it ended after the first session had finished its file


FORK = """
import os, sys, torch, trt_trace
from trt_trace import standin
standin.load()
e = standin.make_engine("forked_engine")
trt_trace.start(sys.argv[1], max_bytes=16_000, split=True, buffer_events=4096, format="json")
pid = os.fork()
if pid == 0:
    s = trt_trace.active()
    print("child", s.settings.max_bytes, s.settings.split, s.settings.buffer_events, s.settings.format, flush=True)
    for _ in range(4):  # drained between rounds: the limit is checked between batches
        for _ in range(50):
            torch.ops.tensorrt.execute_engine([torch.ones(4)], e)
        s.drainer.drain_once()
    trt_trace.stop()
    os._exit(0)
os.waitpid(pid, 0)
trt_trace.stop()
print("child_pid", pid)
"""


def test_a_forked_child_keeps_every_setting_of_its_parent(tmp_path):
    template = str(tmp_path / "t_{pid}.json")
    proc = subprocess.run([sys.executable, "-c", FORK, template], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = dict(line.split(" ", 1) for line in proc.stdout.splitlines())
    assert lines["child"] == "16000 True 4096 json"
    child = lines["child_pid"]
    # The size limit and its split reached the child: its 200 calls fill numbered parts.
    parts = sorted(p.name for p in tmp_path.glob(f"t_{child}*.json"))
    assert len(parts) >= 2, parts
    assert sum(len(_calls_in(tmp_path / p)) for p in parts) == 200


def _cut_inside_a_call(src, dst) -> int:
    """Writes dst as src cut by a kill inside its last call: that call's event and one phase kept."""
    events = orjson.loads(src.read_bytes())
    calls = [e for e in events if e.get("ph") == "X" and e.get("name") == "execute_engine"]
    victim = calls[-1]["args"]["call_id"]
    own = [e for e in events if e.get("ph") == "X" and e.get("args", {}).get("call_id") == victim]
    rest = [e for e in events if e not in own]
    phases = [e for e in own if e["name"] not in ("execute_engine", "gpu")]
    assert len(phases) >= 2  # so that one of them is missing after the cut
    kept = rest + [next(e for e in own if e["name"] == "execute_engine"), phases[0]]
    text = b"[\n" + b",\n".join(orjson.dumps(e) for e in kept) + b",\n" + orjson.dumps(phases[1])[:20]
    dst.write_bytes(text)
    return len(calls)


def test_a_file_cut_inside_a_call_adds_up_and_says_what_it_left_out(tmp_path):
    whole, cut = tmp_path / "whole.json", tmp_path / "cut.json"
    engine = standin.make_engine("cut_engine", host_us=200)
    with trt_trace.tracing(str(whole)):
        for _ in range(5):
            torch.ops.tensorrt.execute_engine([torch.ones(4)], engine)
    n = _cut_inside_a_call(whole, cut)
    summary = aggregate(load_events(str(cut)))
    row = summary.stats[summary.names.index("cut_engine")]
    cols = {name: i for i, name in enumerate(STATS_COLUMNS)}
    assert row[cols["calls"]] == n - 1 and summary.partial_calls == 1
    phases = sum(row[cols[p]] for p in ("workspace_ns", "inputs_ns", "outputs_ns", "enqueue_ns"))
    assert row[cols["total_ns"]] == phases
    text = summary_text(str(cut))
    assert "cut short: 1 partial call left out" in text.splitlines()
    cli = subprocess.run([*trt_trace_cli(), "summary", str(cut)], capture_output=True, text=True,
                         cwd=tmp_path)
    assert cli.returncode == 0 and "cut short: 1 partial call left out" in cli.stdout, cli.stderr
    merged = tmp_path / "merged.json"
    cli = subprocess.run([*trt_trace_cli(), "merge", str(cut), "-o", str(merged)],
                         capture_output=True, text=True, cwd=tmp_path)
    assert cli.returncode == 0 and "cut short: 1 partial call left out" in cli.stdout, cli.stderr
    assert len(_calls_in(merged)) == n - 1
    assert "cut short" not in summary_text(str(merged))  # the merge already left it out


NAMED = "import torch; from trt_trace import standin; e = standin.make_engine('named'); " \
        "torch.ops.tensorrt.execute_engine([torch.ones(4)], e)"


def _process_name(path) -> str:
    return next(e["args"]["name"] for e in load_events(str(path)) if e.get("name") == "process_name")


def test_processes_are_named_after_what_ran(tmp_path):
    out = tmp_path / "c.json"
    proc = run_python(NAMED, {"TRT_TRACE_OUT": str(out)})
    assert proc.returncode == 0, proc.stderr
    assert _process_name(out) == "python"  # `python -c`; the viewers show the pid beside it
    script = tmp_path / "serve_model.py"
    script.write_text(NAMED)
    out = tmp_path / "s.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRT_TRACE_")}
    subprocess.run([sys.executable, str(script)], env={**env, "TRT_TRACE_OUT": str(out)}, check=True, cwd=tmp_path)
    assert _process_name(out) == "serve_model.py"
    (tmp_path / "servepkg").mkdir()
    (tmp_path / "servepkg" / "__init__.py").write_text("")
    (tmp_path / "servepkg" / "worker.py").write_text(NAMED)
    out = tmp_path / "m.json"
    subprocess.run([sys.executable, "-m", "servepkg.worker"], env={**env, "TRT_TRACE_OUT": str(out)}, check=True,
                   cwd=tmp_path)
    assert _process_name(out) == "servepkg.worker"
