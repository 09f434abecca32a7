"""Many processes, many ranks: {rank} in TRT_TRACE_OUT, the rank in the metadata, and a real
2-rank torchrun job (gloo, CPU) whose per-rank traces merge into one."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest
from test_startup_and_cli import trt_trace_cmd
from trace_checks import check_trace, load_strict

from trt_trace.runtime import config

CALLS = 4  # forward passes of the stand-in model per rank
ENGINES = 3

JOB = f"""
import os, torch, torch.distributed as dist
from trt_trace import standin
from trt_trace.standin import model

dist.init_process_group("gloo")
rank = dist.get_rank()
net = model.StandInModel(model.demo_specs({ENGINES}))
x = torch.randn(8, 64)
for _ in range({CALLS}):
    net(x)
t = torch.tensor([float(rank + 1)])
dist.all_reduce(t)
assert t.item() == 3.0, t
dist.barrier()
# Both ranks leave the barrier at about the same instant: one marked call each, to line up.
torch.ops.tensorrt.execute_engine([torch.ones(4)], standin.make_engine("after_barrier_engine"))
dist.destroy_process_group()
print(f"rank {{rank}} done", flush=True)
"""


@pytest.mark.parametrize(
    ("env", "expected"),
    [({"RANK": "3", "LOCAL_RANK": "1"}, "3"), ({"LOCAL_RANK": "1"}, "1"), ({}, "0"),
     ({"RANK": " ", "LOCAL_RANK": "2"}, "2")],
)
def test_rank_in_the_output_path(monkeypatch, env, expected):
    for name in ("RANK", "LOCAL_RANK", "WORLD_SIZE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    path = config.expand_path("t_{rank}_{host}_{pid}.json")
    assert path == f"t_{expected}_{socket.gethostname()}_{os.getpid()}.json"


def test_rank_info_is_none_where_unset_or_not_a_number(monkeypatch):
    monkeypatch.setenv("RANK", "2")
    monkeypatch.setenv("LOCAL_RANK", "x")
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    assert config.rank_info() == {"rank": 2, "local_rank": None, "world_size": None}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def torchrun_job(tmp_path_factory) -> tuple[Path, int, int]:
    """Runs the 2-rank job once: (its directory, monotonic ns before it, after it)."""
    work = tmp_path_factory.mktemp("torchrun")
    (work / "job.py").write_text(JOB)
    torchrun = Path(sys.executable).parent / "torchrun"
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRT_TRACE_") or k == "TRT_TRACE_CACHE_DIR"}
    env.update(TRT_TRACE_OUT="trace_{rank}.json", OMP_NUM_THREADS="1")
    t0 = time.monotonic_ns()
    proc = subprocess.run([str(torchrun), "--nproc-per-node", "2", "--master-addr", "127.0.0.1",
                           "--master-port", str(free_port()), "job.py"],
                          cwd=work, env=env, capture_output=True, text=True, timeout=240)
    t1 = time.monotonic_ns()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "rank 0 done" in proc.stdout and "rank 1 done" in proc.stdout
    return work, t0, t1


def test_each_rank_writes_its_own_trace_with_its_rank(torchrun_job):
    work, _, _ = torchrun_job
    assert sorted(p.name for p in work.glob("trace*.json")) == ["trace_0.json", "trace_1.json"]
    for rank in (0, 1):
        events = load_strict(work / f"trace_{rank}.json")
        check_trace(events)
        start = next(e["args"] for e in events if e["name"] == "trt_trace_metadata")
        assert (start["rank"], start["local_rank"], start["world_size"]) == (rank, rank, 2)
        name = next(e["args"]["name"] for e in events if e["name"] == "process_name")
        assert name == f"job.py rank {rank}" and start["program"] == "job.py"


def merged_calls(path: Path) -> tuple[list[dict], dict[str, list[dict]]]:
    events = load_strict(path)
    names = {e["pid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    calls: dict[str, list[dict]] = {}
    for e in events:
        if e["ph"] == "X" and e["name"] == "execute_engine":
            calls.setdefault(names[e["pid"]], []).append(e)
    return events, calls


def test_the_ranks_merge_into_one_trace_on_one_clock(torchrun_job):
    work, t0, t1 = torchrun_job
    proc = subprocess.run(trt_trace_cmd() + ["merge", "trace_0.json", "trace_1.json", "-o", "all.json"],
                          cwd=work, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    events, calls = merged_calls(work / "all.json")
    tracks = check_trace(events)
    assert len(tracks) == 2 * (ENGINES + 1)  # each rank's engines on tracks of their own
    host = socket.gethostname()
    order = sorted((e["args"]["sort_index"], e["pid"]) for e in events if e["name"] == "process_sort_index")
    names = {e["pid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    labels = [names[pid] for _, pid in order]
    assert labels == [f"rank 0 · job.py · {host}", f"rank 1 · job.py · {host}"]
    for label in labels:  # every call of each rank is there
        assert len(calls[label]) == CALLS * ENGINES + 1
    # Same host: the monotonic clock is shared, so every event lies inside the job's run.
    for label in labels:
        assert all(t0 <= c["ts"] * 1000 and (c["ts"] + c["dur"]) * 1000 <= t1 for c in calls[label])
    marks = [next(c["ts"] for c in calls[label] if c["args"]["engine"] == "after_barrier_engine") for label in labels]
    assert abs(marks[0] - marks[1]) < 500_000  # µs: both left the same barrier
    # The summary of the merged file adds both ranks up.
    proc = subprocess.run(trt_trace_cmd() + ["summary", "all.json"], cwd=work, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    rows = {ln.split()[0]: int(ln.split()[1]) for ln in proc.stdout.splitlines()[1:]}
    assert rows["ALL"] == 2 * (CALLS * ENGINES + 1) and rows["after_barrier_engine"] == 2


def test_a_rank_on_another_host_is_put_back_on_the_reference_clock(torchrun_job, tmp_path):
    """Rank 1's trace rewritten as if its host had booted 1234.5 s earlier and had another name:
    its monotonic times and anchors move, its wall clock does not. The merge must put its calls
    back where they were (up to the difference of the two processes' anchor readings)."""
    work, _, _ = torchrun_job
    merge = trt_trace_cmd() + ["merge"]
    subprocess.run(merge + [str(work / "trace_0.json"), str(work / "trace_1.json"), "-o", str(tmp_path / "same.json")],
                   check=True, capture_output=True, timeout=120)
    skew_ns = 1_234_500_000_000
    events = load_strict(work / "trace_1.json")
    for e in events:
        if "ts" in e:
            e["ts"] = round(e["ts"] + skew_ns / 1000, 3)
        if e["name"] == "trt_trace_metadata" and "monotonic_ns" in e["args"]:
            e["args"]["monotonic_ns"] += skew_ns
            if "host" in e["args"]:
                e["args"]["host"] = "another-host"
    (tmp_path / "trace_1.json").write_bytes(orjson.dumps(events))
    proc = subprocess.run(merge + [str(work / "trace_0.json"), str(tmp_path / "trace_1.json"),
                                   "-o", str(tmp_path / "two_hosts.json")], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "another-host" in proc.stdout and "shifted" in proc.stdout
    _, same = merged_calls(tmp_path / "same.json")
    events, moved = merged_calls(tmp_path / "two_hosts.json")
    check_trace(events)
    rank1_same = next(v for k, v in same.items() if k.startswith("rank 1"))
    rank1_moved = next(v for k, v in moved.items() if k.startswith("rank 1 · job.py · another-host"))
    assert len(rank1_same) == len(rank1_moved)
    for a, b in zip(rank1_same, rank1_moved, strict=True):
        assert abs(a["ts"] - b["ts"]) < 1000  # µs; the true error is the anchors' read jitter
