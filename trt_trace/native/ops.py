"""Typed Python access to torch.ops.trt_trace (loads the library on first use)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import orjson

from . import _library

if TYPE_CHECKING:
    import torch


def _op(name: str):
    # torch is imported here, not at module import: the start-up hook imports this package in
    # every process that has TRT_TRACE_OUT set, and must not make them all import torch.
    import torch

    _library.load()
    return getattr(torch.ops.trt_trace, name)


V = TypeVar("V", bool, int)


def _setting(set_op: str, get_op: str, kind: Callable[[Any], V],
             doc: str = "") -> tuple[Callable[[V], None], Callable[[], V]]:
    """The setter and getter of one native setting (ops set_op and get_op), the value a `kind` both ways;
    `doc`: the setter's docstring."""

    def set_(value: V) -> None:
        _op(set_op)(kind(value))

    def get() -> V:
        return kind(_op(get_op)())

    set_.__name__, get.__name__ = set_op.lstrip("_"), get_op.lstrip("_")
    set_.__qualname__, get.__qualname__ = set_.__name__, get.__name__
    set_.__doc__, get.__doc__ = doc or None, f"The value {set_.__name__} sets."
    return set_, get


set_profile_execution, get_profile_execution = _setting("set_profile_execution", "get_profile_execution", bool)
set_recording, get_recording = _setting(
    "_set_recording", "_get_recording", bool,
    "A session's switch: traced calls also go into the rings (a fresh epoch each time it goes on).")


def dump_engine_timing() -> str:
    return str(_op("dump_engine_timing")())


LIVE_PERCENTILES = ("total", "gpu")  # the durations the hot path keeps histograms of


def timing_table(percentiles_of: str = "total", json: bool = False) -> str:
    """The live table; its p50/p99 are of the call's total or of its GPU span (LIVE_PERCENTILES),
    from the histograms (within 3.1%); json=True: the same table as one JSON object."""
    if percentiles_of not in LIVE_PERCENTILES:
        raise ValueError(f"live percentiles are kept of the call's total and of its GPU span, not of "
                         f"{percentiles_of!r}: give 'total' or 'gpu', or summarise a trace file for a host phase")
    return str(_op("timing_table")(percentiles_of, bool(json)))


def engine_histograms(series: int) -> torch.Tensor:
    """int64 [engine ids, buckets]: the live duration histograms, series 0 of the call's total, 1 of
    its GPU span (csrc/stats/duration_histogram.h), counted since the last reset()."""
    return _op("_engine_histograms")(int(series))


def histogram_bounds() -> list[int]:
    """The histogram buckets' lower bounds in ns, then the last bucket's upper bound."""
    return list(_op("_histogram_bounds")())


def set_nvtx(enable: bool) -> bool:
    """NVTX ranges for traced calls on/off; returns False where NVTX was not compiled in."""
    return bool(_op("set_nvtx")(bool(enable)))


def get_nvtx() -> bool:
    return bool(_op("get_nvtx")())


def reset() -> None:
    _op("reset")()


def drain(max_records: int, wait_gpu: bool = False) -> torch.Tensor:
    """Raw records (uint8 tensor) drained from every ring, GPU spans resolved so far included.
    wait_gpu=True waits for every pending GPU span (the final drain only)."""
    return _op("_drain")(int(max_records), bool(wait_gpu))


def drain_into(out: torch.Tensor, wait_gpu: bool = False) -> int:
    """Like drain(), into `out` (a contiguous CPU uint8 tensor, reused by the drainer); returns the
    number of records written at its start."""
    return int(_op("_drain_into")(out, bool(wait_gpu)))


def layer_report() -> dict:
    """What the layer windows of this session did, per engine (csrc/layers/layer_window.h report_json)."""
    return orjson.loads(_op("_layer_report")())


def layer_names() -> list[str]:
    """Every interned layer name, by the id layer records carry in their `stream` field."""
    return list(_op("_layer_names")())


def layer_private_folder() -> str:
    """The folder the runtime writes its profile files into now ("" when there is none)."""
    return str(_op("_layer_private_folder")())


