"""The Lagrangian bound of the constrained path on uneven splits (``solvers.uneven_constrained``;
docs/uneven.md, "Caps and memory: the constrained path").

The uneven objective is not a sum over layers: the step time is max over leaves of (its compute
plus, per level, the busier side of its group), the traffic sum_h 2^h (the busiest side of
level h), every side a sum over layers. It is the maximum of finitely many linear functions of
the plan's sum vector v (one per leaf and choice of side per level), so any convex combination
of them is below it: with masses m over the leaves and, per group, a share y of its leaves' mass
on side 0, sum_i m_i compute_i + sum_(h,g) M_hg (y s_0 + (1 - y) s_1) <= T(v). That weighted sum
is separable (a column DP over the layers), and so is lam . (v - C) <= 0 on every plan within
the limits C: min over plans of the two is a proven lower bound on the constrained optimum.

Exact integers: every table entry is shifted right per component (floor, <= 2^TERM_BITS) and
every weight floored, so the DP's value over the integer scale Z is at most the true weighted
sum. The weights are chosen by Kelley's cutting planes (an LP over the masses and multipliers,
GLOP, floating point: it only proposes weights; each bound is the exact DP at them).
"""

from __future__ import annotations

import math
import time
from fractions import Fraction

import numpy as np

from explorer.core.array import ArraySpec
from explorer.core.objective import Objective
from explorer.core.split_costs import SplitCosts

from .uneven_tables import ColumnTables

TERM_BITS = 20  # a shifted table entry and an integer weight stay below 2^TERM_BITS
SUM_BITS = 62  # a DP value stays below 2^SUM_BITS (int64)
ITERATIONS = 30  # Kelley rounds at most
LAMBDA_MAX = 8.0  # a multiplier, in units of the objective's scale per limit
CLOSE = 1e-4  # relative gap between the LP's value and the best bound that ends the search


class Tables:
    """The column tables (``solvers.uneven_tables``) with each component shifted right by
    ``shift[k]`` (exact floors, every entry then below 2^TERM_BITS, int64): ``own[l]``,
    ``edge[l]`` as there; ``top[k]``: the most a plan's shifted component can sum to."""

    def __init__(self, tables: ColumnTables):
        lay = self.lay = tables.lay
        self.columns, self.index = tables.columns, tables.index
        top = [0] * lay.size
        for a in tables.own:
            top = [max(x, int(y)) for x, y in zip(top, a.max(axis=0))]
        for a in tables.edge_units:
            if a.size:
                top[lay.leaves:lay.pos_end] = [max(x, int(y)) for x, y in
                                               zip(top[lay.leaves:lay.pos_end], a.max(axis=(0, 1)))]
        self.shift = [max(0, x.bit_length() - TERM_BITS) for x in top]
        self.own = [_shift(a, self.shift) for a in tables.own]
        self.edge = [_shift(a, self.shift[lay.leaves:lay.pos_end]) for a in tables.edge_units]
        self.top = [sum(int(o[:, k].max()) for o in self.own) for k in range(lay.size)]
        for e in self.edge:
            for k in range(e.shape[2]):
                self.top[lay.leaves + k] += int(e[:, :, k].max())

    def reduce(self, vec) -> list[int]:
        """A sum vector in shifted units (floor per component: never above the tables' sum)."""
        return [x >> s for x, s in zip(vec, self.shift)]

    def forward(self, W: np.ndarray):
        """min over plans of W . (shifted vectors), and a plan's columns attaining it."""
        Ws = W[self.lay.leaves:self.lay.pos_end]
        val = self.own[0] @ W
        back = []
        for l in range(1, len(self.own)):  # noqa: E741
            tot = val[:, None] + self.edge[l - 1] @ Ws
            arg = tot.argmin(axis=0)
            back.append(arg)
            val = tot[arg, np.arange(tot.shape[1])] + self.own[l] @ W
        i = int(val.argmin())
        best = int(val[i])
        idx = [i]
        for arg in reversed(back):
            idx.append(int(arg[idx[-1]]))
        idx.reverse()
        return best, tuple(self.columns[l][i] for l, i in enumerate(idx))  # noqa: E741

    def backward(self, W: np.ndarray) -> list[np.ndarray]:
        """beta[l][c]: min over what follows column c of layer l (the edges from l on, the layers after)."""
        Ws = W[self.lay.leaves:self.lay.pos_end]
        L = len(self.own)
        beta = [None] * L
        beta[L - 1] = np.zeros(len(self.columns[L - 1]), dtype=np.int64)
        for l in range(L - 2, -1, -1):  # noqa: E741
            tail = self.own[l + 1] @ W + beta[l + 1]
            beta[l] = (self.edge[l] @ Ws + tail[None, :]).min(axis=1)
        return beta


