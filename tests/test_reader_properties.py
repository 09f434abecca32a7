"""Any input, no traceback (issue 23): the readers and every reading CLI verb (summary, diff, merge,
slice, export) fed traces of both formats cut at every kind of boundary (between events, inside an
event, inside a packet, inside a varint), corrupted (bytes flipped, inserted, removed) and made up
(fields of the wrong type, duplicate ids, huge values, missing keys): a table or one error line
with exit code 1 or 2, never a traceback, never a hang. And, on made-up records, the native fast
paths give what the general paths give. Property-based (hypothesis), with example counts that keep
the suite fast: the in-process properties run many examples, the CLI ones a few."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import orjson
import pytest
from conftest import trt_trace_cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from synthetic_traces import call_rows, write_trace

from trt_trace.analysis.merge import MergeError, merge
from trt_trace.analysis.trace_slice import SliceError, slice_trace
from trt_trace.analysis.trace_summary import aggregate_file, summary_text
from trt_trace.io.readers import TraceFileError, Visitor, Window, read_calls
from trt_trace.io.readers.chrome_json import ChromeJsonReader
from trt_trace.schema.records import RECORD_DTYPE

CLI = trt_trace_cli()
FAST = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
CLI_FEW = settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


class _Sources(dict):
    def __repr__(self) -> str:  # hypothesis prints a failing case's arguments: not the whole traces
        return f"<traces {', '.join(f'{k}: {len(v)} bytes' for k, v in self.items())}>"


@pytest.fixture(scope="module")
def sources(tmp_path_factory) -> dict[str, bytes]:
    d = tmp_path_factory.mktemp("props")
    rows = []
    for k in range(12):
        rows += call_rows(k + 1, 1 + k % 3, 10**9 + k * 10**6, [1_000, 2_000, 0 if k % 4 == 0 else 3_000, 9_000],
                          device=0 if k % 2 else None, gpu_ns=5_000 if k % 2 else None, flags=1 if k == 7 else 0)
    out = _Sources()
    for suffix in (".json", ".pftrace"):
        path = write_trace(d / f"t{suffix}", rows, ["", "a", "b", "c"], end={}, batches=3)
        out[suffix] = path.read_bytes()
    return out


def _boundaries(data: bytes, suffix: str) -> list[int]:
    """Offsets of every kind of boundary: lines / events for JSON, packets and varints for Perfetto."""
    if suffix == ".json":
        return sorted({i + 1 for i, b in enumerate(data) if b in b"\n,}{:"})
    out = []
    pos = 0
    while pos < len(data):
        out += [pos, pos + 1, pos + 2]  # at a packet, after its tag, inside its length varint
        size, shift, p = 0, 0, pos + 1
        while data[p] & 0x80:
            size |= (data[p] & 0x7F) << shift
            shift += 7
            p += 1
        size |= data[p] << shift
        out += [p + 1, p + 1 + size // 2]  # its payload's start, its middle
        pos = p + 1 + size
    return out


def _read_everything(path: Path, tmp: Path) -> None:
    """Every reading entry point: a result or a one-line error of the reader's own type."""
    try:
        s = aggregate_file(str(path))
        assert s.stats.shape[1] == 10 and (s.stats >= 0).all()
        summary_text(str(path), phase="gpu", json=True)
        summary_text(str(path), by_process=True)
        read_calls(str(path), lambda calls, info: None, window=Window(skip_first=1, from_s=0.001, to_s=0.004))
    except TraceFileError as exc:
        assert "\n" not in str(exc)
    try:
        merge([str(path)], str(tmp / "m.json"))
    except MergeError as exc:
        assert "\n" not in str(exc)
    try:
        slice_trace(str(path), str(tmp / "s.json"), Window(from_s=0.0, to_s=0.005))
    except SliceError as exc:
        assert "\n" not in str(exc)


@pytest.mark.parametrize("suffix", [".json", ".pftrace"])
def test_cut_at_every_boundary_reads_with_fewer_calls(sources, tmp_path, suffix):
    data = sources[suffix]
    full = 12
    path = tmp_path / f"cut{suffix}"
    for size in _boundaries(data, suffix)[::3] + [len(data) - 1]:
        path.write_bytes(data[:size])
        try:
            s = aggregate_file(str(path))
        except TraceFileError:
            continue
        calls = int(s.stats[:, 0].sum())
        assert calls <= full and s.ended in ("cut short", "closed"), size
        assert s.ended == "cut short" or (calls == full and size >= len(data) - 3), size  # only the end's brackets


