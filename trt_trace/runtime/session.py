"""A tracing session: switch on, drain to a writer in the background, finish the file.

At most one session per process. `start()` raises TraceError for a path it cannot write; the
environment-variable start-up path turns that into a one-line warning instead (see trt_trace_autostart.py).
"""

from __future__ import annotations

import dataclasses
import os
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from ..io import formats
from ..native import ops
from ..schema.errors import BufferUnavailable, TraceError
from ..schema.version import __version__
from . import config, metrics, process_hooks, profiler_range
from .config import (
    Settings,
    check_gpu_every,
    check_layers,
    expand_path,
    from_keywords,
    host_name,
    rank_info,
    shown,
    warn,
)
from .flight import Dump, NativeFlight
from .native_trace import NativeTrace, _as_os_error

__all__ = ["Session", "TraceError", "active", "check_output_path", "current", "dump", "flight", "start",
           "start_session", "stop"]

# The Python half of the session's state (the C++ half: csrc/session/session_control.h, whose own lock
# guards its state): `_active` is the recording session, `_stopping` one whose stop() runs. `_shown` is the
# session active() may show: set before its start op turns recording on, cleared once its stop op has turned
# it off (`_active` is set after the one and cleared before the other). `_lock` guards them and is held
# across fork().
_lock = threading.RLock()
_active: Session | None = None
_stopping: Session | None = None
_shown: Session | None = None


def check_output_path(path: str) -> Path:
    """The path a session (or the demo) can write, else TraceError saying why in one line."""
    if path.strip() == "":
        raise TraceError("the trace output path is empty; give a file name such as trace.json")
    p = Path(path)
    shown_path = shown(path)
    try:
        if p.is_dir():
            raise TraceError(f"{shown_path} is a directory; give a file name such as {shown(p / 'trace.json')}")
        parent = p.parent if str(p.parent) != "" else Path(".")
        if not parent.is_dir():
            raise TraceError(f"cannot write {shown_path}: directory {shown(parent)} does not exist; create it or pick "
                             "another path")
        if p.exists() and not os.access(p, os.W_OK):
            raise TraceError(f"cannot write {shown_path}: permission denied; pick a writable path")
    except (OSError, ValueError) as exc:  # a name too long, a NUL byte: the file system's word
        raise TraceError(f"cannot write {shown_path}: {getattr(exc, 'strerror', None) or exc}; pick another path") \
            from None
    try:  # the only sure test (root passes os.access on read-only file systems)
        with tempfile.TemporaryFile(dir=parent):
            pass
    except OSError as exc:
        raise TraceError(f"cannot write into {shown(parent)}: {exc.strerror or exc}; pick a writable path") from None
    return p


def program_name() -> str:
    """What ran, for the trace's process name: the script (`serve.py`), the module of `python -m`
    (`pkg.serve`), the console script (`torchrun`), else `python` (`python -c`, an interactive shell)."""
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    if spec is not None and spec.name and spec.name != "__main__":
        return spec.name.removesuffix(".__main__")
    argv0 = sys.argv[0] if sys.argv else ""
    if argv0 and not argv0.startswith("-"):
        return os.path.basename(argv0)
    return "python"


