"""Every setting of a tracing session, in one table: the `Settings` dataclass, each field carrying its
environment variable, its parser, its keyword check, its `trt-trace run` flag and its help
(`dataclasses.field(metadata=...)`, read through `setting()`).

The environment (`from_env`), `start(path, **overrides)` (`from_keywords`), the forked child
(`dataclasses.replace` of its parent's), `trt-trace run`'s flags (`run_flags`) and
docs/configuration.md's table (`settings_table_markdown`, checked by tests/test_configuration.py) are all
derived from it. Every bad value is reported once on stderr as `trt_trace: <VAR>=<value>: <what is
wrong>; <the fix>` and replaced by its default: a bad setting never stops the user's program; a bad
keyword is one TraceError line and no session.
"""

from __future__ import annotations

import dataclasses
import os
import re
import socket
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..io.formats import written  # the format registry: every format a session can write
from ..schema.errors import TraceError

DEFAULT_BUFFER_EVENTS = 1 << 16  # per thread; 40 bytes each -> 2.5 MiB
MIN_BUFFER_EVENTS = 64  # a ring's least capacity (csrc/buffer/thread_rings.cpp round_up_pow2)
MAX_BUFFER_EVENTS = 1 << 30  # per thread: 40 GiB
RECORD_BYTES = 40  # one ring slot (csrc/common/record.h)
# TRT_TRACE_BUFFER's units: binary, as the ring's sizes are powers of two (64k = 65536 events).
COUNT_UNITS = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
COUNT_EXAMPLES = "65536, 256k, 1M or 1G"
DEFAULT_MAX_MB = 1024.0  # the Perfetto UI struggles with JSON traces of ~1 GB
DEFAULT_FLIGHT_MAX_MB = 256  # 6.7 M records (40 bytes each): about 1.3 M calls of 5 records
FLIGHT_DEFAULT_OUT = "trt_trace_flight_{pid}.json"  # dumps' name when TRT_TRACE_OUT is not set
MAX_GPU_EVERY = 1 << 20  # csrc/stats/gpu_sampling.h kMaxGpuEvery
DEFAULT_GPU_EVERY = 1
DEFAULT_CALLER_WAIT_EVERY = 8  # csrc/stats/gpu_sampling.h kCallerWaitEvery
MAX_LAYER_CALLS = 1 << 20  # TRT_TRACE_LAYERS: calls per engine profiled layer by layer


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



# -- parsers of the environment's text: (variable, raw text, default) -> value; nonsense: one line, default ----------

def _bool(name: str, raw: str, default: bool) -> bool:
    value = raw.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    warn(f"{name}={raw!r} is not a boolean; use 1 or 0 (using {int(default)})")
    return default


def parse_bool(name: str, default: bool) -> bool:
    """A boolean variable: 1/true/yes/on, 0/false/no/off; unset or blank: `default`."""
    raw = os.environ.get(name)
    return default if raw is None or raw.strip() == "" else _bool(name, raw, default)


def parse_count(text: str) -> int:
    """'65536', '64k', '1M', '1G' -> int; the units are binary (k = 1024, M = 1024**2, G = 1024**3), either
    case. Raises ValueError."""
    t = text.strip().lower()
    scale = 1
    if t and t[-1] in COUNT_UNITS:
        scale = COUNT_UNITS[t[-1]]
        t = t[:-1]
    if not t.isascii() or not t.isdigit():  # int() would take '+5', '1_000' and other scripts' digits
        raise ValueError("not a whole number")
    value = int(t) * scale
    if value <= 0:
        raise ValueError("must be positive")
    return value


def ring_events(n: int) -> int:
    """The capacity a ring of `n` events gets: rounded up to a power of two, at least MIN_BUFFER_EVENTS
    (csrc/buffer/thread_rings.cpp), so that what a line says is what the rings hold."""
    used = MIN_BUFFER_EVENTS
    while used < n:
        used <<= 1
    return used