def test_strings_that_are_not_utf8_read_as_text(sources, tmp_path):
    # A proto2 string field is not checked on parse: protobuf (upb) hands back such a field's bytes,
    # which made the JSON table (orjson) raise. Found by the property below, flipping one byte.
    raw = sources[".pftrace"]
    assert raw.count(b"synthetic") == 1
    path = tmp_path / "not_utf8.pftrace"
    path.write_bytes(raw.replace(b"synthetic", b"sy\x80thetic"))
    doc = orjson.loads(summary_text(str(path), phase="gpu", json=True))
    assert doc["process"] == "sy\ufffdthetic" and doc["all"]["calls"] == 12
    proc = subprocess.run([*CLI, "summary", "--json", str(path)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and orjson.loads(proc.stdout)["process"] == "sy\ufffdthetic", proc.stderr


@pytest.mark.parametrize("how", ["json dur", "pftrace end"])
def test_a_slice_that_ends_before_it_begins_is_left_out_and_said(tmp_path, how):
    # Found by the property below (a flipped timestamp byte): a GPU span of -240 ns made the table's
    # gpu column negative. Such a slice is malformed: left out of its call, counted in the note.
    rows = call_rows(1, 1, 10**9, [1_000, 2_000, 3_000, 9_000], device=0, gpu_ns=5_000)
    rows += call_rows(2, 1, 2 * 10**9, [1_000, 2_000, 3_000, 9_000], device=0, gpu_ns=7_000)
    suffix = ".json" if how == "json dur" else ".pftrace"
    path = write_trace(tmp_path / f"t{suffix}", rows, ["", "a"], end={}, batches=1)
    raw = path.read_bytes()
    if suffix == ".json":
        assert raw.count(b'"dur":5.000') == 1
        raw = raw.replace(b'"dur":5.000', b'"dur":-0.240')
    else:  # the first GPU span's end packet, stamped before its begin: its timestamp varint set to 1
        from trt_trace.io.perfetto_protos import protos
        trace = protos().Trace()
        trace.ParseFromString(raw)
        begins = {}
        for packet in trace.packet:
            if packet.HasField("track_event") and packet.track_event.type == 1:
                begins.setdefault(packet.track_event.track_uuid, packet)
            elif packet.HasField("track_event") and packet.track_event.type == 2:
                begin = begins.get(packet.track_event.track_uuid)
                if begin is not None and packet.timestamp - begin.timestamp == 5_000:
                    packet.timestamp = begin.timestamp - 240
                    break
        else:
            raise AssertionError("no GPU span of 5 us in the file")
        raw = trace.SerializeToString()
    path.write_bytes(raw)
    s = aggregate_file(str(path))
    assert (s.stats >= 0).all() and int(s.stats[:, 0].sum()) == 2 and s.malformed == 1
    assert int(s.stats[0, 7]) == 7_000  # the other call's GPU time only
    text = summary_text(str(path))
    assert "1 malformed event left out" in text


@FAST
@given(data=st.data())
@pytest.mark.parametrize("suffix", [".json", ".pftrace"])
def test_truncated_and_corrupted_traces_never_raise(sources, tmp_path, suffix, data):
    raw = bytearray(sources[suffix])
    kind = data.draw(st.sampled_from(["cut", "flip", "insert", "remove", "cut+flip"]))
    if "flip" in kind:
        for i in data.draw(st.lists(st.integers(0, len(raw) - 1), min_size=1, max_size=8)):
            raw[i] = data.draw(st.integers(0, 255))
    if kind == "insert":
        at = data.draw(st.integers(0, len(raw)))
        raw[at:at] = data.draw(st.binary(min_size=1, max_size=40))
    if kind == "remove":
        a = data.draw(st.integers(0, len(raw) - 1))
        del raw[a: a + data.draw(st.integers(1, 60))]
    if "cut" in kind:
        raw = raw[: data.draw(st.integers(0, len(raw)))]
    path = tmp_path / f"t{suffix}"
    path.write_bytes(bytes(raw))
    _read_everything(path, tmp_path)


_number = st.one_of(st.integers(-(2**70), 2**70), st.floats(allow_nan=True, allow_infinity=True),
                    st.booleans(), st.none(), st.text(max_size=5), st.lists(st.integers(), max_size=2))
_small = st.one_of(st.integers(0, 5), _number)


@st.composite
def _events(draw) -> list:
    """Events of our shape with any field of any type, ids repeated, keys missing."""
    out = [{"ph": "M", "name": "trt_trace_metadata", "pid": 1, "tid": 0,
            "args": draw(st.one_of(st.fixed_dictionaries({"tool": st.just("trt_trace")},
                                                         optional={"gpu_timing": _small, "gpu_every": _small,
                                                                   "dropped_events": _number,
                                                                   "threads": st.one_of(_number, st.lists(
                                                                       st.dictionaries(st.text(max_size=3), _small),
                                                                       max_size=2))}),
                                   _number))}]
    for _ in range(draw(st.integers(0, 25))):
        ev = {"ph": draw(st.sampled_from(["X", "X", "X", "s", "f", "M", "B"])), "cat": "trt_trace",
              "name": draw(st.sampled_from(["execute_engine", "workspace", "inputs", "outputs", "enqueue", "gpu",
                                            "caller stream wait", "launch", "other"])),
              "ts": draw(st.one_of(st.integers(0, 10**7), _number)), "dur": draw(st.one_of(st.integers(0, 10**4),
                                                                                          _number)),
              "pid": draw(st.one_of(st.integers(0, 3), _number)), "tid": draw(_small),
              "id": draw(_small),
              "args": draw(st.one_of(st.fixed_dictionaries({}, optional={
                  "call_id": st.one_of(st.integers(0, 6), _number), "engine_id": _small, "engine": _small,
                  "device": _small, "thread": _small, "stream": _small, "error": _small, "captured": _small}),
                  _number))}
        for key in draw(st.lists(st.sampled_from(list(ev)), max_size=3)):
            ev.pop(key, None)
        out.append(ev)
    return out


@FAST
@given(events=_events(), as_lines=st.booleans())
def test_made_up_json_traces_never_raise(tmp_path, events, as_lines):
    path = tmp_path / "t.json"
    if as_lines:
        path.write_bytes(b"[\n" + b",\n".join(orjson.dumps(e, option=orjson.OPT_NON_STR_KEYS)
                                            if not _has_nan(e) else b'{"ph":"X","ts":NaN}' for e in events) + b"\n]\n")
    else:
        path.write_text(orjson.dumps({"traceEvents": [e for e in events if not _has_nan(e)]}).decode())
    _read_everything(path, tmp_path)


def _has_nan(e: dict) -> bool:
    try:
        orjson.dumps(e)
        return False
    except TypeError:
        return True


@CLI_FEW
@given(data=st.data())
@pytest.mark.parametrize("suffix", [".json", ".pftrace"])
def test_every_reading_verb_gives_a_table_or_one_line(sources, tmp_path, suffix, data):
    raw = bytearray(sources[suffix])
    raw = raw[: data.draw(st.integers(0, len(raw)))]
    for i in data.draw(st.lists(st.integers(0, max(len(raw) - 1, 0)), max_size=3)) if raw else []:
        raw[i] = data.draw(st.integers(0, 255))
    path = tmp_path / f"t{suffix}"
    path.write_bytes(bytes(raw))
    good = tmp_path / f"good{suffix}"
    good.write_bytes(sources[suffix])
    for args in (["summary", str(path), "--json"], ["diff", str(good), str(path)],
                 ["merge", str(path), "-o", str(tmp_path / "m.json")],
                 ["slice", str(path), "-o", str(tmp_path / "s.json"), "--to", "0.01"],
                 ["export", str(path), str(tmp_path / "c.parquet")]):
        proc = subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=60)
        assert "Traceback" not in proc.stderr, (args, proc.stderr)
        if proc.returncode in (1, 2) and args[0] != "diff":
            assert proc.stderr.startswith(f"trt-trace {args[0]}: ") and proc.stdout == "", (args, proc.stderr)
            assert proc.stderr.count("\n") >= 1
        else:
            assert proc.returncode in (0, 1, 2), (args, proc.returncode, proc.stderr)


class _Slices(Visitor):
    def __init__(self) -> None:
        self.rows: list[tuple] = []

    def slices(self, s: np.ndarray, buf) -> None:
        self.rows += [tuple(int(r[k]) for k in ("kind", "phase", "begin_ns", "end_ns", "call_id", "engine_id",
                                                "thread_id", "device", "stream", "pid", "tid")) + (
            int(r["flags"]) & 15,) for r in s]


@st.composite
def _records(draw) -> np.ndarray:
    n = draw(st.integers(1, 30))
    rec = np.zeros(n, dtype=RECORD_DTYPE)
    rec["begin_ns"] = draw(st.lists(st.integers(0, 2**51), min_size=n, max_size=n))
    rec["end_ns"] = rec["begin_ns"] + np.array(draw(st.lists(st.integers(0, 10**12), min_size=n, max_size=n)))
    rec["call_id"] = draw(st.lists(st.integers(1, 2**40), min_size=n, max_size=n))
    rec["engine_id"] = draw(st.lists(st.integers(1, 4), min_size=n, max_size=n))
    rec["thread_id"] = draw(st.lists(st.integers(0, 2**32 - 1), min_size=n, max_size=n))
    rec["phase"] = draw(st.lists(st.integers(0, 6), min_size=n, max_size=n))
    rec["flags"] = draw(st.lists(st.integers(0, 15), min_size=n, max_size=n))
    rec["device"] = draw(st.lists(st.sampled_from([0, 1, 7, 0xFFFF]), min_size=n, max_size=n))
    rec["stream"] = draw(st.lists(st.integers(0, 2**32 - 1), min_size=n, max_size=n))
    return rec


@FAST
@given(records=_records())
def test_the_json_fast_path_equals_the_general_path_on_made_up_records(tmp_path, records):
    path = write_trace(tmp_path / "t.json", records, ["", 'a"\\b', "ünï", "c\nd", "e"], end={})
    general = tmp_path / "g.json"
    lines = path.read_bytes().split(b"\n")
    # orjson's notation (12.5, 1e-05 ...) for every event: none is in the writer's own layout any more
    general.write_bytes(b"\n".join(
        (b",".join(orjson.dumps(e) for e in orjson.loads(b"[" + ln.strip().lstrip(b"[").rstrip(b",]") + b"]")) + b",")
        if ln.strip() not in (b"[", b"]", b"") else ln for ln in lines).replace(b",\n]", b"\n]"))
    a, b = _Slices(), _Slices()
    ChromeJsonReader(str(path)).read(a)
    ChromeJsonReader(str(general)).read(b)
    assert sorted(a.rows) == sorted(b.rows) and len(a.rows) >= len(records)


# -- JSON that is no trace, and names with invalid UTF-8 (issue 37) ----------------------------------------------

_json_values = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(-10, 10), st.text(max_size=4)),
                            lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                    st.dictionaries(st.text(max_size=3).filter(lambda k: k != "ph"),
                                                                    inner, max_size=3)),
                            max_leaves=8)