def parse_layer_trace(text: str) -> tuple[list[str], list[int]]:
    """(names, ns) of a layer trace as Torch-TensorRT's profiler writes it; RuntimeError if it is not one."""
    names, ns = _op("_parse_layer_trace")(text)
    return list(names), list(ns)


def set_gpu_timing(enable: bool) -> bool:
    """GPU spans (CUDA events) for traced CUDA calls on/off; returns False in a CPU-only build."""
    return bool(_op("set_gpu_timing")(bool(enable)))


def get_gpu_timing() -> bool:
    return bool(_op("get_gpu_timing")())


set_gpu_every, get_gpu_every = _setting(
    "set_gpu_every", "get_gpu_every", int,
    """GPU events on every nth traced CUDA call of each engine (counted per calling thread), 1: every
    call; raises RuntimeError for n outside 1..2**20.""")
set_engine_stream_spans, get_engine_stream_spans = _setting(
    "_set_engine_stream_spans", "_get_engine_stream_spans", bool,
    "Whether GPU spans may move to an engine's own stream (see csrc/hook/engine_stream_trace.h).")


def gpu_stream_trace_installed() -> bool:
    """Whether c10's GPU trace reports event records and waits to trt_trace, so that calls of engines that
    run on a stream of their own get spans of that stream (see README, GPU time)."""
    return bool(_op("_gpu_stream_trace_installed")())


set_caller_wait_every, get_caller_wait_every = _setting(
    "set_caller_wait_every", "get_caller_wait_every", int,
    """Where an engine runs on a stream of its own: 1 in n of its measured calls (per calling thread,
    from the first of a session on) also get a `caller stream wait` span, the others record the engine
    stream's events only (1: every measured call gets both; see README, GPU time). n outside 1 to
    1048576 raises RuntimeError and the value stays. A session sets it from TRT_TRACE_CALLER_WAIT_EVERY.""")


def gpu_event_host_ns(device: int = 0, calls: int = 1000, every: int = 1, hand_off: bool | int = False,
                      kernels: int = 0, scrub_kib: int = 0) -> float:
    """Benchmark support: host ns per traced call spent on its GPU events alone (start and end event
    recorded on `device`'s current stream, then handed back), averaged over `calls` of which 1 in
    `every` gets events by the hook's sampling decision (TRT_TRACE_GPU_EVERY); -1.0 where no event can
    be recorded (CPU-only build, no such device, every < 1). hand_off: each call hands its work to a
    stream of its own and back, as the 2.11 runtime does (so a measured call records four events),
    through two c10 events kept for all calls (True or 1) or made and destroyed by each call as the
    runtime's are (2); kernels=K: each call launches K small kernels as its engine's work;
    scrub_kib=S: S KiB written between calls, evicting the caches as a real call's other work does.
    With any of these, the figure is the difference to the same calls untraced."""
    return float(_op("_gpu_event_host_ns")(int(device), int(calls), int(every), int(hand_off), int(kernels),
                                           int(scrub_kib)))


GPU_SELF_STEPS = ("begin", "engine start", "engine end", "end")  # csrc/hook/gpu_self_time.h SelfStep, in order


def gpu_self_time(enable: bool) -> dict[str, tuple[int, int]]:
    """Benchmark support: switches the timing of GPU timing's own steps on the calling threads on or
    off, and returns what was timed since the last call, per step (GPU_SELF_STEPS: the capture check
    and start event, the engine stream's start and end events, the end event): (ns in all, times run).
    Off by default; on, each step reads the clock twice."""
    v = [int(n) for n in _op("_gpu_self_time")(bool(enable))]
    k = len(GPU_SELF_STEPS)
    return {step: (v[i], v[k + i]) for i, step in enumerate(GPU_SELF_STEPS)}


def gpu_clock_stats() -> dict[str, float]:
    """How GPU times were placed on the host clock: anchors made, the largest distance of an anchor from
    the clock line through the two before it (ns: the placement error that remains), the last one,
    the last anchor's record->sync window (ns), the GPU clock's rate difference (ppm) and the median and
    99th percentile of the anchors' distances from the line (ns)."""
    return {str(k): float(v) for k, v in _op("gpu_clock_stats")().items()}