def events_text(n: int) -> str:
    """A ring capacity as a line says it: `1G events (40 GiB per thread)`."""
    for unit, size in (("G", 1 << 30), ("M", 1 << 20), ("k", 1 << 10)):
        if n >= size and n % size == 0:
            shown_n = f"{n // size}{unit}"
            break
    else:
        shown_n = str(n)
    return f"{shown_n} events ({mib(n * RECORD_BYTES)} MiB per thread)"


def _events(name: str, raw: str, default: int) -> int:
    try:
        value = parse_count(raw)
    except ValueError:
        warn(f"{name}={raw!r} is not a positive event count; use e.g. {COUNT_EXAMPLES} (using {default})")
        return default
    if value > MAX_BUFFER_EVENTS:
        warn(f"{name}={raw!r} is over the most a thread's ring can hold; using {events_text(MAX_BUFFER_EVENTS)}")
        value = MAX_BUFFER_EVENTS
    return ring_events(value)


def _number(hint: str, allow_zero: bool = True) -> Callable[[str, str, float], float]:
    """A finite number > 0 (or 0 where allow_zero); a bad value is one warning line with `hint` (what it
    should be, with an example), and the default."""

    def read(name: str, raw: str, default: float) -> float:
        try:
            value = float(raw)
            if not (value > 0 or (allow_zero and value == 0)) or value == float("inf"):
                raise ValueError
        except ValueError:
            warn(f"{name}={raw!r} is not a {hint} (using {default:g})")
            return default
        return value

    return read


MAX_SIZE_BYTES = 2**63 - 1  # the native writer takes sizes as int64 (tests/test_property.py: 2**63 was a traceback)


def _mib(hint: str, allow_zero: bool = True) -> Callable[[str, str, int], int]:
    """A size in MiB (the environment's unit) as bytes (the setting's)."""
    number = _number(hint, allow_zero)

    def read(name: str, raw: str, default: int) -> int:
        # At most what the native writer takes (an int64 of bytes): a larger size is no limit in practice.
        return min(int(number(name, raw, default / 2**20) * 1024 * 1024), MAX_SIZE_BYTES)

    return read


def _calls(field_name: str, nonsense: str) -> Callable[[str, str, int], int]:
    """A whole number of calls in the bounds of Settings field `field_name`; nonsense (or below them): one
    line (`nonsense`, formatted with name, raw, default and the least value) and the default; too large: one
    line and the most."""

    def read(name: str, raw: str, default: int) -> int:
        least, most = bounds(field_name)
        try:
            value = int(raw.strip())
        except ValueError:
            value = least - 1
        if value < least:
            warn(nonsense.format(name=name, raw=raw, default=default, least=least))
            return default
        if value > most:
            warn(f"{name}={raw!r} is over {most} calls; using {most}")
            return most
        return value

    return read


def _on_limit(name: str, raw: str, default: bool) -> bool:
    value = raw.strip().lower()
    if value in ("split", "stop"):
        return value == "split"
    warn(f"{name}={raw!r} must be split or stop (using split)")
    return True


def _format(name: str, raw: str, default: str | None) -> str | None:
    if raw.strip().lower() == "auto":
        return None
    value = raw.strip().lower()
    if value in written():
        return value
    warn(f"{name}={raw!r} must be {' or '.join(written())} (using the file name's suffix)")
    return None


def _out(name: str, raw: str, default: str | None) -> str | None:
    if raw.strip() == "":
        warn(f"{name} is set but empty; give a file name such as trace.json (running untraced)")
        return None
    return raw


# -- checks of start()'s keywords: (keyword, value) -> value, else one TraceError line naming the fix ------------------

def check_flag(name: str, value: object) -> bool:
    """A keyword that switches something: True or False (1 and 0 pass), else TraceError."""
    if isinstance(value, bool) or (isinstance(value, int) and value in (0, 1)):
        return bool(value)
    raise TraceError(f"{name} must be True or False, not {value!r}")


