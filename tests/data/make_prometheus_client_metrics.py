"""Writes prometheus_client_metrics.json: made-up counters and the /metrics text that prometheus_client
wrote for them through the Python collector trt_trace served before the native endpoint (trt_trace/metrics.py
as of commit 6db770f, read from git). tests/test_metrics_text.py holds the native text to it byte for byte.

    .venv/bin/python tests/data/make_prometheus_client_metrics.py      # from the repository root

The counters exercise what the text format can get wrong: engines that share a name, an engine never called,
names with a quote, a backslash, a newline and non-ASCII letters, GPU spans and sampled-out calls (with and
without spans), numbers that prometheus_client writes with exponents, tiny and huge durations, drops.
"""

from __future__ import annotations

import json
import random
import subprocess
import types
from pathlib import Path

import torch

import trt_trace  # the package the old module belongs to (its library is not needed)

HERE = Path(__file__).resolve().parent
SOURCE_COMMIT = "6db770f"
# Its imports, by the package's layers of today (trt_trace/native, runtime, schema).
LAYERED = {"from . import ops": "from .native import ops", "from .config ": "from .runtime.config ",
           "from .records ": "from .schema.records ", "from .trace_format ": "from .schema.trace_format "}
N_BUCKETS = (40 - 4 + 1) * 16  # csrc/stats/duration_histogram.h: kBuckets


def bucket_of(ns: int) -> int:
    v = min(ns, (1 << 40) - 1)
    shift = max(0, (v | 31).bit_length() - 1 - 4)
    return (shift << 4) + (v >> shift)


def lower_bound(b: int) -> int:
    if b < 32:
        return b
    e = b // 16 + 3
    return (16 + b % 16) << (e - 4)


# name, calls, errors, phase ns (workspace, inputs, outputs, enqueue), gpu ns, gpu spans, gpu sampled out
ENGINES = [
    ("fast", 1000, 0, (1_000_000, 2_000_000, 3_000_000, 14_000_000), 0, 0, 0),
    ("slow", 10, 2, (5_000_123, 7, 0, 1_234_567_891), 0, 0, 0),
    ('quote"d', 1, 0, (100, 200, 300, 400), 0, 0, 0),
    ("back\\slash", 2, 0, (1, 1, 1, 1), 0, 0, 0),
    ("new\nline", 4, 1, (10_000, 20_000, 30_000, 40_000), 0, 0, 0),
    ("ünïcode_引擎", 7, 0, (700, 7_000, 70_000, 700_000), 0, 0, 0),
    ("fast", 500, 3, (500_000, 1_000_000, 1_500_000, 7_000_000), 0, 0, 0),  # a second engine of that name
    ("never_called", 0, 0, (0, 0, 0, 0), 0, 0, 0),
    ("gpu_engine", 300, 0, (3_000_000, 3_000_000, 3_000_000, 30_000_000), 987_654_321, 300, 0),
    ("sampled", 80, 0, (80_000, 80_000, 80_000, 800_000), 1_234_567, 10, 70),
    ("sampled_no_span", 5, 0, (5_000, 5_000, 5_000, 50_000), 0, 0, 5),
    ("huge", 12_345_678, 123_456, (123_456_789_012_345_678, 10**17, 999_999_999_999, 2**62), 0, 0, 0),
    ("tiny", 3, 0, (1, 2, 3, 5), 0, 0, 0),
]
DROPPED = 1_234_567


def counters() -> dict:
    rng = random.Random(37)
    names = [""]
    stats = [[0] * 10]
    hists: list[dict[int, dict[int, int]]] = [{}, {}]
    for i, (name, calls, errors, phases, gpu_ns, spans, sampled_out) in enumerate(ENGINES, start=1):
        names.append(name)
        stats.append([calls, errors, sum(phases), *phases, gpu_ns, spans, sampled_out])
        for series, n in ((0, calls), (1, spans)):
            counts: dict[int, int] = {}
            if n > 5000:  # the huge engine: its calls in a few buckets
                for b, share in ((200, 0.5), (333, 0.3), (N_BUCKETS - 1, 0.2)):
                    counts[b] = counts.get(b, 0) + int(n * share)
            else:
                for _ in range(n):  # durations log-uniform from 100 ns to 100 s
                    b = bucket_of(int(10 ** rng.uniform(2, 11)))
                    counts[b] = counts.get(b, 0) + 1
            if counts:
                hists[series][i] = counts
    return {"names": names, "stats": stats, "histograms": [{str(k): sorted(v.items()) for k, v in h.items()}
                                                           for h in hists], "dropped": DROPPED}


def dense(c: dict, series: int) -> torch.Tensor:
    out = torch.zeros((len(c["names"]), N_BUCKETS), dtype=torch.long)
    for engine, counts in c["histograms"][series].items():
        for b, n in counts:
            out[int(engine), b] = n
    return out


def prometheus_client_text(c: dict) -> str:
    from prometheus_client import CollectorRegistry, generate_latest

    source = subprocess.run(["git", "show", f"{SOURCE_COMMIT}:trt_trace/metrics.py"], cwd=HERE, check=True,
                            capture_output=True, text=True).stdout
    module = types.ModuleType("trt_trace.metrics_before_native")
    module.__package__ = "trt_trace"
    for before_name, now_name in LAYERED.items():  # that commit's imports, by the package's layers of today
        source = source.replace(before_name, now_name)
    exec(compile(source, "metrics.py@" + SOURCE_COMMIT, "exec"), module.__dict__)
    module.ops = types.SimpleNamespace(  # the counters above in place of the live ones
        engine_names=lambda: list(c["names"]),
        engine_stats=lambda: torch.tensor(c["stats"], dtype=torch.long),
        engine_histograms=lambda series: dense(c, series),
        histogram_bounds=lambda: [lower_bound(b) for b in range(N_BUCKETS + 1)],
        thread_counts=lambda: torch.tensor([[1, 0, c["dropped"] - 1000, 0, 1], [2, 0, 1000, 0, 0]]),
    )
    registry = CollectorRegistry(auto_describe=False)
    registry.register(module.EngineCollector())
    return generate_latest(registry).decode()


def main() -> None:
    from importlib.metadata import version

    c = counters()
    out = {"made_by": f"tests/data/{Path(__file__).name} (trt_trace/metrics.py of {SOURCE_COMMIT}, "
                      f"prometheus_client {version('prometheus_client')})",
           "counters": c, "text": prometheus_client_text(c)}
    assert trt_trace  # the package the old module belongs to is imported
    (HERE / "prometheus_client_metrics.json").write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
