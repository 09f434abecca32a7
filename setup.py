"""Builds the two C++ libraries against the installed torch.

* trt_trace/_trt_trace*.so  the tracer: csrc/{buffer,stats,format,engines,integrations,layers,hook,drainer,session,
  metrics,ops}
* trt_trace/standin/_runtime*.so  the stand-in Torch-TensorRT runtime (csrc/standin)
* trt_trace/_trt_trace_read.so  the trace readers' native code (csrc/readers, csrc/format and the
  table formatter stats/timing_table.cpp): no torch, a C interface loaded with ctypes, so that the
  reading CLI verbs never import torch

The first two are plain torch libraries loaded with torch.ops.load_library (no Python
module init), so a C++ process can dlopen them too. Install with
`pip install --no-build-isolation .` so the installed torch is built against
and never replaced. With a CUDA build of torch and a CUDA toolkit the CUDA
paths (GPU timing, stand-in streams) are compiled in; otherwise CPU only.
"""

import glob
import os
import shutil

from setuptools import Extension as PlainExtension
from setuptools import setup
from setuptools.command.build_py import build_py
from torch.utils import cpp_extension

HERE = os.path.dirname(os.path.abspath(__file__))


def sources(*folders: str) -> list[str]:
    out: list[str] = []
    for folder in folders:
        out += sorted(glob.glob(os.path.join("csrc", folder, "*.cpp")))
    return out


def want_cuda() -> bool:
    if os.environ.get("TRT_TRACE_BUILD_CUDA", "auto") == "0":
        return False
    import torch

    return torch.version.cuda is not None and cpp_extension.CUDA_HOME is not None


def nvtx_include() -> list[str]:
    try:
        import nvidia
    except ImportError:
        return []
    for root in nvidia.__path__:
        for sub in ("cu13/include", "nvtx/include", "cu12/include"):
            path = os.path.join(root, sub)
            if os.path.isdir(os.path.join(path, "nvtx3")):
                return [path]
    return []


CUDA = want_cuda()
Extension = cpp_extension.CUDAExtension if CUDA else cpp_extension.CppExtension
common = dict(
    include_dirs=[os.path.join(HERE, "csrc")],
    extra_compile_args={"cxx": ["-O2", "-std=c++17", "-fvisibility=hidden"]},
)
tracer_macros = [("TRT_TRACE_WITH_CUDA", "1")] if CUDA else []
if nvtx_include():
    common["include_dirs"] = common["include_dirs"] + nvtx_include()
    tracer_macros.append(("TRT_TRACE_WITH_NVTX", "1"))


class BuildPyWithStartupHook(build_py):
    """Also installs trt_trace_autostart.pth at the top of site-packages: it
    starts tracing at interpreter start-up when TRT_TRACE_OUT is set."""

    def run(self) -> None:
        super().run()
        shutil.copy(os.path.join(HERE, "trt_trace", "trt_trace_autostart.pth"), self.build_lib)


setup(
    ext_modules=[
        Extension(
            name="trt_trace._trt_trace",
            sources=sources("buffer", "stats", "format", "engines", "integrations", "layers", "hook", "drainer",
                            "session", "metrics", "ops"),
            define_macros=tracer_macros,
            libraries=["dl"],
            **common,
        ),
        PlainExtension(  # no torch: setuptools' own Extension, not torch's CppExtension
            name="trt_trace._trt_trace_read",
            sources=sources("readers") + [os.path.join("csrc", "stats", "timing_table.cpp")],
            include_dirs=[os.path.join(HERE, "csrc")],
            extra_compile_args={"cxx": ["-O3", "-std=c++17", "-fvisibility=hidden"]},
            extra_link_args=["-pthread"],
        ),
        Extension(
            name="trt_trace.standin._runtime",
            sources=sources("standin"),
            define_macros=[("STANDIN_WITH_CUDA", "1")] if CUDA else [],
            **common,
        ),
    ],
    cmdclass={
        "build_ext": cpp_extension.BuildExtension.with_options(no_python_abi_suffix=True),
        "build_py": BuildPyWithStartupHook,
    },
)
