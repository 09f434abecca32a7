"""The readers' end notes at the edges tests/test_reader_truth.py left open, found by mutants of
trt_trace/io/readers/end_notes.py (docs/mutation-testing.md): each end without its count or next part,
an end no writer of today writes, and a merge whose ranks ended differently. Traces are written by
trt_trace's own writers (tests/synthetic_traces.py) and merged by trt-trace merge's code."""

from __future__ import annotations

import errno
import os

import pytest
from synthetic_traces import call_rows, write_trace

from trt_trace.analysis.merge import merge
from trt_trace.io.readers import Visitor, chrome_json, read_calls
from trt_trace.io.readers.chrome_json import ChromeJsonReader
from trt_trace.io.readers.end_notes import end_notes
from trt_trace.io.readers.perfetto import PerfettoReader
from trt_trace.io.readers.trace_info import NotATrace, TraceFileError


def _calls(n: int, first: int = 1) -> list[tuple]:
    rows = []
    for k in range(n):
        rows += call_rows(first + k, 1, 10**9 + k * 10**6, [1_000, 2_000, 3_000, 50_000])
    return rows


def notes_of(path) -> list[str]:
    return end_notes(read_calls(str(path), lambda calls, info: None))


SPLIT = "{p} is one part of a split trace (merge every part into one: trt-trace merge PART ... -o all.json)"


@pytest.mark.parametrize("end,line", [
    ({"ended": "size limit"}, "{p} stopped at the size limit"),
    ({"ended": "split"}, SPLIT),
    ({"ended": "split", "next_part": ""}, SPLIT),
    ({"ended": "write failed"}, "{p}: writing failed before the end"),
    ({"ended": "a future end"}, "{p} ended: a future end"),
])
def test_an_end_without_its_details_is_still_one_whole_line(tmp_path, end, line):
    path = write_trace(tmp_path / "t.json", _calls(3), ["", "e"], end=end)
    text = path.read_bytes()  # the writer counts what it did not write: here, no count at all
    assert text.count(b',"events_not_written":0') == 1
    path.write_bytes(text.replace(b',"events_not_written":0', b""))
    assert notes_of(path) == [line.format(p=path)]


def test_a_count_of_true_is_no_count(tmp_path):
    """events_not_written must be a number: a boolean there says nothing of how many."""
    path = write_trace(tmp_path / "t.json", _calls(3), ["", "e"], end={"ended": "size limit"})
    path.write_bytes(path.read_bytes().replace(b'"events_not_written":0', b'"events_not_written":true'))
    assert notes_of(path) == [f"{path} stopped at the size limit"]
    path.write_bytes(path.read_bytes().replace(b'"events_not_written":true', b'"events_not_written":1'))
    assert notes_of(path) == [f"{path} stopped at the size limit: 1 event not written"]


def test_a_merge_says_how_each_rank_ended_that_did_not_close(tmp_path):
    """Rank 1 was killed (no end), rank 0 closed: the merged file's note names rank 1 alone."""
    closed = write_trace(tmp_path / "r0.json", _calls(3), ["", "e"], end={}, pid=100, rank=0)
    killed = write_trace(tmp_path / "r1.json", _calls(3, first=10), ["", "e"], end=None, pid=200, rank=1)
    out = tmp_path / "all.json"
    merge([str(closed), str(killed)], str(out))
    assert notes_of(out) == [f"{out}: rank 1 · h was cut short: no end record (process killed?)"]
    # Both closed: no note at all.
    other = write_trace(tmp_path / "r1b.json", _calls(3, first=10), ["", "e"], end={}, pid=200, rank=1)
    both = tmp_path / "both.json"
    merge([str(closed), str(other)], str(both))
    assert notes_of(both) == []


def _json_events(path, events: list[bytes]):
    """A JSON trace of these event lines, read: its TraceInfo."""
    path.write_bytes(b"[\n" + b",\n".join(events) + b"\n]\n")
    return ChromeJsonReader(str(path)).read(Visitor())


CALL = (b'{"ph": "X", "cat": "trt_trace", "name": "execute_engine", "ts": 1.0, "dur": 5.0, "pid": 1, "tid": 1, '
        b'"args": {"call_id": 1, "engine_id": 1, "engine": "e"}}')


