"""Every TRT_TRACE_* variable reads what docs/configuration.md says: exact values for what it takes,
its default when unset or blank, one warning line and the default (or its cap) for what it does not."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

import trt_trace
from trt_trace.runtime import config
from trt_trace.runtime import session as session_module

MIB = 1 << 20
CASES = [
    # (variable, raw, expected, warns)
    ("TRT_TRACE_BUFFER", "65536", 65536, False),
    ("TRT_TRACE_BUFFER", " 64k ", 64 * 1024, False),
    ("TRT_TRACE_BUFFER", "1M", 1 << 20, False),
    ("TRT_TRACE_BUFFER", "1m", 1 << 20, False),
    ("TRT_TRACE_BUFFER", "1", 64, False),  # what the ring holds: a power of two, at least 64
    ("TRT_TRACE_BUFFER", "100000", 1 << 17, False),
    ("TRT_TRACE_BUFFER", "0", config.DEFAULT_BUFFER_EVENTS, True),
    ("TRT_TRACE_BUFFER", "k", config.DEFAULT_BUFFER_EVENTS, True),
    ("TRT_TRACE_BUFFER", "+5", config.DEFAULT_BUFFER_EVENTS, True),
    ("TRT_TRACE_BUFFER", "1_000", config.DEFAULT_BUFFER_EVENTS, True),
    ("TRT_TRACE_BUFFER", "1025M", 1 << 30, True),
    ("TRT_TRACE_BUFFER", "1024M", 1 << 30, False),
    ("TRT_TRACE_BUFFER", "1G", 1 << 30, False),
    ("TRT_TRACE_BUFFER", "1g", 1 << 30, False),
    ("TRT_TRACE_BUFFER", "2G", 1 << 30, True),
    ("TRT_TRACE_BUFFER", "99999999999", 1 << 30, True),
    ("TRT_TRACE_BUFFER", "", config.DEFAULT_BUFFER_EVENTS, False),
    ("TRT_TRACE_GPU", "0", False, False),
    ("TRT_TRACE_GPU", "off", False, False),
    ("TRT_TRACE_GPU", "No", False, False),
    ("TRT_TRACE_GPU", "false", False, False),
    ("TRT_TRACE_GPU", " TRUE ", True, False),
    ("TRT_TRACE_GPU", "maybe", True, True),
    ("TRT_TRACE_NVTX", "1", True, False),
    ("TRT_TRACE_NVTX", "on", True, False),
    ("TRT_TRACE_NVTX", "yes", True, False),
    ("TRT_TRACE_NVTX", "2", False, True),
    ("TRT_TRACE_NVTX", " ", False, False),
    ("TRT_TRACE_MAX_MB", "2", 2 * MIB, False),
    ("TRT_TRACE_MAX_MB", "0.5", MIB // 2, False),
    ("TRT_TRACE_MAX_MB", "0", 0, False),
    ("TRT_TRACE_MAX_MB", "-1", 1024 * MIB, True),
    ("TRT_TRACE_MAX_MB", "inf", 1024 * MIB, True),
    ("TRT_TRACE_MAX_MB", "nan", 1024 * MIB, True),
    ("TRT_TRACE_ON_LIMIT", "stop", False, False),
    ("TRT_TRACE_ON_LIMIT", " SPLIT ", True, False),
    ("TRT_TRACE_ON_LIMIT", "halt", True, True),
    ("TRT_TRACE_FLIGHT", "30", 30.0, False),
    ("TRT_TRACE_FLIGHT", "0", 0.0, False),
    ("TRT_TRACE_FLIGHT", "-5", 0.0, True),
    ("TRT_TRACE_FLIGHT_MAX_MB", "1", MIB, False),
    ("TRT_TRACE_FLIGHT_MAX_MB", "0", 256 * MIB, True),
    ("TRT_TRACE_FORMAT", "perfetto", "perfetto", False),
    ("TRT_TRACE_FORMAT", " JSON ", "json", False),
    ("TRT_TRACE_FORMAT", "auto", None, False),
    ("TRT_TRACE_FORMAT", "xml", None, True),
    ("TRT_TRACE_GPU_EVERY", "8", 8, False),
    ("TRT_TRACE_GPU_EVERY", "1048576", 1 << 20, False),
    ("TRT_TRACE_GPU_EVERY", "1048577", 1 << 20, True),
    ("TRT_TRACE_GPU_EVERY", "0", 1, True),
    ("TRT_TRACE_CALLER_WAIT_EVERY", "1", 1, False),
    ("TRT_TRACE_CALLER_WAIT_EVERY", "x", 8, True),
    ("TRT_TRACE_ENGINE_STREAM", "0", False, False),
    ("TRT_TRACE_QUIET", "1", True, False),
    ("TRT_TRACE_FLIGHT_ON_EXIT", "1", True, False),
    # Blank is unset: the default, and no line.
    ("TRT_TRACE_MAX_MB", " ", 1024 * MIB, False),
    ("TRT_TRACE_ON_LIMIT", " ", True, False),
    ("TRT_TRACE_FORMAT", " ", None, False),
    ("TRT_TRACE_FLIGHT", "", 0.0, False),
    ("TRT_TRACE_GPU_EVERY", "\t", 1, False),
]

# The whole line for a value each parser refuses: the variable, what it got, the fix, the default used.
LINES = [
    ("TRT_TRACE_BUFFER", "lots", "TRT_TRACE_BUFFER='lots' is not a positive event count; use e.g. 65536, 256k, 1M or "
                                 "1G (using 65536)"),
    ("TRT_TRACE_BUFFER", "99999999999", "TRT_TRACE_BUFFER='99999999999' is over the most a thread's ring can hold; "
                                        "using 1G events (40960 MiB per thread)"),
    ("TRT_TRACE_MAX_MB", "big", "TRT_TRACE_MAX_MB='big' is not a size in MiB; use e.g. 512, or 0 for no limit "
                                "(using 1024)"),
    ("TRT_TRACE_FLIGHT", "soon", "TRT_TRACE_FLIGHT='soon' is not a number of seconds; use e.g. 30 (0: off) (using 0)"),
    ("TRT_TRACE_FLIGHT_MAX_MB", "0", "TRT_TRACE_FLIGHT_MAX_MB='0' is not a positive size in MiB; use e.g. 512 "
                                     "(using 256)"),
    ("TRT_TRACE_GPU_EVERY", "abc", "TRT_TRACE_GPU_EVERY='abc' is not a call count >= 1; use e.g. 8 for GPU events on "
                                   "every 8th call, or TRT_TRACE_GPU=0 for none (using 1)"),
    ("TRT_TRACE_ON_LIMIT", "halt", "TRT_TRACE_ON_LIMIT='halt' must be split or stop (using split)"),
    ("TRT_TRACE_FORMAT", "xml", "TRT_TRACE_FORMAT='xml' must be json or perfetto (using the file name's suffix)"),
    ("TRT_TRACE_GPU", "maybe", "TRT_TRACE_GPU='maybe' is not a boolean; use 1 or 0 (using 1)"),
]
READERS = {
    "TRT_TRACE_BUFFER": config.buffer_events,
    "TRT_TRACE_GPU": lambda: config.from_env().gpu,
    "TRT_TRACE_NVTX": lambda: config.from_env().nvtx,
    "TRT_TRACE_MAX_MB": config.max_bytes,
    "TRT_TRACE_ON_LIMIT": config.split_at_limit,
    "TRT_TRACE_FLIGHT": config.flight_seconds,
    "TRT_TRACE_FLIGHT_MAX_MB": config.flight_max_bytes,
    "TRT_TRACE_FORMAT": config.trace_format,
    "TRT_TRACE_GPU_EVERY": config.gpu_every,
    "TRT_TRACE_CALLER_WAIT_EVERY": config.caller_wait_every,
    "TRT_TRACE_ENGINE_STREAM": config.engine_stream_spans,
    "TRT_TRACE_QUIET": config.quiet,
    "TRT_TRACE_FLIGHT_ON_EXIT": lambda: config.from_env().flight_on_exit,
}


@pytest.fixture(autouse=True)
def _no_settings(monkeypatch):
    for var in list(READERS) + ["TRT_TRACE_OUT", "TRT_TRACE_METRICS_PORT", "TRT_TRACE_METRICS_ADDR"]:
        monkeypatch.delenv(var, raising=False)


@pytest.mark.parametrize("var,raw,expected,warns", CASES)
def test_each_variable_reads_what_the_docs_say(monkeypatch, capsys, var, raw, expected, warns):
    monkeypatch.setenv(var, raw)
    assert READERS[var]() == expected
    err = capsys.readouterr().err
    assert err.count("\n") == (1 if warns else 0), err
    if warns:
        assert err.startswith(f"trt_trace: {var}={raw!r}")


@pytest.mark.parametrize("var,raw,line", LINES)
def test_a_refused_value_gets_one_line_that_names_the_fix(monkeypatch, capsys, var, raw, line):
    monkeypatch.setenv(var, raw)
    READERS[var]()
    assert capsys.readouterr().err == f"trt_trace: {line}\n"


def test_settings_are_frozen_and_default_as_documented():
    import dataclasses

    s = config.Settings()
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.out = "t.json"  # type: ignore[misc]
    assert (s.out, s.lazy_file, s.gpu, s.nvtx, s.flight_s, s.flight_on_exit, s.quiet, s.engine_stream_spans) == (
        None, False, True, False, 0.0, False, False, True)
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.MetricsSettings(port=1).port = 2  # type: ignore[misc]
    assert config.MetricsSettings(port=1).addr == "127.0.0.1"


def test_the_cache_folder(monkeypatch, tmp_path):
    import os

    monkeypatch.setenv("TRT_TRACE_CACHE_DIR", str(tmp_path / "c"))
    assert config.cache_dir() == str(tmp_path / "c")
    monkeypatch.delenv("TRT_TRACE_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert config.cache_dir() == str(tmp_path / "x" / "trt_trace")
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert config.cache_dir() == os.path.join(os.path.expanduser("~/.cache"), "trt_trace")


def test_unset_is_the_default_everywhere(capsys):
    s = config.from_env()
    assert s == config.Settings(out=None, lazy_file=True)  # every other field its default
    assert (s.buffer_events, s.max_bytes, s.split, s.gpu_every, s.caller_wait_every, s.flight_max_bytes) == (
        1 << 16, 1024 * MIB, True, 1, 8, 256 * MIB)
    assert capsys.readouterr().err == ""


def test_the_output_path_and_the_flight_recorders_default_name(monkeypatch, capsys):
    monkeypatch.setenv("TRT_TRACE_OUT", "  ")
    assert config.from_env().out is None
    assert capsys.readouterr().err == ("trt_trace: TRT_TRACE_OUT is set but empty; give a file name such as "
                                       "trace.json (running untraced)\n")
    monkeypatch.setenv("TRT_TRACE_FLIGHT", "0.5")  # any window above 0 names its dumps
    s = config.from_env()
    assert s.out == "trt_trace_flight_{pid}.json" and s.flight_s == 0.5
    monkeypatch.setenv("TRT_TRACE_OUT", "t.json")
    assert config.from_env().out == "t.json"


def test_the_metrics_address_is_local_unless_asked(monkeypatch):
    monkeypatch.setenv("TRT_TRACE_METRICS_PORT", "9400")
    assert config.metrics_from_env() == config.MetricsSettings(port=9400, addr="127.0.0.1")
    monkeypatch.setenv("TRT_TRACE_METRICS_ADDR", "  ")
    assert config.metrics_from_env().addr == "127.0.0.1"


@pytest.mark.parametrize("raw,expected", [("9400", 9400), (" 0 ", 0), ("65535", 65535), ("65536", None),
                                          ("-1", None), ("http", None), ("", None)])
def test_the_metrics_port(monkeypatch, capsys, raw, expected):
    monkeypatch.setenv("TRT_TRACE_METRICS_PORT", raw)
    monkeypatch.setenv("TRT_TRACE_METRICS_ADDR", " 0.0.0.0 ")
    got = config.metrics_from_env()
    assert (None if got is None else got.port) == expected
    if got is not None:
        assert got.addr == "0.0.0.0"
    assert capsys.readouterr().err.count("\n") == (1 if expected is None and raw.strip() else 0)


def test_paths_expand_pid_rank_and_host(monkeypatch):
    import os

    monkeypatch.delenv("RANK", raising=False)
    monkeypatch.setenv("LOCAL_RANK", "3")
    assert config.expand_path("t_{rank}_{pid}.json") == f"t_3_{os.getpid()}.json"
    monkeypatch.setenv("RANK", "7")
    assert config.expand_path("{host}/{rank}") == f"{config.host_name()}/7"
    monkeypatch.delenv("RANK")
    monkeypatch.delenv("LOCAL_RANK")
    assert config.expand_path("t_{rank}.json") == "t_0.json"
    monkeypatch.setenv("WORLD_SIZE", "8")
    monkeypatch.setenv("RANK", " x ")
    assert config.rank_info() == {"rank": None, "local_rank": None, "world_size": 8}
    monkeypatch.setenv("RANK", "5")
    monkeypatch.setenv("LOCAL_RANK", "1")
    assert config.rank_info() == {"rank": 5, "local_rank": 1, "world_size": 8}


def test_a_value_shown_in_a_message_is_one_line():
    assert config.shown("t.json") == "t.json" and config.shown("a\nb") == "'a\\nb'"


def _generated_blocks(text: str) -> str:
    """docs/configuration.md's two generated tables, joined as settings_table_markdown() writes them."""
    blocks = []
    for start, end in (("<!-- settings table:", "<!-- end of the settings table -->"),
                       ("<!-- settings fields:", "<!-- end of the settings fields -->")):
        body = text[text.index(start):text.index(end)]
        blocks.append(body.split("\n", 1)[1].rstrip("\n"))
    return "\n\n".join(blocks) + "\n"