def check_count(name: str, value: object, what: str, hint: str, minimum: int = 1, maximum: int | None = None) -> int:
    """A whole number from `minimum` (to `maximum`), else TraceError naming `what` it counts and `hint`."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum or (
            maximum is not None and value > maximum):
        upto = f" to {maximum}" if maximum is not None else ""
        raise TraceError(f"{name} must be a whole number of {what} from {minimum}{upto}, not {value!r}; {hint}")
    return value


def _output_path(name: str, value: object) -> str:
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if not isinstance(value, str):
        raise TraceError(f"the trace path must be a file name such as 'trace.json', not {value!r}")
    return value


def _buffer_keyword(name: str, value: object) -> int:
    """buffer_events=: events per thread as a number or as TRT_TRACE_BUFFER writes them ('256k', '1M')."""
    if value is None:
        return DEFAULT_BUFFER_EVENTS
    hint = "give e.g. 65536, '256k', '1M' or '1G' (None: the default, 64k)"
    if isinstance(value, str):
        try:
            value = parse_count(value)
        except ValueError:
            raise TraceError(f"{name} must be a positive number of events per thread, not {value!r}; "
                             f"{hint}") from None
    return ring_events(check_count(name, value, "events per thread", hint, maximum=MAX_BUFFER_EVENTS))


def in_bounds(name: str, value: object) -> bool:
    """The one range check of a setting C++ takes: a whole number (not a bool) within its row's bounds."""
    least, most = bounds(name)
    return not isinstance(value, bool) and isinstance(value, int) and least <= value <= most


def check_gpu_every(n: object) -> int:
    """A session's gpu_every: a whole number of calls in its bounds, else TraceError."""
    if not in_bounds("gpu_every", n):
        raise TraceError(f"gpu_every must be a whole number of calls from 1 (every call) to {bounds('gpu_every')[1]}, "
                         f"not {n!r}; gpu=False turns GPU timing off")
    return n  # type: ignore[return-value]


def check_layers(n: object) -> int:
    """A session's layers: a whole number of calls in its bounds (0: off), else TraceError."""
    if not in_bounds("layers", n):
        raise TraceError(f"layers must be a whole number of calls from 0 (off) to {bounds('layers')[1]}, not {n!r}; "
                         "e.g. layers=10 profiles each engine's next 10 calls layer by layer")
    return n  # type: ignore[return-value]


def _max_bytes_keyword(name: str, value: object) -> int:
    if value is None:
        return int(DEFAULT_MAX_MB * 2**20)
    return check_count(name, value, "bytes", "0: no size limit, None: the default 1 GiB", minimum=0,
                       maximum=MAX_SIZE_BYTES)


def _format_keyword(name: str, value: object) -> str | None:
    if value is not None and not isinstance(value, str):
        raise TraceError(f"format must be 'json', 'perfetto' or None (by the file's suffix), not {value!r}")
    return value  # an unknown name is the format registry's line when the session resolves it


# -- trt-trace run's flags: the value typed -> None, or what is wrong with it ------------------------------------------

def _buffer_flag(value: str) -> str | None:
    try:
        n = parse_count(value)
    except ValueError:
        return f"--buffer {value!r} is not a positive event count; give e.g. {COUNT_EXAMPLES}"
    if n > MAX_BUFFER_EVENTS:
        return f"--buffer {value!r} is over the most a thread's ring can hold, 1G events; give at most 1G"
    return None


def _flight_flag(value: float) -> str | None:
    return None if 0 < value < float("inf") else f"--flight must be a positive number of seconds, not {value:g}"


def _layers_flag(value: int) -> str | None:
    if in_bounds("layers", value):
        return None
    return f"--layers must be a number of calls from 0 to {bounds('layers')[1]}, not {value}"


def _format_choices() -> list[str]:
    return list(written())


