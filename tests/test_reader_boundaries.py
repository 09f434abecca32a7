"""Where the fast readers cut their input: a JSON line cut by a block's end, the block split in two
halves parsed on two threads, a Perfetto packet cut by a read. Each is compared against the whole
file read at once, slice by slice and event by event, so a split one byte off (a line parsed from
its middle, a half dropped or read twice, a packet decoded across a cut) fails."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from test_gpu_tracks import call_records

from trt_trace.io.readers import TraceFileError, Visitor, native
from trt_trace.io.readers import chrome_json as cj
from trt_trace.io.readers import perfetto as pf
from trt_trace.io.readers.columns import SLICE_DTYPE, SLICE_X
from trt_trace.io.writers import ChromeJsonWriter, PerfettoTraceWriter
from trt_trace.schema.records import RECORD_DTYPE


def _records() -> list[np.ndarray]:
    rows = []
    for k in range(60):
        wait = (1_000_000 * k + 25_000, 1_000_000 * k + 400_000) if k % 3 == 0 else None
        rows += call_records(k + 1, 1 + k % 3, 1_000_000 * (k + 1), 1_000_000 * (k + 1) + 30_000,
                             1_000_000 * (k + 1) + 200_000 + 1000 * k, stream=7, wait=wait,
                             flags=1 if k == 5 else 0)
    records = np.array(rows, dtype=RECORD_DTYPE)
    return [records[: len(records) // 2], records[len(records) // 2:]]


def _write(path):
    names = ["", "eng_a", 'eng "b"\\x', "eng_c"]  # a name with escapes: its literal is copied as it is
    writer = (ChromeJsonWriter if path.suffix == ".json" else PerfettoTraceWriter)(str(path), lambda: names)
    writer.begin("bounds", {"tool": "trt_trace", "pid": 9, "monotonic_ns": 1, "wall_ns": 5 * 10**18,
                            "gpu_timing": True})
    for batch in _records():
        writer.write(batch)
    writer.finish({"dropped_events": 0, "threads": [], "monotonic_ns": 10**10, "wall_ns": 5 * 10**18,
                   "ended": "closed"})
    return path


@pytest.fixture(scope="module", params=[".json", ".pftrace"])
def trace(request, tmp_path_factory):
    return _write(tmp_path_factory.mktemp("bounds") / f"t{request.param}")


class _Recorder(Visitor):
    """Every slice (its engine literal in place of the buffer offset) and every event, in order."""

    def __init__(self) -> None:
        self.items: list[tuple] = []

    def slices(self, slices, buf) -> None:
        for row in slices.tolist():
            fields = dict(zip(SLICE_DTYPE.names, row, strict=True))
            off, n = fields.pop("name_off"), fields.pop("name_len")
            fields.pop("pad")
            name = bytes(buf[off: off + n]) if buf is not None and n else None
            self.items.append(("slice", tuple(fields.values()), name))

    def event(self, ev) -> None:
        self.items.append(("event", repr(ev)))


def _read(path, monkeypatch, **constants) -> tuple[list[tuple], dict]:
    module = cj if path.suffix == ".json" else pf
    with monkeypatch.context() as m:
        for name, value in constants.items():
            m.setattr(module, name, value)
        reader = (cj.ChromeJsonReader if path.suffix == ".json" else pf.PerfettoReader)(str(path))
        rec = _Recorder()
        info = reader.read(rec)
    return rec.items, {"slices": info.slices, "origin": info.origin_ns, "ended": info.ended,
                       "bytes": info.bytes_read, "malformed": info.malformed}


def test_small_blocks_and_two_halves_read_as_the_whole_file(trace, monkeypatch):
    whole, whole_info = _read(trace, monkeypatch)  # the test file fits one block: no cut, no split
    kind = [n for n in SLICE_DTYPE.names if n not in ("name_off", "name_len", "pad")].index("kind")
    x_slices = [item for item in whole if item[0] == "slice" and item[1][kind] == SLICE_X]
    assert len(x_slices) == sum(len(b) for b in _records())  # every record, once
    assert any(item[0] == "event" for item in whole)  # the metadata went the other way, in between
    sizes = [97, 256, 1000, 4093] if trace.suffix == ".json" else [1, 2, 17, 100, 999]
    for block in sizes:
        if trace.suffix == ".json":
            for split_min in (0, 10**9):  # every block in two halves, or none
                got, info = _read(trace, monkeypatch, BLOCK=block, SLACK=64, SPLIT_MIN=split_min)
                assert (got, info) == (whole, whole_info), (block, split_min)
        else:
            got, info = _read(trace, monkeypatch, BLOCK=block)
            assert (got, info) == (whole, whole_info), block


def _parse(data: bytes, final: int) -> tuple[int, np.ndarray, np.ndarray]:
    buf = bytearray(data) + bytearray(16)  # slack past the end, as the reader's buffers have
    slices = np.zeros(256, dtype=SLICE_DTYPE)
    odd = np.zeros(3 * 256, dtype=np.int64)
    counts = np.zeros(2, dtype=np.int64)
    used = native.lib().tt_json_parse(native.address(buf), len(data), final, slices.ctypes.data, 256,
                                      odd.ctypes.data, 256, counts.ctypes.data, counts.ctypes.data + 8)
    return used, slices[: counts[0]], odd[: 3 * counts[1]].reshape(-1, 3)


def test_a_json_line_cut_at_any_byte_is_left_for_the_next_block(tmp_path):
    text = _write(tmp_path / "t.json").read_bytes()
    lines = text.split(b"\n")
    body = b"\n".join(lines[5:13]) + b"\n"  # slices, GPU spans, flows: 8 whole lines
    ends = [i + 1 for i, ch in enumerate(body) if ch == ord("\n")]
    used, all_slices, all_odd = _parse(body, 0)
    assert used == len(body) and len(all_slices) + len(all_odd) == 8
    for cut in range(len(body) + 1):
        used, slices, odd = _parse(body[:cut], 0)
        whole_lines = max([e for e in ends if e <= cut], default=0)
        assert used == whole_lines, cut  # a cut line is never taken, nor a whole one left
        n = sum(1 for e in ends if e <= cut)
        assert len(slices) + len(odd) == n, cut
        assert slices.tobytes() == all_slices[: len(slices)].tobytes(), cut
        used, slices, odd = _parse(body[:cut], 1)  # the file's end: the cut line is its last
        assert used == cut, cut
        assert len(slices) + len(odd) == n + (cut > whole_lines), cut
        assert slices.tobytes() == all_slices[: len(slices)].tobytes(), cut  # a cut event is never ours


def test_the_layout_is_told_by_the_first_64_kib_and_a_bad_line_after_them_names_itself(tmp_path):
    """A file whose first 64 KiB are whole event lines is read line by line (the fast path): a line
    that is not JSON further on (here at about 100 KB) is named in the error, not the whole file."""
    event = b'{"ph": "X", "cat": "other", "name": "x", "ts": 1.0, "dur": 1.0, "pid": 1, "tid": 1},'
    lines = [event] * (100_000 // len(event))
    path = tmp_path / "t.json"
    path.write_bytes(b"[\n" + b"\n".join([*lines, b'{"ph": "X", "name": broken},', event[:-1]]) + b"\n]\n")
    assert (1 << 16) < path.read_bytes().index(b"broken") < (1 << 17)
    with pytest.raises(TraceFileError, match=r"an event is not JSON \(b'\{\"ph\": \"X\", \"name\": broken\},'"):
        cj.ChromeJsonReader(str(path)).read(Visitor())


def test_a_document_on_one_line_cut_short_keeps_its_whole_events(tmp_path):
    """Another tool's layout (the array on one line), cut inside its last event: the events before the
    cut are read, the array is not closed."""
    event = b'{"ph": "X", "cat": "trt_trace", "name": "execute_engine", "ts": %d.0, "dur": 5.0, "pid": 1, ' \
            b'"tid": 1, "args": {"call_id": %d, "engine_id": 1}}'
    whole = b"[" + b",".join(event % (10 * k, k) for k in range(1, 6)) + b"]"
    path = tmp_path / "one_line.json"
    path.write_bytes(whole[: whole.rindex(b'"dur"')])  # cut inside the fifth event
    info = cj.ChromeJsonReader(str(path)).read(Visitor())
    assert (info.slices, info.array_closed, info.ended, info.malformed) == (4, False, "cut short", 0)


def test_a_document_on_one_line_with_invalid_utf8_is_read_repaired(tmp_path):
    """The one-line layout goes through orjson whole: an engine name cut inside a character (one bad
    byte) is replaced and counted, and the events are read."""
    doc = (b'[{"ph": "X", "cat": "trt_trace", "name": "execute_engine", "ts": 1.0, "dur": 5.0, "pid": 1, "tid": 1, '
           b'"args": {"call_id": 1, "engine_id": 1, "engine": "res\xffnet"}}]')
    path = tmp_path / "bad_utf8.json"
    path.write_bytes(doc)
    info = cj.ChromeJsonReader(str(path)).read(Visitor())
    assert (info.slices, info.bad_utf8, info.array_closed, info.process(1).engines) == (1, 1, True, {1: "res\ufffdnet"})


def test_a_line_with_invalid_utf8_is_read_repaired_and_a_line_that_is_no_json_is_refused(tmp_path):
    """One event per line: a process name cut inside a character (one bad byte), in the first 64 KiB
    or after them (read by the line reader itself, not the layout check), is replaced and counted; a
    line that is not JSON at all is not "repaired" into one, it is refused."""
    event = b'{"ph": "X", "cat": "trt_trace", "name": "execute_engine", "ts": 1.0, "dur": 5.0, "pid": 1, "tid": 1, ' \
            b'"args": {"call_id": 1, "engine_id": 1, "engine": "e"}},'
    other = b'{"ph": "X", "cat": "other", "name": "x", "ts": 1.0, "dur": 1.0, "pid": 1, "tid": 1},'
    name = b'{"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "sy\x80thetic"}},'
    path = tmp_path / "lines.json"
    for before in (b"", (other + b"\n") * (70_000 // len(other))):
        path.write_bytes(b"[\n" + before + event + b"\n" + name + b"\n" + event[:-1] + b"\n]\n")
        info = cj.ChromeJsonReader(str(path)).read(Visitor())
        assert (info.bad_utf8, info.process(1).label, info.slices) == (1, "sy\ufffdthetic", 2)
    path.write_bytes(b"[\n" + event + b"\n" + name.replace(b'"pid"', b"pid") + b"\n" + event[:-1] + b"\n]\n")
    with pytest.raises(TraceFileError, match="not a trace JSON file"):
        cj.ChromeJsonReader(str(path)).read(Visitor())


def test_a_varint_cut_by_the_end_of_what_was_read_is_not_read_past_it():
    """A packet's length prefix cut by a read: None (read on), never the bytes after `end`."""
    assert pf._varint(bytearray(b"\x96\x01"), 0, 2) == (150, 2)
    assert pf._varint(bytearray(b"\x96\x01"), 0, 1) is None  # the next byte lies past the end
    assert pf._varint(bytearray(b"\x05\x96\x01\x07"), 1, 3) == (150, 3)
    assert pf._varint(bytearray(b"\x80" * 10 + b"\x01"), 0, 11) is None  # longer than 64 bits
    assert pf._varint(bytearray(b"\xff" * 9 + b"\x01"), 0, 10) == ((1 << 64) - 1, 10)


