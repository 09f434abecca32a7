"""An exact multiset of durations in ns, kept as sorted distinct values and their counts.

Exact percentiles need every value, but not every value apart: call durations repeat (they are
whole ns of a few typical lengths), so a 6 M-call trace's values of one engine and phase take a
few hundred thousand distinct values at most. New values are buffered and folded in once the
buffer is as large as what it folds into (amortised O(n log n), at most about twice the distinct
values in memory while folding)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

MIN_BUFFER = 1 << 16


class ValueCounts:
    __slots__ = ("_buf", "_buffered", "counts", "values")

    def __init__(self) -> None:
        self.values = np.zeros(0, dtype=np.int64)
        self.counts = np.zeros(0, dtype=np.int64)
        self._buf: list[np.ndarray] = []
        self._buffered = 0

    def add(self, values: np.ndarray) -> None:
        if len(values):
            self._buf.append(np.array(values, dtype=np.int64))
            self._buffered += len(values)
            if self._buffered >= max(MIN_BUFFER, len(self.values)):
                self._fold()

    def _fold(self) -> None:
        if not self._buf:
            return
        new_values, new_counts = np.unique(np.concatenate(self._buf), return_counts=True)
        self._buf.clear()
        self._buffered = 0
        if not len(self.values):
            self.values, self.counts = new_values, new_counts.astype(np.int64)
            return
        values = np.concatenate([self.values, new_values])
        counts = np.concatenate([self.counts, new_counts])
        order = np.argsort(values, kind="stable")
        values, counts = values[order], counts[order]
        starts = np.flatnonzero(np.concatenate(([True], values[1:] != values[:-1])))
        self.values = values[starts]
        self.counts = np.add.reduceat(counts, starts)

    def folded(self) -> tuple[np.ndarray, np.ndarray]:
        self._fold()
        return self.values, self.counts

    def __len__(self) -> int:
        self._fold()
        return int(self.counts.sum())

    def total(self) -> int:
        values, counts = self.folded()
        return int((values * counts).sum())

    def quantiles(self, ps: Sequence[int] = (50, 99)) -> list[int]:
        """Exact order statistics: the ceil(p n / 100)-th smallest value (numpy's inverted_cdf), -1 if empty."""
        values, counts = self.folded()
        n = int(counts.sum())
        if n == 0:
            return [-1] * len(ps)
        cum = np.cumsum(counts)
        out = []
        for p in ps:
            rank = max((int(p) * n + 99) // 100, 1)
            out.append(int(values[int(np.searchsorted(cum, rank))]))
        return out

    @classmethod
    def union(cls, parts: Iterable[ValueCounts]) -> ValueCounts:
        out = cls()
        for part in parts:
            out.merge(*part.folded())
        return out

    def merge(self, values: np.ndarray, counts: np.ndarray) -> None:
        """Adds `counts[i]` times `values[i]` (values sorted and distinct)."""
        self._fold()
        if not len(values):
            return
        if not len(self.values):
            self.values, self.counts = values.copy(), counts.astype(np.int64)
            return
        v = np.concatenate([self.values, values])
        c = np.concatenate([self.counts, counts])
        order = np.argsort(v, kind="stable")
        v, c = v[order], c[order]
        starts = np.flatnonzero(np.concatenate(([True], v[1:] != v[:-1])))
        self.values, self.counts = v[starts], np.add.reduceat(c, starts)
