"""Local search for incumbents of the constrained solve: one node's type vector at a time, first
the least excess over the limits (a repair), then the least objective (1-opt). Proves nothing;
every plan it returns is re-scored by the caller.
"""

from __future__ import annotations

import numpy as np

from explorer.core.plan import Plan

from .elimination import vectors_plan
from .lagrangian import _Chain
from .vectors import VectorCosts

REPAIR_STEPS = 200  # single-node moves a repair may take


def _local_search(ch: _Chain, plan: Plan, rounds: int = 4) -> Plan:
    """Change one node's vector at a time: first the least excess over the limits, then the least
    objective (a repair, then 1-opt). A heuristic for incumbents; every result is re-scored."""
    moves = _Moves(ch, plan)
    moves.repair()
    moves.one_opt(rounds)
    return vectors_plan(ch.vc, moves.vectors)


class _Moves:
    """The state of ``_local_search``: every node's vector, the plan's objective f and resource
    sums g, and each node's per-vector terms (cached until a neighbour moves)."""

    def __init__(self, ch: _Chain, plan: Plan):
        vc, N = ch.vc, ch.L
        self.vc, self.N = vc, N
        self.vectors = [_vector(vc, plan, n) for n in range(N)]
        self.f, self.g = ch.measure(plan)
        self.limits = [r.limit for r in ch.res]
        self.weightings = [(None, None)] + [ch.resource_weights(k) for k in range(len(ch.res))]
        self.cache: dict[int, list[np.ndarray]] = {}  # a node's terms depend on its neighbours' vectors only
        self.near = [{n} | {m for _, m in vc.around[n]} for n in range(N)]

    def terms(self, n: int, W, extras) -> np.ndarray:
        vc, vectors = self.vc, self.vectors
        t = vc.intra_vec(n, W, None if extras is None else extras[n])
        for e, m in vc.around[n]:
            t = t + vc.edge_given(e, m, vectors[m], W)
        return t

    def move(self, n: int, i: int) -> None:
        self.vectors[n] = i
        for m in self.near[n]:
            self.cache.pop(m, None)

    def options(self, n: int):
        """Node n's every vector: the objective, resource sums and excess the plan would have, and
        which vectors are allowed."""
        if n not in self.cache:
            self.cache[n] = [self.terms(n, W, ex) for W, ex in self.weightings]
        fv, *gv = self.cache[n]
        cur = self.vectors[n]
        nf = fv - fv[cur] + self.f
        ng = [gk - gk[cur] + self.g[k] for k, gk in enumerate(gv)]
        excess = sum(np.maximum(x - lim, 0) for x, lim in zip(ng, self.limits))
        return nf, ng, excess, fv < self.vc.big

    def repair(self) -> None:
        """The move that buys the most excess per unit of objective, until none is left."""
        over = sum(max(0, x - lim) for x, lim in zip(self.g, self.limits))
        for _ in range(REPAIR_STEPS):
            if over == 0:
                break
            best = self._best_repair(over)
            if best is None:
                break
            _, n, i, self.f, self.g, over = best
            self.move(n, i)

    def _best_repair(self, over):
        best = None
        for n in range(self.N):
            nf, ng, excess, ok = self.options(n)
            gain = over - excess
            cand = np.flatnonzero(ok & (gain > 0))
            if len(cand):
                rate = (nf[cand] - self.f).astype(float) / gain[cand].astype(float)
                i = int(cand[int(np.argmin(rate))])
                if best is None or rate.min() < best[0]:
                    best = (rate.min(), n, i, int(nf[i]), [int(x[i]) for x in ng], int(excess[i]))
        return best

    def one_opt(self, rounds: int) -> None:
        """Each node's best vector in turn, least excess first, then least objective."""
        for _ in range(rounds):
            moved = False
            for n in range(self.N):
                nf, ng, excess, ok = self.options(n)
                cur = self.vectors[n]
                key = np.lexsort((nf, excess))
                best_i = next(int(i) for i in key if ok[i])
                if (int(excess[best_i]), int(nf[best_i])) < (int(excess[cur]), int(nf[cur])):
                    self.f, self.g, moved = int(nf[best_i]), [int(x[best_i]) for x in ng], True
                    self.move(n, best_i)
            if not moved:
                break


def _vector(vc: VectorCosts, plan: Plan, n: int) -> int:
    d, v = vc.dom[n], 0
    for h in range(vc.H):
        v = v * d.K + d.types.index(plan.types[h][n])
    return v