def _shift(a: np.ndarray, shift: list[int]) -> np.ndarray:
    """Each component (the last axis) shifted right (exact floors), as int64."""
    if a.dtype == object:  # Python ints: shifted elementwise, then small enough for int64
        return (a >> np.array(shift, dtype=object)).astype(np.int64)
    return np.right_shift(a, np.array(shift, dtype=np.int64))


class Weights:
    """One point of the dual: integer weights ``W`` per component and multipliers ``lam`` per limit
    (in ``W`` too), over the scale ``Z``; ``offset`` = sum_p lam_p C_p / 2^shift_p (a Fraction)."""

    def __init__(self, W: list[int], lam: dict[int, int], Z: Fraction, offset: Fraction):
        self.W, self.lam, self.Z, self.offset = W, lam, Z, offset
        self.array = np.array(W, dtype=np.int64)

    def bound(self, value: int) -> Fraction:
        """The proven lower bound (objective units) of a DP value at these weights."""
        return (value - self.offset) / self.Z

    def threshold(self, most: Fraction) -> int:
        """The largest DP value whose bound is at most ``most``."""
        return math.floor(most * self.Z + self.offset)

    def value(self, t: Tables, vec) -> int:
        return sum(w * x for w, x in zip(self.W, t.reduce(vec)) if w)


