"""trt-trace merge on synthetic per-process traces: process groups, ids kept apart, clocks of
several hosts aligned through their wall-clock anchors, bad inputs; and split parts of a real trace."""

from __future__ import annotations

import subprocess

import orjson
import pytest
import torch
from test_startup_and_cli import trt_trace_cmd
from trace_checks import check_trace, load_strict

import trt_trace
from trt_trace import standin
from trt_trace.analysis.merge import MergeError, merge
from trt_trace.analysis.trace_summary import aggregate, aggregate_by_process, summary_text

S = 1_000_000_000  # ns


def call_events(pid: int, engine: str, engine_id: int, call_id: int, mono_ns: int, dur_ns: int = 400_000) -> list:
    """A call as trt_trace writes it: the call slice, its four phases, and a launch flow start."""
    step = dur_ns // 4
    args = {"engine": engine, "engine_id": engine_id, "call_id": call_id, "thread": 1}
    out = [{"ph": "X", "cat": "trt_trace", "name": "execute_engine", "ts": mono_ns / 1000, "dur": dur_ns / 1000,
            "pid": pid, "tid": engine_id, "args": args}]
    for k, phase in enumerate(("workspace", "inputs", "outputs", "enqueue")):
        out.append({"ph": "X", "cat": "trt_trace", "name": phase, "ts": (mono_ns + k * step) / 1000,
                    "dur": step / 1000, "pid": pid, "tid": engine_id, "args": args})
    out.append({"ph": "s", "cat": "trt_trace", "name": "launch", "id": call_id, "ts": (mono_ns + 3.5 * step) / 1000,
                "pid": pid, "tid": engine_id})
    return out


