"""No-code-change start-up through TRT_TRACE_OUT, and the trt-trace command."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_python
from trace_checks import check_trace, load_strict

SERVE = """
import sys, torch
from trt_trace.standin import model
runner = model.load_package(sys.argv[1] if len(sys.argv) > 1 else {path!r})
x = torch.randn(8, 64)
for _ in range({calls}):
    runner(x)
print("served")
"""

EAGER = """
import torch
from trt_trace import standin
e = standin.make_engine("env_engine")
for _ in range(3):
    torch.ops.tensorrt.execute_engine([torch.ones(4)], e)
"""


@pytest.mark.usefixtures("runtime_version")
def test_env_var_traces_an_aoti_package_with_no_code_change(demo_package, tmp_path):
    path, specs = demo_package
    out = tmp_path / "trace_{pid}.json"
    proc = run_python(SERVE.format(path=path, calls=4), {"TRT_TRACE_OUT": str(out)}, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    files = list(tmp_path.glob("trace_*.json"))
    assert len(files) == 1 and files[0].name != "trace_{pid}.json"  # {pid} was replaced
    events = load_strict(files[0])
    tracks = check_trace(events)
    # One track per engine, and the runner's calls on their thread's inference track (docs/inference.md).
    engines = sorted(name for name in tracks.values() if not name.startswith("inference \u00b7 "))
    assert engines == sorted(s.name for s in specs) and len(tracks) == len(specs) + 1
    calls = [e for e in events if e["ph"] == "X" and e["name"] == "execute_engine"]
    assert len(calls) == 4 * len(specs)
    assert sum(1 for e in events if e["ph"] == "X" and e["name"] == "inference") == 4
    assert "trace written to" in proc.stderr


def test_a_process_that_imports_torch_but_runs_no_engine_leaves_no_file(tmp_path):
    proc = run_python("import torch; print(torch.ones(2).sum().item())", {"TRT_TRACE_OUT": str(tmp_path / "t.json")})
    assert proc.returncode == 0 and proc.stdout.strip() == "2.0"
    assert not (tmp_path / "t.json").exists() and "trace written" not in proc.stderr


def test_no_env_var_no_trace_and_no_torch_import(tmp_path):
    proc = run_python("import sys; print('torch' in sys.modules)", {}, cwd=tmp_path)
    assert proc.stdout.strip() == "False" and list(tmp_path.iterdir()) == []
    # With the variable set, a process that never imports torch is not slowed by it either.
    proc = run_python("import sys; print('torch' in sys.modules)", {"TRT_TRACE_OUT": str(tmp_path / "t.json")})
    assert proc.stdout.strip() == "False" and not (tmp_path / "t.json").exists()


def test_unwritable_output_warns_once_and_the_program_runs_on(tmp_path):
    proc = run_python(EAGER + "print('done')", {"TRT_TRACE_OUT": str(tmp_path / "no" / "such" / "dir.json")})
    assert proc.returncode == 0 and proc.stdout.strip() == "done"
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("trt_trace:")]
    assert len(lines) == 1 and "TRT_TRACE_OUT" in lines[0] and "does not exist" in lines[0]


def trt_trace_cmd() -> list[str]:
    exe = shutil.which("trt-trace", path=str(Path(sys.executable).parent))
    assert exe, "the trt-trace script must be installed beside the interpreter"
    return [exe]


def test_cli_run_and_summary(tmp_path):
    script = tmp_path / "serve.py"
    script.write_text(EAGER)
    out = tmp_path / "cli.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRT_TRACE_OUT")}
    proc = subprocess.run(trt_trace_cmd() + ["run", "-o", str(out), "--", sys.executable, str(script)],
                          env=env, capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr
    check_trace(load_strict(out))
    proc = subprocess.run(trt_trace_cmd() + ["summary", str(out)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    rows = {ln.split()[0]: ln.split()[1] for ln in proc.stdout.splitlines()[1:]}
    assert rows == {"env_engine": "3", "ALL": "3"}


def test_cli_run_passes_the_exit_code_on_and_summary_reports_bad_files(tmp_path):
    proc = subprocess.run(trt_trace_cmd() + ["run", "-o", str(tmp_path / "x.json"), "--", sys.executable, "-c",
                                             "raise SystemExit(3)"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 3
    bad = tmp_path / "bad.json"
    bad.write_text("this is not json")
    proc = subprocess.run(trt_trace_cmd() + ["summary", str(bad)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1 and "not a trace" in proc.stderr


# What only one verb uses: the viewer's HTTP server, merge's Perfetto writer, the other verbs' analysis. The
# CLI imports each when its verb runs, so that a reading verb (and the suite's hundreds of them) starts
# without the others' (about a quarter of its start-up, issue 32).
OTHER_VERBS_MODULES = ("trt_trace.viewer", "http.server", "trt_trace.analysis.merge", "trt_trace.analysis.diff",
                       "trt_trace.analysis.fleet", "trt_trace.analysis.export", "trt_trace.analysis.trace_slice",
                       "trt_trace.analysis.plot")
IMPORTED_BY_VERB = ("import sys, trt_trace_cli\nsys.argv = ['trt-trace', *sys.argv[1:]]\n"
                    "try:\n    trt_trace_cli.main()\n"
                    f"except SystemExit:\n    pass\nprint(*[m for m in {OTHER_VERBS_MODULES!r} if m in sys.modules])")


@pytest.mark.parametrize("argv,imported", [
    (["--help"], ""),
    (["summary", "missing.json"], ""),
    (["diff", "missing.json", "missing.json"], "trt_trace.analysis.diff"),  # the probe sees what a verb imports
])
def test_the_cli_starts_without_the_other_verbs_modules(tmp_path, argv, imported):
    proc = subprocess.run([sys.executable, "-c", IMPORTED_BY_VERB, *argv], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)
    assert proc.stdout.splitlines()[-1] == imported, (proc.stdout, proc.stderr)


def test_the_demo_runs_from_the_repository_root(tmp_path):
    # The README's demo command runs `trt-trace demo` in the checkout, whose source folder has no
    # compiled library: the serving process must import the installed package all the same.
    repo = Path(__file__).resolve().parents[1]
    out = tmp_path / "demo.json"
    proc = subprocess.run(trt_trace_cmd() + ["demo", "--out", str(out), "--calls", "3"], cwd=repo,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert out.exists() and any(line.startswith("ALL ") for line in proc.stdout.splitlines())


@pytest.mark.parametrize("argv,code,words", [
    (["--calls", "-1"], 2, "--calls -1: give a number of calls >= 1"),
    (["--calls", "0"], 2, "--calls 0"),
    (["--engines", "0"], 2, "--engines 0: give a number of engines from 1 to 64"),
    (["--engines", "100000"], 2, "--engines 100000"),
    (["--out", "missing/demo.json"], 1, "directory missing does not exist"),
    (["--out", "."], 1, "is a directory"),
])
def test_demo_options_it_cannot_run_with_are_one_line_and_an_exit_code(tmp_path, argv, code, words):
    # Checked before the package is built: no traceback from the serving process, nothing written.
    proc = subprocess.run(trt_trace_cmd() + ["demo", *argv], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == code and proc.stdout == "", (proc.stdout, proc.stderr)
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("trt-trace demo: ") and words in proc.stderr, \
        proc.stderr
    assert list(tmp_path.iterdir()) == []


def test_every_option_of_every_verb_has_help_text():
    import argparse

    from trt_trace.cli import build_parser

    parser = build_parser()
    (verbs,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    missing = [f"{verb} {action.dest}" for verb, sub in verbs.choices.items() for action in sub._actions
               if not isinstance(action, argparse._HelpAction) and not action.help]
    assert missing == []