class Dual:
    """Kelley's cutting planes over the masses (``masses``) and the limits' multipliers."""

    def __init__(self, array: ArraySpec, costs: SplitCosts, tables: Tables, limits, objective: Objective):
        self.t, self.objective, self.overlap = tables, objective, array.overlap and objective is Objective.TIME
        self.lay = costs.layout
        self.rate = costs.unit_rates(array, objective is Objective.TRAFFIC)
        self.limits = [(p, c) for p, c in limits if c > 0]
        self.cuts: list[list[float]] = []  # per plan seen: its sum vector in objective units, as floats
        self.best: tuple[Fraction, Weights | None] = (Fraction(0), None)
        self.scale = 1.0  # the LP's unit of the objective (the first plan's weighted total)
        self.lp: _LP | None = None

    def add(self, vec) -> None:
        """A plan's cut (its sum vector) in the LP."""
        cut = [float(r * x) for r, x in zip(self.rate, vec)] + [float(vec[p]) / c - 1 for p, c in self.limits]
        self.cuts.append(cut)
        if self.lp is None:
            self.scale = max(sum(cut[:self.lay.size]), 1e-300)
            self.lp = _LP(self, self.scale)
        self.lp.add(cut)

    def evaluate(self, masses: list[Fraction], lam: list[Fraction]):
        """The exact bound at these masses and multipliers, the relaxed plan's columns."""
        w = self.weights(masses, lam)
        value, cols = self.t.forward(w.array)
        b = w.bound(value)
        if self.best[1] is None or b > self.best[0]:
            self.best = (b, w)
        return b, cols

    def weights(self, masses: list[Fraction], lam: list[Fraction]) -> Weights:
        """Integer weights: omega_k * rate_k * 2^shift_k * Z, floored; multipliers likewise."""
        per = [o * r * 2**s for o, r, s in zip(_omega(self.lay, masses, self.objective, self.overlap), self.rate, self.t.shift)]
        lam_unit = {p: x * Fraction(self.scale) / c * 2**self.t.shift[p] for (p, c), x in zip(self.limits, lam) if x}
        top = max([x for x in per if x] + list(lam_unit.values()), default=Fraction(1))
        Z = Fraction(2**TERM_BITS) / top
        W = [math.floor(x * Z) for x in per]
        lam_int = {p: math.floor(x * Z) for p, x in lam_unit.items()}
        for p, x in lam_int.items():
            W[p] += x
        most = sum(w * t for w, t in zip(W, self.t.top))
        if most >= 2**SUM_BITS:  # shift every weight down (floors: still below)
            s = most.bit_length() - SUM_BITS + 1
            W, lam_int, Z = [w >> s for w in W], {p: x >> s for p, x in lam_int.items()}, Z / 2**s
        offset = sum((Fraction(x * c, 2**self.t.shift[p]) for p, x in lam_int.items()
                      for q, c in self.limits if q == p), Fraction(0))
        return Weights(W, lam_int, Z, offset)

    def search(self, offer, deadline: float) -> None:
        """Kelley's rounds: each relaxed plan's columns go to ``offer`` (its sum vector back), whose
        cut joins the LP; until the LP's value meets the best bound, ``ITERATIONS`` or ``deadline``."""
        masses = _uniform(self.lay, self.objective, self.overlap)
        lam = [Fraction(0)] * len(self.limits)
        for _ in range(ITERATIONS):
            _, cols = self.evaluate(masses, lam)
            self.add(offer(cols))
            if time.perf_counter() > deadline:
                return
            point = self.lp.solve()
            if point is None:
                return
            top, masses, lam = point
            if top - float(self.best[0]) <= CLOSE * max(abs(top), 1e-300):
                return

    def cut(self, most: Fraction):
        """keep(l, c, v): whether a partial plan (layer l, last column c, sum vector v) may still
        complete to a plan of objective <= ``most`` within the limits, by the best bound's weights:
        W . v (shifted) + beta[l][c] - offset <= Z * most. Monotone in v and consistent along a plan."""
        w, t = self.best[1], self.t
        beta = [b.tolist() for b in t.backward(w.array)]
        thr, idx = w.threshold(most), t.index
        pairs = [(k, wk, t.shift[k]) for k, wk in enumerate(w.W) if wk]

        def keep(l, c, v) -> bool:  # noqa: E741
            return sum(wk * (v[k] >> s) for k, wk, s in pairs) + beta[l][idx[l][c]] <= thr

        return keep


def _groups(lay):
    """(h, g, position of its side 0, the leaves below it)."""
    H = lay.H
    return [(h, g, p, range(g << (H - h), (g + 1) << (H - h))) for (h, g), p in lay.pos.items()]


def _uniform(lay, objective: Objective, overlap: bool) -> list[Fraction]:
    """Masses: under traffic per side its share of its level; else per leaf (compute, and under
    overlap its exchanges), then per group its side-0 share of its leaves' mass."""
    n = lay.leaves
    if objective is Objective.TRAFFIC:
        return [Fraction(1, 2 ** (h + 1)) for (h, _) in lay.pos for _ in (0, 1)]
    leaf = [Fraction(1, 2 * n if overlap else n)] * (2 * n if overlap else n)
    return leaf + [Fraction(1, 2)] * len(lay.pos)


def _omega(lay, masses: list[Fraction], objective: Objective, overlap: bool) -> list[Fraction]:
    """Per component, its weight in a convex combination of the objective's linear pieces."""
    n = lay.leaves
    out = [Fraction(0)] * lay.size
    if objective is Objective.TRAFFIC:
        for j, ((h, _), p) in enumerate(lay.pos.items()):
            out[p], out[p + 1] = 2**h * masses[2 * j], 2**h * masses[2 * j + 1]
        return out
    comp, comm = (masses[:n], masses[n:2 * n]) if overlap else (masses[:n], masses[:n])
    ys = masses[2 * n:] if overlap else masses[n:]
    out[:n] = comp
    for (h, g, p, below), y in zip(_groups(lay), ys):
        M = sum(comm[i] for i in below)
        out[p], out[p + 1] = y * M, (1 - y) * M
    return out


