#!/usr/bin/env bash
# Set-up (see setup_env.sh), then lint and the whole test suite. Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup_env.sh
VENV=${TRT_TRACE_VENV:-.venv}
"$VENV/bin/ruff" check .
# $VENV/bin/pytest (not `python -m pytest`): the tests must import the installed package, with its
# compiled libraries and start-up hook, not the source folder.
exec "$VENV/bin/pytest" -q "$@" tests
