"""A tracing session: switch on, drain to a writer in the background, finish the file.

At most one session per process. `start()` raises TraceError for a path it cannot write; the
environment-variable start-up path turns that into a one-line warning instead (see trt_trace_autostart.py).
"""

from __future__ import annotations

import atexit
import dataclasses
import inspect
import os
import posix
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import __version__, config, metrics, ops
from .config import (
    DEFAULT_BUFFER_EVENTS,
    DEFAULT_MAX_MB,
    Settings,
    expand_path,
    host_name,
    rank_info,
    shown,
    warn,
)
from .drainer import Drainer
from .flight import FlightWindow
from .perfetto_protos import protos
from .writers import ChromeJsonWriter, PerfettoTraceWriter, resolve_format, suffix_matches


class TraceError(RuntimeError):
    """A tracing session could not be started (its message is one line and names the fix)."""


_lock = threading.RLock()
_active: Session | None = None


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


def check_gpu_every(n: object) -> int:
    """A session's gpu_every: a whole number of calls from 1 to config.MAX_GPU_EVERY, else TraceError."""
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= config.MAX_GPU_EVERY:
        raise TraceError(f"gpu_every must be a whole number of calls from 1 (every call) to {config.MAX_GPU_EVERY}, "
                         f"not {n!r}; gpu=False turns GPU timing off")
    return n


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
            self.format = resolve_format(self.path, settings.format)
        except ValueError as exc:
            raise TraceError(str(exc)) from None
        if not suffix_matches(self.path, self.format):
            if self.format == "json":
                warn(f"{self.path}: writing Chrome trace JSON (name the file *.json to say so)")
            else:
                warn(f"{self.path}: writing a Perfetto protobuf trace (name the file *.pftrace to say so)")
        self.buffer_events = settings.buffer_events
        self.nvtx = settings.nvtx
        self.gpu = settings.gpu
        self.gpu_every = check_gpu_every(settings.gpu_every)
        self.pid = os.getpid()
        writer_class = PerfettoTraceWriter if self.format == "perfetto" else ChromeJsonWriter

        def file_writer(path: str, lazy: bool = False):  # noqa: ANN202 (either writer)
            return writer_class(path, ops.engine_names, lazy=lazy, max_bytes=settings.max_bytes, split=settings.split)

        try:
            if settings.flight_s > 0:  # the flight recorder: a window in memory, files only on dump()
                if self.format == "perfetto":
                    protos()  # a missing `perfetto` package fails now, not at the first dump
                self.writer = FlightWindow(self.path, file_writer, settings.flight_s, settings.flight_max_bytes,
                                           on_exit=settings.flight_on_exit)
            else:
                self.writer = file_writer(self.path, lazy=settings.lazy_file)
        except OSError as exc:
            raise TraceError(f"cannot write {shown(self.path)}: {exc.strerror or exc}; pick a writable path") from exc
        except ImportError as exc:  # the perfetto package's protos
            raise TraceError(f"cannot write a Perfetto trace ({exc}); pip install perfetto, or write *.json") from exc
        self.drainer = Drainer(self._write_batch)
        self.records_written = 0  # records handed to the writer (what reached the files: writer.events_written)
        self.failure: str | None = None  # why writing the file failed, if it did (stop())
        self.end_written = False  # after a failure: whether the file still got its end record
        self.started_ns = 0
        self._switch_before = False  # set_profile_execution as the session found it
        self._switches_before: dict[str, int | bool] = {}  # the other C++ settings as it found them

    def _write_batch(self, records) -> None:
        self.records_written += len(records)  # handed over, whether or not the write then succeeds
        self.writer.write(records)

    def _metadata(self) -> dict[str, Any]:
        import torch

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
            "buffer_events_per_thread": self.buffer_events,
            "nvtx_domain": "trt_trace" if self.nvtx else None,
            "gpu_timing": self.gpu and ops.get_gpu_timing(),
            # GPU events on every Nth CUDA call of each engine: `trt-trace summary` scales the GPU column by it.
            "gpu_every": ops.get_gpu_every(),
            # Where an engine runs on a stream of its own: 1 in N measured calls also have a caller-stream wait.
            "caller_wait_every": self.settings.caller_wait_every,
        }

    def start(self) -> None:
        # Every C++ setting this session changes goes back as it was when it stops (stop()).
        self._switches_before = ops.session_switches()
        ops.set_buffer_capacity(self.buffer_events)
        # Only this session's calls reach its file: whatever the rings still hold (the tail of an
        # earlier session, a call that outlived it) is dropped before recording starts afresh.
        ops.set_recording(False)
        self.drainer.discard_pending()
        ops.reset_thread_counts()
        self.writer.gpu_flows = ops.set_gpu_timing(self.gpu) and self.gpu
        ops.set_gpu_every(self.gpu_every)
        ops.set_engine_stream_spans(self.settings.engine_stream_spans)
        ops.set_caller_wait_every(self.settings.caller_wait_every)
        metadata = self._metadata()
        rank = "" if metadata["rank"] is None else f" rank {metadata['rank']}"
        # No "(pid N)": the viewers show the pid after every process name themselves.
        self.writer.begin(f"{metadata['program']}{rank}", metadata)
        self.started_ns = time.monotonic_ns()
        self.drainer.start()
        if not ops.set_nvtx(self.nvtx) and self.nvtx:  # off too where it was on: the session's setting holds
            warn("TRT_TRACE_NVTX: this build has no NVTX (install nvidia-nvtx and reinstall trt_trace)")
        self._switch_before = ops.get_profile_execution()
        ops.set_recording(True)
        ops.set_profile_execution(True)

    @property
    def flight(self) -> FlightWindow | None:
        return self.writer if isinstance(self.writer, FlightWindow) else None

    def dump(self, trigger: str = "dump()") -> str:
        """Flight recorder: writes the last seconds of calls as a complete trace and says so in one line
        (where, how many calls, the window it really holds); returns its path. Tracing goes on."""
        flight = self.flight
        if flight is None:
            raise TraceError(f"not a flight recorder: {self.path} is written as the calls come; "
                             "start one with TRT_TRACE_FLIGHT=SECONDS or trt_trace.flight()")
        self.drainer.drain_once()  # what the rings hold now belongs in the window
        try:
            done = flight.dump(self._end_metadata(), trigger)
        except OSError as exc:
            raise TraceError(f"cannot write the flight recorder's dump: {exc.strerror or exc}") from exc
        warn(done.line())
        return done.path

    def drop_counts(self) -> list[dict[str, int]]:
        rows = ops.thread_counts().tolist()
        return [
            {"thread": r[0], "produced": r[1], "dropped": r[2], "capacity": r[3]} for r in rows if r[1] > 0
        ]

    def _end_metadata(self) -> dict[str, Any]:
        """The session's part of the end record (the writer adds what the file knows: why it ended, its
        parts, the events written and left out: StreamedTrace.end_record)."""
        threads = self.drop_counts()
        return {
            "monotonic_ns": ops.clock_now_ns(),
            "wall_ns": time.time_ns(),
            "records_drained": self.records_written,
            "dropped_events": sum(t["dropped"] for t in threads),
            "threads": threads,
            "write_failed": self.drainer.failed,
            "gpu_clock": ops.gpu_clock_stats(),
        }

    def stop(self, report_limit: bool = True) -> None:
        """Stops recording, drains the rest and finishes the file. report_limit=False: the size limit's
        loss is left to the caller's line (the exit line says it)."""
        ops.set_recording(False)
        ops.set_profile_execution(self._switch_before or metrics.serving())  # served metrics keep counting
        self.drainer.stop()
        ops.restore_session_switches(self._switches_before)  # after the last drain: it waited for GPU spans
        end = self._end_metadata()
        threads, dropped = end["threads"], end["dropped_events"]
        if self.drainer.failed:
            self.failure = self.drainer.error
        else:
            try:
                self.writer.finish(end)
            except Exception as exc:  # the disk filled at the end, or a flight recorder's exit dump failed
                self.failure = (exc.strerror if isinstance(exc, OSError) else None) or str(exc) or repr(exc)
                if self.flight is not None:
                    warn(f"could not write the flight recorder's exit dump: {self.failure}")
        if self.failure is not None and self.flight is None:
            # Cut back to the last whole batch and ended "write failed", where that can still be written.
            self.end_written = self.writer.finish_after_failure(dict(end, write_failed=True), self.failure)
        if report_limit and self.writer.events_not_written:
            warn(f"{self.writer.events_not_written} event(s) not written: {self.path} reached the size limit of "
                 f"{config.mib(self.writer.max_bytes)} MiB (TRT_TRACE_MAX_MB); set TRT_TRACE_ON_LIMIT=split to "
                 "continue in numbered files")
        if dropped:
            n = sum(1 for t in threads if t["dropped"])
            warn(
                f"{dropped} event(s) dropped in {n} thread(s): the trace buffer was full; "
                f"raise TRT_TRACE_BUFFER (now {self.buffer_events} events per thread)"
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
        return f"trace written to {where}; open it in ui.perfetto.dev"


def start(path: str, buffer_events: int | None = None, nvtx: bool = False, lazy_file: bool = False,
          gpu: bool = True, max_bytes: int | None = None, split: bool = True, format: str | None = None,
          gpu_every: int = 1) -> Session:
    """Starts tracing every engine call of this process into `path`.

    path: the trace file; {pid}, {rank} and {host} in it are replaced (and a forked child, with
    {pid} in the path, gets a trace of its own with the same settings).
    format: "json" (Chrome trace JSON) or "perfetto" (native Perfetto protobuf); None picks by the
    suffix: *.pftrace, *.perfetto-trace and *.pb are Perfetto, anything else JSON.

    nvtx=True also emits NVTX ranges (domain "trt_trace") for Nsight Systems. lazy_file=True creates
    the file only when the first engine call is traced (the TRT_TRACE_OUT start-up path). gpu=False
    turns off GPU spans (CUDA events) of CUDA calls; gpu_every=N gives them to every Nth CUDA call of
    each engine only (per calling thread; the table's GPU column is then scaled and marked sampled).
    max_bytes: size limit of one file (default 1 GiB, 0 none); past it split=True continues in
    numbered files, split=False stops writing."""
    return start_session(_settings_from_kwargs(path, buffer_events, nvtx, lazy_file, gpu, max_bytes, split, format,
                                               gpu_every))


def _flag(name: str, value: object) -> bool:
    """A keyword that switches something: True or False (1 and 0 pass), else TraceError."""
    if isinstance(value, bool) or (isinstance(value, int) and value in (0, 1)):
        return bool(value)
    raise TraceError(f"{name} must be True or False, not {value!r}")


def _count(name: str, value: object, what: str, hint: str, minimum: int = 1, maximum: int | None = None) -> int:
    """A whole number from `minimum` (to `maximum`), else TraceError naming `what` it counts and `hint`."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum or (
            maximum is not None and value > maximum):
        upto = f" to {maximum}" if maximum is not None else ""
        raise TraceError(f"{name} must be a whole number of {what} from {minimum}{upto}, not {value!r}; {hint}")
    return value


def _buffer_events(value: object) -> int:
    """buffer_events=: events per thread as a number or as TRT_TRACE_BUFFER writes them ('256k', '1M')."""
    hint = "give e.g. 65536, '256k' or '1M' (None: the default, 64k)"
    if isinstance(value, str):
        try:
            value = config.parse_count(value)
        except ValueError:
            raise TraceError(f"buffer_events must be a positive number of events per thread, not {value!r}; "
                             f"{hint}") from None
    return _count("buffer_events", value, "events per thread", hint, maximum=config.MAX_BUFFER_EVENTS)


def _output_path(value: object) -> str:
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if not isinstance(value, str):
        raise TraceError(f"the trace path must be a file name such as 'trace.json', not {value!r}")
    return value


def _settings_from_kwargs(path: str, buffer_events: int | str | None = None, nvtx: bool = False,
                          lazy_file: bool = False, gpu: bool = True, max_bytes: int | None = None, split: bool = True,
                          format: str | None = None, gpu_every: int = 1) -> Settings:
    """start()'s keywords as Settings; a value of the wrong kind or range is one TraceError line naming the fix."""
    if format is not None and not isinstance(format, str):
        raise TraceError(f"format must be 'json', 'perfetto' or None (by the file's suffix), not {format!r}")
    return Settings(
        out=_output_path(path),
        buffer_events=DEFAULT_BUFFER_EVENTS if buffer_events is None else _buffer_events(buffer_events),
        gpu=_flag("gpu", gpu), gpu_every=check_gpu_every(gpu_every), nvtx=_flag("nvtx", nvtx),
        max_bytes=int(DEFAULT_MAX_MB * 2**20) if max_bytes is None else _count(
            "max_bytes", max_bytes, "bytes", "0: no size limit, None: the default 1 GiB", minimum=0),
        split=_flag("split", split), format=format, lazy_file=_flag("lazy_file", lazy_file), quiet=config.quiet(),
        engine_stream_spans=config.engine_stream_spans(), caller_wait_every=config.caller_wait_every())


def start_session(settings: Settings) -> Session:
    """start() with the settings in one object (the environment's, or a parent session's)."""
    global _active
    with _lock:
        if _active is not None:
            raise TraceError(f"already tracing into {_active.path}; call trt_trace.stop() first")
        session = Session(settings)
        session.start()
        _active = session
        _install_signal_handlers()
        _install_exit_hook()
        if session.flight is not None:
            _install_flight_triggers()
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
    unknown = sorted(set(start_kwargs) - set(inspect.signature(_settings_from_kwargs).parameters) - {"path"})
    if unknown:
        raise TraceError(f"flight() takes no keyword {unknown[0]!r}; it takes on_exit=, max_bytes= and start()'s")
    settings = _settings_from_kwargs(path, **start_kwargs)
    return start_session(dataclasses.replace(
        settings, flight_s=float(seconds), flight_on_exit=_flag("on_exit", on_exit),
        flight_max_bytes=settings.flight_max_bytes if max_bytes is None else _count(
            "max_bytes", max_bytes, "bytes", "the flight recorder's memory cap, e.g. 256 * 2**20")))


def dump() -> str:
    """Writes the flight recorder's window now (see flight()); returns the file's path."""
    session = _active
    if session is None or session.pid != os.getpid():
        raise TraceError("no flight recorder is running; start one with TRT_TRACE_FLIGHT=SECONDS or trt_trace.flight()")
    return session.dump()


def stop() -> str | None:
    """Stops tracing and finishes the file; returns its path (None when not tracing)."""
    session = _take_active()
    if session is None:
        return None
    session.stop()
    return session.path


def _take_active() -> Session | None:
    """The process's session, no longer active (None when not tracing, or when it is a parent's)."""
    global _active
    with _lock:
        session, _active = _active, None
    if session is None or session.pid != os.getpid():  # a fork child's copy: the file is the parent's
        return None
    return session


def active() -> Session | None:
    return _active


def _finish_on_signal(signum, frame) -> None:  # noqa: ANN001
    """SIGTERM: finish the trace, then die of the signal as the program would have."""
    try:
        stop()
    finally:
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)