def pending() -> int:
    return int(_op("_pending")())


def thread_counts() -> torch.Tensor:
    """int64 [threads, 6]: thread id, produced, dropped (events), capacity, alive, dropped calls."""
    return _op("_thread_counts")()


def reset_thread_counts() -> None:
    """Restarts the per-thread produced/dropped counts (each session reports its own)."""
    _op("_reset_thread_counts")()


def serve_metrics(addr: str, port: int) -> tuple[int, str, int, int, str]:
    """Binds the metrics endpoint now (csrc/metrics): (state, host, port, errno, message); state 2: serving."""
    state, host, bound, error, message = _op("_serve_metrics")(str(addr), int(port))
    return int(state), str(host), int(bound), int(error), str(message)


def serve_metrics_from_first_engine(addr: str, port: int, quiet: bool) -> None:
    """The endpoint from the first engine call on; its thread writes the "metrics at" line (unless quiet)."""
    _op("_serve_metrics_from_first_engine")(str(addr), int(port), bool(quiet))


def metrics_status() -> tuple[int, str, int, int, str]:
    """(state, host, port, 0, ""): state 0 off, 1 waiting for the first engine call, 2 serving."""
    state, host, port, error, message = _op("_metrics_status")()
    return int(state), str(host), int(port), int(error), str(message)


def stop_metrics() -> None:
    _op("_stop_metrics")()


def metrics_text() -> str:
    """The exposition text a scrape gets now."""
    return str(_op("_metrics_text")())


def metrics_text_of(name_bytes: torch.Tensor, name_ends: torch.Tensor, stats: torch.Tensor, hist_total: torch.Tensor,
                    hist_gpu: torch.Tensor, dropped: int) -> bytes:
    """Test op: the exposition text of the counters given (names as UTF-8 bytes and end offsets)."""
    out = _op("_metrics_text_of")(name_bytes, name_ends, stats, hist_total, hist_gpu, int(dropped))
    return out.numpy().tobytes()


def metrics_sample_values(values: list[float]) -> list[str]:
    """Test op: each value as the metrics text writes a sample's number."""
    return str(_op("_metrics_sample_values")([float(v) for v in values])).splitlines()


def engine_names() -> list[str]:
    return list(_op("_engine_names")())


def engine_stats() -> torch.Tensor:
    """int64 [engine ids, len(records.STATS_COLUMNS)]: the live counters since the last reset()."""
    return _op("_engine_stats")()


def stats_columns() -> list[str]:
    """The names of engine_stats()'s columns as C++ has them (records.STATS_COLUMNS must agree)."""
    return list(_op("_stats_columns")())


def scaled_gpu_ns(stats: torch.Tensor) -> torch.Tensor:
    """Each row's GPU ns (records.STATS_COLUMNS rows) scaled to all its CUDA calls, as the tables
    scale it: the measured spans' mean times measured + sampled-out calls (int64 [rows])."""
    return _op("_scaled_gpu_ns")(stats)


def format_timing_table(names: list[str], stats: torch.Tensor, dropped: int = 0, threads_with_drops: int = 0,
                        percentiles: torch.Tensor | None = None, all_percentiles: tuple[int, int] = (-1, -1),
                        percentiles_of: str = "total", json: bool = False, gpu_every: int = 1) -> str:
    """The table of numbers aggregated elsewhere (a trace file); percentiles: int64 [len(names), 2]
    p50 and p99 in ns (-1: none), all_percentiles over every call; gpu_every: the GPU-timing sampling
    the figures were taken with (the note under the table)."""
    return str(_op("_format_timing_table")(names, stats, int(dropped), int(threads_with_drops), percentiles,
                                          int(all_percentiles[0]), int(all_percentiles[1]), percentiles_of,
                                          bool(json), int(gpu_every)))


