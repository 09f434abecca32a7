"""The stand-in plays Torch-TensorRT 2.11, 2.13 or 2.14: serialized info, pickling, export, packages,
the version switch, the lazy execution context, 2.14's aliased outputs and optimization profiles, and
(on a GPU) inputs off the engine's device and streams.

The expected layouts below are the real runtimes' (2.11: ABI "8", 11 fields; 2.12/2.13: ABI "9",
12 fields; 2.14: ABI "10", 13 fields), written here independently of the stand-in's own tables.
"""

from __future__ import annotations

import base64
import copy
import json
import pickle
import re

import numpy as np
import pytest
import torch
from conftest import drain_all, playing_runtime, run_python

from trt_trace import standin
from trt_trace.native import ops
from trt_trace.schema.trace_format import Phase
from trt_trace.standin.runtime import ENGINE_IDX

LAYOUT = {"2.11": ("8", 11), "2.13": ("9", 12), "2.14": ("10", 13)}
# __obj_flatten__'s keys in the real runtime's order.
FLATTEN_KEYS = ["version", "name", "device_info", "serialized_engine", "in_binding_names", "out_binding_names",
                "hardware_compatible", "serialized_metadata", "requires_output_allocator", "target_platform",
                "resource_allocation_strategy", "requires_native_multidevice", "aliased_io"]
OTHER = {"2.11": "2.13", "2.13": "2.11", "2.14": "2.13"}


def pickled_fields(engine) -> list[str]:
    # ScriptObject.__getstate__ gives (the class's own __getstate__ result, the class name).
    return engine.__getstate__()[0]


def test_engines_serialize_and_flatten_in_their_versions_layout(runtime_version):
    abi, n = LAYOUT[runtime_version]
    assert standin.runtime_version() == runtime_version
    assert (torch.ops.tensorrt.ABI_VERSION(), torch.ops.tensorrt.SERIALIZATION_LEN()) == (abi, n)
    spec = standin.EngineSpec("layout_engine", num_inputs=2, num_outputs=3, dynamic=True, host_us=7)
    info = spec.serialized_info()
    assert len(info) == n and info[0] == abi
    engine = standin.make_engine(**{f: getattr(spec, f) for f in spec.field_names()})
    fields = pickled_fields(engine)
    assert len(fields) == n and fields[0] == abi
    assert fields[1] == "layout_engine" and fields[4] == "input_0%input_1" and fields[5] == "output_0%output_1%output_2"
    assert base64.b64decode(fields[3]).decode() == spec.params_text()  # ENGINE pickled as base64
    pairs = engine.__obj_flatten__()
    assert isinstance(pairs, tuple) and [k for k, _ in pairs] == FLATTEN_KEYS[:n]
    flat = dict(pairs)
    assert flat["version"] == abi and flat["resource_allocation_strategy"] == "1"
    assert flat["serialized_engine"] == fields[3] and flat["target_platform"] == "linux_x86_64"



# The engine's layers and profiles text: '|'-separated <a>:<b> items, each split at its first ':'.
@pytest.mark.parametrize(("param", "error"), [
    ("layers=25:conv|7", "stand-in engine: a layer is <us>:<name>, not '7'"),
    ("layers=:conv", "stand-in engine: a layer is <us>:<name>, not ':conv'"),
    ("layers=-1:conv", "stand-in engine: bad layer '-1:conv'"),
    ("layers=3:", "stand-in engine: bad layer '3:'"),
    ("profiles=1:4|8", "stand-in engine: a profile is <min>:<max>, not '8'"),
    ("profiles=4:1", "stand-in engine: bad profile '4:1'"),
])
def test_a_malformed_layer_or_profile_is_refused_by_name(param, error):
    info = standin.EngineSpec("malformed_params").serialized_info()
    info[ENGINE_IDX] += ";" + param
    with pytest.raises(RuntimeError, match=re.escape(error)):
        torch.classes.tensorrt.Engine(info)


