"""Settings read from the environment, with one-line warnings for nonsense values.

Every bad value is reported once on stderr as `trt_trace: <VAR>=<value>: <what is wrong>; <the fix>`
and replaced by its default: a bad setting never stops the user's program.
"""

from __future__ import annotations

import os
import socket
import sys
from dataclasses import dataclass

DEFAULT_BUFFER_EVENTS = 1 << 16  # per thread; 40 bytes each -> 2.5 MiB
MAX_BUFFER_EVENTS = 1 << 30  # per thread: 40 GiB


def warn(message: str) -> None:
    """The one way trt_trace reports a problem: a single line on stderr."""
    try:
        sys.stderr.write(f"trt_trace: {message}\n")
        sys.stderr.flush()
    except Exception:
        pass


def mib(n_bytes: int) -> str:
    """A size in MiB as TRT_TRACE_MAX_MB gives it: 0.05, 2, 1024; a tiny one with 3 significant digits."""
    value = n_bytes / 2**20
    return f"{round(value, 3):g}" if value >= 0.01 or value == 0 else f"{value:.3g}"


def shown(text: object) -> str:
    """A user's value (a path, a command) as a one-line message quotes it: as it is where it prints as
    one line, else with its control characters escaped (repr)."""
    value = str(text)
    return value if value.isprintable() else repr(value)


def parse_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    value = raw.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    warn(f"{name}={raw!r} is not a boolean; use 1 or 0 (using {int(default)})")
    return default


def parse_count(text: str) -> int:
    """'65536', '64k', '1M' -> int. Raises ValueError."""
    t = text.strip().lower()
    scale = 1
    if t and t[-1] in "km":
        scale = 1024 if t[-1] == "k" else 1024 * 1024
        t = t[:-1]
    value = int(t) * scale
    if value <= 0:
        raise ValueError("must be positive")
    return value


def buffer_events() -> int:
    raw = os.environ.get("TRT_TRACE_BUFFER")
    if raw is None or raw.strip() == "":
        return DEFAULT_BUFFER_EVENTS
    try:
        value = parse_count(raw)
    except ValueError:
        warn(
            f"TRT_TRACE_BUFFER={raw!r} is not a positive event count; use e.g. 65536, 256k or 1M "
            f"(using {DEFAULT_BUFFER_EVENTS})"
        )
        return DEFAULT_BUFFER_EVENTS
    if value > MAX_BUFFER_EVENTS:
        warn(f"TRT_TRACE_BUFFER={raw!r} is over 1G events per thread; using {MAX_BUFFER_EVENTS}")
        value = MAX_BUFFER_EVENTS
    return value


DEFAULT_MAX_MB = 1024.0  # the Perfetto UI struggles with JSON traces of ~1 GB


def _env_number(name: str, default: float, hint: str, allow_zero: bool = True) -> float:
    """A finite number > 0 (or 0 where allow_zero) from the environment; a bad value is one warning
    line with `hint` (what it should be, with an example), and the default."""
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = float(raw)
        if not (value > 0 or (allow_zero and value == 0)) or value == float("inf"):
            raise ValueError
    except ValueError:
        warn(f"{name}={raw!r} is not a {hint} (using {default:g})")
        return default
    return value


def max_bytes() -> int:
    """TRT_TRACE_MAX_MB: size limit of one trace file in MiB (0: none)."""
    mib = _env_number("TRT_TRACE_MAX_MB", DEFAULT_MAX_MB, "size in MiB; use e.g. 512, or 0 for no limit")
    return int(mib * 1024 * 1024)


def split_at_limit() -> bool:
    """TRT_TRACE_ON_LIMIT: 'split' (numbered files, default) or 'stop' (no more events written)."""
    raw = os.environ.get("TRT_TRACE_ON_LIMIT")
    if raw is None or raw.strip() == "":
        return True
    value = raw.strip().lower()
    if value in ("split", "stop"):
        return value == "split"
    warn(f"TRT_TRACE_ON_LIMIT={raw!r} must be split or stop (using split)")
    return True


DEFAULT_FLIGHT_MAX_MB = 256  # 6.7 M records (40 bytes each): about 1.3 M calls of 5 records
FLIGHT_DEFAULT_OUT = "trt_trace_flight_{pid}.json"  # dumps' name when TRT_TRACE_OUT is not set


