"""`trt-trace diff BASE NEW`: what changed per engine and phase between two traces, and whether it
is more than noise.

Engines are matched by name (the k-th engine of a name with the k-th, as `trt-trace summary` adds
ranks up). For each engine and each duration (the call, its four host phases, its GPU span where
both traces have one) the two traces' per-call durations are compared with a two-sided
Mann-Whitney U test (mann_whitney.py: scipy's test, on value counts): it asks whether a call
of one build tends to take longer than a call of the other, with no assumption on the shape of
the distribution. That matters here: call durations are skewed and have long tails (a lock
wait, a page fault), so a t-test on the means would let one slow call decide. Its effect
measure is the shift of the median, so a change is the relative change of the per-call p50.

A change is **slower** (a regression) or **faster** when all hold: the test's p-value is below
ALPHA divided by the number of tests made (Bonferroni: with 40 engines and their phases some
would pass a plain 1% test by chance alone), the p50 moved by more than the threshold (default 5%: a
significant 0.3% change is real but not worth failing a build for) and by at least MIN_CHANGE_NS
(a sub-microsecond phase that moves by 15 ns is at the clock's and the hook's resolution). The gated durations are the
call's total and its GPU span; a phase's verdict is shown but only explains the call's.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from ..io.readers import TraceFileError, Window
from ..io.readers.value_counts import ValueCounts
from ..schema.trace_format import DURATIONS
from .mann_whitney import mann_whitney_p
from .trace_summary import TraceSummary, aggregate_file

ALPHA = 0.01
MIN_CHANGE_NS = 1000
GATED = ("total", "gpu")
SLOWER, FASTER, SAME = "SLOWER", "faster", "same"


@dataclass
class Figures:
    """One duration of one engine in one trace (ns)."""

    calls: int
    total_ns: int
    mean_ns: float
    p50_ns: int
    p99_ns: int


@dataclass
class DurationChange:
    duration: str  # one of trace_format.DURATIONS
    base: Figures | None
    new: Figures | None
    p50_change_pct: float | None = None
    p_value: float | None = None
    verdict: str = SAME


@dataclass
class EngineChange:
    engine: str
    only_in: str | None  # "base" or "new" for an engine present in one trace only
    durations: list[DurationChange] = field(default_factory=list)

    @property
    def total_change_ns(self) -> int:
        call = self.durations[0]
        return (call.new.total_ns if call.new else 0) - (call.base.total_ns if call.base else 0)


@dataclass
class TraceDiff:
    base: str
    new: str
    threshold_pct: float
    alpha: float  # per test, after the Bonferroni correction
    min_change_ns: int
    engines: list[EngineChange]
    notes: list[str] = field(default_factory=list)  # the inputs' end notes (cut short, size limit, ...)

    @property
    def regressions(self) -> list[tuple[str, str]]:
        return [(e.engine, d.duration) for e in self.engines for d in e.durations
                if d.duration in GATED and d.verdict == SLOWER]


def _per_engine(summary: TraceSummary) -> dict[str, dict[str, ValueCounts]]:
    """engine label -> duration -> its calls' exact values; the k-th engine of a name is `name #k` (k >= 2)."""
    out: dict[str, dict[str, ValueCounts]] = {}
    seen: dict[str, int] = {}
    for row, name in enumerate(summary.names):
        k = seen.get(name, 0) + 1
        seen[name] = k
        label = name if k == 1 else f"{name} #{k}"
        out[label] = {d: summary.values[d][row] for d in DURATIONS if len(summary.values[d][row])}
    return out


def _figures(values: ValueCounts) -> Figures:
    p50, p99 = values.quantiles()
    n = len(values)
    total = values.total()
    return Figures(calls=n, total_ns=total, mean_ns=total / n, p50_ns=p50, p99_ns=p99)


class NoCommonEngine(TraceFileError):
    """The two traces share no engine: nothing was compared."""


def compare(base: TraceSummary, new: TraceSummary, threshold_pct: float = 5.0, alpha: float = ALPHA,
            base_name: str = "BASE", new_name: str = "NEW", min_change_ns: int = MIN_CHANGE_NS) -> TraceDiff:
    """The change of every engine and duration from `base` to `new`, most changed total first."""
    a, b = _per_engine(base), _per_engine(new)
    engines = []
    for label in list(a) + [e for e in b if e not in a]:
        old, cur = a.get(label, {}), b.get(label, {})
        change = EngineChange(label, None if label in a and label in b else ("base" if label in a else "new"))
        for duration in DURATIONS:
            if duration not in old and duration not in cur:
                continue
            d = DurationChange(duration, _figures(old[duration]) if duration in old else None,
                               _figures(cur[duration]) if duration in cur else None)
            if d.base and d.new:
                if d.base.p50_ns > 0:
                    d.p50_change_pct = 100.0 * (d.new.p50_ns - d.base.p50_ns) / d.base.p50_ns
                if d.base.calls >= 2 and d.new.calls >= 2:
                    d.p_value = mann_whitney_p(*cur[duration].folded(), *old[duration].folded())
            change.durations.append(d)
        engines.append(change)
    # Bonferroni over every test made (phases too: a phase's verdict is shown, so it must not be noise).
    tests = sum(1 for e in engines for d in e.durations if d.p_value is not None)
    per_test = alpha / max(tests, 1)
    for e in engines:
        for d in e.durations:
            big_enough = d.base and d.new and abs(d.new.p50_ns - d.base.p50_ns) >= min_change_ns
            if d.p_value is not None and d.p_value < per_test and d.p50_change_pct is not None and big_enough:
                if d.p50_change_pct > threshold_pct:
                    d.verdict = SLOWER
                elif d.p50_change_pct < -threshold_pct:
                    d.verdict = FASTER
    engines.sort(key=lambda e: -abs(e.total_change_ns))
    return TraceDiff(base_name, new_name, threshold_pct, per_test, min_change_ns, engines)