def test_layer_names_are_split_at_the_first_colon_and_unescaped():
    engine = standin.make_engine("named_layers", layers=(("a:b", 5), ("x|y;z%", 7), ("plain", 0)))
    assert json.loads(engine.get_engine_layer_info())["Layers"] == ["a:b", "x|y;z%", "plain"]


def test_pickles_round_trip_in_their_version_and_are_refused_by_the_other(runtime_version, tmp_path):
    engine = standin.make_engine("pickled_engine", scale=3.0)
    twin = copy.deepcopy(engine)  # __getstate__ / __setstate__ under the same version
    x = torch.randn(6)
    torch.testing.assert_close(torch.ops.tensorrt.execute_engine([x], twin)[0],
                               torch.ops.tensorrt.execute_engine([x], engine)[0])
    assert pickled_fields(twin) == pickled_fields(engine)
    torch.jit.script(EngineModule(engine)).save(str(tmp_path / "m.ts"))

    standin.use_runtime(OTHER[runtime_version])  # the fixture switches back afterwards
    with pytest.raises(RuntimeError, match="targets an incompatible Torch-TensorRT ABI"):
        copy.deepcopy(engine)
    with pytest.raises(RuntimeError, match="targets an incompatible Torch-TensorRT ABI"):
        torch.jit.load(str(tmp_path / "m.ts"))
    # The engine itself keeps its version: it runs and flattens as it was made.
    assert len(engine.__obj_flatten__()) == LAYOUT[runtime_version][1]
    torch.testing.assert_close(torch.ops.tensorrt.execute_engine([x], engine)[0], torch.relu(x * 3.0))


def test_an_abi_mismatch_with_the_right_field_count_is_refused(runtime_version):
    abi, _ = LAYOUT[runtime_version]
    data = pickle.dumps(standin.make_engine("abi_engine"))
    assert pickle.loads(data).__obj_flatten__() == standin.make_engine("abi_engine").__obj_flatten__()
    field = bytes([0x8C, len(abi)]) + abi.encode()  # the ABI field, a short string in the pickle
    assert data.count(field) == 1
    wrong = "7" * len(abi)  # the same length: the pickle's frames keep their sizes
    with pytest.raises(RuntimeError, match=rf"different Torch-TensorRT ABI Version \({wrong}\) than the "
                                           rf"Torch-TensorRT Runtime ABI Version \({abi}\)"):
        pickle.loads(data.replace(field, bytes([0x8C, len(abi)]) + wrong.encode()))


def test_the_constructor_reads_its_versions_fields_and_checks_no_abi():
    standin.use_runtime("2.13")
    newer_info = standin.EngineSpec("wide_engine").serialized_info()
    previous = standin.use_runtime("2.11")
    try:
        # 2.11 reads the first 11 fields of a 12-field list, whatever its ABI field, and writes its own.
        engine = torch.classes.tensorrt.Engine(newer_info)
        assert len(pickled_fields(engine)) == 11 and pickled_fields(engine)[0] == "8"
        narrow_info = standin.EngineSpec("narrow_engine").serialized_info()
        standin.use_runtime("2.13")
        with pytest.raises(RuntimeError, match="Torch-TensorRT 2.13 reads 12 serialized-info fields, got 11"):
            torch.classes.tensorrt.Engine(narrow_info)
    finally:
        standin.use_runtime(previous)


class EngineModule(torch.nn.Module):
    def __init__(self, engine):
        super().__init__()
        self.engine = engine

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.ops.tensorrt.execute_engine([x], self.engine)[0]


def test_export_sees_the_versions_pairs_and_refuses_an_engine_of_the_other(runtime_version):
    exported = torch.export.export(EngineModule(standin.make_engine("export_engine")).eval(), (torch.randn(4),),
                                   strict=False)
    (constant,) = exported.constants.values()
    assert len(constant.__obj_flatten__()) == LAYOUT[runtime_version][1]
    standin.use_runtime(OTHER[runtime_version])
    stale = EngineModule(engine_of(runtime_version)).eval()
    with pytest.raises(RuntimeError, match="an engine of another version"):
        torch.export.export(stale, (torch.randn(4),), strict=False)


