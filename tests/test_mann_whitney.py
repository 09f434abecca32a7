"""trt_trace/analysis/mann_whitney.py, the U test of `trt-trace diff` on value counts, against scipy's own
mannwhitneyu on the arrays those counts stand for: small samples (the exact distribution), ties (the
tie correction), all values tied, and samples either side of the exact method's size limit."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import mannwhitneyu

from trt_trace.analysis.mann_whitney import mann_whitney_p


def _counts(sample: list[int]) -> tuple[np.ndarray, np.ndarray]:
    values, counts = np.unique(np.asarray(sample, dtype=np.int64), return_counts=True)
    return values, counts


def _both(x: list[int], y: list[int]) -> tuple[float, float]:
    """Ours, and scipy's with the method named (exact: one sample of at most 8 values and no ties), not
    its "auto", whose rule differs between scipy releases (1.17 takes the exact method where either
    sample is small; earlier releases only where both are)."""
    ours = mann_whitney_p(*_counts(x), *_counts(y))
    ties = len(set(x) | set(y)) < len(x) + len(y)
    method = "exact" if min(len(x), len(y)) <= 8 and not ties else "asymptotic"
    theirs = float(mannwhitneyu(np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64),
                                alternative="two-sided", method=method).pvalue)
    return ours, theirs


def _same(ours: float, theirs: float) -> bool:
    return (math.isnan(ours) and math.isnan(theirs)) or ours == pytest.approx(theirs, rel=1e-9, abs=1e-15)


@settings(max_examples=400, deadline=None)
@given(x=st.lists(st.integers(0, 30), min_size=1, max_size=25), y=st.lists(st.integers(0, 30), min_size=1, max_size=25))
def test_the_p_value_is_scipys_with_ties(x, y):
    ours, theirs = _both(x, y)
    assert _same(ours, theirs), (x, y, ours, theirs)


@settings(max_examples=200, deadline=None)
@given(data=st.data(), n1=st.integers(1, 12), n2=st.integers(1, 12))
def test_the_p_value_is_scipys_without_ties_either_side_of_the_exact_limit(data, n1, n2):
    distinct = data.draw(st.lists(st.integers(0, 10**9), min_size=n1 + n2, max_size=n1 + n2, unique=True))
    ours, theirs = _both(distinct[:n1], distinct[n1:])
    assert _same(ours, theirs), (distinct, n1, ours, theirs)


@pytest.mark.parametrize(("n1", "n2"), [(8, 20), (9, 20), (9, 9), (8, 8), (20, 8), (20, 9)])
def test_the_exact_method_ends_where_scipys_does(n1, n2):
    """Samples apart by a wide margin, no ties: at 8 values the exact distribution, at 9 the normal one
    (the two differ in the digits compared)."""
    x = list(range(n1))
    y = list(range(1000, 1000 + n2))
    ours, theirs = _both(x, y)
    assert _same(ours, theirs)


@pytest.mark.parametrize(("n1", "n2"), [(1, 1), (3, 10), (9, 10), (40, 40)])
def test_all_values_tied_is_no_difference(n1, n2):
    """No spread at all: the normal approximation's variance is 0. Ours says no difference (p = 1);
    scipy says 1 or, in some releases, nan for this degenerate case."""
    ours, theirs = _both([5] * n1, [5] * n2)
    assert ours == 1.0
    assert theirs == 1.0 or math.isnan(theirs)
