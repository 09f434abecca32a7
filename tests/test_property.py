"""Any input, no traceback: property tests (hypothesis) feed random strings to every TRT_TRACE_*
setting, random values to every keyword of start() / flight(), and random arguments to `trt-trace run`,
`demo` and `view`. A setting gets at most one warning line and then the default (or its cap); a keyword
starts a session or raises one TraceError line; a verb prints a result or one error line with an exit
code, and never a traceback. (The readers' side, traces cut and corrupted, is tests of the readers.)"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import trt_trace
from trt_trace import cli
from trt_trace.runtime import config

# What an environment variable can hold: any text without NUL and without lone surrogates.
ENV_TEXT = st.text(st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)), max_size=40)
# ... and values that look almost right, where parsers are likeliest to break.
NEAR_MISSES = st.sampled_from(["", " ", "0", "-1", "1", "8", "64k", "1M", "1G", "2.5", "1e400", "nan", "inf", "-inf",
                               "0x10", "１２", "on", "off", "yes", "2", "split", "stop", "json", "perfetto", "auto",
                               "99999999999999999999", "9400", "65536", "70000", "30", "1e-9", "\t8\n"])
VALUES = st.one_of(ENV_TEXT, NEAR_MISSES)

# Each variable, the function that reads it, its default, and any cap a too-large value is clamped to.
PARSERS = {
    "TRT_TRACE_BUFFER": (config.buffer_events, config.DEFAULT_BUFFER_EVENTS, config.MAX_BUFFER_EVENTS),
    "TRT_TRACE_GPU": (lambda: config.parse_bool("TRT_TRACE_GPU", True), True, None),
    "TRT_TRACE_NVTX": (lambda: config.parse_bool("TRT_TRACE_NVTX", False), False, None),
    "TRT_TRACE_FLIGHT_ON_EXIT": (lambda: config.parse_bool("TRT_TRACE_FLIGHT_ON_EXIT", False), False, None),
    "TRT_TRACE_QUIET": (config.quiet, False, None),
    "TRT_TRACE_ENGINE_STREAM": (config.engine_stream_spans, True, None),
    "TRT_TRACE_GPU_EVERY": (config.gpu_every, config.DEFAULT_GPU_EVERY, config.MAX_GPU_EVERY),
    "TRT_TRACE_CALLER_WAIT_EVERY": (config.caller_wait_every, config.DEFAULT_CALLER_WAIT_EVERY, config.MAX_GPU_EVERY),
    "TRT_TRACE_MAX_MB": (config.max_bytes, int(config.DEFAULT_MAX_MB * 2**20), None),
    "TRT_TRACE_ON_LIMIT": (config.split_at_limit, True, None),
    "TRT_TRACE_FLIGHT": (config.flight_seconds, 0.0, None),
    "TRT_TRACE_FLIGHT_MAX_MB": (config.flight_max_bytes, config.DEFAULT_FLIGHT_MAX_MB * 2**20, None),
    "TRT_TRACE_FORMAT": (config.trace_format, None, None),
    "TRT_TRACE_METRICS_PORT": (config.metrics_from_env, None, None),
}
QUICK = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def warnings_in(err: str) -> list[str]:
    return [ln for ln in err.splitlines() if ln]


@pytest.mark.parametrize("var", sorted(PARSERS))
@QUICK
@given(raw=VALUES)
def test_a_setting_takes_any_string_with_one_line_at_most(var, raw, monkeypatch, capsys):
    parse, default, cap = PARSERS[var]
    monkeypatch.setenv(var, raw)
    value = parse()
    lines = warnings_in(capsys.readouterr().err)
    assert len(lines) <= 1, lines
    if lines:  # one line naming the variable and what it got, then the default or the cap
        assert lines[0].startswith(f"trt_trace: {var}={raw!r}"), lines
        assert value == default or (cap is not None and value == cap), (raw, value)


@QUICK
@given(env=st.dictionaries(st.sampled_from(sorted(PARSERS) + ["TRT_TRACE_OUT"]), VALUES, max_size=6))
def test_the_whole_environment_at_once_builds_settings(env, monkeypatch, capsys):
    for var in list(PARSERS) + ["TRT_TRACE_OUT", "TRT_TRACE_METRICS_ADDR"]:
        monkeypatch.delenv(var, raising=False)
    for var, raw in env.items():
        monkeypatch.setenv(var, raw)
    settings_ = config.from_env()
    config.metrics_from_env()
    lines = warnings_in(capsys.readouterr().err)
    # At most one line per variable set (TRT_TRACE_METRICS_PORT is read twice here: once per reader).
    assert len(lines) <= len(env) + ("TRT_TRACE_METRICS_PORT" in env), lines
    assert all(ln.startswith("trt_trace: TRT_TRACE_") for ln in lines), lines
    assert isinstance(settings_, config.Settings)


@QUICK
@given(n=st.integers(1, 4096), unit=st.sampled_from(["", "k", "K", "m", "M", "g", "G"]), pad=st.sampled_from(["", " "]))
def test_the_buffer_is_what_its_text_says_rounded_to_the_ring_and_capped_in_one_line(n, unit, pad, monkeypatch,
                                                                                  capsys):
    raw = f"{pad}{n}{unit}{pad}"
    asked = n * {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[unit.lower()]
    monkeypatch.setenv("TRT_TRACE_BUFFER", raw)
    value = config.buffer_events()
    lines = warnings_in(capsys.readouterr().err)
    used = min(asked, config.MAX_BUFFER_EVENTS)
    assert value == config.ring_events(used) and value & (value - 1) == 0 and 64 <= value <= config.MAX_BUFFER_EVENTS
    assert value >= used and (value == 64 or value < 2 * used)
    if asked > config.MAX_BUFFER_EVENTS:  # the cap, said in the words and the number it uses
        assert lines == [f"trt_trace: TRT_TRACE_BUFFER={raw!r} is over the most a thread's ring can hold; using 1G "
                         "events (40960 MiB per thread)"], lines
    else:
        assert lines == []
    # The keyword and the flag take the same text, to the same value or the same refusal.
    if asked <= config.MAX_BUFFER_EVENTS:
        assert config.from_keywords("t.json", {"buffer_events": raw}).buffer_events == value
        assert config.setting("buffer_events").flag_check(raw) is None
    else:
        with pytest.raises(trt_trace.TraceError):
            config.from_keywords("t.json", {"buffer_events": raw})
        assert "over the most" in config.setting("buffer_events").flag_check(raw)


KEYWORD_VALUES = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=True),
                           ENV_TEXT, NEAR_MISSES, st.lists(st.integers(), max_size=2), st.just(b"bytes"))


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(keyword=st.sampled_from(["buffer_events", "nvtx", "gpu", "max_bytes", "split", "format", "gpu_every",
                                "lazy_file"]), value=KEYWORD_VALUES, how=st.sampled_from(["start", "flight"]))
def test_a_keyword_starts_a_session_or_says_why_not_in_one_line(tmp_path, keyword, value, how):
    path = str(tmp_path / "t.json")
    try:
        if how == "start":
            trt_trace.start(path, **{keyword: value})
        else:
            trt_trace.flight(30, path, **{keyword: value})
    except trt_trace.TraceError as exc:
        assert "\n" not in str(exc) and str(exc), repr(exc)
        assert trt_trace.active() is None
        return
    finally:
        if trt_trace.active() is not None:
            trt_trace.stop()
    # It started: the value was one the keyword takes.


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seconds=KEYWORD_VALUES, on_exit=KEYWORD_VALUES, max_bytes=KEYWORD_VALUES)
def test_the_flight_recorders_own_keywords_too(tmp_path, seconds, on_exit, max_bytes):
    try:
        trt_trace.flight(seconds, str(tmp_path / "f.json"), on_exit=on_exit, max_bytes=max_bytes)
    except trt_trace.TraceError as exc:
        assert "\n" not in str(exc) and trt_trace.active() is None
    finally:
        if trt_trace.active() is not None:
            trt_trace.stop()


# -- the CLI verbs, in-process: exit code and what they printed ------------------------------------

TOKENS = st.one_of(ENV_TEXT, NEAR_MISSES, st.sampled_from(
    ["-o", "--output", "--buffer", "--format", "--flight", "--port", "--no-browser", "--out", "--engines", "--calls",
     "--layers", "--", "-h", "json", "perfetto", "t.json", "missing/t.json", ".", "/", "t_{pid}.json", "-1", "0"]))


def run_cli(argv: list[str], capsys) -> tuple[int, str, str]:
    try:
        code = cli.main(argv)
    except SystemExit as exc:  # argparse: --help, or a usage error
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    out = capsys.readouterr()
    return code, out.out, out.err


def check_result(code: int, out: str, err: str) -> None:
    assert isinstance(code, int) and "Traceback" not in err + out
    if code != 0:
        assert len(warnings_in(err)) == 1 and err.startswith("trt-trace"), err


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(options=st.lists(TOKENS, max_size=6))
def test_run_takes_any_options(options, tmp_path, capsys, monkeypatch):
    # A harmless command after the options (the options are the input here, not the program).
    monkeypatch.chdir(tmp_path)
    # A word among the options becomes the command (argparse's REMAINDER starts at the first positional):
    # no program is found by name, so a word such as `yes` cannot run (it wrote to the captured stdout
    # until the disk was full). The command really runs, so its real failures ("" or "/" as the command:
    # exit 126, a name not found: 127) are what is checked.
    monkeypatch.setenv("PATH", str(tmp_path / "no-programs-here"))
    argv = ["run", *[o for o in options if o != "--"], "--", sys.executable, "-c", "pass"]
    check_result(*run_cli(argv, capsys))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(options=st.lists(TOKENS, max_size=6))
def test_view_takes_any_arguments(options, tmp_path, capsys, monkeypatch):
    from trt_trace import viewer

    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.json").write_text("[]")
    # A view that would serve gets Ctrl-C at once (the property is about its arguments, not serving).
    monkeypatch.setattr(viewer.ViewerServer, "serve_forever", lambda self: (_ for _ in ()).throw(KeyboardInterrupt))
    code, out, err = run_cli(["view", *options], capsys)
    check_result(code, out, err)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(options=st.lists(TOKENS, max_size=6))
def test_demo_takes_any_options(options, tmp_path, capsys, monkeypatch):
    from trt_trace import demo

    monkeypatch.chdir(tmp_path)
    ran = []
    # Options it takes start the demo: stand-ins for its package build and serving process.
    monkeypatch.setattr(demo, "build_and_serve",
                        lambda out, engines, calls, layers=0: ran.append((out, engines, calls, layers)) or 0)
    code, out, err = run_cli(["demo", *options], capsys)
    check_result(code, out, err)
    if ran:
        assert code == 0 and 1 <= ran[0][1] <= demo.MAX_ENGINES and ran[0][2] >= 1 and ran[0][3] >= 0


def test_a_cli_usage_error_is_one_line_from_the_installed_script(tmp_path):
    exe = os.path.join(os.path.dirname(sys.executable), "trt-trace")
    for argv in (["run", "--flight", "soon"], ["view"], ["demo", "--calls", "x"], ["frobnicate"]):
        proc = subprocess.run([exe, *argv], capture_output=True, text=True, timeout=120, cwd=tmp_path)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1, (argv, proc.stderr)
        assert proc.stderr.startswith("trt-trace") and "--help" in proc.stderr
