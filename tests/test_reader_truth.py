"""What the readers say is what is there (issue 23, reader side): how a trace ended, in one line
from summary, diff, merge, slice, export and view and as `ended` in --json; calls cut short left
out and counted, whatever the cut's boundary; malformed events left out and counted, never a
traceback; calls with pre-allocated outputs (no outputs phase) kept; a merge leaves out every
slice and launch flow of a call it drops. Constructed traces (tests/synthetic_traces.py)."""

from __future__ import annotations

import json
import subprocess

import numpy as np
import orjson
import pytest
from conftest import trt_trace_cli
from synthetic_traces import call_rows, engines_trace, write_trace

from trt_trace.analysis.merge import merge
from trt_trace.analysis.trace_summary import aggregate_file, summary_text
from trt_trace.io.readers import read_calls
from trt_trace.schema.phases import STATS_COLUMNS, Phase

CLI = trt_trace_cli()
GPU_NS, GPU_CALLS = STATS_COLUMNS.index("gpu_ns"), STATS_COLUMNS.index("gpu_calls")


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=120)


def _calls(n: int, engine: int = 1, first: int = 1, outputs: bool = True, **kw) -> list[tuple]:
    rows = []
    for k in range(n):
        rows += call_rows(first + k, engine, 10**9 + k * 10**6, [1_000, 2_000, 3_000 if outputs else 0, 50_000], **kw)
    return rows


@pytest.mark.parametrize("suffix", [".json", ".pftrace"])
def test_calls_with_pre_allocated_outputs_are_whole(tmp_path, suffix):
    """No outputs phase (the runtime skips it with pre-allocated outputs): the phases still add up."""
    path = write_trace(tmp_path / f"t{suffix}", _calls(5, outputs=False) + _calls(3, engine=2, first=6),
                       ["", "prealloc", "plain"], end={})
    s = aggregate_file(str(path))
    assert dict(zip(s.names, s.stats[:, 0].tolist(), strict=True)) == {"prealloc": 5, "plain": 3}
    assert s.partial_calls == 0 and s.stats[s.names.index("prealloc"), STATS_COLUMNS.index("outputs_ns")] == 0


@pytest.mark.parametrize("suffix", [".json", ".pftrace"])
def test_a_trace_with_no_end_is_cut_short_wherever_it_was_cut(tmp_path, suffix):
    """Cut at a packet (or line) boundary between calls: no partial call, but no end record either."""
    path = write_trace(tmp_path / f"t{suffix}", _calls(10), ["", "e"], end=None)
    s = aggregate_file(str(path))
    assert s.ended == "cut short" and s.partial_calls == 0 and int(s.stats[0, 0]) == 10
    proc = cli("summary", str(path))
    assert proc.returncode == 0 and proc.stderr == f"trt-trace summary: {path} was cut short: no end record " \
                                                   "(process killed?)\n"
    doc = json.loads(cli("summary", str(path), "--json").stdout)
    assert doc["ended"] == "cut short" and doc["partial_calls"] == 0 and doc["all"]["calls"] == 10


@pytest.mark.parametrize("ended,extra,line", [
    ("size limit", {"events_not_written": 182_245}, "stopped at the size limit: 182,245 events not written"),
    ("split", {"next_part": "t.1.json"}, "is one part of a split trace: it goes on in t.1.json"),
    ("write failed", {"events_not_written": 12}, "writing failed before the end (12 events not written)"),
])
def test_every_end_but_closed_is_one_line_in_every_verb(tmp_path, ended, extra, line):
    path = write_trace(tmp_path / "t.json", _calls(4), ["", "e"], end={"ended": ended, **extra})
    if "events_not_written" in extra:  # what a writer past its limit (or after a failed write) counts
        path.write_bytes(path.read_bytes().replace(b'"events_not_written":0', b'"events_not_written":%d' %
                                                   extra["events_not_written"]))
    other = write_trace(tmp_path / "o.json", _calls(4), ["", "e"], end={"ended": "closed"})
    for verb, args in (("summary", [str(path)]), ("diff", [str(other), str(path)]),
                       ("merge", [str(path), "-o", str(tmp_path / "m.json")]),
                       ("export", [str(path), str(tmp_path / "c.parquet")]),
                       ("slice", [str(path), "-o", str(tmp_path / "s.json"), "--skip-first", "1"])):
        proc = cli(verb, *args)
        assert proc.returncode == 0, (verb, proc.stderr)
        notes = [ln for ln in proc.stderr.splitlines() if line in ln]
        assert len(notes) == 1 and notes[0].startswith(f"trt-trace {verb}: "), (verb, proc.stderr)
    assert json.loads(cli("summary", str(path), "--json").stdout)["ended"] == ended
    assert json.loads(cli("summary", str(other), "--json").stdout)["ended"] == "closed"
    assert cli("summary", str(other)).stderr == ""