def test_both_formats_hand_out_the_same_slices_threads_included(tmp_path):
    """The same records through the JSON and the Perfetto writer: every call's and phase's slice read
    back with its thread (the Perfetto reader's track -> tid table) as JSON gives it."""
    class Rows(Visitor):
        def __init__(self) -> None:
            self.rows: list[tuple] = []

        def slices(self, slices, buf) -> None:
            x = slices[slices["kind"] == SLICE_X]
            self.rows += zip(x["call_id"].tolist(), x["phase"].tolist(), x["begin_ns"].tolist(), x["tid"].tolist(),
                             strict=True)

    got = {}
    for suffix in (".json", ".pftrace"):
        rows = Rows()
        reader = cj.ChromeJsonReader if suffix == ".json" else pf.PerfettoReader
        reader(str(_write(tmp_path / f"t{suffix}"))).read(rows)
        got[suffix] = sorted(rows.rows)
    assert got[".json"] == got[".pftrace"] and len({r[3] for r in got[".json"]}) > 2


def test_a_perfetto_file_is_decoded_on_a_thread_of_its_own_whose_failure_comes_out_of_read(tmp_path):
    """The Perfetto reader reads and decodes on a producer thread (pipeline.py), which also reports
    progress, while the visitor runs on the caller's: an exception raised there (here by the progress
    callback) comes out of read() as it was raised, and the producer thread ends."""
    path = _write(tmp_path / "t.pftrace")
    seen: list[threading.Thread] = []
    rec = _Recorder()
    pf.PerfettoReader(str(path)).read(rec, progress=lambda n: seen.append(threading.current_thread()))
    assert seen and threading.current_thread() not in seen and len(rec.items) > len(_records()[0])
    assert not any(t.is_alive() for t in seen)

    class Stopped(Exception):
        pass

    def stop(n: int) -> None:
        raise Stopped(n)

    with pytest.raises(Stopped):
        pf.PerfettoReader(str(path)).read(Visitor(), progress=stop)
    assert "trt_trace reader" not in [t.name for t in threading.enumerate()]


