"""NVTX ranges, checked through an NVTX injection library (the mechanism Nsight Systems uses)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import run_python
from trace_checks import load_strict

HERE = Path(__file__).resolve().parent


def nvtx_include() -> str | None:
    try:
        import nvidia
    except ImportError:
        return None
    for root in nvidia.__path__:
        for sub in ("cu13/include", "nvtx/include", "cu12/include"):
            if (Path(root) / sub / "nvtx3").is_dir():
                return str(Path(root) / sub)
    return None


@pytest.fixture(scope="module")
def recorder(tmp_path_factory) -> Path:
    include = nvtx_include()
    assert include, "the nvidia-nvtx headers are a dependency of trt_trace"
    cc = shutil.which("cc") or shutil.which("gcc")
    assert cc, "a C compiler is needed (as for building trt_trace)"
    lib = tmp_path_factory.mktemp("nvtx") / "libnvtx_recorder.so"
    subprocess.run([cc, "-shared", "-fPIC", "-O1", "-I", include, str(HERE / "nvtx_recorder.c"), "-o", str(lib),
                    "-lpthread"], check=True)
    return lib


SCRIPT = """
import torch, trt_trace
from trt_trace import standin
a = standin.make_engine("nvtx_engine_a", num_outputs=1)
b = standin.make_engine("nvtx_engine_b", num_outputs=1)
with trt_trace.tracing({out!r}, nvtx={nvtx}):
    for _ in range(3):
        torch.ops.tensorrt.execute_engine([torch.ones(4)], a)
        torch.ops.tensorrt.execute_engine([torch.ones(4)], b)
"""


def parse_log(path: Path) -> list[tuple]:
    """[(domain, name, payload, children)] for each top-level range, with nesting checked."""
    stack: list[list] = []
    roots = []
    for line in path.read_text().splitlines():
        parts = line.split("\t")
        if parts[0] == "push":
            node = [parts[1], parts[2], int(parts[3]), int(parts[4]), []]
            (stack[-1][4] if stack else roots).append(node)
            stack.append(node)
        else:
            assert stack, "pop without push"
            assert stack.pop()[0] == parts[1], "pop in another domain"
    assert not stack, "unbalanced ranges"
    return roots


def test_nvtx_is_compiled_in():
    from trt_trace.native import ops

    assert ops.set_nvtx(False), "trt_trace was built without the NVTX headers (nvidia-nvtx must be installed first)"


def test_nvtx_ranges_names_nesting_domain_and_payloads(recorder, tmp_path):
    log = tmp_path / "nvtx.log"
    out = tmp_path / "t.json"
    proc = run_python(SCRIPT.format(out=str(out), nvtx=True),
                      {"NVTX_INJECTION64_PATH": str(recorder), "NVTX_RECORDER_LOG": str(log)})
    assert proc.returncode == 0, proc.stderr
    roots = parse_log(log)
    assert [r[1] for r in roots] == ["nvtx_engine_a", "nvtx_engine_b"] * 3
    calls = {e["args"]["call_id"]: e for e in load_strict(out) if e["ph"] == "X" and e["name"] == "execute_engine"}
    for domain, name, payload_type, call_id, children in roots:
        assert domain == "trt_trace"
        assert payload_type == 1  # NVTX_PAYLOAD_TYPE_UNSIGNED_INT64 (nvToolsExt.h)
        assert calls[call_id]["args"]["engine"] == name  # the payload is the trace's call_id
        assert [c[1] for c in children] == ["workspace", "inputs", "outputs", "enqueue"]
        assert all(c[3] == call_id and not c[4] for c in children)


def test_no_ranges_unless_switched_on(recorder, tmp_path):
    log = tmp_path / "nvtx.log"
    proc = run_python(SCRIPT.format(out=str(tmp_path / "t.json"), nvtx=False),
                      {"NVTX_INJECTION64_PATH": str(recorder), "NVTX_RECORDER_LOG": str(log)})
    assert proc.returncode == 0, proc.stderr
    assert not log.exists() or "push" not in log.read_text()


def test_env_var_switches_nvtx_on(recorder, tmp_path, demo_package):
    path, specs = demo_package
    log = tmp_path / "nvtx.log"
    code = f"import torch\nfrom trt_trace.standin import model\nmodel.load_package({path!r})(torch.randn(8, 64))\n"
    proc = run_python(code, {"TRT_TRACE_OUT": str(tmp_path / "t.json"), "TRT_TRACE_NVTX": "1",
                             "NVTX_INJECTION64_PATH": str(recorder), "NVTX_RECORDER_LOG": str(log)})
    assert proc.returncode == 0, proc.stderr
    assert [r[1] for r in parse_log(log)] == [s.name for s in specs]
    assert os.path.exists(tmp_path / "t.json")


FORKED = """
import os, torch
from trt_trace import standin
parent = standin.make_engine("nvtx_parent")
child = standin.make_engine("nvtx_child")
torch.ops.tensorrt.execute_engine([torch.ones(4)], parent)
pid = os.fork()
if pid == 0:
    for _ in range(3):
        torch.ops.tensorrt.execute_engine([torch.ones(4)], child)
    os._exit(0)
os.waitpid(pid, 0)
print(pid)
"""


def test_a_forked_child_keeps_its_parents_nvtx_ranges(recorder, tmp_path):
    # TRT_TRACE_NVTX=1 is one of the settings a forked child's own trace keeps: its calls push ranges too.
    log = tmp_path / "nvtx.log"
    proc = run_python(FORKED, {"TRT_TRACE_OUT": str(tmp_path / "t_{pid}.json"), "TRT_TRACE_NVTX": "1",
                               "NVTX_INJECTION64_PATH": str(recorder), "NVTX_RECORDER_LOG": str(log)})
    assert proc.returncode == 0, proc.stderr
    child_pid = int(proc.stdout.split()[-1])
    roots = parse_log(log)
    assert [r[1] for r in roots] == ["nvtx_parent"] + ["nvtx_child"] * 3
    child_calls = {e["args"]["call_id"] for e in load_strict(tmp_path / f"t_{child_pid}.json")
                   if e["ph"] == "X" and e["name"] == "execute_engine"}
    assert {r[3] for r in roots[1:]} == child_calls and len(child_calls) == 3  # the child's own call ids
    assert all([c[1] for c in r[4]] == ["workspace", "inputs", "outputs", "enqueue"] for r in roots)
