#!/usr/bin/env bash
# Does all set-up on a fresh machine with only Python 3.10+ and a C++ compiler:
# a virtual environment, torch (2.13 CPU by default), the build of the C++
# libraries and the install of trt_trace with its test tools (and Debian's Chromium, which the
# real-UI tests drive, where /usr/bin/chromium is missing: apt-get, as root or through sudo; Debian's
# Java for the Spark tests, the same way, where no java is found; and
# Nsight Systems from Debian's non-free packages, unpacked into the cache: tools/install_nsys.sh).
# Idempotent: a second run reinstalls only when the sources changed.
#
#   TRT_TRACE_VENV   where the venv goes (default .venv)
#   TRT_TRACE_TORCH  the torch requirement (default torch==2.13.0)
#   PYTHON           the interpreter that makes the venv (default python3)
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${TRT_TRACE_VENV:-.venv}
TORCH_REQ=${TRT_TRACE_TORCH:-torch==2.13.0}
PY=${PYTHON:-python3}

CHROMIUM=${TRT_TRACE_CHROMIUM:-/usr/bin/chromium}
if [ ! -x "$CHROMIUM" ]; then
  echo "setup: installing chromium (apt-get) for the Perfetto UI tests"
  SUDO=""
  if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q chromium
fi

# Java for Spark (tests/test_fleet_spark.py: `trt-trace summary DIR --engine spark`, pyspark in local mode):
# Debian's default JRE (17 on bookworm; pyspark 4 needs 17 or newer), where no java is on PATH or in JAVA_HOME.
if [ -z "${JAVA_HOME:-}" ] && ! command -v java >/dev/null 2>&1; then
  echo "setup: installing default-jre-headless (apt-get) for the Spark tests"
  SUDO=""
  if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q default-jre-headless
fi

# Nsight Systems for the capture tests (tests/test_captures_nsys.py): unpacked into the cache, see the script.
if [ -z "${TRT_TRACE_NSYS:-}" ]; then
  bash tools/install_nsys.sh >/dev/null
fi

if [ ! -x "$VENV/bin/python" ]; then
  echo "setup: creating $VENV"
  "$PY" -m venv "$VENV"
fi
VPY="$VENV/bin/python"

if ! "$VPY" -c "import glob, torch, setuptools, wheel, ninja, nvidia
assert any(glob.glob(p + '/*/include/nvtx3') for p in nvidia.__path__)" >/dev/null 2>&1; then
  echo "setup: installing $TORCH_REQ and build tools (nvidia-nvtx: NVTX headers for the build)"
  "$VPY" -m pip install -q --disable-pip-version-check "$TORCH_REQ" numpy setuptools wheel ninja nvidia-nvtx
fi

stamp="$VENV/.trt_trace_sources"
sources_hash=$(find csrc trt_trace setup.py pyproject.toml trt_trace_autostart.py trt_trace_cli.py -type f \
  \( -name '*.py' -o -name '*.cpp' -o -name '*.h' -o -name '*.pth' -o -name '*.toml' \) -print0 \
  | sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$sources_hash" ] || ! "$VENV/bin/trt-trace" --help >/dev/null 2>&1; then
  echo "setup: building and installing trt_trace (C++ build, a few minutes on 2 cores)"
  MAX_JOBS=${MAX_JOBS:-$(nproc)} "$VPY" -m pip install -q --disable-pip-version-check \
    --no-build-isolation ".[test]"
  echo "$sources_hash" > "$stamp"
fi
