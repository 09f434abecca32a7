"""Reads a Chrome JSON trace in bounded chunks.

trt_trace writes one event per line (writers/chrome_json.py): its slices and flows in a fixed
layout, which native code parses (csrc/readers/json_lines.cpp); the other lines (metadata, track
names, another tool's events, a line cut by a kill) go through orjson, one line at a time. A file
that is not laid out one event per line (one long line, pretty-printed JSON, the object form) is
read whole with orjson instead: correct, but in memory. A streamed array cut short by a kill
keeps every complete event, as the Perfetto UI does.
"""

from __future__ import annotations

import os
import queue
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import orjson

from ...schema.trace_format import CATEGORY, JSON_SUFFIX
from .. import formats
from . import native, pipeline
from .columns import SLICE_DTYPE, SLICE_X
from .events import U32, Malformed, integer, slice_fields, to_slices
from .trace_info import NotATrace, TraceFileError, TraceInfo

BLOCK = 8 << 20  # bytes read at a time
SLICES = 1 << 16
ODD = 1 << 12
SLACK = 1 << 20  # room past a block for the line a block boundary cuts (carried into the next block)
SPLIT_MIN = 1 << 20  # blocks at least this large are parsed as two halves on two threads


class Visitor:
    """What a reader hands out: slices in chunks (numpy SLICE_DTYPE; `buf` holds the engine names'
    literals of native rows), and every event that is not a native slice as its dict."""

    def slices(self, slices: np.ndarray, buf: bytes | bytearray | None) -> None: ...

    def event(self, ev: dict[str, Any]) -> None: ...


REPLACEMENT = "\ufffd".encode()


def repaired_utf8(data: bytes) -> tuple[bytes, int]:
    """`data` with each invalid UTF-8 sequence replaced by U+FFFD, and how many were replaced (JSON is
    UTF-8: an engine name cut mid-character must not lose the file; the readers count what they replace)."""
    fixed = data.decode("utf-8", "replace").encode()
    return fixed, fixed.count(REPLACEMENT) - data.count(REPLACEMENT)


def loads_repairing(data: bytes, info: TraceInfo | None = None) -> Any:
    """orjson.loads, and where the text is not valid UTF-8, of it repaired (counted in info.bad_utf8)."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        fixed, n = repaired_utf8(data)
        if n == 0:
            raise
        doc = orjson.loads(fixed)
        if info is not None:
            info.bad_utf8 += n
        return doc


def _line_is_json(line: bytes) -> bool:
    """Whether a line of a streamed array holds whole events (an empty line does: none)."""
    try:
        _events_of_line(line)
    except orjson.JSONDecodeError:
        return False
    return True


def _events_of_line(line: bytes, info: TraceInfo | None = None) -> list[Any]:
    """The events of one line of a streamed array: `{...}`, `{...},{...},`, `[{...}`, `{...}]`."""
    text = line.strip()
    if text.startswith(b"["):
        text = text[1:]
    if text.endswith(b"]"):
        text = text[:-1]
    text = text.strip().rstrip(b",").strip()
    if not text:
        return []
    return loads_repairing(b"[" + text + b"]", info)


def _salvage(text: bytes, info: TraceInfo | None = None) -> list[Any]:
    """The complete events at the start of a cut line (as today's reader: up to the last '},')."""
    for end in (text.rfind(b"},"), text.rfind(b"}")):
        if end < 0:
            continue
        try:
            return _events_of_line(text[: end + 1], info)
        except orjson.JSONDecodeError:
            continue
    return []


