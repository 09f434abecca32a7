"""Nsight Systems captures: the engine calls of `nsys export --type sqlite` of a run with TRT_TRACE_NVTX=1.

What the export holds (tables as Nsight Systems writes them; the columns read here exist in its
schemas 2.x and 3.x, checked against real exports of nsys 2022.2, 2023.4 and 2024.5):

- `NVTX_EVENTS`: one row per range, `start`/`end` in ns, `globalTid` (the thread: pid in bits 24..47,
  tid in bits 0..23), `domainId`, the message as `text` or, for registered strings (trt_trace
  registers its names), `textId` into `StringIds`, and the payload in `uint64Value`. trt_trace's ranges
  are in the domain `trt_trace` (a row of eventType 75, NvtxDomainCreate, names the domain's id per
  process): one per call named after the engine, its phases inside, each carrying the call's id.
- `CUPTI_ACTIVITY_KIND_RUNTIME`: the CUDA runtime and driver calls, `globalTid`, `correlationId`,
  `nameId` into `StringIds`.
- `CUPTI_ACTIVITY_KIND_KERNEL`, `..._MEMCPY`, `..._MEMSET`: device activities with `correlationId`,
  `globalPid`, `deviceId`, `streamId`.

Correlation ids are per process, so activities are keyed by (pid, correlationId). join.py does the rest,
as for torch.profiler: API calls on the range's thread inside it, then their activities by id. The
rows carry the ranges' payload as `call_id`: the same id as the trace's `args.call_id`, so a trt_trace
file of the same run joins call by call without clock arithmetic.
"""

from __future__ import annotations

import re
import sqlite3
import urllib.parse
from collections.abc import Callable
from contextlib import closing

import numpy as np

from .join import JoinInput, join
from .model import KERNEL, MEMCPY, MEMSET, SCOPE_PHASE_CODES, CaptureCalls, CaptureError

SOURCE = "nsys"
DOMAIN = "trt_trace"
_MAGIC = b"SQLite format 3\x00"
_PUSH_POP, _START_END, _DOMAIN_CREATE = 59, 60, 75  # ENUM_NSYS_EVENT_TYPE ids, stable across versions
_PHASE = {name: code for name, code in SCOPE_PHASE_CODES.items() if code > 0}  # NVTX phase ranges
_LAUNCH = re.compile(r"^(cuda|cu)(Launch|Memcpy|Memset|GraphLaunch)")
_BATCH = 1 << 16


def sniff(head: bytes) -> bool:
    """Whether a file's first bytes are an SQLite database (the readers registry picks this reader for
    them; read() then says whether it is an nsys export)."""
    return head[:16] == _MAGIC


def _pid(global_id: np.ndarray) -> np.ndarray:
    return (global_id >> 24) & 0xFFFFFF


def _connect(path: str) -> sqlite3.Connection:
    try:
        with open(path, "rb") as f:
            head = f.read(16)
    except OSError as exc:
        raise CaptureError(f"cannot read {path}: {exc.strerror or exc}") from exc
    if head != _MAGIC:
        raise CaptureError(f"{path} is not an SQLite file (nsys export --type sqlite writes one)")
    uri = f"file:{urllib.parse.quote(path)}?mode=ro&immutable=1"
    return sqlite3.connect(uri, uri=True)


def _columns(con: sqlite3.Connection, table: str) -> set[str]:
    return {r[1] for r in con.execute(f"PRAGMA table_info([{table}])")}


def _rows(con: sqlite3.Connection, sql: str, args: tuple = ()) -> list[tuple]:
    """All rows of a small query (NVTX ranges: a handful per call)."""
    return con.execute(sql, args).fetchall()


