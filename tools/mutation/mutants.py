"""Mutation testing, small and plain (docs/mutation-testing.md): does any test fail when one operator
or constant of a module changes? Each mutant is one change of the module's syntax tree (a comparison
turned around or made strict, + for -, `and` for `or`, an integer constant one higher, a `not`
dropped), written into a copy of the installed package (the tests import the installed package; the
copy goes first on PYTHONPATH, so the venv's own install is never touched) and run against the given
tests with `pytest -x`. A mutant that no test kills is printed with its line: either a test is
missing or the mutant does what the original does (say which in the docs).

A first run (the tests must pass without a mutant) records which test runs which line of the module,
in the pytest process, its threads and the Python processes its tests start (line_recorder.py,
mutants_plugin.py). Each mutant then runs only the tests that ran its line, the fastest first; a
mutant on a line no test runs is NOT RUN (a survivor, without a run); one that runs at import time
(module level, a default value) runs every test given. `--select all` runs every test for every
mutant. Each mutant's tests get 60 s plus three times what they took in the first run; a mutant that
runs past that is killed (it hangs the tests). Hypothesis runs derandomized, without its database,
so that every run meets the same examples.

    .venv/bin/python tools/mutation/mutants.py trt_trace/analysis/mann_whitney.py tests/test_mann_whitney.py
    .venv/bin/python tools/mutation/mutants.py trt_trace/analysis/diff.py tests/test_diff.py --lines 120-140
    .venv/bin/python tools/mutation/mutants.py trt_trace/captures/join.py tests/test_captures_join.py --max 40

Slow by design (one pytest run per mutant); run it on a module and the tests that should guard it.
Python modules only (the native code is mutated by hand, as the docs say).
"""

from __future__ import annotations

import argparse
import ast
import copy
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

_SWAPS: dict[type, type] = {
    ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq, ast.NotEq: ast.Eq,
    ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.FloorDiv, ast.And: ast.Or, ast.Or: ast.And,
    ast.Is: ast.IsNot, ast.IsNot: ast.Is, ast.In: ast.NotIn, ast.NotIn: ast.In,
}