def flight_seconds() -> float:
    """TRT_TRACE_FLIGHT: the flight recorder's window in seconds (unset or 0: off)."""
    return _env_number("TRT_TRACE_FLIGHT", 0.0, "number of seconds; use e.g. 30 (0: off)")


def flight_max_bytes() -> int:
    """TRT_TRACE_FLIGHT_MAX_MB: the flight recorder's memory cap in MiB."""
    mib = _env_number("TRT_TRACE_FLIGHT_MAX_MB", DEFAULT_FLIGHT_MAX_MB, "positive size in MiB; use e.g. 512",
                      allow_zero=False)
    return int(mib * 1024 * 1024)


def cache_dir() -> str:
    """TRT_TRACE_CACHE_DIR: where the stand-in's compiled AOTInductor packages are kept (by content)."""
    return os.environ.get("TRT_TRACE_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "trt_trace")


def quiet() -> bool:
    """TRT_TRACE_QUIET=1: no "trace written" line at exit (for sessions from the API too)."""
    return parse_bool("TRT_TRACE_QUIET", False)


def engine_stream_spans() -> bool:
    """TRT_TRACE_ENGINE_STREAM=0: GPU spans on the caller's stream only (for sessions from the API too)."""
    return parse_bool("TRT_TRACE_ENGINE_STREAM", True)


MAX_GPU_EVERY = 1 << 20  # csrc/hook/gpu_sampling.h kMaxGpuEvery
DEFAULT_GPU_EVERY = 1
DEFAULT_CALLER_WAIT_EVERY = 8  # csrc/hook/gpu_sampling.h kCallerWaitEvery


def gpu_every() -> int:
    """TRT_TRACE_GPU_EVERY=N: GPU events on every Nth traced CUDA call of each engine (default 1: all)."""
    return _env_call_count("TRT_TRACE_GPU_EVERY", DEFAULT_GPU_EVERY,
                           "use e.g. 8 for GPU events on every 8th call, or TRT_TRACE_GPU=0 for none")


def caller_wait_every() -> int:
    """TRT_TRACE_CALLER_WAIT_EVERY=N: where an engine runs on a stream of its own, 1 in N of its measured
    calls also get a caller-stream wait (default 8; 1: every measured call), for sessions from the API too."""
    return _env_call_count("TRT_TRACE_CALLER_WAIT_EVERY", DEFAULT_CALLER_WAIT_EVERY,
                           "use e.g. 1 for a caller-stream wait on every measured call")


def _env_call_count(name: str, default: int, hint: str) -> int:
    """A whole number of calls from 1 to MAX_GPU_EVERY from the environment; unset: `default`; nonsense:
    one line and `default`; too large: one line and MAX_GPU_EVERY."""
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        value = 0
    if value < 1:
        warn(f"{name}={raw!r} is not a call count >= 1; {hint} (using {default})")
        return default
    if value > MAX_GPU_EVERY:
        warn(f"{name}={raw!r} is over {MAX_GPU_EVERY} calls; using {MAX_GPU_EVERY}")
        return MAX_GPU_EVERY
    return value


def host_name() -> str:
    """The host name written into traces and into {host}: the two must agree for `trt-trace merge`."""
    return socket.gethostname()


def _env_int(name: str) -> int | None:
    raw = os.environ.get(name, "").strip()
    try:
        return int(raw) if raw else None
    except ValueError:
        return None


def rank_info() -> dict[str, int | None]:
    """The distributed launcher's view of this process (torchrun, mpirun wrappers and Slurm scripts
    that follow torch's convention set RANK, LOCAL_RANK and WORLD_SIZE); None where unset."""
    return {"rank": _env_int("RANK"), "local_rank": _env_int("LOCAL_RANK"), "world_size": _env_int("WORLD_SIZE")}


def trace_format() -> str | None:
    """TRT_TRACE_FORMAT: 'json' or 'perfetto'; unset or 'auto': by the suffix of TRT_TRACE_OUT."""
    raw = os.environ.get("TRT_TRACE_FORMAT")
    if raw is None or raw.strip().lower() in ("", "auto"):
        return None
    from .formats import written  # the format registry: every format a session can write

    value = raw.strip().lower()
    if value in written():
        return value
    warn(f"TRT_TRACE_FORMAT={raw!r} must be {' or '.join(written())} (using the file name's suffix)")
    return None


def expand_path(template: str) -> str:
    """Replaces {pid}, {rank} and {host} in an output path template.

    {rank} is RANK (global, unique across hosts), else LOCAL_RANK (unique on one host only), else 0
    (a process started without a launcher is the only rank of its job)."""
    rank = os.environ.get("RANK", "").strip() or os.environ.get("LOCAL_RANK", "").strip() or "0"
    values = {"pid": str(os.getpid()), "rank": rank, "host": host_name()}
    out = template
    for key, value in values.items():
        out = out.replace("{" + key + "}", value)
    return out


@dataclass(frozen=True)
class Settings:
    """Everything that shapes one tracing session, in one object passed whole.

    The environment (from_env), `trt_trace.start()` / `tracing()` keywords and a forked child's
    session all make one of these, so no setting can be lost on the way."""

    out: str | None = None  # output path; {pid}, {rank} and {host} are replaced when the session starts
    buffer_events: int = DEFAULT_BUFFER_EVENTS  # ring capacity per thread, in records
    gpu: bool = True  # GPU spans (CUDA events) for CUDA calls
    gpu_every: int = DEFAULT_GPU_EVERY  # GPU events on every Nth CUDA call of each engine (per calling thread); 1: all
    nvtx: bool = False  # NVTX ranges for Nsight Systems
    max_bytes: int = int(DEFAULT_MAX_MB * 1024 * 1024)  # size limit of one file (0: none)
    split: bool = True  # past max_bytes: continue in numbered files (True) or stop writing (False)
    format: str | None = None  # "json" | "perfetto" | None (by the file name's suffix)
    lazy_file: bool = False  # create the file only when the first call is traced
    flight_s: float = 0.0  # > 0: flight recorder, keep the last flight_s seconds, write only on dump
    flight_max_bytes: int = DEFAULT_FLIGHT_MAX_MB * 1024 * 1024  # the flight recorder's memory cap
    flight_on_exit: bool = False  # the flight recorder also dumps at exit
    quiet: bool = False  # no "trace written to ..." line at exit
    engine_stream_spans: bool = True  # GPU spans on an engine's own stream where it has one
    caller_wait_every: int = DEFAULT_CALLER_WAIT_EVERY  # 1 in N measured calls there also get a caller-stream wait


def from_env() -> Settings:
    out = os.environ.get("TRT_TRACE_OUT")
    if out is not None and out.strip() == "":
        warn("TRT_TRACE_OUT is set but empty; give a file name such as trace.json (running untraced)")
        out = None
    flight = flight_seconds()
    if flight > 0 and out is None:
        out = FLIGHT_DEFAULT_OUT
    return Settings(
        out=out,
        buffer_events=buffer_events(),
        gpu=parse_bool("TRT_TRACE_GPU", True),
        gpu_every=gpu_every(),
        nvtx=parse_bool("TRT_TRACE_NVTX", False),
        max_bytes=max_bytes(),
        split=split_at_limit(),
        format=trace_format(),
        # Children that import torch but run no engine (compile workers, data loader workers)
        # inherit the variable and must not leave empty traces behind.
        lazy_file=True,
        flight_s=flight,
        flight_max_bytes=flight_max_bytes(),
        flight_on_exit=parse_bool("TRT_TRACE_FLIGHT_ON_EXIT", False),
        quiet=quiet(),
        engine_stream_spans=engine_stream_spans(),
        caller_wait_every=caller_wait_every(),
    )


DEFAULT_METRICS_ADDR = "127.0.0.1"  # local only: exposing a process's metrics is the operator's choice


@dataclass(frozen=True)
class MetricsSettings:
    """Where the live metrics are served (process-wide, independent of any tracing session)."""

    port: int  # 0: any free port (the start-up line says which)
    addr: str = DEFAULT_METRICS_ADDR


def metrics_from_env() -> MetricsSettings | None:
    """TRT_TRACE_METRICS_PORT (and TRT_TRACE_METRICS_ADDR): None when unset or not a port."""
    raw = os.environ.get("TRT_TRACE_METRICS_PORT")
    if raw is None or raw.strip() == "":
        return None
    try:
        port = int(raw.strip())
        if not 0 <= port <= 65535:
            raise ValueError
    except ValueError:
        warn(f"TRT_TRACE_METRICS_PORT={raw!r} is not a TCP port; use e.g. 9400 (running without metrics)")
        return None
    addr = os.environ.get("TRT_TRACE_METRICS_ADDR", "").strip() or DEFAULT_METRICS_ADDR
    return MetricsSettings(port=port, addr=addr)
