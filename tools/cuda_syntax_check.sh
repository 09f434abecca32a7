#!/usr/bin/env bash
# Compiles csrc/ files as the CUDA build does (TRT_TRACE_WITH_CUDA), syntax only, on a machine with
# the CUDA toolkit's headers but a CPU-only torch: the closest check of the CUDA code paths short of
# a GPU machine (which builds and runs them: docs/device-checks.md).
#
#   bash tools/cuda_syntax_check.sh [FILE ...]     (default: every csrc/ .cpp that uses CUDA)
#
# A CPU torch wheel ships ATen's CUDA headers but not the generated c10 CUDA macros, and no
# cuBLAS / cuSPARSE / cuSOLVER headers, which ATen's CUDA headers include: this writes stubs of the
# few names they mention into a temporary folder. CUDA_HOME (default /usr/local/cuda) gives the
# toolkit; the venv is TRT_TRACE_VENV (default .venv).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${TRT_TRACE_VENV:-.venv}
CUDA=${CUDA_HOME:-/usr/local/cuda}
TORCH_INC=$("$VENV/bin/python" -c "import torch.utils.cpp_extension as c; print(' '.join(c.include_paths()))")
NVTX_INC=$("$VENV/bin/python" -c "
import glob, nvidia
print(next(iter(glob.glob(p + '/*/include') for p in nvidia.__path__ if glob.glob(p + '/*/include/nvtx3')))[0])")
STUBS=$(mktemp -d)
trap 'rm -rf "$STUBS"' EXIT
mkdir -p "$STUBS/c10/cuda/impl"
echo '#define C10_CUDA_BUILD_SHARED_LIBS' > "$STUBS/c10/cuda/impl/cuda_cmake_macros.h"
cat > "$STUBS/cublas_v2.h" <<'EOF'
#pragma once
typedef struct cublasContext* cublasHandle_t;
typedef enum { CUBLAS_STATUS_SUCCESS = 0 } cublasStatus_t;
EOF
printf '#pragma once\ntypedef struct cublasLtContext* cublasLtHandle_t;\n' > "$STUBS/cublasLt.h"
cat > "$STUBS/cusparse.h" <<'EOF'
#pragma once
typedef struct cusparseContext* cusparseHandle_t;
typedef enum { CUSPARSE_STATUS_SUCCESS = 0 } cusparseStatus_t;
const char* cusparseGetErrorString(cusparseStatus_t);
EOF
printf '#pragma once\ntypedef struct cusolverDnContext* cusolverDnHandle_t;\n' > "$STUBS/cusolverDn.h"
printf '#pragma once\ntypedef enum { CUSOLVER_STATUS_SUCCESS = 0, CUSOLVER_STATUS_INVALID_VALUE = 3 } cusolverStatus_t;\n' \
  > "$STUBS/cusolver_common.h"
if [ "$#" -eq 0 ]; then
  mapfile -t files < <(grep -l "WITH_CUDA" csrc/*/*.cpp)
else
  files=("$@")
fi
includes=(-Icsrc -I"$CUDA/include" -I"$STUBS" -I"$NVTX_INC")
for dir in $TORCH_INC; do includes+=(-I"$dir"); done
status=0
for f in "${files[@]}"; do
  # (torch's own headers use two C++20 bit-field initialisers: not ours to warn about)
  if g++ -std=c++17 -fsyntax-only -DTRT_TRACE_WITH_CUDA=1 -DSTANDIN_WITH_CUDA=1 -Wall -Wno-interference-size \
       -Wno-c++20-extensions "${includes[@]}" "$f"; then
    echo "cuda syntax ok: $f"
  else
    echo "cuda syntax FAILED: $f"
    status=1
  fi
done
exit $status
