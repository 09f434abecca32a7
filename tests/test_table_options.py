"""`trt-trace summary` and `layers`: the statistics beside p50/p99 (min, mean, max, stddev) against a
brute-force computation over the calls, and --columns / --sort / --top / --format / --width against the
full unsorted JSON table (hypothesis over their combinations); names of any content shown whole and
aligned; --by-rank headers of processes without ranks. Traces are written by the real writer with
constructed durations (tests/synthetic_traces.py), so every figure is exact."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from synthetic_traces import engines_trace
from test_mutants_layers_report import call, tables

from trt_trace.analysis import summary_table as st_
from trt_trace.analysis.layers_report import LayerOptions, format_tables, tables_csv, tables_json
from trt_trace.analysis.merge import merge
from trt_trace.analysis.summary_table import COLUMNS, FIELDS, SORT_KEYS, TableOptions, parse_columns
from trt_trace.analysis.table_text import escaped, width
from trt_trace.analysis.trace_summary import summary_text
from trt_trace.cli import main
from trt_trace.schema.phases import HOST_PHASES

# Engines with repeated durations (ties in p50, in totals), one call only, and a wide spread.
ENGINES = {
    "alpha": np.array([100_000, 200_000, 200_000, 3_000_000, 150_000]),
    "beta": np.array([500_000] * 4),
    "gamma": np.array([10_000]),
    "delta": np.array([7_000, 9_000, 1_234_567, 8_000, 999]),
    "eps": np.array([250_000, 250_000]),  # the same total as beta's half, another count
}


def _phase_values(durations: np.ndarray, phase: str) -> np.ndarray:
    """Each call's duration of `phase` as synthetic_traces.engine_calls splits a call (phases of 0 ns are
    not written, so they are not values of the phase)."""
    t = durations.astype(np.int64)
    ws, inp, out = t // 20, t // 10, t // 20
    v = {"total": t, "workspace": ws, "inputs": inp, "outputs": out, "enqueue": t - ws - inp - out}[phase]
    return v if phase in ("total", "enqueue") else v[v > 0]


def _brute(values: np.ndarray) -> dict[str, float]:
    v = np.sort(values.astype(np.int64))
    n = len(v)
    return {"min_ms": v[0] / 1e6, "max_ms": v[-1] / 1e6, "mean_ms": v.sum() / n / 1e6,
            "stddev_ms": float(np.std(v.astype(np.float64), ddof=1)) / 1e6 if n > 1 else 0.0,
            "p50_ms": v[max(-(-50 * n // 100), 1) - 1] / 1e6, "p99_ms": v[max(-(-99 * n // 100), 1) - 1] / 1e6}


@pytest.fixture(scope="module")
def trace(tmp_path_factory) -> Path:
    return engines_trace(tmp_path_factory.mktemp("table") / "t.json", ENGINES)


def _doc(path: Path, **kw) -> dict:
    return json.loads(summary_text(str(path), options=TableOptions(format="json", **kw)))


@pytest.mark.parametrize("phase", ["total", "enqueue", "inputs"])
def test_each_statistic_is_the_brute_force_one_over_the_calls(trace, phase):
    doc = json.loads(summary_text(str(trace), phase=phase, json=True))
    rows = {r["engine"]: r for r in doc["engines"]}
    for name, durations in ENGINES.items():
        for key, want in _brute(_phase_values(durations, phase)).items():
            assert rows[name][key] == pytest.approx(want, rel=0, abs=5.01e-7), (name, key)  # JSON: to the ns
    everything = np.concatenate([_phase_values(d, phase) for d in ENGINES.values()])
    for key, want in _brute(everything).items():
        assert doc["all"][key] == pytest.approx(want, rel=0, abs=5.01e-7), ("ALL", key)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(1, 5 * 10**9), min_size=1, max_size=60))
def test_stats_of_any_durations_are_exact(durations):
    """value_stats against numpy over the same values, durations up to 5 s (the centred sum keeps
    float64 from cancelling)."""
    vc = st_.ValueCounts()
    vc.add(np.array(durations, dtype=np.int64))
    got = st_.value_stats(vc)
    v = np.array(durations, dtype=np.float64)
    assert (got["min"], got["max"]) == (min(durations), max(durations))
    assert got["mean"] == pytest.approx(sum(durations) / len(durations), rel=1e-15)
    want = float(np.std(v - np.mean(v), ddof=1)) if len(durations) > 1 else 0.0
    assert got["stddev"] == pytest.approx(want, rel=1e-9, abs=1e-6)


def _sorted_names(full: dict, sort: str) -> list[str]:
    rows = full["engines"]
    if sort == "share":
        return [r["engine"] for r in rows]
    field = "engine" if sort == "name" else FIELDS[sort]
    if field == "engine":
        return sorted(r["engine"] for r in rows)
    return [r["engine"] for r in sorted(rows, key=lambda r: (r[field] is None, -(r[field] or 0)))]


def _text_cell(row: dict, key: str) -> str:
    """The text cell of a column, from the full JSON row."""
    v = row.get(FIELDS[key])
    if key in ("calls", "errors"):
        return str(v)
    if key == "gpu":
        return "-" if not row.get("gpu_calls") else ("~" if row.get("gpu_sampled_out") else "") + f"{v:.3f}"
    if key in ("share", "cum"):
        return "-" if v is None else f"{v:.1f}"
    if key == "kernels_per_call":
        return "-" if v is None else f"{v:.2f}"
    return "-" if v is None else f"{v:.3f}"


COLUMN_SPECS = st.one_of(
    st.none(),
    st.lists(st.sampled_from([c for c in COLUMNS if c not in ("gpu_kernels", "kernels_per_call")]), min_size=1,
             max_size=8, unique=True).map(",".join),
    st.lists(st.sampled_from(["stats", "min", "stddev", "errors", "phases"]), min_size=1, max_size=3,
             unique=True).map(lambda xs: "+" + ",".join(xs)),
)


@settings(max_examples=60, deadline=None)
@given(sort=st.sampled_from(SORT_KEYS), top=st.integers(0, 7), spec=COLUMN_SPECS,
       fmt=st.sampled_from(["text", "json", "csv"]))
def test_any_options_give_the_full_tables_rows_sorted_and_cut(trace, sort, top, spec, fmt):
    full = _doc(trace)
    by_name = {r["engine"]: r for r in full["engines"]}
    names = _sorted_names(full, sort)
    shown = names[:top] if top else names
    left_out = len(names) - len(shown)
    columns = None if spec is None else parse_columns(spec)
    out = summary_text(str(trace), options=TableOptions(columns=columns, sort=sort, top=top, format=fmt))
    if fmt == "json":
        doc = json.loads(out)
        assert [r["engine"] for r in doc["engines"]] == shown
        for r in doc["engines"]:  # every figure the full table's, but the running share in this order
            assert {k: v for k, v in r.items() if k != "cum_pct"} == \
                {k: v for k, v in by_name[r["engine"]].items() if k != "cum_pct"}
        cum = np.cumsum([by_name[n]["share_pct"] for n in names])
        assert [r["cum_pct"] for r in doc["engines"]] == pytest.approx(cum[: len(shown)].tolist(), abs=1e-3)
        assert doc["all"] == full["all"] and doc["engines_left_out"] == left_out and doc["sorted_by"] == sort
        return
    if fmt == "csv":
        rows = list(csv.reader(io.StringIO(out)))
        keys = columns or [c for c in COLUMNS if c not in ("gpu_kernels", "kernels_per_call")]
        assert rows[0] == ["engine", *(FIELDS[k] for k in keys)]
        assert [r[0] for r in rows[1:]] == [*shown, "ALL"]
        for r in rows[1:]:
            want = full["all"] if r[0] == "ALL" else by_name[r[0]]
            for k, cell in zip(keys, r[1:], strict=True):
                if k == "cum" and r[0] != "ALL":
                    continue
                v = want.get(FIELDS[k])
                assert cell == ("" if v is None else str(v)), (r[0], k)
        return
    lines = out.splitlines()
    keys = columns or [*st_.DEFAULT_COLUMNS]
    assert lines[0].split()[0] == "engine"
    body = lines[1: 2 + len(shown)]
    assert [ln.split()[0] for ln in body] == [*shown, "ALL"]
    for ln in body:
        want = full["all"] if ln.split()[0] == "ALL" else by_name[ln.split()[0]]
        cells = ln.split()[1:]
        assert len(cells) == len(keys)
        for k, cell in zip(keys, cells, strict=True):
            if k != "cum" or ln.startswith("ALL"):
                assert cell == _text_cell(want, k), (ln, k)
        assert width(ln) == width(lines[0])  # right-aligned cells: every row ends where the header does
    if left_out:
        assert lines[2 + len(shown)] == f"({left_out} more engine{'s' if left_out != 1 else ''} not shown: --top {top})"
    else:
        assert not any("not shown" in ln for ln in lines)


def test_the_default_text_is_todays_table(trace):
    header = summary_text(str(trace)).splitlines()[0].split()
    assert header == ["engine", "calls", "total", "ms", "share", "%", "cum", "%", "p50", "ms", "p99", "ms",
                      *HOST_PHASES]
    plus = summary_text(str(trace), options=TableOptions(columns=parse_columns("+stats"))).splitlines()[0]
    assert plus.split()[12:20] == ["min", "ms", "mean", "ms", "max", "ms", "std", "ms"]
    enqueue = summary_text(str(trace), phase="enqueue", options=TableOptions(columns=parse_columns("p50,mean")))
    assert enqueue.splitlines()[0].split() == ["engine", "enqueue", "p50", "enqueue", "mean"]


def test_unknown_columns_are_one_line():
    with pytest.raises(st_.ColumnsError, match="unknown column 'p95'"):
        parse_columns("p50,p95")
    with pytest.raises(st_.ColumnsError, match="give column names"):
        parse_columns(" , ")
    assert parse_columns("stats,p50") == ("min", "mean", "max", "stddev", "p50")
    assert parse_columns("+max,calls") == st_.DEFAULT_COLUMNS[:6] + ("max",) + st_.DEFAULT_COLUMNS[6:]


NAMES = {
    "日本語のエンジン": np.array([300_000, 300_000]),  # wide: two columns a character
    "line\nbreak\x1b[31m": np.array([200_000]),  # a newline and an escape sequence: escaped, not obeyed
    "e\u0301ngine": np.array([100_000]),  # a combining accent: no column of its own
    "L" * 150 + "end": np.array([50_000, 60_000]),  # wider than the name column: wraps
    "plain": np.array([10_000]),
}
NAMES_LONGEST = "L" * 150 + "end"


def _split_at(line: str, columns: int) -> tuple[str, str]:
    """The line's first `columns` display columns, and the rest."""
    used = 0
    for i, c in enumerate(line):
        if used >= columns:
            return line[:i], line[i:]
        used += width(c)
    return line, ""


