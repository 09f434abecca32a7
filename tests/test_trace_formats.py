"""The output formats: one registry on each side, each format registered by the file that implements it
(csrc/session/trace_format.h for the native writer, trt_trace/io/formats.py for Python), and the two agree."""

from __future__ import annotations

import pytest

import trt_trace  # noqa: F401  (loads the library and registers every format)
from trt_trace.io import formats
from trt_trace.io.readers.opening import open_reader
from trt_trace.io.readers.trace_info import TraceFileError
from trt_trace.native import ops
from trt_trace.runtime.native_trace import NativeTrace


def test_the_native_writers_formats_are_the_ones_python_offers():
    # A format registered on one side only would be offered and refused at start, or never offered.
    assert ops.writer_formats() == sorted(formats.written())
    assert {"json", "perfetto"} <= set(formats.written())
    assert not {"torch.profiler", "nsys"} & set(formats.written())  # read, never written


def test_an_unknown_format_is_one_line_naming_the_ones_there_are(tmp_path):
    with pytest.raises(ValueError, match=f"writes {' or '.join(formats.written())}, not 'lines'$"):
        NativeTrace(str(tmp_path / "t.lines"), fmt="lines")


def test_a_format_written_but_not_read_is_one_line_from_the_readers(tmp_path, monkeypatch):
    fmt = formats.TraceFormat("lines", (".lines",), lambda head: head.startswith(b"#lines"), None, priority=100,
                              native=True)
    monkeypatch.setitem(formats._REGISTRY, "lines", fmt)
    path = tmp_path / "t.lines"
    path.write_bytes(b"#lines\n1,2\n")
    assert formats.sniff(str(path)) is fmt and formats.by_suffix(str(path)) is fmt
    with pytest.raises(TraceFileError, match=r"t\.lines is a lines file, which trt_trace writes but does not read"):
        open_reader(str(path))



def test_an_empty_file_is_called_empty_and_a_one_byte_file_is_not(tmp_path):
    """Empty is size 0: a one-byte file is read by what it holds (a JSON start is opened as JSON, for the reader
    to find it cut short; anything else is no trace)."""
    path = tmp_path / "t.json"
    path.write_bytes(b"")
    with pytest.raises(TraceFileError, match=r"t\.json is empty \(not a trace file\)$"):
        open_reader(str(path))
    path.write_bytes(b"x")
    with pytest.raises(TraceFileError, match=r"t\.json is not a trace JSON file$"):
        open_reader(str(path))
    path.write_bytes(b"{")
    assert open_reader(str(path)) is not None