class FormatBuffer:
    """The byte buffer a writer lends the formatters below, batch after batch (replaced by a larger
    one when a batch needs more): a long trace then formats without batch-sized allocations."""

    def __init__(self) -> None:
        self.tensor: torch.Tensor | None = None

    def take(self, result: tuple[torch.Tensor, int]) -> memoryview:
        """Keeps the formatter's buffer; the formatted bytes (valid until the buffer's next use)."""
        self.tensor, n = result
        return self.tensor.numpy().data[: int(n)]


def chrome_json_events(records, tids, pid: int, engine_json: list[str], flows: bool,
                       buffer: FormatBuffer | None = None) -> memoryview:
    """Chrome JSON text (comma-separated events) of a record batch; tids: the track of each record;
    buffer: the caller's, reused (the text is valid until its next use)."""
    import torch  # heavy: kept out of this module's import (the reading verbs import it)

    raw = torch.from_numpy(np.ascontiguousarray(records).view(np.uint8).reshape(-1))
    buffer = buffer or FormatBuffer()
    return buffer.take(_op("_chrome_json_events")(raw, torch.from_numpy(np.ascontiguousarray(tids, dtype=np.int64)),
                                                 int(pid), engine_json, bool(flows), buffer.tensor))


def perfetto_slice_packets(records, track_uuids, seq_id: int, annotation_iids: list[int], flows: bool,
                           buffer: FormatBuffer | None = None) -> memoryview:
    """Framed Perfetto TracePackets (SLICE_BEGIN/SLICE_END) of a record batch, ready to append to a
    trace file; track_uuids: the track of each record; annotation_iids: see csrc/format/perfetto_slices.h;
    buffer: as for chrome_json_events."""
    import torch  # heavy: kept out of this module's import (the reading verbs import it)

    raw = torch.from_numpy(np.ascontiguousarray(records).view(np.uint8).reshape(-1))
    uuids = torch.from_numpy(np.ascontiguousarray(track_uuids, dtype=np.int64))
    buffer = buffer or FormatBuffer()
    return buffer.take(_op("_perfetto_slice_packets")(raw, uuids, int(seq_id), list(annotation_iids), bool(flows),
                                                     buffer.tensor))


def layer_json_events(records, tids, pid: int, engine_json: list[str], layer_json: list[str],
                      buffer: FormatBuffer | None = None) -> memoryview:
    """Chrome JSON text of a batch of layer records (csrc/ops/layer_format.cpp); layer_json: every
    layer name as a JSON string literal, by layer id."""
    import torch  # heavy: kept out of this module's import (the reading verbs import it)

    raw = torch.from_numpy(np.ascontiguousarray(records).view(np.uint8).reshape(-1))
    buffer = buffer or FormatBuffer()
    return buffer.take(_op("_layer_json_events")(raw, torch.from_numpy(np.ascontiguousarray(tids, dtype=np.int64)),
                                                int(pid), engine_json, layer_json, buffer.tensor))


def layer_perfetto_packets(records, track_uuids, seq_id: int, annotation_iids: list[int], name_iid_base: int,
                           buffer: FormatBuffer | None = None) -> memoryview:
    """Framed Perfetto packets of a batch of layer records (csrc/ops/layer_format.cpp)."""
    import torch  # heavy: kept out of this module's import (the reading verbs import it)

    raw = torch.from_numpy(np.ascontiguousarray(records).view(np.uint8).reshape(-1))
    uuids = torch.from_numpy(np.ascontiguousarray(track_uuids, dtype=np.int64))
    buffer = buffer or FormatBuffer()
    return buffer.take(_op("_layer_perfetto_packets")(raw, uuids, int(seq_id), list(annotation_iids),
                                                     int(name_iid_base), buffer.tensor))


def perfetto_field_numbers() -> dict[str, tuple[int, int]]:
    """The proto field numbers and enum values the C++ encoders use (csrc/format/perfetto_fields.h), by proto
    name: (number, the wire type it is written with; -1 for an enum value), for the test against the descriptors."""
    names, numbers, wires = _op("_perfetto_field_numbers")()
    return {name: (number, wire) for name, number, wire in zip(names, numbers, wires, strict=True)}


# -- the session (csrc/session/session_control.h): one start, one stop -------------------------------

