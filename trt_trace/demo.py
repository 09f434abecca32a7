"""The demo: an AOTInductor package of six stand-in engines, traced with nothing but TRT_TRACE_OUT.

    python -m trt_trace.demo [--out trace.json] [--engines 6] [--calls 25] [--layers N]

Builds (or reuses from the cache) the package, then runs it in a fresh Python process whose only
tracing setting is the environment variable TRT_TRACE_OUT (no trt_trace code in it), and prints the
per-engine table of the resulting trace and its path. --layers N also sets TRT_TRACE_LAYERS=N: each
engine's next N calls after its first run with the runtime's per-layer profiling, and the demo then
prints each engine's layers by time (`trt-trace layers`).
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time

from .analysis.layers_report import layers_text
from .analysis.trace_summary import TraceFileError, summary_text
from .runtime.session import TraceError, check_output_path

SERVE_SCRIPT = textwrap.dedent(
    """
    import signal, sys
    try:  # Ctrl-C reaches this process too: the demo's one line says it, not a traceback of this one
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})  # blocked until here (demo.serve)
        import torch
        from trt_trace.standin import model   # the stand-in runtime (in real life: import torch_tensorrt)
        runner = model.load_package(sys.argv[1])
        x = torch.randn(8, 64)
        for _ in range(int(sys.argv[2])):
            y = runner(x)
        print(f"served {sys.argv[2]} calls of the package, output sum {float(y.sum()):.4f}")
    except KeyboardInterrupt:
        sys.exit(130)
    """
)


INTERRUPTED = "trt-trace demo: interrupted (Ctrl-C); a trace the serving process began is finished as far as it got"
MAX_ENGINES = 64  # each engine is compiled into the package: more only makes the demo slow
DEFAULT_ENGINES = 6
DEFAULT_CALLS = 25
FINISH_WAIT_S = 60  # for the serving process to finish its trace after Ctrl-C


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The demo's options, shared by `trt-trace demo` and `python -m trt_trace.demo`."""
    parser.add_argument("--out", default="trace.json", metavar="PATH",
                        help="the trace file to write (default trace.json; *.pftrace: native Perfetto)")
    parser.add_argument("--engines", type=int, default=DEFAULT_ENGINES, metavar="N",
                        help=f"stand-in engines in the package, 1 to {MAX_ENGINES} (default {DEFAULT_ENGINES})")
    parser.add_argument("--calls", type=int, default=DEFAULT_CALLS, metavar="N",
                        help=f"times the package is run, each running every engine once (default {DEFAULT_CALLS})")
    parser.add_argument("--layers", type=int, default=0, metavar="N",
                        help="also time each engine's next N calls after its first layer by layer (TRT_TRACE_LAYERS)")


def check_arguments(out: str, engines: int, calls: int, layers: int = 0) -> tuple[int, str] | None:
    """(exit code, the one line saying what is wrong) for options the demo cannot run with, else None."""
    if layers < 0:
        return 2, f"--layers {layers}: give a number of calls >= 0"
    if not 1 <= engines <= MAX_ENGINES:
        return 2, f"--engines {engines}: give a number of engines from 1 to {MAX_ENGINES}"
    if calls < 1:
        return 2, f"--calls {calls}: give a number of calls >= 1"
    try:
        check_output_path(out)
    except TraceError as exc:
        return 1, str(exc)
    return None


def run(out: str, engines: int = DEFAULT_ENGINES, calls: int = DEFAULT_CALLS, layers: int = 0) -> int:
    """Builds the package, runs it `calls` times with TRT_TRACE_OUT=out (and TRT_TRACE_LAYERS=layers),
    prints the table (and the layers'); an exit code."""
    problem = check_arguments(out, engines, calls, layers)
    if problem is not None:
        print(f"trt-trace demo: {problem[1]}", file=sys.stderr)
        return problem[0]
    return build_and_serve(out, engines, calls, layers)


def build_and_serve(out: str, engines: int, calls: int, layers: int = 0) -> int:
    """The demo itself, with options already checked."""
    import torch  # heavy: only the demo itself pays for it (the CLI's other verbs never import torch)

    from .standin import model  # imports torch and the stand-in runtime: as torch above

    t0 = time.time()
    path = model.package_model(model.demo_specs(engines), torch.randn(8, 64))
    print(f"AOTInductor package with {engines} stand-in engines: {path} ({time.time() - t0:.1f} s)")

    env = dict(os.environ)
    env["TRT_TRACE_OUT"] = os.path.abspath(out)
    settings = f"TRT_TRACE_OUT={out}"
    if layers:
        env["TRT_TRACE_LAYERS"] = str(layers)
        settings += f" and TRT_TRACE_LAYERS={layers}"
    print(f"running it {calls} times in a fresh process with only {settings} set ...")
    # Not from this directory: `python -c` puts the working directory first on sys.path, and run in a
    # checkout that would import its source folder (no compiled library) instead of the installed package.
    rc = serve(path, calls, env)
    if rc == 130:  # Ctrl-C in the serving process alone
        raise KeyboardInterrupt
    if rc != 0:
        print(f"trt-trace demo: the serving process failed with exit code {rc}", file=sys.stderr)
        return rc
    print()
    try:
        print(summary_text(out), end="")
        if layers:
            print()
            print(layers_text(out), end="")
    except TraceFileError as exc:
        print(f"trt-trace demo: {exc}", file=sys.stderr)
        return 1
    print(f"\ntrace: {os.path.abspath(out)}  (open it in https://ui.perfetto.dev)")
    return 0


def serve(path: str, calls: int, env: dict[str, str]) -> int:
    """Runs the package in a fresh process; its exit code. On Ctrl-C, waits for it to finish its trace
    and re-raises.

    A terminal's Ctrl-C reaches both processes (one process group). The serving process starts with SIGINT
    blocked and unblocks it once inside its `try` (SERVE_SCRIPT), so a Ctrl-C during its start-up is taken
    there, not printed as a traceback of Python's start-up. The demo then waits for it to finish its trace
    (subprocess.call would kill it after a quarter of a second, cutting the trace); one that is still
    running gets SIGTERM, which trt_trace answers by finishing the trace, and after FINISH_WAIT_S (or a
    second Ctrl-C) SIGKILL: the demo never leaves it running."""
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})  # the child inherits it; this process takes
    try:                                                       # a Ctrl-C once it holds the child
        proc = subprocess.Popen([sys.executable, "-c", SERVE_SCRIPT, path, str(calls)], env=env,
                                cwd=tempfile.gettempdir())
    except BaseException:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
        raise
    try:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
        while True:  # in short waits: a Ctrl-C that the kernel hands to another of this process's threads
            try:     # (torch's) only sets Python's flag, and would not end a wait blocked in waitpid
                return proc.wait(timeout=0.2)
            except subprocess.TimeoutExpired:
                continue
    except KeyboardInterrupt:
        try:
            try:
                proc.wait(timeout=1)  # it had the Ctrl-C too, unless it was sent to the demo alone
            except subprocess.TimeoutExpired:
                proc.terminate()
                proc.wait(timeout=FINISH_WAIT_S)
        except (KeyboardInterrupt, subprocess.TimeoutExpired):  # a second Ctrl-C, or a process that hangs
            proc.kill()
            proc.wait()
            print(f"trt-trace demo: the serving process (pid {proc.pid}) did not end: killed; its trace is cut "
                  "short", file=sys.stderr)
        raise


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m trt_trace.demo", description=__doc__.splitlines()[0])
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return run(args.out, args.engines, args.calls, args.layers)
    except KeyboardInterrupt:
        print(INTERRUPTED, file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
