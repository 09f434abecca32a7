"""The native metrics endpoint's HTTP, over real sockets on 127.0.0.1: GET and HEAD of /metrics, what
any other request gets, a slow client that holds up nobody and is dropped in bounded time, serve_metrics'
errors, stopping and serving again, and a forked child that leaves the port to its parent."""

from __future__ import annotations

import errno
import socket
import time

import pytest
import torch
from conftest import run_python
from prometheus_client.parser import text_string_to_metric_families

import trt_trace
from trt_trace import standin
from trt_trace.runtime import metrics


@pytest.fixture
def served():
    host, port = trt_trace.serve_metrics(0)
    yield host, port
    metrics.stop()


def _exchange(port: int, request: bytes, timeout: float = 5) -> tuple[str, dict[str, str], bytes]:
    """Sends `request` whole, reads to the server's close: (status line, headers, body)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(request)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    status, *lines = head.decode().split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines)
    assert int(headers["Content-Length"]) == len(body) or not body
    return status, headers, body


def test_get_and_head_of_metrics(served):
    host, port = served
    assert host == "127.0.0.1" and port > 0
    e = standin.make_engine("endpoint_engine")
    for _ in range(3):
        torch.ops.tensorrt.execute_engine([torch.ones(8)], e)
    status, headers, body = _exchange(port, b"GET /metrics HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip\r\n\r\n")
    assert status == "HTTP/1.1 200 OK"
    assert headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
    assert headers["Connection"] == "close" and int(headers["Content-Length"]) == len(body)
    assert body.decode() == metrics.text()
    calls = [s for f in text_string_to_metric_families(body.decode()) for s in f.samples
             if s.name == "trt_trace_engine_calls_total" and s.labels["engine"] == "endpoint_engine"]
    assert [s.value for s in calls] == [3]
    status, headers, head_body = _exchange(port, b"HEAD /metrics HTTP/1.0\r\n\r\n")
    assert (status, head_body, int(headers["Content-Length"])) == ("HTTP/1.1 200 OK", b"", len(body))
    assert _exchange(port, b"GET /metrics?name[]=x HTTP/1.1\n\n")[2] == body  # a query is ignored; bare newlines


@pytest.mark.parametrize(("request_bytes", "status"), [
    (b"GET / HTTP/1.1\r\n\r\n", "404 Not Found"),
    (b"GET /metricsx HTTP/1.1\r\n\r\n", "404 Not Found"),
    (b"POST /metrics HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc", "405 Method Not Allowed"),
    (b"hello\r\n\r\n", "400 Bad Request"),
    (b"GET /metrics HTTP/2.0\r\n\r\n", "400 Bad Request"),
    (b"GET /metrics HTTP/1.1\r\nX: " + b"y" * 9000 + b"\r\n\r\n", "431 Request Header Fields Too Large"),
])
def test_any_other_request_gets_one_status_and_the_connection_closed(served, request_bytes, status):
    got, headers, body = _exchange(served[1], request_bytes)
    assert got == "HTTP/1.1 " + status and headers["Connection"] == "close"
    assert body == (status + "\n").encode()
    if status.startswith("405"):
        assert headers["Allow"] == "GET, HEAD"


def test_slow_clients_hold_up_no_scrape_and_are_dropped_in_bounded_time(served):
    port = served[1]
    slow = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(10)]
    try:
        for i, s in enumerate(slow):
            if i % 2:
                s.sendall(b"GET /metr")  # half a request, never finished; the others send nothing
        t0 = time.monotonic()
        assert _exchange(port, b"GET /metrics HTTP/1.1\r\n\r\n")[0] == "HTTP/1.1 200 OK"
        assert time.monotonic() - t0 < 1.0
        for s in slow:  # each is closed by the server once its exchange time (5 s) is up
            assert s.recv(100) == b""
        assert time.monotonic() - t0 < 8.0
    finally:
        for s in slow:
            s.close()


def test_serving_twice_gives_the_address_served_and_errors_are_oserrors(served):
    assert trt_trace.serve_metrics(0) == served  # already serving: where it serves
    metrics.stop()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        with pytest.raises(OSError) as busy:
            trt_trace.serve_metrics(taken.getsockname()[1])
    assert busy.value.errno == errno.EADDRINUSE and busy.value.strerror == "Address already in use"
    with pytest.raises(OSError) as foreign:
        trt_trace.serve_metrics(0, addr="192.0.2.1")  # TEST-NET-1: an address of no interface here
    assert foreign.value.errno == errno.EADDRNOTAVAIL
    assert not metrics.serving()


def test_stop_closes_the_port_and_serving_starts_again(served):
    port = served[1]
    metrics.stop()
    assert not metrics.serving() and metrics.address() is None
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
    assert trt_trace.serve_metrics(port) == ("127.0.0.1", port)  # the same port, free again at once
    assert _exchange(port, b"GET /metrics HTTP/1.1\r\n\r\n")[0] == "HTTP/1.1 200 OK"


FORK = r"""
import os, socket, sys, time, trt_trace, warnings
# Python 3.12+ warns at every fork of a process with threads (here the metrics thread); this test is about
# the port, and its stderr must otherwise stay empty.
warnings.filterwarnings("ignore", r"This process .* is multi-threaded", DeprecationWarning)
from trt_trace.runtime import metrics
host, port = trt_trace.serve_metrics(0)
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.write(w, b"child serving=%d\n" % metrics.serving())
    time.sleep(30)  # alive, with whatever it kept of its parent's sockets
    os._exit(0)
print(os.read(r, 100).decode().strip())
metrics.stop()
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((host, port))  # EADDRINUSE if the child still held the listening socket
s.listen()
print("port free")
os.kill(pid, 9)
os.waitpid(pid, 0)
"""


def test_a_forked_child_serves_nothing_and_leaves_the_port_to_its_parent():
    proc = run_python(FORK)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "child serving=0\nport free\n", "")
