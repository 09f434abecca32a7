"""Mutation testing, small and plain (docs/mutation-testing.md): does any test fail when one operator
or constant of a module changes? Each mutant is one change of the module's syntax tree (a comparison
turned around or made strict, + for -, `and` for `or`, an integer constant one higher, a `not`
dropped), written into a copy of the installed package (the tests import the installed package; the
copy goes first on PYTHONPATH, so the venv's own install is never touched) and run against the given
tests with `pytest -x`. A mutant that no test kills is printed with its line: either a test is
missing or the mutant does what the original does (say which in the docs).

    .venv/bin/python tools/mutation/mutants.py trt_trace/mann_whitney.py tests/test_mann_whitney.py
    .venv/bin/python tools/mutation/mutants.py trt_trace/captures/join.py tests/test_captures_join.py --max 40

Slow by design (one pytest run per mutant); run it on a module and the tests that should guard it.
Python modules only (the native code is mutated by hand, as the docs say).
"""

from __future__ import annotations

import argparse
import ast
import copy
import importlib.util
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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("module", help="the source file, e.g. trt_trace/mann_whitney.py (relative to the repo root)")
    ap.add_argument("tests", nargs="+", help="the test files that should kill the mutants")
    ap.add_argument("--max", type=int, default=0, help="at most this many mutants (spread over the file)")
    ap.add_argument("--timeout", type=int, default=300, help="seconds per pytest run")
    args = ap.parse_args()

    source = Path(args.module).read_text()
    tree = ast.parse(source)
    targets = list(_targets(tree))
    if args.max and len(targets) > args.max:
        step = len(targets) / args.max
        targets = [targets[int(i * step)] for i in range(args.max)]
    installed = installed_path(args.module)
    if installed.read_text() != source:
        print(f"mutants: {installed} differs from {args.module}; reinstall first", file=sys.stderr)
        return 2
    package = installed.parents[len(Path(args.module).parts) - 2]  # .../site-packages/trt_trace
    site = Path(tempfile.mkdtemp(prefix="trt_trace_mutants-"))
    shutil.copytree(package, site / package.name, ignore=shutil.ignore_patterns("__pycache__"))
    target = site / installed.relative_to(package.parent)
    tests = [os.path.abspath(t) if os.path.exists(t) else t for t in args.tests]
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests]
    # No bytecode cache in the copy: a mutant of the same size written in the same second as the last
    # one would pass a cached .pyc's check and run the old code.
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1",
               PYTHONPATH=os.pathsep.join([str(site), *filter(None, [os.environ.get("PYTHONPATH")])]))
    survivors = []
    t0 = time.monotonic()
    try:
        probe = subprocess.run([sys.executable, "-c", "import trt_trace; print(trt_trace.__file__)"],
                               env=env, cwd="/tmp", capture_output=True, text=True)
        if not probe.stdout.startswith(str(site)):
            print(f"mutants: the copy at {site} is not what the tests would import", file=sys.stderr)
            return 2
        baseline = subprocess.run(cmd, cwd="/tmp", capture_output=True, timeout=args.timeout, env=env)
        if baseline.returncode:
            print("mutants: the tests fail without a mutant:\n" + baseline.stdout.decode()[-2000:], file=sys.stderr)
            return 2
        for k, what in targets:
            mutant = _Mutate(k).apply(copy.deepcopy(tree))
            ast.fix_missing_locations(mutant)
            node = next(n for i, n in enumerate(ast.walk(tree)) if i == k)
            line = getattr(node, "lineno", 0)
            target.write_text(ast.unparse(mutant))
            try:
                run = subprocess.run(cmd, cwd="/tmp", capture_output=True, timeout=args.timeout, env=env)
                killed = run.returncode != 0
            except subprocess.TimeoutExpired:
                killed = True  # a mutant that hangs the tests is caught by them
            status = "killed" if killed else "SURVIVED"
            text = source.splitlines()[line - 1].strip() if line else ""
            print(f"{status:8}  line {line:4}  {what:16}  {text}", flush=True)
            if not killed:
                survivors.append((line, what, text))
    finally:
        shutil.rmtree(site, ignore_errors=True)
    n = len(targets)
    print(f"{n - len(survivors)} of {n} mutants killed in {time.monotonic() - t0:.0f} s; {len(survivors)} survived")
    return 1 if survivors else 0


if __name__ == "__main__":
    raise SystemExit(main())