@pytest.mark.parametrize("name_width", [0, 20, 60])
def test_names_are_shown_whole_escaped_and_aligned(tmp_path, name_width):
    path = engines_trace(tmp_path / "names.json", NAMES)
    text = summary_text(str(path), options=TableOptions(columns=parse_columns("+stats"), name_width=name_width))
    lines = text.splitlines()
    header = lines[0]
    name_w = header.index("calls") - 3  # "engine" padded, then "   calls"
    assert not any("\x1b" in ln for ln in lines)  # nothing a terminal would obey
    names: list[str] = []
    for ln in lines[1:]:
        head, cells = _split_at(ln, name_w)
        if cells:  # a row: its cells start and end in the header's columns
            assert width(ln) == width(header) and width(head) == name_w, ln
            assert len(cells.split()) == len(parse_columns("+stats")), ln
            names.append(head.rstrip())
        else:  # the rest of a name too wide for its column
            assert 0 < width(ln) <= name_w and names, ln
            names[-1] += ln
    assert names[-1] == "ALL" and sorted(names[:-1]) == sorted(escaped(n) for n in NAMES)
    assert escaped("line\nbreak\x1b[31m") == "line\\nbreak\\x1b[31m"
    if name_width:
        assert name_w == name_width and len(lines) > len(NAMES) + 2  # the long name wrapped
    else:
        assert name_w == len(NAMES_LONGEST) and len(lines) == len(NAMES) + 2


