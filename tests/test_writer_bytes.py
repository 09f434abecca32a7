"""No behaviour change in the writers: the same records give the same bytes, in both formats, as the writers
wrote before the track book took over their lanes and tracks (c747573; `python tests/fixed_trace.py` run
against that tree's install printed these digests)."""

from __future__ import annotations

import hashlib

import fixed_trace

BEFORE = {
    "fixed.json": (26347, "03c967d6b6bc2b647ba3ca00162d409116d5a29a6c49b099af3027dcae298754"),
    "fixed.pftrace": (7944, "b9e7dab510b2557795364ab5d23f9de7b7c8f2a34cb718c78636cbddb30043e7"),
}


def test_the_writers_write_the_same_bytes_as_before(tmp_path):
    written = fixed_trace.write(tmp_path)
    assert {name: (len(data), hashlib.sha256(data).hexdigest()) for name, data in written.items()} == BEFORE


def test_the_native_writer_writes_the_same_bytes(tmp_path):
    # The session's writer thread (csrc/session) formats, places tracks and writes in C++: the same bytes as the
    # Python writer for the same records, batch by batch (tracks appearing across batches, overlapping calls, GPU
    # lanes, caller-stream waits), in batches of 7 as above and of other sizes.
    expected = fixed_trace.write(tmp_path)["fixed.json"]
    for batch in (7, 1, 3, 1000):
        folder = tmp_path / f"native{batch}"
        folder.mkdir()
        if batch == 7:
            assert fixed_trace.write_native(folder, batch) == expected
        else:  # other batchings move tracks' first appearance: compare with the Python writer batched alike
            assert fixed_trace.write_native(folder, batch) == _python_json(tmp_path / f"py{batch}", batch)


def test_the_native_writer_writes_the_same_perfetto_bytes(tmp_path):
    # A .pftrace session is written by the same thread (csrc/session/perfetto_trace.h): the digest the Python
    # writer has had since c747573, clock snapshots pinned on both sides.
    data = fixed_trace.write_native_perfetto(tmp_path)
    assert (len(data), hashlib.sha256(data).hexdigest()) == BEFORE["fixed.pftrace"]


def _python_json(folder, batch: int) -> bytes:
    import os

    from trt_trace.io.writers import ChromeJsonWriter

    folder.mkdir()
    here = os.getcwd()
    os.chdir(folder)
    try:
        with fixed_trace.pinned():
            recs = fixed_trace.records()
            writer = ChromeJsonWriter("fixed.json", lambda: list(fixed_trace.NAMES))
            writer.begin("fixed.py", {"tool": "trt_trace", "pid": fixed_trace.PID, "clock": "CLOCK_MONOTONIC"})
            for i in range(0, len(recs), batch):
                writer.write(recs[i:i + batch])
            writer.finish({"records_drained": len(recs), "dropped_events": 0})
    finally:
        os.chdir(here)
    return (folder / "fixed.json").read_bytes()


def test_the_fixed_trace_has_what_it_is_meant_to_cover(tmp_path):
    # Lanes beyond the first, GPU lanes, several engines: the track book's cases are all in the digest.
    from trt_trace.io.readers import load_events

    written = fixed_trace.write(tmp_path)
    assert written.keys() == BEFORE.keys()
    events = load_events(str(tmp_path / "fixed.json"))
    names = sorted(e["args"]["name"] for e in events if e.get("name") == "thread_name")
    assert names == ['_run_on_acc_0_engine', '_run_on_acc_0_engine GPU', '_run_on_acc_0_engine GPU (2)',
                     'naïve ✓ 引擎', 'naïve ✓ 引擎 GPU', 'quo"te engine', 'quo"te engine (2)', 'quo"te engine GPU']