def _install_signal_handlers() -> None:
    # Only where the program left the default (it may have its own handler), and only from the
    # main thread (Python's rule). SIGINT needs nothing: KeyboardInterrupt runs atexit.
    if threading.current_thread() is not threading.main_thread():
        return
    try:
        if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
            signal.signal(signal.SIGTERM, _finish_on_signal)
    except (ValueError, OSError):
        pass


def _dump_on_trigger(trigger: str) -> None:
    """A trigger's dump (its line is Session.dump's); never raises into the program."""
    session = _active
    if session is None or session.flight is None or session.pid != os.getpid():
        return
    try:
        session.dump(trigger)
    except Exception as exc:
        warn(f"flight recorder ({trigger}): could not write the dump ({exc})")


def _on_sigusr1(signum, frame) -> None:  # noqa: ANN001
    # A signal handler runs between two bytecodes of the main thread, which may hold any lock: the
    # dump runs on a thread of its own and the program goes on at once.
    threading.Thread(target=_dump_on_trigger, args=("SIGUSR1",), name="trt_trace-flight-dump", daemon=True).start()


_previous_excepthook = sys.excepthook
_previous_thread_excepthook = threading.excepthook


def _excepthook(exc_type, exc, tb) -> None:  # noqa: ANN001
    _dump_on_trigger(f"unhandled {exc_type.__name__}")
    _previous_excepthook(exc_type, exc, tb)


