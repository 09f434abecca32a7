"""The layout's promises (docs/architecture.md): no include circle and no arrow back up in csrc/, no import
circle in trt_trace/ and no module importing the package's __init__ (tools/check_layout.py), and a CLI whose
every verb and option says what it does."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import check_layout  # noqa: E402

from trt_trace.cli import build_parser  # noqa: E402


def test_csrc_has_no_include_circle_and_no_arrow_up():
    assert check_layout.csrc_problems() == []


def test_the_package_has_no_import_circle_and_no_import_of_its_init():
    assert check_layout.python_problems() == []


def test_the_checks_find_what_they_are_for(tmp_path):
    # The checker itself, on a made-up tree: a two-way include, an arrow up, a folder in no layer.
    for name, text in {
        "hook/a.h": '#include "hook/b.h"\n', "hook/b.cpp": '#include "hook/a.h"\n', "hook/b.h": "",
        "common/c.h": '#include "hook/a.h"\n', "elsewhere/d.h": "",
    }.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    problems = check_layout.csrc_problems(tmp_path)
    assert "csrc include circle: hook/a -> hook/b -> hook/a" in problems
    assert any(p.startswith("csrc/common/c includes hook/a: an arrow up") for p in problems)
    assert "csrc/elsewhere/ is in no layer of tools/check_layout.py CSRC_LAYERS" in problems
    pkg = tmp_path / "trt_trace"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from .a import x\n")
    (pkg / "a.py").write_text("from . import b\nx = 1\n")
    (pkg / "b.py").write_text("from . import __version__\nfrom .a import x\n")
    problems = check_layout.python_problems(pkg)
    assert "python import circle: trt_trace.a -> trt_trace.b -> trt_trace.a" in problems
    assert "trt_trace.b imports the package's __init__ (import the module it needs instead)" in problems


def _actions(parser: argparse.ArgumentParser, prog: str):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helped = {a.dest for a in action._choices_actions if a.help}
            for verb, sub in action.choices.items():
                yield f"{prog} {verb}", verb in helped
                yield from _actions(sub, f"{prog} {verb}")
        elif not isinstance(action, argparse._HelpAction):
            yield f"{prog} {'/'.join(action.option_strings) or action.dest}", bool(action.help)


def test_every_verb_and_option_has_help():
    found = list(_actions(build_parser(), "trt-trace"))
    assert len(found) > 40  # every verb and its options were walked
    assert [name for name, helped in found if not helped] == []


@pytest.mark.parametrize("verb", ["run", "summary", "diff", "merge", "slice", "export", "view", "demo"])
def test_every_verb_help_prints_what_it_does(verb, capsys):
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    line = next(a.help for a in sub._choices_actions if a.dest == verb)
    with pytest.raises(SystemExit) as done:
        parser.parse_args([verb, "--help"])
    out = capsys.readouterr().out
    assert done.value.code == 0 and out.startswith("usage: trt-trace " + verb)
    assert " ".join(line.split()) in " ".join(out.split())
