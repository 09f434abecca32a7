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
from typing import Any

import numpy as np
import orjson

from ..trace_format import CATEGORY
from . import native, pipeline
from .columns import SLICE_DTYPE, SLICE_X
from .events import U32, Malformed, integer, slice_fields, to_slices
from .trace_info import TraceFileError, TraceInfo

BLOCK = 8 << 20  # bytes read at a time
SLICES = 1 << 16
ODD = 1 << 12


class Visitor:
    """What a reader hands out: slices in chunks (numpy SLICE_DTYPE; `buf` holds the engine names'
    literals of native rows), and every event that is not a native slice as its dict."""

    def slices(self, slices: np.ndarray, buf: bytes | bytearray | None) -> None: ...

    def event(self, ev: dict[str, Any]) -> None: ...


def _events_of_line(line: bytes) -> list[Any]:
    """The events of one line of a streamed array: `{...}`, `{...},{...},`, `[{...}`, `{...}]`."""
    text = line.strip()
    if text.startswith(b"["):
        text = text[1:]
    if text.endswith(b"]"):
        text = text[:-1]
    text = text.strip().rstrip(b",").strip()
    if not text:
        return []
    return orjson.loads(b"[" + text + b"]")


def _salvage(text: bytes) -> list[Any]:
    """The complete events at the start of a cut line (as today's reader: up to the last '},')."""
    for end in (text.rfind(b"},"), text.rfind(b"}")):
        if end < 0:
            continue
        try:
            return _events_of_line(text[: end + 1])
        except orjson.JSONDecodeError:
            continue
    return []


class ChromeJsonReader:
    format = "json"

    def __init__(self, path: str) -> None:
        self.path = path
        self._known: dict[int, np.ndarray] = {}  # pid -> engine ids whose names are known

    # -- the parts every mode shares ----------------------------------------------------------------

    def _handle(self, info: TraceInfo, events: list[Any], visitor: Visitor, converted: list[tuple]) -> None:
        for ev in events:
            if not isinstance(ev, dict):
                info.malformed += 1
                continue
            ph = ev.get("ph")
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
    def _note(info: TraceInfo, arr: np.ndarray) -> None:
        info.slices += len(arr)
        xs = arr["begin_ns"][arr["kind"] == 0]
        if len(xs):
            low = int(xs.min())
            info.origin_ns = low if info.origin_ns is None else min(info.origin_ns, low)

    def _names(self, info: TraceInfo, arr: np.ndarray, buf: bytearray) -> None:
        """Engine names of (pid, engine id) pairs seen for the first time (their first call's)."""
        calls = arr[(arr["phase"] == 0) & (arr["kind"] == 0)]
        if not len(calls):
            return
        pids = calls["pid"]
        eids = calls["engine_id"]
        if pids[0] == pids[-1] and (pids == pids[0]).all():  # one process: look its ids up at once
            known = self._known.get(int(pids[0]))
            top = int(eids.max())
            if known is not None and top < len(known) and known[eids].all():
                return
        pairs = (pids.astype(np.uint64) << np.uint64(32)) | eids.astype(np.uint64)
        uniq, first = np.unique(pairs, return_index=True)
        for pair, i in zip(uniq.tolist(), first.tolist(), strict=True):
            pid, eid = pair >> 32, pair & 0xFFFFFFFF
            p = info.process(pid)
            if eid not in p.engines:
                off, n = int(calls["name_off"][i]), int(calls["name_len"][i])
                try:
                    p.engines[eid] = str(orjson.loads(bytes(buf[off: off + n])))
                except orjson.JSONDecodeError:
                    p.engines[eid] = f"engine_{eid}"
            known = self._known.get(pid)
            if known is None or eid >= len(known):
                grown = np.zeros(max(eid + 1, 2 * (0 if known is None else len(known)), 64), dtype=bool)
                if known is not None:
                    grown[: len(known)] = known
                known = self._known[pid] = grown
            known[eid] = True

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
        if len(lines) < 2 and len(head) >= size and len(text) > 2:
            return False  # one line: an array written all at once
        for line in lines[:2000]:
            try:
                _events_of_line(line)
            except orjson.JSONDecodeError:
                return False
        return True

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
                return bytearray(block + (1 << 20))

        def array() -> np.ndarray:
            try:
                return free_arrays.get_nowait()
            except queue.Empty:
                return np.empty(SLICES, dtype=SLICE_DTYPE)

        def produce(pipe: pipeline.Pipe) -> None:
            counts = np.zeros(2, dtype=np.int64)
            carry = b""
            eof = False
            total = 0
            with open(path, "rb", buffering=0) as f:
                while not eof:
                    buf = buffer()
                    if len(buf) < len(carry) + block // 2:
                        buf = bytearray(2 * (len(carry) + block))  # a line longer than a block
                    buf[: len(carry)] = carry
                    filled = len(carry)
                    while filled < len(buf) - (1 << 20) and not eof:
                        with memoryview(buf) as view:
                            got = f.readinto(view[filled:]) or 0
                        eof = got == 0
                        filled += got
                        total += got
                    base = native.address(buf)
                    chunks = []
                    pos = 0
                    while True:
                        arr = array()
                        odd = np.empty(3 * ODD, dtype=np.int64)
                        used = so.tt_json_parse(base + pos, filled - pos, int(eof), arr.ctypes.data, SLICES,
                                                odd.ctypes.data, ODD, counts.ctypes.data, counts.ctypes.data + 8)
                        n, n_odd = int(counts[0]), int(counts[1])
                        chunks.append((arr, n, odd[: 3 * n_odd], pos))
                        pos += used
                        if used == 0 or pos >= filled or (n < SLICES and n_odd < ODD):
                            break
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
                        self._note(info, part)
                        self._names(info, part, buf)
                        visitor.slices(part, buf)
                        done = upto

                for i in range(len(odd) // 3):
                    off, length, before = pos + int(odd[3 * i]), int(odd[3 * i + 1]), int(odd[3 * i + 2])
                    deliver(before)
                    line = bytes(buf[off: off + length])
                    try:
                        events = _events_of_line(line)
                    except orjson.JSONDecodeError:
                        if not (eof and off + length >= filled):
                            raise TraceFileError(f"{path}: an event is not JSON ({line[:60]!r}...): not a trace JSON "
                                                 "file?") from None
                        events = _salvage(line)  # the line a kill cut
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
            doc = doc.get("traceEvents", [])
        if not isinstance(doc, list):
            raise TraceFileError(f"{self.path} is not a trace JSON file")
        converted: list[tuple] = []
        for start in range(0, len(doc), SLICES):
            self._handle(info, doc[start: start + SLICES], visitor, converted)
            self._flush_converted(info, converted, visitor)
