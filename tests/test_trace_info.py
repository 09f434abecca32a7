"""The trace-level rules of trt_trace/io/readers/trace_info.py, one by one: which metadata event is an
end, why a trace (and each process of a merge) ended, what a JSON M event sets, and the exit code of
a verb that could not read its input. The readers' tests reach these rules through whole files;
mutants of the module (docs/mutation-testing.md) showed edges none of those files has."""

from __future__ import annotations

import numpy as np
import pytest
from synthetic_traces import engines_trace

from trt_trace.io.readers import Visitor, open_reader
from trt_trace.io.readers.trace_info import (
    CLOSED,
    CUT_SHORT,
    SIZE_LIMIT,
    SPLIT,
    NotATrace,
    ProcessInfo,
    TraceFileError,
    TraceInfo,
    bad_input_rc,
    ended_of,
    is_end_metadata,
)
from trt_trace.schema.trace_format import METADATA_EVENT

START = {"version": 3, "pid": 1}


@pytest.mark.parametrize("args,end", [({"ended": CLOSED}, True), ({"records_written": 0}, True),
                                      ({"events_not_written": 0}, True), (START, False), ({}, False)])
def test_an_end_is_any_metadata_with_ended_or_a_count_of_what_was_written(args, end):
    assert is_end_metadata(args) is end


@pytest.mark.parametrize("args,ended", [({}, CLOSED), ({"ended": ""}, CLOSED), ({"ended": 3}, CLOSED),
                                        ({"ended": None}, CLOSED), ({"ended": SPLIT}, SPLIT),
                                        ({"ended": "whatever"}, "whatever")])
def test_an_end_without_a_usable_ended_is_an_older_writers_closed_trace(args, ended):
    assert ended_of(args) == ended


def _process(*metas: dict) -> ProcessInfo:
    return ProcessInfo(1, 0, metas=list(metas))


def test_a_process_ended_where_its_last_part_that_is_not_split_ended():
    split, closed, limit = {"ended": SPLIT, "next_part": "t.1.json"}, {"ended": CLOSED}, {"ended": SIZE_LIMIT}
    # Parts merged in any order: the end that is not "split" is the process's.
    assert _process(START, split, closed).end_metadata is closed
    assert _process(START, closed, split).end_metadata is closed
    assert _process(START, split, limit, closed).end_metadata is closed  # the last of several
    assert _process(START, split, limit).ended == SIZE_LIMIT
    # Only split ends (the last part missing): the last of them.
    other = {"ended": SPLIT, "next_part": "t.2.json"}
    assert _process(START, split, other).end_metadata is other and _process(split).ended == SPLIT
    # A merge's own metadata (it carries `merged`) is the file's, not the process's.
    assert _process(START, {"ended": CLOSED, "merged": {"inputs": 2}}).end_metadata is None
    assert _process(START).ended == CUT_SHORT and _process().end_metadata is None


def test_a_process_meta_is_every_metadata_in_order_the_later_winning():
    p = _process({"a": 1, "b": 1}, {"b": 2}, {"c": 3})
    assert p.meta == {"a": 1, "b": 2, "c": 3} and _process().meta == {}


def test_processes_are_numbered_in_the_order_first_seen():
    info = TraceInfo("t.json", "json")
    assert [info.process(p).order for p in (9, 4, 9, 7)] == [0, 1, 0, 2]
    assert list(info.processes) == [9, 4, 7]


