"""The per-engine table as `trt-trace summary` shows it: columns chosen (`--columns`), rows sorted
(`--sort`) and cut (`--top`), as text, JSON or CSV (`--format`).

The table's model is the native formatter's (csrc/stats/timing_table.cpp, also `dump_engine_timing()`):
rows ordered by each engine's time (the longer of its host total and its scaled GPU time), its share and
the cumulative share, exact p50/p99. To it this module adds, from the same exact values of the
table's duration (value_counts.py: every call's value, as sorted distinct values and counts), each
row's min, mean, max and sample standard deviation, and lays the table out itself, so that names of
any width and content keep the columns aligned (table_text.py)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..io.readers.value_counts import ValueCounts
from ..schema.phases import HOST_PHASES
from .table_text import Column, csv_text, left_out_line, text_table

FORMATS = ("text", "json", "csv")
STATS = ("min", "mean", "max", "stddev")
# Every column, in the order `--columns +...` places them; the engine's name is always the first.
COLUMNS = ("calls", "errors", "total", "share", "cum", "p50", "p99", *STATS, *HOST_PHASES, "gpu", "gpu_kernels",
           "kernels_per_call")
# The columns of the live table (dump_engine_timing(), the same native formatter), so that a file's table
# reads as the process's own; gpu where a row has GPU spans and the capture's kernel columns where the
# trace is a capture with CUDA activity are added. The statistics come with `--columns +stats`.
DEFAULT_COLUMNS = ("calls", "total", "share", "cum", "p50", "p99", *HOST_PHASES)
COLUMN_GROUPS = {"stats": STATS, "phases": HOST_PHASES, "all": COLUMNS}
# --sort: `share` is the table's own order (each engine's time, most first); numbers sort largest first,
# names in their code-point order; ties keep the table's order.
SORT_KEYS = ("share", "total", "calls", "errors", "p50", "p99", *STATS, *HOST_PHASES, "gpu", "name")
DEFAULT_NAME_WIDTH = 60
# The JSON (and CSV) field of each column.
FIELDS = {"calls": "calls", "errors": "errors", "total": "total_ms", "share": "share_pct", "cum": "cum_pct",
          "p50": "p50_ms", "p99": "p99_ms", "min": "min_ms", "mean": "mean_ms", "max": "max_ms",
          "stddev": "stddev_ms", **{p: f"{p}_ms" for p in HOST_PHASES}, "gpu": "gpu_ms",
          "gpu_kernels": "gpu_kernels_ms", "kernels_per_call": "kernels_per_call"}
_SORT_FIELDS = {**{k: FIELDS[k] for k in SORT_KEYS if k in FIELDS}, "name": "engine"}


class ColumnsError(ValueError):
    """A --columns value that names no column: one line."""


def parse_columns(spec: str) -> tuple[str, ...] | None:
    """`--columns`: names (and groups: stats, phases, all), comma-separated, in the order given; or
    `+names` to add them to the default columns, in the table's order. None: the default."""
    spec = spec.strip()
    add = spec.startswith("+")
    names: list[str] = []
    for part in spec.lstrip("+").split(","):
        part = part.strip()
        if not part:
            continue
        found = COLUMN_GROUPS.get(part, (part,) if part in COLUMNS else None)
        if found is None:
            raise ColumnsError(f"--columns: unknown column {part!r}; use any of {', '.join(COLUMNS)} "
                               f"(or {', '.join(COLUMN_GROUPS)}; +NAMES adds to the default)")
        names.extend(n for n in found if n not in names)
    if not names:
        raise ColumnsError("--columns: give column names, comma-separated (e.g. calls,total,p50,p99)")
    if add:
        return tuple(c for c in COLUMNS if c in DEFAULT_COLUMNS or c in names)
    return tuple(names)


@dataclass(frozen=True)
class TableOptions:
    """How the table is shown: columns (None: the default of the format), sort key, top N rows (0: all),
    format, the name column's width in text before names wrap (0: as wide as the widest name)."""

    columns: tuple[str, ...] | None = None
    sort: str = "share"
    top: int = 0
    format: str = "text"
    name_width: int = DEFAULT_NAME_WIDTH

    def __post_init__(self) -> None:
        if self.sort not in SORT_KEYS:
            raise ValueError(f"unknown sort key {self.sort!r}; use one of {', '.join(SORT_KEYS)}")
        if self.format not in FORMATS:
            raise ValueError(f"unknown format {self.format!r}; use one of {', '.join(FORMATS)}")
        if self.top < 0 or self.name_width < 0:
            raise ValueError("top and name_width are counts >= 0")


# -- the statistics ------------------------------------------------------------------------------------


def value_stats(vc: ValueCounts) -> dict[str, float | int | None]:
    """min, mean, max and the sample standard deviation (n - 1; 0 for one call) in ns of a multiset of
    durations, from every value: the mean as the exact sum over the count, the deviation from the
    values centred on the mean's integer part (exact in int64) and squared in float64."""
    values, counts = vc.folded()
    n = int(counts.sum())
    if n == 0:
        return {"min": None, "mean": None, "max": None, "stddev": None}
    total = int((values * counts).sum(dtype=np.int64))
    base = total // n
    frac = (total - base * n) / n  # the mean is base + frac, frac in [0, 1)
    centred = (values - base).astype(np.float64) - frac
    var = float((counts * centred * centred).sum()) / (n - 1) if n > 1 else 0.0
    return {"min": int(values[0]), "mean": base + frac, "max": int(values[-1]), "stddev": math.sqrt(var)}


def stat_fields(vc: ValueCounts) -> dict[str, float | None]:
    """The JSON fields of value_stats: ms, to the ns (6 decimals), null where no call has the duration."""
    return ns_fields(value_stats(vc))