def fake_trace(path, *, host: str, pid: int, rank: int | None, boot_wall_ns: int, call_walls: list[int],
               world_size: int | None = 2, finished: bool = True, anchor_jitter_ns: int = 0) -> None:
    """A per-process trace of a host that booted at wall time `boot_wall_ns`: a call at wall time W
    has monotonic time W - boot_wall_ns, as on a real host."""
    start_mono = call_walls[0] - boot_wall_ns - S // 10
    meta = {"tool": "trt_trace", "clock": "CLOCK_MONOTONIC", "monotonic_ns": start_mono,
            "wall_ns": start_mono + boot_wall_ns + anchor_jitter_ns, "host": host, "pid": pid, "rank": rank,
            "local_rank": rank, "world_size": world_size}
    events = [{"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": f"python (pid {pid})"}},
              {"ph": "M", "name": "trt_trace_metadata", "pid": pid, "tid": 0, "args": meta}]
    for eid, name in ((1, "engine_a"), (2, "engine_b")):
        events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": eid, "args": {"name": name}})
        events.append({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": eid, "args": {"sort_index": eid}})
    for i, wall in enumerate(call_walls):
        eid = 1 + i % 2
        events += call_events(pid, ("engine_a", "engine_b")[eid - 1], eid, i + 1, wall - boot_wall_ns)
    text = b"[\n" + b",\n".join(orjson.dumps(e) for e in events)
    if finished:
        end_mono = call_walls[-1] - boot_wall_ns + S // 10
        end = {"monotonic_ns": end_mono, "wall_ns": end_mono + boot_wall_ns - anchor_jitter_ns,
               "records_written": 5 * len(call_walls), "dropped_events": 0, "threads": []}
        text += b",\n" + orjson.dumps({"ph": "M", "name": "trt_trace_metadata", "pid": pid, "tid": 0, "args": end})
        text += b"\n]\n"
    path.write_bytes(text)


def calls_by_pid(events: list[dict]) -> dict[int, list[dict]]:
    out: dict[int, list[dict]] = {}
    for e in events:
        if e["ph"] == "X" and e["name"] == "execute_engine":
            out.setdefault(e["pid"], []).append(e)
    return {pid: sorted(c, key=lambda e: e["ts"]) for pid, c in out.items()}


WALL0 = 1_750_000_000 * S  # the job's wall-clock start


def test_ranks_on_two_hosts_are_aligned_by_their_wall_clock_anchors(tmp_path):
    walls = [WALL0 + k * S // 20 for k in range(6)]  # both ranks call at the same wall instants
    # Host b booted 5 days after host a: equal wall times, very different monotonic times. Both
    # processes have pid 4242 (different hosts), and each anchor pair is a few µs off (read jitter).
    fake_trace(tmp_path / "r1.json", host="node-b", pid=4242, rank=1, boot_wall_ns=WALL0 - 3 * 3600 * S,
               call_walls=walls, anchor_jitter_ns=3000)
    fake_trace(tmp_path / "r0.json", host="node-a", pid=4242, rank=0, boot_wall_ns=WALL0 - 5 * 86400 * S,
               call_walls=walls, anchor_jitter_ns=-2000)
    merged = merge([str(tmp_path / "r1.json"), str(tmp_path / "r0.json")], str(tmp_path / "all.json"))
    events = load_strict(tmp_path / "all.json")
    tracks = check_trace(events)  # importer rules; each process keeps its own track ids
    assert sorted(tracks.values()) == ["engine_a", "engine_a", "engine_b", "engine_b"]

    names = {e["pid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    order = {e["pid"]: e["args"]["sort_index"] for e in events if e["ph"] == "M" and e["name"] == "process_sort_index"}
    assert len(names) == 2 and 4242 in names  # the second pid 4242 was moved
    by_order = [names[pid] for pid in sorted(order, key=order.get)]
    assert by_order == ["rank 0 · node-a", "rank 1 · node-b · pid 4242"]  # the OS pid where it was moved

    # Rank 0's host is the reference: its times are unchanged; rank 1's land on the same instants
    # (up to the anchors' read jitter, averaged over its start and end anchor).
    calls = calls_by_pid(events)
    ref_pid = next(pid for pid, n in names.items() if n.startswith("rank 0"))
    other_pid = next(pid for pid in calls if pid != ref_pid)
    assert [c["ts"] for c in calls[ref_pid]] == [(w - (WALL0 - 5 * 86400 * S)) / 1000 for w in walls]
    for a, b in zip(calls[ref_pid], calls[other_pid], strict=True):
        assert abs(a["ts"] - b["ts"]) < 0.005  # µs: the jitter cancels out in the mean of the anchors
    shift = merged["inputs"][1]["offset_us"]
    assert shift == pytest.approx((5 * 86400 - 3 * 3600) * 1e6, abs=1)
    assert merged["inputs"][0]["offset_us"] == 0 and merged["reference_host"] == "node-a"

    # Flow ids stay apart (viewers match flows by id across the whole file); call ids in args stay.
    flows = [e for e in events if e["ph"] == "s"]
    assert len({e["id"] for e in flows}) == len(flows) == 12
    assert sorted(c["args"]["call_id"] for c in calls[other_pid]) == list(range(1, 7))


def test_processes_of_one_host_keep_their_clock_and_a_third_host_is_shifted_once(tmp_path):
    walls = [WALL0 + k * S // 10 for k in range(4)]
    boot_a, boot_b = WALL0 - 86400 * S, WALL0 - 600 * S
    fake_trace(tmp_path / "t0.json", host="a", pid=10, rank=0, boot_wall_ns=boot_a, call_walls=walls, world_size=4)
    fake_trace(tmp_path / "t1.json", host="a", pid=11, rank=1, boot_wall_ns=boot_a, call_walls=walls, world_size=4,
               anchor_jitter_ns=50_000)  # same host: the anchors do not matter, monotonic is shared
    fake_trace(tmp_path / "t2.json", host="b", pid=10, rank=2, boot_wall_ns=boot_b, call_walls=walls, world_size=4,
               anchor_jitter_ns=7000)
    fake_trace(tmp_path / "t3.json", host="b", pid=12, rank=3, boot_wall_ns=boot_b, call_walls=walls, world_size=4,
               anchor_jitter_ns=-7000)
    paths = [str(tmp_path / f"t{i}.json") for i in (3, 1, 2, 0)]
    merged = merge(paths, str(tmp_path / "all.json"))
    events = load_strict(tmp_path / "all.json")
    check_trace(events)
    assert [i["rank"] for i in merged["inputs"]] == [0, 1, 2, 3]
    offsets = [i["offset_us"] for i in merged["inputs"]]
    assert offsets[0] == offsets[1] == 0
    assert offsets[2] == offsets[3] == pytest.approx((boot_b - boot_a) / 1000, abs=0.01)  # one shift per host
    calls = calls_by_pid(events)
    assert len(calls) == 4
    firsts = sorted(c[0]["ts"] for c in calls.values())
    assert firsts[-1] - firsts[0] < 0.01 and merged["notes"] == []


def test_wall_clocks_far_apart_never_give_negative_times(tmp_path):
    walls = [WALL0 + k * S // 10 for k in range(3)]
    # Host a's wall clock is a day ahead of true time, so host b's calls map to before a booted.
    fake_trace(tmp_path / "a.json", host="a", pid=1, rank=0, boot_wall_ns=WALL0 - 3600 * S + 86400 * S,
               call_walls=[w + 86400 * S for w in walls])
    fake_trace(tmp_path / "b.json", host="b", pid=2, rank=1, boot_wall_ns=WALL0 - 7200 * S, call_walls=walls)
    merged = merge([str(tmp_path / "a.json"), str(tmp_path / "b.json")], str(tmp_path / "all.json"))
    events = load_strict(tmp_path / "all.json")
    check_trace(events)  # asserts ts >= 0
    assert "+" in merged["clock"] and min(e["ts"] for e in events if "ts" in e) >= 0
    calls = calls_by_pid(events)
    a, b = (calls[p] for p in sorted(calls))
    assert a[0]["ts"] - b[0]["ts"] == pytest.approx(86400e6, rel=1e-9)  # what the wall clocks said, kept


def test_summary_of_a_merged_trace_adds_ranks_up_and_splits_them_on_request(tmp_path):
    walls = [WALL0 + k * S // 10 for k in range(5)]
    fake_trace(tmp_path / "r0.json", host="h", pid=100, rank=0, boot_wall_ns=WALL0 - S * 100, call_walls=walls)
    fake_trace(tmp_path / "r1.json", host="h", pid=101, rank=1, boot_wall_ns=WALL0 - S * 100, call_walls=walls[:3])
    merge([str(tmp_path / "r0.json"), str(tmp_path / "r1.json")], str(tmp_path / "all.json"))
    events = load_strict(tmp_path / "all.json")
    s = aggregate(events)
    assert dict(zip(s.names, s.stats[:, 0].tolist(), strict=True)) == {"engine_a": 3 + 2, "engine_b": 2 + 1}
    parts = aggregate_by_process(events)
    assert [p.label for p in parts] == ["rank 0 · h", "rank 1 · h"]
    assert [int(p.stats[:, 0].sum()) for p in parts] == [5, 3]
    text = summary_text(str(tmp_path / "all.json"), by_process=True)
    assert "== rank 0 · h ==" in text and "== all 2 processes ==" in text
    proc = subprocess.run(trt_trace_cmd() + ["summary", str(tmp_path / "all.json"), "--by-rank"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout == text


def test_a_killed_process_trace_merges_and_notes_say_what_is_missing(tmp_path):
    walls = [WALL0 + k * S // 10 for k in range(4)]
    fake_trace(tmp_path / "r0.json", host="h", pid=1, rank=0, boot_wall_ns=WALL0 - S, call_walls=walls, world_size=3)
    fake_trace(tmp_path / "r1.json", host="h", pid=2, rank=1, boot_wall_ns=WALL0 - S, call_walls=walls, world_size=3,
               finished=False)
    data = (tmp_path / "r1.json").read_bytes()
    (tmp_path / "r1.json").write_bytes(data[: len(data) - 40])  # killed mid-event
    proc = subprocess.run(trt_trace_cmd() + ["merge", str(tmp_path / "r0.json"), str(tmp_path / "r1.json"),
                                             "-o", str(tmp_path / "all.json")], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "cut short" in proc.stdout and "no trace of rank(s) 2" in proc.stderr
    events = load_strict(tmp_path / "all.json")
    check_trace(events)
    meta = next(e["args"]["merged"] for e in events if e["name"] == "trt_trace_metadata" and "merged" in e["args"])
    assert [i["complete"] for i in meta["inputs"]] == [True, False]
    assert [i["calls"] for i in meta["inputs"]] == [4, 4]
    flows = [e for e in events if e["ph"] == "s"]
    assert len(flows) == 4 + 3  # the cut-off event (the last call's flow start) is left out


def test_parts_of_a_split_trace_merge_back_into_one_process(tmp_path):
    out = tmp_path / "big.json"
    engines = [standin.make_engine(f"split_engine_{i}") for i in range(2)]
    with trt_trace.tracing(str(out), max_bytes=6000) as session:
        for k in range(30):
            for e in engines:
                torch.ops.tensorrt.execute_engine([torch.ones(4)], e)
            if k % 5 == 4:
                session.drainer.drain_once()  # a batch of its own: several batches, several files
    parts = sorted(tmp_path.glob("big*.json"))
    assert len(parts) >= 3
    merged = merge([str(p) for p in parts], str(tmp_path / "all.json"))
    events = load_strict(tmp_path / "all.json")
    tracks = check_trace(events)  # one thread_name per track although every part repeats them
    assert sorted(tracks.values()) == ["split_engine_0", "split_engine_1"]
    assert len(merged["inputs"]) == 1 and len(merged["inputs"][0]["files"]) == len(parts)
    assert merged["inputs"][0]["calls"] == 60 and merged["inputs"][0]["complete"]


def test_slice_refuses_an_output_named_pftrace_and_merge_writes_one(tmp_path):
    # slice writes Chrome JSON only (merge.json_output_problem): a .pftrace name would hold JSON. merge
    # re-encodes its JSON as a Perfetto trace (writers/perfetto_view.py; the UI test compares the two).
    good = tmp_path / "good.json"
    fake_trace(good, host="h", pid=1, rank=0, boot_wall_ns=WALL0 - S, call_walls=[WALL0, WALL0 + S])
    out = tmp_path / "out.pftrace"
    proc = subprocess.run(trt_trace_cmd() + ["slice", str(good), "-o", str(out), "--skip-first", "1"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr == f"trt-trace slice: {out}: slice writes Chrome JSON (which the Perfetto UI opens); " \
                          "name it .json\n" and not out.exists()
    proc = subprocess.run(trt_trace_cmd() + ["merge", str(good), "-o", str(out)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr and f"2 engine calls into {out}" in proc.stdout, proc
    assert out.read_bytes()[:1] == b"\x0a" and not list(tmp_path.glob(".*"))  # no temporary file left


@pytest.mark.parametrize("case", ["missing", "not_json", "not_ours", "merged", "twice", "bad_output"])
def test_bad_inputs_give_one_line_and_a_non_zero_exit(tmp_path, case):
    good = tmp_path / "good.json"
    fake_trace(good, host="h", pid=1, rank=0, boot_wall_ns=WALL0 - S, call_walls=[WALL0])
    out = tmp_path / "all.json"
    inputs = [str(good)]
    expect = {"missing": "no such file", "not_json": "not a trace JSON file", "not_ours": "not a trt_trace trace",
              "merged": "already a merged trace", "twice": "given twice", "bad_output": "does not exist"}[case]
    if case == "missing":
        inputs.append(str(tmp_path / "nope.json"))
    elif case == "not_json":
        (tmp_path / "x.json").write_text("hello")
        inputs.append(str(tmp_path / "x.json"))
    elif case == "not_ours":
        (tmp_path / "x.json").write_text('[{"ph":"X","name":"a","ts":1,"dur":1,"pid":1,"tid":1}]')
        inputs.append(str(tmp_path / "x.json"))
    elif case == "merged":
        merge([str(good)], str(tmp_path / "m.json"))
        inputs.append(str(tmp_path / "m.json"))
    elif case == "twice":
        inputs.append(str(good))
    elif case == "bad_output":
        out = tmp_path / "no" / "dir" / "all.json"
    with pytest.raises(MergeError, match=expect):
        merge(inputs, str(out))
    proc = subprocess.run(trt_trace_cmd() + ["merge", *inputs, "-o", str(out)], capture_output=True, text=True,
                          timeout=120)
    rc = 2 if case == "not_ours" else 1  # JSON that is no trt_trace trace: bad input (2), as in diff
    assert proc.returncode == rc and proc.stderr.count("\n") == 1 and expect in proc.stderr, proc.stderr
    assert proc.stderr.startswith("trt-trace merge: ") and not out.exists()
