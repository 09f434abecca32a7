"""The readers' end notes at the edges tests/test_reader_truth.py left open, found by mutants of
trt_trace/io/readers/end_notes.py (docs/mutation-testing.md): each end without its count or next part,
an end no writer of today writes, and a merge whose ranks ended differently. Traces are written by
trt_trace's own writers (tests/synthetic_traces.py) and merged by trt-trace merge's code."""

from __future__ import annotations

import pytest
from synthetic_traces import call_rows, write_trace

from trt_trace.analysis.merge import merge
from trt_trace.io.readers import read_calls
from trt_trace.io.readers.end_notes import end_notes


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
