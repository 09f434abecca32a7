#!/usr/bin/env bash
# Fetches into DIR (default .whl, carried to the GPU machine) the wheels of trt_trace's dependencies
# that the GPU machine lacks (it reaches no index). Seen missing there on 2026-12-06 (torch 2.11, cp312):
# orjson, perfetto and duckdb; rich and matplotlib are fetched too, in case an image lacks them.
# tools/device/device_check.sh installs a wheel only where its distribution is not installed already,
# so the machine's own numpy, scipy, protobuf and pyarrow stay what torch was built with.
# The real-UI tests need Chromium, which no wheel brings: device_check deselects them there, and says so.
set -euo pipefail
dir=${1:-.whl}
mkdir -p "$dir"
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform manylinux_2_27_x86_64 \
  --platform manylinux_2_28_x86_64 -d "$dir" orjson perfetto duckdb rich matplotlib
ls -la "$dir"
