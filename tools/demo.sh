#!/usr/bin/env bash
# Set-up (see setup_env.sh), then the demo: a 6-engine stand-in AOTInductor
# package traced into trace.json with only TRT_TRACE_OUT, and its table.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup_env.sh
# The console script, not `python -m`: it must import the installed package, not the source folder.
exec "${TRT_TRACE_VENV:-.venv}/bin/trt-trace" demo "$@"