def _targets(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """(index of the node in ast.walk order, what the mutant does) for every mutable node."""
    for k, node in enumerate(ast.walk(tree)):
        if isinstance(node, ast.Compare) and type(node.ops[0]) in _SWAPS:
            yield k, f"{type(node.ops[0]).__name__} -> {_SWAPS[type(node.ops[0])].__name__}"
        elif isinstance(node, ast.BinOp | ast.BoolOp) and type(node.op) in _SWAPS:
            yield k, f"{type(node.op).__name__} -> {_SWAPS[type(node.op)].__name__}"
        elif isinstance(node, ast.Constant) and type(node.value) is int:
            yield k, f"{node.value} -> {node.value + 1}"
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            yield k, "not dropped"


class _Mutate(ast.NodeTransformer):
    def __init__(self, index: int) -> None:
        self.index = index
        self.order = {}

    def apply(self, tree: ast.AST) -> ast.AST:
        self.order = {id(n): k for k, n in enumerate(ast.walk(tree))}
        return self.visit(tree)

    def generic_visit(self, node: ast.AST) -> ast.AST:
        node = super().generic_visit(node)
        if self.order.get(id(node)) != self.index:
            return node
        if isinstance(node, ast.Compare):
            node.ops[0] = _SWAPS[type(node.ops[0])]()
        elif isinstance(node, ast.BinOp | ast.BoolOp):
            node.op = _SWAPS[type(node.op)]()
        elif isinstance(node, ast.Constant):
            node.value += 1
        elif isinstance(node, ast.UnaryOp):
            return node.operand
        return node


def installed_path(module_file: str) -> Path:
    """Where the tests' import of this source file lives (site-packages)."""
    rel = Path(module_file).with_suffix("")
    name = ".".join(rel.parts)
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None:
        raise SystemExit(f"mutants: {name} is not importable here (run with the venv's python)")
    return Path(spec.origin)


class _Places:
    """Where each node of the module lies: the lines whose running means the node ran (its own and its
    statement's header), and whether it runs only when a function is called (a node at import time,
    in a default value or a decorator, runs whatever the test; every test is its test)."""

    def __init__(self, tree: ast.AST) -> None:
        self.parent: dict[int, ast.AST] = {}
        for node in ast.walk(tree):
            for child in ast.iter_child_nodes(node):
                self.parent[id(child)] = node

    def lines(self, node: ast.AST) -> set[int]:
        out = set(range(node.lineno, (node.end_lineno or node.lineno) + 1)) if hasattr(node, "lineno") else set()
        stmt = node
        while not isinstance(stmt, ast.stmt) and id(stmt) in self.parent:
            stmt = self.parent[id(stmt)]
        if isinstance(stmt, ast.stmt):
            body = getattr(stmt, "body", None)
            last = body[0].lineno - 1 if isinstance(body, list) and body else stmt.end_lineno or stmt.lineno
            out |= set(range(stmt.lineno, max(last, stmt.lineno) + 1))
        return out

    def in_function_body(self, node: ast.AST) -> bool:
        child = node
        while id(child) in self.parent:
            up = self.parent[id(child)]
            if isinstance(up, ast.FunctionDef | ast.AsyncFunctionDef) and any(child is s for s in up.body):
                return True
            if isinstance(up, ast.Lambda) and child is up.body:
                return True
            child = up
        return False


def _line_set(spec: str) -> set[int]:
    out: set[int] = set()
    for part in filter(None, spec.split(",")):
        lo, _, hi = part.partition("-")
        out |= set(range(int(lo), int(hi or lo) + 1))
    return out


def _read_record(folder: Path) -> tuple[dict[int, set[str]], dict[str, float]]:
    """line -> the tests that ran it ("" for outside any test); test -> seconds."""
    ran: dict[int, set[str]] = {}
    for f in folder.glob("*.lines"):
        for row in f.read_text().splitlines():
            line, _, test = row.partition("\t")
            if line.isdigit():
                ran.setdefault(int(line), set()).add(test)
    seconds: dict[str, float] = {}
    durations = folder / "durations.tsv"
    for row in durations.read_text().splitlines() if durations.exists() else []:
        s, _, test = row.partition("\t")
        seconds[test] = seconds.get(test, 0.0) + float(s)
    return ran, seconds


def _failed_test(log: Path) -> str | None:
    """The first test pytest's summary names as failed (or in error), as pytest wrote its id."""
    try:
        text = log.read_text(errors="replace")
    except OSError:
        return None
    for row in text.splitlines():
        if row.startswith(("FAILED ", "ERROR ")):
            return row.split(" ", 1)[1].split(" - ", 1)[0]
    return None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("module", help="the source file, e.g. trt_trace/analysis/diff.py (relative to the repo root)")
    ap.add_argument("tests", nargs="+", help="the test files (or test ids) that should kill the mutants")
    ap.add_argument("--max", type=int, default=0, help="at most this many mutants (spread over the file)")
    ap.add_argument("--lines", default="", help="only the mutants on these lines, e.g. 120,130-140")
    ap.add_argument("--select", choices=("lines", "all"), default="lines",
                    help="lines: a first run records which tests run which line, and each mutant runs only the "
                         "tests that ran its line (fastest first; one on a line no test runs is NOT RUN); all: "
                         "every mutant runs every test")
    ap.add_argument("--timeout", type=int, default=0,
                    help="seconds per mutant (default: 60 + 3 times what its tests took in the first run)")
    ap.add_argument("--new", nargs="+", default=[], metavar="TEST",
                    help="test files run after the others for each mutant: a mutant only they kill is marked "
                         "'killed NEW' (a survivor of the other tests, killed by the new ones)")
    ap.add_argument("--list", action="store_true", help="list the mutants and stop")
    args = ap.parse_args()

    source = Path(args.module).read_text()
    tree = ast.parse(source)
    nodes = list(ast.walk(tree))
    targets = list(_targets(tree))
    if args.lines:
        wanted = _line_set(args.lines)
        targets = [(k, what) for k, what in targets if getattr(nodes[k], "lineno", 0) in wanted]
    if args.max and len(targets) > args.max:
        step = len(targets) / args.max
        targets = [targets[int(i * step)] for i in range(args.max)]
    lines_of = source.splitlines()

    def where(k: int) -> tuple[int, str]:
        line = getattr(nodes[k], "lineno", 0)
        return line, lines_of[line - 1].strip() if line else ""

    if args.list:
        for k, what in targets:
            line, text = where(k)
            print(f"line {line:4}  {what:16}  {text}")
        print(f"{len(targets)} mutants")
        return 0
    installed = installed_path(args.module)
    if installed.read_text() != source:
        print(f"mutants: {installed} differs from {args.module}; reinstall first", file=sys.stderr)
        return 2
    package = installed.parents[len(Path(args.module).parts) - 2]  # .../site-packages/trt_trace
    work = Path(tempfile.mkdtemp(prefix="trt_trace_mutants-"))
    site = work / "site"
    shutil.copytree(package, site / package.name, ignore=shutil.ignore_patterns("__pycache__"))
    here = Path(__file__).resolve().parent
    for helper in ("line_recorder.py", "mutants_plugin.py"):
        shutil.copy(here / helper, site / helper)
    (site / "sitecustomize.py").write_text("import line_recorder\n\nline_recorder.install()\n")
    target = site / installed.relative_to(package.parent)
    tests = [os.path.abspath(t) if os.path.exists(t.partition("::")[0]) else t for t in args.tests + args.new]
    new_files = {os.path.abspath(t) for t in args.new}

    def order(test: str) -> tuple:  # the other tests first, then the new ones; the fastest first
        return test.partition("::")[0] in new_files, seconds.get(test, 0.0), test

    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "mutants_plugin"]
    # No bytecode cache in the copy: a mutant of the same size written in the same second as the last
    # one would pass a cached .pyc's check and run the old code.
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1",
               PYTHONPATH=os.pathsep.join([str(site), *filter(None, [os.environ.get("PYTHONPATH")])]))
    for name in ("TRT_MUTANTS_TEST", "TRT_MUTANTS_TARGET", "TRT_MUTANTS_LINES"):
        env.pop(name, None)
    places = _Places(tree)
    survivors = []
    not_run = 0
    killed_new = 0
    server: subprocess.Popen | None = None
    t0 = time.monotonic()
    try:
        probe = subprocess.run([sys.executable, "-c", "import trt_trace; print(trt_trace.__file__)"],
                               env=env, cwd=work, capture_output=True, text=True)
        if not probe.stdout.startswith(str(site)):
            print(f"mutants: the copy at {site} is not what the tests would import", file=sys.stderr)
            return 2
        # The first run: the tests must pass without a mutant; with --select lines it records who runs what.
        record = work / "record"
        record.mkdir()
        first_env = dict(env, TRT_MUTANTS_TARGET=str(target), TRT_MUTANTS_LINES=str(record)) \
            if args.select == "lines" else env
        first = subprocess.run([*cmd, *tests], cwd=work, capture_output=True, env=first_env,
                               timeout=args.timeout or None)
        first_s = time.monotonic() - t0
        if first.returncode:
            print("mutants: the tests fail without a mutant:\n" + first.stdout.decode()[-3000:], file=sys.stderr)
            return 2
        ran, seconds = _read_record(record)
        server = subprocess.Popen([sys.executable, str(here / "fork_server.py")], cwd=work, env=env, text=True,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert server.stdin is not None and server.stdout is not None
        print(f"first run: {first_s:.0f} s" + (f", {len(seconds)} tests, {len(ran)} lines of the module run"
                                                if args.select == "lines" else ""), flush=True)
        for k, what in targets:
            line, text = where(k)
            node = nodes[k]
            everyone = sorted(seconds, key=order) if seconds else tests
            if args.select == "all" or not places.in_function_body(node):
                chosen, budget = everyone, first_s
            else:
                who = set().union(*(ran.get(n, set()) for n in places.lines(node)))
                if "" in who:  # run outside any test (at collection): it may matter to every test
                    chosen, budget = everyone, first_s
                else:
                    chosen = sorted(who, key=order)
                    budget = sum(seconds.get(t, 0.0) for t in chosen)
            if not chosen:
                status, detail = "NOT RUN", "no test runs this line"
                not_run += 1
            else:
                mutant = _Mutate(k).apply(copy.deepcopy(tree))
                ast.fix_missing_locations(mutant)
                target.write_text(ast.unparse(mutant))
                m0 = time.monotonic()
                server.stdin.write(json.dumps({"args": [*cmd[3:], "-x", *chosen], "log": str(work / "last_run.log"),
                                               "timeout": args.timeout or 60 + 3 * budget}) + "\n")
                server.stdin.flush()
                answer = server.stdout.readline()
                if not answer:
                    print("mutants: the fork server died", file=sys.stderr)
                    return 2
                result = json.loads(answer)
                if result["rc"] == 5:  # pytest found none of the tests: a fault of this tool, not a kill
                    print(f"mutants: pytest collected none of {chosen}", file=sys.stderr)
                    return 2
                # A mutant that hangs the tests past the timeout is caught by them.
                killed = result["rc"] != 0
                status = "killed" if killed else "SURVIVED"
                detail = f"{len(chosen)} test{'s' if len(chosen) != 1 else ''}" if chosen is not everyone else \
                    "all tests"
                if killed:
                    by = _failed_test(work / "last_run.log") if not result["timed_out"] else None
                    if by and Path(by.partition("::")[0]).name in {Path(f).name for f in new_files}:
                        status = "killed NEW"
                        killed_new += 1
                    if by:
                        detail += f", by {by}"
                detail += f", {time.monotonic() - m0:.0f} s" + (", timed out" if result["timed_out"] else "")
            print(f"{status:8}  line {line:4}  {what:16}  {text}  [{detail}]", flush=True)
            if not status.startswith("killed"):
                survivors.append((line, what, text))
    finally:
        if server is not None:
            server.kill()
            server.wait()
        shutil.rmtree(work, ignore_errors=True)
    n = len(targets)
    print(f"{n - len(survivors)} of {n} mutants killed in {time.monotonic() - t0:.0f} s; {len(survivors)} survived"
          + (f" ({not_run} on lines no test runs)" if not_run else "")
          + (f"; {killed_new} of the killed only by the new tests ({', '.join(args.new)})" if args.new else ""))
    return 1 if survivors else 0


if __name__ == "__main__":
    raise SystemExit(main())
