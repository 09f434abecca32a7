"""The trt-trace command line.

    trt-trace run -o trace.json -- python serve.py --port 8000
    trt-trace summary trace.json [--by-rank] [--plot engines.png] [--phase enqueue] [--json]
    trt-trace diff base.json new.json [--threshold 5] [--plot diff.png] [--json]
    trt-trace merge trace_0.json trace_1.json -o all.json
    trt-trace view trace.json [--port 10000] [--no-browser]
    trt-trace demo
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from typing import NoReturn

from .trace_format import DURATIONS


def _cmd_run(args: argparse.Namespace) -> int:
    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        print("trt-trace run: give the command to trace after --, e.g. trt-trace run -o t.json -- python x.py",
              file=sys.stderr)
        return 2
    from .config import expand_path, parse_count, shown
    from .session import TraceError, check_output_path

    try:  # the file the command's first traced process will write ({pid}: any process's, the same folder)
        check_output_path(expand_path(args.output))
    except TraceError as exc:
        print(f"trt-trace run: {exc}", file=sys.stderr)
        return 2
    if args.buffer is not None:
        try:
            parse_count(args.buffer)
        except ValueError:
            print(f"trt-trace run: --buffer {args.buffer!r} is not a positive event count; give e.g. 65536, 256k or 1M",
                  file=sys.stderr)
            return 2
    env = dict(os.environ)
    env["TRT_TRACE_OUT"] = args.output
    if args.buffer:
        env["TRT_TRACE_BUFFER"] = args.buffer
    if args.format:
        env["TRT_TRACE_FORMAT"] = args.format
    if args.flight is not None:
        if not 0 < args.flight < float("inf"):
            print(f"trt-trace run: --flight must be a positive number of seconds, not {args.flight:g}",
                  file=sys.stderr)
            return 2
        env["TRT_TRACE_FLIGHT"] = repr(args.flight)
    try:
        # Children inherit TRT_TRACE_OUT: every Python process of the command that imports torch is
        # traced (give {pid} in the path to keep their files apart).
        return subprocess.call(command, env=env)
    except FileNotFoundError:
        print(f"trt-trace run: command not found: {shown(command[0])}", file=sys.stderr)
        return 127
    except OSError as exc:  # not executable, a directory, an empty name: as a shell says it
        print(f"trt-trace run: cannot run {shown(command[0])}: {exc.strerror or exc}", file=sys.stderr)
        return 126
    except KeyboardInterrupt:
        return 130


def _cmd_summary(args: argparse.Namespace) -> int:
    from .trace_summary import TraceFileError, aggregate, load_events, summary_text

    try:
        print(summary_text(args.trace, by_process=args.by_rank, phase=args.phase, json=args.json), end="")
        summary = aggregate(load_events(args.trace)) if args.plot else None
    except TraceFileError as exc:
        print(f"trt-trace summary: {exc}", file=sys.stderr)
        return 1
    if summary is None:
        return 0
    if not summary.names:
        print(f"trt-trace summary: {args.trace} has no engine calls; nothing to plot", file=sys.stderr)
        return 1
    from .plot import plot_engines

    inputs = summary.metadata.get("merged", {}).get("inputs", [])
    title = os.path.basename(args.trace) + (f" ({len(inputs)} processes)" if len(inputs) > 1 else "")
    try:
        plot_engines(summary, args.plot, title)
    except (OSError, ValueError) as exc:  # matplotlib: unwritable path, unknown image format
        print(f"trt-trace summary: cannot write {args.plot}: {getattr(exc, 'strerror', None) or exc}",
              file=sys.stderr)
        return 1
    print(f"plot: {args.plot}")
    return 0


def _cmd_diff(args: argparse.Namespace) -> int:
    """Exit code: 1 when an engine regressed significantly beyond the threshold, 2 on bad input."""
    import orjson

    from .diff import diff_files, format_diff, to_json
    from .trace_summary import TraceFileError

    if not (args.threshold >= 0):  # also NaN
        print(f"trt-trace diff: --threshold {args.threshold}: give a percentage >= 0, e.g. 5", file=sys.stderr)
        return 2
    if not (args.min_change_us >= 0):
        print(f"trt-trace diff: --min-change-us {args.min_change_us}: give microseconds >= 0, e.g. 1", file=sys.stderr)
        return 2
    try:
        diff = diff_files(args.base, args.new, args.threshold, min_change_ns=round(args.min_change_us * 1000))
    except TraceFileError as exc:
        print(f"trt-trace diff: {exc}", file=sys.stderr)
        return 2
    except (ValueError, TypeError, KeyError, AttributeError) as exc:  # events of the wrong shape
        print(f"trt-trace diff: {args.base} or {args.new} is not a trace written by trt_trace ({exc})",
              file=sys.stderr)
        return 2
    if args.json:
        print(orjson.dumps(to_json(diff)).decode())
    else:
        print(format_diff(diff), end="")
    if args.plot:
        from .diff_plot import plot_diff

        try:
            plot_diff(diff, args.plot, f"{os.path.basename(args.base)} → {os.path.basename(args.new)}")
        except (OSError, ValueError) as exc:
            print(f"trt-trace diff: cannot write {args.plot}: {getattr(exc, 'strerror', None) or exc}",
                  file=sys.stderr)
            return 2
        if not args.json:
            print(f"plot: {args.plot}")
    return 1 if diff.regressions else 0


def _cmd_merge(args: argparse.Namespace) -> int:
    from .complete_calls import cut_short_note
    from .merge import MergeError, merge

    try:
        merged = merge(args.traces, args.output)
    except MergeError as exc:
        print(f"trt-trace merge: {exc}", file=sys.stderr)
        return 1
    inputs = merged["inputs"]
    print(f"merged {len(args.traces)} file(s), {len(inputs)} process(es), "
          f"{sum(i['calls'] for i in inputs)} engine calls into {args.output}")
    for i in inputs:
        who = "" if i["rank"] is None else f"rank {i['rank']} "
        shift = f", shifted {i['offset_us'] / 1000:+.3f} ms" if i["offset_us"] else ""
        state = "" if i["complete"] else ", cut short (process killed?)"
        print(f"  {who}{i['host']} pid {i['pid_in_file']}: {i['calls']} calls{shift}{state}")
        if i["partial_calls"]:
            print(f"    {cut_short_note(i['partial_calls'])}")
    for note in merged["notes"]:
        print(f"trt-trace merge: note: {note}", file=sys.stderr)
    return 0


def _cmd_view(args: argparse.Namespace) -> int:
    from .viewer import DEFAULT_PORT, ViewerError, ViewerServer, open_browser

    port = DEFAULT_PORT if args.port is None else args.port
    if not 0 <= port <= 65535:
        print(f"trt-trace view: --port {port} is not a port; give one in 1..65535 (0: any free one)", file=sys.stderr)
        return 2
    server = None
    try:  # Ctrl-C at any point, also before serving, ends it with one line
        try:
            server = ViewerServer(port)
            url = server.add(args.trace)
        except ViewerError as exc:
            print(f"trt-trace view: {exc}", file=sys.stderr)
            return 1
        print(f"Perfetto UI with {args.trace}: {url}", flush=True)
        print(f"(serving on 127.0.0.1:{server.port} only; over ssh: ssh -L {server.port}:127.0.0.1:{server.port} "
              "HOST; Ctrl-C stops)", flush=True)
        if not args.no_browser and not open_browser(url):
            print("trt-trace view: no browser to open here; open the URL above", file=sys.stderr, flush=True)
        server.serve_forever()
    except KeyboardInterrupt:
        print("trt-trace view: stopped", file=sys.stderr)
    finally:
        if server is not None:
            server.close()
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    from .demo import run

    try:
        return run(args.out, args.engines, args.calls)
    except KeyboardInterrupt:
        return 130


class _Parser(argparse.ArgumentParser):
    """argparse with its usage errors in one line (`trt-trace run: argument --flight: ...`), exit code 2."""

    def error(self, message: str) -> NoReturn:
        # The message quotes what was typed: control characters in it are shown escaped, not obeyed.
        text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in message)
        self.exit(2, f"{self.prog}: {text} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="trt-trace", description="Trace Torch-TensorRT engine calls.")
    sub = parser.add_subparsers(dest="cmd", required=True)

    run = sub.add_parser("run", help="run a command with tracing on (sets TRT_TRACE_OUT for it)")
    run.add_argument("-o", "--output", default="trace.json",
                     help="trace file; {pid}, {rank}, {host} are replaced (default trace.json)")
    run.add_argument("--buffer", help="events per thread buffer, e.g. 256k (TRT_TRACE_BUFFER)")
    run.add_argument("--format", choices=("json", "perfetto"),
                     help="trace format (TRT_TRACE_FORMAT; default: by suffix, *.pftrace is Perfetto)")
    run.add_argument("--flight", type=float, metavar="SECONDS",
                     help="flight recorder: keep the last SECONDS of calls, write them on SIGUSR1, an unhandled "
                          "exception or trt_trace.dump() (TRT_TRACE_FLIGHT)")
    run.add_argument("command", nargs=argparse.REMAINDER, help="-- command and its arguments")
    run.set_defaults(func=_cmd_run)

    summary = sub.add_parser("summary", help="per-engine timing table of a trace file")
    summary.add_argument("trace", help="trace.json / trace.pftrace written by trt_trace (or trt-trace merge)")
    summary.add_argument("--by-rank", action="store_true",
                         help="one table per process (rank) of a merged trace, then all of them")
    summary.add_argument("--plot", metavar="PNG", help="also draw per-engine bars by phase into this image")
    summary.add_argument("--phase", default="total", choices=DURATIONS,
                         help="the p50/p99 columns are of this duration (default: the call's total)")
    summary.add_argument("--json", action="store_true", help="print the table as JSON (for dashboards, scripts)")
    summary.set_defaults(func=_cmd_summary)

    diff = sub.add_parser("diff", help="per-engine change between two traces, with a significance test; "
                                       "exit code 1 on a regression")
    diff.add_argument("base", help="the trace to compare against (JSON, .pftrace or merged)")
    diff.add_argument("new", help="the trace of the build under test")
    diff.add_argument("--threshold", type=float, default=5.0, metavar="PCT",
                      help="a significant change of the per-call p50 beyond PCT %% is a regression (default 5)")
    diff.add_argument("--min-change-us", type=float, default=1.0, metavar="US",
                      help="... and by at least US microseconds (default 1: below, clock and hook resolution)")
    diff.add_argument("--plot", metavar="PNG", help="also draw the change per engine into this image")
    diff.add_argument("--json", action="store_true", help="print the diff as JSON")
    diff.set_defaults(func=_cmd_diff)

    merge = sub.add_parser("merge", help="merge per-process (per-rank) traces into one, clocks aligned")
    merge.add_argument("traces", nargs="+", help="trace files written by trt_trace, e.g. trace_*.json")
    merge.add_argument("-o", "--output", required=True, help="the merged trace to write, e.g. all.json")
    merge.set_defaults(func=_cmd_merge)

    view = sub.add_parser("view", help="open a trace in the Perfetto UI served from this machine (offline)")
    view.add_argument("trace", help="trace.json / trace.pftrace / a merged trace (also one cut short by a kill)")
    view.add_argument("--port", type=int, help="port on 127.0.0.1 (default 10000; a busy one moves to the next free)")
    view.add_argument("--no-browser", action="store_true", help="only print the URL")
    view.set_defaults(func=_cmd_view)

    demo = sub.add_parser("demo", help="trace a stand-in AOTInductor package with TRT_TRACE_OUT (see README)")
    from .demo import add_arguments as demo_arguments  # no torch import: the module imports it when it runs

    demo_arguments(demo)
    demo.set_defaults(func=_cmd_demo)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
