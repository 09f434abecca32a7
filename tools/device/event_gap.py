"""How far apart back-to-back CUDA event records land on one stream (GPU side), with the stream
queued behind another stream's work (as an engine's stream is behind its caller's) and not.

    python tools/device/event_gap.py        # on a GPU machine; prints median gaps and a tiny kernel's span

It explains the constant part of "GPU span - truth" in BENCHMARKS.md: every event record on the
engine's stream between the work and a span's ends adds one such gap.
"""

from __future__ import annotations

import statistics

import torch


def timed_event() -> torch.cuda.Event:
    return torch.cuda.Event(enable_timing=True)


def run(queued: bool, n_events: int = 4, rounds: int = 50) -> None:
    busy, engine = torch.cuda.Stream(), torch.cuda.Stream()
    x = torch.ones(1024, device="cuda")
    gaps, spans = [], []
    for _ in range(rounds):
        with torch.cuda.stream(busy):
            torch.cuda._sleep(2_000_000)  # about 1 ms of work ahead
            done = torch.cuda.Event()
            done.record(busy)
        with torch.cuda.stream(engine):
            if queued:
                engine.wait_event(done)
            events = [timed_event() for _ in range(n_events)]
            for e in events:
                e.record(engine)
            k0, k1, last = timed_event(), timed_event(), timed_event()
            k0.record(engine)
            x.add_(1)
            k1.record(engine)
            last.record(engine)
        torch.cuda.synchronize()
        gaps.append([events[i].elapsed_time(events[i + 1]) * 1000 for i in range(n_events - 1)])
        spans.append((events[0].elapsed_time(last) * 1000, k0.elapsed_time(k1) * 1000))
    med = [round(statistics.median(g[i] for g in gaps), 2) for i in range(n_events - 1)]
    first_to_last = statistics.median(s[0] for s in spans)
    kernel = statistics.median(s[1] for s in spans)
    print(f"queued={queued}: back-to-back event gaps {med} us; first->last event {first_to_last:.2f} us, "
          f"tiny kernel between two events {kernel:.2f} us")


if __name__ == "__main__":
    torch.cuda.init()
    for queued in (False, True):
        run(queued)