def engine_of(version: str):
    with playing_runtime(version):
        return standin.make_engine(f"engine_{version.replace('.', '_')}")


SERVE_AND_REPORT = """
import json, sys, torch
from trt_trace.standin import model
from trt_trace import standin
try:
    runner = model.load_package(sys.argv[1])
except RuntimeError as exc:
    print(json.dumps({"version": standin.runtime_version(), "error": str(exc).splitlines()[0]}))
    sys.exit(0)
runner(torch.randn(8, 64))
print(json.dumps({"version": standin.runtime_version(), "error": None}))
"""


def test_a_package_loads_only_under_the_version_that_built_it(runtime_version, demo_package):
    # Loading (and tracing) it under its own version, in a fresh process: test_startup_and_cli.
    path, _ = demo_package
    assert f"standin_{runtime_version}_" in path  # one cached package per version
    other = run_python(f"import sys; sys.argv = ['x', {path!r}]\n" + SERVE_AND_REPORT,
                       {"TRT_TRACE_STANDIN_RUNTIME": OTHER[runtime_version]})
    assert other.returncode == 0, other.stderr
    refused = json.loads(other.stdout)
    assert refused["version"] == OTHER[runtime_version]
    assert "targets an incompatible Torch-TensorRT ABI" in (refused["error"] or ""), refused


REPORT_VERSION = """
import torch
from trt_trace import standin
e = standin.make_engine("env_engine")
print(standin.runtime_version(), torch.ops.tensorrt.SERIALIZATION_LEN(), len(e.__obj_flatten__()))
"""


def test_the_environment_picks_the_version_and_a_bad_value_gets_one_line():
    for value, want in (("2.11", "2.11 11 11"), ("2.14", "2.14 13 13"), ("", "2.13 12 12")):
        proc = run_python(REPORT_VERSION, {"TRT_TRACE_STANDIN_RUNTIME": value})
        assert proc.returncode == 0 and proc.stdout.split("\n")[0] == want, (value, proc.stdout, proc.stderr)
        assert "TRT_TRACE_STANDIN_RUNTIME" not in proc.stderr
    proc = run_python(REPORT_VERSION, {"TRT_TRACE_STANDIN_RUNTIME": "2.12x"})
    assert proc.returncode == 0 and proc.stdout.strip() == "2.13 12 12", proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if "TRT_TRACE_STANDIN_RUNTIME" in ln]
    assert lines == ["trt_trace: TRT_TRACE_STANDIN_RUNTIME='2.12x' must be 2.11, 2.13 or 2.14 (using 2.13)"]
    assert "Traceback" not in proc.stderr


def test_use_runtime_refuses_an_unknown_version_and_keeps_the_current_one():
    before = standin.runtime_version()
    with pytest.raises(ValueError, match="must be one of 2.11, 2.13, 2.14"):
        standin.use_runtime("2.15")
    assert standin.runtime_version() == before


cuda_only = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU and the CUDA build")


@cuda_only
def test_cuda_inputs_on_the_host(runtime_version):
    # 2.13 moves an input to the engine's device first thing; 2.11 refuses it at input setup.
    engine = standin.make_engine("host_input_engine", device=0)
    x = torch.randn(16)
    if runtime_version == "2.11":
        with pytest.raises(RuntimeError, match="Expected input tensors to have device cuda, found device cpu"):
            torch.ops.tensorrt.execute_engine([x], engine)
    else:
        (out,) = torch.ops.tensorrt.execute_engine([x], engine)
        assert out.device.type == "cuda"
        torch.testing.assert_close(out.cpu(), torch.relu(x))


