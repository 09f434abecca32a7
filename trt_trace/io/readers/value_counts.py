"""An exact multiset of durations in ns, kept as sorted distinct values and their counts.

Exact percentiles need every value, but not every value apart: call durations repeat (they are
whole ns of a few typical lengths), and sorted distinct values are close to each other. So the
folded values are kept as the first value and the gaps between neighbours (4 bytes each where
every gap fits, as it does for durations below 4 s apart), the counts in 4 bytes where they fit:
8 bytes per distinct value. New values are buffered and folded in once the buffer is as large as
what it folds into (amortised O(n log n)); one accumulator at a time decodes while it folds."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

MIN_BUFFER = 1 << 16
_U32 = (1 << 32) - 1


class ValueCounts:
    __slots__ = ("_base", "_buf", "_buffered", "_counts", "_gaps", "_n")

    def __init__(self) -> None:
        self._base = 0
        self._gaps = np.zeros(0, dtype=np.uint32)  # values[i + 1] - values[i] (int64 where one is too large)
        self._counts = np.zeros(0, dtype=np.uint32)
        self._n = 0  # distinct values folded
        self._buf: list[np.ndarray] = []
        self._buffered = 0

    # -- storage -------------------------------------------------------------------------------------

    def _store(self, values: np.ndarray, counts: np.ndarray) -> None:
        self._n = len(values)
        self._base = int(values[0]) if len(values) else 0
        gaps = np.diff(values)
        self._gaps = gaps.astype(np.uint32) if not len(gaps) or int(gaps.max()) <= _U32 else gaps
        self._counts = counts.astype(np.uint32) if not len(counts) or int(counts.max()) <= _U32 else \
            counts.astype(np.int64)

    def _load(self) -> tuple[np.ndarray, np.ndarray]:
        if not self._n:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        values = np.empty(self._n, dtype=np.int64)
        values[0] = self._base
        np.cumsum(self._gaps, out=values[1:], dtype=np.int64)
        values[1:] += self._base
        return values, self._counts.astype(np.int64)

    # -- adding --------------------------------------------------------------------------------------

    def add(self, values: np.ndarray) -> None:
        if len(values):
            self._buf.append(np.array(values, dtype=np.int64))
            self._buffered += len(values)
            if self._buffered >= max(MIN_BUFFER, self._n):
                self._fold()

    def _fold(self) -> None:
        if not self._buf:
            return
        new_values, new_counts = np.unique(np.concatenate(self._buf), return_counts=True)
        self._buf.clear()
        self._buffered = 0
        self._merge_sorted(new_values, new_counts)

    def _merge_sorted(self, values: np.ndarray, counts: np.ndarray) -> None:
        if not len(values):
            return
        if not self._n:
            self._store(values, counts)
            return
        old_v, old_c = self._load()
        v = np.concatenate([old_v, values])
        c = np.concatenate([old_c, counts])
        order = np.argsort(v, kind="stable")
        v, c = v[order], c[order]
        starts = np.flatnonzero(np.concatenate(([True], v[1:] != v[:-1])))
        self._store(v[starts], np.add.reduceat(c, starts))

    def merge(self, values: np.ndarray, counts: np.ndarray) -> None:
        """Adds `counts[i]` times `values[i]` (values sorted and distinct)."""
        self._fold()
        self._merge_sorted(values, np.asarray(counts, dtype=np.int64))

    # -- reading -------------------------------------------------------------------------------------

    def folded(self) -> tuple[np.ndarray, np.ndarray]:
        """(sorted distinct values, their counts), int64."""
        self._fold()
        return self._load()

    @property
    def values(self) -> np.ndarray:
        return self.folded()[0]

    @property
    def counts(self) -> np.ndarray:
        return self.folded()[1]

    def __len__(self) -> int:
        self._fold()
        return int(self._counts.sum(dtype=np.int64))

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

    def nbytes(self) -> int:
        return self._gaps.nbytes + self._counts.nbytes + sum(b.nbytes for b in self._buf)

    @classmethod
    def union(cls, parts: Iterable[ValueCounts]) -> ValueCounts:
        out = cls()
        for part in parts:
            out.merge(*part.folded())
        return out