SESSION_STATES = ("idle", "recording", "stopping")  # the flight recorder is a mode of recording
START_REFUSED = {1: "not idle", 2: "bad settings", 3: "no ring", 4: "cannot write"}  # _session_start's codes


@functools.cache
def gpu_timing_built() -> bool:
    """Whether this build of the library has GPU timing (a CUDA build): a fact of the build, not a switch."""
    return bool(_op("_gpu_timing_built")())


def session_start(settings: dict[str, int | bool], path: str, fmt: str, lazy: bool, max_bytes: int, split: bool,
                  pid: int, head: bytes, process_name: str = "", start_ns: int = 0, flight_s: float = 0.0,
                  flight_memory_bytes: int = 0, take_sigusr1: bool = False) -> tuple[int, str, dict[str, bool]]:
    """Starts a session in one op: the C++ settings by name (config.Settings.native(), checked whole against
    the C++ table), then the writer (as writer_start takes it). Returns (refused, message, available):
    refused 0 started, else a START_REFUSED code with its one line (nothing started); available: whether GPU
    timing and NVTX are compiled in. take_sigusr1 (flight mode): SIGUSR1 dumps the window, taken natively."""
    refused, message, gpu, nvtx = _op("_session_start")(
        {str(k): int(v) for k, v in settings.items()}, str(path), str(fmt), bool(lazy), int(max_bytes), bool(split),
        int(pid), _byte_tensor(head), str(process_name), int(start_ns), float(flight_s), int(flight_memory_bytes),
        bool(take_sigusr1))
    return int(refused), str(message), {"gpu_timing": bool(gpu), "nvtx": bool(nvtx)}


def session_stop(keep_counting: bool, exit_dump: bool) -> tuple[str, bool, list[str], int, float, bool]:
    """Stops the session in one op and ends its file (the end record built natively): (failure, end written
    after a failure, the exit dump's paths, calls, held_s, capped). RuntimeError when no session records."""
    failure, end_written, paths, calls, held_s, capped = _op("_session_stop")(bool(keep_counting), bool(exit_dump))
    return str(failure), bool(end_written), list(paths), int(calls), float(held_s), bool(capped)


def session_set_layers(n: int) -> None:
    """Per-layer timing in the recording session from now on (RuntimeError when idle or out of range)."""
    _op("_session_set_layers")(int(n))


def session_state() -> tuple[str, bool]:
    """(one of SESSION_STATES, whether in flight mode)."""
    state, flight = _op("_session_state")()
    return str(state), bool(flight)


def session_forked() -> None:
    """In a forked child: the parent's writer, drain and layer state forgotten, its session dropped (idle)."""
    _op("_session_forked")()


def settings_table() -> list[tuple[str, str, int, int]]:
    """The C++ settings table (csrc/session/session_control.h kSettings): (name, "bool" or "int", least, most)."""
    names, kinds, mins, maxs = _op("_settings_table")()
    return [(str(n), "bool" if k == 0 else "int", int(lo), int(hi)) for n, k, lo, hi in zip(names, kinds, mins, maxs,
                                                                                            strict=True)]


def session_switches() -> dict[str, int]:
    """The C++ settings a session changes, by name, as they are now."""
    return {str(k): int(v) for k, v in _op("_native_settings")().items()}


def set_buffer_capacity(records: int) -> None:
    _op("_set_buffer_capacity")(int(records))


def buffer_capacity() -> int:
    return int(_op("_buffer_capacity")())


def sweep_engines() -> int:
    return int(_op("_sweep_engines")())


def clock_now_ns() -> int:
    return int(_op("_clock_now_ns")())


def parse_engine_name(text: str) -> str:
    return str(_op("_parse_engine_name")(text))


def push_synthetic(count: int, engine_id: int, first_seq: int) -> None:
    _op("_push_synthetic")(int(count), int(engine_id), int(first_seq))


def record_layout() -> list[str]:
    """Every record kind's size and fields as C++ defines them (csrc/common/record.h), in
    trt_trace.schema.records.layout()'s form."""
    return [str(x) for x in _op("_record_layout")()]


# -- the native writer (csrc/session/native_writer.h): control only --------------------------------


