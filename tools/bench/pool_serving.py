"""bench_serving's traced ÷ untraced ratios pooled over several runs: one run on a shared 2-core VM moves by a few
percent, more than the differences between builds that are asked about; the repeat pairs of many runs pin the
median down.

    python tools/bench/pool_serving.py [--threads 8] "LABEL=LOG:ARM:UNTRACED_ARM" ...

Each spec adds, to the group LABEL, the ratio of every repeat of ARM in LOG (bench_serving's output) over the
UNTRACED_ARM of the same repeat and thread count (for a `--baseline` child: `baseline traced` over
`baseline untraced`). Prints per group the pairs, the median and its 95% confidence interval (bench_serving's
distribution-free interval). The logs of 2026-12-06 are in tools/bench/results/.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_serving import _median_ci  # noqa: E402

ROW = re.compile(r"^rep (\d+) (\d+) thread\(s\) (.*?)\s{2,}(\d+) runner calls/s")


def ratios(log: str, arm: str, untraced: str, threads: int) -> list[float]:
    """ARM's calls/s over UNTRACED's, repeat by repeat, at `threads` threads (flat out)."""
    rows: dict[tuple[int, str], float] = {}
    for line in Path(log).read_text().splitlines():
        m = ROW.match(line)
        if m and int(m[2]) == threads:
            rows[(int(m[1]), m[3].strip())] = float(m[4])
    return [v / rows[(rep, untraced)] for (rep, a), v in rows.items() if a == arm and (rep, untraced) in rows]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("specs", nargs="+", metavar="LABEL=LOG:ARM:UNTRACED_ARM")
    args = ap.parse_args()
    groups: dict[str, list[float]] = {}
    for spec in args.specs:
        label, _, rest = spec.partition("=")
        log, arm, untraced = rest.split(":")
        found = ratios(log, arm, untraced, args.threads)
        if not found:
            print(f"pool_serving: no repeat of {arm!r} over {untraced!r} at {args.threads} threads in {log}",
                  file=sys.stderr)
            return 2
        groups.setdefault(label, []).extend(found)
    width = max(len(label) for label in groups)
    for label, rs in groups.items():
        ci = _median_ci(rs)
        interval = f"[{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "(fewer than 6 pairs)"
        print(f"{label:<{width}}  pairs {len(rs):3d}  median {statistics.median(rs):.3f}  95% CI {interval}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
