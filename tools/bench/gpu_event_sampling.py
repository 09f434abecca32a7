"""Host cost of GPU timing per traced CUDA call, every call vs sampled (TRT_TRACE_GPU_EVERY=N), on a GPU.

    python tools/bench/gpu_event_sampling.py [--calls 2000] [--repeats 21] [--every 1 2 8 16]

A C++ loop (torch.ops.trt_trace._gpu_event_host_ns) makes `calls` calls of the hook's GPU-event work
(the capture check, the start and end event records on the current stream, with pooled events that
completed before) behind the hook's own sampling decision, for each N interleaved in one process, and
prints the median ns per call and its ratio to N = 1. Kinds of call: on the caller's stream (two
events); handing the work to a stream of its own and back through c10 events as the 2.11 runtime
does (the engine-stream pair too: four events; the same hand-offs untraced are timed and taken off),
with two c10 events kept for all calls, then made and destroyed by each call as the runtime's are;
the latter with --kernels small kernel launches per call on the engine's stream, as its work; and
with --scrub-kib KiB written between calls, evicting the caches as a real call's other work does.
No engine runs: its own host cost and the stand-in's noise would bury a microsecond. Exits non-zero
where the build has no GPU timing.
"""

from __future__ import annotations

import argparse
import statistics
import sys


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=21)
    ap.add_argument("--every", type=int, nargs="+", default=[1, 2, 8, 16])
    ap.add_argument("--kernels", type=int, default=4, help="kernel launches per call in the fourth kind")
    ap.add_argument("--scrub-kib", type=int, default=2048, help="KiB written between calls in the fifth kind")
    args = ap.parse_args()
    import torch

    from trt_trace.native import ops

    if not torch.cuda.is_available() or ops.gpu_event_host_ns(0, 10) < 0:
        print("gpu_event_sampling: no GPU timing here (needs a GPU and trt_trace's CUDA build)", file=sys.stderr)
        return 1
    kinds = {"caller's stream": (0, 0, 0), "engine-stream hand-off": (1, 0, 0),
             "engine-stream hand-off, c10 events made per call": (2, 0, 0),
             f"the same, {args.kernels} kernels": (2, args.kernels, 0),
             f"the same, {args.scrub_kib} KiB scrubbed between calls": (2, 0, args.scrub_kib)}
    runs: dict[tuple[str, int], list[float]] = {(k, n): [] for k in kinds for n in args.every}
    for _ in range(args.repeats):  # interleaved: drifts of the machine hit every N alike
        for kind, (hand_off, kernels, scrub) in kinds.items():
            for n in args.every:
                runs[kind, n].append(ops.gpu_event_host_ns(0, args.calls, n, hand_off, kernels, scrub))
    if any(v == -1.0 for vs in runs.values() for v in vs):
        print("gpu_event_sampling: an event could not be recorded", file=sys.stderr)
        return 1
    print(f"{torch.cuda.get_device_name(0)}, torch {torch.__version__}: {args.repeats} x {args.calls} calls per N")
    for kind in kinds:
        base = statistics.median(runs[kind, args.every[0]])
        print(f"  {kind}:")
        for n in args.every:
            v = runs[kind, n]
            m = statistics.median(v)
            print(f"    GPU events 1 in {n:<3d} {m:8.0f} ns per call  ({m / base:.3f} x 1 in {args.every[0]}; "
                  f"spread {min(v):.0f}-{max(v):.0f} ns)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
