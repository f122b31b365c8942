"""Exact pruning of the uneven Pareto DP (``solvers.uneven._pareto_dp``): a completion bound per
partial plan, integer scores of a sum vector, and an incumbent.

The derivation: docs/derivations.md, "Uneven splits: pruning the exact Pareto DP".
"""

from __future__ import annotations

import math
from operator import itemgetter
from typing import Callable

from explorer.core.array import ArraySpec
from explorer.core.split_costs import SplitCosts, VectorLayout

from .uneven_tables import CHUNK


def _add(a, b):
    return tuple(x + y for x, y in zip(a, b))


def time_score(array: ArraySpec, costs: SplitCosts) -> Callable[[tuple], int]:
    """score(w) = the step time of sum vector w times Q (``_step`` of ``solvers.uneven``), an exact
    integer: Q is the lcm of the denominators of every component's seconds per unit."""
    lay = costs.layout
    comp, comm = step_rates(array, costs)
    Q = math.lcm(*(x.denominator for x in comp + comm))
    a = [int(x * Q) for x in comp]
    b = [int(x * Q) for x in comm]
    overlap = array.overlap
    if lay.windows:  # a torus's link windows: a group's exchange is the max over its time positions
        get = [[_getter(lay.time_pos[(h, g)]) for g in range(2**h)] for h in range(lay.H)]

        def score(w) -> int:
            acc = [0]  # per group of the level: its ancestors' links, then each leaf's
            for h, gs in enumerate(get):
                link = [acc[g] + b[h] * max(f(w)) for g, f in enumerate(gs)]
                acc = [link[j >> 1] for j in range(2 * len(link))]
            return _leaf_max(a, w, acc, overlap)
    else:  # two sides a group (the hot path)
        sides = [[lay.pos[(h, g)] for g in range(2**h)] for h in range(lay.H)]

        def score(w) -> int:
            acc = [0]
            for h, ps in enumerate(sides):
                link = [acc[g] + b[h] * max(w[p], w[p + 1]) for g, p in enumerate(ps)]
                acc = [link[j >> 1] for j in range(2 * len(link))]
            return _leaf_max(a, w, acc, overlap)

    score.scale = Q  # seconds = score / Q
    return score


def step_rates(array: ArraySpec, costs: SplitCosts) -> tuple[list, list]:
    """The step time's seconds per table unit (``SplitCosts.unit_rates``): per leaf its compute's, per
    level its exchange's (one rate a level: every group's time positions, sides or windows, share it)."""
    lay = costs.layout
    rates = costs.unit_rates(array, traffic=False)
    return rates[:lay.leaves], [rates[lay.time_pos[(h, 0)][0]] for h in range(lay.H)]


def _getter(pos: tuple[int, ...]):
    return itemgetter(*pos) if len(pos) > 1 else (lambda w, p=pos[0]: (w[p],))


def _leaf_max(a, w, acc, overlap: bool) -> int:
    """The slowest leaf's step from its compute weights ``a``, the sums ``w`` and its exchanges ``acc``."""
    if overlap:
        return max(max(x * y for x, y in zip(a, w)), max(acc))
    return max(x * w[i] + m for i, (x, m) in enumerate(zip(a, acc)))


def traffic_score(lay: VectorLayout) -> Callable[[tuple], int]:
    """score(w) = sum_h 2^h c_h in units (c_h: the level's busiest side; ``_value`` times the unit)."""
    sides = [[lay.pos[(h, g)] for g in range(2**h)] for h in range(lay.H)]

    def score(w) -> int:
        return sum(2**h * max(max(w[p], w[p + 1]) for p in ps) for h, ps in enumerate(sides))

    return score


class Pruner:
    """Drops a partial plan (layer l, last column c, sum vector v) when its bound v + rest[l][c] is
    over a limit or one of ``checks`` (score, most) has score(bound) > most; counts the drops.
    ``score``: the objective's integer score (the greedy incumbent's key)."""

    def __init__(self, rest: list[dict], limits, score: Callable[[tuple], int]):
        self.rest, self.limits, self.score = rest, limits, score
        self.checks: list[tuple[Callable[[tuple], int], int]] = []
        self.dropped = 0

    def bound(self, l: int, c, v) -> tuple:  # noqa: E741
        return _add(v, self.rest[l][c])

    def allows(self, l: int, c, v) -> bool:  # noqa: E741
        w = self.bound(l, c, v)
        ok = all(w[p] <= most for p, most in self.limits) and all(f(w) <= most for f, most in self.checks)
        self.dropped += not ok
        return ok


GREEDY_WIDTH = 8  # the greedy incumbent extends each column from this many best states of the layer before


