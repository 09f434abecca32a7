"""The SQL engines a dataset's summary runs on (fleet_summary.py holds the plan, the same SQL for both):
DuckDB, embedded (the default), and Spark (pyspark: local mode, or the cluster its configuration names).

An engine does three things: `load` exposes the dataset's files as the relation `calls` (each row with its
process's number `proc` and clock offset `offset_ns`, matched by the process's partition folder), `table`
registers a small table of Python rows, and `rows`/`run` run SQL. Its own errors become DatasetError (one
line)."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from typing import Any, NamedTuple, Protocol

ENGINES = ("duckdb", "spark")


class DatasetError(ValueError):
    """A folder that is not a dataset of this kind, or one the summary cannot read: one line."""


class ProcessKey(NamedTuple):
    """A process's partition: its folder, and its host, rank and pid values as Hive reads them (None: null)."""
    folder: str
    host: str | None
    rank: str | None
    pid: str | None


class SqlEngine(Protocol):
    def load(self, root: str, files: list[str], processes: list[tuple[ProcessKey, int, int]]) -> None:
        """The view `calls` over `files`: every column, plus proc and offset_ns of each (key, proc, offset_ns)."""

    def table(self, name: str, columns: str, rows: list[tuple[Any, ...]]) -> None:
        """A temporary table `name` (columns: "a INT, b INT") of `rows`."""

    def run(self, sql: str) -> None: ...

    def rows(self, sql: str) -> list[tuple[Any, ...]]: ...


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


class DuckDBEngine:
    """Embedded DuckDB: the files read with hive_partitioning, a row's process found by its file's folder."""

    def __init__(self, con: Any = None) -> None:
        try:
            import duckdb  # heavy and optional: only a dataset's summary pays for it
        except ImportError:
            raise DatasetError("duckdb is not installed; pip install duckdb") from None
        self.error = duckdb.Error
        self.con = con if con is not None else duckdb.connect()

    def load(self, root: str, files: list[str], processes: list[tuple[ProcessKey, int, int]]) -> None:
        self.table("procs", "folder VARCHAR, proc INTEGER, offset_ns BIGINT",
                   [(key.folder, proc, offset) for key, proc, offset in processes])
        listed = ", ".join("'" + f.replace("'", "''") + "'" for f in files)
        self.run(f"CREATE OR REPLACE TEMP VIEW calls AS SELECT procs.proc, procs.offset_ns, c.* FROM read_parquet("
                 f"[{listed}], hive_partitioning = true, hive_types = {{'host': 'VARCHAR', 'rank': 'INTEGER', "
                 f"'pid': 'BIGINT'}}, filename = true) c JOIN procs ON procs.folder = parse_dirpath(c.filename)")

    def table(self, name: str, columns: str, rows: list[tuple[Any, ...]]) -> None:
        self.run(f"CREATE OR REPLACE TEMP TABLE {name} ({columns})")
        if rows:
            self.con.executemany(f"INSERT INTO {name} VALUES ({', '.join('?' * len(rows[0]))})", rows)

    def run(self, sql: str) -> None:
        self.rows(sql)

    def rows(self, sql: str) -> list[tuple[Any, ...]]:
        try:
            return self.con.execute(sql).fetchall()
        except self.error as exc:
            raise DatasetError(f"DuckDB: {_first_line(exc)}") from None


# Spark's own log lines (start-up, warnings) kept off the terminal: errors only, on stderr.
_LOG4J = """rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %p %c{1}: %m%n
logger.repl.name = org.apache.spark.repl.Main
logger.repl.level = error
"""


def spark_session() -> Any:
    """A SparkSession for the CLI: the one of spark-submit or of Spark's configuration where it names a master
    (spark-defaults.conf, PYSPARK_SUBMIT_ARGS), else local mode on every core; quiet (errors only)."""
    try:
        from pyspark.sql import SparkSession  # heavy and optional: only --engine spark pays for it
    except ImportError:
        raise DatasetError("pyspark is not installed; pip install pyspark (it needs Java 17 or newer)") from None
    if not os.environ.get("JAVA_HOME") and shutil.which("java") is None:
        raise DatasetError("--engine spark needs Java 17 or newer (java on PATH or JAVA_HOME), e.g. "
                           "apt-get install default-jre-headless")
    fd, log4j = tempfile.mkstemp(prefix="trt-trace-log4j2-", suffix=".properties")
    with os.fdopen(fd, "w") as f:
        f.write(_LOG4J)
    # The JVM's own stderr (the java launcher's notes, a log line before log4j is set up) goes to a file of
    # its own for the JVM's life: the table's output stays the table's, and a JVM that does not start is
    # one line, with its last line of output.
    jvm_err = tempfile.TemporaryFile()
    sys.stderr.flush()
    saved = os.dup(2)
    os.dup2(jvm_err.fileno(), 2)
    try:
        builder = (SparkSession.builder.appName("trt-trace summary")
                   .config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile=file:{log4j}")
                   .config("spark.ui.showConsoleProgress", "false").config("spark.ui.enabled", "false"))
        spark = builder.getOrCreate()
    except Exception as exc:  # noqa: BLE001  (the JVM that would not start: pyspark's errors and py4j's)
        jvm_err.seek(0)
        said = [line for line in jvm_err.read().decode(errors="replace").splitlines() if line.strip()]
        raise DatasetError(f"Spark did not start: {_first_line(exc)}" + (f" ({said[-1].strip()})" if said else "")) \
            from None
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        jvm_err.close()
        os.unlink(log4j)
    spark.sparkContext.setLogLevel("ERROR")
    return spark


class SparkEngine:
    """Spark SQL over the files (spark.read.parquet, the folders' values as strings), a row's process found by
    its partition's host, rank and pid."""

    def __init__(self, spark: Any) -> None:
        from py4j.protocol import Py4JError  # heavy and optional: only --engine spark pays for it
        from pyspark.errors import PySparkException  # (the same)

        self.spark = spark
        self.errors = (PySparkException, Py4JError)

    def load(self, root: str, files: list[str], processes: list[tuple[ProcessKey, int, int]]) -> None:
        # Partition values as the folders spell them: Spark would guess types (a host "1234" an integer).
        self.spark.conf.set("spark.sql.sources.partitionColumnTypeInference.enabled", "false")
        try:
            frame = self.spark.read.option("basePath", os.path.abspath(root)).parquet(*files)
        except self.errors as exc:
            raise DatasetError(f"Spark: {_first_line(exc)}") from None
        frame.createOrReplaceTempView("dataset")
        self.table("procs", "host STRING, rank STRING, pid STRING, proc INT, offset_ns BIGINT",
                   [(key.host, key.rank, key.pid, proc, offset) for key, proc, offset in processes])
        self.run("CREATE OR REPLACE TEMP VIEW calls AS SELECT /*+ BROADCAST(p) */ p.proc, p.offset_ns, c.* "
                 "FROM dataset c JOIN procs p ON c.host <=> p.host AND c.rank <=> p.rank AND c.pid <=> p.pid")

    def table(self, name: str, columns: str, rows: list[tuple[Any, ...]]) -> None:
        try:
            self.spark.createDataFrame(rows, schema=columns).createOrReplaceTempView(name)
        except self.errors as exc:
            raise DatasetError(f"Spark: {_first_line(exc)}") from None

    def run(self, sql: str) -> None:
        self.rows(sql)

    def rows(self, sql: str) -> list[tuple[Any, ...]]:
        try:
            return [tuple(r) for r in self.spark.sql(sql).collect()]
        except self.errors as exc:
            raise DatasetError(f"Spark: {_first_line(exc)}") from None