def kernel_streams(prof, word: str) -> set[int]:
    """CUPTI stream ids of the kernels whose name contains `word`."""
    out = set()
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA and word in e.name:
            out.add(int(e.device_resource_id))
    return out


@cuda_only
def test_cuda_streams_follow_the_version(runtime_version):
    # A marker kernel (sqrt) on the caller's stream, then the engine (its plan runs tanh): 2.13
    # keeps the work on a caller's own stream, 2.11 always moves it to the engine's pool stream.
    # From the default stream both use the engine's own stream.
    from torch.profiler import ProfilerActivity, profile

    engine = standin.make_engine("stream_engine", activation="tanh", device=0)
    x = torch.randn(1 << 16, device="cuda")
    torch.ops.tensorrt.execute_engine([x], engine)  # 2.11 takes its pool stream at the first call
    torch.cuda.synchronize()
    seen = {}
    for caller in ("default", "own"):
        stream = torch.cuda.Stream() if caller == "own" else torch.cuda.default_stream()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            with torch.cuda.stream(stream):
                torch.sqrt(x)
                (out,) = torch.ops.tensorrt.execute_engine([x], engine)
            torch.cuda.synchronize()
        torch.testing.assert_close(out, torch.tanh(x))
        (marker,) = kernel_streams(prof, "sqrt")
        (work,) = kernel_streams(prof, "tanh")
        seen[caller] = work == marker
    assert seen == {"default": False, "own": runtime_version != "2.11"}, seen


def test_211_output_setup_lands_in_outputs():
    # Three float64 outputs: 2.11 allocates each as float32 and converts it (.to(dtype)); that
    # conversion is output setup, not enqueue. Checked by order, not by time: in torch.profiler's own
    # tree (whose phase scopes switch where the call's phases do, between its top-level ops,
    # csrc/integrations/profiler_scopes.h) every conversion sits inside an `outputs` scope, and the trace
    # has an outputs phase in every call.
    x = torch.randn(64, 64, dtype=torch.float64)
    with playing_runtime("2.11"):
        engine = standin.make_engine("converting_engine", num_outputs=3, activation="none")
        ops.set_profile_execution(True)
        try:
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
                for _ in range(5):
                    torch.ops.tensorrt.execute_engine([x], engine)
        finally:
            ops.set_profile_execution(False)
    conversions = [e for e in prof.events() if e.name == "aten::to"
                   and e.cpu_parent is not None and e.cpu_parent.name.startswith("trt::converting_engine/")]
    assert len(conversions) == 15  # every one of them right under a phase scope of its call
    assert {e.cpu_parent.name for e in conversions} == {"trt::converting_engine/outputs"}
    recs = drain_all()
    assert np.count_nonzero(recs["phase"] == Phase.OUTPUTS) == 5


def phases_by_call(recs) -> dict[int, list[int]]:
    """The recorded phases (not kCall) of each call, in time order."""
    out: dict[int, list[int]] = {}
    order = np.argsort(recs["begin_ns"], kind="stable")
    for r in recs[order]:
        if Phase.WORKSPACE <= r["phase"] <= Phase.ENQUEUE:
            out.setdefault(int(r["call_id"]), []).append(int(r["phase"]))
    return out


