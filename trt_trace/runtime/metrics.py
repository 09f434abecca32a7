"""Live metrics in Prometheus' text format at /metrics, from the per-engine counters and duration
histograms that every counted call updates (no per-call Python, no trace file needed).

    TRT_TRACE_METRICS_PORT=9400 python serve.py        # curl 127.0.0.1:9400/metrics

Served by a native thread of the tracer library (csrc/metrics: a small HTTP/1.1 server that formats
the text in C++ at each scrape), so a scrape never waits for the GIL: a busy serving loop answers
as fast as an idle one. This module only starts, asks and stops it. Metrics need counting: serving
turns the switch (set_profile_execution) on, and a tracing session that stops later leaves it on
while metrics are served.
"""

from __future__ import annotations

import socket

from ..native import ops
from .config import MetricsSettings

_OFF, _WAITING, _SERVING = 0, 1, 2  # csrc/metrics/metrics_server.h ServerState


def serving() -> bool:
    """Whether this process serves metrics, or will from its first engine call (TRT_TRACE_METRICS_PORT);
    a session that stops then leaves counting on."""
    return ops.metrics_status()[0] != _OFF


def address() -> tuple[str, int] | None:
    """(host, port) the metrics are served on, None when not serving (yet)."""
    state, host, port, _, _ = ops.metrics_status()
    return (host, port) if state == _SERVING else None


def serve(settings: MetricsSettings) -> tuple[str, int]:
    """Serves /metrics now and turns counting on; returns the (host, port) bound, where it already
    serves the address served. Raises OSError for a busy port or an address that cannot be bound
    (socket.gaierror for one that does not resolve)."""
    ops.set_profile_execution(True)
    state, host, port, error, message = ops.serve_metrics(settings.addr, settings.port)
    if state != _SERVING:
        if error < 0:  # getaddrinfo's code, as Python's socket module reports it
            raise socket.gaierror(error, message)
        raise OSError(error, message)
    return host, port


def serve_when_engines_run(settings: MetricsSettings, quiet: bool = False) -> None:
    """The TRT_TRACE_METRICS_PORT start-up path: counting on now, the server from this process's first
    engine call on. Processes that inherit the variable but run no engine (a torchrun launcher, compile
    and data loader workers) then never take the port from the one that does. The native side knows
    the first call (no polling): its thread binds then and writes the "metrics at" line, or one line
    saying why it cannot serve, itself."""
    ops.set_profile_execution(True)
    ops.serve_metrics_from_first_engine(settings.addr, settings.port, quiet)


def text() -> str:
    """The text a scrape gets now (tests; a scrape is answered by the native thread alone)."""
    return ops.metrics_text()


def stop() -> None:
    """Stops serving: socket and connections closed, the thread joined (tests; a served process
    normally serves until it exits, where the library stops it before its statics go)."""
    ops.stop_metrics()
