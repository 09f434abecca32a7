#!/usr/bin/env bash
# Fetches the real Torch-TensorRT 2.11.0 runtime library for tools/device/real_runtime_check.py (run here,
# where the package index is reachable; the GPU machine reaches nothing): the cp312 wheel, and from
# it only torch_tensorrt/lib/libtorchtrt_runtime.so (1.2 MB) into DIR (default .trt, carried to the
# GPU machine beside .whl).
set -euo pipefail
dir=${1:-.trt}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 -d "$tmp" torch-tensorrt==2.11.0
mkdir -p "$dir"
unzip -o -j -q "$tmp"/torch_tensorrt-2.11.0-*.whl torch_tensorrt/lib/libtorchtrt_runtime.so -d "$dir"
ls -l "$dir/libtorchtrt_runtime.so"
