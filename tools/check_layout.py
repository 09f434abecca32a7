"""The layout's rules, checked (tests/test_layout.py runs this; `python tools/check_layout.py` prints what breaks):

- csrc/: a unit is a file's stem in its folder (`hook/call_scope` = call_scope.h + call_scope.cpp). No unit
  reaches itself through includes (no include that runs both ways, no longer circle), and the folders keep
  the layer order of CSRC_LAYERS: a folder includes only from its own layer or the ones below it (no arrow
  back up). A folder not in CSRC_LAYERS is an error: a new folder says where it stands.
- trt_trace/: no module imports itself through other modules (module-level imports and imports inside
  functions alike; `if TYPE_CHECKING:` imports are left out, they never run), and no module inside the
  package imports the package's `__init__` (`from . import x` of a submodule is an import of that module).
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Lowest first. Folders on one line share a layer and may not include each other.
CSRC_LAYERS: list[tuple[str, ...]] = [
    ("common",),  # the record, the clock
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


def _imports(tree: ast.AST, module: str, is_package: bool, known: set[str]) -> set[str]:
    """The package's modules `module` imports (leaving out `if TYPE_CHECKING:` blocks)."""
    out: set[str] = set()
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(n) for child in node.body for n in ast.walk(child))
    base = module.split(".") if is_package else module.split(".")[:-1]
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.split(".")[0] == "trt_trace")
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                target = ".".join(base[: len(base) - node.level + 1] + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if not target.startswith("trt_trace"):
                continue
            for alias in node.names:  # `from . import ops` imports the submodule trt_trace.ops
                sub = f"{target}.{alias.name}"
                out.add(sub if sub in known else target)
    return {m for m in out if m in known and m != module}


def python_problems(root: Path = ROOT / "trt_trace") -> list[str]:
    files = {_module_name(p, root): p for p in sorted(root.rglob("*.py"))}
    known = set(files)
    deps = {m: _imports(ast.parse(p.read_text()), m, p.name == "__init__.py", known) for m, p in files.items()}
    problems = [f"python import circle: {' -> '.join(c)}" for c in cycles(deps)]
    for module, targets in sorted(deps.items()):
        if module != "trt_trace" and "trt_trace" in targets:
            problems.append(f"{module} imports the package's __init__ (import the module it needs instead)")
    return problems


def main() -> int:
    problems = csrc_problems() + python_problems()
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
