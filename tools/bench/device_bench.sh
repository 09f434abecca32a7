#!/usr/bin/env bash
# Wall-clock overhead on the GPU machine (16 idle cores: steadier than the 2-core VM), through the
# device tool: builds trt_trace there, then runs tools/bench/bench_overhead.py (C++ loops of boxed calls,
# modes interleaved) on the CPU stand-in with 1 and 4 calling threads, 1 and 1,000 engines, and once
# with CUDA inputs (+ GPU events). BASELINE=<folder with another revision's source> also builds
# that revision and runs the same CPU benchmark against it, in the same lease (before/after).
# ENGINES, THREADS (lists), CALLS, REPEATS set the CPU runs; CPU=0 skips them, CUDA=0 skips the CUDA run.
# The CUDA run measures GPU timing off, on every call and sampled (GPU_EVERY, a list; default "1 8").
# Results go to $OUT (bench_*.txt).
set -uo pipefail
export CXX=/usr/bin/g++ CC=/usr/bin/gcc   # that machine's default toolchain breaks torch extensions
export PYTHONUNBUFFERED=1 MAX_JOBS=16
OUT=${OUT:-/tmp}
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
fi
export PYTHONPATH=/tmp/site
repo=$PWD
python3 -m pip install -q --no-deps --no-build-isolation --no-index . 2>&1 | tail -5 || exit 1
if [ -n "${BASELINE:-}" ]; then
  python3 -m pip install -q --no-deps --no-build-isolation --no-index --target /tmp/baseline "$(realpath "$BASELINE")" 2>&1 | tail -5 || exit 1
fi
nproc; lscpu | grep -E "Model name|^CPU\(s\)|MHz" | head -4
perf stat -e cycles,instructions true 2>&1 | grep -E "cycles|instructions" || echo "perf: not available"
cd /tmp
args=(--engines ${ENGINES:-1 1000} --threads ${THREADS:-1 4} --calls "${CALLS:-20000}" --repeats "${REPEATS:-7}")
[ "${CPU:-1}" = 0 ] || python3 "$repo/tools/bench/bench_overhead.py" "${args[@]}" 2>&1 | tee "$OUT/bench_cpu.txt"
if [ -n "${BASELINE:-}" ]; then
  PYTHONPATH=/tmp/baseline:/tmp/site python3 -c 'import trt_trace; print("baseline:", trt_trace.__file__)'
  PYTHONPATH=/tmp/baseline:/tmp/site python3 "$repo/tools/bench/bench_overhead.py" "${args[@]}" 2>&1 | tee "$OUT/bench_cpu_baseline.txt"
fi
[ "${CUDA:-1}" = 0 ] || python3 "$repo/tools/bench/bench_overhead.py" --cuda --engines 1 --threads 1 --calls "${CALLS:-20000}" \
  --repeats "${REPEATS:-7}" --gpu-every ${GPU_EVERY:-1 8} 2>&1 | tee "$OUT/bench_cuda.txt"