class ChromeJsonReader:
    format = "json"

    def __init__(self, path: str) -> None:
        self.path = path

    # -- the parts every mode shares ----------------------------------------------------------------

    def _handle(self, info: TraceInfo, events: list[Any], visitor: Visitor, converted: list[tuple]) -> None:
        for ev in events:
            if not isinstance(ev, dict):
                info.malformed += 1
                continue
            ph = ev.get("ph")
            if isinstance(ph, str):
                info.trace_events += 1
            try:
                pid = integer(ev.get("pid", 0), U32)
            except Malformed:
                info.malformed += 1
                continue
            if ph == "M":
                info.m_event(pid, ev)
            else:
                try:
                    fields = slice_fields(ev)
                except Malformed:
                    info.malformed += 1
                    continue
                if fields is not None:
                    converted.append(fields)
                    p = info.process(fields[10])
                    if fields[13] == SLICE_X and fields[0] == 0 and fields[4] not in p.engines:
                        p.engines[fields[4]] = fields[12]
                elif ph in ("X", "s", "f") and ev.get("cat") == CATEGORY:
                    info.process(pid)
            visitor.event(ev)

    def _flush_converted(self, info: TraceInfo, converted: list[tuple], visitor: Visitor) -> None:
        if converted:
            arr = to_slices(converted)
            self._note(info, arr)
            visitor.slices(arr, None)
            converted.clear()

    @staticmethod
    def _note(info: TraceInfo, arr: np.ndarray) -> np.ndarray:
        """Counts the slices and moves the trace's origin; returns the chunk's (pid, engine id, first
        row) triples of call slices (native.slice_facts: one native pass, not numpy's per field)."""
        info.slices += len(arr)
        low, pairs = native.slice_facts(arr)
        if low is not None:
            info.origin_ns = low if info.origin_ns is None else min(info.origin_ns, low)
        return pairs

    def _names(self, info: TraceInfo, arr: np.ndarray, buf: bytearray, pairs: np.ndarray) -> None:
        """Engine names of (pid, engine id) pairs seen for the first time (their first call's)."""
        for pid, eid, i in sorted(pairs.tolist()):  # by (pid, engine id): processes are made in that order
            p = info.process(pid)
            if eid not in p.engines:
                off, n = int(arr["name_off"][i]), int(arr["name_len"][i])
                try:
                    p.engines[eid] = str(loads_repairing(bytes(buf[off: off + n]), info))
                except orjson.JSONDecodeError:
                    p.engines[eid] = f"engine_{eid}"

    # -- reading -----------------------------------------------------------------------------------

    def read(self, visitor: Visitor, info: TraceInfo | None = None,
             progress: Callable[[int], None] | None = None) -> TraceInfo:
        """Reads the whole file into `visitor`; returns (and fills, where given) its TraceInfo."""
        info = info or TraceInfo(self.path, self.format)
        try:
            size = os.path.getsize(self.path)
            with open(self.path, "rb") as f:
                head = f.read(1 << 16)
                f.seek(max(0, size - 64))
                tail = f.read(64)
        except OSError as exc:
            raise TraceFileError(f"cannot read {self.path}: {exc.strerror or exc}") from None
        info.array_closed = tail.rstrip().endswith(b"]") or tail.rstrip().endswith(b"}")
        if self._line_layout(head, size):
            self._read_lines(info, visitor, progress)
        else:
            self._read_document(info, visitor)
        if info.array_closed and not info.processes and info.slices == 0 and not info.trace_events:
            # Whole, and not one trace event in it (`[]`, `[{"a": 1}]`, `{"traceEvents": []}`): not an empty
            # table and "cut short", but what it is. (A file cut before its first event is not closed.)
            raise NotATrace(f"{self.path} is not a trace: JSON without a single trace event (an object with "
                            "a \"ph\" phase)")
        return info

    @staticmethod
    def _line_layout(head: bytes, size: int) -> bool:
        """Whether the file looks like a streamed array of one event per line: it starts with `[` and
        every whole line of its first 64 KiB holds whole events."""
        text = head.lstrip()
        if not text.startswith(b"["):
            return False
        lines = text.split(b"\n")
        if len(head) < size:
            lines = lines[:-1]  # the last one may be cut by the sample
        elif len(lines) > 2 and not _line_is_json(lines[-1]):
            # A whole small file's last line cut by a kill, or stray bytes after its `]`: the line reader keeps
            # every whole line before it, as it does in a file past 64 KiB; the document's salvage would not.
            lines = lines[:-1]
        if len(lines) < 2 and len(head) >= size and len(text) > 2:
            return False  # one line: an array written all at once
        return all(_line_is_json(line) for line in lines[:2000])

    def _read_lines(self, info: TraceInfo, visitor: Visitor, progress: Callable[[int], None] | None) -> None:
        """Producer (a thread): blocks read and parsed natively; consumer (here): the slices to the
        visitor, the other lines through orjson, in file order."""
        so = native.lib()
        free_bufs: queue.Queue[bytearray] = queue.Queue()
        free_arrays: queue.Queue[np.ndarray] = queue.Queue()
        path = self.path
        try:
            block = min(BLOCK, os.path.getsize(path) + 1)  # a small file: a small buffer
        except OSError:
            block = BLOCK

        def buffer() -> bytearray:
            try:
                return free_bufs.get_nowait()
            except queue.Empty:  # at most DEPTH + 2 ever exist: the pipeline holds the rest
                return bytearray(block + SLACK)

        def array() -> np.ndarray:
            try:
                return free_arrays.get_nowait()
            except queue.Empty:
                return np.empty(SLICES, dtype=SLICE_DTYPE)

        def parse(base: int, start: int, stop: int, final: int) -> tuple[list[tuple], int]:
            """buf[start, stop) parsed into (slices, n, odd lines, offset) chunks; returns them and the
            offset reached (whole lines only, unless final)."""
            counts = np.zeros(2, dtype=np.int64)
            chunks = []
            pos = start
            while True:
                arr = array()
                odd = np.empty(3 * ODD, dtype=np.int64)
                used = so.tt_json_parse(base + pos, stop - pos, final, arr.ctypes.data, SLICES,
                                        odd.ctypes.data, ODD, counts.ctypes.data, counts.ctypes.data + 8)
                n, n_odd = int(counts[0]), int(counts[1])
                chunks.append((arr, n, odd[: 3 * n_odd], pos))
                pos += used
                if used == 0 or pos >= stop or (n < SLICES and n_odd < ODD):
                    return chunks, pos

        def produce(pipe: pipeline.Pipe) -> None:
            with ThreadPoolExecutor(1, thread_name_prefix="trt_trace parser") as pool:
                produce_with(pipe, pool)

        def produce_with(pipe: pipeline.Pipe, helper: ThreadPoolExecutor) -> None:
            carry = b""
            eof = False
            total = 0
            with open(path, "rb", buffering=0) as f:
                while not eof:
                    buf = buffer()
                    if len(buf) - SLACK < len(carry) + block // 2:  # a line longer than a block: room to read on
                        buf = bytearray(2 * (len(carry) + block) + SLACK)
                    buf[: len(carry)] = carry
                    filled = len(carry)
                    while filled < len(buf) - SLACK and not eof:
                        with memoryview(buf) as view:
                            got = f.readinto(view[filled: len(buf) - SLACK]) or 0
                        eof = got == 0
                        filled += got
                        total += got
                    base = native.address(buf)
                    # Two halves on two threads (the native parse releases the GIL), split after a
                    # newline: each half starts at a line's start, the first ends with a whole line.
                    split = buf.rfind(b"\n", 0, filled // 2) + 1 if filled >= SPLIT_MIN else 0
                    if split > 0:
                        first = helper.submit(parse, base, 0, split, 0)
                        second, pos = parse(base, split, filled, int(eof))
                        head, head_end = first.result()
                        if head_end != split:  # cannot happen: every line of the first half ends in it
                            raise RuntimeError(f"{path}: the first half of a block was parsed to {head_end}, "
                                               f"not to its end {split}")
                        chunks = head + second
                    else:
                        chunks, pos = parse(base, 0, filled, int(eof))
                    carry = bytes(buf[pos:filled])
                    if eof and carry:  # cannot happen: the final parse takes the last line
                        carry = b""
                    pipe.put((buf, filled, chunks, eof, total))

        def consume(item: tuple) -> None:
            buf, filled, chunks, eof, total = item
            info.bytes_read = total
            converted: list[tuple] = []
            for arr, n, odd, pos in chunks:
                rows = arr[:n]
                if n and pos:
                    rows["name_off"] += pos
                done = 0  # slices delivered: the other lines go in between, in file order

                def deliver(upto: int, rows: np.ndarray = rows) -> None:
                    nonlocal done
                    if upto > done:
                        part = rows[done:upto]
                        self._names(info, part, buf, self._note(info, part))
                        visitor.slices(part, buf)
                        done = upto

                for i in range(len(odd) // 3):
                    off, length, before = pos + int(odd[3 * i]), int(odd[3 * i + 1]), int(odd[3 * i + 2])
                    deliver(before)
                    line = bytes(buf[off: off + length])
                    try:
                        events = _events_of_line(line, info)
                    except orjson.JSONDecodeError:
                        if not (eof and off + length >= filled):
                            raise TraceFileError(f"{path}: an event is not JSON ({line[:60]!r}...): not a trace JSON "
                                                 "file?") from None
                        events = _salvage(line, info)  # the line a kill cut
                    self._handle(info, events, visitor, converted)
                    self._flush_converted(info, converted, visitor)
                deliver(n)
                free_arrays.put(arr)
            free_bufs.put(buf)
            if progress:
                progress(total)

        pipeline.run(produce, consume)

    def _read_document(self, info: TraceInfo, visitor: Visitor) -> None:
        """Not one event per line: the whole document through orjson (another tool's layout)."""
        try:
            with open(self.path, "rb") as f:
                data = f.read()
        except OSError as exc:
            raise TraceFileError(f"cannot read {self.path}: {exc.strerror or exc}") from None
        info.bytes_read = len(data)
        try:
            doc = orjson.loads(data)
        except orjson.JSONDecodeError:
            data, info.bad_utf8 = repaired_utf8(data)
            doc = None
        try:
            doc = orjson.loads(data) if doc is None else doc
        except orjson.JSONDecodeError:
            doc = None
            cut = data.rstrip()
            for end in (cut.rfind(b"},"), cut.rfind(b"}")):
                if end < 0:
                    continue
                try:
                    doc = orjson.loads(cut[: end + 1] + b"]")
                    break
                except orjson.JSONDecodeError:
                    continue
            if doc is None:
                raise TraceFileError(f"{self.path} is not a trace JSON file") from None
            info.array_closed = False
        if isinstance(doc, dict):
            doc = doc.get("traceEvents")
        if not isinstance(doc, list):
            raise NotATrace(f"{self.path} is not a trace: JSON, but neither an array of events nor an object with "
                            "traceEvents")
        converted: list[tuple] = []
        for start in range(0, len(doc), SLICES):
            self._handle(info, doc[start: start + SLICES], visitor, converted)
            self._flush_converted(info, converted, visitor)


def sniff(head: bytes) -> bool:
    """JSON: an object (`{"traceEvents": [...]}`) or an array of events."""
    return head.lstrip()[:1] in (b"[", b"{")


formats.register(formats.TraceFormat("json", (JSON_SUFFIX,), sniff, ChromeJsonReader, description="Chrome trace JSON",
                                     noun="trace JSON", native=True))