def test_the_configuration_doc_is_the_settings_table():
    # The doc's tables are derived from config.Settings' field metadata; regenerate them from
    # config.settings_table_markdown() when a setting changes.
    doc = (Path(__file__).resolve().parents[1] / "docs" / "configuration.md").read_text()
    assert _generated_blocks(doc) == config.settings_table_markdown()


def test_every_setting_has_help_and_the_environment_names_each_one_once():
    rows = [config.setting(f.name) for f in config.FIELDS]
    assert all(row.help for row in rows)
    envs = [row.env for row in rows if row.env]
    assert len(envs) == len(set(envs)) == len(rows) - 1  # every field but lazy_file has its variable


def test_the_settings_cpp_takes_are_defined_alike_on_both_sides():
    # Names, order, types and ranges: config.py's rows and csrc/session/session_control.h's kSettings.
    from trt_trace.native import ops

    assert config.native_table() == ops.settings_table()
    assert list(config.Settings().native()) == [name for name, *_ in ops.settings_table()]
    for name, _kind, least, most in config.native_table():
        field = next(f.name for f in config.FIELDS if config.setting(f.name).native == name)
        assert config.in_bounds(field, least) and config.in_bounds(field, most)
        assert not config.in_bounds(field, least - 1) and not config.in_bounds(field, most + 1)


