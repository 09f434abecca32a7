"""Checks the stand-in runtime's CUDA path and the tracer on a GPU machine (run by tools/device/device_check.sh).

Prints one line per check and exits non-zero if any fails:
* eager CUDA engines called from the default stream (the runtime switches to its pool stream) and
  from a caller's own stream: outputs equal the float64 reference, calls traced with their device;
* CPU inputs are moved to the engine's GPU (step 1 of the call sequence) and land in `workspace`;
* an AOTInductor package of CUDA stand-in engines, built here, equals the eager model and is traced.
"""

from __future__ import annotations

import sys
import tempfile

import torch

import trt_trace
from trt_trace import standin
from trt_trace.native import ops
from trt_trace.schema.records import from_bytes
from trt_trace.schema.trace_format import Phase
from trt_trace.standin import model

failures = 0


def check(name: str, ok: bool, detail: str = "") -> None:
    global failures
    failures += 0 if ok else 1
    print(f"{'PASS' if ok else 'FAIL'}  {name}  {detail}", flush=True)


def drain():
    import numpy as np

    parts = []
    while True:
        b = from_bytes(ops.drain(1 << 16, True).numpy()).copy()  # wait for GPU spans: none left for later
        if not len(b):
            break
        parts.append(b)
    return np.concatenate(parts) if parts else from_bytes(b"")


def main() -> int:
    print(f"torch {torch.__version__}, cuda {torch.version.cuda}, {torch.cuda.get_device_name(0)}")
    standin.load()
    spec = standin.EngineSpec("cuda_engine", scale=1.3, bias=0.2, activation="tanh", num_inputs=2, num_outputs=2,
                              repeat=50, device=0)
    engine = standin.make_engine(**{f: getattr(spec, f) for f in spec.field_names()})
    xs = [torch.randn(1024, 1024, device="cuda"), torch.randn(1024, 1024, device="cuda")]
    ref = standin.reference_outputs(spec, xs)

    # The hook's own recording, as the tests do (the switch alone only counts; a session records).
    ops.set_recording(True)
    ops.set_profile_execution(True)
    outs_default = torch.ops.tensorrt.execute_engine(xs, engine)
    own = torch.cuda.Stream()
    with torch.cuda.stream(own):
        outs_own = torch.ops.tensorrt.execute_engine(xs, engine)
    own.synchronize()
    outs_cpu_in = torch.ops.tensorrt.execute_engine([x.cpu() for x in xs], engine)
    torch.cuda.synchronize()
    ops.set_profile_execution(False)
    ops.set_recording(False)
    for label, outs in (("default stream", outs_default), ("own stream", outs_own), ("cpu inputs", outs_cpu_in)):
        err = max(float((o.double() - r.double()).abs().max()) for o, r in zip(outs, ref, strict=True))
        check(f"eager CUDA engine, caller on {label}: outputs equal the reference", err < 1e-4, f"max err {err:.2e}")
    recs = drain()
    calls = recs[recs["phase"] == Phase.CALL]
    check("eager CUDA calls traced with device 0", len(calls) == 3 and set(calls["device"].tolist()) == {0},
          f"{len(calls)} calls, devices {set(calls['device'].tolist())}")

    specs = model.demo_specs(4, device=0)
    x = torch.randn(64, 256, device="cuda")
    path = model.package_model(specs, x)
    runner = model.load_package(path)
    eager = model.StandInModel(specs).eval()
    with tempfile.TemporaryDirectory() as d:
        out = f"{d}/t.json"
        with trt_trace.tracing(out):
            for _ in range(5):
                got = runner(x)
            torch.cuda.synchronize()
        from trt_trace.analysis.trace_summary import aggregate, load_events

        s = aggregate(load_events(out))
        print(trt_trace.summary(out), end="")
    err = float((got - eager(x)).abs().max())
    check("CUDA AOTInductor package equals eager", err < 1e-4, f"max err {err:.2e}")
    check("CUDA AOTInductor package: every engine traced 5 times", s.stats[:, 0].tolist() == [5] * 4,
          str(s.stats[:, 0].tolist()))
    print(f"{failures} check(s) failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