class Session:
    def __init__(self, settings: Settings) -> None:
        if settings.out is None:
            raise TraceError("no trace output path; give a file name such as trace.json")
        self.settings = settings
        self.path = str(check_output_path(expand_path(settings.out)))
        try:
            self.format = formats.resolve_format(self.path, settings.format)
        except ValueError as exc:
            raise TraceError(str(exc)) from None
        fmt = formats.get(self.format)
        if not formats.suffix_matches(self.path, self.format):
            warn(f"{self.path}: writing {fmt.description} (name the file *{fmt.suffixes[0]} to say so)")
        check_gpu_every(settings.gpu_every)  # a Settings made by hand gets the keyword's line too
        check_layers(settings.layers)
        self.pid = os.getpid()
        # The native writer thread drains, formats and writes (or, for the flight recorder, keeps the window
        # and writes the dumps); Python keeps control only. It is the session's writer and its drainer.
        self.writer: NativeTrace
        try:
            if settings.flight_s > 0:  # the flight recorder: a window in memory, files only on dump()
                self.writer = NativeFlight(self.path, settings.flight_s, settings.flight_max_bytes,
                                           on_exit=settings.flight_on_exit, fmt=self.format,
                                           file_max_bytes=settings.max_bytes, split=settings.split)
            else:
                self.writer = NativeTrace(self.path, lazy=settings.lazy_file, max_bytes=settings.max_bytes,
                                          split=settings.split, fmt=self.format)
        except ImportError as exc:  # the perfetto package's protos (for the metadata): fails now, not at a dump
            raise TraceError(f"cannot write a Perfetto trace ({exc}); pip install perfetto, or write *.json") from exc
        self.drainer = self.writer
        self.failure: str | None = None  # why writing the file failed, if it did (stop())
        self.end_written = False  # after a failure: whether the file still got its end record
        self.started_ns = 0

    @property
    def records_written(self) -> int:
        """Records handed to the writer (what reached the files: writer.events_written)."""
        return self.drainer.records_drained

    def _metadata(self) -> dict[str, Any]:
        import torch  # loaded by now (a session has started); the module's import stays torch-free for the CLI

        return {
            "tool": "trt_trace",
            "trt_trace_version": __version__,
            "torch_version": torch.__version__,
            "clock": "CLOCK_MONOTONIC",
            "clock_domain": "monotonic ns since boot, ts in microseconds",
            "monotonic_ns": ops.clock_now_ns(),
            "wall_ns": time.time_ns(),
            "pid": self.pid,
            "host": host_name(),
            # Which rank this process is: `trt-trace merge` names and orders its process group by it.
            **rank_info(),
            "argv": sys.argv,
            "program": program_name(),
            "buffer_events_per_thread": self.settings.buffer_events,
            "nvtx_domain": "trt_trace" if self.settings.nvtx else None,
            "gpu_timing": self.settings.gpu and ops.gpu_timing_built(),
            # GPU events on every Nth CUDA call of each engine: `trt-trace summary` scales the GPU column by it.
            "gpu_every": self.settings.gpu_every,
            # Where an engine runs on a stream of its own: 1 in N measured calls also have a caller-stream wait.
            "caller_wait_every": self.settings.caller_wait_every,
            # Each engine's next N calls after its first profiled layer by layer (docs/layers.md); 0: off.
            "layers": self.settings.layers,
        }

    def start(self) -> None:
        """idle -> recording, in one op (csrc/session/session_control.h): the C++ settings whole, the rings
        emptied of older sessions' records, the writer started, a new recording epoch, the switch on."""
        metadata = self._metadata()
        rank = "" if metadata["rank"] is None else f" rank {metadata['rank']}"
        # No "(pid N)": the viewers show the pid after every process name themselves.
        self.writer.begin(f"{metadata['program']}{rank}", metadata)
        self.started_ns = time.monotonic_ns()
        profiler_range.begin()  # TRT_TRACE_CUDA_PROFILER=session: nsys's cudaProfilerApi range opens before recording
        refused, message, available = self.writer.start_session(self.settings.native())
        if refused:
            profiler_range.end()
        if refused == 3:
            raise BufferUnavailable(
                f"a trace buffer of {config.events_text(self.settings.buffer_events)} cannot be allocated in this "
                "process; give a smaller TRT_TRACE_BUFFER / buffer_events / --buffer")
        if refused == 4:  # the native writer opens its file at the start (unless lazy)
            exc = _as_os_error(RuntimeError(message))
            why = exc.strerror if isinstance(exc, OSError) else message
            raise TraceError(f"cannot write {shown(self.path)}: {why or exc}; pick a writable path")
        if refused:
            raise TraceError(f"cannot start tracing: {message}")
        if not available["nvtx"] and self.settings.nvtx:
            warn("TRT_TRACE_NVTX: this build has no NVTX (install nvidia-nvtx and reinstall trt_trace)")

    @property
    def flight(self) -> NativeFlight | None:
        return self.writer if isinstance(self.writer, NativeFlight) else None

    def dump(self, trigger: str = "dump()") -> str:
        """Flight recorder: writes the last seconds of calls as a complete trace and says so in one line
        (where, how many calls, the window it really holds); returns its path. Tracing goes on."""
        flight = self.flight
        if flight is None:
            raise TraceError(f"not a flight recorder: {self.path} is written as the calls come; "
                             "start one with TRT_TRACE_FLIGHT=SECONDS or trt_trace.flight()")
        try:  # (the dump drains the rings first: what they hold now belongs in the window)
            done = flight.dump(trigger, ops.clock_now_ns())
        except OSError as exc:
            raise TraceError(f"cannot write the flight recorder's dump: {exc.strerror or exc}") from exc
        warn(done.line())
        return done.path

    def set_layers(self, n: int) -> None:
        """Per-layer timing from now on: each engine's next n calls after its first (0: off)."""
        check_layers(n)
        self.settings = dataclasses.replace(self.settings, layers=n)  # (a forked child starts with them)
        ops.session_set_layers(n)  # every engine's window starts afresh; the end record reports them

    def drop_counts(self) -> list[dict[str, int]]:
        rows = ops.thread_counts().tolist()
        return [
            {"thread": r[0], "produced": r[1], "dropped": r[2], "dropped_calls": r[5], "capacity": r[3]}
            for r in rows if r[1] > 0
        ]

    def stop(self, report_limit: bool = True) -> None:
        """recording -> stopping -> idle, in one op: recording off, the switch as found (served metrics keep
        counting), the writer's final drain (waiting for GPU spans), the C++ settings put back as found, the
        file ended with its end record (built natively; after a failed write, cut back to its last whole
        batch and ended "write failed"), or the flight recorder's exit dump. report_limit=False: the size
        limit's loss is left to the caller's line (the exit line says it)."""
        flight = self.flight
        failure, self.end_written, dump_paths, calls, held_s, capped = ops.session_stop(
            metrics.serving(), flight is not None and flight.on_exit)
        profiler_range.end()  # after the stop op's last drain, which waited for the last calls' GPU spans
        self.writer.freeze()  # its counts change no more
        self.failure = failure or None
        if flight is not None:
            if dump_paths:
                flight.last_dump = Dump(dump_paths[0], "exit", calls, flight.seconds, held_s, capped,
                                        flight.memory_bytes)
            if self.failure is not None:
                warn(f"could not write the flight recorder's exit dump: {self.failure}")
        if report_limit and self.writer.events_not_written:
            warn(f"{self.writer.events_not_written} event(s) not written: {self.path} reached the size limit of "
                 f"{config.mib(self.writer.max_bytes)} MiB (TRT_TRACE_MAX_MB); set TRT_TRACE_ON_LIMIT=split to "
                 "continue in numbered files")
        threads = self.drop_counts()
        dropped = sum(t["dropped"] for t in threads)
        if dropped:
            warn(
                f"{sum(t['dropped_calls'] for t in threads)} call(s) ({dropped} event(s)) dropped in "
                f"{sum(1 for t in threads if t['dropped'])} thread(s): the trace buffer was full; "
                f"raise TRT_TRACE_BUFFER (now {self.settings.buffer_events} events per thread)"
            )

    def outcome(self) -> str:
        """One line saying what is on disk now (after stop()): the files, the events in them, what the
        size limit left out, or that writing failed and what the file holds."""
        w = self.writer
        if self.failure is not None:
            held = "its end record says so and it loads" if self.end_written else (
                "it has no end record (readers take it as cut short)")
            return (f"writing {self.path} failed ({self.failure}) after {w.events_written} events; {held}; "
                    f"{self.records_written - w.events_written} events drained since are not in it")
        files = w.paths
        if len(files) > 1:
            where = (f"{', '.join(files)} ({w.events_written} events in {len(files)} files split at the size "
                     f"limit of {config.mib(w.max_bytes)} MiB; trt-trace merge joins them)")
        else:
            where = f"{files[0]} ({w.events_written} events)"
        if w.events_not_written:
            where += (f"; stopped at the size limit of {config.mib(w.max_bytes)} MiB (TRT_TRACE_MAX_MB): "
                      f"{w.events_not_written} more events not written (TRT_TRACE_ON_LIMIT=split keeps them)")
        in_use = getattr(w, "in_use", "")
        if in_use:  # another process was writing the path: this one wrote a file of its own
            where += f"; {in_use} was in use by another process"
        return f"trace written to {where}; open it in ui.perfetto.dev"