def test_a_call_cut_inside_is_left_out_with_its_gpu_span_and_said_so(tmp_path):
    rows = _calls(6, device=0, gpu_ns=20_000)
    path = write_trace(tmp_path / "t.json", rows, ["", "e"], end=None)
    lines = path.read_bytes().splitlines()
    inputs_of_last = next(i for i, ln in enumerate(lines) if b'"inputs"' in ln and b'"call_id":6,' in ln)
    path.write_bytes(b"\n".join(lines[:inputs_of_last]) + b"\n" + lines[inputs_of_last][:40])  # killed mid-event
    s = aggregate_file(str(path))
    assert s.partial_calls == 1 and int(s.stats[0, 0]) == 5 and int(s.stats[0, GPU_CALLS]) == 5  # calls, GPU spans
    proc = cli("summary", str(path))
    assert "cut short: 1 partial call left out" in proc.stdout
    assert proc.stderr == f"trt-trace summary: {path} was cut short: no end record (process killed?); " \
                          "1 partial call left out\n"


def test_a_merge_leaves_out_every_slice_and_flow_of_a_call_it_drops(tmp_path):
    """A call missing its inputs phase (the file was damaged inside it), with its enqueue's launch
    flow and its GPU span and flow still there: all of them go."""
    rows = _calls(4, device=0, gpu_ns=20_000)
    path = write_trace(tmp_path / "t.json", rows, ["", "e"], end={})
    lines = path.read_bytes().split(b"\n")
    kept = [ln for ln in lines if not (b'"name":"inputs"' in ln and b'"call_id":3,' in ln)]
    path.write_bytes(b"\n".join(kept))
    merged = merge([str(path)], str(tmp_path / "all.json"))
    assert merged["inputs"][0]["partial_calls"] == 1 and merged["inputs"][0]["calls"] == 3
    events = orjson.loads((tmp_path / "all.json").read_bytes())
    assert not [e for e in events if (e.get("args") or {}).get("call_id") == 3]
    flows = [e for e in events if e.get("ph") in ("s", "f")]
    assert sorted(e["id"] for e in flows) == [1, 1, 2, 2, 4, 4]  # start and end of calls 1, 2, 4


def test_a_non_numeric_duration_is_a_malformed_event_not_a_traceback(tmp_path):
    path = write_trace(tmp_path / "t.json", _calls(5), ["", "e"], end={})
    text = path.read_bytes().replace(b'"dur":2.000', b'"dur":"abc"', 1)
    path.write_bytes(text)
    s = aggregate_file(str(path))
    assert s.malformed == 1 and s.partial_calls == 1 and int(s.stats[0, 0]) == 4
    for verb, args in (("summary", [str(path)]), ("merge", [str(path), "-o", str(tmp_path / "m.json")])):
        proc = cli(verb, *args)
        assert proc.returncode == 0 and "Traceback" not in proc.stderr
        assert f"trt-trace {verb}: {path}: 1 malformed event left out" in proc.stderr or verb == "merge"
    assert "1 malformed event left out (a field of the wrong type or out of range)" in summary_text(str(path))


def test_gpu_spans_are_joined_to_their_calls_across_batches_and_orphans_counted(tmp_path):
    rows = _calls(20, device=0, gpu_ns=10_000)
    records = np.array(rows, dtype=[("b", "<i8"), ("e", "<i8"), ("c", "<u8"), ("g", "<u4"), ("t", "<u4"),
                                    ("p", "u1"), ("f", "u1"), ("d", "<u2"), ("s", "<u4")])
    gpu = records["p"] == Phase.GPU
    ordered = np.concatenate([records[~gpu], records[gpu]])  # every span after every call
    from trt_trace.schema.records import RECORD_DTYPE

    path = write_trace(tmp_path / "t.pftrace", ordered.view(RECORD_DTYPE), ["", "e"], end={}, batches=4)
    read = read_calls(str(path), lambda calls, info: None)
    assert read.calls == 20 and read.orphan_spans == 0
    s = aggregate_file(str(path))
    assert int(s.stats[0, GPU_CALLS]) == 20 and int(s.stats[0, GPU_NS]) == 20 * 10_000


