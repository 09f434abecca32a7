"""The host phase model on the stand-in runtime: boundaries, skipped steps, faults (under each
Torch-TensorRT version the stand-in plays)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import drain_all

from trt_trace import standin
from trt_trace.native import ops
from trt_trace.schema.trace_format import HOST_PHASES, Flag, Phase

pytestmark = pytest.mark.usefixtures("runtime_version")

WS, IN, OUT, ENQ = Phase.WORKSPACE, Phase.INPUTS, Phase.OUTPUTS, Phase.ENQUEUE
HOST = tuple(Phase(1 + i) for i in range(len(HOST_PHASES)))  # every host phase, in order


def traced_calls(engine, inputs, n=5):
    ops.set_profile_execution(True)
    try:
        for _ in range(n):
            torch.ops.tensorrt.execute_engine(inputs, engine)
    finally:
        ops.set_profile_execution(False)
    return calls_of(drain_all())


def calls_of(recs):
    """{call_id: {phase: (begin, end, flags)}}"""
    out: dict[int, dict[int, tuple[int, int, int]]] = {}
    for r in recs.tolist():
        out.setdefault(r[2], {})[r[5]] = (r[0], r[1], r[6])
    return out


def check_partition(phases):
    """Phases lie inside the call, never overlap, and add up to it exactly."""
    b, e, _ = phases[Phase.CALL]
    cursor = b
    for p in HOST:
        if p in phases:
            pb, pe, _ = phases[p]
            assert pb == cursor, f"phase {p} starts at {pb}, expected {cursor}"
            assert pe > pb
            cursor = pe
    assert cursor == e


def test_phases_partition_every_call_and_enqueue_holds_the_launch_cost():
    engine = standin.make_engine("phase_engine", host_us=3000, num_outputs=2)
    calls = traced_calls(engine, [torch.randn(16, 16)], n=4)
    assert len(calls) == 4
    for phases in calls.values():
        assert set(phases) == {Phase.CALL, WS, IN, OUT, ENQ}
        check_partition(phases)
        enqueue = phases[ENQ][1] - phases[ENQ][0]
        assert enqueue >= 3_000_000  # the stand-in's 3 ms launch cost lands in enqueue
    # ... and in no other phase. Medians over the calls: a loaded 2-core CI machine may deschedule one call in
    # any phase for tens of ms (once 36 ms in a first call's outputs).
    for p in (WS, IN, OUT):
        assert np.median([c[p][1] - c[p][0] for c in calls.values()]) < 3_000_000, (p, calls)


def test_dynamic_workspace_lands_in_workspace():
    big = standin.make_engine("ws_engine", workspace_bytes=256 << 20, dynamic=True)
    small = standin.make_engine("static_engine")
    x = [torch.randn(4, 4)]
    for engine in (big, small):  # a first call pays one-off costs in every phase
        torch.ops.tensorrt.execute_engine(x, engine)
    ws_big = [c[WS][1] - c[WS][0] for c in traced_calls(big, x, n=9).values()]
    ws_small = [c[WS][1] - c[WS][0] for c in traced_calls(small, x, n=9).values()]
    # Allocating 256 MiB per call is far slower than taking the lock of a static engine. Medians,
    # since on a loaded 2-core machine any single call may be descheduled (CI once saw a static
    # engine's workspace phase take 44 us, twice the big engine's fastest allocation).
    assert np.median(ws_big) > 2 * np.median(ws_small), (ws_big, ws_small)


def test_pre_allocated_outputs_skip_the_outputs_phase():
    engine = standin.make_engine("prealloc_engine")
    engine.use_pre_allocated_outputs = True
    x = [torch.randn(8, 8)]
    torch.ops.tensorrt.execute_engine(x, engine)  # allocates once, keeps the outputs
    calls = traced_calls(engine, x, n=3)
    for phases in calls.values():
        assert OUT not in phases
        assert {WS, IN, ENQ} <= set(phases)
        check_partition(phases)


def test_engine_that_throws_is_flagged_and_tracing_goes_on():
    engine = standin.make_engine("faulty_engine", fail_every=2)
    x = [torch.randn(4, 4)]
    ops.set_profile_execution(True)
    errors = []
    try:
        for _ in range(4):
            try:
                torch.ops.tensorrt.execute_engine(x, engine)
            except RuntimeError as exc:
                errors.append(str(exc))
    finally:
        ops.set_profile_execution(False)
    assert len(errors) == 2
    assert all("Failed to execute TRT engine faulty_engine" in e for e in errors)  # unchanged message
    recs = drain_all()
    calls = calls_of(recs)
    flagged = [c for c in calls.values() if c[Phase.CALL][2] & Flag.ERROR]
    clean = [c for c in calls.values() if not c[Phase.CALL][2] & Flag.ERROR]
    assert len(flagged) == 2 and len(clean) == 2
    for c in calls.values():
        check_partition(c)
    (engine_id,) = set(recs["engine_id"].tolist())  # by id: an earlier test may have used the name
    assert ops.engine_names()[engine_id] == "faulty_engine"
    row = ops.engine_stats().numpy()[engine_id]
    assert row[0] == 4 and row[1] == 2  # calls, errors


def test_wrong_input_count_raises_the_runtime_error_unchanged():
    engine = standin.make_engine("two_input_engine", num_inputs=2)
    ops.set_profile_execution(True)
    try:
        with pytest.raises(RuntimeError, match="expects 2 input"):
            torch.ops.tensorrt.execute_engine([torch.randn(2)], engine)
    finally:
        ops.set_profile_execution(False)
    calls = calls_of(drain_all())
    (only,) = calls.values()
    assert only[Phase.CALL][2] & Flag.ERROR
    check_partition(only)


def test_untraced_calls_leave_no_records():
    engine = standin.make_engine("quiet_engine")
    for _ in range(3):
        torch.ops.tensorrt.execute_engine([torch.randn(2, 2)], engine)
    assert len(drain_all()) == 0


def test_outputs_are_correct_with_tracing_on():
    spec = standin.EngineSpec("check_engine", scale=1.5, bias=-0.2, activation="tanh", num_inputs=2,
                              num_outputs=3, repeat=3)
    engine = standin.make_engine(**{f: getattr(spec, f) for f in spec.field_names()})
    xs = [torch.randn(5, 7), torch.randn(5, 7)]
    ops.set_profile_execution(True)
    try:
        outs = torch.ops.tensorrt.execute_engine(xs, engine)
    finally:
        ops.set_profile_execution(False)
    for got, want in zip(outs, standin.reference_outputs(spec, xs), strict=True):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
    assert np.all(drain_all()["engine_id"] > 0)


def test_allocations_nested_in_an_input_copy_stay_in_inputs():
    # A non-contiguous input is copied by .contiguous() (clone -> empty_strided inside it): only
    # the call's own top-level aten::empty may start `outputs`, so the copy's time is in `inputs`.
    engine = standin.make_engine("nested_alloc_engine")
    x = torch.randn(1500, 1500).t()  # ~9 MB copied per call, milliseconds on these machines
    calls = traced_calls(engine, [x], n=5)
    for phases in calls.values():
        check_partition(phases)
    inputs_ns = [phases[IN][1] - phases[IN][0] for phases in calls.values()]
    outputs_ns = [phases[OUT][1] - phases[OUT][0] for phases in calls.values()]
    # Medians: one call descheduled inside its outputs phase must not read as a misplaced copy.
    assert np.median(inputs_ns) > 5 * np.median(outputs_ns), (inputs_ns, outputs_ns)


def test_ops_outside_traced_calls_are_not_observed():
    # The observer's dispatch key is on only inside a call: other ops on the thread dispatch as usual
    # (same results, and no records from them).
    engine = standin.make_engine("outside_engine")
    x = torch.randn(8, 8)
    ops.set_profile_execution(True)
    try:
        torch.ops.tensorrt.execute_engine([x], engine)
        y = (x @ x).view(64).clone()
        z = torch.empty(3)
    finally:
        ops.set_profile_execution(False)
    assert torch.equal(y, (x @ x).reshape(64)) and z.shape == (3,)
    assert len(calls_of(drain_all())) == 1
