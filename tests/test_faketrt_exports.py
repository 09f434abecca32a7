"""The fake TensorRT exports every C entry point that Torch-TensorRT 2.11's runtime and the real
TensorRT 10.15 Python bindings link against, checked on the CPU.

`import tensorrt` loads the bindings' extension with every symbol resolved at once, so one missing
entry point fails the whole import on the GPU machine (tools/device/real_runtime_check.py). The two
small libraries build with g++ here and are read with nm; libnvinfer.so.10 needs nvcc, so its exports
are read from its version script and its sources. Where tools/device/fetch_real_runtime.sh has put the
real bindings in .trt/python, their own undefined symbols are checked too.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FAKE = ROOT / "tests" / "faketrt"
BINDINGS = ROOT / ".trt" / "python" / "tensorrt_bindings" / "tensorrt.so"

# What each library must export: the runtime's three (libtorchtrt_runtime.so) and what
# tensorrt_cu13_bindings 10.15.1.29 adds (`nm -D --undefined-only tensorrt.so`).
NEEDED = {
    "libnvinfer.so.10": {"createInferRuntime_INTERNAL", "getPluginRegistry", "createInferBuilder_INTERNAL",
                         "createInferRefitter_INTERNAL", "getBuilderPluginRegistry"},
    "libnvinfer_plugin.so.10": {"initLibNvInferPlugins"},
    "libnvonnxparser.so.10": {"createNvOnnxParser_INTERNAL", "createNvOnnxParserRefitter_INTERNAL",
                              "getNvOnnxParserVersion"},
}
TENSORRT_SYMBOL = re.compile(r"_INTERNAL$|Registry$|^initLibNvInfer|OnnxParser|^getInferLib")
needs_tools = pytest.mark.skipif(shutil.which("g++") is None or shutil.which("nm") is None, reason="needs g++ and nm")


def defined(lib: Path) -> set[str]:
    out = subprocess.run(["nm", "-D", "--defined-only", str(lib)], capture_output=True, text=True, check=True).stdout
    return {parts[2] for parts in (ln.split() for ln in out.splitlines()) if len(parts) == 3 and parts[1] == "T"}


def libnvinfer_exports() -> set[str]:
    """TensorRT's C entry points that the version script lets out of libnvinfer.so.10 (each one
    defined in faketrt.cu; the faketrt_* test helpers aside)."""
    script = (FAKE / "exports.map").read_text()
    listed = set(re.findall(r"\b(\w+);", script.split("local:")[0].split("global:")[1]))
    source = (FAKE / "faketrt.cu").read_text()
    defined_there = set(re.findall(r"^FAKETRT_EXPORT [\w\s*]+?\b(\w+)\(", source, re.M))
    assert listed <= defined_there, f"listed in exports.map, not defined: {listed - defined_there}"
    return listed


@pytest.fixture(scope="module")
def small_libs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, set[str]]:
    out = tmp_path_factory.mktemp("faketrt")
    libs = {}
    for soname, src in (("libnvinfer_plugin.so.10", "faketrt_plugin.cpp"),
                        ("libnvonnxparser.so.10", "faketrt_onnxparser.cpp")):
        subprocess.run(["g++", "-O2", "-Wall", "-Werror", "-shared", "-fPIC", "-fvisibility=hidden",
                        f"-Wl,-soname,{soname}", str(FAKE / src), "-o", str(out / soname)], check=True)
        libs[soname] = defined(out / soname)
    return libs


def test_libnvinfer_exports_what_the_runtime_and_the_bindings_link() -> None:
    exports = libnvinfer_exports()
    assert NEEDED["libnvinfer.so.10"] <= exports, NEEDED["libnvinfer.so.10"] - exports
    assert "getInferLibVersion" in exports


def test_libnvinfer_reports_tensorrt_10_15_1() -> None:
    """TensorRT encodes its version major * 10000 + minor * 100 + patch."""
    source = (FAKE / "faketrt.cu").read_text()
    m = re.search(r"int32_t getInferLibVersion\(\) \{ return (\d+) \* 10000 \+ (\d+) \* 100 \+ (\d+); \}", source)
    assert m and tuple(map(int, m.groups())) == (10, 15, 1)


@needs_tools
def test_plugin_and_parser_libraries_export_exactly_their_entry_points(small_libs: dict[str, set[str]]) -> None:
    for soname in ("libnvinfer_plugin.so.10", "libnvonnxparser.so.10"):
        assert small_libs[soname] == NEEDED[soname], (soname, small_libs[soname])


@needs_tools
@pytest.mark.skipif(not BINDINGS.exists(), reason="the real bindings are fetched by tools/device/fetch_real_runtime.sh")
def test_the_fake_defines_every_tensorrt_symbol_the_real_bindings_link(small_libs: dict[str, set[str]]) -> None:
    out = subprocess.run(["nm", "-D", "--undefined-only", str(BINDINGS)], capture_output=True, text=True,
                         check=True).stdout
    unversioned = {ln.split()[-1] for ln in out.splitlines() if "@" not in ln}
    wanted = {s for s in unversioned if TENSORRT_SYMBOL.search(s)}
    have = libnvinfer_exports() | small_libs["libnvinfer_plugin.so.10"] | small_libs["libnvonnxparser.so.10"]
    assert wanted, "no TensorRT symbols found among the bindings' undefined ones"
    assert wanted <= have, wanted - have