def test_slice_and_odd_line_arrays_filled_to_the_brim_read_as_the_whole_file(tmp_path, monkeypatch):
    """The native parse stops where its slice array or its odd-line array is full, and the reader
    parses on from there: with arrays of a few rows (the reader's are 65,536 and 4,096), every
    block, half and the file's last block is parsed to its end, and reads as the whole file."""
    path = _write(tmp_path / "t.json")
    whole, whole_info = _read(path, monkeypatch)
    for slices in (1, 2, 5):
        for odd in (1, 2, 3):
            for split_min in (0, 10**9):  # every block in two halves (the first must end at the split), or none
                got, info = _read(path, monkeypatch, SLICES=slices, ODD=odd, SPLIT_MIN=split_min)
                assert (got, info) == (whole, whole_info), (slices, odd, split_min)
    got, info = _read(path, monkeypatch, SLICES=2, ODD=2, BLOCK=512, SLACK=64)
    assert (got, info) == (whole, whole_info)


_OTHER = b'{"ph": "X", "cat": "other", "name": "x", "ts": 1.0, "dur": 1.0, "pid": 1, "tid": 1}'


def _events_read(path) -> list[dict]:
    events: list[dict] = []

    class Events(Visitor):
        def event(self, ev) -> None:
            events.append(ev)

    cj.ChromeJsonReader(str(path)).read(Events())
    return events


