"""The Lagrangian side of the constrained solve (``solvers.constrained``): a capped problem's
vector costs and resources (``_Chain``), the relaxed DP at integer multipliers (level weights
D*w_h + lam_h, lam_mem * footprint per layer), its proven bound ceil((value - sum lam_k C_k) / D),
and the line searches that raise the concave dual by cutting planes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from explorer.core.costs import plan_level_units
from explorer.core.plan import Plan
from explorer.core.problem import Problem

from .elimination import chain_backtrack, chain_backward, chain_forward, graph_optimum, vectors_plan
from .vectors import VectorCosts

MAX_EVALUATIONS = 60
EARLY_STOP = 0.2  # graphs: stop moving the multipliers when less than this share of the gap is left to gain


@dataclass(frozen=True)
class _Resource:
    name: str
    level: int | None  # None: the memory footprint
    limit: int  # units


class _Chain:
    """A capped chain (or graph): its vector costs, resources, and the relaxed DP at given multipliers."""

    def __init__(self, problem: Problem, vc: VectorCosts | None = None):
        self.problem = problem
        self.graph = not problem.network.is_chain
        self.vc = vc = vc or VectorCosts(problem)
        self.L, self.H = vc.N, vc.H
        self.w = vc.weights
        cons = problem.constraints
        self.res = [_Resource(c.name, c.level, problem.cap_units(c.level)) for c in cons.caps]
        if cons.memory_bytes is not None:
            self.res.append(_Resource(cons.memory_name, None, problem.memory_units))
        self.foot = [vc.footprint(n) for n in range(self.L)] if cons.memory_bytes is not None else None
        max_cost = max(1, problem.tables.max_level_cost())
        max_foot = max(1, sum(int(f.max()) for f in self.foot)) if self.foot else 1
        if vc.use_int64:  # every relaxed DP value stays below 2^56 + 2^59 < 2^60 (``big`` is 2^61)
            self.D = 1
            while 2 * self.D * sum(self.w) * max_cost <= 2**56:
                self.D *= 2
            share = 2**59 // len(self.res)
            self.lam_max = [share // (max_cost if r.level is not None else max_foot) for r in self.res]
        else:
            self.D, self.lam_max = 2**20, [None] * len(self.res)
        self.evaluations = 0
        self.incumbent: tuple[int, Plan] | None = None
        self.seen: list[tuple[int, list[int]]] = []  # (objective, resources) of every plan met
        self.plans: list[tuple[int, int, Plan]] = []  # (excess over the limits, objective, plan)
        self._backward: dict = {}  # multipliers (None: the objective alone) -> backward values
        self.deadline: float | None = None  # graphs' eliminations stop with ``TimeUp`` past it
        self.proven_bound: int | None = None  # the best Lagrangian bound evaluated so far
        self.held = 0  # bytes the solve holds before a label pass (``exact.constrained_estimate``)
        self.max_bytes: int | None = None  # bytes a label pass may bring the solve to (else it gives up)

    def fits(self, need: int) -> bool:
        """Whether a label pass may add ``need`` bytes to what the solve holds (``held``) within
        ``max_bytes``; checked before its arrays are built (``chain_labels.label_bytes``,
        ``labels.join_bytes``), so that a pass that would outgrow the limit gives up first."""
        return self.max_bytes is None or self.held + need <= self.max_bytes

    # scaled weights -----------------------------------------------------------------------------
    def weights(self, lam) -> tuple[int, ...]:
        W = [self.D * w for w in self.w]
        for r, x in zip(self.res, lam):
            if r.level is not None:
                W[r.level] += x
        return tuple(W)

    def extras(self, lam):
        mu = sum(x for r, x in zip(self.res, lam) if r.level is None)
        if not mu:
            return None
        return [mu * f for f in self.foot]

    def resource_weights(self, k: int):
        r = self.res[k]
        W = tuple(1 if h == r.level else 0 for h in range(self.H))
        return W, (self.foot if r.level is None else None)

    # plans --------------------------------------------------------------------------------------
    def measure(self, plan: Plan) -> tuple[int, list[int]]:
        """A plan's objective and resources, from the shared tables."""
        units = plan_level_units(self.problem.tables, plan.types)
        f = self.problem.weights.value(units)
        g = [units[r.level] if r.level is not None else self.problem.footprint_units(plan.types) for r in self.res]
        return f, g

    def offer(self, plan: Plan) -> tuple[int, list[int]] | None:
        """Record a plan's line; keep it as the incumbent if it is the best feasible one so far."""
        p = self.problem
        if any(plan.types[h][n] not in p.allowed(h, n) for h in range(self.H) for n in range(self.L)):
            return None  # breaks a pin or forbid (only an outside hint can)
        f, g = self.measure(plan)
        self.seen.append((f, g))
        self.plans.append((sum(max(0, x - r.limit) for x, r in zip(g, self.res)), f, plan))
        if all(x <= r.limit for x, r in zip(g, self.res)) and (self.incumbent is None or f < self.incumbent[0]):
            self.incumbent = (f, plan)
        return f, g

    def relaxed(self, lam) -> tuple[int, Plan | None, list[np.ndarray] | None]:
        """min over plans of D*f + sum lam_k g_k, a plan attaining it, and (chains) the forward values."""
        self.evaluations += 1
        return self.optimum(*_wx(self, lam), record=True)

    def optimum(self, W, ex, record: bool = False):
        """(value, plan, forward values): on chains the forward values; on graphs, with ``record``,
        the elimination's (value, vectors, steps) for ``graph_marginals`` at the same weights."""
        if self.graph:
            steps: list | None = [] if record else None
            value, vectors, _ = graph_optimum(self.vc, W, ex, steps, self.deadline)
            plan = None if vectors is None else vectors_plan(self.vc, vectors)
            return value, plan, (value, vectors, steps) if record else None
        alphas = chain_forward(self.vc, W, ex)
        value = int(alphas[-1].min())
        return value, vectors_plan(self.vc, chain_backtrack(self.vc, alphas, W)), alphas

    def least_footprint(self) -> int:
        """The least memory footprint over plans (units; ``vc.big`` when pins and forbids leave no
        plan): ``optimum`` at the memory's weights, which are zero on every level, so that no edge
        term is left and the minimum is each node's own, summed (no elimination: milliseconds)."""
        total = 0
        for n in range(self.L):
            total = min(total + int(self.vc.intra_vec(n, (0,) * self.H, self.foot[n]).min()), self.vc.big)
        return total

    def backward(self, lam) -> list[np.ndarray]:
        """The relaxed chain DP's backward values at multipliers ``lam`` (kept: label passes reuse them)."""
        key = tuple(lam)
        if key not in self._backward:
            self._backward[key] = chain_backward(self.vc, *_wx(self, lam))
        return self._backward[key]

    def objective_backward(self) -> list[np.ndarray]:
        """The unweighted-by-multipliers chain DP's backward values (the objective alone), kept."""
        if None not in self._backward:
            self._backward[None] = chain_backward(self.vc)
        return self._backward[None]

    def bound(self, value: int, lam) -> int:
        rhs = value - sum(x * r.limit for x, r in zip(lam, self.res))
        return -((-rhs) // self.D)


def _wx(ch: _Chain, lam):
    return ch.weights(lam), ch.extras(lam)


def _closed(ch: _Chain, bound: int) -> bool:
    """Whether the incumbent meets the bound (a proven optimum)."""
    return ch.incumbent is not None and ch.incumbent[0] == bound


def _line_search(ch: _Chain, k: int, lam: list[int], known: int):
    """Maximise the dual along lam_k (others fixed) by cutting planes.

    Every plan seen so far is a line F(p) + x * G(p), F = D f + sum_{j != k} lam_j (g_j - C_j),
    G = g_k - C_k; the dual along x is the lower envelope of all plans' lines, which the known
    lines overestimate. Evaluate where the known envelope peaks; stop when the relaxed optimum
    there lies on it, or when the incumbent meets the best bound (``known``: the bound at ``lam``,
    already evaluated). Returns the evaluated (bound, multipliers, forward values)."""
    out, tried = [], {lam[k]}
    while ch.evaluations < MAX_EVALUATIONS:
        if _closed(ch, max([b for b, _, _ in out] + [known])):
            break
        lines = _dual_lines(ch, k, lam)
        cands = _peak_candidates(lines, ch.lam_max[k]) - tried
        if not cands:
            break

        def envelope(x):
            return min(F + x * G for F, G in lines)

        x = max(cands, key=lambda c: (envelope(c), -c))
        if _near_enough(ch, out, envelope(x)):
            break
        tried.add(x)
        trial = list(lam)
        trial[k] = x
        value = _evaluate_dual(ch, trial, out)
        if value - sum(trial[j] * ch.res[j].limit for j in range(len(ch.res))) >= envelope(x):
            break  # the known envelope is exact at its peak: x maximises the dual
    return out


def _dual_lines(ch: _Chain, k: int, lam: list[int]) -> list[tuple[int, int]]:
    """Every plan seen so far as a line (F, G) in lam_k: F = D f + sum_{j != k} lam_j (g_j - C_j),
    G = g_k - C_k (``_line_search``)."""
    r = ch.res[k]

    def line(fg):
        f, g = fg
        F = ch.D * f + sum(lam[j] * (g[j] - ch.res[j].limit) for j in range(len(ch.res)) if j != k)
        return F, g[k] - r.limit

    return list({line(fg) for fg in ch.seen})


def _peak_candidates(lines: list[tuple[int, int]], cap: int | None) -> set[int]:
    """Where the lower envelope of ``lines`` may peak: 0 and the integers around every crossing
    of a rising line with a falling one above it at 0 (at most ``cap``)."""
    rising = [t for t in lines if t[1] > 0]
    falling = [t for t in lines if t[1] <= 0]
    cands = {0}
    for a in rising:
        for b in falling:
            if b[0] > a[0]:
                x = (b[0] - a[0]) // (a[1] - b[1])
                cands |= {x, x + 1}
    if cap is not None:
        cands = {min(x, cap) for x in cands}
    return cands


def _evaluate_dual(ch: _Chain, trial: list[int], out: list) -> int:
    """The relaxed DP at multipliers ``trial``: its plan offered as an incumbent, its bound
    appended to ``out`` (on a graph only the best evaluation keeps its elimination record);
    returns the relaxed value."""
    value, plan, alphas = ch.relaxed(trial)
    ch.offer(plan)
    b = ch.bound(value, trial)
    if out and b <= max(t[0] for t in out):
        alphas = None  # (forward values, or a graph's elimination record, are kept for the best evaluation only)
    else:
        out[:] = [(t[0], t[1], None) for t in out]
    out.append((b, trial, alphas))
    return value


def _near_enough(ch: _Chain, out: list, peak: int) -> bool:
    """On graphs (where each relaxed DP is a whole elimination): whether the dual's known upper
    envelope ``peak`` leaves the bound less than ``EARLY_STOP`` of the incumbent's gap to gain;
    the label pass then closes the rest at less cost than more relaxed DPs."""
    if not ch.graph or ch.incumbent is None or not out:
        return False
    best = max(b for b, _, _ in out)
    room = -((-peak) // ch.D) - best
    return room <= EARLY_STOP * (ch.incumbent[0] - best)
