"""On-demand capture, the armed process's side: `trt-trace capture PID` starts a session in a running
process, ends it after a window and says where the file is (the client is capture_request.py).

A process is *armed* from `import trt_trace` on (or from start-up with TRT_TRACE_ARM=1, through the
start-up hook; TRT_TRACE_ARM=0 never arms). Armed means: a Unix socket `<control dir>/<pid>.sock`
(the folder is this user's alone, mode 0700) and one daemon thread blocked in accept() on it. Nothing
else changes: tracing stays off (recording off, the hook's tracing-off path) until a request comes.

Why a thread on a socket, not a signal: a Python signal handler runs only on the main thread, between
two bytecodes, which a main thread busy in a C++ call never reaches; the listening thread needs the
GIL only once the request has arrived, and gets it within the interpreter's switch interval (5 ms)
from a thread in a busy Python loop, at once from threads in C++ calls that release it (engine calls
do). A single C call that holds the GIL for seconds delays the start until it returns (the client
says "timed out" past its --timeout). The SIGUSR1 flight-recorder dump is untouched: no signal is taken.

One request per connection, JSON lines: the client sends {"out": path template, "seconds": s}; the
target answers {"started": path} or {"error": line} at once, runs the session for s seconds (or until
the client hangs up: Ctrl-C on it ends the window early, the file is finished all the same), then
answers {"done": ...} with the outcome line and the session's drop accounting. The peer's uid (the
socket's SO_PEERCRED) must be this process's, else "not permitted".

A forked child is armed on its own (its own socket, its own thread; the parent's listening socket is
closed in it): a server's fork workers run the engines, so each can be captured by its pid, and
`--all` finds them. A process in a bad fork (CUDA initialized in the parent) captures without GPU
spans, as a forked child's session does.
"""

from __future__ import annotations

import atexit
import dataclasses
import os
import select
import signal
import socket
import stat
import struct
import sys
import threading
import time
from pathlib import Path
from typing import Any

import orjson

from . import config, session

__all__ = ["arm", "armed", "check_control_dir", "socket_path"]

_lock = threading.Lock()
_listener: socket.socket | None = None
_path: str | None = None  # this process's socket file (None: not armed)
_pid = 0  # the process that armed (a forked child re-arms under its own pid)
_capturing = False  # a capture's session is running (a second request: "already capturing")

REQUEST_MAX = 1 << 16  # a request's bytes at most (a path template and a number)
REQUEST_WAIT_S = 5.0  # a client that connects and sends nothing is let go after this


def socket_path(control_dir: str, pid: int) -> str:
    return os.path.join(control_dir, f"{pid}.sock")


def check_control_dir(path: str, create: bool) -> str | None:
    """Why `path` cannot be the control folder (None when it can): it must be a folder of this user's
    that nobody else can enter (another user could otherwise plant sockets, or connect to ours)."""
    try:
        if create:
            os.makedirs(path, mode=0o700, exist_ok=True)
        st = os.lstat(path)
    except FileNotFoundError:
        return f"{config.shown(path)} does not exist"
    except OSError as exc:
        return f"cannot use {config.shown(path)}: {exc.strerror or exc}"
    if not stat.S_ISDIR(st.st_mode):
        return f"{config.shown(path)} is not a folder"
    if st.st_uid != os.getuid():
        return f"{config.shown(path)} belongs to another user (uid {st.st_uid})"
    if st.st_mode & 0o077:
        return f"{config.shown(path)} is open to other users (mode {stat.S_IMODE(st.st_mode):o}; it must be 700)"
    return None


def armed() -> str | None:
    """This process's control socket, None when it is not armed."""
    return _path if _pid == os.getpid() else None


def arm() -> None:
    """Arms this process (idempotent; never raises: a process that cannot be armed runs on, with one line)."""
    global _listener, _path, _pid
    if config.arm_from_env() is False:
        return
    with _lock:
        if _pid == os.getpid():
            return
        folder = config.control_dir_from_env()
        problem = check_control_dir(folder, create=True)
        if problem is not None:
            config.warn(f"on-demand capture is off in this process: control folder {problem}")
            return
        sweep(folder)  # the sockets that processes leaving through os._exit or a kill left behind
        path = socket_path(folder, os.getpid())
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            try:
                os.unlink(path)  # a dead process's, whose pid this one now has
            except FileNotFoundError:
                pass
            listener.bind(path)
            os.chmod(path, 0o600)
            listener.listen(8)
        except OSError as exc:
            listener.close()
            config.warn(f"on-demand capture is off in this process: cannot listen on {config.shown(path)} "
                        f"({exc.strerror or exc})")
            return
        _listener, _path, _pid = listener, path, os.getpid()
        _start_without_signals(threading.Thread(target=_serve, args=(listener,), name="trt_trace capture", daemon=True))


def _start_without_signals(thread: threading.Thread) -> None:
    """Starts `thread` with every signal blocked (it inherits the mask; its request threads inherit it from it):
    a signal sent to the process must reach the program's own threads as it did before trt_trace was imported.
    A thread that left SIGTERM open would take a SIGTERM that the main thread blocks around a critical section,
    and Python would run the handler in the main thread at once, inside that section (tests/test_process_kinds.py)."""
    before = signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())
    try:
        thread.start()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


def _disarm_at_exit() -> None:
    """The socket file goes with the process (one left by os._exit or a kill: the next process of that
    pid, or `trt-trace capture --all`, removes it)."""
    path = armed()
    if path is not None:
        try:
            os.unlink(path)
        except OSError:
            pass


