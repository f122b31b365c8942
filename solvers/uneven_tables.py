"""A chain's columns as integer arrays, read from the one integer table (``core.split_costs``):
what the uneven exact DP's completion bound (``solvers.uneven_prune``) computes on, built once per solve.

``own[l]``: layer l's columns x every component; ``edge_units[l]``: the edge from layer l to l+1,
producer x consumer columns x the side components (an edge moves data: no compute, no
footprint). Entries are exact integers: int64 where every sum of a plan fits, else Python ints
(object arrays, slower, the same values).
"""

from __future__ import annotations

import time
from typing import Callable

import numpy as np

from explorer.core.split_costs import SplitCosts

INT64_SUMS = 2**62  # beyond this a plan's sum may pass int64: Python ints instead
CHUNK = 4_000_000  # entries of one temporary (producers x consumers x sides) at once
# A build's pace is trusted once PACE_MIN_S have passed and PACE_SHARE of its column pairs are built
# (or PACE_TRUST_S have passed: hundreds of consumer columns, each the same work); it ends early where
# the rest, at that pace, need more than PACE_SLACK times what the deadline leaves (the pace varies
# with the load: a build that would end just past the deadline runs on and stops there instead).
# Trial 13's sfc (15.9 M pairs, 96 s of tables at load 4): 0.32 M pairs in 2.9 s at load 7.5.
PACE_SHARE, PACE_MIN_S, PACE_TRUST_S, PACE_SLACK = 0.02, 0.25, 1.0, 1.1


class TablesTooSlow(TimeoutError):
    """A build that, at its measured pace, cannot end by its deadline: ``args[0]`` says so in words."""


class _Pace:
    """A build's clock: ``expired()`` and, with a ``deadline`` (a ``time.perf_counter()`` value), its
    pace over the ``total`` column pairs (``done`` so far)."""

    def __init__(self, expired: Callable[[], bool], deadline: float | None, total: int):
        self.expired, self.deadline, self.total = expired, deadline, total
        self.t0, self.done = time.perf_counter(), 0

    def check(self, more: int = 0) -> None:
        """``more`` pairs built: TimeoutError past the limit, TablesTooSlow where the pace says it will be."""
        self.done += more
        if self.expired():
            raise TimeoutError
        now = time.perf_counter()
        spent = now - self.t0
        if (self.deadline is None or not self.done or spent < PACE_MIN_S
                or (self.done < PACE_SHARE * self.total and spent < PACE_TRUST_S)):
            return
        need, left = spent / self.done * (self.total - self.done), self.deadline - now
        if need > PACE_SLACK * left:
            raise TablesTooSlow(f"the column tables of {self.total:,} column pairs, {self.done:,} built in "
                                f"{spent:.2g} s: at that pace an estimated ~{spent + need:,.1f} s in all, "
                                f"~{need:,.1f} s more, beyond the {max(left, 0.0):.3g} s the time limit leaves")


