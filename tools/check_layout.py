"""The layout's rules, checked (tests/test_layout.py runs this; `python tools/check_layout.py` prints what breaks):

- csrc/: a unit is a file's stem in its folder (`hook/call_scope` = call_scope.h + call_scope.cpp). No unit
  reaches itself through includes (no include that runs both ways, no longer circle), and the folders keep
  the layer order of CSRC_LAYERS: a folder includes only from its own layer or the ones below it (no arrow
  back up). A folder not in CSRC_LAYERS is an error: a new folder says where it stands.
- trt_trace/: the same for Python, by PY_LAYERS: a unit is a subpackage (`io` = trt_trace/io/ and all below
  it) or a module at the package's top (`cli`; the package's own `__init__`); a unit imports only from
  itself or from the layers below it, never up or sideways, and a unit not in PY_LAYERS is an error. No
  module imports itself through other modules, and no module inside the package imports the package's
  `__init__` (`from . import x` of a submodule is an import of that module). Module-level imports and
  imports inside functions count alike (`if TYPE_CHECKING:` imports are left out, they never run).
- An import inside a function carries a comment saying why (on its line or the line above): it is there to
  keep a heavy optional package out of start-up, or for an order that start-up needs; anything else is
  imported at the module's top.
"""

from __future__ import annotations

import ast
import io
import re
import sys
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Lowest first. Folders on one line share a layer and may not include each other.
CSRC_LAYERS: list[tuple[str, ...]] = [
    ("common",),  # the record, the clock, a hot-path switch, the leaked process-wide objects
    ("buffer", "stats", "format"),  # rings; per-engine counters, histograms, the table; a JSON event's text
    ("engines",),  # engine object -> id and name (the registry)
    ("integrations",),  # NVTX ranges, torch.profiler scopes
    ("layers",),  # per-layer timing: each engine's window, the runtime's profiling methods, layer names, the folder
    ("hook",),  # the calling thread's hot path: the hook, the call scope, the op observer, GPU events
    ("drainer",),  # the drainer thread's side: one drain step, the GPU resolver and its clock fit
    ("session",),  # the native writer thread: drains, places tracks, formats and writes the session's file
    ("metrics",),  # the metrics endpoint's own thread: its HTTP server and the exposition text
    ("ops", "readers", "standin"),  # torch.ops.trt_trace.*; the torch-free readers; the stand-in runtime
]
# Lowest first, as CSRC_LAYERS. Units on one line share a layer and may not import each other.
PY_LAYERS: list[tuple[str, ...]] = [
    ("schema",),  # the phase list, the record, the names both formats share, errors, version: imports no layer
    ("native",),  # the compiled library: its load (once, start-up order), its ops with types
    ("io",),  # the format registry, the track book, writers, readers, Perfetto's protos, verbs' output files
    ("captures",),  # other profilers' captures, read (their formats registered with io's registry)
    ("runtime", "analysis"),  # recording (settings, session, native writer control, flight, exits); reading back
    ("standin",),  # the stand-in Torch-TensorRT runtime for tests and the demo (its cache folder: runtime.config)
    ("demo", "viewer"),  # `trt-trace demo`; `trt-trace view`'s server of the Perfetto UI
    ("cli",),  # trt-trace: one _cmd_<verb> per verb
    ("__main__", "__init__"),  # `python -m trt_trace`; the package's API (trt_trace.start, tracing, summary, ...)
]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def csrc_units(root: Path = ROOT / "csrc") -> dict[str, set[str]]:
    """unit -> the units its files include (headers found under csrc/ only)."""
    deps: dict[str, set[str]] = {}
    for path in sorted(root.rglob("*")):
        if path.suffix not in (".h", ".cpp", ".cu"):
            continue
        unit = str(path.relative_to(root).with_suffix(""))
        deps.setdefault(unit, set())
        for target in INCLUDE.findall(path.read_text()):
            if (root / target).exists():
                other = str(Path(target).with_suffix(""))
                if other != unit:
                    deps[unit].add(other)
    return deps