def greedy_plan(costs: SplitCosts, columns, vector, fits, pruner: Pruner, expired: Callable[[], bool]):
    """An incumbent: the chain DP keeping one partial plan per column, the one of least bound score
    among those ``fits`` and ``pruner`` allow, extended from the ``GREEDY_WIDTH`` states of least
    score only; (its sum vector, its columns) of least score at the end, or None (no plan
    survives, or ``expired()``). A heuristic: any plan it finds is a plan of the space."""
    states = [(pruner.score(pruner.bound(0, c, v)), v, (c,)) for c in columns[0]
              if fits(v := vector(costs.layer(0, c))) and pruner.allows(0, c, v)]
    for l in range(1, len(columns)):  # noqa: E741
        states = sorted(states, key=lambda s: s[0])[:GREEDY_WIDTH]
        new = []
        for cv in columns[l]:
            if expired():
                return None
            own, best = vector(costs.layer(l, cv)), None
            for (_, v, cols), edge in zip(states, costs.edges_into(l - 1, [s[2][-1] for s in states], cv)):
                nxt = _add(_add(v, own), vector(edge))
                if fits(nxt) and pruner.allows(l, cv, nxt):
                    key = pruner.score(pruner.bound(l, cv, nxt))
                    if best is None or key < best[0]:
                        best = (key, nxt, cols + (cv,))
            if best is not None:
                new.append(best)
        states = new
    return min(((s[1], s[2]) for s in states), key=lambda s: pruner.score(s[0]), default=None)


def plan_vector(costs: SplitCosts, cols) -> tuple:
    """The whole sum vector of the plan of columns ``cols`` (every component, compute included)."""
    v = costs.layer(0, cols[0])
    for l in range(1, len(cols)):  # noqa: E741
        v = _add(_add(v, costs.layer(l, cols[l])), costs.edge(l - 1, cols[l - 1], cols[l]))
    return v


# CPython's bytes for the DP's objects (3.11, 64-bit): a tuple's header and its slot, an int of
# up to 90 bits (the sums in units; 36 bytes, 40 in pymalloc's 8-byte steps), a dict entry with its
# share of the table; the live states' allocator overhead (freed and reused blocks: measured 1.2-1.3x)
TUPLE, SLOT, INT, ENTRY = 40, 8, 40, 100
STATE_OVERHEAD = 5 / 4


def python_int_bytes(bits: int) -> int:
    """Bytes a Python int of ``bits`` bits takes in pymalloc (CPython 3.11, 64-bit): its 24-byte header
    and a 4-byte digit per 30 bits, in 16-byte size classes (28 and 32 -> 32, 36 -> 48). tracemalloc
    on this machine (2026-12-04), 4 M ints converted from int64 (``astype(object)``, as
    ``uneven_tables._exact_arrays``): 40.0 bytes an entry at 20-60 bits (its 8-byte slot and the
    32-byte int), 44.0 at 61 bits (a 36-byte int, 48 in its class)."""
    return -(-(24 + 4 * max(1, -(-bits // 30))) // 16) * 16


def table_entry_bytes(int_bits: int | None) -> tuple[int, int]:
    """(bytes a column-table entry holds at the peak, bytes of a temporary's entry): int64 tables, 8
    and 8; Python ints of ``int_bits`` bits (``uneven_tables``: where int64 sums are not proven safe),
    the object array's slot and its int, plus the int64 table they are converted from (both alive
    while converting), and a temporary holds new ints (the completion bounds' sums, a slice at once)."""
    if int_bits is None:
        return 8, 8
    py = SLOT + python_int_bytes(int_bits)
    return 8 + py, py


def memory_estimate(columns, size: int, states: int = 0, rest_copies: int = 1, sides: int = 0,
                    int_bits: int | None = None) -> int:
    """Bytes the exact DP holds (bench/bench_exact_prune.py --pairs measures it within 1.5x): every
    column (a tuple of its cells) and its completion bound (a ``size``-int vector in a dict;
    ``rest_copies`` of them: the traffic objective projects one more), ``states`` live Pareto
    states, each a sum vector and the tuple of its columns in a (vector, columns) pair, and, when
    the column tables are built (``sides`` > 0: ``solvers.uneven_tables``), every column pair's
    re-layout vector of ``sides`` ints in an int64 array, and the largest edge's once more while it
    is built (``uneven_tables._edge_units``: the array, then its transposed copy; one consumer
    column's producer rows at a time as tuples). ``int_bits``: the tables are Python ints of up to
    that many bits (``table_entry_bytes``; None: int64), and a slice of up to ``CHUNK`` new ints
    (an edge's at most) is held at a time (the completion bounds' sums)."""
    n, L = sum(len(c) for c in columns), len(columns)
    vector = TUPLE + (SLOT + INT) * size
    per_state = vector + TUPLE + SLOT * L + TUPLE + 2 * SLOT + SLOT
    edges = [len(a) * len(b) for a, b in zip(columns, columns[1:])] if sides else [0]
    rows = max((len(a) for a in columns[:-1]), default=0) if sides else 0
    building = max(edges, default=0) * 8 * sides + rows * (TUPLE + (SLOT + INT) * sides + SLOT)
    entry, temporary = table_entry_bytes(int_bits)
    slices = min(CHUNK, max(edges, default=0) * sides) * temporary if int_bits is not None else 0
    return (n * (TUPLE + SLOT * 8 + rest_copies * (vector + ENTRY)) + int(states * per_state * STATE_OVERHEAD)
            + sum(edges) * entry * sides + building + slices)
