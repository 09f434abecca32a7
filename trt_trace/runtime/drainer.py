"""The background thread that moves records from the C++ rings to a Python writer, in batches: the
flight recorder's window. A session that writes its file as the calls come (Chrome JSON or Perfetto) is
written by the native writer thread instead (native_trace.py), which needs no GIL."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator

import numpy as np

from ..native import ops
from ..schema.records import RECORD_DTYPE, from_bytes
from .config import warn

BATCH_RECORDS = 1 << 14  # 640 KiB per drain call: the writer's transient memory stays a few MiB


class Drainer:
    """Calls `sink(records)` with every batch of records drained, on its own thread.

    It wakes every `interval_s` and drains until the rings are empty, so a ring of capacity C
    never overflows while producers write fewer than C records per interval per thread.

    Every batch is drained into one buffer allocated at the first drain, so a long run does no
    batch-sized allocations here. `sink` must therefore not keep the array it is given (the writers
    format it and let go; copy it to keep it).
    """

    def __init__(self, sink: Callable[[np.ndarray], None], interval_s: float = 0.05) -> None:
        self._sink = sink
        self._interval_s = interval_s
        self._stop = threading.Event()
        self._lock = threading.Lock()  # one drain at a time (thread loop vs. final drain)
        self._thread = threading.Thread(target=self._run, name="trt_trace-drainer", daemon=True)
        self.failed = False
        self.error = ""  # why the sink failed (one line), once failed
        self._ticks = 0
        self.wakes = 0  # times the thread woke to drain
        self.records_drained = 0  # handed to the sink, whether or not its write then succeeded
        self._buffer = None  # torch uint8 tensor of BATCH_RECORDS records, and its numpy view
        self._view = np.empty(0, dtype=np.uint8)

    def start(self) -> None:
        self._thread.start()

    def drain_once(self, wait_gpu: bool = False) -> int:
        """Drains everything pending now; returns the number of records moved."""
        total = 0
        with self._lock:
            if self.failed:
                return 0
            self._ensure_buffer()
            while True:
                n = ops.drain_into(self._buffer, wait_gpu)
                if n == 0:
                    break
                records = from_bytes(self._view[: n * RECORD_DTYPE.itemsize])
                total += len(records)
                self.records_drained += len(records)
                try:
                    self._sink(records)
                except Exception as exc:  # disk full, file removed, ...
                    self.failed = True
                    self.error = (exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)) or repr(exc)
                    warn(f"could not write the trace ({exc}); tracing continues in the table only")
                    break
        return total

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """No drain runs inside the block (the thread waits for its end): records and GPU spans stay
        in the rings meanwhile. For measurements that must tell the drainer's work apart from the
        calls' (tools/bench/bench_overhead.py); the rings must hold what the block records."""
        with self._lock:
            yield

    def discard_pending(self) -> int:
        """Drops every record the rings hold now (GPU spans waited for, so none is left pending);
        returns how many. Called before a session records, so its file holds only its own calls."""
        dropped = 0
        with self._lock:
            self._ensure_buffer()
            while (n := ops.drain_into(self._buffer, True)) > 0:
                dropped += n
        return dropped

    def _ensure_buffer(self) -> None:
        if self._buffer is None:
            import torch  # a drainer exists only once tracing started: torch is loaded

            self._buffer = torch.empty(BATCH_RECORDS * RECORD_DTYPE.itemsize, dtype=torch.uint8)
            self._view = self._buffer.numpy()

    def _run(self) -> None:
        while not self._stop.wait(self._interval_s):
            self.wakes += 1  # before the drain, which waits while held(): tests see the thread reach it
            self.drain_once()
            self._ticks += 1
            if self._ticks % 20 == 0:
                ops.sweep_engines()  # lets memory of engines that died be reused

    def stop(self) -> None:
        """Stops the thread and drains what is left, waiting for GPU spans still in flight."""
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=10)
        self.drain_once(wait_gpu=True)
