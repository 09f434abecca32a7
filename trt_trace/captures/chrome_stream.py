"""Chrome trace JSON read in bounded chunks: the events of `{"traceEvents": [...], ...}` (or of a top-level
array) handed on a few MiB at a time, so that a capture of gigabytes never sits in memory as Python
objects at once.

How: each chunk's bytes are scanned with numpy for the structure that matters, the quotes (escaped
ones set aside) and the brackets outside strings, which gives the depth at every bracket; the
complete events of the chunk are the objects one level inside the events array. Their bytes are
handed to orjson in one piece (`[` + the run of events + `]`), the tail of an event that the chunk cut
waits for the next chunk. Gzipped files (`.json.gz`, or any file starting with gzip's magic) are
decompressed on the way. A file cut short (a kill during the export) yields every complete event
before the cut and says so (`ChromeStream.cut`).
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from typing import Any, BinaryIO

import numpy as np
import orjson

from .model import CaptureError

CHUNK_BYTES = 4 << 20
_MAX_HEADER = 64 << 20  # bytes read looking for the events array before giving up
_MAX_EVENT = 64 << 20  # no event is this long: past it the file's brackets are broken
_QUOTE, _BACKSLASH = 0x22, 0x5C
_KEY = b'"traceEvents"'


def _structure(a: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Positions of the brackets outside strings, their +1/-1, and the unescaped quotes."""
    q = np.flatnonzero(a == _QUOTE)
    if len(q):
        maybe = q[(q > 0) & (a[np.maximum(q - 1, 0)] == _BACKSLASH)]
        if len(maybe):  # rare: count the backslash run before each such quote
            escaped = []
            for p in maybe.tolist():
                k = p - 1
                while k >= 0 and a[k] == _BACKSLASH:
                    k -= 1
                if (p - 1 - k) % 2:
                    escaped.append(p)
            if escaped:
                q = np.setdiff1d(q, np.asarray(escaped, dtype=q.dtype), assume_unique=True)
    br = np.flatnonzero((a == 0x7B) | (a == 0x7D) | (a == 0x5B) | (a == 0x5D))  # { } [ ]: 4 compares beat a lookup
    outside = (np.searchsorted(q, br) % 2) == 0  # an even number of quotes before: not in a string
    br = br[outside]
    c = a[br]
    return br, np.where((c == 0x7B) | (c == 0x5B), 1, -1).astype(np.int64), q


def _find_all(buf: bytes, markers: tuple[bytes, ...], upto: int) -> np.ndarray:
    """Sorted positions in buf[:upto] of every occurrence of each marker (bytes.find: C speed)."""
    out: list[int] = []
    for m in markers:
        k = buf.find(m, 0, upto)
        while k >= 0:
            out.append(k)
            k = buf.find(m, k + 1, upto)
    return np.sort(np.asarray(out, dtype=np.int64))


class _Gunzip:
    """A gzip file read in pieces that keeps what it could decompress when the file is cut short
    (GzipFile raises at the cut and loses the last block's data), and reads concatenated members."""

    def __init__(self, f: BinaryIO) -> None:
        self._f = f
        self._z = zlib.decompressobj(16 + zlib.MAX_WBITS)
        self._out = b""
        self.cut = False
        self._eof = False

    def read(self, n: int) -> bytes:
        while len(self._out) < n and not self._eof:
            raw = self._f.read(1 << 20)
            if not raw:
                self._eof = True
                self.cut = not self._z.eof  # the stream ended without its end-of-stream marker
                break
            while raw:
                self._out += self._z.decompress(raw)
                raw = self._z.unused_data if self._z.eof else b""
                if self._z.eof and raw:  # another gzip member follows
                    self._z = zlib.decompressobj(16 + zlib.MAX_WBITS)
        out, self._out = self._out[:n], self._out[n:]
        return out

    def close(self) -> None:
        self._f.close()


