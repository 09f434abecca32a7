"""Engine ids and names: parsed once from __str__, stable, distinct across address reuse."""

from __future__ import annotations

import gc

import torch
from conftest import drain_all

from trt_trace import standin
from trt_trace.native import ops
from trt_trace.schema.trace_format import Phase


def test_name_parsing():
    real_text = "Torch-TensorRT TensorRT Engine:\n  Name: _run_on_acc_0_engine\n  Inputs: [\n  ]\n"
    assert ops.parse_engine_name(real_text) == "_run_on_acc_0_engine"
    assert ops.parse_engine_name("Torch-TensorRT TensorRT Engine:\r\n  Name: tensorrt_engine\r\n") == "tensorrt_engine"
    assert ops.parse_engine_name("x\n  Name: a \"quoted\" näme ✓\n") == 'a "quoted" näme ✓'
    assert ops.parse_engine_name("no name line here") == "unnamed_engine"
    assert ops.parse_engine_name("") == "unnamed_engine"


def test_the_name_comes_from_the_engines_str():
    engine = standin.make_engine("deserialized_trt")
    assert str(engine).splitlines()[1] == "  Name: deserialized_trt"
    ops.set_profile_execution(True)
    torch.ops.tensorrt.execute_engine([torch.ones(2)], engine)
    ops.set_profile_execution(False)
    (eid,) = set(drain_all()["engine_id"].tolist())
    assert ops.engine_names()[eid] == "deserialized_trt"


def test_same_engine_same_id_across_calls_and_threads():
    import threading

    engine = standin.make_engine("shared_engine")
    ops.set_profile_execution(True)
    ts = [threading.Thread(target=lambda: torch.ops.tensorrt.execute_engine([torch.ones(3)], engine))
          for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    torch.ops.tensorrt.execute_engine([torch.ones(3)], engine)
    ops.set_profile_execution(False)
    recs = drain_all()
    assert len(set(recs["engine_id"].tolist())) == 1
    assert (recs["phase"] == Phase.CALL).sum() == 5


def test_engines_created_and_destroyed_in_a_loop_get_distinct_ids_and_right_names():
    ops.set_profile_execution(True)
    addresses = set()
    # What was alive before the loop (torch, every earlier test's objects) moves out of the collector's reach:
    # each gc.collect() below looks at the loop's own objects alone, all of them, in every generation (a
    # full collection of a worker's whole heap took 0.1-0.3 s, 40 times).
    gc.freeze()
    try:
        for i in range(40):
            engine = standin.make_engine(f"loop_engine_{i}")
            addresses.add(id(engine))
            torch.ops.tensorrt.execute_engine([torch.ones(2)], engine)
            del engine
            gc.collect()
            ops.sweep_engines()  # as the drainer does periodically
    finally:
        gc.unfreeze()
        ops.set_profile_execution(False)
    recs = drain_all()
    calls = recs[recs["phase"] == Phase.CALL]
    ids = calls["engine_id"].tolist()
    assert len(ids) == 40 and len(set(ids)) == 40
    names = ops.engine_names()
    assert [names[i] for i in ids] == [f"loop_engine_{i}" for i in range(40)]


def test_stopping_releases_dead_engines_and_keeps_ids_of_live_ones():
    engine = standin.make_engine("kept_engine")
    ops.set_profile_execution(True)
    torch.ops.tensorrt.execute_engine([torch.ones(2)], engine)
    ops.set_profile_execution(False)  # drops every reference the registry held
    assert ops.sweep_engines() == 0
    ops.set_profile_execution(True)
    torch.ops.tensorrt.execute_engine([torch.ones(2)], engine)
    ops.set_profile_execution(False)
    recs = drain_all()
    assert len(set(recs["engine_id"].tolist())) == 1
