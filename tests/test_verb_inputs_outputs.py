"""The reading verbs' inputs and outputs, on real traces (a traced process's file): an engine name with
invalid UTF-8 is replaced by U+FFFD and counted, the calls kept (fast and general path); a JSON that is
no trace is refused by every verb in one line, exit code 2 (`view` included); a merge of every part of a
split trace is whole; a split part passes its limit by at most its last batch; an output that cannot be
written (a full disk, an input, a suffix of another format) is one line and a non-zero exit for every verb
that writes; Ctrl-C on the demo is one line; an empty window names the trace's span."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import time
from pathlib import Path

import orjson
import pytest
from conftest import Child, run_python, terminal_signals, trt_trace_cli

from trt_trace.io.readers import read_calls

CLI = trt_trace_cli()
CALLS = 40

PROGRAM = """
import sys, torch, trt_trace
from trt_trace import standin
engines = [standin.make_engine(name) for name in sys.argv[1:]]
for _ in range({calls}):
    for e in engines:
        torch.ops.tensorrt.execute_engine([torch.ones(4)], e)
"""


def traced(path: Path, names: list[str], calls: int = CALLS, **env: str) -> Path:
    """A real trace: a fresh process calling each stand-in engine `calls` times with TRT_TRACE_OUT=path."""
    code = PROGRAM.format(calls=calls).replace("sys.argv[1:]", repr(names))
    proc = run_python(code, {"TRT_TRACE_OUT": str(path), **env})
    assert proc.returncode == 0, proc.stderr
    return path


@pytest.fixture(scope="module")
def real(tmp_path_factory) -> Path:
    return traced(tmp_path_factory.mktemp("verbs") / "real.json", ["utf8_engine_a", "plain_engine"])


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(CLI + list(args), capture_output=True, text=True, timeout=300, cwd=cwd)


def calls_in(path: Path) -> int:
    return read_calls(str(path), lambda calls, info: None).calls


# -- invalid UTF-8 in an engine name ------------------------------------------------------------------------------

def with_bad_name(real: Path, out: Path, one_line: bool) -> Path:
    """The real trace with engine name utf8_engine_a's "a" replaced by a byte that is no UTF-8 (0xff), in
    every event that names it; one_line=True: the whole array on one line (the readers' general path)."""
    data = real.read_bytes().replace(b"utf8_engine_a", b"utf8_engine_\xff")
    if one_line:
        data = data.replace(b"\n", b"")
    out.write_bytes(data)
    return out


@pytest.mark.parametrize("one_line", [False, True], ids=["fast path", "general path"])
def test_a_name_with_invalid_utf8_is_replaced_and_counted_and_every_call_kept(real, tmp_path, one_line):
    bad = with_bad_name(real, tmp_path / "bad.json", one_line)
    proc = cli("summary", str(bad), "--json")
    assert proc.returncode == 0, proc.stderr
    rows = {r["engine"]: r["calls"] for r in orjson.loads(proc.stdout)["engines"]} if isinstance(
        orjson.loads(proc.stdout), dict) else {r["engine"]: r["calls"] for r in orjson.loads(proc.stdout)}
    assert rows.get("utf8_engine_\ufffd") == CALLS and rows.get("plain_engine") == CALLS, rows
    notes = [ln for ln in proc.stderr.splitlines() if "invalid UTF-8" in ln]
    assert len(notes) == 1 and "replaced by U+FFFD" in notes[0], proc.stderr
    # Every verb keeps the calls: export's rows, slice's and merge's calls.
    proc = cli("export", str(bad), str(tmp_path / "calls.parquet"))
    assert proc.returncode == 0 and proc.stdout.startswith(f"{2 * CALLS} calls into"), proc.stderr
    proc = cli("merge", str(bad), "-o", str(tmp_path / "merged.json"))
    assert proc.returncode == 0 and f"{2 * CALLS} engine calls" in proc.stdout, proc.stderr
    assert calls_in(tmp_path / "merged.json") == 2 * CALLS
    proc = cli("slice", str(bad), "-o", str(tmp_path / "sliced.json"), "--skip-first", "1")
    assert proc.returncode == 0 and proc.stdout.startswith(f"{2 * CALLS - 2} of {2 * CALLS} engine calls"), proc.stderr
    proc = cli("diff", str(real), str(bad))
    assert proc.returncode in (0, 1) and "not a trace" not in proc.stderr, proc.stderr


# -- a JSON that is no trace ----------------------------------------------------------------------------------------

# (`{"traceEvents": []}` is a torch.profiler capture's shape: refused as a capture without trt_trace's calls.)
NOT_TRACES = {"object": b'{"a":1}', "empty array": b"[]", "array of objects": b'[{"a":1}]', "numbers": b"[1,2]"}


@pytest.mark.parametrize("verb", ["summary", "layers", "diff", "merge", "slice", "export", "view"])
@pytest.mark.parametrize("what", sorted(NOT_TRACES))
def test_a_json_that_is_no_trace_is_refused_by_every_verb_in_one_line(real, tmp_path, verb, what):
    junk = tmp_path / "junk.json"
    junk.write_bytes(NOT_TRACES[what])
    out = tmp_path / ("out.parquet" if verb == "export" else "out.json")
    args = {"summary": ["summary", str(junk)], "layers": ["layers", str(junk)], "diff": ["diff", str(real), str(junk)],
            "merge": ["merge", str(junk), "-o", str(out)], "slice": ["slice", str(junk), "-o", str(out), "--from", "0"],
            "export": ["export", str(junk), str(out)], "view": ["view", str(junk), "--no-browser", "--port", "0"]}[verb]
    proc = cli(*args)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert proc.stderr.count("\n") == 1 and "is not a trace" in proc.stderr and "Traceback" not in proc.stderr, \
        proc.stderr
    assert proc.stdout == "" and not out.exists()


# -- split traces ---------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def split(tmp_path_factory) -> list[Path]:
    d = tmp_path_factory.mktemp("split")
    traced(d / "big.json", ["split_engine_with_a_long_name_0", "split_engine_with_a_long_name_1"], calls=6000,
           TRT_TRACE_MAX_MB="1")
    parts = sorted(d.glob("big*.json"), key=lambda p: (len(p.name), p.name))
    assert len(parts) >= 2, parts
    return parts


def test_a_merge_of_every_part_of_a_split_trace_is_whole(split, tmp_path):
    out = tmp_path / "all.json"
    # In a shell's glob order (big.1.json, big.2.json, ..., big.json): the first part comes last.
    proc = cli("merge", *sorted(map(str, split)), "-o", str(out))
    assert proc.returncode == 0 and "split" not in proc.stderr, proc.stderr
    proc = cli("summary", str(out))
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr  # no "one part of a split trace"
    assert "12000" in proc.stdout.splitlines()[-1]  # ALL: every call of every part
    # One part alone still says what it is.
    proc = cli("summary", str(split[0]))
    assert proc.returncode == 0 and "one part of a split trace" in proc.stderr


def test_a_part_passes_its_size_limit_by_at_most_its_last_batch(split):
    """docs/failure-modes.md: a part is cut at the first batch boundary at or past TRT_TRACE_MAX_MB, so it
    may pass it by its last piece (512 records, csrc/session/native_writer.cpp's kWriteRecords, and the phases of
    the call the 512th record belongs to: at most 4 more, each one line) and its end record."""
    limit = 1 << 20
    for part in split[:-1]:
        lines = part.read_bytes().splitlines()
        longest = max(len(ln) for ln in lines) + 1
        assert part.stat().st_size - limit <= (512 + 4) * longest + 1024, (part, part.stat().st_size)
        assert calls_in(part) > 0


def test_no_call_is_split_across_parts(split):
    """The writer formats a drain in pieces of 512 records, cut only where a call begins: a part holds each of
    its calls with every one of its phases (5 records a call here, so a piece that ended at 512 would cut one)."""
    seen: dict[tuple[str, int], set[str]] = {}
    where: dict[tuple[str, int], set[Path]] = {}
    for part in split:
        for line in part.read_bytes().splitlines():
            if not line.startswith(b'{"ph":"X"'):  # one event a line; the metadata line holds several
                continue
            ev = orjson.loads(line.rstrip(b","))
            if ev.get("cat") != "trt_trace":
                continue
            key = (ev["args"]["engine"], ev["args"]["call_id"])
            seen.setdefault(key, set()).add(ev["name"])
            where.setdefault(key, set()).add(part)
    assert len(seen) == 12000
    assert all(len(parts) == 1 for parts in where.values()), [k for k, v in where.items() if len(v) > 1][:5]
    assert all(names == {"execute_engine", "workspace", "inputs", "outputs", "enqueue"} for names in seen.values())


# -- outputs --------------------------------------------------------------------------------------------------------

def is_device(path: str) -> bool:
    return stat.S_ISCHR(os.stat(path).st_mode)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")
@pytest.mark.parametrize("verb", ["export", "merge", "slice", "summary --plot", "diff --plot"])
def test_a_full_disk_is_one_line_and_a_non_zero_exit_and_the_device_stays(real, verb):
    args = {"export": ["export", str(real), "/dev/full"], "merge": ["merge", str(real), "-o", "/dev/full"],
            "slice": ["slice", str(real), "-o", "/dev/full", "--skip-first", "1"],
            "summary --plot": ["summary", str(real), "--plot", "/dev/full"],
            "diff --plot": ["diff", str(real), str(real), "--plot", "/dev/full"]}[verb]
    proc = cli(*args)
    assert proc.returncode != 0, (proc.stdout, proc.stderr)
    err = [ln for ln in proc.stderr.splitlines() if "/dev/full" in ln]
    assert len(err) == 1 and "No space left on device" in err[0] and "Traceback" not in proc.stderr, proc.stderr
    assert "calls into /dev/full" not in proc.stdout
    assert is_device("/dev/full")  # written into, never renamed over


@pytest.mark.parametrize("verb", ["merge", "slice", "export"])
def test_an_input_given_as_the_output_is_refused_and_left_as_it_was(real, tmp_path, verb):
    a = tmp_path / "a.json"
    a.write_bytes(real.read_bytes())
    before = a.read_bytes()
    args = {"merge": ["merge", str(a), str(real), "-o", str(a)],
            "slice": ["slice", str(a), "-o", str(a), "--from", "0"], "export": ["export", str(a), str(a)]}[verb]
    proc = cli(*args)
    assert proc.returncode != 0 and proc.stderr.count("\n") == 1, proc.stderr
    assert ("is an input" in proc.stderr or "is the input" in proc.stderr or "writes Parquet" in proc.stderr), \
        proc.stderr
    assert a.read_bytes() == before


@pytest.mark.parametrize("verb,name", [("export", "out.csv"), ("export", "out.json"), ("merge", "out.csv"),
                                       ("merge", "out.parquet"), ("slice", "out.parquet")])
def test_a_suffix_that_names_another_format_is_refused(real, tmp_path, verb, name):
    out = tmp_path / name
    args = {"export": ["export", str(real), str(out)], "merge": ["merge", str(real), "-o", str(out)],
            "slice": ["slice", str(real), "-o", str(out), "--from", "0"]}[verb]
    proc = cli(*args)
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1 and "name the output" in proc.stderr, proc.stderr
    assert not out.exists() and not list(tmp_path.iterdir())


def test_export_without_a_suffix_writes_parquet(real, tmp_path):
    out = tmp_path / "calls"
    proc = cli("export", str(real), str(out))
    assert proc.returncode == 0, proc.stderr
    assert out.read_bytes()[:4] == b"PAR1"


# -- windows --------------------------------------------------------------------------------------------------------

def test_an_empty_window_names_the_traces_span(real):
    proc = cli("summary", str(real), "--from", "500", "--to", "560")
    assert proc.returncode == 0, proc.stderr
    notes = [ln for ln in proc.stderr.splitlines() if "no call in the window" in ln]
    assert len(notes) == 1, proc.stderr
    read = read_calls(str(real), lambda calls, info: None)
    assert f"the trace's {2 * CALLS} calls begin at 0.000 s" in notes[0]
    assert read.calls_span_ns is not None
    end_s = (read.calls_span_ns[1] - read.info.origin_ns) / 1e9
    assert f"end by {end_s:.3f} s" in notes[0]
    # A window that keeps calls says nothing of the kind.
    proc = cli("summary", str(real), "--from", "0")
    assert "no call in the window" not in proc.stderr


# -- Ctrl-C ---------------------------------------------------------------------------------------------------------

def group_state(pgid: int) -> str:
    """Each thread of a process group: its state, kernel wait channel and signal masks (what a hang needs)."""
    lines = []
    for pid in subprocess.run(["pgrep", "-g", str(pgid)], capture_output=True, text=True).stdout.split():
        for task in sorted(Path(f"/proc/{pid}/task").glob("*")):
            try:
                status = dict(line.split(":\t", 1) for line in (task / "status").read_text().splitlines()
                              if ":\t" in line)
                wchan = (task / "wchan").read_text()
            except OSError:
                continue
            lines.append(f"{pid}/{task.name} {status.get('Name', '?')} {status.get('State', '?')} wchan={wchan} "
                         f"SigBlk={status.get('SigBlk')} SigPnd={status.get('SigPnd')} "
                         f"ShdPnd={status.get('ShdPnd')} SigCgt={status.get('SigCgt')}")
    return "\n".join(lines)


def test_ctrl_c_on_the_demo_is_one_line_and_no_traceback(tmp_path):
    proc = Child(CLI + ["demo", "--out", str(tmp_path / "demo.json"), "--calls", "100000000"],
                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                 cwd=tmp_path, preexec_fn=terminal_signals)  # Ctrl-C as a terminal gives it
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + 400
        for line in proc.stdout:  # the package is built (or found cached), then served in a child
            if line.startswith("running it") or time.monotonic() > deadline:
                break
        time.sleep(3)  # the child is serving now
        os.killpg(proc.pid, signal.SIGINT)  # as a terminal's Ctrl-C: the whole foreground group
        try:
            out, err = proc.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            pytest.fail("the demo did not end within 120 s of Ctrl-C; its processes:\n" + group_state(proc.pid))
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert proc.returncode == 130, err
    assert err.count("trt-trace demo: interrupted") == 1, err