def test_a_streamed_arrays_brackets_may_share_a_line_with_its_first_and_last_events(tmp_path):
    """`[{...},` as the first line and `{...}]` as the last, in a file longer than the 64 KiB that tell
    its layout (so read line by line): every event is read, the first line's and the last's included;
    and a copy cut by a kill inside its last event (after a nested object's `},`) keeps every whole one."""
    n = (1 << 16) // len(_OTHER) + 10
    body = b"".join(_OTHER + b",\n" for _ in range(n))
    closed = tmp_path / "closed.json"
    closed.write_bytes(b"[" + body + _OTHER + b"]\n")
    assert len(_events_read(closed)) == n + 1
    cut = tmp_path / "cut.json"
    cut.write_bytes(b"[" + body + b'{"ph": "X", "cat": "other", "args": {"k": 1}, "name": "x')
    assert len(_events_read(cut)) == n


@pytest.mark.parametrize("last", [_OTHER + b", " + _OTHER[:20], _OTHER + b"\0" * 8])
def test_a_line_cut_by_a_kill_keeps_its_whole_events(tmp_path, last):
    """The last line of a streamed array (past the first 64 KiB: read line by line), cut inside its
    second event, or followed by the zeros a file system may leave after a crash: its first event is
    read; the same bytes before the file's end are refused, the line quoted (its first 60 bytes)."""
    n = (1 << 16) // len(_OTHER) + 10
    path = tmp_path / "cut.json"
    body = b"[\n" + b"".join(_OTHER + b",\n" for _ in range(n))
    path.write_bytes(body + last)
    assert len(_events_read(path)) == n + 1
    path.write_bytes(body + last + b"\n" + _OTHER + b"]\n")
    with pytest.raises(TraceFileError) as err:
        _events_read(path)
    assert str(err.value) == f"{path}: an event is not JSON ({last[:60]!r}...): not a trace JSON file?"
    assert len(last) > 60


