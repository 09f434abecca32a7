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


def test_the_fixed_trace_has_what_it_is_meant_to_cover(tmp_path):
    # Lanes beyond the first, GPU lanes, several engines: the track book's cases are all in the digest.
    from trt_trace.readers import load_events

    written = fixed_trace.write(tmp_path)
    assert written.keys() == BEFORE.keys()
    events = load_events(str(tmp_path / "fixed.json"))
    names = sorted(e["args"]["name"] for e in events if e.get("name") == "thread_name")
    assert names == ['_run_on_acc_0_engine', '_run_on_acc_0_engine GPU', '_run_on_acc_0_engine GPU (2)',
                     'naïve ✓ 引擎', 'naïve ✓ 引擎 GPU', 'quo"te engine', 'quo"te engine (2)', 'quo"te engine GPU']
