"""On-demand capture, the asking side (`trt-trace capture`): finds the armed process(es), asks each for a
window over its control socket (on_demand.py has the protocol), waits for the answers, and turns every
failure into one line: no such process, not permitted, not armed, already capturing, timed out.

Torch-free: `trt-trace capture` runs in the CLI's process, which never loads the tracer."""

from __future__ import annotations

import os
import re
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import orjson

from . import config
from .on_demand import check_control_dir, socket_path, sweep


class CaptureError(Exception):
    """One line: why this process was not captured."""


@dataclass
class Capture:
    """One process's capture: its request, then its answers."""

    pid: int
    out: str  # the path template sent ({pid}, {rank}, {host} replaced by the target)
    path: str = ""  # the file, once the target has started
    done: dict[str, Any] = field(default_factory=dict)
    error: str = ""


def owner_of(pid: int) -> int:
    """The uid that owns process `pid`; CaptureError where there is no such process."""
    try:
        return os.stat(f"/proc/{pid}").st_uid
    except FileNotFoundError:
        raise CaptureError(f"no such process: {pid}") from None
    except OSError as exc:
        raise CaptureError(f"cannot look at process {pid}: {exc.strerror or exc}") from None


def check_target(pid: int, control_dir: str) -> str:
    """The control socket of `pid`, after the checks (each failure one CaptureError line)."""
    if pid <= 0:
        raise CaptureError(f"no such process: {pid}")
    uid = owner_of(pid)
    if uid != os.getuid():  # also for root: another user's process is that user's to capture
        raise CaptureError(f"not permitted: process {pid} belongs to another user (uid {uid}); run trt-trace "
                           "capture as that user")
    problem = check_control_dir(control_dir, create=False)
    path = socket_path(control_dir, pid)
    if problem is not None or not os.path.exists(path):
        raise CaptureError(f"not armed: process {pid} has no control socket in {config.shown(control_dir)} "
                           "(it must have imported trt_trace, or run with TRT_TRACE_ARM=1, under this "
                           "TRT_TRACE_CONTROL_DIR)")
    return path


def armed_pids(control_dir: str) -> list[int]:
    """Every armed process of this user on this host (under this control folder), oldest pid first; the
    files of processes that are gone are removed."""
    if check_control_dir(control_dir, create=False) is not None:
        return []
    sweep(control_dir)
    pids = []
    for name in os.listdir(control_dir):
        stem = name.removesuffix(".sock")
        if stem != name and stem.isdigit() and int(stem) != os.getpid():
            pids.append(int(stem))
    return sorted(pids)


_FIELD = re.compile(r"\{(pid|rank|host)\}")


def output_template(out: str, many: bool) -> str:
    """The path each target writes: absolute (the target's working folder is not ours); with several
    targets and no {pid}/{rank} in it, `.{pid}` goes before the suffix so that no two share a file."""
    if many and not {"pid", "rank"} & set(_FIELD.findall(out)):
        root, dot, suffix = out.rpartition(".")
        out = f"{root}.{{pid}}.{suffix}" if dot and "/" not in suffix else f"{out}.{{pid}}"
    return os.path.abspath(out)


def _read_line(conn: socket.socket, deadline: float, buffer: bytearray) -> dict[str, Any] | None:
    """The next JSON line from the target; None where it hung up; TimeoutError past the deadline."""
    while b"\n" not in buffer:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        conn.settimeout(left)
        try:
            chunk = conn.recv(65536)
        except TimeoutError:
            raise
        except OSError:
            return None
        if not chunk:
            return None
        buffer += chunk
    line, _, rest = bytes(buffer).partition(b"\n")
    buffer[:] = rest
    try:
        message = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    return message if isinstance(message, dict) else None


def capture_one(capture: Capture, sock_path: str, seconds: float, timeout: float,
                started: threading.Event | None = None, stop: threading.Event | None = None) -> None:
    """Runs one capture to its end; sets capture.path / .done, or capture.error (one line). `stop` set:
    the window ends now (Ctrl-C), the target still finishes its file."""
    pid = capture.pid
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.settimeout(timeout)
        try:
            conn.connect(sock_path)
        except (ConnectionRefusedError, FileNotFoundError):
            capture.error = f"not armed: process {pid} does not answer on {config.shown(sock_path)} (its socket " \
                            "is left from an earlier process of that pid)"
            return
        except TimeoutError:
            capture.error = f"timed out: process {pid} accepted no connection in {timeout:g} s"
            return
        conn.sendall(orjson.dumps({"out": capture.out, "seconds": seconds}) + b"\n")
        buffer = bytearray()
        try:
            # The start needs the target's GIL: a thread holding it in one long C call delays it.
            first = _read_line(conn, time.monotonic() + timeout, buffer)
        except TimeoutError:
            capture.error = (f"timed out: process {pid} did not start the capture in {timeout:g} s (a thread may hold "
                             "the GIL in a long call); if it starts later, it ends by itself after its window")
            return
        if first is None:
            capture.error = f"process {pid} hung up before it answered (it may have exited)"
            return
        if "error" in first:
            capture.error = str(first["error"])
            return
        capture.path = str(first.get("started", ""))
        if started is not None:
            started.set()
        # The window is timed by the target; waiting here only needs the margin of its stop (drain, write).
        deadline = time.monotonic() + seconds + max(timeout, 10.0)
        while True:
            if stop is not None and stop.is_set():
                try:
                    conn.sendall(b"stop\n")  # the window ends now: the target stops and finishes the file
                except OSError:
                    pass
                stop = None
                deadline = time.monotonic() + max(timeout, 10.0)
            try:
                last = _read_line(conn, min(deadline, time.monotonic() + 0.2), buffer)
            except TimeoutError:
                if time.monotonic() >= deadline:
                    capture.error = (f"timed out: process {pid} did not finish {capture.path} in time (it goes on "
                                     "writing it)")
                    return
                continue
            break
        if last is None:
            capture.error = (f"process {pid} ended during the window; {capture.path} holds what it recorded until "
                             "then (finished at its exit)")
        elif "error" in last:
            capture.error = str(last["error"])
        else:
            capture.done = last
    finally:
        conn.close()


def result_line(capture: Capture, calls_in_files: int | None) -> str:
    """The line of a finished capture: the session's own outcome line, then its call accounting (calls in
    the file + calls dropped = calls the process executed in the window)."""
    done = capture.done
    outcome = str(done.get("line", ""))
    tail = "; open it in ui.perfetto.dev"
    line = f"process {capture.pid}: {float(done.get('seconds', 0)):.1f} s captured, {outcome.removesuffix(tail)}"
    dropped = int(done.get("dropped_calls", 0))
    if calls_in_files is not None:
        line += f"; {calls_in_files} call(s) in the file, {dropped} dropped"
    elif dropped:
        line += f"; {dropped} call(s) dropped"
    if dropped:
        line += " (the trace buffer was full: raise TRT_TRACE_BUFFER in the process's environment)"
    return line