@pytest.mark.parametrize("n", [3, (1 << 16) // len(_OTHER) + 10])
def test_a_broken_last_line_costs_the_same_events_in_a_small_file_as_in_a_large_one(tmp_path, n):
    """A streamed array's last line cut by a kill inside a nested object (after its `},`), or stray bytes after
    the closing `]`: every whole event before it is read, whether the file is under the 64 KiB that tell its
    layout (the whole file seen at once) or past them (a sample of it)."""
    body = b"[\n" + b"".join(_OTHER + b",\n" for _ in range(n))
    cut = tmp_path / "cut.json"
    cut.write_bytes(body + b'{"ph": "X", "cat": "other", "args": {"k": 1}, "name": "x')
    assert len(_events_read(cut)) == n
    stray = tmp_path / "stray.json"
    stray.write_bytes(body + _OTHER + b"\n]x")
    assert len(_events_read(stray)) == n + 1


def test_the_layout_rule_at_its_edges():
    """Which reader takes a file (`_line_layout`): line by line where the file starts with `[` and each
    whole line of its first 64 KiB, at most 2,000 lines of it, holds whole events; the whole document
    in memory otherwise, and where a whole file is one line (an array written all at once)."""
    layout = cj.ChromeJsonReader._line_layout
    ev = b'{"ph": "i", "ts": 1},'
    lines = [b"[", *[ev] * 1999, b"not json", ev]
    text = b"\n".join(lines) + b"\n"
    assert len(text) < 1 << 16
    assert layout(text, len(text))  # the 2,001st line is not looked at
    bad_2000th = [b"[", *[ev] * 1998, b"not json", ev, ev]
    assert not layout(b"\n".join(bad_2000th) + b"\n", len(text))
    # A sample of a longer file: its last piece may be cut, so it is not looked at; the whole lines are.
    sample = b"[\n" + ev + b"\n" + b'{"ph": "i", "t'
    assert layout(sample, len(sample) + 100)
    assert not layout(b"[\n" + ev + b"\nnot json\n" + b'{"ph": "i", "t', len(sample) + 100)
    # One line: the document; two lines: line by line.
    one = b'[{"ph": "i", "ts": 1}, {"ph": "i", "ts": 2}]'
    assert not layout(one, len(one))
    two = b'[{"ph": "i", "ts": 1},\n{"ph": "i", "ts": 2}]'
    assert layout(two, len(two))
