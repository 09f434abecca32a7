"""The fake TensorRT's vtable layout (tests/faketrt) and the engine-stream record flag, checked on the CPU.

The fake itself needs CUDA and runs on the GPU machine (tools/device/real_runtime_check.py); its slot
numbers are plain C++ and are checked here too, by compiling and running its slot check.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from trt_trace.schema.trace_format import Flag

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")
def test_every_fake_vtable_slot_is_where_tensorrt_10_15_has_it(tmp_path: Path) -> None:
    exe = tmp_path / "slot_check"
    subprocess.run(["g++", "-std=c++17", "-O1", f"-I{ROOT / 'tests' / 'faketrt'}",
                    str(ROOT / "tests" / "faketrt" / "slot_check.cpp"), "-o", str(exe)], check=True)
    done = subprocess.run([str(exe)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "every vtable slot" in done.stdout


def test_slot_check_covers_every_declared_slot() -> None:
    """Every virtual slot the ABI header declares is checked (a slot added without a check fails)."""
    header = (ROOT / "tests" / "faketrt" / "faketrt_abi.h").read_text()
    check = (ROOT / "tests" / "faketrt" / "slot_check.h").read_text()
    unimplemented = re.findall(r"^\s*FAKETRT_UNIMPLEMENTED\((\w+), (\d+)\)", header, re.M)
    checked = set(re.findall(r"FAKETRT_EXPECT_UNIMPL\(\w+, (\d+)\)", check))
    assert unimplemented and {n for _, n in unimplemented} <= checked
    methods = re.findall(r"virtual [^(;~]*?(\w+)\([^;]*?;\s*// (\d+)", header)  # destructors: not member-pointable
    for name, slot in methods:
        assert re.search(rf"FAKETRT_EXPECT\(\w+, {name}, {slot}\)", check), (name, slot)


def test_engine_stream_flag_matches_the_record_header() -> None:
    text = (ROOT / "csrc" / "common" / "record.h").read_text()
    m = re.search(r"kFlagEngineStream = 1 << (\d+)", text)
    assert m and Flag.ENGINE_STREAM == 1 << int(m.group(1))
    assert Flag.ENGINE_STREAM not in (Flag.ERROR, Flag.NESTED, Flag.CAPTURED)
