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


def warn(message: str) -> None:
    """The one way trt_trace reports a problem: a single line on stderr."""
    try:
        sys.stderr.write(f"trt_trace: {message}\n")
        sys.stderr.flush()
    except Exception:
        pass


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
    if value > (1 << 30):
        warn(f"TRT_TRACE_BUFFER={raw!r} is over 1G events per thread; using {1 << 30}")
        value = 1 << 30
    return value


DEFAULT_MAX_MB = 1024.0  # the Perfetto UI struggles with JSON traces of ~1 GB


def max_bytes() -> int:
    """TRT_TRACE_MAX_MB: size limit of one trace file in MiB (0: none)."""
    raw = os.environ.get("TRT_TRACE_MAX_MB")
    if raw is None or raw.strip() == "":
        return int(DEFAULT_MAX_MB * 1024 * 1024)
    try:
        value = float(raw)
        if value < 0 or value != value:
            raise ValueError
    except ValueError:
        warn(f"TRT_TRACE_MAX_MB={raw!r} is not a size in MiB; use e.g. 512, or 0 for no limit "
             f"(using {DEFAULT_MAX_MB:g})")
        value = DEFAULT_MAX_MB
    return int(value * 1024 * 1024)


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
    value = raw.strip().lower()
    if value in ("json", "perfetto"):
        return value
    warn(f"TRT_TRACE_FORMAT={raw!r} must be json or perfetto (using the file name's suffix)")
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
    nvtx: bool = False  # NVTX ranges for Nsight Systems
    max_bytes: int = int(DEFAULT_MAX_MB * 1024 * 1024)  # size limit of one file (0: none)
    split: bool = True  # past max_bytes: continue in numbered files (True) or stop writing (False)
    format: str | None = None  # "json" | "perfetto" | None (by the file name's suffix)
    lazy_file: bool = False  # create the file only when the first call is traced


def from_env() -> Settings:
    out = os.environ.get("TRT_TRACE_OUT")
    if out is not None and out.strip() == "":
        warn("TRT_TRACE_OUT is set but empty; give a file name such as trace.json (running untraced)")
        out = None
    return Settings(
        out=out,
        buffer_events=buffer_events(),
        gpu=parse_bool("TRT_TRACE_GPU", True),
        nvtx=parse_bool("TRT_TRACE_NVTX", False),
        max_bytes=max_bytes(),
        split=split_at_limit(),
        format=trace_format(),
        # Children that import torch but run no engine (compile workers, data loader workers)
        # inherit the variable and must not leave empty traces behind.
        lazy_file=True,
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