def test_summary_of_two_ranks_windowed_and_skipped(tmp_path):
    parts = [str(engines_trace(tmp_path / f"r{r}.json", {"w": np.full(10, 1_000_000 * (r + 1))}, pid=10 + r,
                               rank=r)) for r in range(2)]
    merge(parts, str(tmp_path / "all.json"))
    proc = cli("summary", str(tmp_path / "all.json"), "--skip-first", "2", "--json")
    doc = json.loads(proc.stdout)
    assert doc["all"]["calls"] == 16 and doc["all"]["total_ms"] == pytest.approx(8 * 1 + 8 * 2)
    proc = cli("summary", str(tmp_path / "all.json"), "--from", "0.002", "--to", "0.005", "--json")
    assert json.loads(proc.stdout)["all"]["calls"] == 6  # calls 2, 3, 4 of each rank (1 ms apart)
    proc = cli("summary", str(tmp_path / "all.json"), "--from", "5", "--to", "1")
    assert proc.returncode == 2 and proc.stderr.startswith("trt-trace summary: --to 1 must come after --from 5")


@pytest.mark.parametrize("suffix,size", [(".json", 1_100 << 20), (".pftrace", 400 << 20)])
def test_view_of_a_file_too_large_for_the_ui_says_so_and_names_slice(tmp_path, suffix, size):
    path = write_trace(tmp_path / f"big{suffix}", _calls(2), ["", "e"], end={})
    with open(path, "r+b") as f:
        f.truncate(size)  # sparse: the size of a long run, without its disk
    proc = cli("view", str(path), "--no-browser", "--port", "0")
    assert proc.returncode == 1 and proc.stdout == "" and proc.stderr.count("\n") == 1
    assert proc.stderr.startswith(f"trt-trace view: {path} is {size >> 20:,} MiB, more than the Perfetto UI holds")
    assert f"trt-trace slice big{suffix} -o window.json --from 0 --to 10" in proc.stderr


def test_view_says_how_a_trace_ended_before_serving(tmp_path):
    path = write_trace(tmp_path / "t.json", _calls(3), ["", "e"], end=None)
    from trt_trace.io.readers.view_checks import end_state_notes, too_large

    assert too_large(str(path)) is None
    assert end_state_notes(str(path)) == [f"{path} was cut short: no end record (process killed?)"]


def test_the_reading_verbs_never_import_torch(tmp_path):
    """summary, diff, merge, slice, export: numpy's memory, not torch's (about 220 MB)."""
    import sys

    path = write_trace(tmp_path / "t.json", _calls(3), ["", "e"], end={})
    code = ("import sys, trt_trace_cli; verbs = [['summary', P], ['diff', P, P], ['merge', P, '-o', D + '/m.json'], "
            "['slice', P, '-o', D + '/s.json', '--skip-first', '1'], ['export', P, D + '/c.parquet']]\n"
            "for v in verbs:\n    sys.argv = ['trt-trace', *v]\n    try:\n        trt_trace_cli.main()\n"
            "    except SystemExit:\n        pass\nprint('torch' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", f"P, D = {str(path)!r}, {str(tmp_path)!r}\n" + code],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout.strip().splitlines()[-1] == "False", proc.stdout + proc.stderr


@pytest.mark.parametrize("suffix,limit,words", [(".json", 1 << 30, "1,024 MiB of JSON"),
                                                (".pftrace", 320 << 20, "320 MiB of native trace")])
def test_view_serves_a_file_of_exactly_the_ui_limit_and_refuses_one_byte_more(tmp_path, suffix, limit, words):
    """The limit is inclusive, per format, and the line names it in MiB with the format's words."""
    from trt_trace.io.readers.view_checks import too_large

    path = write_trace(tmp_path / f"edge{suffix}", _calls(2), ["", "e"], end={})
    with open(path, "r+b") as f:
        f.truncate(limit)  # sparse
    assert too_large(str(path)) is None
    with open(path, "r+b") as f:
        f.truncate(limit + 1)
    line = too_large(str(path))
    assert line == (f"{path} is {(limit + 1) / 2**20:,.0f} MiB, more than the Perfetto UI holds (about {words}); cut "
                    f"a window first: trt-trace slice edge{suffix} -o window.json --from 0 --to 10 (seconds), then "
                    f"view window.json")
