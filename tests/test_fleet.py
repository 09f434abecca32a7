"""`trt-trace export TRACE... --dataset DIR` and `trt-trace summary DIR` (trt_trace/analysis/fleet.py,
fleet_summary.py) on DuckDB: traces of real traced processes of the stand-in runtime (three ranks, one of
them writing Perfetto, two with calls under per-layer profiling; tests/fleet_traces.py), exported into one
Hive-partitioned Parquet dataset, give the tables `merge` + `summary` give of the same traces: by rank, for
every duration, in windows (hypothesis), with the profiled calls left out (the default) or kept. Spark:
tests/test_fleet_spark.py."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pyarrow.parquet as pq
import pytest
from fleet_traces import PROFILED_RANKS, RANKS, assert_same_tables, cli, docs, traced_fleet
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trt_trace.analysis.fleet_summary import dataset_summary_parts
from trt_trace.analysis.merge import merge
from trt_trace.analysis.summary_table import TableOptions
from trt_trace.analysis.trace_summary import summary_parts
from trt_trace.io.readers import Window
from trt_trace.schema.trace_format import DURATIONS


@pytest.fixture(scope="module")
def fleet(tmp_path_factory) -> tuple[Path, list[Path], Path]:
    """Three traced ranks of the stand-in, run at once: (their folder, their traces, the merged trace)."""
    return traced_fleet(tmp_path_factory.mktemp("fleet"))


def test_the_dataset_is_hive_partitioned_by_host_rank_pid(fleet):
    work, traces, _ = fleet
    parts = sorted(p.relative_to(work / "ds").parts[:3] for p in (work / "ds").rglob("*.parquet"))
    assert [(r, p.split("=")[0]) for _, r, p in parts] == [(f"rank={r}", "pid") for r in range(RANKS)]
    assert all(h.startswith("host=") for h, _, _ in parts)
    table = pq.read_table(next((work / "ds").rglob("*.parquet")))
    assert {"engine", "engine_id", "begin_ns", "call_id", "thread", "total_ns", "enqueue_ns", "gpu_ns", "error",
            "on_cuda"} <= set(table.column_names)
    assert not {"host", "rank", "pid"} & set(table.column_names)  # the partition's, not the file's


def test_the_dataset_marks_the_calls_under_per_layer_profiling(fleet):
    """3 calls of each engine of ranks 0 and 2 (TRT_TRACE_LAYERS=3), none of rank 1's."""
    work, _, merged = fleet
    for rank in range(RANKS):
        table = pq.read_table(next((work / "ds").rglob(f"rank={rank}/*/*.parquet")), columns=["engine_id", "profiled"])
        marked = {}
        for eid, profiled in zip(table["engine_id"].to_pylist(), table["profiled"].to_pylist(), strict=True):
            marked[eid] = marked.get(eid, 0) + profiled
        assert set(marked.values()) == ({3} if rank in PROFILED_RANKS else {0}), (rank, marked)
    doc = json.loads(cli("summary", str(merged), "--json").stdout)
    assert doc["profiled_calls"] == sum(3 * (3 + r % 2) for r in PROFILED_RANKS)


@pytest.mark.parametrize("include", [False, True])
@pytest.mark.parametrize("phase", DURATIONS)
def test_same_numbers_as_merge_and_summary(fleet, phase, include):
    work, _, merged = fleet
    options = TableOptions(format="json")
    want, _ = summary_parts(str(merged), include_profiled=include, by_process=True, phase=phase, options=options)
    got, _ = dataset_summary_parts(str(work / "ds"), by_process=True, phase=phase, options=options,
                                   include_profiled=include)
    assert_same_tables(got, want)
    tables = docs(got)
    assert [d["engines"][0]["calls"] > 0 for d in tables] == [True] * (RANKS + 1)
    assert tables[-1]["profiled_calls"] > 0 and all(d["profiled_included"] == include for d in tables)


def test_the_cli_text_and_csv_tables_are_the_same(fleet):
    work, _, merged = fleet
    for extra in ([], ["--by-rank"], ["--format", "csv", "--columns", "calls,total,share,p50,p99,min,mean,max"],
                  ["--include-profiled", "--by-rank"], ["--include-profiled", "--format", "csv"]):
        a = cli("summary", str(merged), *extra)
        b = cli("summary", str(work / "ds"), *extra)
        assert a.returncode == b.returncode == 0 and a.stdout == b.stdout, (extra, a.stdout, b.stdout, b.stderr)
        assert a.stderr == b.stderr, (extra, a.stderr, b.stderr)


def test_a_merged_trace_exported_gives_its_own_table(fleet, tmp_path):
    _, _, merged = fleet
    proc = cli("export", str(merged), "--dataset", str(tmp_path / "m"))
    assert proc.returncode == 0 and proc.stdout.endswith(f"of {RANKS} processes into {tmp_path / 'm'}\n")
    options = TableOptions(format="json")
    for include in (False, True):
        want, _ = summary_parts(str(merged), include_profiled=include, by_process=True, options=options,
                                window=Window(0, 0.01, None))
        got, _ = dataset_summary_parts(str(tmp_path / "m"), by_process=True, options=options,
                                       window=Window(0, 0.01, None), include_profiled=include)
        assert_same_tables(got, want)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(phase=st.sampled_from(DURATIONS), lo=st.one_of(st.none(), st.floats(0, 3)),
       width=st.one_of(st.none(), st.floats(0.001, 3)), skip=st.integers(0, 12),
       engines=st.one_of(st.none(), st.sets(st.sampled_from([f"_run_on_acc_{2 * i}_engine" for i in range(4)]) |
                                            st.just("nope"), min_size=1)), include=st.booleans())
