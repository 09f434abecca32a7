"""Serves a stand-in AOTInductor package in a loop: the program the README traces.

The package is the demo's (six stand-in TensorRT engines with Inductor's own ops between them,
trt_trace.standin.model; built on the first run, 30-60 s, then cached). A real deployment would load
its Torch-TensorRT package with torch._inductor.aoti_load_package the same way; nothing here is
traced by hand: run it with TRT_TRACE_OUT set, or under `trt-trace run`.

    TRT_TRACE_OUT=trace.json python examples/serve.py
    TRT_TRACE_OUT=trace.json python examples/serve.py --calls 200 --threads 4 --sleep 0.002
    trt-trace summary trace.json
"""

from __future__ import annotations

import argparse
import sys
import threading
import time


def count(what: str, low: float):
    def parse(value: str) -> float:
        try:
            n = float(value) if low == 0 else int(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{value!r} is not {what}") from None
        if not low <= n < float("inf"):
            raise argparse.ArgumentTypeError(f"{value}: give {what} >= {low:g}")
        return n
    return parse


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Serve the stand-in AOTInductor package in a loop (trace it with "
                                                 "TRT_TRACE_OUT=trace.json).")
    parser.add_argument("--calls", type=count("a number of calls", 1), default=50, metavar="N",
                        help="package calls per thread; each runs every engine once (default 50)")
    parser.add_argument("--threads", type=count("a number of threads", 1), default=1, metavar="N",
                        help="threads calling the one loaded package at once (default 1)")
    parser.add_argument("--sleep", type=count("seconds", 0), default=0.0, metavar="SECONDS",
                        help="pause after each call, as a server waits for its next request (default 0)")
    args = parser.parse_args(argv)

    import torch  # after the arguments: a wrong flag answers at once, not after torch's import

    from trt_trace.standin import model  # the stand-in runtime (in real life: import torch_tensorrt)

    path = model.package_model(model.demo_specs(6), torch.randn(8, 64))
    runner = model.load_package(path)
    done = [0] * args.threads

    def serve(k: int) -> None:
        x = torch.randn(8, 64)
        with torch.inference_mode():
            for _ in range(args.calls):
                runner(x)
                done[k] += 1
                if args.sleep:
                    time.sleep(args.sleep)

    start = time.monotonic()
    workers = [threading.Thread(target=serve, args=(k,), name=f"serve-{k}") for k in range(args.threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    seconds = time.monotonic() - start
    print(f"served {sum(done)} calls of {path.rsplit('/', 1)[-1]} on {args.threads} thread(s) in {seconds:.2f} s")
    return 0 if sum(done) == args.calls * args.threads else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit(130)
