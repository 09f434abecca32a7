"""Host ns of each CUDA step a measured call's GPU events make, warm and with the caches scrubbed, on a GPU.

    python tools/bench/gpu_event_parts.py [--calls 2000] [--repeats 7] [--scrub-kib 2048]

Builds tools/bench/gpu_event_parts.cpp (torch's extension tooling, a CUDA toolkit needed) and times each
step alone: in a tight loop (warm: what a loop of CUDA calls alone pays), and each time after
--scrub-kib KiB were written (cold: what the same step pays inside a real call, whose other host work
evicts the CUDA runtime's code and data from the caches), through the CUDA runtime and through the
driver's own entry points. Prints the median over repeats, interleaved.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--scrub-kib", type=int, default=2048)
    args = ap.parse_args()
    import torch
    from torch.utils import cpp_extension

    if not torch.cuda.is_available():
        print("gpu_event_parts: no CUDA device here", file=sys.stderr)
        return 1
    src = str(Path(__file__).resolve().with_suffix(".cpp"))
    ext = cpp_extension.load("trt_trace_gpu_event_parts", [src], extra_cflags=["-O2"], with_cuda=True, verbose=False)
    runs: dict[int, list[list[tuple[str, float]]]] = {0: [], args.scrub_kib: []}
    for _ in range(args.repeats):
        for scrub in runs:
            runs[scrub].append(ext.gpu_event_steps(0, args.calls, scrub))
    names = [name for name, _ in runs[0][0]]
    print(f"{torch.cuda.get_device_name(0)}, torch {torch.__version__}: median ns per step over "
          f"{args.repeats} x {args.calls}; warm (tight loop) and cold (after {args.scrub_kib} KiB scrubbed)")
    for k, name in enumerate(names):
        warm = statistics.median(r[k][1] for r in runs[0])
        cold = statistics.median(r[k][1] for r in runs[args.scrub_kib])
        print(f"  {name:58s} warm {warm:7.0f}   cold {cold:7.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
