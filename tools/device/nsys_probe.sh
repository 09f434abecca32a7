#!/usr/bin/env bash
# Finds out whether Nsight Systems works on this (GPU) machine, and says what happens at each step:
#   1. every nsys and QdstrmImporter already here (PATH, /opt/nvidia, /usr/local/cuda*, /usr/lib), with
#      their versions, and the one carried in .nsys/nsys.tar.xz (tools/device/fetch_nsys.sh), unpacked
#      into /tmp/nsys;
#   2. builds tools/device/nsys_probe.cu (nvcc; NVTX ranges with a uint64 payload around a device copy
#      and a 20 us kernel, 5 times);
#   3. with each nsys: `nsys profile --trace=cuda,nvtx` of it, then `nsys export --type sqlite`, and the
#      export's row counts, read with trt_trace.captures.nsys_sqlite where trt_trace is installed.
# Everything it makes goes to $OUT/nsys_probe (default /tmp/nsys_probe): a .qdstrm that could not be
# imported here can be imported elsewhere (tools/install_nsys.sh's QdstrmImporter -i FILE, then
# `nsys export --type sqlite`). Run from the repository root:  bash tools/device/nsys_probe.sh
set -uo pipefail
out=${OUT:-/tmp}/nsys_probe
mkdir -p "$out"
echo "== machine"
nvidia-smi -L 2>&1 | head -2
nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>&1 | head -1
command -v nvcc >/dev/null && nvcc --version | tail -1

echo "== nsys and QdstrmImporter already on this machine"
found=()
for n in $(command -v -a nsys 2>/dev/null) $(find /opt /usr/local /usr/lib /usr/bin -xdev \( -name nsys -o -name QdstrmImporter \) \
    -type f 2>/dev/null | sort -u); do
  echo "  $n"
  case "$n" in */nsys) found+=("$n"); "$n" --version 2>&1 | head -1 | sed 's/^/    /';; esac
done
[ ${#found[@]} -eq 0 ] && echo "  (no nsys)"

if [ -f .nsys/nsys.tar.xz ]; then
  echo "== the carried Nsight Systems (.nsys/nsys.tar.xz) into /tmp/nsys"
  rm -rf /tmp/nsys && mkdir -p /tmp/nsys && tar -C /tmp/nsys -xJf .nsys/nsys.tar.xz && found+=(/tmp/nsys/target-linux-x64/nsys)
  /tmp/nsys/target-linux-x64/nsys --version 2>&1 | head -1 | sed 's/^/  /'
  echo "  libraries the importer lacks here:"
  LD_LIBRARY_PATH=/tmp/nsys/host-linux-x64 ldd /tmp/nsys/host-linux-x64/QdstrmImporter | grep "not found" | sed 's/^/    /'
  echo "  libraries nsys lacks here:"
  ldd /tmp/nsys/target-linux-x64/nsys | grep "not found" | sed 's/^/    /'
else
  echo "== no .nsys/nsys.tar.xz carried (tools/device/fetch_nsys.sh makes it where Debian's archive is reachable)"
fi

echo "== build the probe program"
inc=""
for d in /usr/local/cuda/include $(python3 -c 'import nvidia, os; [print(os.path.join(p, s)) for p in nvidia.__path__ for s in ("cu13/include", "nvtx/include")]' 2>/dev/null); do
  [ -f "$d/nvtx3/nvToolsExt.h" ] && inc="-I$d" && break
done
if ! nvcc -O2 $inc -o "$out/probe" tools/device/nsys_probe.cu -ldl > "$out/build.log" 2>&1; then
  echo "  nvcc failed:"; tail -5 "$out/build.log"; exit 1
fi
"$out/probe"

i=0
for n in "${found[@]}"; do
  i=$((i + 1))
  echo "== nsys #$i: $n"
  rm -f "$out/run$i".* /tmp/nsys-report-*.qdstrm
  timeout 300 "$n" profile --trace=cuda,nvtx --sample=none --cpuctxsw=none --force-overwrite=true \
    -o "$out/run$i" "$out/probe" > "$out/profile$i.log" 2>&1
  echo "  profile rc $?; last lines:"; grep -v "^\[" "$out/profile$i.log" | tail -6 | sed 's/^/    /'
  ls /tmp/nsys-report-*.qdstrm 2>/dev/null | head -1 | xargs -r -I{} cp {} "$out/run$i.qdstrm"
  ls -la "$out" | grep "run$i\." | sed 's/^/    /'
  if [ -f "$out/run$i.nsys-rep" ]; then
    timeout 300 "$n" export --type sqlite --force-overwrite=true -o "$out/run$i.sqlite" "$out/run$i.nsys-rep" \
      > "$out/export$i.log" 2>&1
    echo "  export rc $?"
  fi
  if [ -f "$out/run$i.sqlite" ]; then
    python3 - "$out/run$i.sqlite" <<'PY'
import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
for t in ("NVTX_EVENTS", "CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY"):
    print(f"    {t}: {con.execute(f'SELECT COUNT(*) FROM [{t}]').fetchone()[0] if t in tables else 'absent'}")
try:
    from trt_trace.captures import nsys_sqlite, report
    calls = nsys_sqlite.read(sys.argv[1])
    print(f"    trt_trace reader: {len(calls)} calls, call ids {calls.call_id.tolist()}, kernels per call "
          f"{calls.kernels.tolist()}, kernel us {[round(v / 1e3, 3) for v in calls.kernel_ns.tolist()]}, "
          f"copies {calls.copies.tolist()}; notes {calls.notes}")
except ImportError:
    print("    (trt_trace not installed here: no reader check)")
PY
  fi
done
echo "== files in $out"; ls -la "$out" | sed 's/^/  /'