def _exec_follows() -> bool:
    """Whether this fork is subprocess's with a preexec_fn (the only fork of subprocess that runs the at-fork
    handlers): the child execs another program at once, so arming it (a socket, a thread) would be waste."""
    try:
        caller = sys._getframe(2)  # the Python frame that forked (this function's caller is the fork handler)
    except ValueError:  # forked from C with no Python frame below: no subprocess
        return False
    return caller.f_code.co_name == "_execute_child" and caller.f_code.co_filename.endswith("subprocess.py")


def _after_fork_in_child() -> None:
    """The child is a process of its own: the parent's listening socket closed here (its file stays, the
    parent's), then armed under the child's pid (unless it is about to exec another program)."""
    global _listener, _pid, _capturing, _lock
    _lock = threading.Lock()  # a thread of the parent may have held it at the fork
    listener, _listener = _listener, None
    was_armed = _pid != 0
    _pid, _capturing = 0, False  # the parent's capture (if any) is the parent's: session drops its copy
    if listener is not None:
        try:
            listener.close()
        except OSError:
            pass
    if was_armed and not _exec_follows():
        arm()


def _peer_uid(conn: socket.socket) -> int:
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return struct.unpack("3i", creds)[2]


def _serve(listener: socket.socket) -> None:
    while True:
        try:
            conn, _ = listener.accept()
        except OSError:  # closed (a forked child closes its copy; the parent's thread is not in the child)
            return
        # A thread per request: a capture's window never holds up the answer to the next ("already capturing").
        threading.Thread(target=_handle, args=(conn,), name="trt_trace capture request", daemon=True).start()


def _send(conn: socket.socket, message: dict[str, Any]) -> bool:
    try:
        conn.sendall(orjson.dumps(message) + b"\n")
        return True
    except OSError:
        return False


def _read_request(conn: socket.socket) -> dict[str, Any] | str:
    conn.settimeout(REQUEST_WAIT_S)
    data = b""
    try:
        while b"\n" not in data and len(data) < REQUEST_MAX:
            chunk = conn.recv(4096)
            if not chunk:
                break
            data += chunk
    except OSError:
        return "no request came"
    finally:
        conn.settimeout(None)
    try:
        request = orjson.loads(data.split(b"\n", 1)[0])
    except orjson.JSONDecodeError:
        return "the request is not JSON"
    if not isinstance(request, dict) or not isinstance(request.get("out"), str) or \
            isinstance(request.get("seconds"), bool) or not isinstance(request.get("seconds"), int | float) or \
            not 0 < request["seconds"] < float("inf"):
        return "the request needs an output path and a positive number of seconds"
    return request


def _handle(conn: socket.socket) -> None:
    global _capturing
    with conn:
        try:
            if _peer_uid(conn) != os.getuid():
                _send(conn, {"error": "not permitted: the request comes from another user"})
                return
        except OSError:
            return
        request = _read_request(conn)
        if isinstance(request, str):
            _send(conn, {"error": request})
            return
        with _lock:
            running = session.current()
            if _capturing or (running is not None and running.pid == os.getpid()):
                where = running.path if running is not None else "a capture"
                _send(conn, {"error": f"already capturing (tracing into {where}); wait for it to end"})
                return
            _capturing = True
        try:
            _capture(conn, request["out"], float(request["seconds"]))
        finally:
            _capturing = False


def _settings(out: str) -> config.Settings:
    """The environment's settings (TRT_TRACE_BUFFER, TRT_TRACE_GPU, ... as a TRT_TRACE_OUT session would
    have them) with the capture's file, written from the start (an idle window still gives a trace)."""
    settings = dataclasses.replace(config.from_env(), out=out, lazy_file=False, flight_s=0.0)
    try:  # a bad fork (CUDA initialized in the parent) cannot time on the GPU: a forked child's session does the same
        import torch.cuda  # loaded already (the process imported trt_trace); kept out of this module's import

        if torch.cuda._is_in_bad_fork():
            settings = dataclasses.replace(settings, gpu=False)
    except (ImportError, AttributeError):
        pass
    return settings


def _capture(conn: socket.socket, out: str, seconds: float) -> None:
    try:
        started = session.start_session(_settings(out))
    except session.TraceError as exc:
        _send(conn, {"error": str(exc)})
        return
    t0 = time.monotonic()
    _send(conn, {"started": started.path})
    # The window: the client hanging up (or sending anything) ends it early; the file is finished either way.
    try:
        while (left := seconds - (time.monotonic() - t0)) > 0:
            readable, _, _ = select.select([conn], [], [], left)
            if readable:
                break
    except (OSError, ValueError):
        pass
    held = time.monotonic() - t0
    if session.current() is not started:  # the program stopped it itself (trt_trace.stop()), or exited
        _send(conn, {"error": f"the session was stopped by the program after {held:.1f} s; {started.path} holds "
                              "what it recorded until then"})
        return
    session.stop()
    threads = started.drop_counts()
    _send(conn, {"done": True, "line": started.outcome(), "paths": started.writer.paths, "seconds": held,
                 "events": started.writer.events_written, "failed": started.failure is not None,
                 "dropped_calls": sum(t["dropped_calls"] for t in threads),
                 "dropped_events": sum(t["dropped"] for t in threads)})


def sweep(control_dir: str) -> None:
    """Removes the socket files of processes that are gone (left by os._exit, a kill or a crash)."""
    try:
        names = os.listdir(control_dir)
    except OSError:
        return
    for name in names:
        stem = name.removesuffix(".sock")
        if not stem.isdigit() or stem == name:
            continue
        try:
            os.kill(int(stem), 0)
        except ProcessLookupError:
            try:
                Path(control_dir, name).unlink()
            except OSError:
                pass
        except OSError:
            pass


atexit.register(_disarm_at_exit)
os.register_at_fork(after_in_child=_after_fork_in_child)