def cycles(deps: dict[str, set[str]]) -> list[list[str]]:
    """Every circle of the graph once (as found by a depth-first walk), shortest form."""
    found: list[list[str]] = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def walk(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(deps.get(node, ())):
            if state.get(nxt) == 1:
                found.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                walk(nxt)
        stack.pop()
        state[node] = 2

    sys.setrecursionlimit(10000)
    for node in sorted(deps):
        if node not in state:
            walk(node)
    return found


def csrc_problems(root: Path = ROOT / "csrc") -> list[str]:
    deps = csrc_units(root)
    layer = {folder: i for i, folders in enumerate(CSRC_LAYERS) for folder in folders}
    problems = [f"csrc include circle: {' -> '.join(c)}" for c in cycles(deps)]
    for unit, targets in sorted(deps.items()):
        folder = unit.split("/")[0]
        if folder not in layer:
            problems.append(f"csrc/{folder}/ is in no layer of tools/check_layout.py CSRC_LAYERS")
            continue
        for target in sorted(targets):
            other = target.split("/")[0]
            if other in layer and other != folder and layer[other] >= layer[folder]:
                problems.append(f"csrc/{unit} includes {target}: an arrow up or sideways "
                                f"({folder} is below or beside {other} in CSRC_LAYERS)")
    return problems


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _unit(module: str) -> str:
    """trt_trace.io.readers.calls -> io; trt_trace.cli -> cli; trt_trace -> __init__."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _import_nodes(tree: ast.AST) -> list[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Every import that runs (`if TYPE_CHECKING:` blocks left out), and whether it is inside a function."""
    found: list[tuple[ast.Import | ast.ImportFrom, bool]] = []

    def walk(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                for other in child.orelse:
                    walk(other, in_function)
                continue
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                found.append((child, in_function))
            walk(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

    walk(tree, False)
    return found


def _targets(node: ast.Import | ast.ImportFrom, module: str, is_package: bool, known: set[str]) -> set[str]:
    """The package's modules one import statement of `module` imports."""
    out: set[str] = set()
    if isinstance(node, ast.Import):
        out.update(a.name for a in node.names if a.name.split(".")[0] == "trt_trace")
    else:
        base = module.split(".") if is_package else module.split(".")[:-1]
        if node.level:
            target = ".".join(base[: len(base) - node.level + 1] + ([node.module] if node.module else []))
        else:
            target = node.module or ""
        if target.split(".")[0] == "trt_trace":
            for alias in node.names:  # `from . import ops` imports the submodule trt_trace.ops
                sub = f"{target}.{alias.name}"
                out.add(sub if sub in known else target)
    return {m for m in out if m in known and m != module}


def _commented_lines(text: str) -> set[int]:
    lines: set[int] = set()
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.COMMENT:
            lines.add(tok.start[0])
    return lines


def python_problems(root: Path = ROOT / "trt_trace", layers: list[tuple[str, ...]] = PY_LAYERS) -> list[str]:
    files = {_module_name(p, root): p for p in sorted(root.rglob("*.py"))}
    known = set(files)
    layer = {unit: i for i, units in enumerate(layers) for unit in units}
    deps: dict[str, set[str]] = {}
    problems: list[str] = []
    for module, path in files.items():
        text = path.read_text()
        commented = _commented_lines(text)
        deps[module] = set()
        for node, in_function in _import_nodes(ast.parse(text)):
            deps[module] |= _targets(node, module, path.name == "__init__.py", known)
            if in_function and not commented & set(range(node.lineno - 1, node.end_lineno + 1)):
                where = f"{path.relative_to(root.parent)}:{node.lineno}"
                problems.append(f"{where}: `{ast.unparse(node)}` inside a function without a comment saying why (a "
                                "heavy optional package kept out of start-up, or an order start-up needs); else "
                                "import it at the module's top")
    problems += [f"python import circle: {' -> '.join(c)}" for c in cycles(deps)]
    for module, targets in sorted(deps.items()):
        if module != "trt_trace" and "trt_trace" in targets:
            problems.append(f"{module} imports the package's __init__ (import the module it needs instead)")
    for unit in sorted({_unit(m) for m in files}):
        if unit not in layer:
            where = f"trt_trace/{unit}/" if (root / unit).is_dir() else f"trt_trace/{unit}.py"
            problems.append(f"{where} is in no layer of tools/check_layout.py PY_LAYERS")
    for module, targets in sorted(deps.items()):
        unit = _unit(module)
        for target in sorted(targets):
            other = _unit(target)
            if unit in layer and other in layer and other != unit and layer[other] >= layer[unit]:
                problems.append(f"{module} imports {target}: an arrow up or sideways "
                                f"({unit} is below or beside {other} in PY_LAYERS)")
    return problems


def main() -> int:
    problems = csrc_problems() + python_problems()
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
