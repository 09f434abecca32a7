"""Shared fixtures. The tests import the *installed* trt_trace (tools/test.sh installs it)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

import trt_trace
from trt_trace import standin
from trt_trace.native import ops
from trt_trace.schema.records import from_bytes
from trt_trace.standin import model


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "xdist_group(name): run these tests on one pytest-xdist worker, in order")
    if os.environ.get("TRT_TRACE_TEST_CPU"):  # per-test CPU seconds into that folder (tests/cpu_time_plugin.py)
        from cpu_time_plugin import CpuTimes  # why: only when asked; tests/ is on sys.path as the conftest's folder
        runs_tests = bool(os.environ.get("PYTEST_XDIST_WORKER")) or not config.getoption("numprocesses", None)
        config.pluginmanager.register(CpuTimes(Path(os.environ["TRT_TRACE_TEST_CPU"]), runs_tests), "cpu_time_plugin")


# The GPU machine has no browser and reaches no network (tools/device/device_check.sh sets this there, and
# says so): the real-UI tests are deselected and counted in the summary. Nowhere else: CI and
# tools/test.sh never set it, and a missing browser fails those tests loudly (the perfetto_ui fixture).
NO_BROWSER = os.environ.get("TRT_TRACE_NO_BROWSER") == "1"


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's own hook reads the marks (--dist loadgroup)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """tools/test.sh runs the suite on several workers (pytest-xdist, --dist loadgroup). The tests of a
    module that share a fixture of module scope run on one worker, in file order: the fixture is made
    once (an nsys capture, a torchrun job, the README's directory that each command builds on); the
    module's other tests, and every other test, go to whichever worker is free."""
    if NO_BROWSER:
        ui = [item for item in items if "perfetto_ui" in getattr(item, "fixturenames", ())]
        if ui:
            config.hook.pytest_deselected(items=ui)
            items[:] = [item for item in items if "perfetto_ui" not in getattr(item, "fixturenames", ())]
            config.stash[_NO_BROWSER_COUNT] = len(ui)
    for item in items:
        info = getattr(item, "_fixtureinfo", None)
        if info is not None and any(d.scope == "module" for defs in info.name2fixturedefs.values() for d in defs):
            item.add_marker(pytest.mark.xdist_group(item.module.__name__))


_NO_BROWSER_COUNT = pytest.StashKey[int]()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    count = config.stash.get(_NO_BROWSER_COUNT, 0)
    if count:
        terminalreporter.write_line(f"TRT_TRACE_NO_BROWSER=1: {count} real-UI test(s) deselected (no browser on this "
                                    "machine); they run in CI and tools/test.sh", yellow=True)


def pytest_collection_finish(session: pytest.Session) -> None:
    """On a pytest-xdist worker of --dist loadgroup, each grouped test's id must carry its group
    (`...@name`): the scheduler keeps a group on one worker by that suffix alone. Without it (a pytest
    that pytest-xdist cannot rename tests in) the groups would be spread silently; stop loudly instead."""
    if not getattr(session.config.option, "loadgroup", False):
        return
    lost = [item.nodeid for item in session.items
            if item.get_closest_marker("xdist_group") is not None and "@" not in item.nodeid.rsplit("]", 1)[-1]]
    if lost:
        raise pytest.UsageError(f"pytest-xdist did not group {len(lost)} test(s) (e.g. {lost[0]}): pytest "
                                f"{pytest.__version__} with this pytest-xdist cannot keep a group on one worker")


@pytest.fixture(autouse=True)
def _clean_tracer():
    """Every test starts with tracing off, empty rings and zeroed counters, and the rings recording
    as in a session: tests of the hook switch calls on with set_profile_execution and read the
    records with drain_all() (the switch alone only counts; test_first_contact checks that)."""
    trt_trace.stop()
    ops.set_profile_execution(False)
    drain_all()
    ops.reset()
    ops.set_recording(True)
    yield
    trt_trace.stop()
    ops.set_profile_execution(False)
    ops.set_recording(False)


def _inherited_signal_state() -> tuple:
    """What a child started now inherits of this process's signals: which are ignored, which blocked."""
    import signal

    ignored = tuple(s.name for s in (signal.SIGINT, signal.SIGTERM, signal.SIGUSR1)
                    if signal.getsignal(s) is signal.SIG_IGN)
    return ignored, tuple(sorted(s.name for s in signal.pthread_sigmask(signal.SIG_BLOCK, [])))


@pytest.fixture(autouse=True)
def _signals_left_as_found():
    """A test (or the code it runs in this process) must leave the signals as it found them: an ignored
    or blocked SIGINT would pass to every child that later tests start, and their Ctrl-C would go unheard."""
    before = _inherited_signal_state()
    yield
    after = _inherited_signal_state()
    assert after == before, f"signals ignored / blocked were {before}, the test left {after}"


@pytest.fixture(scope="session", autouse=True)
def _load_standin():
    standin.load()
    ops.set_buffer_capacity(1 << 16)


def drain_all():
    """Every record pending in the rings, as one structured array."""
    import numpy as np

    parts = []
    while True:
        batch = from_bytes(ops.drain(1 << 16).numpy()).copy()
        if len(batch) == 0:
            break
        parts.append(batch)
    from trt_trace.schema.records import RECORD_DTYPE

    return np.concatenate(parts) if parts else np.zeros(0, dtype=RECORD_DTYPE)


@contextlib.contextmanager
def playing_runtime(version: str) -> Iterator[None]:
    """The stand-in plays `version` inside the block and what it played before after it (engines made
    inside keep `version`)."""
    previous = standin.use_runtime(version)
    try:
        yield
    finally:
        standin.use_runtime(previous)


@pytest.fixture(params=standin.RUNTIME_VERSIONS)
def runtime_version(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Runs the test once per Torch-TensorRT version the stand-in plays, for the tests whose behaviour
    depends on it (engine layout, pickling and packages, call paths, phases). Engines made in the test
    follow the version; child processes get it through TRT_TRACE_STANDIN_RUNTIME."""
    previous = standin.use_runtime(request.param)
    monkeypatch.setenv("TRT_TRACE_STANDIN_RUNTIME", request.param)
    yield request.param
    standin.use_runtime(previous)


_demo_packages: dict[str, tuple[str, list]] = {}


@pytest.fixture
def demo_package(request: pytest.FixtureRequest) -> tuple[str, list]:
    """A 6-engine AOTInductor package of the runtime version played (its engines are pickled in that
    version's layout), compiled once per version and run (and cached on disk by content)."""
    if "runtime_version" in request.fixturenames:
        request.getfixturevalue("runtime_version")  # switch first: the package follows the version
    return demo_package_now()


def demo_package_now() -> tuple[str, list]:
    """demo_package for the runtime version the stand-in plays now (for fixtures of wider scope)."""
    version = standin.runtime_version()
    if version not in _demo_packages:
        specs = model.demo_specs(6)
        # The suite's workers (pytest-xdist) and other checkouts share the cache: the first builds the
        # package (30-60 s), the others wait for it and reuse it instead of building it again beside it.
        with open(model.cache_dir() / f"demo_package_{version}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            _demo_packages[version] = model.package_model(specs, torch.randn(8, 64)), specs
    return _demo_packages[version]


# Passed on to child processes: where packages are cached, and the runtime version they play.
_INHERITED_SETTINGS = ("TRT_TRACE_CACHE_DIR", "TRT_TRACE_STANDIN_RUNTIME")


def trt_trace_cli() -> list[str]:
    """The installed `trt-trace` console script (never `python -m trt_trace`: from the repository root
    that would import the source folder, which has no compiled library)."""
    exe = Path(sys.executable).parent / "trt-trace"
    assert exe.exists(), "the trt-trace script must be installed beside the interpreter"
    return [str(exe)]


# What a terminal gives a program it starts, for a child whose test relies on it: Ctrl-C (SIGINT) raises
# KeyboardInterrupt, SIGTERM and SIGUSR1 take their default course. A child inherits ignored signals from
# however the suite was launched (a shell's background job ignores SIGINT; nohup, CI runners and process
# managers may ignore more), so a test that signals a child sets this first thing in the child: before
# `import torch`, which starts tracing under TRT_TRACE_OUT (trt_trace keeps an ignored signal ignored).
TERMINAL_SIGNALS = ("import signal; signal.signal(signal.SIGINT, signal.default_int_handler); "
                    "signal.signal(signal.SIGTERM, signal.SIG_DFL); signal.signal(signal.SIGUSR1, signal.SIG_DFL)\n")


def terminal_signals() -> None:
    """TERMINAL_SIGNALS for a child that is not a Python program we write (a console script): as
    `preexec_fn`, it sets the dispositions before the exec (Python then installs its KeyboardInterrupt
    handler, which it never does for a SIGINT it finds ignored)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGUSR1, signal.SIG_DFL)


def with_signals_ignored(command: list[str], signals: tuple[str, ...] = ("SIGINT", "SIGTERM")) -> list[str]:
    """`command` started as a shell starts a background job: `signals` ignored from the start (an ignored
    signal stays ignored across exec, as it does for a program the shell starts)."""
    ignore = "; ".join(f"signal.signal(signal.{name}, signal.SIG_IGN)" for name in signals)
    return [sys.executable, "-c", f"import os, signal, sys; {ignore}; os.execvp(sys.argv[1], sys.argv[1:])", *command]


def python_path(*folders: Path) -> str:
    """PYTHONPATH for a child that must also import from `folders`: put ahead of the PYTHONPATH this run has
    (the GPU machine's missing wheels come through it), never in its place."""
    inherited = os.environ.get("PYTHONPATH", "")
    return os.pathsep.join([*map(str, folders), *([inherited] if inherited else [])])


class Child(subprocess.Popen):
    """A child process whose stderr a thread of this process reads from its start (stderr=subprocess.PIPE is
    implied). A test that waits on a child's stdout (a "ready" line, a poll loop) while the child's stderr goes
    to a pipe nobody reads deadlocks once the child has written a pipe's worth (64 KiB) to stderr: torch's
    warnings at a package's load alone come near that. communicate() returns (stdout, all of stderr);
    err_text() gives the stderr read so far (all of it once the child has exited)."""

    def __init__(self, args, **kwargs) -> None:
        kwargs["stderr"] = subprocess.PIPE
        super().__init__(args, **kwargs)
        self._err_pipe, self.stderr = self.stderr, None  # Popen's own communicate() leaves it alone
        self._err: list = []
        self._err_reader = threading.Thread(target=self._read_err, daemon=True)
        self._err_reader.start()

    def _read_err(self) -> None:
        for line in self._err_pipe:
            self._err.append(line)

    def err_text(self, timeout: float = 30):
        if self.poll() is not None:
            self._err_reader.join(timeout)
        return ("" if self.text_mode else b"").join(self._err)

    def communicate(self, input=None, timeout=None):  # noqa: A002 (Popen's own name)
        out, _ = super().communicate(input, timeout)
        self._err_reader.join(timeout)
        return out, self.err_text()


def run_python(code: str, env_extra: dict[str, str] | None = None, cwd: Path | None = None,
               timeout: float = 300) -> subprocess.CompletedProcess:
    """Runs `python -c code` in a fresh interpreter (the installed package, not the source tree)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRT_TRACE_") or k in _INHERITED_SETTINGS}
    env.update(env_extra or {})
    # Never the repository root as cwd: `python -c` puts the cwd first on sys.path.
    return subprocess.run([sys.executable, "-c", code], env=env, cwd=cwd or tempfile.gettempdir(),
                          capture_output=True, text=True, timeout=timeout)


def call_from_threads(engine, threads: int = 4, calls: int = 10) -> None:
    """`threads` threads released together, each calling `engine` `calls` times (overlapping calls)."""
    barrier = threading.Barrier(threads)

    def worker():
        barrier.wait()
        for _ in range(calls):
            torch.ops.tensorrt.execute_engine([torch.ones(8)], engine)

    ts = [threading.Thread(target=worker) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()


def in_thread(fn, *args):
    """Runs fn in a new thread (it gets a fresh ring) and returns its result."""
    out = {}

    def target():
        out["v"] = fn(*args)

    t = threading.Thread(target=target)
    t.start()
    t.join()
    return out.get("v")


@pytest.fixture(scope="session")
def perfetto_ui():
    """The real Perfetto UI in one headless Chromium for the whole run (tests/perfetto_ui.py). A
    missing browser or package fails the tests that need it, loudly: they never skip."""
    from perfetto_ui import PerfettoUI, UISetupError

    try:
        ui = PerfettoUI()
    except UISetupError as exc:
        pytest.fail(str(exc), pytrace=False)
    yield ui
    ui.close()


class ClaimsCuda(torch.Tensor):
    """A CPU tensor that says it is on cuda:0 (a wrapper subclass), so that a CPU build's hook takes a
    call with it as an input for a CUDA call: the hook's GPU-timing decisions (sampling) run as on a
    GPU, and only the CUDA runtime's part (gpu::begin_call, no-op in a CPU build) records nothing.
    execute_engine itself is passed on below the Python key with the wrapper intact (the hook sees
    it); every other op runs on the CPU data, so the runtime moves it to its CPU engine."""

    @staticmethod
    def __new__(cls, data: torch.Tensor) -> ClaimsCuda:
        t = torch.Tensor._make_wrapper_subclass(cls, data.shape, dtype=data.dtype, device=torch.device("cuda", 0))
        t.cpu_data = data
        return t

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN206
        from torch.utils._pytree import tree_map

        kwargs = kwargs or {}
        if func is torch.ops.tensorrt.execute_engine.default:
            below_python = torch._C.DispatchKeySet(torch._C.DispatchKey.BackendSelect).add(torch._C.DispatchKey.CUDA)
            return func.redispatch(below_python, *args, **kwargs)

        def unwrap(a):  # noqa: ANN001, ANN202
            return a.cpu_data if isinstance(a, ClaimsCuda) else a

        kwargs = {k: v for k, v in kwargs.items() if k != "device"}
        return func(*tree_map(unwrap, args), **tree_map(unwrap, kwargs))


class Frozen(type):
    """The metaclass of a class that refuses new attributes: nothing can be wrapped in it (trt_trace's
    instrumentation then fails, as it would on a class it cannot change)."""

    def __setattr__(cls, name: str, value: object) -> None:
        raise TypeError("frozen class")