class _LP:
    """Kelley's master LP (GLOP), built once, one row per cut: max t with t <= the cut's weighted
    sum at the masses (each side's weight linear in them) plus the multipliers' terms."""

    def __init__(self, dual: Dual, scale: float):
        from ortools.linear_solver import pywraplp

        self.dual, self.scale, lay, n = dual, scale, dual.lay, dual.lay.leaves
        self.s = s = pywraplp.Solver.CreateSolver("GLOP")
        self.t = s.NumVar(-s.infinity(), s.infinity(), "t")
        self.lam = [s.NumVar(0, LAMBDA_MAX, "") for _ in dual.limits]
        self.side, self.comp, self.comm = {}, [], []  # side: position -> ({var: coef} of side 0, of side 1)
        if dual.objective is Objective.TRAFFIC:
            for h in range(lay.H):
                zs = {p: (s.NumVar(0, 1, ""), s.NumVar(0, 1, "")) for (hh, _), p in lay.pos.items() if hh == h}
                s.Add(sum(a + b for a, b in zs.values()) == 1)
                self.side.update({p: ({a: 2**h}, {b: 2**h}) for p, (a, b) in zs.items()})
        else:
            self.comp = [s.NumVar(0, 1, "") for _ in range(n)]
            self.comm = [s.NumVar(0, 1, "") for _ in range(n)] if dual.overlap else self.comp
            s.Add(sum(self.comp) + (sum(self.comm) if dual.overlap else 0) == 1)
            for h, g, p, below in _groups(lay):
                u = s.NumVar(0, 1, "")
                s.Add(u <= sum(self.comm[i] for i in below))
                self.side[p] = ({u: 1.0}, {u: -1.0, **{self.comm[i]: 1.0 for i in below}})
        s.Maximize(self.t)

    def add(self, c: list[float]) -> None:
        coef: dict = {}
        for i, v in enumerate(self.comp):
            coef[v] = coef.get(v, 0.0) + c[i] / self.scale
        for p, (a, b) in self.side.items():
            for part, x in ((a, c[p]), (b, c[p + 1])):
                if x:
                    for v, k in part.items():
                        coef[v] = coef.get(v, 0.0) + k * x / self.scale
        for j, v in enumerate(self.lam):
            coef[v] = c[self.dual.lay.size + j]
        row = self.s.Constraint(-self.s.infinity(), 0.0)
        row.SetCoefficient(self.t, 1.0)
        for v, k in coef.items():
            if k:
                row.SetCoefficient(v, -k)

    def solve(self):
        """(the LP's value, masses, multipliers), or None when GLOP fails."""
        from ortools.linear_solver import pywraplp

        if self.s.Solve() != pywraplp.Solver.OPTIMAL:
            return None
        return (self.t.solution_value() * self.scale, _masses_of(self.dual, self.comp, self.comm, self.side),
                [_frac(x.solution_value()) for x in self.lam])


def _frac(x: float) -> Fraction:
    return Fraction(max(0.0, x)).limit_denominator(2**24)


def _masses_of(dual: Dual, comp, comm, side) -> list[Fraction]:
    """The LP's point as exact masses (``_uniform``'s layout): normalised, shares in [0, 1]."""
    lay = dual.lay
    if dual.objective is Objective.TRAFFIC:
        out = []
        for h in range(lay.H):
            ws = [_frac(next(iter(part)).solution_value()) for (hh, _), p in lay.pos.items() if hh == h
                  for part in side[p]]
            tot = sum(ws)
            out += [w / tot if tot else Fraction(1, len(ws)) for w in ws]
        return out
    leaf = [_frac(v.solution_value()) for v in comp + (comm if dual.overlap else [])]
    tot = sum(leaf)
    leaf = [w / tot if tot else Fraction(1, len(leaf)) for w in leaf]
    mass = leaf[lay.leaves:] if dual.overlap else leaf
    ys = []
    for h, g, p, below in _groups(lay):
        M, u = sum(mass[i] for i in below), _frac(next(iter(side[p][0])).solution_value())
        ys.append(min(Fraction(1), u / M) if M else Fraction(1, 2))
    return leaf + ys