def _thread_excepthook(args) -> None:  # noqa: ANN001
    if args.exc_type is not SystemExit:
        _dump_on_trigger(f"unhandled {args.exc_type.__name__} in thread {getattr(args.thread, 'name', '?')}")
    _previous_thread_excepthook(args)


def _install_flight_triggers() -> None:
    """SIGUSR1 (only where the program kept the default, from the main thread) and unhandled
    exceptions (the program's own hooks still run after the dump)."""
    global _previous_excepthook, _previous_thread_excepthook
    if sys.excepthook is not _excepthook:
        _previous_excepthook, sys.excepthook = sys.excepthook, _excepthook
    if threading.excepthook is not _thread_excepthook:
        _previous_thread_excepthook, threading.excepthook = threading.excepthook, _thread_excepthook
    if threading.current_thread() is threading.main_thread() and hasattr(signal, "SIGUSR1"):
        try:
            if signal.getsignal(signal.SIGUSR1) == signal.SIG_DFL:
                signal.signal(signal.SIGUSR1, _on_sigusr1)
        except (ValueError, OSError):
            pass


def _after_fork_in_child() -> None:
    """A forked child must not write into the parent's file: its copy of the session is dropped
    (the file object closed without a write); with {pid} in TRT_TRACE_OUT it gets a trace of its own."""
    global _active
    session, _active = _active, None
    if session is None:
        return
    session.writer.abandon()
    ops.after_fork_in_child()
    if "{pid}" in (session.settings.out or ""):
        # The parent's settings whole; only GPU timing is off (CUDA cannot be used in a forked child).
        child = dataclasses.replace(session.settings, gpu=False, lazy_file=True)
        try:
            start_session(child)
        except Exception as exc:
            warn(f"could not trace the forked child ({exc})")
    else:
        ops.set_recording(False)
        ops.set_profile_execution(False)
        ops.restore_session_switches(session._switches_before)  # the parent's session is not the child's


