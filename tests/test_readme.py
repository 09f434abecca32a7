"""The README is executable: every shell command block of README.md runs as written, in README order,
in one fresh temporary directory, with the installed venv's bin first on PATH, as a user following
it would; a command that fails (exit code, traceback) or hangs is a red test.

The convention, by fence info string (tests/test_readme.py::test_every_block_says_what_it_is holds
every block to it):

* ```console  commands that run as written here, one per line (no prompt, no output; `# ...` comments
  are bash's), from a directory holding the checkout's examples/ as a user's checkout does: their
  program is examples/serve.py (the demo's stand-in package served in a loop), run as written.
  Long-running ones (`trt-trace view`) run until they serve, then get Ctrl-C and must stop.
* ```shell    real commands that cannot run in CI; each is listed in NOT_RUN_IN_CI below with why and
  how it is covered instead, and a new one without an entry fails the test.
* ```text     output or an illustration; ```python: Python (not shell).

A command's exit code must be 0, except where the README says another is an answer (EXIT_CODES).
"""

from __future__ import annotations

import os
import re
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path
from urllib.parse import unquote

import pytest
from conftest import demo_package_now

# The README's commands build on one another in one directory: one pytest-xdist worker runs them, in order.
pytestmark = pytest.mark.xdist_group("readme")

HERE = Path(__file__).resolve().parent
README = HERE.parent / "README.md"
FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", re.M | re.S)
KINDS = {"console", "shell", "text", "python"}

# Commands of ```shell blocks: why each cannot run in CI, and what covers it instead.
NOT_RUN_IN_CI = {
    "bash tools/demo.sh": "set-up (tools/setup_env.sh, which CI's own set-up is) then `trt-trace demo`, which runs "
                          "below as the README writes it",
    "bash tools/test.sh": "CI itself (.ci/run runs it): running it from inside the suite would recurse",
    "pip install --no-build-isolation .": "installs into the user's environment; CI's set-up "
                                          "(tools/setup_env.sh) installs the package this way",
    "trt-trace capture 12345 --seconds 10 -o trace.json": "needs a running armed process to capture (12345 stands for "
                                                          "its pid); tests/test_on_demand_capture.py captures real "
                                                          "processes",
    "trt-trace capture --all --seconds 10 -o 'trace_{rank}.json'": "needs running armed processes; "
                                                                  "tests/test_on_demand_capture.py captures a group of "
                                                                  "rank workers with --all",
    "pip install 'trt_trace[view]'": "installs into the user's environment from the package index; the test extra "
                                     "installs the same viztracer, and `trt-trace view` runs below",
}

# Exit codes a command may answer with, beside 0 (the README gives their meaning).
EXIT_CODES = {
    "trt-trace diff": {1},  # 1: a regression, by the machine's noise between two runs of one program
}


def blocks(text: str | None = None) -> list[tuple[str, str]]:
    """(info string, body) of every fenced block of the README."""
    return [(m.group(1).strip(), m.group(2)) for m in FENCE.finditer(README.read_text() if text is None else text)]


def commands(kind: str) -> list[str]:
    """The command lines of the README's blocks of `kind`, in order (blank and comment lines left out)."""
    return [line.strip() for info, body in blocks() if info == kind for line in body.splitlines()
            if line.strip() and not line.strip().startswith("#")]


def without_comment(line: str) -> str:
    """The command before its trailing `  # ...` comment (as the README aligns them)."""
    return re.split(r"\s{2,}#\s", line, maxsplit=1)[0].strip()


def test_every_block_says_what_it_is():
    found = [info for info, _ in blocks()]
    assert found and set(found) <= KINDS, [i for i in found if i not in KINDS]
    assert "console" in found


def test_commands_that_cannot_run_in_ci_say_why():
    shell = [without_comment(line) for line in commands("shell")]
    assert sorted(shell) == sorted(NOT_RUN_IN_CI), "every ```shell command needs its reason in NOT_RUN_IN_CI"


def test_the_fence_parser_sees_every_kind():
    text = "a\n```console\nls  # list\n\n# note\npwd\n```\n```text\nout\n```\n"
    assert blocks(text) == [("console", "ls  # list\n\n# note\npwd\n"), ("text", "out\n")]
    assert without_comment("trt-trace view t.json   # serves it") == "trt-trace view t.json"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """The fresh directory the README's commands run in, with the checkout's examples/, and their environment."""
    work = tmp_path_factory.mktemp("readme")
    shutil.copytree(HERE.parent / "examples", work / "examples")
    demo_package_now()  # examples/serve.py and `trt-trace demo` reuse the package the suite compiles (cached)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRT_TRACE_") or k == "TRT_TRACE_CACHE_DIR"}
    for k in ("DISPLAY", "WAYLAND_DISPLAY", "BROWSER"):  # no browser: `view` serves and says so
        env.pop(k, None)
    env.update(PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
               PET_MASTER_PORT=str(free_port()), OMP_NUM_THREADS="1", PYTHONFAULTHANDLER="1")
    return work, env


def run_until_serving(command: str, work: Path, env: dict[str, str]) -> None:
    """Runs a long-running command (trt-trace view) until it serves its trace, then Ctrl-C: it must stop."""
    proc = subprocess.Popen(["bash", "-c", f"exec {command}"], cwd=work, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        with selectors.DefaultSelector() as sel:  # a view that never serves is a red test, not a hung suite
            sel.register(proc.stdout, selectors.EVENT_READ)
            assert sel.select(timeout=60), f"{command}: printed no URL within 60 s"
        line = proc.stdout.readline()
        assert line.startswith("Perfetto UI with "), (line, proc.stderr.read() if proc.poll() is not None else "")
        url = unquote(line.rsplit(" ", 1)[1].strip().split("url=", 1)[1])
        with urllib.request.urlopen(url, timeout=30) as response:  # the trace it serves is the file
            name = command.split()[2]
            assert response.read() == (work / name).read_bytes()
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=20)
    except BaseException:
        proc.send_signal(signal.SIGABRT)  # faulthandler: where it hangs
        _out, err = proc.communicate(timeout=20)
        raise AssertionError(f"{command}: did not serve and stop on Ctrl-C; its threads:\n{err}") from None
    assert proc.returncode == 0 and err.strip().splitlines()[-1] == "trt-trace view: stopped", err


@pytest.mark.parametrize("command", commands("console"))
def test_readme_command_runs_as_written(workdir, command):
    work, env = workdir
    if command.startswith("trt-trace view "):
        run_until_serving(without_comment(command), work, env)
        return
    proc = subprocess.run(["bash", "-c", command], cwd=work, env=env, capture_output=True, text=True, timeout=600)
    allowed = {0} | next((codes for prefix, codes in EXIT_CODES.items() if command.startswith(prefix)), set())
    said = f"{command}\nexit {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    assert proc.returncode in allowed, said
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
