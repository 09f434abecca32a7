"""The native /metrics text is prometheus_client's, byte for byte, on the same counters: made-up counters
captured with the Python collector before the native endpoint (tests/data/prometheus_client_metrics.json),
and the live counters of real calls against that collector (tests/legacy_metrics.py). prometheus_client's
own parser reads every text."""

from __future__ import annotations

import json
import math
import random
import struct
import types
from pathlib import Path

import torch
from conftest import call_from_threads
from legacy_metrics import EngineCollector, prometheus_client_text
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.utils import floatToGoString

import trt_trace
from trt_trace import standin
from trt_trace.native import ops
from trt_trace.runtime import metrics

CAPTURED = json.loads((Path(__file__).parent / "data" / "prometheus_client_metrics.json").read_text())


def _dense(counters: dict, series: int) -> torch.Tensor:
    out = torch.zeros((len(counters["names"]), len(ops.histogram_bounds()) - 1), dtype=torch.long)
    for engine, counts in counters["histograms"][series].items():
        for bucket, n in counts:
            out[int(engine), bucket] = n
    return out


def _native_text(names: list[bytes], counters: dict) -> bytes:
    ends = torch.tensor([sum(len(n) for n in names[:i + 1]) for i in range(len(names))], dtype=torch.long)
    blob = torch.tensor(list(b"".join(names)), dtype=torch.uint8)
    return ops.metrics_text_of(blob, ends, torch.tensor(counters["stats"], dtype=torch.long), _dense(counters, 0),
                               _dense(counters, 1), counters["dropped"])


def _parsed(text: str) -> dict[str, list]:
    return {f.name: f.samples for f in text_string_to_metric_families(text)}


def test_the_native_text_of_captured_counters_is_what_prometheus_client_wrote():
    c = CAPTURED["counters"]
    native = _native_text([n.encode() for n in c["names"]], c).decode("utf-8")
    assert native == CAPTURED["text"]
    fams = _parsed(native)
    calls = {s.labels["engine"]: s.value for s in fams["trt_trace_engine_calls"]}
    assert calls["fast"] == 1500 and calls["new\nline"] == 4 and 'quote"d' in calls and "never_called" not in calls
    assert set(fams["trt_trace_engine_gpu_spans"][i].labels["engine"] for i in range(3)) == \
        {"gpu_engine", "sampled", "sampled_no_span"}


def test_the_oracle_is_the_collector_that_wrote_the_captured_text():
    c = CAPTURED["counters"]
    source = types.SimpleNamespace(
        engine_names=lambda: list(c["names"]), engine_stats=lambda: torch.tensor(c["stats"], dtype=torch.long),
        engine_histograms=lambda series: _dense(c, series), histogram_bounds=ops.histogram_bounds,
        thread_counts=lambda: torch.tensor([[1, 0, c["dropped"], 0, 1]]))
    assert prometheus_client_text(source) == CAPTURED["text"]


def test_live_text_equals_prometheus_clients_on_the_same_live_counters(tmp_path):
    ops.reset()
    engines = [standin.make_engine("live_a", host_us=30), standin.make_engine("live_b", host_us=300),
               standin.make_engine("live_a")]  # a second engine of the first one's name
    with trt_trace.tracing(str(tmp_path / "t.json")):
        for k in range(40):
            torch.ops.tensorrt.execute_engine([torch.ones(8)], engines[k % 3])
        call_from_threads(engines[1], threads=3, calls=5)
    native = metrics.text()
    assert native == prometheus_client_text()  # no call in between: the same counters
    fams = _parsed(native)
    assert {s.labels["engine"]: s.value for s in fams["trt_trace_engine_calls"]} == {"live_a": 27, "live_b": 28}
    assert EngineCollector().describe() == []


def _random_doubles(n: int) -> list[float]:
    rng = random.Random(7)
    out = [0.0, 1.0, 1e16, 1e-5, 1e-4, 1e22, 123456.7, 999999.5, 1234567.0, 10000000.0, 5e-324, 2.0**63, 1e-9,
           float("inf"), float("-inf"), -1.5, 0.1 + 0.2, 9007199254740993.0, 1.7976931348623157e308]
    for _ in range(n):
        kind = rng.randrange(4)
        if kind == 0:  # counts
            out.append(float(rng.randrange(1 << rng.randrange(1, 63))))
        elif kind == 1:  # ns as seconds
            out.append(rng.randrange(1 << rng.randrange(1, 63)) / 1e9)
        elif kind == 2:  # any positive finite double
            while True:
                d = struct.unpack("<d", struct.pack("<Q", rng.getrandbits(63)))[0]
                if math.isfinite(d):
                    out.append(d)
                    break
        else:  # short decimals
            out.append(round(rng.uniform(0, 10 ** rng.randrange(1, 20)), rng.randrange(0, 10)))
    return out


def test_every_number_is_written_as_prometheus_client_writes_it():
    values = _random_doubles(50_000)
    native = ops.metrics_sample_values(values)
    wrong = [(v, n, floatToGoString(v)) for v, n in zip(values, native, strict=True) if n != floatToGoString(v)]
    assert wrong == [], wrong[:10]


def test_a_name_that_is_not_utf8_is_replaced_and_the_text_still_reads():
    c = CAPTURED["counters"]
    names = [n.encode() for n in c["names"]]
    names[1] = b"bad\xff\xc3name"  # not UTF-8: a byte that starts nothing, a sequence cut short
    names[7] = b"bad\xff\xc3name"  # the engine that shared the first one's name shares this one
    text = _native_text(names, c).decode("utf-8")  # strict: raises on a byte left as it was
    calls = {s.labels["engine"]: s.value for s in _parsed(text)["trt_trace_engine_calls"]}
    assert calls["bad\ufffd\ufffdname"] == 1500 and calls["slow"] == 10
