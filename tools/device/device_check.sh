#!/usr/bin/env bash
# Runs on the GPU machine (torch 2.11 + CUDA 13 there): builds trt_trace with its CUDA paths,
# runs the test suite against that torch (DEVICE_TESTS=0 skips it; TESTS="tests/a.py tests/b.py" picks files), then tools/device/gpu_standin_check.py and
# tools/device/gpu_timing_check.py (CHECKS= picks; SKIP_BUILD=1 reuses the install on a warm machine) (GPU spans vs torch.profiler, streams, CUDA graphs, costs, clock drift).
# tools/device/real_runtime_check.py (the real Torch-TensorRT 2.11 runtime over tests/faketrt, built here first)
# needs .trt/libtorchtrt_runtime.so (tools/device/fetch_real_runtime.sh; TORCHTRT_RUNTIME= another path), and for
# its torch_tensorrt_import check .trt/python (the same script); REAL_CHECKS="name ..." picks its checks (--only).
# Wheels missing there travel in .whl/ (tools/device/fetch_wheels.sh). An Nsight Systems carried in
# .nsys/nsys.tar.xz (tools/device/fetch_nsys.sh) is unpacked into /tmp/nsys for tests/test_captures_nsys.py and
# real_runtime_check's nsys_kernels; without any nsys that test file is left out, and said so.
set -uo pipefail
export CXX=/usr/bin/g++ CC=/usr/bin/gcc   # that machine's default toolchain breaks torch extensions
export PYTHONUNBUFFERED=1
if ls .whl/*.whl >/dev/null 2>&1; then   # tools/device/fetch_wheels.sh: only what the machine lacks
  missing=()
  for w in .whl/*.whl; do
    dist=$(basename "$w" | cut -d- -f1)
    python3 -c "import importlib.metadata as m, sys; m.version(sys.argv[1])" "$dist" 2>/dev/null || missing+=("$w")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site "${missing[@]}" || exit 1
  fi
  export PYTHONPATH=/tmp/site
fi
python3 - <<'PY'   # say which of trt_trace's imports are missing here: the tests needing them will fail
import importlib.util
need = ["orjson", "perfetto", "google.protobuf", "rich", "matplotlib", "scipy", "pyarrow", "numpy", "duckdb",
        "hypothesis", "prometheus_client", "xdist"]
gone = [m for m in need if importlib.util.find_spec(m) is None]
print("device_check: missing here:", ", ".join(gone) + " (tools/device/fetch_wheels.sh)" if gone else "none")
PY
if ! python3 -c "import playwright" 2>/dev/null || [ ! -x "${TRT_TRACE_CHROMIUM:-/usr/bin/chromium}" ]; then
  echo "device_check: no browser here: the real-UI tests are deselected (TRT_TRACE_NO_BROWSER=1; CI runs them)"
  export TRT_TRACE_NO_BROWSER=1
fi
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.device_count(), "GPU(s)")'
if [ "${SKIP_BUILD:-0}" != 1 ]; then   # SKIP_BUILD=1: a later call on the same warm machine
  MAX_JOBS=16 python3 -m pip install -q --no-deps --no-build-isolation --no-index . 2>&1 | tail -5 || exit 1
fi
if [ -f .nsys/nsys.tar.xz ] && [ ! -x /tmp/nsys/target-linux-x64/nsys ]; then
  mkdir -p /tmp/nsys && tar -C /tmp/nsys -xJf .nsys/nsys.tar.xz
fi
if [ -z "${TRT_TRACE_NSYS:-}" ] && [ -x /tmp/nsys/target-linux-x64/nsys ]; then
  export TRT_TRACE_NSYS=/tmp/nsys/target-linux-x64/nsys
fi
no_nsys=()
if [ -z "${TRT_TRACE_NSYS:-}" ] && ! command -v nsys >/dev/null; then
  echo "device_check: no nsys here (carry .nsys: tools/device/fetch_nsys.sh): tests/test_captures_nsys.py left out"
  no_nsys=(--ignore="$PWD/tests/test_captures_nsys.py")
fi
cd /tmp   # import the installed package, not the source folder
status=0
if [ "${DEVICE_TESTS:-1}" != 0 ]; then
  tests=()
  for t in ${TESTS:-tests}; do tests+=("$OLDPWD/$t"); done
  timeout "${PYTEST_TIMEOUT:-900}" python3 -m pytest -q -p no:cacheprovider -p no:logging "${tests[@]}" "${no_nsys[@]}" "$@" > "${OUT:-/tmp}/pytest.log" 2>&1 || status=1
  grep -E "^(FAILED|ERROR)|passed|failed" "${OUT:-/tmp}/pytest.log"
fi
for check in ${CHECKS:-gpu_standin_check gpu_timing_check real_runtime_check}; do
  args=()
  if [ "$check" = real_runtime_check ]; then
    runtime=$(realpath -m "$OLDPWD/${TORCHTRT_RUNTIME:-.trt/libtorchtrt_runtime.so}")
    if [ ! -f "$runtime" ]; then
      echo "real_runtime_check: $runtime missing (run tools/device/fetch_real_runtime.sh where pip reaches the index)"
      status=1
      continue
    fi
    bash "$OLDPWD/tests/faketrt/build.sh" /tmp/faketrt > "${OUT:-/tmp}/faketrt_build.log" 2>&1 \
      || { cat "${OUT:-/tmp}/faketrt_build.log"; status=1; continue; }
    args=(--fake /tmp/faketrt --runtime "$runtime")
    if [ -n "${REAL_CHECKS:-}" ]; then
      read -ra only <<< "$REAL_CHECKS"
      args+=(--only "${only[@]}")
    fi
  fi
  python3 "$OLDPWD/tools/device/$check.py" "${args[@]}" 2>&1 | grep -v fake_class_registry || status=1
done
exit $status
