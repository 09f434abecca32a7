"""`trt-trace summary DIR --engine spark` (trt_trace/analysis/fleet_engines.py): the plan of
fleet_summary.py run on Spark (pyspark, local mode) gives the tables `merge` + `summary` give of the same
traces (tests/fleet_traces.py: three real traced ranks of the stand-in, two with calls under per-layer
profiling): by rank, for every duration, in windows, profiled calls left out or kept; the CLI's output is
the trace's, with nothing of Spark's on stderr. One SparkSession (local[2]) for the module.

Java is part of the set-up (tools/setup_env.sh installs Debian's default-jre-headless): without it these
tests fail, they are not skipped."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import orjson
import pytest
from fleet_traces import CLI, RANKS, assert_same_tables, cli, docs, traced_fleet

from trt_trace.analysis.fleet_engines import SparkEngine
from trt_trace.analysis.fleet_summary import dataset_summary_parts
from trt_trace.analysis.summary_table import TableOptions
from trt_trace.analysis.trace_summary import summary_parts
from trt_trace.io.readers import Window

JSON = TableOptions(format="json")


@pytest.fixture(scope="module")
def spark():
    if not os.environ.get("JAVA_HOME") and shutil.which("java") is None:
        pytest.fail("no Java: Spark needs it; tools/setup_env.sh installs it (apt-get install default-jre-headless)")
    from pyspark.sql import SparkSession  # the test extras' pyspark: missing, this fails (no skip)

    session = (SparkSession.builder.master("local[2]").appName("test_fleet_spark")
               .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "2").getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="module")
def fleet(tmp_path_factory) -> tuple[Path, list[Path], Path]:
    return traced_fleet(tmp_path_factory.mktemp("fleet_spark"))


# Three durations of the six: the SQL is the same text for every one (test_fleet.py runs them all on DuckDB);
# these have what differs between them: nulls (gpu, calls without a GPU span) and none (total, enqueue).
@pytest.mark.parametrize(("include", "phases"), [(False, ("total", "enqueue", "gpu")), (True, ("total",))])
def test_same_numbers_as_merge_and_summary(spark, fleet, include, phases):
    work, _, merged = fleet
    for phase in phases:
        want, _ = summary_parts(str(merged), include_profiled=include, by_process=True, phase=phase, options=JSON)
        got, _ = dataset_summary_parts(str(work / "ds"), by_process=True, phase=phase, options=JSON,
                                       include_profiled=include, engine=SparkEngine(spark))
        assert_same_tables(got, want)
        tables = docs(got)
        assert len(tables) == RANKS + 1 and tables[-1]["profiled_calls"] > 0
        assert all(d["profiled_included"] == include for d in tables)


@pytest.mark.parametrize(("skip", "lo", "hi", "engines", "include"), [
    (5, 0.05, 0.4, None, True),
    (3, 0.02, None, frozenset({"_run_on_acc_0_engine", "_run_on_acc_4_engine", "nope"}), False),
    (40, None, None, None, False),  # past every engine's calls: empty tables
])
def test_windows_agree(spark, fleet, skip, lo, hi, engines, include):
    work, _, merged = fleet
    window = Window(skip, lo, hi, engines)
    want, _ = summary_parts(str(merged), include_profiled=include, by_process=True, phase="enqueue", window=window,
                            options=JSON)
    got, _ = dataset_summary_parts(str(work / "ds"), by_process=True, phase="enqueue", window=window, options=JSON,
                                   include_profiled=include, engine=SparkEngine(spark))
    assert_same_tables(got, want)


def test_a_host_name_with_escaped_characters(spark, fleet, tmp_path):
    """A host name a path cannot hold as it is (%-escaped in its folder): Spark's partition value matches it."""
    work, traces, _ = fleet
    events = orjson.loads(traces[0].read_bytes())
    events = events["traceEvents"] if isinstance(events, dict) else events
    for e in events:
        if e.get("name") == "trt_trace_metadata" and "host" in e.get("args", {}):
            e["args"]["host"] = "rack 7/node=3%"
    moved = tmp_path / "trace_0.json"
    moved.write_bytes(orjson.dumps(events))
    assert cli("export", str(moved), str(traces[1]), "--dataset", str(tmp_path / "ds")).returncode == 0
    assert any("%" in p.name for p in (tmp_path / "ds").iterdir())
    duck, _ = dataset_summary_parts(str(tmp_path / "ds"), by_process=True, options=JSON)
    got, _ = dataset_summary_parts(str(tmp_path / "ds"), by_process=True, options=JSON, engine=SparkEngine(spark))
    assert_same_tables(got, duck)
    assert [d["engines"][0]["calls"] > 0 for d in docs(got)] == [True] * 3


def test_the_cli_on_spark_prints_the_traces_table_and_nothing_of_spark(fleet):
    work, _, merged = fleet
    a = cli("summary", str(merged), "--by-rank", "--phase", "gpu")
    # A JVM of its own: the command took 113 s, and over 300 s, on the dev VM at a load average near 20.
    b = subprocess.run([*CLI, "summary", str(work / "ds"), "--by-rank", "--phase", "gpu", "--engine", "spark"],
                       capture_output=True, text=True, timeout=900)
    assert a.returncode == b.returncode == 0 and a.stdout == b.stdout, (a.stdout, b.stdout, b.stderr)
    assert a.stderr == b.stderr, b.stderr
    assert json.loads(cli("summary", str(merged), "--json").stdout)["profiled_calls"] > 0


def test_engine_misuse_and_no_java_are_one_line(fleet, tmp_path):
    work, traces, _ = fleet
    proc = cli("summary", str(traces[0]), "--engine", "spark")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "--engine reads a dataset folder" in proc.stderr
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    env["PATH"] = str(tmp_path)  # no java on it
    proc = subprocess.run([*CLI, "summary", str(work / "ds"), "--engine", "spark"], capture_output=True, text=True,
                          env=env, timeout=120)
    assert proc.returncode == 2 and proc.stdout == "" and proc.stderr.count("\n") == 1, proc.stderr
    assert "needs Java" in proc.stderr