@dataclass(frozen=True)
class Setting:
    """One row of the settings table (a Settings field's metadata)."""

    help: str  # what it does, one line (the docs' table, the CLI flag's help)
    env: str | None = None  # the environment variable that sets it
    read: Callable[[str, str, Any], Any] | None = None  # (variable, text, default) -> value; nonsense warns
    blank_is_unset: bool = True  # a blank variable is the default, silently (TRT_TRACE_OUT says it is empty)
    keyword: Callable[[str, object], Any] | None = None  # start()'s keyword check; None: not a keyword of start()
    at_start: str = "keyword"  # how start() sets it: "keyword", "environment" (read then), "flight" (flight()), "fixed"
    native: str | None = None  # its name in the C++ settings (csrc/session/session_control.h kSettings)
    bounds: tuple[int, int] | None = None  # a count's least and most value, where C++ takes it (the same there)
    flag: tuple[str, ...] = ()  # trt-trace run's flag(s), which set `env` for the command
    flag_options: Mapping[str, Any] = dataclasses.field(default_factory=dict)  # argparse's add_argument options
    flag_check: Callable[[Any], str | None] | None = None  # the flag's value -> None, or what is wrong (one line)
    default_doc: str = ""  # the default as the docs give it


def setting(name: str) -> Setting:
    """The table row of Settings field `name`."""
    return _FIELDS[name].metadata["setting"]


def _row(default: Any = None, **row: Any) -> Any:
    return field(default=default, metadata={"setting": Setting(**row)})


