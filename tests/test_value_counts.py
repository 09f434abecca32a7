"""trt_trace/io/readers/value_counts.py against numpy on the same values: the exact multiset behind every
p50/p99, total and diff's U test. Values come in chunks (folded once the buffer is as large as what
it folds into; MIN_BUFFER made small here so that small examples fold many times), through add(),
merge() and union(); gaps between neighbours and counts past 32 bits switch to int64 storage.
Found by mutants of the module (docs/mutation-testing.md): no test read a ValueCounts directly."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trt_trace.io.readers import value_counts
from trt_trace.io.readers.value_counts import ValueCounts

U32 = (1 << 32) - 1
CHUNKS = st.lists(st.lists(st.integers(0, 5 * 10**9), max_size=12), max_size=8)


def _inverted_cdf(values: np.ndarray, p: int) -> int:
    return int(np.percentile(values, p, method="inverted_cdf"))


def _check(vc: ValueCounts, everything: np.ndarray) -> None:
    want_v, want_c = np.unique(everything, return_counts=True)
    got_v, got_c = vc.folded()
    assert got_v.dtype == np.int64 and got_c.dtype == np.int64
    assert got_v.tolist() == want_v.tolist() and got_c.tolist() == want_c.tolist()
    assert vc.values.tolist() == want_v.tolist() and vc.counts.tolist() == want_c.tolist()
    assert len(vc) == len(everything) and vc.total() == int(everything.sum())
    ps = (1, 10, 50, 99, 100)
    if len(everything):
        assert vc.quantiles(ps) == [_inverted_cdf(everything, p) for p in ps]
        assert vc.quantiles() == [_inverted_cdf(everything, 50), _inverted_cdf(everything, 99)]
    else:
        assert vc.quantiles(ps) == [-1] * len(ps) and vc.quantiles() == [-1, -1]


@pytest.mark.parametrize("min_buffer", [1, 3, 1 << 16])
@settings(max_examples=60, deadline=None)
@given(chunks=CHUNKS)
def test_values_added_in_chunks_are_numpys(min_buffer, chunks):
    everything = np.array([v for c in chunks for v in c], dtype=np.int64)
    saved = value_counts.MIN_BUFFER
    value_counts.MIN_BUFFER = min_buffer
    try:
        vc = ValueCounts()
        for i, chunk in enumerate(chunks):
            vc.add(np.array(chunk, dtype=np.int64))
            if i == len(chunks) // 2:  # read half-way: a fold in the middle of the adding
                _check(vc, np.array([v for c in chunks[: i + 1] for v in c], dtype=np.int64))
        _check(vc, everything)
    finally:
        value_counts.MIN_BUFFER = saved


@settings(max_examples=60, deadline=None)
@given(parts=st.lists(CHUNKS, min_size=1, max_size=4))
def test_merge_and_union_are_the_values_of_every_part(parts):
    vcs, everything = [], []
    for chunks in parts:
        vc = ValueCounts()
        for chunk in chunks:
            vc.add(np.array(chunk, dtype=np.int64))
            everything += chunk
        vcs.append(vc)
    everything_a = np.array(everything, dtype=np.int64)
    _check(ValueCounts.union(vcs), everything_a)
    # merge() into one that still has values buffered: they are folded in first.
    first = ValueCounts()
    first.add(np.array([7, 7, 3], dtype=np.int64))
    for vc in vcs:
        first.merge(*vc.folded())
    _check(first, np.concatenate([everything_a, [7, 7, 3]]))


def test_a_fold_happens_when_the_buffer_reaches_min_buffer(monkeypatch):
    """The buffer folds at MIN_BUFFER values exactly (not one later), then at as many values as are folded."""
    monkeypatch.setattr(value_counts, "MIN_BUFFER", 4)
    vc = ValueCounts()
    vc.add(np.array([5, 1, 5], dtype=np.int64))
    assert vc._n == 0 and vc._buffered == 3
    vc.add(np.array([2], dtype=np.int64))
    assert (vc._n, vc._buffered, vc._buf) == (3, 0, [])  # 1, 2, 5 folded
    vc.add(np.array([9, 8, 7, 6], dtype=np.int64))  # 4 >= max(4, 3): folded
    assert (vc._n, vc._buffered) == (7, 0)
    vc.add(np.array(range(10, 16), dtype=np.int64))  # 6 < max(4, 7): kept in the buffer
    assert (vc._n, vc._buffered) == (7, 6)
    vc.add(np.array([16], dtype=np.int64))  # 7 >= 7
    assert (vc._n, vc._buffered) == (14, 0)
    vc.add(np.zeros(0, dtype=np.int64))
    assert vc._buf == [] and vc._buffered == 0


def test_gaps_and_counts_past_32_bits_are_kept_exactly():
    """Neighbours 2**32 ns and more apart (and exactly 2**32 - 1 apart, still 4 bytes), counts past
    2**32 (merged ones): nothing wraps."""
    vc = ValueCounts()
    vc.add(np.array([10, 10 + U32], dtype=np.int64))
    assert vc.values.tolist() == [10, 10 + U32] and vc._gaps.dtype == np.uint32  # folded, in 4 bytes a gap
    vc.add(np.array([10 + U32 + U32 + 1], dtype=np.int64))
    assert vc.values.tolist() == [10, 10 + U32, 10 + 2 * U32 + 1]
    big = ValueCounts()
    big.merge(np.array([3, 4], dtype=np.int64), np.array([U32, 1], dtype=np.int64))
    assert big._counts.dtype == np.uint32 and big.counts.tolist() == [U32, 1]
    big.merge(np.array([3], dtype=np.int64), np.array([1], dtype=np.int64))
    assert big.counts.tolist() == [U32 + 1, 1] and len(big) == U32 + 2
    assert big.total() == 3 * (U32 + 1) + 4 and big.quantiles((50, 100)) == [3, 4]
    one = ValueCounts()
    one.add(np.array([42], dtype=np.int64))
    assert (one.values.tolist(), one.counts.tolist(), one.quantiles()) == ([42], [1], [42, 42])


def test_p99_of_more_than_a_hundred_values_is_not_the_maximum():
    vc = ValueCounts()
    vc.add(np.arange(1, 201, dtype=np.int64))
    assert vc.quantiles() == [100, 198] and vc.quantiles((100,)) == [200]