def start(path: str | os.PathLike, **overrides: Any) -> Session:
    """Starts tracing every engine call of this process into `path`.

    path: the trace file; {pid}, {rank} and {host} in it are replaced (and a forked child, with
    {pid} in the path, gets a trace of its own with the same settings).
    Keywords (config.Settings, each checked: a bad one is one TraceError line):
    format: "json" (Chrome trace JSON) or "perfetto" (native Perfetto protobuf); None picks by the
    suffix: *.pftrace, *.perfetto-trace and *.pb are Perfetto, anything else JSON.
    buffer_events: ring capacity per thread (a number, or '256k' / '1M'; None: 64k).
    nvtx=True also emits NVTX ranges (domain "trt_trace") for Nsight Systems. lazy_file=True creates
    the file only when the first engine call is traced (the TRT_TRACE_OUT start-up path). gpu=False
    turns off GPU spans (CUDA events) of CUDA calls; gpu_every=N gives them to every Nth CUDA call of
    each engine only (per calling thread; the table's GPU column is then scaled and marked sampled).
    max_bytes: size limit of one file (default 1 GiB, 0 none); past it split=True continues in
    numbered files, split=False stops writing. layers=N: each engine's first call runs as usual, its
    next N calls with per-layer timing (Torch-TensorRT's own profiler; docs/layers.md), then normal
    calls again; `trt-trace layers` reads them back."""
    return start_session(from_keywords(path, overrides))