def test_metadata_events_and_m_events():
    info = TraceInfo("t.json", "json")
    info.metadata_event(3, ["not", "a", "dict"])
    assert info.malformed == 1 and info.last_metadata is None and 3 not in info.processes
    info.m_event(5, {"name": METADATA_EVENT, "args": START})
    assert info.process(5).metas == [START] and info.last_metadata is START and info.malformed == 1
    info.m_event(5, {"name": "process_name", "args": {"name": "serve"}})
    info.m_event(6, {"name": "process_name", "args": "serve"})
    info.m_event(7, {"name": "process_name", "args": {}})
    assert (info.process(5).label, info.process(6).label, info.process(7).label) == ("serve", "", "")
    for pid, index, want in ((10, 4, 4), (11, 5.0, 5), (12, 5.5, 0), (13, True, 0), (14, "4", 0), (15, None, 0)):
        info.m_event(pid, {"name": "process_sort_index", "args": {"sort_index": index}})
        assert info.process(pid).sort_index == want, index
    info.m_event(16, {"name": "process_sort_index", "args": 4})
    assert info.process(16).sort_index == 0
    info.m_event(17, {"name": "thread_name", "args": {"name": "x"}})  # any other M event: the process is seen
    assert 17 in info.processes and info.process(17).sort_index is None and info.process(17).label == ""


@pytest.mark.parametrize("fmt,closed,want", [("json", True, CLOSED), ("json", False, CUT_SHORT),
                                             ("perfetto", True, CUT_SHORT)])
def test_a_merged_trace_without_an_end_of_its_own_is_closed_when_its_json_array_is(fmt, closed, want):
    info = TraceInfo("m.json", fmt)
    info.metadata_event(1, {"ended": CLOSED})  # a rank's end, before the merge's own metadata
    info.metadata_event(1, {"merged": {"inputs": ["a", "b"]}, "version": 3})
    info.array_closed = closed
    assert info.merged == {"inputs": ["a", "b"]} and info.ended == want


def test_a_trace_ended_as_its_last_metadata_says():
    info = TraceInfo("t.json", "json")
    assert info.ended == CUT_SHORT and info.merged is None
    info.metadata_event(1, START)
    assert info.ended == CUT_SHORT  # a start and no end: cut short, array closed or not
    info.metadata_event(1, {"ended": SIZE_LIMIT, "events_not_written": 3})
    assert info.ended == SIZE_LIMIT
    info.metadata_event(2, START)  # a later start (another process): the file's last metadata is no end
    assert info.ended == CUT_SHORT
    info.metadata_event(2, {"records_written": 10})  # an older writer's end: closed
    assert info.ended == CLOSED


def test_a_verb_that_cannot_read_its_input_exits_2_only_for_what_is_no_trace():
    class Refused(TraceFileError):
        rc = 2

    assert bad_input_rc(NotATrace("x: not a trace")) == 2 and bad_input_rc(Refused("x")) == 2
    assert bad_input_rc(TraceFileError("x: cut")) == 1 and bad_input_rc(OSError("x")) == 1


@pytest.mark.parametrize("suffix", [".json", ".pftrace"])
def test_a_read_counts_the_files_bytes_and_slices(tmp_path, suffix):
    path = engines_trace(tmp_path / f"t{suffix}", {"e": np.full(3, 10_000)})
    info = open_reader(str(path)).read(Visitor())
    assert info.bytes_read == path.stat().st_size and info.slices == 3 * 5 and info.malformed == 0
    # The start and end metadata (JSON M events, Perfetto instants) are read: the trace is closed.
    assert info.ended == CLOSED and info.last_metadata["ended"] == CLOSED
    assert [m.get("ended") for p in info.processes.values() for m in p.metas] == [None, CLOSED]


def test_json_without_a_trace_event_is_no_trace_and_one_event_is_one(tmp_path):
    """`[]` is refused as no trace (nothing counted before the read); one M event makes it a trace."""
    empty, one = tmp_path / "empty.json", tmp_path / "one.json"
    empty.write_text("[]\n")
    one.write_text('[{"ph": "M", "name": "thread_name", "pid": 1, "tid": 0, "args": {"name": "s"}}]\n')
    with pytest.raises(NotATrace):
        open_reader(str(empty)).read(Visitor())
    info = open_reader(str(one)).read(Visitor())
    assert (info.trace_events, info.slices, list(info.processes)) == (1, 0, [1])