def _byte_tensor(data: bytes) -> torch.Tensor:
    """Encoded bytes for an op's Tensor argument (a uint8 view of a copy)."""
    import torch  # heavy: kept out of this module's import (the reading verbs import it)

    return torch.frombuffer(bytearray(data), dtype=torch.uint8) if data else torch.empty(0, dtype=torch.uint8)


def writer_flight_dump(trigger: str, now_ns: int) -> tuple[list[str], int, int, float, bool, int, str]:
    """The flight recorder's dump of its window at now_ns: (paths, number, calls, held_s, capped,
    events_not_written, line). RuntimeError with "[Errno N] ..." where its file cannot be written."""
    paths, number, calls, held_s, capped, not_written, line = _op("_writer_flight_dump")(str(trigger), int(now_ns))
    return list(paths), int(number), int(calls), float(held_s), bool(capped), int(not_written), str(line)


def writer_flight_add(records: torch.Tensor, now_ns: int) -> None:
    """A batch of records (uint8) into the flight recorder's window as a drain at now_ns (tests)."""
    _op("_writer_flight_add")(records, int(now_ns))


def flight_line(trigger: str, path: str, calls: int, window_s: float, held_s: float, capped: bool,
                memory_bytes: int) -> str:
    """The one line a flight dump prints."""
    return str(_op("_flight_line")(str(trigger), str(path), int(calls), float(window_s), float(held_s), bool(capped),
                                   int(memory_bytes)))


def writer_drain(wait_gpu: bool = False, discard: bool = False) -> int:
    return int(_op("_writer_drain")(bool(wait_gpu), bool(discard)))


def writer_hold(held: bool) -> None:
    _op("_writer_hold")(bool(held))


WRITER_COUNTS = ("records_drained", "events_written", "events_not_written", "bytes_written", "max_bytes", "wakes",
                 "created", "failed", "running", "records_held", "records_let_go", "dumps")


def writer_formats() -> list[str]:
    """The formats the native writer writes, as their files registered them (csrc/session/trace_format.h)."""
    return [str(name) for name in _op("_writer_formats")()]


def writer_status() -> dict[str, object]:
    counts, paths, error, in_use = _op("_writer_status")()
    status: dict[str, object] = dict(zip(WRITER_COUNTS, (int(c) for c in counts), strict=True))
    status.update(paths=list(paths), error=str(error), in_use=str(in_use))
    return status


def writer_abandon() -> None:
    _op("_writer_abandon")()


def json_trace_from_records(path: str, records: torch.Tensor, batch: int, pid: int, gpu_flows: bool,
                            process_head: bytes, engine_names: list[str], layer_names: list[str], max_bytes: int,
                            split: bool, end_args_json: bytes) -> tuple[int, int, list[str]]:
    """The native writer's JSON trace of given records in batches of `batch` (tests; see session_ops.cpp)."""
    written, not_written, paths = _op("_json_trace_from_records")(
        str(path), records, int(batch), int(pid), bool(gpu_flows), process_head.decode(), list(engine_names),
        list(layer_names), int(max_bytes), bool(split), end_args_json.decode())
    return int(written), int(not_written), list(paths)


def perfetto_trace_from_records(path: str, records: torch.Tensor, batch: int, pid: int, gpu_flows: bool,
                                process_name: str, start_annotations: bytes, start_ns: int, engine_names: list[str],
                                layer_names: list[str], max_bytes: int, split: bool, end_annotations: bytes,
                                end_ns: int, clocks: list[int]) -> tuple[int, int, list[str]]:
    """The native writer's Perfetto trace of given records in batches of `batch`, its clock snapshots at
    `clocks` (boottime, monotonic, realtime; [] reads them) (tests; see session_ops.cpp)."""
    written, not_written, paths = _op("_perfetto_trace_from_records")(
        str(path), records, int(batch), int(pid), bool(gpu_flows), str(process_name), _byte_tensor(start_annotations),
        int(start_ns), list(engine_names), list(layer_names), int(max_bytes), bool(split),
        _byte_tensor(end_annotations), int(end_ns), [int(c) for c in clocks])
    return int(written), int(not_written), list(paths)
