"""Start-up hook: trace the whole process when TRT_TRACE_OUT is set, serve live metrics when
TRT_TRACE_METRICS_PORT is, and arm it for `trt-trace capture` when TRT_TRACE_ARM=1 (the import of
trt_trace below arms it: trt_trace/runtime/on_demand.py), with no code change.

trt_trace_autostart.pth (installed at the top of site-packages) imports this module at interpreter
start-up, only when one of them (or TRT_TRACE_FLIGHT, or TRT_TRACE_LAYERS: alone it gets a warning)
is set. It is a top-level module, not part of the trt_trace package, because `import trt_trace`
imports torch and loads the tracer: that would cost every Python process (pip, shell helpers, ...)
a second. Instead tracing starts right after the process imports torch, which any process that can
run an engine does before its first call. A problem with the settings is one warning line; the
program always runs on.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys


def _start_from_env() -> None:
    library = sys.modules.get("trt_trace.native._library")
    if library is not None and library.loading_here():
        # `import trt_trace` came first and its load of the tracer imports torch: starting now would need the
        # library that load is loading (and wait on it for ever). Start right after it instead.
        library.after_load(_start_from_env)
        return
    try:
        import dataclasses

        from trt_trace.runtime import config, session  # torch is imported by now
        from trt_trace.schema.errors import BufferUnavailable

        metrics = config.metrics_from_env()
        if metrics is not None:
            from trt_trace.runtime import metrics as live_metrics

            live_metrics.serve_when_engines_run(metrics, quiet=config.quiet())
        settings = config.from_env()  # no output path: metrics alone (TRT_TRACE_FLIGHT names one itself)
        if settings.out is None and settings.layers and metrics is None:
            config.warn("TRT_TRACE_LAYERS is set but TRT_TRACE_OUT is not: per-layer times go into a trace; set "
                        "TRT_TRACE_OUT=trace.json too (running untraced)")
        if settings.out is None or session.active() is not None:
            return
        try:
            try:
                session.start_session(settings)
            except BufferUnavailable as exc:  # a bad setting never leaves the run untraced: the default
                config.warn(f"TRT_TRACE_BUFFER: {exc}; using the default, "
                            f"{config.events_text(config.DEFAULT_BUFFER_EVENTS)}")
                session.start_session(dataclasses.replace(settings, buffer_events=config.DEFAULT_BUFFER_EVENTS))
        except session.TraceError as exc:
            config.warn(f"TRT_TRACE_OUT: {exc}; running untraced")
    except Exception as exc:  # never take the user's process down
        try:
            sys.stderr.write(f"trt_trace: could not start tracing ({type(exc).__name__}: {exc}); running untraced\n")
        except Exception:
            pass


class _AfterTorchImport(importlib.abc.MetaPathFinder):
    """Runs _start_from_env once `import torch` has finished."""

    def find_spec(self, fullname, path, target=None):  # noqa: ANN001
        if fullname != "torch":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec("torch")
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        exec_module = loader.exec_module

        def exec_then_start(module):  # noqa: ANN001
            exec_module(module)
            _start_from_env()

        loader.exec_module = exec_then_start  # type: ignore[method-assign]
        return spec


def install() -> None:
    if "torch" in sys.modules:
        _start_from_env()
    elif not any(isinstance(f, _AfterTorchImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterTorchImport())


install()