@dataclass(frozen=True)
class Settings:
    """Everything that shapes one tracing session, in one object passed whole.

    The environment (from_env), `trt_trace.start()` / `tracing()` keywords (from_keywords) and a forked
    child's session all make one of these, so no setting can be lost on the way. Each field's metadata is
    its row of the settings table (Setting)."""

    out: str | None = _row(
        None, env="TRT_TRACE_OUT", read=_out, blank_is_unset=False, keyword=_output_path,
        help="trace file to write (Chrome JSON; `*.pftrace`: native Perfetto, see [output.md](output.md)); "
             "{pid}, {rank}, {host} are replaced",
        flag=("-o", "--output"), flag_options={"default": "trace.json"}, default_doc="unset: no tracing")
    buffer_events: int = _row(
        DEFAULT_BUFFER_EVENTS, env="TRT_TRACE_BUFFER", read=_events, keyword=_buffer_keyword, native="buffer_capacity",
        bounds=(1, MAX_BUFFER_EVENTS),
        help="ring capacity **per thread** in 40-byte records (`65536`, `256k`, `1M`, `1G`: k, M, G are 1024, 1024², "
             "1024³), rounded up to a power of two (at least 64), at most `1G`; a call takes 2 (3 with a GPU span, 4 "
             "with a caller-stream wait too), expanded into its events by the drainer. A ring that cannot be "
             "allocated at the start: one line and the default (start(): TraceError)",
        flag=("--buffer",), flag_check=_buffer_flag, default_doc="`64k` (2.5 MiB per thread)")
    gpu: bool = _row(
        True, env="TRT_TRACE_GPU", read=_bool, keyword=check_flag, native="gpu_timing",
        help="`0`: no GPU spans (CUDA events) for CUDA calls", default_doc="`1`")
    gpu_every: int = _row(
        DEFAULT_GPU_EVERY, env="TRT_TRACE_GPU_EVERY",
        read=_calls("gpu_every", "{name}={raw!r} is not a call count >= {least}; use e.g. 8 for GPU events on every "
                    "8th call, or TRT_TRACE_GPU=0 for none (using {default})"),
        keyword=lambda name, value: check_gpu_every(value), native="gpu_every", bounds=(1, MAX_GPU_EVERY),
        help="`N` (1 to 1048576): GPU spans for every Nth CUDA call of each engine, per calling thread (see "
             "[gpu-clock.md](gpu-clock.md#sampling-trt_trace_gpu_everyn))", default_doc="`1`")
    nvtx: bool = _row(
        False, env="TRT_TRACE_NVTX", read=_bool, keyword=check_flag, native="nvtx",
        help="`1`: also emit NVTX ranges for Nsight Systems (see [profilers.md](profilers.md))", default_doc="`0`")
    max_bytes: int = _row(
        int(DEFAULT_MAX_MB * 1024 * 1024), env="TRT_TRACE_MAX_MB",
        read=_mib("size in MiB; use e.g. 512, or 0 for no limit"), keyword=_max_bytes_keyword,
        help="size limit of one trace file in MiB (`0`: none; the keyword is in bytes)", default_doc="`1024`")
    split: bool = _row(
        True, env="TRT_TRACE_ON_LIMIT", read=_on_limit, keyword=check_flag,
        help="past the limit: `split` into `trace.1.json`, `trace.2.json`, … (each complete), or `stop` writing "
             "(the keyword: `split=True` / `False`)", default_doc="`split`")
    format: str | None = _row(
        None, env="TRT_TRACE_FORMAT", read=_format, keyword=_format_keyword,
        help="`json` or `perfetto`, whatever the file's suffix", flag=("--format",),
        flag_options={"choices": _format_choices}, default_doc="by suffix")
    lazy_file: bool = _row(
        False, keyword=check_flag,
        help="create the file only when the first call is traced (always on from the environment: no empty files "
             "from processes that run no engine)", default_doc="off for `start()`")
    flight_s: float = _row(
        0.0, env="TRT_TRACE_FLIGHT", read=_number("number of seconds; use e.g. 30 (0: off)"), at_start="flight",
        help="flight recorder: keep the last SECONDS of calls, write only on a trigger (see "
             "[analysis.md](analysis.md#flight-recorder))",
        flag=("--flight",), flag_options={"type": float, "metavar": "SECONDS"}, flag_check=_flight_flag,
        default_doc="unset: off")
    flight_max_bytes: int = _row(
        DEFAULT_FLIGHT_MAX_MB * 1024 * 1024, env="TRT_TRACE_FLIGHT_MAX_MB",
        read=_mib("positive size in MiB; use e.g. 512", allow_zero=False), at_start="flight",
        help="the flight recorder's memory cap in MiB", default_doc="`256`")
    flight_on_exit: bool = _row(
        False, env="TRT_TRACE_FLIGHT_ON_EXIT", read=_bool, at_start="flight",
        help="`1`: the flight recorder also dumps at exit", default_doc="`0`")
    quiet: bool = _row(
        False, env="TRT_TRACE_QUIET", read=_bool, at_start="environment",
        help='`1`: no "trace written" (or "metrics at") line', default_doc="`0`")
    engine_stream_spans: bool = _row(
        True, env="TRT_TRACE_ENGINE_STREAM", read=_bool, at_start="environment", native="engine_stream_spans",
        help="`0`: GPU spans on the caller's stream only (no c10 GPU trace, see "
             "[gpu-clock.md](gpu-clock.md#spans-on-the-engines-own-stream-two-spans-per-call))", default_doc="`1`")
    caller_wait_every: int = _row(
        DEFAULT_CALLER_WAIT_EVERY, env="TRT_TRACE_CALLER_WAIT_EVERY",
        read=_calls("caller_wait_every", "{name}={raw!r} is not a call count >= {least}; use e.g. 1 for a "
                    "caller-stream wait on every measured call (using {default})"), at_start="environment",
        native="caller_wait_every", bounds=(1, MAX_GPU_EVERY),
        help="`N` (1 to 1048576): where an engine runs on a stream of its own, 1 in N of its measured calls (the "
             "first of a session included, per calling thread) also get a `caller stream wait`; the others record "
             "the engine stream's events only (`1`: every measured call, see "
             "[gpu-clock.md](gpu-clock.md#spans-on-the-engines-own-stream-two-spans-per-call))", default_doc="`8`")
    layers: int = _row(
        0, env="TRT_TRACE_LAYERS", read=_calls("layers", "{name}={raw!r} is not a number of calls; use e.g. 10 for "
                                               "each engine's next 10 calls with per-layer timing, or 0 for none "
                                               "(using {default})"),
        keyword=lambda name, value: check_layers(value), native="layers", bounds=(0, MAX_LAYER_CALLS),
        help="`N` (0 to 1048576): each engine's next N calls after its first run with per-layer timing (the "
             "runtime's own profiler), then normal calls again; `trt-trace layers` reads them (see "
             "[layers.md](layers.md))",
        flag=("--layers",), flag_options={"type": int, "metavar": "N"}, flag_check=_layers_flag,
        default_doc="`0` (off)")

    def native(self) -> dict[str, int | bool]:
        """The settings C++ needs, by their C++ names (the session's start op takes them whole)."""
        return {setting(f.name).native: getattr(self, f.name) for f in FIELDS if setting(f.name).native}