def test_cpp_checks_the_settings_whole_before_it_applies_one(tmp_path):
    # One range check in C++, of every setting before any is applied: a Settings made by hand with a value
    # no keyword or variable lets through is one line naming it, and C++ is left as it was.
    from trt_trace.native import ops

    before = ops.session_switches()
    for name, _, least, most in config.native_table():
        for bad in (least - 1, most + 1):
            values = dict(config.Settings().native(), **{name: bad})
            refused, message, _ = ops.session_start(values, str(tmp_path / "t.json"), "json", True, 0, True, 1, b"")
            assert refused == 2 and message == f"setting '{name}' must be from {least} to {most}, not {bad}"
            assert ops.session_switches() == before and ops.session_state() == ("idle", False)
    refused, message, _ = ops.session_start(dict(config.Settings().native(), extra=1), str(tmp_path / "t.json"),
                                            "json", True, 0, True, 1, b"")
    assert (refused, message) == (2, "unknown setting 'extra'")
    settings = dataclasses.replace(config.Settings(out=str(tmp_path / "t.json")), caller_wait_every=0)
    with pytest.raises(trt_trace.TraceError, match=r"^cannot start tracing: setting 'caller_wait_every' must be "
                                                   r"from 1 to 1048576, not 0$"):
        session_module.start_session(settings)
    assert ops.session_switches() == before and trt_trace.active() is None