@pytest.mark.parametrize("version", ["2.13", "2.14"])
def test_the_context_is_made_at_the_first_call_and_names_come_from_the_str_without_bindings(version):
    # 2.13 and 2.14 make no execution context in the constructor and list no bindings until one is made;
    # trt_trace reads the engine's name from that text at its first call, and the call has every phase.
    with playing_runtime(version):
        engine = standin.make_engine("lazy_engine", num_outputs=2, dynamic=True, workspace_bytes=64)
    text = str(engine)
    assert text.splitlines()[:4] == ["Torch-TensorRT TensorRT Engine:", "  Name: lazy_engine",
                                     "  Inputs: <execution context not yet materialized>",
                                     "  Outputs: <execution context not yet materialized>"]
    assert "RuntimeSettings{" in text and "  Runtime Cache: <engine-local, in-memory>" in text
    assert engine.num_execution_contexts_created() == 0
    drain_all()
    ops.set_profile_execution(True)
    try:
        torch.ops.tensorrt.execute_engine([torch.ones(8)], engine)
    finally:
        ops.set_profile_execution(False)
    assert engine.num_execution_contexts_created() == 1 and engine._trt_trace_standin_state()["context_live"] == 1
    assert "  Outputs: [" in str(engine)
    recs = drain_all()
    (call_id,) = {int(c) for c in recs["call_id"]}
    assert ops.engine_names()[int(recs["engine_id"][0])] == "lazy_engine"
    assert phases_by_call(recs)[call_id] == [Phase.WORKSPACE, Phase.INPUTS, Phase.OUTPUTS, Phase.ENQUEUE]


def test_211_makes_its_context_in_the_constructor():
    with playing_runtime("2.11"):
        engine = standin.make_engine("eager_context_engine")
    assert engine._trt_trace_standin_state()["contexts_created"] == 1 and "  Outputs: [" in str(engine)


def test_214_aliased_outputs_are_the_inputs_storage_and_not_allocated():
    with playing_runtime("2.14"):
        spec = standin.EngineSpec("aliased_engine", scale=2.0, num_inputs=2, num_outputs=2, aliased=((1, 0),))
        engine = standin.make_engine(**{f: getattr(spec, f) for f in spec.field_names()})
    assert pickled_fields(engine)[12] == "output_1@input_0@user" and dict(engine.__obj_flatten__())["aliased_io"]
    engine.use_pre_allocated_outputs = True  # ignored for an engine with aliased outputs, as 2.14 does
    drain_all()
    ops.set_profile_execution(True)
    try:
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
            for _ in range(4):
                x = [torch.randn(16), torch.randn(16)]
                want = standin.reference_outputs(spec, x)
                out = torch.ops.tensorrt.execute_engine(x, engine)
                assert out[1].data_ptr() == x[0].data_ptr() and out[0].data_ptr() != x[1].data_ptr()
                torch.testing.assert_close(out[0], want[0])
                torch.testing.assert_close(out[1], want[1])
                torch.testing.assert_close(x[0], want[1])  # written through
    finally:
        ops.set_profile_execution(False)
    # One allocation per call (the aliased output has none), in the outputs phase of every call.
    calls = [e for e in prof.events() if e.name == "trt::aliased_engine/execute_engine"]
    assert len(calls) == 4
    for call in calls:
        by_phase: dict[str, list[str]] = {}
        for p in call.cpu_children:
            by_phase.setdefault(p.name.rsplit("/", 1)[1], []).extend(c.name for c in p.cpu_children)
        assert by_phase["outputs"].count("aten::empty") == 1, by_phase
    # After the first call (which learnt that the engine allocates one output of two): one scope per phase.
    for call in calls[1:]:
        assert [p.name.rsplit("/", 1)[1] for p in call.cpu_children] == ["workspace", "inputs", "outputs", "enqueue"]
    assert all(p == [Phase.WORKSPACE, Phase.INPUTS, Phase.OUTPUTS, Phase.ENQUEUE]
               for p in phases_by_call(drain_all()).values())


def test_214_an_engine_whose_outputs_are_all_aliased_has_no_outputs_phase():
    with playing_runtime("2.14"):
        engine = standin.make_engine("in_place_engine", aliased=((0, 0),))
    x = torch.ones(8)
    drain_all()
    ops.set_profile_execution(True)
    try:
        (out,) = torch.ops.tensorrt.execute_engine([x], engine)
    finally:
        ops.set_profile_execution(False)
    assert out.data_ptr() == x.data_ptr()
    assert list(phases_by_call(drain_all()).values()) == [[Phase.WORKSPACE, Phase.INPUTS, Phase.ENQUEUE]]