FIELDS = dataclasses.fields(Settings)
_FIELDS = {f.name: f for f in FIELDS}


def bounds(name: str) -> tuple[int, int]:
    """Settings field `name`'s least and most value (a switch: 0 and 1)."""
    row = setting(name)
    return row.bounds if row.bounds is not None else (0, 1)


def native_table() -> list[tuple[str, str, int, int]]:
    """The settings C++ takes as this table defines them: (C++ name, "bool" or "int", least, most), in field
    order; csrc/session/session_control.h kSettings must say the same (tests/test_configuration.py)."""
    return [(setting(f.name).native, str(f.type), *bounds(f.name)) for f in FIELDS if setting(f.name).native]


def env_value(name: str) -> Any:
    """Settings field `name` as the environment gives it: its default when unset (or blank), its parser's
    value (or, for nonsense, one line and the default)."""
    f = _FIELDS[name]
    row: Setting = f.metadata["setting"]
    raw = os.environ.get(row.env) if row.env else None
    if raw is None or (row.blank_is_unset and raw.strip() == ""):
        return f.default
    return row.read(row.env, raw, f.default)


def from_env() -> Settings:
    """The environment's Settings (the TRT_TRACE_OUT start-up hook, `trt-trace run`'s processes)."""
    # The output path and the flight window first: their lines come first, as the session's own.
    names = ["out", "flight_s"] + [f.name for f in FIELDS if f.name not in ("out", "flight_s")]
    values = {name: env_value(name) for name in names if setting(name).env}
    if values["flight_s"] > 0 and values["out"] is None:
        values["out"] = FLIGHT_DEFAULT_OUT
    # Children that import torch but run no engine (compile workers, data loader workers) inherit the
    # variable and must not leave empty traces behind.
    return Settings(**values, lazy_file=True)


def from_keywords(path: object, overrides: Mapping[str, object]) -> Settings:
    """start()'s path and keywords as Settings (`dataclasses.replace` of the defaults): a keyword of the wrong
    kind or range is one TraceError line naming the fix; settings start() takes no keyword for are read from
    the environment (quiet, engine-stream spans, caller-stream waits)."""
    unknown = sorted(set(overrides) - set(start_keywords()))
    if unknown:
        raise TypeError(f"start() got an unexpected keyword argument {unknown[0]!r}")
    checked = {"out": setting("out").keyword("path", path)}
    checked.update({name: setting(name).keyword(name, value) for name, value in overrides.items()})
    from_environment = {f.name: env_value(f.name) for f in FIELDS if setting(f.name).at_start == "environment"}
    return dataclasses.replace(Settings(), **from_environment, **checked)


def start_keywords() -> list[str]:
    """The keywords start() / tracing() / flight() take besides the path."""
    return [f.name for f in FIELDS if setting(f.name).keyword and f.name != "out"]


def run_flags() -> list[tuple[str, Setting]]:
    """trt-trace run's flags: (field, row) of every setting with a flag, in table order."""
    return [(f.name, setting(f.name)) for f in FIELDS if setting(f.name).flag]


def plain(text: str) -> str:
    """A help text of the table without its Markdown (the CLI's help): no backticks, bold or link targets."""
    return re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text).replace("`", "").replace("**", "")


def _default_text(f: dataclasses.Field) -> str:
    return setting(f.name).default_doc or f"`{f.default}`"


