"""The process's exit paths, signals and fork, wired to the session (trt_trace/runtime/session.py hands in what
to run; this module knows nothing of sessions).

- exit: `atexit`, and `os._exit` wrapped (from the first session on, chained to any earlier wrapper) so that
  a process (or a forked worker) leaving through it still finishes its trace;
- SIGTERM: finish the trace, then die of the signal as the program would have (only where the program left
  the default, and only from the main thread: Python's rule);
- the flight recorder's triggers: SIGUSR1 (taken by the native side, whose writer thread dumps: see
  csrc/session/native_writer.h) and unhandled exceptions (the program's own hooks still run after the dump);
- fork: `os.register_at_fork` around the session's lock and its child handler.

posix._exit, a C-level _exit, SIGKILL and crashes cannot run Python code: what the writer thread wrote until then,
up to its last 50 ms, is on disk, with no end record.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import posix
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

_stop: Callable[[], Any] = lambda: None  # noqa: E731 (the session's exit finish, set by install_exit_paths)
_finish_at_exit: Callable[[], None] = lambda: None  # noqa: E731 (the session's exit finish)
_dump: Callable[[str], None] = lambda trigger: None  # noqa: E731 (the flight recorder's dump on a trigger)


def at_exit(finish: Callable[[], None]) -> None:
    """`finish` runs at exit (atexit) and before os._exit once install_exit_paths has run."""
    global _finish_at_exit
    _finish_at_exit = finish
    atexit.register(_finish_at_interpreter_exit)


def _finish_at_interpreter_exit() -> None:
    with finishing():
        _finish_at_exit()


def at_fork(before: Callable[[], Any], after_in_parent: Callable[[], Any], after_in_child: Callable[[], Any]) -> None:
    os.register_at_fork(before=before, after_in_parent=after_in_parent, after_in_child=after_in_child)


# A SIGTERM that arrives while the trace is being finished (an exit path, or stop() called by the program)
# must not kill the process in the middle of it: a multiprocessing Pool's terminate() sends SIGTERM to
# workers that are already leaving through os._exit after their last task, and dying there left their
# files without an end, or with no file at all. The signal waits for the finish, then the process dies
# of it as it would have.
_finishing = 0  # finishes in progress on this process's threads (the handler runs in the main thread)
_deferred_signal: int | None = None


@contextlib.contextmanager
def finishing() -> Iterator[None]:
    """Around the end of a trace: SIGTERM (trt_trace's handler) waits for the block's end, then kills."""
    global _finishing
    _finishing += 1
    try:
        yield
    finally:
        _finishing -= 1
        if _finishing == 0 and _deferred_signal is not None and not _exiting:
            _die_of(_deferred_signal)


_exiting = False  # inside os._exit's wrapper: the deferred signal is delivered there, after the finish


def _die_of(signum: int) -> None:
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def _finish_on_signal(signum, frame) -> None:  # noqa: ANN001
    """SIGTERM: finish the trace, then die of the signal as the program would have."""
    global _deferred_signal
    if _finishing:
        _deferred_signal = signum  # the finish it interrupted runs on; the process dies after it
        return
    try:
        with finishing():
            _stop()
    finally:
        _die_of(signum)


def install_exit_paths(stop: Callable[[], Any]) -> None:
    """SIGTERM (`stop`: the session's finish at exit, with its line) and os._exit (the at_exit finish)
    finish the trace from now on."""
    global _stop
    _stop = stop
    _install_signal_handlers()
    _install_exit_hook()


def _install_signal_handlers() -> None:
    # Only where the program left the default (it may have its own handler, or ignore the signal: a
    # background job or a process manager's child keeps ignoring it while traced), and only from the
    # main thread (Python's rule). SIGINT needs nothing: KeyboardInterrupt runs atexit.
    if threading.current_thread() is not threading.main_thread():
        return
    try:
        if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
            signal.signal(signal.SIGTERM, _finish_on_signal)
    except (ValueError, OSError):
        pass


_previous_excepthook = sys.excepthook
_previous_thread_excepthook = threading.excepthook


def _excepthook(exc_type, exc, tb) -> None:  # noqa: ANN001
    _dump(f"unhandled {exc_type.__name__}")
    _previous_excepthook(exc_type, exc, tb)


def _thread_excepthook(args) -> None:  # noqa: ANN001
    if args.exc_type is not SystemExit:
        _dump(f"unhandled {args.exc_type.__name__} in thread {getattr(args.thread, 'name', '?')}")
    _previous_thread_excepthook(args)


def install_flight_triggers(dump: Callable[[str], None]) -> None:
    """Unhandled exceptions call `dump(trigger)` (the program's own hooks still run after the dump)."""
    global _previous_excepthook, _previous_thread_excepthook, _dump
    _dump = dump
    if sys.excepthook is not _excepthook:
        _previous_excepthook, sys.excepthook = sys.excepthook, _excepthook
    if threading.excepthook is not _thread_excepthook:
        _previous_thread_excepthook, threading.excepthook = threading.excepthook, _thread_excepthook


def sigusr1_is_free() -> bool:
    """Whether a flight recorder may take SIGUSR1: only where the program kept the default, and asked from
    the main thread. The native side then takes it (the session's start op): a Python handler would wait
    for the main thread's next bytecode, which a thread busy in C++ or holding the GIL never reaches."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "SIGUSR1"):
        return False
    try:
        return signal.getsignal(signal.SIGUSR1) == signal.SIG_DFL
    except (ValueError, OSError):
        return False


# A process (or forked child) that leaves through os._exit runs no atexit hook and would leave its
# file without its last batches and its end: while this process traces, os._exit finishes the trace first.
_posix_exit = posix._exit
_exit_before: Callable[[int], Any] | None = None  # os._exit as it was (another tool may have wrapped it too)


def _exit_finishing_the_trace(status: int) -> None:
    global _exiting
    _exiting = True
    try:
        with finishing():
            _finish_at_exit()
    except BaseException:  # noqa: BLE001 (the process is leaving: nothing may stop it)
        pass
    if _deferred_signal is not None:  # a SIGTERM came while the trace was finished: die of it now
        _die_of(_deferred_signal)
    (_exit_before or _posix_exit)(status)


def _install_exit_hook() -> None:
    """os._exit finishes the trace first, from the first session on (a pass-through without one)."""
    global _exit_before
    if _exit_before is None and os._exit is not _exit_finishing_the_trace:
        _exit_before = os._exit
        _exit_finishing_the_trace.__doc__ = getattr(_exit_before, "__doc__", None)
        os._exit = _exit_finishing_the_trace