def test_keywords_and_the_environment_meet_in_one_settings_object(monkeypatch):
    monkeypatch.setenv("TRT_TRACE_QUIET", "1")
    monkeypatch.setenv("TRT_TRACE_CALLER_WAIT_EVERY", "2")
    s = config.from_keywords("t.json", {"buffer_events": "1k", "gpu_every": 4, "nvtx": 1})
    assert s == config.Settings(out="t.json", buffer_events=1024, gpu_every=4, nvtx=True, quiet=True,
                                caller_wait_every=2)
    with pytest.raises(TypeError, match="unexpected keyword argument 'bufer'"):
        config.from_keywords("t.json", {"bufer": 1})


def test_the_buffers_units_are_binary_and_every_example_the_refusal_gives_is_taken():
    assert [config.parse_count(t) for t in ("64k", "1M", "1G", "3K", "2m")] == [1 << 16, 1 << 20, 1 << 30, 3 << 10,
                                                                               2 << 20]
    for example in config.COUNT_EXAMPLES.replace(" or ", ", ").split(", "):
        assert config.parse_count(example) > 0, example
    assert config.events_text(1 << 16) == "64k events (2.5 MiB per thread)"


# A ring of 1G events is 40 GiB: under a 24 GiB address-space limit it can never be allocated.
LIMITED = "import resource\nresource.setrlimit(resource.RLIMIT_AS, (24 << 30, 24 << 30))\n"
CALLS_PROGRAM = LIMITED + """
import torch
from trt_trace import standin
engine = standin.make_engine("ring_engine")
for _ in range(7):
    torch.ops.tensorrt.execute_engine([torch.ones(4)], engine)
"""