def test_more_engines_than_the_first_guess_are_each_a_row(tmp_path):
    """17 engines: the native grouping of calls and the reader's (pid, engine) pairs start with room for
    16 and must grow to 17, each engine a row with its own calls."""
    engines = {f"e{k:02d}": np.full(k + 1, 100_000 + k) for k in range(17)}
    table = json.loads(summary_text(str(engines_trace(tmp_path / "many.json", engines)), json=True))
    assert sorted((e["engine"], e["calls"]) for e in table["engines"]) == [(f"e{k:02d}", k + 1) for k in range(17)]


def test_a_name_whose_escapes_outgrow_the_first_buffer_is_printed_whole(tmp_path):
    """The native formatter gets a buffer of twice the names' bytes and more; a name of 3,000 control
    characters is 18,000 bytes of JSON escapes: the table is formatted again into the size it asks for."""
    name = "\x01" * 3_000
    table = json.loads(summary_text(str(engines_trace(tmp_path / "esc.json", {name: np.array([100_000])})),
                                    json=True))
    assert [e["engine"] for e in table["engines"]] == [name]


def test_a_wide_name_takes_two_columns_a_character(tmp_path):
    path = engines_trace(tmp_path / "wide.json", {"日本語": np.array([300_000]), "abcdef": np.array([200_000])})
    lines = summary_text(str(path)).splitlines()
    wide = next(ln for ln in lines if ln.startswith("日本語"))
    plain = next(ln for ln in lines if ln.startswith("abcdef"))
    assert wide.index("1") - len("日本語") == plain.index("1") - len("abcdef")  # 3 wide characters = 6 columns