def diff_files(base_path: str, new_path: str, threshold_pct: float = 5.0, alpha: float = ALPHA,
               min_change_ns: int = MIN_CHANGE_NS, window: Window | None = None) -> TraceDiff:
    """compare() of two trace files (JSON, Perfetto, merged), each cut to `window`; TraceFileError for
    one that cannot be read or holds no engine call, NoCommonEngine where they share none."""
    summaries = []
    for path in (base_path, new_path):
        s = aggregate_file(path, DURATIONS, window)
        if not s.names:
            raise TraceFileError(f"{path} has no engine calls to compare" + (" in the window" if window and
                                                                             window.active else ""))
        summaries.append(s)
    diff = compare(summaries[0], summaries[1], threshold_pct, alpha, base_path, new_path, min_change_ns)
    diff.notes = [n for s in summaries for n in s.notes]
    if all(e.only_in is not None for e in diff.engines):
        raise NoCommonEngine(f"{base_path} and {new_path} share no engine: nothing to compare "
                             f"({', '.join(summaries[0].names)} / {', '.join(summaries[1].names)})")
    return diff


def _ms(ns: float | None) -> str:
    return "-" if ns is None else f"{ns / 1e6:.3f}"


def _pair(d: DurationChange, attr: str) -> str:
    return f"{_ms(getattr(d.base, attr) if d.base else None)}/{_ms(getattr(d.new, attr) if d.new else None)}"


def format_diff(diff: TraceDiff) -> str:
    """The diff as a table: one line per engine and duration, base/new side by side."""
    header = ["engine", "phase", "calls", "total ms", "Δ total", "mean ms", "p50 ms", "Δ p50", "p99 ms",
              "p-value", "verdict"]
    lines = []
    for e in diff.engines:
        for i, d in enumerate(e.durations):
            calls = f"{d.base.calls if d.base else 0}/{d.new.calls if d.new else 0}"
            delta = (d.new.total_ns if d.new else 0) - (d.base.total_ns if d.base else 0)
            verdict = d.verdict if e.only_in is None else f"only in {e.only_in}"
            lines.append([
                e.engine if i == 0 else "", "call" if d.duration == "total" else d.duration, calls,
                _pair(d, "total_ns"), f"{delta / 1e6:+.3f}", _pair(d, "mean_ns"), _pair(d, "p50_ns"),
                "-" if d.p50_change_pct is None else f"{d.p50_change_pct:+.1f}%", _pair(d, "p99_ns"),
                "-" if d.p_value is None else f"{d.p_value:.2g}", verdict if d.verdict != SAME or e.only_in else "",
            ])
    widths = [max(len(r[c]) for r in [header, *lines]) for c in range(len(header))]
    left = {0, 1, 10}

    def fmt(row: list[str]) -> str:
        return "  ".join(v.ljust(w) if c in left else v.rjust(w) for c, (v, w) in enumerate(zip(row, widths,
                                                                                                strict=True))).rstrip()

    out = [fmt(header), *(fmt(r) for r in lines)]
    regressions = diff.regressions
    out.append(f"base/new: {diff.base} / {diff.new}; times in ms; a change is SLOWER or faster when the p50 "
               f"moved by more than {diff.threshold_pct:g}% (and {diff.min_change_ns / 1000:g} µs) and "
               f"Mann-Whitney p < {diff.alpha:.2g}")
    out.append(f"{len(regressions)} regression(s): " + ", ".join(f"{n} ({'call' if d == 'total' else d})"
                                                                  for n, d in regressions)
               if regressions else "no regression")
    return "\n".join(out) + "\n"


def to_json(diff: TraceDiff) -> dict[str, Any]:
    doc = asdict(diff)
    for e, change in zip(doc["engines"], diff.engines, strict=True):
        e["total_change_ns"] = change.total_change_ns
    doc["regressions"] = [{"engine": n, "duration": d} for n, d in diff.regressions]
    return doc
