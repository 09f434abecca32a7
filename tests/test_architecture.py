"""A CLI whose every verb and option says what it does (the layout's promises: tests/test_layout.py)."""

from __future__ import annotations

import argparse

import pytest

from trt_trace.cli import build_parser


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
