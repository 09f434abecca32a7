"""The demo: an AOTInductor package of six stand-in engines, traced with nothing but TRT_TRACE_OUT.

    python -m trt_trace.demo [--out trace.json] [--engines 6] [--calls 25] [--layers N]

Builds (or reuses from the cache) the package, then runs it in a fresh Python process whose only
tracing setting is the environment variable TRT_TRACE_OUT (no trt_trace code in it), and prints the
per-engine table of the resulting trace and its path. --layers N also sets TRT_TRACE_LAYERS=N: each
engine's next N calls after its first run with the runtime's per-layer profiling, and the demo then
prints each engine's layers by time (`trt-trace layers`).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import textwrap
import time

SERVE_SCRIPT = textwrap.dedent(
    """
    import sys, torch
    from trt_trace.standin import model   # the stand-in runtime (in real life: import torch_tensorrt)
    runner = model.load_package(sys.argv[1])
    x = torch.randn(8, 64)
    for _ in range(int(sys.argv[2])):
        y = runner(x)
    print(f"served {sys.argv[2]} calls of the package, output sum {float(y.sum()):.4f}")
    """
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m trt_trace.demo")
    parser.add_argument("--out", default="trace.json")
    parser.add_argument("--engines", type=int, default=6)
    parser.add_argument("--calls", type=int, default=25)
    parser.add_argument("--layers", type=int, default=0)
    args = parser.parse_args(argv)
    if args.layers < 0:
        print(f"demo: --layers must be a number of calls >= 0, not {args.layers}", file=sys.stderr)
        return 2

    import torch

    from trt_trace.standin import model
    from trt_trace.trace_summary import summary_text

    t0 = time.time()
    path = model.package_model(model.demo_specs(args.engines), torch.randn(8, 64))
    print(f"AOTInductor package with {args.engines} stand-in engines: {path} ({time.time() - t0:.1f} s)")

    env = dict(os.environ)
    env["TRT_TRACE_OUT"] = os.path.abspath(args.out)
    settings = f"TRT_TRACE_OUT={args.out}"
    if args.layers:
        env["TRT_TRACE_LAYERS"] = str(args.layers)
        settings += f" and TRT_TRACE_LAYERS={args.layers}"
    print(f"running it {args.calls} times in a fresh process with only {settings} set ...")
    # Not from this directory: `python -c` puts the working directory first on sys.path, and run in a
    # checkout that would import its source folder (no compiled library) instead of the installed package.
    rc = subprocess.call([sys.executable, "-c", SERVE_SCRIPT, path, str(args.calls)], env=env,
                         cwd=tempfile.gettempdir())
    if rc != 0:
        print(f"demo: the serving process failed with exit code {rc}", file=sys.stderr)
        return rc
    print()
    print(summary_text(args.out), end="")
    if args.layers:
        from trt_trace.layers_report import layers_text

        print()
        print(layers_text(args.out), end="")
    print(f"\ntrace: {os.path.abspath(args.out)}  (open it in https://ui.perfetto.dev)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
