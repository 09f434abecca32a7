#!/usr/bin/env bash
# Fetches what tools/device/real_runtime_check.py needs from the package index (run here, where the
# index is reachable; the GPU machine reaches nothing) into DIR (default .trt, carried to the GPU
# machine beside .whl):
#   DIR/libtorchtrt_runtime.so  the real Torch-TensorRT 2.11.0 C++ runtime (1.2 MB), from the cp312 wheel
#   DIR/python/                 what `import torch_tensorrt` needs and the GPU machine lacks (~7 MB):
#     torch_tensorrt/           the wheel's Python sources only (without lib/, bin/, include/ and the
#                               TorchScript frontend's _C extension; the check puts the runtime above
#                               in lib/, so the import loads the runtime alone)
#     tensorrt_bindings/        the real tensorrt_cu13_bindings 10.15.1.29 Python bindings (cp312)
#     dllist/                   a pure-Python dependency torch_tensorrt imports at import time
# `import tensorrt` itself comes from the project's shim (tests/faketrt/python_shim), TensorRT's
# libraries from the project's fake (tests/faketrt). Everything else torch_tensorrt imports at import
# (numpy, packaging, typing_extensions, psutil) is on the GPU machine already.
set -euo pipefail
dir=${1:-.trt}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 -d "$tmp" \
  torch-tensorrt==2.11.0 tensorrt_cu13_bindings==10.15.1.29 dllist==2.0.0
mkdir -p "$dir"
unzip -o -j -q "$tmp"/torch_tensorrt-2.11.0-*.whl torch_tensorrt/lib/libtorchtrt_runtime.so -d "$dir"
rm -rf "$dir/python"
mkdir -p "$dir/python"
unzip -q "$tmp"/torch_tensorrt-2.11.0-*.whl 'torch_tensorrt/*' \
  -x 'torch_tensorrt/lib/*' 'torch_tensorrt/bin/*' 'torch_tensorrt/include/*' 'torch_tensorrt/_C.*' -d "$dir/python"
unzip -q "$tmp"/tensorrt_cu13_bindings-10.15.1.29-*.whl 'tensorrt_bindings/*' -d "$dir/python"
unzip -q "$tmp"/dllist-2.0.0-*.whl 'dllist/*' -d "$dir/python"
ls -l "$dir/libtorchtrt_runtime.so" "$dir/python/tensorrt_bindings/tensorrt.so"
du -sh "$dir/python"/*
du -sh "$dir"   # all that is carried from here (the carry limit is 64 MiB with .whl)
