"""The trt-trace command line.

    trt-trace run -o trace.json -- python serve.py --port 8000
    trt-trace summary trace.json [--by-rank] [--plot engines.png] [--phase enqueue] [--json]
    trt-trace diff base.json new.json [--threshold 5] [--plot diff.png] [--json]
    trt-trace layers trace.json [--json] [--skip-first 1] [--from 5 --to 65]
    trt-trace merge trace_0.json trace_1.json -o all.json
    trt-trace summary prof.json --kernels          # a torch.profiler / nsys capture: exact kernel time
    trt-trace merge trace.json prof.json -o all.json   # the capture's kernels on the trace's timeline
    trt-trace merge trace_0.json trace_1.json -o all.pftrace   # the same as a Perfetto trace, for the UI
    trt-trace slice trace.json -o window.json --from 60 --to 70 [--engines a,b] [--skip-first 1]
    trt-trace export trace.json calls.parquet
    trt-trace export rank*.json --dataset calls/    # a Parquet dataset of many traces; summary calls/
    trt-trace view trace.json [--port 10000] [--no-browser]
    trt-trace capture PID --seconds 10 -o trace.json   # a window of a running (armed) process
    trt-trace capture --all --seconds 10 -o 'trace_{rank}.json'   # every armed process of this user
    trt-trace demo
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import subprocess
import sys
import threading
from typing import NoReturn

import orjson

# Each verb imports what only it uses (its analysis, the viewer's HTTP server, the merge's Perfetto
# writer) when it runs: every child process the CLI is (a test's, a script's) starts with what its
# verb needs, not with all of them (the CLI's start-up; tests/test_startup_and_cli.py).
from .analysis.fleet_engines import ENGINES  # the names alone: the engines load their packages when used
from .analysis.layers_report import LAYER_SORT_KEYS, LayerOptions, layers_report
from .analysis.summary_table import (
    COLUMN_GROUPS,
    COLUMNS,
    DEFAULT_COLUMNS,
    DEFAULT_NAME_WIDTH,
    FORMATS,
    SORT_KEYS,
    ColumnsError,
    TableOptions,
    parse_columns,
)
from .analysis.trace_summary import aggregate_file, cut_short_note, summary_parts
from .captures.kernel_columns import top_kernels_text
from .demo import INTERRUPTED
from .demo import add_arguments as demo_arguments
from .demo import run as run_demo
from .io.readers import TraceFileError, Window
from .io.readers.end_notes import end_notes
from .io.readers.trace_info import bad_input_rc
from .native import _library
from .runtime import capture_request
from .runtime.config import control_dir_from_env, expand_path, plain, run_flags, shown
from .runtime.session import TraceError, check_output_path
from .schema.trace_format import DURATIONS


def _cmd_run(args: argparse.Namespace) -> int:
    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        print("trt-trace run: give the command to trace after --, e.g. trt-trace run -o t.json -- python x.py",
              file=sys.stderr)
        return 2

    try:  # the file the command's first traced process will write ({pid}: any process's, the same folder)
        check_output_path(expand_path(args.out))
    except TraceError as exc:
        print(f"trt-trace run: {exc}", file=sys.stderr)
        return 2
    env = dict(os.environ)
    for name, row in run_flags():  # each flag sets its variable for the command (config.Settings' table)
        value = getattr(args, name)
        if value is None:
            continue
        wrong = row.flag_check(value) if row.flag_check else None
        if wrong:
            print(f"trt-trace run: {wrong}", file=sys.stderr)
            return 2
        env[row.env] = repr(value) if isinstance(value, float) else str(value)
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


def _calls_in(paths: list[str]) -> int | None:
    """The calls a capture's files hold (read back: the accounting's first half); None where unreadable."""
    try:
        return sum(int(aggregate_file(p, ("total",)).stats[:, 0].sum()) for p in paths)
    except (TraceFileError, OSError, ValueError):
        return None


def _cmd_capture(args: argparse.Namespace) -> int:
    if not (args.seconds > 0 and args.seconds < float("inf")) or not (args.timeout > 0 and args.timeout < 1e6):
        print("trt-trace capture: --seconds and --timeout take a positive number of seconds", file=sys.stderr)
        return 2
    if (args.pid is None) == (not args.all):
        print("trt-trace capture: give one PID, or --all for every armed process of this user", file=sys.stderr)
        return 2
    folder = control_dir_from_env()
    many = args.all
    out = capture_request.output_template(args.out, many)
    try:
        check_output_path(expand_path(out))  # the folder, here (the target checks its own file too)
    except TraceError as exc:
        print(f"trt-trace capture: {exc}", file=sys.stderr)
        return 2
    targets: list[tuple[capture_request.Capture, str]] = []
    failed = 0
    pids = capture_request.armed_pids(folder) if many else [args.pid]
    if many and not pids:
        print(f"trt-trace capture: no armed process of this user in {shown(folder)} (a process is armed once it "
              "imports trt_trace, or with TRT_TRACE_ARM=1)", file=sys.stderr)
        return 1
    for pid in pids:
        try:
            targets.append((capture_request.Capture(pid, out), capture_request.check_target(pid, folder)))
        except capture_request.CaptureError as exc:
            print(f"trt-trace capture: {exc}", file=sys.stderr)
            failed += 1
    stop = threading.Event()
    finished = [threading.Event() for _ in targets]

    def run_one(c: capture_request.Capture, path: str, finished: threading.Event) -> None:
        try:
            capture_request.capture_one(c, path, args.seconds, args.timeout, stop=stop)
        finally:
            finished.set()

    for (c, path), done in zip(targets, finished, strict=True):
        threading.Thread(target=run_one, args=(c, path, done), daemon=True).start()
    # Waited for through events, not Thread.join: a Ctrl-C inside join() can leave a running thread looking ended.
    try:
        for done in finished:
            while not done.wait(0.2):
                pass
    except KeyboardInterrupt:  # the window ends now; each target still finishes its file and answers
        stop.set()
        try:
            for done in finished:
                while not done.wait(0.2):
                    pass
        except KeyboardInterrupt:
            print("trt-trace capture: interrupted again; the processes finish their files by themselves",
                  file=sys.stderr)
            return 130
    for c, _ in targets:
        if c.error:
            print(f"trt-trace capture: {c.error}" if c.error.startswith(("not ", "no ", "timed out", "process "))
                  else f"trt-trace capture: process {c.pid}: {c.error}", file=sys.stderr)
            failed += 1
            continue
        paths = list(c.done.get("paths") or [c.path])
        print(capture_request.result_line(c, None if c.done.get("failed") else _calls_in(paths)), flush=True)
        failed += bool(c.done.get("failed"))
    return 1 if failed else 0


def _window(args: argparse.Namespace, verb: str) -> Window | None:
    """The window options of a reading verb; None and one line on stderr where they make no sense."""
    skip = getattr(args, "skip_first", 0) or 0
    lo, hi = getattr(args, "from_s", None), getattr(args, "to_s", None)
    engines = getattr(args, "engines", None)
    if skip < 0:
        print(f"trt-trace {verb}: --skip-first {skip}: give a number of calls >= 0", file=sys.stderr)
        return None
    for flag, value in (("--from", lo), ("--to", hi)):
        if value is not None and not (value >= 0 and value < float("inf")):
            print(f"trt-trace {verb}: {flag} {value}: give seconds >= 0 from the trace's start", file=sys.stderr)
            return None
    if lo is not None and hi is not None and hi <= lo:
        print(f"trt-trace {verb}: --to {hi:g} must come after --from {lo:g}", file=sys.stderr)
        return None
    names = None
    if engines is not None:
        names = frozenset(n.strip() for n in engines.split(",") if n.strip())
        if not names:
            print(f"trt-trace {verb}: --engines: give engine names, comma-separated", file=sys.stderr)
            return None
    return Window(skip, lo, hi, names)


def _notes(verb: str, notes: list[str]) -> None:
    for note in notes:
        print(f"trt-trace {verb}: {note}", file=sys.stderr)


def _table_format(args: argparse.Namespace, verb: str) -> str | None:
    """--format, with --json as its alias; None and one line on stderr where the two disagree."""
    if args.json and args.format not in (None, "json"):
        print(f"trt-trace {verb}: --json and --format {args.format} disagree; give one", file=sys.stderr)
        return None
    return "json" if args.json else args.format or "text"


def _table_options(args: argparse.Namespace, verb: str) -> TableOptions | None:
    fmt = _table_format(args, verb)
    if fmt is None:
        return None
    try:
        columns = None if args.columns is None else parse_columns(args.columns)
    except ColumnsError as exc:
        print(f"trt-trace {verb}: {exc}", file=sys.stderr)
        return None
    return TableOptions(columns=columns, sort=args.sort, top=args.top, format=fmt, name_width=args.width)


def _cmd_summary(args: argparse.Namespace) -> int:
    window = _window(args, "summary")
    options = _table_options(args, "summary")
    if window is None or options is None:
        return 2
    args.json = options.format == "json"
    if os.path.isdir(args.trace):
        return _dataset_summary(args, window, options)
    if args.engine is not None:
        print(f"trt-trace summary: --engine reads a dataset folder (export --dataset), not a trace file "
              f"({args.trace})", file=sys.stderr)
        return 2
    try:
        text, summary = summary_parts(args.trace, by_process=args.by_rank, phase=args.phase, window=window,
                                      options=options, include_profiled=args.include_profiled)
    except TraceFileError as exc:
        print(f"trt-trace summary: {exc}", file=sys.stderr)
        return bad_input_rc(exc)
    if args.kernels is not None and args.json:
        text = _with_top_kernels_json(text, summary, args.kernels)
    print(text, end="")
    _notes("summary", summary.notes)
    if window.active and options.format == "text":
        print(f"window: {window.describe()}")
    if args.kernels is not None:
        if options.format == "csv":
            print("trt-trace summary: --kernels lists kernels in text or JSON; not with --format csv", file=sys.stderr)
            return 2
        capture = summary.capture
        if capture is None or not capture.has_device_activity:
            what = "trt_trace's own trace (CUDA-event spans, no kernels)" if capture is None else \
                f"a {capture.source} capture without CUDA activity"
            print(f"trt-trace summary: --kernels needs a torch.profiler or Nsight Systems capture with CUDA activity; "
                  f"{args.trace} is {what}", file=sys.stderr)
            return 1
        if options.format == "text":
            print(top_kernels_text(capture, summary.capture_kept, args.kernels))
    if not args.plot:
        return 0
    if not summary.names:
        print(f"trt-trace summary: {args.trace} has no engine calls; nothing to plot", file=sys.stderr)
        return 1
    inputs = summary.metadata.get("merged", {}).get("inputs", []) if isinstance(summary.metadata.get("merged"),
                                                                                 dict) else []
    title = os.path.basename(args.trace) + (f" ({len(inputs)} processes)" if len(inputs) > 1 else "")
    # why: this verb's alone, kept out of the CLI's start-up (see the module's top)
    from .analysis.plot import plot_engines

    try:
        plot_engines(summary, args.plot, title)
    except (OSError, ValueError) as exc:  # matplotlib: unwritable path, unknown image format
        print(f"trt-trace summary: cannot write {args.plot}: {getattr(exc, 'strerror', None) or exc}",
              file=sys.stderr)
        return 1
    # JSON and CSV stay one document on stdout: the line goes to stderr there
    print(f"plot: {args.plot}", file=sys.stdout if options.format == "text" else sys.stderr)
    return 0


def _cmd_layers(args: argparse.Namespace) -> int:
    window = _window(args, "layers")
    fmt = _table_format(args, "layers")
    if window is None or fmt is None:
        return 2
    def shown(line: str) -> str:  # a path's control characters escaped: each line stays one line
        return "".join(c if c.isprintable() else repr(c)[1:-1] for c in line)

    try:
        text, notes = layers_report(args.trace, window=window, options=LayerOptions(
            sort=args.sort, top=args.top, format=fmt, name_width=args.width))
    except TraceFileError as exc:
        print(f"trt-trace layers: {shown(str(exc))}", file=sys.stderr)
        return bad_input_rc(exc)
    print(text, end="")
    _notes("layers", [shown(n) for n in notes])
    if window.active and fmt == "text":
        print(f"window: {window.describe()}")
    return 0


def _with_top_kernels_json(text: str, summary: object, n: int) -> str:
    capture = getattr(summary, "capture", None)
    if capture is None or not capture.has_device_activity:
        return text
    # why: this verb's alone, kept out of the CLI's start-up (see the module's top)
    from .captures import report

    rows = [dataclasses.asdict(r) for r in report.top_kernels(capture, n=n, calls_kept=summary.capture_kept)]
    doc = orjson.loads(text)
    (doc[-1] if isinstance(doc, list) else doc)["top_kernels"] = rows
    return orjson.dumps(doc).decode() + "\n"


def _kernel_count(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of kernels") from None
    if not 1 <= n <= 10000:
        raise argparse.ArgumentTypeError(f"{n}: give 1 to 10000 kernels per engine")
    return n


def _cmd_diff(args: argparse.Namespace) -> int:
    """Exit code: 1 when an engine regressed significantly beyond the threshold, 2 on bad input (also
    two traces that share no engine)."""
    # why: this verb's alone, kept out of the CLI's start-up (see the module's top)
    from .analysis.diff import diff_files, format_diff, to_json

    # why: this verb's alone, kept out of the CLI's start-up (see the module's top)
    from .analysis.diff_plot import plot_diff

    if not (args.threshold >= 0):  # also NaN
        print(f"trt-trace diff: --threshold {args.threshold}: give a percentage >= 0, e.g. 5", file=sys.stderr)
        return 2
    if not (args.min_change_us >= 0) or args.min_change_us == float("inf"):
        print(f"trt-trace diff: --min-change-us {args.min_change_us}: give microseconds >= 0, e.g. 1", file=sys.stderr)
        return 2
    window = _window(args, "diff")
    if window is None:
        return 2
    try:
        diff = diff_files(args.base, args.new, args.threshold, min_change_ns=round(args.min_change_us * 1000),
                          window=window)
    except TraceFileError as exc:
        print(f"trt-trace diff: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(orjson.dumps(to_json(diff)).decode())
    else:
        print(format_diff(diff), end="")
    _notes("diff", diff.notes)
    if args.plot:
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
    # why: this verb's alone, kept out of the CLI's start-up (see the module's top)
    from .analysis.merge import MergeError, input_notes, merge

    # why: this verb's alone, kept out of the CLI's start-up (see the module's top)
    from .captures.merge_capture import report_lines

    window = _window(args, "merge")
    if window is None:
        return 2
    try:
        merged = merge(args.traces, args.output, window=window)
    except MergeError as exc:
        print(f"trt-trace merge: {exc}", file=sys.stderr)
        return exc.rc
    inputs = merged["inputs"]
    print(f"merged {len(args.traces)} file(s), {len(inputs)} process(es), "
          f"{sum(i['calls'] for i in inputs)} engine calls into {args.output}"
          + (f" ({merged['window']})" if merged.get("window") else ""))
    for i in inputs:
        who = "" if i["rank"] is None else f"rank {i['rank']} "
        shift = f", shifted {i['offset_us'] / 1000:+.3f} ms" if i["offset_us"] else ""
        state = "" if i["complete"] else ", cut short (process killed?)"
        print(f"  {who}{i['host']} pid {i['pid_in_file']}: {i['calls']} calls{shift}{state}")
        if i["partial_calls"]:
            print(f"    {cut_short_note(i['partial_calls'])}")
    if merged.get("captures"):
        for done in merged["captures"]:
            print("\n".join(report_lines(done)))
    _notes("merge", input_notes(merged))
    for note in merged["notes"]:
        print(f"trt-trace merge: note: {note}", file=sys.stderr)
    return 0


def _cmd_slice(args: argparse.Namespace) -> int:
    # why: this verb's alone, kept out of the CLI's start-up (see the module's top)
    from .analysis.trace_slice import SliceError, slice_trace

    # why: this verb's alone, kept out of the CLI's start-up (see the module's top)
    from .captures.merge_capture import is_capture

    window = _window(args, "slice")
    if window is None:
        return 2

    if is_capture(args.trace):
        print(f"trt-trace slice: {args.trace} is a profiler's capture; slice cuts trt_trace's own traces (merge it "
              "onto one: trt-trace merge trace.json CAPTURE -o all.json)", file=sys.stderr)
        return 1
    if not window.active:
        print("trt-trace slice: say what to keep: --from/--to SECONDS, --skip-first N and/or --engines A,B",
              file=sys.stderr)
        return 2
    try:
        sliced, notes = slice_trace(args.trace, args.output, window)
    except SliceError as exc:
        print(f"trt-trace slice: {exc}", file=sys.stderr)
        return exc.rc
    print(f"{sliced['calls']} of {sliced['calls_in_source']} engine calls ({sliced['window']}) into {args.output} "
          f"({os.path.getsize(args.output) / 1e6:.1f} MB)")
    _notes("slice", notes)
    return 0


def _dataset_summary(args: argparse.Namespace, window: Window, options: TableOptions) -> int:
    """summary of a Parquet dataset (export --dataset), on DuckDB or Spark (--engine)."""
    # why: this verb's alone, kept out of the CLI's start-up (see the module's top)
    from .analysis.fleet_engines import DatasetError, DuckDBEngine, SparkEngine, spark_session

    # why: as above, the dataset's query plan is this verb's alone
    from .analysis.fleet_summary import dataset_summary_parts

    for flag, given in (("--plot", args.plot), ("--kernels", args.kernels is not None)):
        if given:
            print(f"trt-trace summary: {flag} reads a trace file, not a dataset ({args.trace})", file=sys.stderr)
            return 2
    spark = None
    try:
        if args.engine == "spark":
            spark = spark_session()
            engine: DuckDBEngine | SparkEngine = SparkEngine(spark)
        else:
            engine = DuckDBEngine()
        text, summary = dataset_summary_parts(args.trace, by_process=args.by_rank, phase=args.phase, window=window,
                                              options=options, include_profiled=args.include_profiled, engine=engine)
    except DatasetError as exc:
        print(f"trt-trace summary: {exc}", file=sys.stderr)
        return 2
    finally:
        if spark is not None:
            spark.stop()
    print(text, end="")
    _notes("summary", summary.notes)
    if window.active and options.format == "text":
        print(f"window: {window.describe()}")
    return 0


def _cmd_export(args: argparse.Namespace) -> int:
    # why: this verb's alone, kept out of the CLI's start-up (see the module's top)
    from .analysis.export import ExportError, export_calls

    # why: this verb's alone, kept out of the CLI's start-up (see the module's top)
    from .analysis.fleet import export_dataset

    window = _window(args, "export")
    if window is None:
        return 2
    if args.dataset is not None:
        try:
            rows, processes, notes = export_dataset(args.paths, args.dataset, window)
        except ExportError as exc:
            print(f"trt-trace export: {exc}", file=sys.stderr)
            return exc.rc
        print(f"{rows} calls of {processes} process{'es' if processes != 1 else ''} into {args.dataset}")
        _notes("export", notes)
        return 0
    if len(args.paths) != 2:
        print("trt-trace export: give one trace and the Parquet file (export TRACE calls.parquet), or traces and "
              "--dataset DIR", file=sys.stderr)
        return 2
    args.trace, args.output = args.paths
    try:
        rows, read = export_calls(args.trace, args.output, window)
    except ExportError as exc:
        print(f"trt-trace export: {exc}", file=sys.stderr)
        return exc.rc
    print(f"{rows} calls into {args.output}")
    _notes("export", end_notes(read))
    return 0


def _add_window(p: argparse.ArgumentParser) -> None:
    p.add_argument("--skip-first", type=int, default=0, metavar="N",
                   help="leave out each engine's first N calls (per process): warm-up")
    p.add_argument("--from", dest="from_s", type=float, metavar="SECONDS",
                   help="only calls that begin this many seconds after the trace's first event or later")
    p.add_argument("--to", dest="to_s", type=float, metavar="SECONDS", help="... and before this many seconds")


def _top(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of rows") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"{n}: give 1 or more rows")
    return n


def _width(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of columns") from None
    if n != 0 and not 8 <= n <= 10000:
        raise argparse.ArgumentTypeError(f"{n}: give 8 to 10000 columns (0: no limit)")
    return n


def _add_table_options(p: argparse.ArgumentParser, row: str) -> None:
    """--sort, --top, --format and --width of a table verb (summary: engines; layers: each engine's layers)."""
    keys = SORT_KEYS if row == "engine" else LAYER_SORT_KEYS
    first = "share: each engine's time, most first" if row == "engine" else "total: most time first"
    p.add_argument("--sort", choices=keys, default=keys[0], metavar="KEY",
                   help=f"order of the {row}s: {', '.join(keys)} (default {first}; numbers largest first, names "
                        "A to Z)")
    p.add_argument("--top", type=_top, default=0, metavar="N",
                   help=f"only the first N {row}s in that order"
                        + (" (the ALL row stays of every engine)" if row == "engine" else " of each engine")
                        + "; a line says how many were left out")
    p.add_argument("--format", choices=FORMATS, default=None,
                   help="text (default), json (as --json) or csv (a header row, one row per "
                        + ("engine, ALL last)" if row == "engine" else "layer)"))
    default = DEFAULT_NAME_WIDTH if row == "engine" else 72
    how = "longer names wrap onto lines of their own" if row == "engine" else "longer names are cut in the middle"
    p.add_argument("--width", type=_width, default=default, metavar="COLUMNS",
                   help=f"text: the {row} name column's width (default {default}; 0: as wide as the widest name); "
                        f"{how}; JSON and CSV keep every name whole")


def _cmd_view(args: argparse.Namespace) -> int:
    # why: this verb's alone, kept out of the CLI's start-up (see the module's top)
    from .viewer import DEFAULT_PORT, ctrl_c_stops

    port = DEFAULT_PORT if args.port is None else args.port
    if not 0 <= port <= 65535:
        print(f"trt-trace view: --port {port} is not a port; give one in 1..65535 (0: any free one)", file=sys.stderr)
        return 2
    with ctrl_c_stops():  # also when started with SIGINT ignored (a background job): it says "Ctrl-C stops"
        return _view(args, port)


def _view(args: argparse.Namespace, port: int) -> int:
    # why: this verb's alone, kept out of the CLI's start-up (see the module's top)
    from .io.readers.view_checks import end_state_notes, too_large

    # why: this verb's alone, kept out of the CLI's start-up (see the module's top)
    from .viewer import ViewerError, ViewerServer, open_browser

    server = None
    try:  # Ctrl-C at any point, also before serving, ends it with one line
        if os.path.isfile(args.trace):
            large = too_large(args.trace)
            if large:
                print(f"trt-trace view: {large}", file=sys.stderr)
                return 1
            try:  # what is no trace (an empty file, text, `{"a":1}`) is refused, not served
                _notes("view", end_state_notes(args.trace))
            except TraceFileError as exc:
                print(f"trt-trace view: {exc}", file=sys.stderr)
                return bad_input_rc(exc)
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
    try:
        _library.load_at_import()  # the CLI imports the package without its tracer (trt_trace_cli.py)
        return run_demo(args.out, args.engines, args.calls, args.layers)
    except KeyboardInterrupt:
        print(INTERRUPTED, file=sys.stderr)
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

    def verb(name: str, what: str) -> argparse.ArgumentParser:
        """A verb whose `--help` starts with what it does (its line in `trt-trace --help`)."""
        return sub.add_parser(name, help=what, description=what)

    run = verb("run", "run a command with tracing on (sets TRT_TRACE_OUT for it)")
    for name, row in run_flags():  # the settings table's flags (config.Settings), with their variables
        options = {k: (v() if callable(v) and k == "choices" else v) for k, v in row.flag_options.items()}
        if "choices" not in options:
            options.setdefault("metavar", row.flag[-1].lstrip("-").upper())
        default = f" (default {options['default']})" if "default" in options else ""
        run.add_argument(*row.flag, dest=name, help=f"{plain(row.help)} ({row.env}){default}", **options)
    run.add_argument("command", nargs=argparse.REMAINDER, help="-- command and its arguments")
    run.set_defaults(func=_cmd_run)

    summary = verb("summary", "per-engine timing table of a trace file")
    summary.add_argument("trace", help="trace.json / trace.pftrace written by trt_trace (or trt-trace merge), a "
                                       "dataset folder (export --dataset, read on DuckDB or Spark), or a "
                                       "torch.profiler trace (.json, .json.gz) / nsys export (.sqlite) of a traced run")
    summary.add_argument("--by-rank", action="store_true",
                         help="one table per process (rank) of a merged trace, then all of them")
    summary.add_argument("--plot", metavar="PNG", help="also draw per-engine bars by phase into this image")
    summary.add_argument("--phase", default="total", choices=DURATIONS,
                         help="the p50/p99 and min/mean/max/stddev columns are of this duration (default: the "
                              "call's total)")
    summary.add_argument("--json", action="store_true", help="print the table as JSON (for dashboards, scripts): "
                                                             "--format json")
    _add_table_options(summary, "engine")
    summary.add_argument("--columns", metavar="A,B", help=f"the text and CSV columns, in this order (any of "
                         f"{', '.join(COLUMNS)}; groups {', '.join(COLUMN_GROUPS)}); +A,B adds them to the default "
                         f"({', '.join(DEFAULT_COLUMNS)}, gpu); the statistics are of --phase")
    summary.add_argument("--kernels", nargs="?", const=10, type=_kernel_count, metavar="N",
                         help="of a torch.profiler / Nsight Systems capture with CUDA activity: each engine's top N "
                              "kernels by time (default 10)")
    summary.add_argument("--include-profiled", action="store_true",
                         help="keep the calls that ran under per-layer profiling (TRT_TRACE_LAYERS) in the rows; by "
                              "default they are left out (profiling makes them slower) and a line says how many")
    summary.add_argument("--engine", choices=ENGINES,
                         help="of a dataset folder: the SQL engine that computes the table (default duckdb, embedded; "
                              "spark: pyspark, local mode or the master Spark's configuration names)")
    _add_window(summary)
    summary.set_defaults(func=_cmd_summary)

    layers = verb("layers", "per engine, its layers by time (a trace recorded with TRT_TRACE_LAYERS)")
    layers.add_argument("trace", help="trace.json / trace.pftrace written by trt_trace with per-layer timing")
    layers.add_argument("--json", action="store_true", help="print the tables as JSON: --format json")
    _add_table_options(layers, "layer")
    _add_window(layers)
    layers.set_defaults(func=_cmd_layers)

    diff = verb("diff", "per-engine change between two traces, with a significance test; "
                                       "exit code 1 on a regression")
    diff.add_argument("base", help="the trace to compare against (JSON, .pftrace or merged)")
    diff.add_argument("new", help="the trace of the build under test")
    diff.add_argument("--threshold", type=float, default=5.0, metavar="PCT",
                      help="a significant change of the per-call p50 beyond PCT %% is a regression (default 5)")
    diff.add_argument("--min-change-us", type=float, default=1.0, metavar="US",
                      help="... and by at least US microseconds (default 1: below, clock and hook resolution)")
    diff.add_argument("--plot", metavar="PNG", help="also draw the change per engine into this image")
    diff.add_argument("--json", action="store_true", help="print the diff as JSON")
    _add_window(diff)
    diff.set_defaults(func=_cmd_diff)

    merge = verb("merge", "merge per-process (per-rank) traces into one, clocks aligned")
    merge.add_argument("traces", nargs="+", help="trace files written by trt_trace, e.g. trace_*.json, and any "
                                                 "torch.profiler / nsys capture of the same run (placed on their "
                                                 "timeline)")
    merge.add_argument("-o", "--output", required=True, help="the merged trace to write, e.g. all.json (Chrome "
                                                             "JSON), or all.pftrace (a Perfetto trace for the UI)")
    _add_window(merge)
    merge.set_defaults(func=_cmd_merge)

    slice_ = verb("slice", "write a window of a trace (time, engines, warm-up left out) as a new "
                                          "trace small enough for the Perfetto UI")
    slice_.add_argument("trace", help="the trace to cut (JSON, .pftrace or merged)")
    slice_.add_argument("-o", "--output", required=True, help="the window to write, e.g. window.json (Chrome JSON)")
    _add_window(slice_)
    slice_.add_argument("--engines", metavar="A,B", help="only these engines (comma-separated names)")
    slice_.set_defaults(func=_cmd_slice)

    export = verb("export", "one Parquet row per call, for DuckDB, Polars, Spark")
    export.add_argument("paths", nargs="+", metavar="TRACE [OUTPUT]",
                        help="the trace to export (JSON, .pftrace or merged) and the Parquet file to write, e.g. "
                             "calls.parquet; with --dataset, any number of traces")
    export.add_argument("--dataset", metavar="DIR", help="write a Hive-partitioned Parquet dataset instead "
                        "(DIR/host=H/rank=R/pid=P/part-N.parquet; `trt-trace summary DIR` reads it)")
    _add_window(export)
    export.add_argument("--engines", metavar="A,B", help="only these engines (comma-separated names)")
    export.set_defaults(func=_cmd_export)

    view = verb("view", "open a trace in the Perfetto UI served from this machine (offline)")
    view.add_argument("trace", help="trace.json / trace.pftrace / a merged trace (also one cut short by a kill)")
    view.add_argument("--port", type=int, help="port on 127.0.0.1 (default 10000; a busy one moves to the next free)")
    view.add_argument("--no-browser", action="store_true", help="only print the URL")
    view.set_defaults(func=_cmd_view)

    capture = verb("capture", "trace a running process for a window, without restarting it (a process that "
                              "imported trt_trace, or runs with TRT_TRACE_ARM=1)")
    capture.add_argument("pid", type=int, nargs="?", metavar="PID", help="the process to capture")
    capture.add_argument("--all", action="store_true",
                         help="every armed process of this user on this host (e.g. all workers of a torchrun job), "
                              "one file each")
    capture.add_argument("--seconds", type=float, default=10.0, metavar="S", help="the window (default 10)")
    capture.add_argument("-o", "--output", dest="out", default="trace_{pid}.json",
                         help="the trace each process writes ({pid}, {rank}, {host} replaced; with --all and neither "
                              "{pid} nor {rank}, .{pid} goes before the suffix; default trace_{pid}.json)")
    capture.add_argument("--timeout", type=float, default=10.0, metavar="S",
                         help="how long a process may take to answer and start (default 10)")
    capture.set_defaults(func=_cmd_capture)

    demo = verb("demo", "trace a stand-in AOTInductor package with TRT_TRACE_OUT (see README)")

    demo_arguments(demo)
    demo.set_defaults(func=_cmd_demo)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