def ns_fields(stats: dict[str, float | int | None]) -> dict[str, float | None]:
    """value_stats' dict (ns) as the JSON fields (ms, to the ns)."""
    return {FIELDS[k]: None if v is None else round(v / 1e6, 6) for k, v in stats.items()}


# -- rows: sorted, cut, cumulative share in the shown order ----------------------------------------------


def _sort_value(row: dict[str, Any], field: str) -> tuple[int, Any]:
    v = row.get(field)
    if field == "engine":
        return (0, str(v))
    return (1, 0) if v is None else (0, -v)  # largest first, rows without the figure last


def arrange(doc: dict[str, Any], time_ns: Sequence[int], sort: str, top: int) -> dict[str, Any]:
    """The table's rows in `sort` order, the first `top` of them (0: all); `cum_pct` is the cumulative
    share in the order shown. `time_ns`: each row's time (what its share is of), in the table's order."""
    rows = list(doc.get("engines", []))
    times = list(time_ns)
    order = list(range(len(rows)))
    if sort != "share":
        field = _SORT_FIELDS[sort]
        order.sort(key=lambda i: _sort_value(rows[i], field))
        all_time = sum(times)
        cum = 0
        for i in order:
            cum += times[i]
            rows[i]["cum_pct"] = round(min(100.0, 100.0 * cum / all_time), 4) if all_time > 0 else 0.0
    shown = order[:top] if top else order
    out = dict(doc)
    out["engines"] = [rows[i] for i in shown]
    out["sorted_by"] = sort
    out["engines_left_out"] = len(rows) - len(shown)
    return out


# -- text ----------------------------------------------------------------------------------------------


def _ms(v: Any) -> str:
    return "-" if v is None else f"{v:.3f}"


def _pct(v: Any) -> str:
    return "-" if v is None else f"{v:.1f}"


def _gpu(r: dict[str, Any]) -> str:
    if not r.get("gpu_calls"):
        return "-"
    return ("~" if r.get("gpu_sampled_out") else "") + _ms(r.get("gpu_ms"))


def _per_call(v: Any) -> str:
    return "-" if v is None else f"{v:.2f}"


def text_columns(keys: Sequence[str], phase: str) -> list[Column]:
    """The text columns of `keys`; the statistics' headers say their duration (`p50 ms`, `enqueue p50`)."""
    def stat_header(k: str) -> str:
        short = "std" if k == "stddev" else k
        return f"{short} ms" if phase == "total" else f"{phase} {short}"

    out = []
    for k in keys:
        f = FIELDS[k]
        if k in ("calls", "errors"):
            out.append(Column(k, k, lambda r, f=f: str(r.get(f, 0)), 8))
        elif k in ("share", "cum"):
            out.append(Column(k, "share %" if k == "share" else "cum %", lambda r, f=f: _pct(r.get(f)),
                              9 if k == "share" else 8))
        elif k in ("p50", "p99", *STATS):
            header = stat_header(k)
            out.append(Column(k, header, lambda r, f=f: _ms(r.get(f)), max(9, len(header) + 2)))
        elif k == "gpu":
            out.append(Column(k, "gpu ms", _gpu, 11))
        elif k == "gpu_kernels":
            out.append(Column(k, "gpu kernels ms", lambda r, f=f: _ms(r.get(f)), 16))
        elif k == "kernels_per_call":
            out.append(Column(k, "kernels/call", lambda r, f=f: _per_call(r.get(f)), 14))
        else:  # total and the host phases
            out.append(Column(k, "total ms" if k == "total" else k, lambda r, f=f: _ms(r.get(f)), 11))
    return out


def default_columns(doc: dict[str, Any], with_kernels: bool, fmt: str) -> tuple[str, ...]:
    """The columns shown when --columns is not given: text, today's table (DEFAULT_COLUMNS, gpu where
    a row has GPU spans, the kernel columns of a capture with CUDA activity); CSV, every column."""
    rows = [*doc.get("engines", []), doc.get("all") or {}]
    any_gpu = any(r.get("gpu_calls") for r in rows)
    if fmt == "csv":
        return tuple(k for k in COLUMNS if k not in ("gpu_kernels", "kernels_per_call") or with_kernels)
    return (*DEFAULT_COLUMNS, *(("gpu",) if any_gpu else ()), *(("gpu_kernels", "kernels_per_call")
                                                                if with_kernels else ()))


def render_text(doc: dict[str, Any], columns: Sequence[str], phase: str, name_width: int, top: int) -> str:
    rows = [*doc["engines"], doc["all"]]
    lines = text_table("engine", [str(r.get("engine", "")) for r in rows], rows, text_columns(columns, phase),
                       name_width)
    if doc.get("engines_left_out"):
        lines.append(left_out_line(doc["engines_left_out"], "engine", top))
    return "\n".join(lines) + "\n"


def csv_rows(doc: dict[str, Any], columns: Sequence[str], process: str | None = None) -> list[list[Any]]:
    lead = [] if process is None else [process]
    return [[*lead, r.get("engine"), *(r.get(FIELDS[k]) for k in columns)] for r in [*doc["engines"], doc["all"]]]


def csv_header(columns: Sequence[str], with_process: bool = False) -> list[str]:
    return [*(["process"] if with_process else []), "engine", *(FIELDS[k] for k in columns)]


def render_csv(docs: Sequence[tuple[str | None, dict[str, Any]]], columns: Sequence[str]) -> str:
    """One CSV of the tables: a header row, each table's rows and its ALL row last; a `process` column
    first where there are several tables (--by-rank)."""
    several = len(docs) > 1
    rows = [row for label, doc in docs for row in csv_rows(doc, columns, label if several else None)]
    return csv_text(csv_header(columns, several), rows)
