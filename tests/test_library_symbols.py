"""The built libraries import no std::filesystem function. The CUDA builds of torch's libtorch.so
export a copy of their own, the dynamic linker binds our calls to it, and on torch 2.11 + CUDA 13
that copy jumped to address 0: the layer window's folder clean-up crashed the process on the H200
(csrc/common/posix_files.h does those steps with POSIX calls instead)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

import trt_trace

LIBRARIES = sorted(Path(trt_trace.__file__).parent.rglob("*.so"))


def test_the_package_has_its_libraries():
    names = {p.name.split(".")[0] for p in LIBRARIES}
    assert {"_trt_trace", "_trt_trace_read", "_runtime"} <= names, LIBRARIES


@pytest.mark.parametrize("library", LIBRARIES, ids=lambda p: p.name)
def test_no_std_filesystem_import(library: Path):
    nm = shutil.which("nm")
    assert nm is not None, "nm (binutils) is needed to read the libraries' imports"
    imports = subprocess.run([nm, "-D", "-C", "--undefined-only", str(library)], capture_output=True, text=True,
                             check=True).stdout.splitlines()
    assert [s for s in imports if "std::filesystem" in s or "std::__fs" in s] == []