def test_events_that_are_no_events_are_counted_malformed_one_each(tmp_path):
    """Not an object, a pid that is no id, one of trt_trace's call slices with args that are no object:
    each one malformed event, the call beside them read."""
    bad = [b"1", b'{"ph": "X", "name": "x", "ts": 1.0, "dur": 1.0, "pid": "a", "tid": 1}',
           CALL.replace(b'{"call_id": 1, "engine_id": 1, "engine": "e"}', b"[]")]
    info = _json_events(tmp_path / "t.json", [CALL, *bad])
    assert (info.malformed, info.slices) == (len(bad), 1)


def test_a_process_is_one_with_trt_traces_events_and_an_event_without_a_pid_is_process_0(tmp_path):
    """trt_trace's slices make their process, also one that is no call (here without its call id) and one
    without a pid (process 0); another tool's slices and trt_trace's events of other kinds (an instant)
    do not; metadata without a pid is process 0's."""
    no_call = CALL.replace(b'{"call_id": 1, "engine_id": 1, "engine": "e"}', b"{}")
    events = [no_call, no_call.replace(b' "pid": 1,', b""),
              b'{"ph": "X", "cat": "other", "name": "x", "ts": 1.0, "dur": 1.0, "pid": 2, "tid": 1}',
              b'{"ph": "i", "cat": "trt_trace", "name": "y", "ts": 1.0, "pid": 3, "tid": 1, "s": "t"}',
              b'{"ph": "M", "name": "process_name", "tid": 0, "args": {"name": "no pid"}}']
    info = _json_events(tmp_path / "t.json", events)
    assert sorted(info.processes) == [0, 1] and info.process(0).label == "no pid"


def test_a_replacement_character_already_in_the_text_is_not_counted_as_replaced(tmp_path):
    """A name holding U+FFFD as it is, and one invalid byte: one replaced."""
    name = b'{"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "a\xef\xbf\xbdb\x80c"}}'
    info = _json_events(tmp_path / "t.json", [CALL, name])
    assert (info.bad_utf8, info.process(1).label) == (1, "a\ufffdb\ufffdc")


def test_a_closed_array_is_told_by_its_last_byte_also_without_a_newline(tmp_path):
    """`]` as the file's very last byte closes the array (after a value that is no object, so that only
    the `]` tells): values that are no trace events, in a file longer than the 64 bytes whose end is
    looked at, are refused as no trace, with and without a final newline; cut short, not refused."""
    doc = b"[" + b", ".join(b'{"a": %d}' % k for k in range(20)) + b", 7]"
    path = tmp_path / "t.json"
    for text in (doc, doc + b"\n"):
        assert len(text) > 64 + 1
        path.write_bytes(text)
        with pytest.raises(NotATrace):
            ChromeJsonReader(str(path)).read(Visitor())
    path.write_bytes(doc[:-1])
    assert ChromeJsonReader(str(path)).read(Visitor()).array_closed is False


@pytest.mark.parametrize("reader", [ChromeJsonReader, PerfettoReader])
def test_a_path_that_cannot_be_opened_is_one_line_with_the_reason(tmp_path, reader):
    """A directory given as the trace: "cannot read PATH: Is a directory", the system's words alone."""
    with pytest.raises(TraceFileError) as err:
        reader(str(tmp_path)).read(Visitor())
    assert str(err.value) == f"cannot read {tmp_path}: {os.strerror(errno.EISDIR)}"


def test_a_json_file_that_goes_away_before_its_document_is_read_is_one_line(tmp_path, monkeypatch):
    """The layout is read from the file's first 64 KiB; where the file cannot be opened again for the
    whole document (removed or its mode changed in between), the line says why."""
    path = tmp_path / "one_line.json"
    path.write_bytes(b"[" + CALL + b"]")
    opened: list[str] = []

    def open_once(name, *args, **kwargs):
        if opened:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), name)
        opened.append(name)
        return open(name, *args, **kwargs)

    monkeypatch.setattr(chrome_json, "open", open_once, raising=False)
    with pytest.raises(TraceFileError) as err:
        ChromeJsonReader(str(path)).read(Visitor())
    assert str(err.value) == f"cannot read {path}: {os.strerror(errno.EACCES)}"


@pytest.mark.parametrize("data", [b"", b"\x0a"])
def test_a_perfetto_file_of_no_whole_packet_reads_as_nothing_cut_short(tmp_path, data):
    """The Perfetto reader itself (the verbs refuse an empty file before it): an empty file, and one cut
    right after its first packet's tag, read every byte and nothing else; cut short."""
    path = tmp_path / "t.pftrace"
    path.write_bytes(data)
    info = PerfettoReader(str(path)).read(Visitor())
    assert (info.bytes_read, info.slices, info.ended) == (len(data), 0, "cut short")
