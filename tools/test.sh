#!/usr/bin/env bash
# Set-up (see setup_env.sh), then lint and the whole test suite. Exits non-zero on any failure (pytest's
# exit 5, no test collected, is one).
#
# The suite runs on several pytest-xdist workers: one more than the cores, since many tests wait on a
# child process, the browser or nsys (TRT_TRACE_TEST_WORKERS sets the number; 0 runs it in this process).
# --dist loadgroup: the tests that share a fixture of module scope stay on one worker, in file order
# (tests/conftest.py marks them); every other test goes to whichever worker is free. A worker that
# crashes fails the test it was running, and the run.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup_env.sh
VENV=${TRT_TRACE_VENV:-.venv}
WORKERS=${TRT_TRACE_TEST_WORKERS:-$(( $(nproc) + 1 ))}
"$VENV/bin/ruff" check .
# $VENV/bin/pytest (not `python -m pytest`): the tests must import the installed package, with its
# compiled libraries and start-up hook, not the source folder.
exec "$VENV/bin/pytest" -q -n "$WORKERS" --dist loadgroup "$@" tests