def start_session(settings: Settings) -> Session:
    """start() with the settings in one object (the environment's, or a parent session's)."""
    global _active, _shown
    with _lock:
        if _active is not None:
            raise TraceError(f"already tracing into {_active.path}; call trt_trace.stop() first")
        session = Session(settings)
        _shown = session  # before the op that turns recording on: active() shows it from that moment
        try:
            session.start()
        except BaseException:
            _shown = None
            raise
        _active = session
        # SIGTERM ends the process: the trace is finished and said as at any exit (the line, the exit dump).
        process_hooks.install_exit_paths(_finish_at_exit)
        if session.flight is not None:
            process_hooks.install_flight_triggers(_dump_on_trigger)
        return session


def flight(seconds: float, path: str, on_exit: bool = False, max_bytes: int | None = None, **start_kwargs: Any,
           ) -> Session:
    """Starts the flight recorder: every engine call is traced, the last `seconds` of calls are kept
    in memory (at most `max_bytes`, default 256 MiB; the oldest go first) and nothing is written until
    a dump: trt_trace.dump(), SIGUSR1, an unhandled exception, or the exit with on_exit=True. Dump N
    goes to `path` with `.dumpN` before its suffix (trace.dump1.json); the format is by suffix as for
    start(), whose other keywords it takes."""
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not 0 < seconds < float("inf"):
        raise TraceError(f"the flight recorder's window must be a positive number of seconds, not {seconds!r}; "
                         "give e.g. 30")
    unknown = sorted(set(start_kwargs) - set(config.start_keywords()))
    if unknown:
        raise TraceError(f"flight() takes no keyword {unknown[0]!r}; it takes on_exit=, max_bytes= and start()'s")
    settings = from_keywords(path, start_kwargs)
    return start_session(dataclasses.replace(
        settings, flight_s=float(seconds), flight_on_exit=config.check_flag("on_exit", on_exit),
        flight_max_bytes=settings.flight_max_bytes if max_bytes is None else config.check_count(
            "max_bytes", max_bytes, "bytes", "the flight recorder's memory cap, e.g. 256 * 2**20",
            maximum=config.MAX_SIZE_BYTES)))


def layers(n: int) -> None:
    """Per-layer timing in a running process: from now on, each engine's first call runs as usual
    and its next n calls run with Torch-TensorRT's own per-layer profiling (their layers go into
    the session's trace; `trt-trace layers` reads them), then normal calls again; n=0 turns it off
    (engines inside their window are back to normal at once). Needs a tracing session in this
    process (TRT_TRACE_OUT, trt_trace.start()); raises TraceError otherwise or for a bad n."""
    check_layers(n)
    session = _active
    if session is None or session.pid != os.getpid():
        raise TraceError("no tracing session in this process: per-layer timing records into a session's trace; "
                         "start one with TRT_TRACE_OUT=trace.json or trt_trace.start(path, layers=N)")
    session.set_layers(n)