def _int_columns(con: sqlite3.Connection, sql: str, args: tuple, n_int: int,
                 last: Callable[[object], int] | None = None) -> list[np.ndarray]:
    """A large query (API calls, activities) as int64 columns, fetched in batches so that no Python
    tuple outlives its batch: the first n_int columns as they are (rows with a NULL among them are left
    out), and the next one, if `last` is given, mapped through it."""
    cur = con.execute(sql, args)
    width = n_int + (last is not None)
    parts: list[np.ndarray] = []
    while True:
        batch = cur.fetchmany(_BATCH)
        if not batch:
            break
        batch = [r for r in batch if None not in r[:n_int]]
        if not batch:
            continue
        block = np.empty((len(batch), width), dtype=np.int64)
        block[:, :n_int] = np.asarray([r[:n_int] for r in batch], dtype=np.int64)
        if last is not None:
            block[:, n_int] = np.fromiter((last(r[n_int]) for r in batch), dtype=np.int64, count=len(batch))
        parts.append(block)
    table = np.concatenate(parts) if parts else np.zeros((0, width), dtype=np.int64)
    return [table[:, i].copy() for i in range(width)]


def read(path: str, domain: str = DOMAIN) -> CaptureCalls:
    """The engine calls of an nsys SQLite export. Raises CaptureError (one line) where the file is not
    an SQLite database, not an nsys export, or holds no NVTX ranges."""
    try:
        with closing(_connect(path)) as con:
            return _read(con, path, domain)
    except sqlite3.DatabaseError as exc:
        raise CaptureError(f"{path}: not a readable SQLite database ({str(exc).splitlines()[0]})") from None


def _read(con: sqlite3.Connection, path: str, domain: str) -> CaptureCalls:
    tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
    if "StringIds" not in tables:
        raise CaptureError(f"{path} is an SQLite file but not an nsys export (no StringIds table)")
    if "NVTX_EVENTS" not in tables:
        raise CaptureError(f"{path}: no NVTX ranges in the capture (no NVTX_EVENTS table): profile with "
                           "`nsys profile --trace=cuda,nvtx` and TRT_TRACE_NVTX=1")
    metadata = _metadata(con, tables)
    # The trt_trace domain's id in each process that created it.
    created = _rows(con, "SELECT n.globalTid, n.domainId FROM NVTX_EVENTS n LEFT JOIN StringIds s ON s.id = n.textId "
                         "WHERE n.eventType = ? AND COALESCE(n.text, s.value) = ?", (_DOMAIN_CREATE, domain))
    domains = sorted({((g >> 24) & 0xFFFFFF, d) for g, d in created if g is not None and d is not None})
    notes: list[str] = []
    clock = "nsys session ns (0 = the session's start; TARGET_INFO_SESSION_START_TIME has its Unix time)"
    ranges: list[tuple] = []
    if domains:
        ids = sorted({d for _, d in domains})
        marks = ",".join("?" * len(ids))
        ranges = _rows(con, "SELECT n.start, n.end, n.globalTid, n.domainId, COALESCE(n.text, s.value), "
                            f"n.uint64Value, n.int64Value FROM NVTX_EVENTS n LEFT JOIN StringIds s ON s.id = n.textId "
                            f"WHERE n.eventType IN (?, ?) AND n.domainId IN ({marks})",
                       (_PUSH_POP, _START_END, *ids))
        allowed = set(domains)
        ranges = [r for r in ranges if r[2] is not None and (((r[2] >> 24) & 0xFFFFFF), r[3]) in allowed]
    open_ranges = sum(1 for r in ranges if r[1] is None)
    if open_ranges:
        notes.append(f"{open_ranges} range(s) never closed (the process ended inside them) left out")
    ranges = [r for r in ranges if r[0] is not None and r[1] is not None]
    # A call still running when its process ended: nsys closes its open ranges at the end, the call's
    # and its phase's at the same ns, which trt_trace's pops (phase, then call) never do. Its ranges go.
    phase_ends = {(r[2], r[5] if r[5] is not None else r[6], r[1]) for r in ranges if r[4] in _PHASE}
    unfinished = {(r[2], r[5] if r[5] is not None else r[6]) for r in ranges
                  if r[4] not in _PHASE and (r[2], r[5] if r[5] is not None else r[6], r[1]) in phase_ends}
    if unfinished:
        ranges = [r for r in ranges if (r[2], r[5] if r[5] is not None else r[6]) not in unfinished]
        notes.append(f"{len(unfinished)} call(s) still running when the process ended left out (nsys closed "
                     "their ranges at the exit)")

    threads: dict[int, int] = {}
    engines: dict[str, int] = {}
    cols: dict[str, list[int]] = {k: [] for k in ("thread", "begin", "end", "engine", "phase", "call_id")}
    for start, end, gtid, _dom, text, u64, i64 in ranges:
        text = "" if text is None else str(text)
        code = _PHASE.get(text, 0)
        cols["thread"].append(threads.setdefault(int(gtid), len(threads)))
        cols["begin"].append(int(start))
        cols["end"].append(int(end))
        cols["engine"].append(engines.setdefault(text, len(engines)) if code == 0 else -1)
        payload = u64 if u64 is not None else i64
        cols["call_id"].append(int(payload) if payload is not None else -1)
        cols["phase"].append(code)
    scopes = {k: np.asarray(v, dtype=np.int64) for k, v in cols.items()}
    gtids = np.asarray(list(threads), dtype=np.int64)

    api, device, activity_names, has_device = _cuda(con, tables, gtids, scopes, threads)
    inp = JoinInput(scopes=scopes, api=api, device=device, thread_pid=_pid(gtids), thread_tid=gtids & 0xFFFFFF,
                    engines=list(engines), activity_names=activity_names, has_device_activity=has_device)
    calls, join_notes = join(inp, SOURCE, path, clock)
    notes += join_notes
    if not domains:
        notes.append(f"no NVTX domain {domain!r}: the run had no TRT_TRACE_NVTX=1 (or nsys ran without --trace=nvtx)")
    elif not len(calls):
        notes.append(f"the {domain!r} domain holds no engine call ranges")
    calls.metadata = metadata
    calls.notes = notes
    return calls