class ChromeStream:
    """Iterates a Chrome trace's events in lists of dicts, one list per chunk. After the iteration,
    `header` holds the top-level keys other than the events (the object form) and `cut` says whether
    the file ended inside the events. With `markers`, an event is parsed only if its bytes match them
    (the reader's own test still decides): most of a capture's events are never turned into objects."""

    def __init__(self, path: str, chunk_bytes: int = CHUNK_BYTES, markers: tuple[bytes, ...] | None = None) -> None:
        self.path = path
        self._markers = markers  # parse only the events whose bytes match (a reader's prefilter)
        self.chunk_bytes = max(1024, int(chunk_bytes))
        self.header: dict[str, Any] = {}
        self.cut = False
        self.events_read = 0
        self.bytes_read = 0

    def _open(self) -> BinaryIO | _Gunzip:
        try:
            f = open(self.path, "rb")  # noqa: SIM115 (handed to the caller, closed in __iter__)
        except OSError as exc:
            raise CaptureError(f"cannot read {self.path}: {exc.strerror or exc}") from exc
        if f.read(2) == b"\x1f\x8b":
            f.seek(0)
            return _Gunzip(f)
        f.seek(0)
        return f

    def _read(self, f: BinaryIO | _Gunzip, n: int) -> bytes:
        try:
            data = f.read(n)
        except (OSError, zlib.error) as exc:
            raise CaptureError(f"{self.path}: not a readable gzip file ({str(exc).splitlines()[0]})") from None
        if isinstance(f, _Gunzip) and f.cut:
            self.cut = True
        self.bytes_read += len(data)
        return data

    def __iter__(self) -> Iterator[list[dict[str, Any]]]:
        f = self._open()
        try:
            yield from self._events(f)
        finally:
            f.close()

    def _find_events(self, f: BinaryIO | _Gunzip) -> tuple[bytes, int, bytes]:
        """Reads until the events array opens: (the bytes before its `[`, the depth inside it, the
        bytes after it)."""
        buf = b""
        while True:
            more = self._read(f, self.chunk_bytes)
            buf += more
            stripped = buf.lstrip()
            if stripped[:1] == b"[":  # a top-level array of events
                lead = len(buf) - len(stripped)
                return b"", 1, buf[lead + 1:]
            if stripped and stripped[:1] != b"{":
                raise CaptureError(f"{self.path} is not a Chrome trace (JSON object or array)")
            a = np.frombuffer(buf, dtype=np.uint8)
            br, delta, q = _structure(a)
            depth = np.cumsum(delta)
            start = 0
            while True:
                k = buf.find(_KEY, start)
                if k < 0:
                    break
                start = k + 1
                # A key: its quote opens a string (even quotes before) at depth 1 of the object.
                qi = np.searchsorted(q, k)
                if qi >= len(q) or q[qi] != k or qi % 2:
                    continue
                bi = np.searchsorted(br, k)
                if bi == 0 or depth[bi - 1] != 1:
                    continue
                after = buf[k + len(_KEY):].lstrip()
                if after[:1] != b":":
                    continue
                after = after[1:].lstrip()
                if after[:1] != b"[":
                    raise CaptureError(f"{self.path}: traceEvents is not an array")
                open_at = len(buf) - len(after)
                return buf[:open_at], 2, buf[open_at + 1:]  # head ends with `"traceEvents": `
            if not more:
                if not buf.strip():
                    raise CaptureError(f"{self.path} is empty")
                raise CaptureError(f"{self.path} holds no traceEvents array: not a torch.profiler trace")
            if len(buf) > _MAX_HEADER:
                raise CaptureError(f"{self.path}: no traceEvents in its first {_MAX_HEADER >> 20} MiB")

    def _parse(self, text: bytes) -> list[Any]:
        try:
            return orjson.loads(b"[" + text + b"]")
        except orjson.JSONDecodeError as exc:
            raise CaptureError(f"{self.path}: broken JSON inside traceEvents near byte "
                               f"{self.bytes_read}: {str(exc).splitlines()[0]}") from None

    def _emit(self, buf: bytes, br: np.ndarray, delta: np.ndarray, depth: np.ndarray, depth0: int,
              upto: int) -> list[dict[str, Any]]:
        """The events among the complete elements in buf[:upto]: all of them, or, with markers, only
        those whose bytes hold one (the others are never parsed)."""
        if self._markers is None:
            text = buf[:upto].strip().strip(b",")
            if not text:
                return []
            events = self._parse(text)
            self.events_read += len(events)
            return [e for e in events if isinstance(e, dict)]
        inside = br < upto
        opens = br[inside & (delta > 0) & (depth == depth0 + 1)]
        closes = br[inside & (delta < 0) & (depth == depth0)]
        n = min(len(opens), len(closes))
        opens, closes = opens[:n], closes[:n]
        self.events_read += n
        hits = _find_all(buf, self._markers, upto)
        if not len(hits) or not n:
            return []
        k = np.searchsorted(opens, hits, side="right") - 1
        k = np.unique(k[(k >= 0) & (hits <= closes[np.maximum(k, 0)])])
        if not len(k):
            return []
        events = self._parse(b",".join(buf[int(opens[i]):int(closes[i]) + 1] for i in k.tolist()))
        return [e for e in events if isinstance(e, dict)]

    def _events(self, f: BinaryIO | _Gunzip) -> Iterator[list[dict[str, Any]]]:
        head, depth0, buf = self._find_events(f)
        done = False
        while True:
            a = np.frombuffer(buf, dtype=np.uint8)
            br, delta, _ = _structure(a)
            depth = depth0 + np.cumsum(delta)
            closes = np.flatnonzero((delta < 0) & (depth == depth0))  # an element's closing bracket
            array_end = np.flatnonzero((delta < 0) & (depth == depth0 - 1))
            if len(array_end):  # the events array ends in this chunk
                end_at = int(br[array_end[0]])
                events = self._emit(buf, br, delta, depth, depth0, end_at)
                if events:
                    yield events
                self._header(head, buf[end_at + 1:], f)
                return
            if len(closes):
                last = int(br[closes[-1]])
                events = self._emit(buf, br, delta, depth, depth0, last + 1)
                if events:
                    yield events
                buf = buf[last + 1:].lstrip().lstrip(b",")
            elif len(buf) > _MAX_EVENT:
                raise CaptureError(f"{self.path}: broken JSON: no event ends within {_MAX_EVENT >> 20} MiB "
                                   f"before byte {self.bytes_read}")
            if done:
                self.cut = True  # the file ended inside its events: the complete ones before are kept
                self._header(head, b"", None)
                return
            more = self._read(f, self.chunk_bytes)
            if not more:
                done = True
                continue
            buf += more

    def _header(self, head: bytes, tail_start: bytes, f: BinaryIO | _Gunzip | None) -> None:
        """The top-level keys around the events array (small), parsed once: `head` + [] + the rest."""
        if not head:
            return
        tail = tail_start
        if f is not None:
            while len(tail) < _MAX_HEADER:
                more = self._read(f, self.chunk_bytes)
                if not more:
                    break
                tail += more
        for text in (head + b"[]" + tail, head + b"[]}"):
            try:
                doc = orjson.loads(text)
            except orjson.JSONDecodeError:
                continue
            if isinstance(doc, dict):
                self.header = {k: v for k, v in doc.items() if k != "traceEvents"}
                return