def settings_table_markdown() -> str:
    """docs/configuration.md's two tables, derived from the settings table (a test keeps the doc equal to it)."""
    lines = ["| variable | meaning | default |", "| --- | --- | --- |"]
    for f in FIELDS:
        row = setting(f.name)
        if row.env:
            lines.append(f"| `{row.env}` | {row.help} | {_default_text(f)} |")
    lines += ["", "| `Settings` field | environment | `start()` / `tracing()` | `trt-trace run` flag | C++ |",
              "| --- | --- | --- | --- | --- |"]
    how = {"keyword": lambda n: "`path` (first argument)" if n == "out" else f"`{n}=`",
           "environment": lambda n: "read from the environment", "flight": lambda n: "`flight()`",
           "fixed": lambda n: "(fixed)"}
    for f in FIELDS:
        row = setting(f.name)
        env = f"`{row.env}`" if row.env else "on (no empty files)"
        flag = ", ".join(f"`{x}`" for x in row.flag) or "(environment)"
        lines.append(f"| `{f.name}` | {env} | {how[row.at_start](f.name)} | {flag} | "
                     f"{'`' + row.native + '`' if row.native else ''} |")
    return "\n".join(lines) + "\n"


# The reading of one variable each (the tests' and tools' handle on one row of the table).
def _env_reader(field_name: str) -> Callable[[], Any]:
    """Settings field `field_name` as the environment gives it (env_value), documented by its row."""

    def read() -> Any:
        return env_value(field_name)

    row = setting(field_name)
    read.__doc__ = f"{row.env}: {plain(row.help)}"
    return read


buffer_events = _env_reader("buffer_events")
max_bytes = _env_reader("max_bytes")
split_at_limit = _env_reader("split")
flight_seconds = _env_reader("flight_s")
flight_max_bytes = _env_reader("flight_max_bytes")
quiet = _env_reader("quiet")
engine_stream_spans = _env_reader("engine_stream_spans")
gpu_every = _env_reader("gpu_every")
caller_wait_every = _env_reader("caller_wait_every")
layer_calls = _env_reader("layers")
trace_format = _env_reader("format")


def cache_dir() -> str:
    """TRT_TRACE_CACHE_DIR: where the stand-in's compiled AOTInductor packages are kept (by content)."""
    return os.environ.get("TRT_TRACE_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "trt_trace")


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


# -- on-demand capture (runtime/on_demand.py): whether a process is armed, and where the control sockets live --

def arm_from_env() -> bool | None:
    """TRT_TRACE_ARM: True (`1`: armed from start-up, through the start-up hook), False (`0`: never armed,
    not even by `import trt_trace`), None when unset (armed by `import trt_trace`)."""
    raw = os.environ.get("TRT_TRACE_ARM")
    if raw is None or raw.strip() == "":
        return None
    return _bool("TRT_TRACE_ARM", raw, True)


def control_dir_from_env() -> str:
    """Where armed processes keep their control sockets: TRT_TRACE_CONTROL_DIR, else a folder of this user's
    alone ($XDG_RUNTIME_DIR/trt_trace, else /tmp/trt_trace-UID), the same for the target and `trt-trace capture`."""
    raw = os.environ.get("TRT_TRACE_CONTROL_DIR", "").strip()
    if raw:
        return raw
    runtime = os.environ.get("XDG_RUNTIME_DIR", "").strip()
    if runtime and os.path.isdir(runtime):
        return os.path.join(runtime, "trt_trace")
    return os.path.join("/tmp", f"trt_trace-{os.getuid()}")


CUDA_PROFILER_MODES = ("session",)


def cuda_profiler_from_env() -> str | None:
    """TRT_TRACE_CUDA_PROFILER: `session` calls cudaProfilerStart when a session starts recording and
    cudaProfilerStop when it has stopped (runtime/profiler_range.py); None when unset, `0` or nonsense (one line)."""
    raw = os.environ.get("TRT_TRACE_CUDA_PROFILER", "").strip().lower()
    if raw in ("", "0", "off", "false", "no"):
        return None
    if raw not in CUDA_PROFILER_MODES:
        warn(f"TRT_TRACE_CUDA_PROFILER={raw!r} is not a mode; use session (or 0: off) (running without a "
             "cudaProfilerApi range)")
        return None
    return raw
