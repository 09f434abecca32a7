"""The background thread that moves records from the C++ rings to a writer, in batches."""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np

from . import ops
from .config import warn
from .records import from_bytes

BATCH_RECORDS = 1 << 14  # 640 KiB per drain call: the writer's transient memory stays a few MiB


class Drainer:
    """Calls `sink(records)` with every batch of records drained, on its own thread.

    It wakes every `interval_s` and drains until the rings are empty, so a ring of capacity C
    never overflows while producers write fewer than C records per interval per thread.
    """

    def __init__(self, sink: Callable[[np.ndarray], None], interval_s: float = 0.05) -> None:
        self._sink = sink
        self._interval_s = interval_s
        self._stop = threading.Event()
        self._lock = threading.Lock()  # one drain at a time (thread loop vs. final drain)
        self._thread = threading.Thread(target=self._run, name="trt_trace-drainer", daemon=True)
        self.failed = False
        self._ticks = 0

    def start(self) -> None:
        self._thread.start()

    def drain_once(self, wait_gpu: bool = False) -> int:
        """Drains everything pending now; returns the number of records moved."""
        total = 0
        with self._lock:
            if self.failed:
                return 0
            while True:
                raw = ops.drain(BATCH_RECORDS, wait_gpu)
                records = from_bytes(raw.numpy())
                if len(records) == 0:
                    break
                total += len(records)
                try:
                    self._sink(records)
                except Exception as exc:  # disk full, file removed, ...
                    self.failed = True
                    warn(f"could not write the trace ({exc}); tracing continues in the table only")
                    break
                if len(records) < BATCH_RECORDS:
                    break
        return total

    def _run(self) -> None:
        while not self._stop.wait(self._interval_s):
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