os.register_at_fork(before=_lock.acquire, after_in_parent=_lock.release,
                    after_in_child=lambda: (_lock._at_fork_reinit(), _after_fork_in_child()))


@atexit.register
def _finish_at_exit() -> None:
    """Finishes this process's trace at exit and says what is on disk, in one line."""
    session = _take_active()
    if session is None:
        return
    quiet = session.settings.quiet
    session.stop(report_limit=quiet)  # not quiet: the line below says what the size limit left out
    if quiet:
        return
    if session.flight is not None:
        if session.flight.on_exit and session.flight.last_dump is not None:
            warn(session.flight.last_dump.line())
        return
    if session.writer.created or session.failure is not None:
        warn(session.outcome())


# A process (or forked child) that leaves through os._exit runs no atexit hook and would leave its
# file without its last batches and its end: while this process traces, os._exit finishes the trace
# first. (posix._exit, a C-level _exit, SIGKILL and crashes cannot run Python code: what the drainer
# wrote until then, up to its last 50 ms, is on disk, with no end record.)
_posix_exit = posix._exit
_exit_before: Callable[[int], Any] | None = None  # os._exit as it was (another tool may have wrapped it too)


def _exit_finishing_the_trace(status: int) -> None:
    try:
        _finish_at_exit()
    except BaseException:  # noqa: BLE001 (the process is leaving: nothing may stop it)
        pass
    (_exit_before or _posix_exit)(status)


def _install_exit_hook() -> None:
    """os._exit finishes the trace first, from the first session on (a pass-through without one)."""
    global _exit_before
    if _exit_before is None and os._exit is not _exit_finishing_the_trace:
        _exit_before = os._exit
        _exit_finishing_the_trace.__doc__ = getattr(_exit_before, "__doc__", None)
        os._exit = _exit_finishing_the_trace
