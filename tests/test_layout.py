"""The layout's promises (docs/architecture.md#layout, tools/check_layout.py): csrc/'s folders and trt_trace/'s
subpackages each keep their layer order (no include or import up or sideways, no folder in no layer), no
include or import circle, no module importing the package's __init__, and every import inside a function
says why it is there. Each check is shown to find what it is for on a made-up tree, then to pass on this one."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import check_layout  # noqa: E402


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_csrc_has_no_include_circle_and_no_arrow_up():
    assert check_layout.csrc_problems() == []


def test_the_package_keeps_its_layers_and_says_why_of_every_import_inside_a_function():
    assert check_layout.python_problems() == []


def test_every_python_unit_is_in_a_layer_and_every_layer_exists():
    # PY_LAYERS names this tree's subpackages and top modules, no more (a stale name hides nothing, but misleads)
    package = ROOT / "trt_trace"
    units = {p.name for p in package.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    units |= {p.stem for p in package.glob("*.py")}
    assert sorted(units) == sorted(u for layer in check_layout.PY_LAYERS for u in layer)


def test_the_csrc_check_finds_what_it_is_for(tmp_path):
    # A two-way include, an arrow up, a folder in no layer.
    root = _tree(tmp_path, {
        "hook/a.h": '#include "hook/b.h"\n', "hook/b.cpp": '#include "hook/a.h"\n', "hook/b.h": "",
        "common/c.h": '#include "hook/a.h"\n', "elsewhere/d.h": "",
    })
    problems = check_layout.csrc_problems(root)
    assert "csrc include circle: hook/a -> hook/b -> hook/a" in problems
    assert any(p.startswith("csrc/common/c includes hook/a: an arrow up") for p in problems)
    assert "csrc/elsewhere/ is in no layer of tools/check_layout.py CSRC_LAYERS" in problems


LAYERS = [("low",), ("mid", "side"), ("top",), ("__init__",)]


def test_the_python_check_passes_a_tree_that_keeps_the_rules(tmp_path):
    pkg = _tree(tmp_path / "trt_trace", {
        "__init__.py": "from .top import x\n",
        "low/__init__.py": "", "low/a.py": "A = 1\n",
        "mid/__init__.py": "", "mid/b.py": "from ..low.a import A\nfrom . import c\n", "mid/c.py": "",
        "side/__init__.py": "", "side/d.py": "from ..low import a\n",
        "top.py": ("from .mid import b\nfrom .side import d\nx = 1\n\n\ndef f():\n"
                   "    import torch  # heavy: only f needs it\n\n\ndef g():\n"
                   "    # heavy, and its reason on the line above\n    import matplotlib\n"),
    })
    assert check_layout.python_problems(pkg, LAYERS) == []


def test_the_python_check_finds_an_import_up_or_sideways(tmp_path):
    pkg = _tree(tmp_path / "trt_trace", {
        "__init__.py": "", "low/__init__.py": "", "mid/__init__.py": "", "side/__init__.py": "",
        "low/a.py": "from ..mid import b\n",  # up, at the module's top
        "mid/b.py": "def f():\n    from ..side.d import D  # a comment does not make an arrow up right\n",
        "side/d.py": "D = 1\n", "top.py": "",
    })
    problems = check_layout.python_problems(pkg, LAYERS)
    assert ("trt_trace.low.a imports trt_trace.mid.b: an arrow up or sideways (low is below or beside mid "
            "in PY_LAYERS)") in problems
    assert ("trt_trace.mid.b imports trt_trace.side.d: an arrow up or sideways (mid is below or beside side "
            "in PY_LAYERS)") in problems
    assert len(problems) == 2


def test_the_python_check_finds_a_folder_or_module_in_no_layer(tmp_path):
    pkg = _tree(tmp_path / "trt_trace", {
        "__init__.py": "", "low/__init__.py": "", "elsewhere/__init__.py": "", "elsewhere/e.py": "",
        "loose.py": "",
    })
    problems = check_layout.python_problems(pkg, LAYERS)
    assert sorted(problems) == ["trt_trace/elsewhere/ is in no layer of tools/check_layout.py PY_LAYERS",
                                "trt_trace/loose.py is in no layer of tools/check_layout.py PY_LAYERS"]


def test_the_python_check_finds_an_import_inside_a_function_without_a_reason(tmp_path):
    pkg = _tree(tmp_path / "trt_trace", {
        "__init__.py": "", "low/__init__.py": "", "low/a.py": "A = 1\n",
        "mid/__init__.py": "",
        "mid/b.py": ('"""# not a comment: a string"""\n\n\ndef f():\n    s = "# nor this"\n    import json\n'
                     "    from ..low.a import A\n    return s, json, A\n\n\n"
                     "class K:\n    def m(self):\n        import csv\n        return csv\n"),
    })
    problems = check_layout.python_problems(pkg, LAYERS)
    found = [p.split(" inside a function")[0] for p in problems]
    assert found == ["trt_trace/mid/b.py:6: `import json`", "trt_trace/mid/b.py:7: `from ..low.a import A`",
                     "trt_trace/mid/b.py:13: `import csv`"]


def test_the_python_check_finds_circles_and_imports_of_the_package_init(tmp_path):
    pkg = _tree(tmp_path / "trt_trace", {
        "__init__.py": "from .low.a import x\n", "low/__init__.py": "",
        "low/a.py": "from . import b\nx = 1\n", "low/b.py": "from .. import __version__\nfrom .a import x\n",
    })
    problems = check_layout.python_problems(pkg, LAYERS)
    assert "python import circle: trt_trace.low.a -> trt_trace.low.b -> trt_trace.low.a" in problems
    assert "trt_trace.low.b imports the package's __init__ (import the module it needs instead)" in problems


def test_type_checking_imports_are_left_out(tmp_path):
    # They never run: a type named from a layer above is no arrow up.
    pkg = _tree(tmp_path / "trt_trace", {
        "__init__.py": "", "low/__init__.py": "", "top.py": "X = 1\n",
        "low/a.py": "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from ..top import X\n",
    })
    assert check_layout.python_problems(pkg, LAYERS) == []


def test_every_subpackage_is_installed():
    # pyproject's package list is written by hand: a subpackage missing from it would be missing from the install
    import tomllib

    listed = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    found = [".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "trt_trace").rglob("__init__.py")]
    assert sorted(listed) == sorted(found)


def test_each_format_is_registered_by_the_modules_that_implement_it():
    from trt_trace.io import formats

    found = {f.name: (f.reader and f.reader.__module__, f.writer and f.writer.__module__)
             for f in formats.all_formats()}
    assert found == {
        "json": ("trt_trace.io.readers.chrome_json", "trt_trace.io.writers.chrome_json"),
        "perfetto": ("trt_trace.io.readers.perfetto", "trt_trace.io.writers.perfetto_trace"),
        "torch.profiler": ("trt_trace.captures.trace_readers", None),  # read, never written
        "nsys": ("trt_trace.captures.trace_readers", None),
    }
    assert formats.written() == ("json", "perfetto")
    # A capture is told apart before the generic Chrome JSON it is a case of.
    assert [f.name for f in formats.all_formats()] == ["torch.profiler", "nsys", "json", "perfetto"]
