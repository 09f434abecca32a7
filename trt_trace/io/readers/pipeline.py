"""Reading on two cores: a producer thread reads the file and parses it (native code and file
reads release the GIL), the calling thread consumes what it parsed (the call joiner, the sums, a
merge's writing) through a bounded queue, in file order. Buffers go back to the producer once
consumed, so memory is a few blocks whatever the file's size."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any

DEPTH = 3  # items in flight between the two threads

_END = object()


class Stop(Exception):
    """The consumer has stopped: the producer ends at its next put."""


class Pipe:
    """What a producer puts items into; `put` blocks while the consumer is DEPTH items behind."""

    def __init__(self) -> None:
        self.q: queue.Queue = queue.Queue(maxsize=DEPTH)
        self.stopped = threading.Event()

    def put(self, item: Any) -> None:
        while True:
            if self.stopped.is_set():
                raise Stop
            try:
                self.q.put(item, timeout=0.1)
                return
            except queue.Full:
                continue


def run(produce: Callable[[Pipe], None], consume: Callable[[Any], None], threaded: bool = True) -> None:
    """produce(pipe) puts items; consume(item) gets each, on this thread, in order. An exception on
    either side ends both and is raised here."""
    if not threaded:
        class _Direct(Pipe):
            def put(self, item: Any) -> None:
                consume(item)

        produce(_Direct())
        return
    pipe = Pipe()
    failure: list[BaseException] = []

    def producer() -> None:
        try:
            produce(pipe)
        except Stop:
            pass
        except BaseException as exc:  # handed to the consumer's thread
            failure.append(exc)
        finally:
            while True:
                try:
                    pipe.q.put(_END, timeout=0.1)
                    break
                except queue.Full:
                    if pipe.stopped.is_set():
                        try:
                            pipe.q.get_nowait()
                        except queue.Empty:
                            pass

    thread = threading.Thread(target=producer, name="trt_trace reader", daemon=True)
    thread.start()
    try:
        while True:
            item = pipe.q.get()
            if item is _END:
                break
            consume(item)
    except BaseException:
        pipe.stopped.set()
        while thread.is_alive():
            try:
                pipe.q.get(timeout=0.05)
            except queue.Empty:
                pass
        thread.join()
        raise
    thread.join()
    if failure:
        raise failure[0]