def _calls_in(path: Path) -> int:
    from trt_trace.io.readers import read_calls

    return read_calls(str(path), lambda calls, info: None).calls


def test_a_buffer_that_cannot_be_allocated_is_one_line_and_the_default_never_an_untraced_run(tmp_path):
    from conftest import run_python

    out = tmp_path / "t.json"
    proc = run_python(CALLS_PROGRAM, {"TRT_TRACE_OUT": str(out), "TRT_TRACE_BUFFER": "1G"}, timeout=300)
    assert proc.returncode == 0, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if "TRT_TRACE_BUFFER" in ln]
    assert lines == ["trt_trace: TRT_TRACE_BUFFER: a trace buffer of 1G events (40960 MiB per thread) cannot be "
                     "allocated in this process; give a smaller TRT_TRACE_BUFFER / buffer_events / --buffer; using "
                     "the default, 64k events (2.5 MiB per thread)"], proc.stderr
    assert _calls_in(out) == 7 and "trace written to" in proc.stderr


def test_start_with_a_buffer_that_cannot_be_allocated_raises_one_line(tmp_path):
    from conftest import run_python

    path = str(tmp_path / "t.json")
    code = LIMITED + (
        f"import trt_trace\ntry:\n    trt_trace.start({path!r}, buffer_events='1G')\n"
        "except trt_trace.TraceError as e:\n    print('refused:', e)\nprint('active', trt_trace.active())\n")
    proc = run_python(code, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "refused: a trace buffer of 1G events (40960 MiB per thread) cannot be allocated" in proc.stdout
    assert "active None" in proc.stdout


def test_trt_trace_run_buffer_takes_units_refuses_past_the_cap_and_never_runs_untraced(tmp_path):
    import subprocess
    import sys

    from conftest import trt_trace_cli

    out = tmp_path / "t.json"
    script = tmp_path / "calls.py"
    script.write_text(CALLS_PROGRAM)
    proc = subprocess.run(trt_trace_cli() + ["run", "-o", str(out), "--buffer", "1G", "--", sys.executable,
                                             str(script)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "cannot be allocated" in proc.stderr and _calls_in(out) == 7
    proc = subprocess.run(trt_trace_cli() + ["run", "-o", str(out), "--buffer", "2G", "--", sys.executable, "-c",
                                             "pass"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "over the most" in proc.stderr, proc.stderr
    proc = subprocess.run(trt_trace_cli() + ["run", "-o", str(tmp_path / "u.json"), "--buffer", "256k", "--",
                                             sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and _calls_in(tmp_path / "u.json") == 7, proc.stderr