class ColumnTables:
    def __init__(self, costs: SplitCosts, columns, expired: Callable[[], bool], deadline: float | None = None,
                 on_ints: Callable[[int], None] = lambda bits: None):
        """Raises TimeoutError when ``expired()`` turns true (checked per consumer column of each edge
        and per slice of what follows), TablesTooSlow (a TimeoutError) as soon as the build's measured
        pace says it cannot end by ``deadline`` (``_Pace``; None: no such check). ``on_ints(bits)``:
        called with the bits of the largest entry so far (again each time they grow), as soon as the tables are sure to
        become Python ints (an edge past int64, or the edges' maxima so far summing past
        ``INT64_SUMS``), before any is converted: the exact DP's memory guard (it raises to stop)."""
        lay = self.lay = costs.layout
        self.columns = columns
        self.pace = _Pace(expired, deadline, sum(len(a) * len(b) for a, b in zip(columns, columns[1:])))
        self.index = [{c: i for i, c in enumerate(cols)} for cols in columns]
        own = [[costs.layer(l, c) for c in cols] for l, cols in enumerate(columns)]  # noqa: E741
        self.layout = lay
        self._own = [dict(zip(cols, rows)) for cols, rows in zip(columns, own)]
        self.own = _exact(own, [(len(r), lay.size) for r in own])
        extra = sum(int(a[:, lay.leaves:lay.pos_end].max(initial=0)) for a in self.own)  # the layers' sides
        sure = _Ints(on_ints, extra)  # (``_exact_arrays``' test, as the edges come)
        self.edge_units = _exact_arrays([sure.seen(_edge_units(costs, columns, l, self.pace.check, sure.overflow))  # noqa: E741
                                         for l in range(1, len(columns))], extra, self.pace.check)  # noqa: E741

    # the table's vectors, as ``SplitCosts`` gives them (what the exact DP reads)
    def layer(self, l: int, c) -> tuple[int, ...]:  # noqa: E741
        return self._own[l][c]

    def edges_into(self, e: int, cus, cv) -> list[tuple[int, ...]]:
        """``SplitCosts.edges_into`` for these columns (edge e joins layer e to e + 1), from the arrays."""
        lay, ix = self.lay, self.index[e]
        rows = self.edge_units[e][[ix[c] for c in cus], self.index[e + 1][cv]].tolist()
        head, tail = (0,) * lay.leaves, (0,) * (lay.size - lay.pos_end)
        return [head + tuple(r) + tail for r in rows]

    def edge(self, e: int, cu, cv) -> tuple[int, ...]:
        return self.edges_into(e, [cu], cv)[0]

    def rest(self) -> list[dict]:
        """rest[l][c]: per component, the least any completion after column c of layer l adds (the
        layers after l, the edges from l on): a shortest path per component, backwards."""
        lay, L = self.lay, len(self.own)
        s0, s1 = lay.leaves, lay.pos_end
        arr = [None] * L
        arr[L - 1] = np.zeros_like(self.own[L - 1])
        for l in range(L - 2, -1, -1):  # noqa: E741
            tail = self.own[l + 1] + arr[l + 1]  # consumers x components
            out = np.empty((len(self.columns[l]), lay.size), dtype=tail.dtype)
            out[:] = tail.min(axis=0)[None, :]  # compute and footprint: no edge part
            e = self.edge_units[l]
            sides = tail[:, s0:s1] if e.dtype == tail.dtype else tail[:, s0:s1].astype(e.dtype)  # (sums fit: _exact)
            step = max(1, CHUNK // max(1, e.shape[1] * e.shape[2]))
            for u0 in range(0, e.shape[0], step):
                self.pace.check()  # (Python ints: seconds an edge)
                out[u0:u0 + step, s0:s1] = (e[u0:u0 + step] + sides[None, :, :]).min(axis=1)
            arr[l] = out
        return [{c: tuple(int(x) for x in row) for c, row in zip(self.columns[l], a.tolist())} for l, a in enumerate(arr)]  # noqa: E741


class _Ints:
    """Whether the tables will be Python ints, known as the edges are built: ``on_ints(bits)`` as
    soon as it is sure, and again whenever the widest entry grows (the sum of the maxima seen, from ``extra``, reaches ``INT64_SUMS``; or an edge
    overflows int64: ``overflow``)."""

    def __init__(self, on_ints: Callable[[int], None], extra: int):
        self.on_ints, self.sum, self.bits, self.told = on_ints, extra, 1, 0  # bits: the largest entry's; told: said

    def seen(self, table: np.ndarray | None = None):
        if table is not None and table.size:
            top = int(table.max())
            self.sum, self.bits = self.sum + top, max(self.bits, top.bit_length())
        if self.sum >= INT64_SUMS:
            self.overflow(self.bits)
        return table

    def overflow(self, bits: int) -> None:
        self.bits = max(self.bits, bits)
        if self.bits > self.told:  # said again as the entries widen: the memory guard re-estimates (wider ints)
            self.told = self.bits
            self.on_ints(self.bits)


def _edge_units(costs: SplitCosts, columns, l: int, check: Callable[[int], None],  # noqa: E741
                overflow: Callable[[int], None] = lambda bits: None) -> np.ndarray:
    """edge_units[l - 1][u, v, k]: the edge into layer l, producer x consumer columns x side components
    (built consumer-major, then transposed), one consumer column's rows at a time: only they are ever
    held as Python tuples, and the clock is checked between them, the copy into the array included
    (a whole edge's copy took seconds past the limit: trial 13's sfc, 33.7 s at 30 s). Int64 until a
    value does not fit, then Python ints (the same values; ``overflow(bits of the largest)`` first).
    ``check(pairs built since)`` (``_Pace.check``) before each consumer column and after the last: it raises
    to stop the build."""
    lay = costs.layout
    table = np.empty((len(columns[l]), len(columns[l - 1]), lay.pos_end - lay.leaves), dtype=np.int64)
    for j, cv in enumerate(columns[l]):  # the clock per consumer column: an edge may take seconds (trial 13 #2)
        check(len(columns[l - 1]) if j else 0)
        rows = [r[lay.leaves:lay.pos_end] for r in costs.edges_into(l - 1, columns[l - 1], cv)]
        try:
            if rows:  # (no producer columns: nothing to copy)
                table[j] = rows
        except OverflowError:
            overflow(max(x for r in rows for x in r).bit_length())
            table = table.astype(object)
            table[j] = np.array(rows, dtype=object)
    if len(columns[l]):  # the last consumer column's pairs counted too: the pace sees every pair built
        check(len(columns[l - 1]))
    return table.transpose(1, 0, 2).copy()


def _exact_arrays(tables: list[np.ndarray], extra: int, check: Callable[[], None] = lambda: None) -> list[np.ndarray]:
    """``tables`` as int64 when all are and every plan's sum of them (plus ``extra``) stays below
    ``INT64_SUMS``, else all as Python ints (object arrays: the same values), converted ``CHUNK``
    entries at a time, ``check()`` between (raises to stop: trial 13's sfc, 9 s of CPU for 96 M)."""
    if all(t.dtype == np.int64 for t in tables) and extra + sum(int(t.max(initial=0)) for t in tables) < INT64_SUMS:
        return tables
    out = []
    for t in tables:
        o = np.empty(t.shape, dtype=object)
        step = max(1, CHUNK // max(1, t[0].size if len(t) else 1))
        for i in range(0, len(t), step):
            check()
            o[i:i + step] = t[i:i + step].astype(object)
        out.append(o)
    return out


def _exact(rows: list[list[tuple]], shapes, extra: int = 0) -> list[np.ndarray]:
    """The tables (``rows`` in ``shapes``) as int64 when every plan's sum of them (plus ``extra``)
    stays below ``INT64_SUMS``, else as Python ints (object arrays)."""
    try:
        ints = [np.array(r, dtype=np.int64).reshape(sh) for r, sh in zip(rows, shapes)]
        if extra + sum(int(a.max(initial=0)) for a in ints) < INT64_SUMS:
            return ints
    except OverflowError:
        pass
    return [np.array(r, dtype=object).reshape(sh) for r, sh in zip(rows, shapes)]