def test_windows_and_phases_agree(fleet, phase, lo, width, skip, engines, include):
    work, _, merged = fleet
    names = None
    if engines is not None:
        names = frozenset(engines)
    hi = None if width is None else (lo or 0) + width
    window = Window(skip, lo, hi, names)
    options = TableOptions(format="json")
    want, _ = summary_parts(str(merged), include_profiled=include, by_process=True, phase=phase, window=window,
                            options=options)
    got, _ = dataset_summary_parts(str(work / "ds"), by_process=True, phase=phase, window=window, options=options,
                                   include_profiled=include)
    assert_same_tables(got, want)


def test_bad_datasets_are_one_line(fleet, tmp_path):
    work, traces, _ = fleet
    (tmp_path / "empty").mkdir()
    (tmp_path / "plain").mkdir()
    assert cli("export", str(traces[0]), str(tmp_path / "plain" / "calls.parquet")).returncode == 0
    lacking = tmp_path / "lacking" / "host=h" / "rank=0" / "pid=1"
    lacking.mkdir(parents=True)
    part = next((work / "ds").rglob("*.parquet"))
    table = pq.read_table(part)
    pq.write_table(table.drop(["enqueue_ns"]).replace_schema_metadata(pq.read_metadata(part).metadata),
                   lacking / "part-0.parquet")
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "x.parquet").write_text("not parquet")
    old = tmp_path / "old" / "host=h" / "rank=0" / "pid=1"  # format 1: no column `profiled`
    old.mkdir(parents=True)
    facts = orjson.loads(pq.read_metadata(part).metadata[b"trt_trace"])
    old_facts = {"trt_trace": orjson.dumps({**facts, "format": 1})}
    pq.write_table(table.drop(["profiled"]).replace_schema_metadata(old_facts), old / "part-0.parquet")
    (tmp_path / "loose").mkdir()  # a part outside its process's folder: whose calls are these?
    pq.write_table(table.replace_schema_metadata(pq.read_metadata(part).metadata), tmp_path / "loose" / "p.parquet")
    cases = {"empty": "no Parquet files", "plain": "not a part of a trt_trace dataset",
             "lacking": "without the column 'enqueue_ns'", "junk": "not a trt_trace dataset",
             "old": "a trt_trace dataset of format 1; this trt-trace reads format 2 (export the traces again)",
             "loose": "not a folder of a trt_trace dataset"}
    for name, words in cases.items():
        proc = cli("summary", str(tmp_path / name))
        assert proc.returncode == 2 and proc.stdout == "" and proc.stderr.count("\n") == 1, (name, proc.stderr)
        assert proc.stderr.startswith("trt-trace summary: ") and words in proc.stderr, (name, proc.stderr)
    for args in (["--dataset", str(traces[0]), str(traces[1])], [str(tmp_path / "nope.json"), "--dataset",
                                                                 str(tmp_path / "d")]):
        proc = cli("export", *args)
        assert proc.returncode != 0 and proc.stderr.count("\n") == 1 and proc.stderr.startswith("trt-trace export: ")
    assert not (tmp_path / "d").exists()


def test_exports_of_several_hosts_add_up_in_one_folder(fleet, tmp_path):
    """Each host exports its own traces into the shared folder; the table is of all of them."""
    work, traces, merged = fleet
    for t in traces:
        assert cli("export", str(t), "--dataset", str(tmp_path / "shared")).returncode == 0
    got = json.loads(cli("summary", str(tmp_path / "shared"), "--json").stdout)
    want = json.loads(cli("summary", str(merged), "--json").stdout)
    assert_same_tables(json.dumps(got), json.dumps(want))


@pytest.fixture(scope="module")
def two_hosts(fleet, tmp_path_factory) -> tuple[Path, Path]:
    """Rank 1's trace rewritten as if its host had booted 2.5 s later and had another name (its
    monotonic times and anchors move, its wall clock does not): (the dataset, the merged trace)."""
    work, traces, _ = fleet
    out = tmp_path_factory.mktemp("two_hosts")
    skew_ns = -2_500_000_000
    events = orjson.loads(traces[1].read_bytes())
    events = events["traceEvents"] if isinstance(events, dict) else events
    for e in events:
        if "ts" in e:
            e["ts"] = round(e["ts"] + skew_ns / 1000, 3)
        if e.get("name") == "trt_trace_metadata" and "monotonic_ns" in e.get("args", {}):
            e["args"]["monotonic_ns"] += skew_ns
            if "host" in e["args"]:
                e["args"]["host"] = "another-host"
    moved = out / "trace_1.json"
    moved.write_bytes(orjson.dumps(events))
    inputs = [str(traces[0]), str(moved), str(traces[2])]
    merge(inputs, str(out / "all.json"))
    assert cli("export", *inputs, "--dataset", str(out / "ds")).returncode == 0
    return out / "ds", out / "all.json"


@pytest.mark.parametrize(("lo", "hi"), [(None, None), (0.05, None), (None, 0.2), (0.02, 0.3), (1.0, 2.0)])
def test_windows_across_hosts_are_on_the_merged_clock(two_hosts, lo, hi):
    ds, merged = two_hosts
    assert {p.name for p in ds.iterdir()} >= {"host=another-host"}
    options = TableOptions(format="json")
    window = Window(0, lo, hi)
    want, _ = summary_parts(str(merged), by_process=True, window=window, options=options)
    got, _ = dataset_summary_parts(str(ds), by_process=True, window=window, options=options)
    assert_same_tables(got, want)