def test_by_rank_headers_say_the_pid_where_there_is_no_rank(tmp_path):
    a = engines_trace(tmp_path / "a.json", {"e": np.array([100_000])}, pid=100)
    b = engines_trace(tmp_path / "b.json", {"e": np.array([200_000])}, pid=101)
    merge([str(a), str(b)], str(tmp_path / "all.json"))
    text = summary_text(str(tmp_path / "all.json"), by_process=True)
    heads = [ln for ln in text.splitlines() if ln.startswith("== ")]
    assert len(heads) == 3 and len(set(heads)) == 3 and heads[-1] == "== all 2 processes =="
    assert all(" · pid " in h for h in heads[:2]), heads
    ranked = engines_trace(tmp_path / "r.json", {"e": np.array([100_000])}, rank=3)
    (head,) = [ln for ln in summary_text(str(ranked), by_process=True).splitlines() if ln.startswith("== ")]
    assert "pid" not in head
    csv_rows = list(csv.reader(io.StringIO(summary_text(str(tmp_path / "all.json"), by_process=True,
                                                        options=TableOptions(format="csv")))))
    assert csv_rows[0][:2] == ["process", "engine"]
    assert [r[1] for r in csv_rows[1:]] == ["e", "ALL", "e", "ALL", "e", "ALL"]
    assert csv_rows[-1][0] == "all 2 processes" and len({r[0] for r in csv_rows[1:]}) == 3


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-P", "-m", "trt_trace", *args], capture_output=True, text=True,
                          timeout=120)


def test_the_cli_prints_csv_and_says_on_stderr_what_top_left_out(trace):
    ok = _cli("summary", str(trace), "--sort", "p99", "--top", "2", "--format", "csv", "--columns", "p50,p99,max")
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.splitlines()[0] == "engine,p50_ms,p99_ms,max_ms" and len(ok.stdout.splitlines()) == 4
    assert "3 more engines not shown: --top 2" in ok.stderr