@FAST
@given(doc=st.one_of(_json_values, st.fixed_dictionaries({"traceEvents": st.lists(
    st.dictionaries(st.text(max_size=3).filter(lambda k: k != "ph"), _json_values, max_size=2), max_size=3)})))
def test_json_without_a_single_event_is_refused_as_no_trace_never_read_as_an_empty_one(tmp_path, doc):
    from trt_trace.io.readers import NotATrace

    path = tmp_path / "doc.json"
    path.write_bytes(orjson.dumps(doc))
    with pytest.raises(TraceFileError) as exc:
        read_calls(str(path), lambda calls, info: None)
    assert "\n" not in str(exc.value)
    if isinstance(doc, dict) and "traceEvents" in doc:  # a torch.profiler capture's shape: refused as one
        assert "capture" in str(exc.value) or "is not a trace" in str(exc.value), exc.value
    elif not isinstance(doc, list | dict):  # not even a JSON array or object: no trace file (the opening's word)
        assert "is not a trace" in str(exc.value), exc.value
    else:
        assert isinstance(exc.value, NotATrace) and "is not a trace" in str(exc.value), exc.value


@FAST
@given(data=st.data())
@pytest.mark.parametrize("layout", ["lines", "one line"])
def test_invalid_utf8_in_an_engine_name_keeps_every_call_and_counts_what_it_replaced(sources, tmp_path, layout, data):
    raw = sources[".json"]
    # Engine "b"'s name, in every event that carries it, becomes "b" + 1..3 bytes that are no UTF-8.
    # Bytes never valid where they stand: continuation bytes with no lead, and bytes UTF-8 never uses.
    bad = bytes(data.draw(st.lists(st.sampled_from([0x80, 0xbf, 0xfe, 0xff]), min_size=1, max_size=3)))
    text = raw.replace(b'"b"', b'"b' + bad + b'"')
    assert text != raw
    if layout == "one line":
        text = text.replace(b"\n", b"")
    path = tmp_path / "bad.json"
    path.write_bytes(text)
    s = aggregate_file(str(path))
    assert int(s.stats[:, 0].sum()) == 12 and s.ended == "closed"
    fixed = ("b" + bad.decode("utf-8", "replace"))
    assert fixed in s.names and "\ufffd" in fixed
    notes = [n for n in s.notes if "invalid UTF-8" in n]
    assert len(notes) == 1 and "replaced by U+FFFD" in notes[0], s.notes