def _metadata(con: sqlite3.Connection, tables: set[str]) -> dict:
    out: dict = {}
    for table in ("META_DATA_EXPORT", "EXPORT_META_DATA"):  # the name changed between schema versions
        if table in tables and {"name", "value"} <= _columns(con, table):
            for name, value in con.execute(f"SELECT name, value FROM [{table}]"):
                if name in ("EXPORT_PRODUCT_VERSION", "EXPORT_SCHEMA_VERSION"):
                    out[name.lower()] = value
    if "TARGET_INFO_SESSION_START_TIME" in tables and "utcEpochNs" in _columns(con, "TARGET_INFO_SESSION_START_TIME"):
        row = con.execute("SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME").fetchone()
        if row and row[0] is not None:
            out["session_start_utc_ns"] = int(row[0])
    return out


def _cuda(con: sqlite3.Connection, tables: set[str], gtids: np.ndarray, scopes: dict[str, np.ndarray],
          threads: dict[int, int]) -> tuple[dict, dict, list[str], bool]:
    """The CUDA API calls on the calls' threads within their time span, and every device activity."""
    empty_api = {k: np.zeros(0, dtype=np.int64) for k in ("thread", "begin", "end", "corr", "launch")}
    empty_dev = {k: np.zeros(0, dtype=np.int64) for k in ("corr", "kind", "name", "begin", "end", "device", "stream")}
    kinds = [(t, k) for t, k in (("CUPTI_ACTIVITY_KIND_KERNEL", KERNEL), ("CUPTI_ACTIVITY_KIND_MEMCPY", MEMCPY),
                                 ("CUPTI_ACTIVITY_KIND_MEMSET", MEMSET)) if t in tables]
    has_device = bool(kinds) and any(con.execute(f"SELECT 1 FROM [{t}] LIMIT 1").fetchone() for t, _ in kinds)
    api = empty_api
    if "CUPTI_ACTIVITY_KIND_RUNTIME" in tables and len(gtids) and len(scopes["begin"]):
        marks = ",".join("?" * len(gtids))
        begin, end, gt, corr, name_id = _int_columns(
            con, "SELECT start, end, globalTid, correlationId, COALESCE(nameId, -1) FROM CUPTI_ACTIVITY_KIND_RUNTIME "
                 f"WHERE globalTid IN ({marks}) AND start >= ? AND start <= ?",
            (*gtids.tolist(), int(scopes["begin"].min()), int(scopes["end"].max())), 5)
        launch_ids = set()
        ids = np.unique(name_id).tolist()
        for i in range(0, len(ids), 500):
            part = ids[i:i + 500]
            for sid, value in con.execute(f"SELECT id, value FROM StringIds WHERE id IN ({','.join('?' * len(part))})",
                                          part):
                if _LAUNCH.match(str(value)):
                    launch_ids.add(sid)
        thread_of = np.vectorize(threads.__getitem__, otypes=[np.int64])
        api = {"thread": thread_of(gt) if len(gt) else gt, "begin": begin, "end": end,
               "corr": (_pid(gt) << 32) | corr, "launch": np.isin(name_id, list(launch_ids)).astype(np.int64)}
    names: dict[str, int] = {}
    parts: list[dict[str, np.ndarray]] = []
    memcpy_labels = _enum(con, tables, "ENUM_CUDA_MEMCPY_OPER")
    kernel_names: dict[object, int] = {}
    for table, kind in kinds:
        have = _columns(con, table)
        if not {"start", "end", "correlationId", "globalPid"} <= have:
            continue
        if kind == KERNEL:
            label = next((c for c in ("demangledName", "shortName", "mangledName") if c in have), None)
            name_sql = f"a.{label} FROM [{table}] a" if label else "NULL FROM [{table}] a"
        elif kind == MEMCPY and "copyKind" in have:
            name_sql = f"a.copyKind FROM [{table}] a"
        else:
            name_sql = f"NULL FROM [{table}] a"
        dev_col = "COALESCE(a.deviceId, -1)" if "deviceId" in have else "-1"
        stream_col = "COALESCE(a.streamId, -1)" if "streamId" in have else "-1"

        def label_of(value: object, kind: int = kind) -> int:
            if kind == KERNEL:  # a StringIds id, looked up once per kernel name
                if value not in kernel_names:
                    row = con.execute("SELECT value FROM StringIds WHERE id = ?", (value,)).fetchone()
                    kernel_names[value] = names.setdefault(str(row[0]) if row else "kernel", len(names))
                return kernel_names[value]
            elif kind == MEMCPY:
                text = f"Memcpy {memcpy_labels.get(value, value) if value is not None else ''}".strip()
            else:
                text = "Memset"
            return names.setdefault(text, len(names))
        begin, end, corr, gpid, dev, stream, name = _int_columns(
            con, f"SELECT a.start, a.end, a.correlationId, a.globalPid, {dev_col}, {stream_col}, {name_sql}", (), 6,
            label_of)
        if len(begin):
            parts.append({"corr": (_pid(gpid) << 32) | corr, "kind": np.full(len(begin), kind, dtype=np.int64),
                          "name": name, "begin": begin, "end": end, "device": dev, "stream": stream})
    device = {k: np.concatenate([p[k] for p in parts]) for k in empty_dev} if parts else empty_dev
    return api, device, list(names), has_device


def _enum(con: sqlite3.Connection, tables: set[str], table: str) -> dict:
    if table not in tables or not {"id", "label"} <= _columns(con, table):
        return {}
    return dict(con.execute(f"SELECT id, label FROM [{table}]").fetchall())
