"""A Lagrangian (dual decomposition) lower bound over type vectors that never builds a table wider
than one node's vectors (``spanning_tree``; excluded vectors: ``_penalised``). The method:
docs/benchmarks.md ("How `pruned` proves") and docs/solvers.md.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .deadline import past
from .vectors import VectorCosts

DECODE_EVERY = 3  # rounds between incumbents from the tree's plan (a decode costs half a round)
STEP = 4  # the multipliers move by (A - B) / (STEP * max(1, round - 2))


@dataclass(frozen=True)
class DualResult:
    bound: int  # a proven lower bound on the joint optimum (weighted units)
    incumbent: int  # the best plan's cost
    vectors: list[int]  # the best plan's type vector per node
    marginals: list[np.ndarray]  # per node: a lower bound on every plan with the node at each vector
    rounds: int
    lam: dict | None = None  # the multipliers after the last round (``dual_bound(resume=)`` goes on from them)
    history: tuple[int, ...] = ()  # the bound after each round
    stalled: bool = False  # the rounds ended because the bound stalled (``_stalled``): more would not raise it
    pending: tuple | None = None  # the last round's (marginals, leaf terms) where its step was not taken


def spanning_tree(vc: VectorCosts) -> tuple[list[int], list[int]]:
    """(tree edges, dropped edges): Kruskal, the edges carrying the smallest tensors first, so the
    largest (a residual block's shortcut) get the multipliers: measured on ResNet-50 at H = 8 this
    closes the gap in 9 rounds, where keeping the largest in the tree left 0.02% after 40."""
    size = vc.tables._edge_base
    parent = list(range(vc.N))

    def root(n: int) -> int:
        while parent[n] != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    tree, dropped = [], []
    for e in sorted(range(len(vc.edges)), key=lambda e: (size[e], e)):
        a, b = (root(n) for n in vc.edges[e])
        if a == b:
            dropped.append(e)
        else:
            parent[a] = b
            tree.append(e)
    return tree, dropped


class _Tree:
    """The spanning forest rooted once: per component its nodes in DFS order and each node's parent edge."""

    def __init__(self, vc: VectorCosts, tree: list[int]):
        self.vc = vc
        adj: list[list[tuple[int, int]]] = [[] for _ in range(vc.N)]
        for e in tree:
            u, x = vc.edges[e]
            adj[u].append((x, e))
            adj[x].append((u, e))
        self.parent: list[tuple[int, int] | None] = [None] * vc.N
        self.orders: list[list[int]] = []
        seen = [False] * vc.N
        for r in range(vc.N):
            if seen[r]:
                continue
            order, stack, seen[r] = [], [r], True
            while stack:
                n = stack.pop()
                order.append(n)
                for m, e in adj[n]:
                    if not seen[m]:
                        seen[m], self.parent[m] = True, (n, e)
                        stack.append(m)
            self.orders.append(order)

    def send(self, src: int, e: int, T: np.ndarray) -> np.ndarray:
        """min over src's vectors of T[src] + inter_e, for every vector of the edge's other node."""
        u, _ = self.vc.edges[e]
        return (self.vc.reduce_producer if src == u else self.vc.reduce_consumer)(T[None, :], e)[0]

    def solve(self, unary: list[np.ndarray], decode: bool = True, deadline: float | None = None):
        """(optimum, min-marginals, an optimal plan's vectors or None without ``decode``) of the
        tree with these node costs; None when the deadline passes mid-sweep (checked per node)."""
        vc, N = self.vc, self.vc.N
        up, msg, marg, choice, total = list(unary), [None] * N, [None] * N, [0] * N, 0
        for order in self.orders:
            for n in reversed(order[1:]):
                if past(deadline):
                    return None
                p, e = self.parent[n]
                msg[n] = self.send(n, e, up[n])
                up[p] = up[p] + msg[n]
            r = order[0]
            marg[r], choice[r] = up[r], int(np.argmin(up[r]))
            total += int(up[r][choice[r]])
            for n in order[1:]:
                if past(deadline):
                    return None
                p, e = self.parent[n]
                marg[n] = up[n] + self.send(p, e, marg[p] - msg[n])
                if decode:
                    choice[n] = int(np.argmin(up[n] + vc.edge_given(e, p, choice[p])))
        return total, marg, choice if decode else None


def plan_cost(vc: VectorCosts, vectors: list[int]) -> int:
    total = sum(int(vc.intra_vec(n)[v]) for n, v in enumerate(vectors))
    for e, (u, x) in enumerate(vc.edges):
        total += int(vc.edge_pairs(e, np.array([vectors[u]]), np.array([vectors[x]]))[0])
    return total


def improve(vc: VectorCosts, vectors: list[int], passes: int = 4, deadline: float | None = None) -> list[int]:
    """Iterated conditional modes: each node in turn takes its best vector given its neighbours'
    (until the deadline: every intermediate assignment is a plan)."""
    vectors = list(vectors)
    for _ in range(passes):
        changed = False
        for n in range(vc.N):
            if past(deadline):
                return vectors
            cost = vc.intra_vec(n).copy()
            for e, m in vc.around[n]:
                cost += vc.edge_given(e, m, vectors[m])
            best = int(np.argmin(cost))
            if cost[best] < cost[vectors[n]]:
                vectors[n], changed = best, True
        if not changed:
            break
    return vectors


def _penalised(vc: VectorCosts, n: int, incumbent) -> np.ndarray:
    """Node n's costs with every excluded vector (``big``) at the incumbent's cost + 1 instead: with
    that, every plan using one costs more than the incumbent, so the relaxed problem keeps the
    optimum, and the int64 sums cannot overflow. Their marginals mean nothing: callers drop them
    (``VectorCosts.blocked``)."""
    vec = vc.intra_vec(n)
    blocked = vec >= vc.big
    if not blocked.any():
        return vec
    if incumbent is None:
        raise ValueError("tree_dual: excluded vectors need an incumbent (its cost caps their penalty)")
    return np.where(blocked, incumbent[0] + 1, vec)


def _better(vc: VectorCosts, best, vectors: list[int], deadline: float | None = None):
    """The better of the incumbent and these vectors, improved by ICM when within 0.5% of it."""
    cost = plan_cost(vc, vectors)
    if best is not None and cost > best[0] * 1.005:
        return best
    vectors = improve(vc, vectors, deadline=deadline)
    cost = plan_cost(vc, vectors)
    return (cost, vectors) if best is None or cost < best[0] else best


# the stall test (``_stalled``): over its last STALL_ROUNDS rounds the bound rose by at most STALL_SHARE
# of itself or STALL_GAP_SHARE of the gap to the incumbent
STALL_ROUNDS, STALL_SHARE, STALL_GAP_SHARE = 4, 1e-5, 0.02
STALL_WORDS = (f"its last {STALL_ROUNDS} rounds raised it by at most {STALL_GAP_SHARE:.0%} of the gap "
               f"or {STALL_SHARE:.3%} of itself")


def _stalled(history: list[int], gap: int, rounds: int = STALL_ROUNDS, share: float = STALL_SHARE,
             gap_share: float = STALL_GAP_SHARE) -> bool:
    """Whether the bound rose by at most ``share`` of itself, or at most ``gap_share`` of the
    gap to the incumbent, over the last ``rounds`` rounds (the eliminations over survivors close
    the rest faster than more rounds: ResNet-50 at H = 10 rises 0.01% in its last 15 of 25)."""
    if len(history) <= rounds:
        return False
    rise = history[-1] - history[-1 - rounds]
    return rise <= share * abs(history[-1]) or rise <= gap_share * gap


def dual_bound(vc: VectorCosts, rounds: int = 30, deadline: float | None = None,
               incumbent: tuple[int, list[int]] | None = None, enough=None, resume: DualResult | None = None) -> DualResult:
    """The bound, marginals and incumbent after up to ``rounds`` evaluations, or as many as end
    before the deadline (a round it interrupts is dropped; with none, the bound 0 and zero
    marginals: every cost is non-negative), or once ``enough(marginals, incumbent's cost)`` says
    the rest is cheaper done otherwise. ``resume``: an earlier result of these costs, gone on from
    (its multipliers, step count, bound and marginals kept: every round's are valid bounds);
    ``rounds`` counts its rounds too."""
    tree, dropped = spanning_tree(vc)
    forest = _Tree(vc, tree)
    base = [_penalised(vc, n, incumbent) for n in range(vc.N)]
    lam = {e: np.zeros(vc.dom[vc.edges[e][1]].V, dtype=np.int64) for e in dropped}
    best_bound, best, marg_max, done, history = -1, incumbent, [None] * vc.N, 0, []
    if resume is not None and resume.lam is not None:
        lam = {e: v.copy() for e, v in resume.lam.items()}
        best_bound, marg_max, done, history = resume.bound, list(resume.marginals), resume.rounds, list(resume.history)
        if resume.pending is not None:  # the step its last round did not take (it stopped there)
            _move(vc, dropped, lam, *resume.pending, done - 1)
    stalled, pending = False, None
    for r in range(done, rounds):
        unary, leaf = [b.copy() for b in base], {}
        for e in dropped:
            u, x = vc.edges[e]
            leaf[e] = vc.reduce_consumer(lam[e][None, :], e)[0]  # the copy x' eliminated onto u
            unary[u] += leaf[e]
            unary[x] -= lam[e]
        swept = forest.solve(unary, decode=r % DECODE_EVERY == 0, deadline=deadline)
        if swept is None:
            break
        value, marg, choice = swept
        done = r + 1
        best_bound = max(best_bound, value)
        marg_max = [m if old is None else np.maximum(old, m) for old, m in zip(marg_max, marg)]
        if choice is not None:
            best = _better(vc, best, choice, deadline)
        history.append(best_bound)
        stalled, pending = _stalled(history, best[0] - best_bound), (marg, leaf)
        if best_bound >= best[0] or past(deadline) or stalled or (enough is not None and enough(marg_max, best[0])):
            break
        _move(vc, dropped, lam, marg, leaf, r)
        pending = None
    if not done:
        best_bound, marg_max = 0, [np.zeros(d.V, dtype=np.int64) for d in vc.dom]
    return DualResult(best_bound, best[0], best[1], marg_max, done, lam, tuple(history), stalled, pending)


def _move(vc: VectorCosts, dropped: list[int], lam: dict, marg: list[np.ndarray], leaf: dict, r: int) -> None:
    """Round r's step of the multipliers (in place): towards equal marginals at each copy."""
    step = STEP * max(1, r - 2)
    for e in dropped:
        u, x = vc.edges[e]
        at_copy = lam[e] + vc.reduce_producer((marg[u] - leaf[e])[None, :], e)[0]
        lam[e] += (marg[x] - at_copy) // step