def dump() -> str:
    """Writes the flight recorder's window now (see flight()); returns the file's path."""
    session = _active
    if session is None or session.pid != os.getpid():
        raise TraceError("no flight recorder is running; start one with TRT_TRACE_FLIGHT=SECONDS or trt_trace.flight()")
    return session.dump()


def stop() -> str | None:
    """Stops tracing and finishes the file; returns its path (None when not tracing)."""
    with process_hooks.finishing():  # a SIGTERM meanwhile waits for the file's end
        session = _take_active()
        if session is None:
            return None
        _stop(session)
    return session.path


def _stop(session: Session, report_limit: bool = True) -> None:
    """session.stop(), the session `_stopping` meanwhile (a fork then leaves the child without one)."""
    global _stopping, _shown
    _stopping = session
    try:
        session.stop(report_limit=report_limit)
    finally:
        with _lock:
            _stopping = None
            if _shown is session:  # its recording is off now (or its stop failed: it records no more)
                _shown = None


def _take_active() -> Session | None:
    """The process's session, no longer active (None when not tracing, or when it is a parent's)."""
    global _active
    with _lock:
        session, _active = _active, None
    if session is None or session.pid != os.getpid():  # a fork child's copy: the file is the parent's
        return None
    return session


def active() -> Session | None:
    """The session whose calls are recorded now, else None: exactly while they are, as the native session
    state says (recording), from the moment its start turns recording on to the moment its stop turns it
    off. A call made while active() returned it both before and after the call is in its trace (or counted
    dropped); a call in its trace saw it before or after (a program that counts its calls by polling this
    gets the trace's count, up to the calls its start and stop cut)."""
    session = _shown
    if session is None or ops.session_state()[0] != "recording":
        return None
    return session


def current() -> Session | None:
    """The session this process has started and not yet begun to stop (its own or, in a forked child, for a
    moment, the parent's), whether or not its recording is on at this instant (active())."""
    return _active


def _dump_on_trigger(trigger: str) -> None:
    """A trigger's dump (its line is Session.dump's); never raises into the program."""
    session = _active
    if session is None or session.flight is None or session.pid != os.getpid():
        return
    try:
        session.dump(trigger)
    except Exception as exc:
        warn(f"flight recorder ({trigger}): could not write the dump ({exc})")


def _after_fork_in_child() -> None:
    """A forked child must not write into the parent's file: its copy of the session is dropped (one op:
    the file's descriptors closed without a write, recording and the switch off, the C++ settings as the
    parent's session found them); with {pid} in TRT_TRACE_OUT it gets a trace of its own. A fork while
    the parent stops its session leaves the child without one (the parent's stop waits for no child)."""
    global _active, _stopping, _shown
    session, stopping = _active, _stopping
    _active = _stopping = _shown = None
    if session is None and stopping is None:
        return
    ops.session_forked()
    if session is not None and "{pid}" in (session.settings.out or ""):
        # The parent's settings whole; only GPU timing is off (CUDA cannot be used in a forked child).
        child = dataclasses.replace(session.settings, gpu=False, lazy_file=True)
        try:
            start_session(child)
        except Exception as exc:
            warn(f"could not trace the forked child ({exc})")


def _finish_at_exit() -> None:
    """Finishes this process's trace at exit and says what is on disk, in one line."""
    session = _take_active()
    if session is None:
        return
    quiet = session.settings.quiet
    _stop(session, report_limit=quiet)  # not quiet: the line below says what the size limit left out
    if quiet:
        return
    if session.flight is not None:
        if session.flight.on_exit and session.flight.last_dump is not None:
            warn(session.flight.last_dump.line())
        return
    if session.writer.created or session.failure is not None:
        warn(session.outcome())


process_hooks.at_fork(before=_lock.acquire, after_in_parent=_lock.release,
                      after_in_child=lambda: (_lock._at_fork_reinit(), _after_fork_in_child()))
process_hooks.at_exit(_finish_at_exit)
