#!/usr/bin/env bash
# Builds the fake TensorRT 10.15 runtime on a machine with nvcc (the GPU machine):
#   bash tests/faketrt/build.sh OUT_DIR   ->  OUT_DIR/libnvinfer.so.10, OUT_DIR/libnvinfer_plugin.so.10,
#                                            OUT_DIR/libnvonnxparser.so.10 (only the Python bindings link it)
# First checks every vtable slot number of faketrt_abi.h (the build fails on a mismatch).
# Shared cudart: the same libcudart.so.13 as torch's. CXX: the host compiler (that machine's
# default toolchain links libstdc++ statically; /usr/bin/g++ does not).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: build.sh OUT_DIR}
mkdir -p "$out"
cxx=${CXX:-g++}
"$cxx" -std=c++17 -O1 -Wall -Wno-non-virtual-dtor -I"$here" "$here/slot_check.cpp" -o "$out/slot_check"
"$out/slot_check"
nvcc -O2 -std=c++17 -ccbin "$cxx" -shared -Xcompiler -fPIC,-fvisibility=hidden -cudart shared -arch=sm_90 \
  -Xlinker -soname=libnvinfer.so.10 -Xlinker --version-script="$here/exports.map" -I"$here" "$here/faketrt.cu" -o "$out/libnvinfer.so.10"
"$cxx" -O2 -shared -fPIC -fvisibility=hidden -Wl,-soname,libnvinfer_plugin.so.10 \
  "$here/faketrt_plugin.cpp" -o "$out/libnvinfer_plugin.so.10"
"$cxx" -O2 -shared -fPIC -fvisibility=hidden -Wl,-soname,libnvonnxparser.so.10 \
  "$here/faketrt_onnxparser.cpp" -o "$out/libnvonnxparser.so.10"
if command -v nm >/dev/null; then
  nm -D --defined-only "$out"/lib*.so.10 | grep -E " T " || true
fi
echo "faketrt: built $out/libnvinfer.so.10 $out/libnvinfer_plugin.so.10 $out/libnvonnxparser.so.10"