def test_aliased_outputs_and_profiles_are_214s():
    with playing_runtime("2.13"):
        with pytest.raises(ValueError, match="aliased outputs need Torch-TensorRT 2.14"):
            standin.make_engine("old_aliased", aliased=((0, 0),))
        with pytest.raises(RuntimeError, match="several optimization profiles are played from Torch-TensorRT 2.14"):
            standin.make_engine("old_profiles", profiles=((1, 8), (9, 64)))
        with pytest.raises(RuntimeError, match="2.13 engines have no set_active_profile"):
            standin.make_engine("old_engine").set_active_profile(0)
    with playing_runtime("2.11"):
        with pytest.raises(RuntimeError, match="2.11 engines have no update_runtime_settings"):
            standin.make_engine("older_engine").update_runtime_settings(0, 0, None)


def test_214_optimization_profiles_pinned_and_selected_by_shape():
    with playing_runtime("2.14"):
        engine = standin.make_engine("profiled_shapes", profiles=((1, 8), (9, 64)))
    assert (engine.num_optimization_profiles, engine._active_profile_index) == (2, 0)
    small, large = torch.ones(4, 3), torch.ones(32, 3)
    torch.ops.tensorrt.execute_engine([small], engine)
    drain_all()
    ops.set_profile_execution(True)
    try:
        with pytest.raises(RuntimeError, match="Error while setting the input shape"):
            torch.ops.tensorrt.execute_engine([large], engine)  # profile 0 does not take 32 rows
        engine.set_active_profile(1)  # pinned: the next call's shapes count as changed
        torch.ops.tensorrt.execute_engine([large], engine)
        assert (engine._active_profile_index, engine._trt_trace_standin_state()["profile_switches"]) == (1, 1)
        engine._auto_select_profiles = True
        for x in (large, small, small, large):  # switches when the loaded profile does not take the shapes
            torch.ops.tensorrt.execute_engine([x], engine)
        assert (engine._active_profile_index, engine._trt_trace_standin_state()["profile_switches"]) == (1, 3)
        with pytest.raises(RuntimeError, match="No optimization profile matches the input shapes"):
            torch.ops.tensorrt.execute_engine([torch.ones(100, 3)], engine)
    finally:
        ops.set_profile_execution(False)
    recs = drain_all()
    calls = recs[recs["phase"] == Phase.CALL]
    assert len(calls) == 7
    errors = calls["flags"] & 1
    assert errors.tolist() == [1, 0, 0, 0, 0, 0, 1]
    # The switch is made before input set-up (no op): the calls that ran have their four phases in order.
    for call_id, phases in phases_by_call(recs).items():
        if call_id in {int(c) for c in calls[errors == 0]["call_id"]}:
            assert phases == [Phase.WORKSPACE, Phase.INPUTS, Phase.OUTPUTS, Phase.ENQUEUE]


@pytest.mark.parametrize("version", ["2.13", "2.14"])
def test_new_runtime_settings_drop_the_context(version):
    with playing_runtime(version):
        engine = standin.make_engine("settings_engine")
    call = lambda: torch.ops.tensorrt.execute_engine([torch.ones(4)], engine)  # noqa: E731
    call()
    engine.update_runtime_settings(0, 0, None)  # the same settings: the context stays
    assert engine._trt_trace_standin_state()["context_live"] == 1
    cache = torch.classes.tensorrt.RuntimeCacheHandle("/tmp/shared.cache")
    engine.update_runtime_settings(0, 0, cache)
    assert engine._trt_trace_standin_state()["context_live"] == 0 and "Runtime Cache: /tmp/shared.cache" in str(engine)
    assert "  Outputs: <execution context not yet materialized>" in str(engine)
    engine.update_runtime_settings(0, 0, cache)  # the same handle: nothing changes
    call()
    assert engine.num_execution_contexts_created() == 2
    with pytest.raises(RuntimeError, match="Invalid cuda_graph_strategy int: 5"):
        engine.update_runtime_settings(0, 5, None)