def _main(capsys, *args: str) -> tuple[int, str, str]:
    """The CLI in this process (argparse's refusals exit 2)."""
    try:
        rc = main(list(args))
    except SystemExit as exc:
        rc = exc.code
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.mark.parametrize("verb", ["summary", "layers"])
def test_bad_table_options_are_one_line(trace, capsys, verb):
    for bad, said in ((["--json", "--format", "csv"], "--json and --format csv disagree"),
                      (["--top", "0"], "give 1 or more rows"), (["--sort", "p95"], "invalid choice"),
                      (["--width", "3"], "give 8 to 10000 columns"),
                      *([(["--columns", "p95"], "unknown column 'p95'")] if verb == "summary" else [])):
        rc, _out, err = _main(capsys, verb, str(trace), *bad)
        assert rc == 2 and len(err.strip().splitlines()) == 1 and said in err, (bad, err)
    rc, out, _err = _main(capsys, "summary", str(trace), "--json", "--top", "1", "--sort", "name")
    assert rc == 0 and json.loads(out)["engines_left_out"] == 4 and json.loads(out)["engines"][0]["engine"] == "alpha"


LAYERS = {"conv": [30.0, 31.0, 29.0, 40.0], "fc": [10.0, 10.0, 12.0, 11.0], "add": [1.0, 1.0, 1.0, 5.0],
          "日本語の層\tx": [2.0, 2.0, 2.0, 2.0]}


def _layer_engine():
    events = call(1, None)
    for k in range(4):
        events += call(2 + k, None, {name: times[k] for name, times in LAYERS.items()})
    (t,) = tables(events)
    return t


def test_layer_mean_and_max_are_over_the_layers_times():
    t = _layer_engine()
    for r in t.rows:
        ns = np.array(LAYERS[r.layer]) * 1000
        assert (r.mean_ns, r.max_ns, r.p50_ns) == (pytest.approx(ns.mean()), int(ns.max()),
                                                     int(np.sort(ns)[(len(ns) - 1) // 2]))


@settings(max_examples=30, deadline=None)
@given(sort=st.sampled_from(["total", "calls", "p50", "mean", "max", "name"]), top=st.integers(0, 5))
def test_layer_options_sort_and_cut_each_engines_layers(sort, top):
    t = _layer_engine()
    full = tables_json([t])["engines"][0]["layers"]
    doc = tables_json([t], options=LayerOptions(sort=sort, top=top))["engines"][0]
    key = {"total": "total_ns", "calls": "calls", "p50": "p50_ns", "mean": "mean_ns", "max": "max_ns"}.get(sort)
    want = sorted(full, key=lambda r: (r["layer"],) if key is None else (-r[key], -r["total_ns"], r["layer"]))
    want = want[:top] if top else want
    assert doc["layers"] == want and doc["layers_left_out"] == len(full) - len(want)
    text, notes = tables_csv([t], LayerOptions(sort=sort, top=top))
    rows = list(csv.reader(io.StringIO(text)))
    assert [r[3] for r in rows[1:]] == [r["layer"] for r in want]  # whole names, a tab and all
    assert bool(notes) == (len(want) < len(full))
    lines = format_tables([t], options=LayerOptions(sort=sort, top=top)).splitlines()
    body = lines[2: 2 + len(want)]
    assert [ln.split()[0] for ln in body] == [escaped(r["layer"]).split()[0] for r in want]
    assert len({width(ln) for ln in [lines[1], *body]}) == 1  # aligned, the wide name too


def test_layer_names_are_cut_in_the_middle_in_text_only():
    long = "A" * 60 + "B" * 60
    (t,) = tables(call(1, None) + call(2, None, {long: 30.0}))
    assert "…" in format_tables([t], options=LayerOptions(name_width=20)).splitlines()[2]
    assert long in format_tables([t], options=LayerOptions(name_width=0))
    assert tables_json([t])["engines"][0]["layers"][0]["layer"] == long
    assert list(csv.reader(io.StringIO(tables_csv([t], LayerOptions())[0])))[1][3] == long
