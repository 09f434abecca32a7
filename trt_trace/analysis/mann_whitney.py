"""The two-sided Mann-Whitney U test of `trt-trace diff`, on value counts (readers/value_counts.py)
instead of arrays of every call, so that two 6 M-call traces compare in bounded memory.

The same test as scipy.stats.mannwhitneyu(x, y) with continuity correction and the method chosen
here, not by scipy's "auto" (whose rule has changed between scipy releases): the exact distribution
where one sample has at most 8 values and there are no ties (scipy itself computes it then, with
method="exact": the samples are that small), else the normal approximation with the tie correction,
whose ranks, U and tie term are computed here from the distinct values and their counts, then
scipy.special.ndtr as scipy does (tests/test_diff.py and tests/test_mann_whitney.py compare both)."""

from __future__ import annotations

import math

import numpy as np


def mann_whitney_p(x_values: np.ndarray, x_counts: np.ndarray, y_values: np.ndarray, y_counts: np.ndarray) -> float:
    """Two-sided p-value that samples x and y (sorted distinct values and their counts) come from one
    distribution."""
    n1, n2 = int(x_counts.sum()), int(y_counts.sum())
    values = np.union1d(x_values, y_values)
    a = np.zeros(len(values), dtype=np.int64)
    b = np.zeros(len(values), dtype=np.int64)
    a[np.searchsorted(values, x_values)] = x_counts
    b[np.searchsorted(values, y_values)] = y_counts
    t = a + b
    ties = bool((t > 1).any())
    if (n1 <= 8 or n2 <= 8) and not ties:
        from scipy.stats import mannwhitneyu  # heavy (about a second): only small samples without ties need it

        x = np.repeat(x_values, x_counts).astype(np.float64)
        y = np.repeat(y_values, y_counts).astype(np.float64)
        return float(mannwhitneyu(x, y, alternative="two-sided", method="exact").pvalue)
    before = np.cumsum(t) - t  # values below each distinct value
    ranks = before + (t + 1) / 2.0  # the average rank of a tied group
    r1 = float(np.sum(a * ranks))
    u1 = r1 - n1 * (n1 + 1) / 2
    u2 = n1 * n2 - u1
    u = max(u1, u2)
    n = n1 + n2
    tf = t.astype(np.float64)
    tie_term = float(np.sum(tf**3 - tf))
    s = math.sqrt(n1 * n2 / 12 * ((n + 1) - tie_term / (n * (n - 1))))
    numerator = u - n1 * n2 / 2 - 0.5
    if s == 0:
        z = math.copysign(math.inf, numerator) if numerator else math.nan
    else:
        z = numerator / s
    from scipy.special import ndtr  # heavy: scipy only once diff gets here, never at the CLI's start

    p = 2 * float(ndtr(-z))
    return min(max(p, 0.0), 1.0) if not math.isnan(p) else p
