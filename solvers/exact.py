"""Exact joint optimum on chains without CP-SAT: a DP over layers whose state is the layer's
type at every level (K^H type vectors per layer).

For consecutive layers u -> v with type vectors sigma (u) and tau (v),
    total = sum_l intra_vec[l](tau_l) + sum_edges inter(sigma, tau),
    inter(sigma, tau) = sum_h w_h * inter(e, sigma_h, tau_h, counts(tau_<h)).
The naive transition is K^H x K^H per layer. Because the level-h term depends on sigma
only through sigma_h, sigma is eliminated one level at a time: after eliminating
sigma_0..sigma_{j-1} the table is indexed by (tau_0..tau_{j-1}, sigma_j..sigma_{H-1}), and
    new[tau_<j, tau_j, sigma_>j] = min over sigma_j of old[tau_<j, sigma_j, sigma_>j]
                                   + w_j * inter(e, sigma_j, tau_j, counts(tau_<j)).
Each step costs K^(H+1); a layer costs H * K^(H+1) instead of K^(2H). Costs come from the
shared cost tables, looked up once per count state and gathered per prefix.

Graphs (joins, branches) go through ``solve_graph``: variable elimination over the same
type-vector states, one factor per node (its intra costs) and per edge (its full K^H x K^H
inter costs), nodes eliminated in a greedy min-degree order. Exact; it grows as
(K^H)^(width+1) with the order's width, which is 2 on ResNets and BERT (Q, K, V each touch
only the layer input and the attention join), and refuses where tables would not fit.

Pins and forbids are enforced (a blocked type vector costs more than any plan). Link caps
and memory limits couple all layers, so the DP cannot carry them; it solves without them
and, when that optimum satisfies them, it is also the optimum with them (a relaxation's
optimum that is feasible is optimal). Otherwise it refuses, naming what it cannot enforce.
"""

from __future__ import annotations

import time

import numpy as np

from explorer.core.errors import CannotEnforce, InstanceTooLarge
from explorer.core.partition import NUM_TYPES
from explorer.core.plan import Plan
from explorer.core.problem import Problem
from explorer.core.units import format_count

from explorer.core.solution import Solution, SolveOptions, Status, plan_solution

DEFAULT_MAX_STATES = 200_000  # type vectors per layer: 3^11 = 177,147 (accpar), 2^17 (hypar)
MAX_BACKPOINTERS = 300_000_000  # layers * levels * K^H bytes kept for backtracking


def check_size(problem: Problem, max_states: int | None = None) -> None:
    K, H, L = len(problem.space.types), problem.levels, problem.num_layers
    limit = max_states or DEFAULT_MAX_STATES
    n = K**H
    if n > limit:
        raise InstanceTooLarge(
            f"exact: {K}^{H} = {n:,} type vectors per layer ({problem.space} space, {H} levels) exceeds its limit "
            f"of {limit:,}; use --solver cpsat"
        )
    if L * H * n > MAX_BACKPOINTERS:
        raise InstanceTooLarge(
            f"exact: {L} layers x {H} levels x {n:,} type vectors = {L * H * n:,} back-pointers exceeds its limit "
            f"of {MAX_BACKPOINTERS:,}; use --solver cpsat"
        )


def _prefix_states(problem: Problem):
    """For each level h: the count state index of every prefix tau_<h (K^h of them) and the states."""
    tables = problem.tables
    types = tables.types
    K = len(types)
    out = []
    prefix_counts = np.zeros((1, NUM_TYPES), dtype=np.int64)
    for h in range(problem.levels):
        states = tables.states(h)
        index = {s: i for i, s in enumerate(states)}
        out.append((np.array([index[tuple(int(x) for x in c)] for c in prefix_counts], dtype=np.int64), states))
        step = np.zeros((K, NUM_TYPES), dtype=np.int64)
        for k, t in enumerate(types):
            step[k, t.index] = 1
        prefix_counts = (prefix_counts[:, None, :] + step[None, :, :]).reshape(-1, NUM_TYPES)
    return out


MAX_GRAPH_TABLE = 20_000_000  # entries of one elimination table on graphs (int64: 160 MB)
MAX_EDGE_MATRIX = 4_000_000  # entries of one edge's K^H x K^H matrix


class VectorCosts:
    """Costs over whole type vectors (a layer's type at every level), read from the shared tables.

    Vector index = the types' mixed-radix number, level 0 most significant. Values are weighted
    by the objective's level weights; a vector that pins or forbids exclude costs ``big``.
    """

    def __init__(self, problem: Problem):
        self.problem, self.tables, self.weights = problem, problem.tables, problem.weights.weights
        self.types = self.tables.types
        self.K, self.H = len(self.types), problem.levels
        self.V = self.K**self.H
        self.prefix = _prefix_states(problem)
        self.use_int64 = sum(self.weights) * self.tables.max_level_cost() < 2**60
        self.dtype = np.int64 if self.use_int64 else object
        self.big = 2**61 if self.use_int64 else 1 << 400
        vectors = np.arange(self.V)
        self.digit = [(vectors // self.K ** (self.H - 1 - h)) % self.K for h in range(self.H)]
        self.pstate = [self.prefix[h][0][vectors // self.K ** (self.H - h)] for h in range(self.H)]

    def level_mats(self, e: int, h: int) -> np.ndarray:
        """[count state at level h, producer type, consumer type] -> weighted inter cost of edge e."""
        w, t = self.weights[h], self.tables
        return np.array([[[w * t.inter(e, a, b, s) for b in self.types] for a in self.types] for s in self.prefix[h][1]],
                        dtype=self.dtype)

    def intra_vec(self, n: int) -> np.ndarray:
        vec = np.zeros(self.V, dtype=self.dtype)
        blocked = np.zeros(self.V, dtype=bool)
        for h in range(self.H):
            rows = np.array([[self.weights[h] * self.tables.intra(n, t, s) for t in self.types] for s in self.prefix[h][1]],
                            dtype=self.dtype)
            vec = vec + rows[self.pstate[h], self.digit[h]]
            allowed = self.problem.allowed(h, n)
            blocked |= np.array([t not in allowed for t in self.types])[self.digit[h]]
        vec[blocked] = self.big
        return vec

    def edge_matrix(self, e: int) -> np.ndarray:
        """[producer vector, consumer vector] -> weighted inter cost of edge e over all levels."""
        g = np.zeros((self.V, self.V), dtype=self.dtype)
        for h in range(self.H):
            g = g + self.level_mats(e, h)[self.pstate[h][None, :], self.digit[h][:, None], self.digit[h][None, :]]
        return g

    def clamp(self, a: np.ndarray) -> None:
        if self.use_int64:
            np.minimum(a, self.big, out=a)


def solve(problem: Problem, options: SolveOptions | None = None) -> Solution:
    options = options or SolveOptions()
    check_size(problem, options.max_states)
    if not problem.network.is_chain:
        return solve_graph(problem, options)
    t0 = time.perf_counter()
    vc = VectorCosts(problem)
    types, K, H, L, N = vc.types, vc.K, vc.H, problem.num_layers, vc.V
    cost = vc.intra_vec(0)
    backs: list[list[np.ndarray]] = [[]]
    for l in range(1, L):  # noqa: E741
        e = l - 1
        cur = cost.reshape(1, K, N // K)
        steps = []
        for j in range(H):
            g = vc.level_mats(e, j)[vc.prefix[j][0]]  # (K^j, sigma_j, tau_j)
            tmp = cur[:, :, None, :] + g[:, :, :, None]  # (K^j, sigma_j, tau_j, rest)
            arg = tmp.argmin(axis=1)
            new = np.take_along_axis(tmp, arg[:, None, :, :], axis=1)[:, 0]
            steps.append(arg.astype(np.int8).reshape(-1))
            rest = new.shape[2]
            cur = new.reshape(new.shape[0] * K, K, rest // K) if j < H - 1 else new.reshape(-1)
        cost = cur + vc.intra_vec(l)
        vc.clamp(cost)
        backs.append(steps)
    best = int(cost.argmin())
    if cost[best] >= vc.big:
        return Solution("exact", Status.INFEASIBLE, None, None, None, None, time.perf_counter() - t0,
                        {"reason": "pins and forbids leave no plan"})
    vectors = [0] * L
    vectors[L - 1] = best
    for l in range(L - 1, 0, -1):  # noqa: E741
        tau = _digits(vectors[l], K, H)
        sigma = [0] * H
        for j in range(H - 1, -1, -1):
            # index into step j: (tau_<j, tau_j, sigma_>j) as one mixed-radix number
            digits = tau[: j + 1] + sigma[j + 1 :]
            sigma[j] = int(backs[l][j][_number(digits, K)])
        vectors[l - 1] = _number(sigma, K)
    plan = Plan.from_layer_vectors([tuple(types[d] for d in _digits(v, K, H)) for v in vectors])
    return _finish(problem, plan, int(cost[best]), time.perf_counter() - t0, {"type_vectors_per_layer": N})


def elimination_order(problem: Problem) -> tuple[list[int], int]:
    """A greedy min-degree elimination order of the network's interaction graph, and the most
    variables any step combines (the order's width + 1)."""
    N = problem.num_layers
    adj: list[set[int]] = [set() for _ in range(N)]
    for u, v in problem.network.edges:
        adj[u].add(v)
        adj[v].add(u)
    alive, order, widest = set(range(N)), [], 1
    while alive:
        z = min(alive, key=lambda n: (len(adj[n]), n))
        widest = max(widest, len(adj[z]) + 1)
        for a in adj[z]:
            adj[a] |= adj[z] - {a}
            adj[a].discard(z)
        alive.discard(z)
        order.append(z)
    return order, widest


def solve_graph(problem: Problem, options: SolveOptions) -> Solution:
    """Exact joint optimum on a graph: variable elimination over type vectors (see module doc)."""
    K, H, N = len(problem.space.types), problem.levels, problem.num_layers
    V = K**H
    order, width = elimination_order(problem)
    if V**width > MAX_GRAPH_TABLE or V * V > MAX_EDGE_MATRIX:
        size = V**width  # an exact int: a float power overflows on wide graphs
        raise InstanceTooLarge(
            f"exact: eliminating this graph combines {width} nodes at once, a table of ({K}^{H})^{width} = "
            f"{f'{size:.3g}' if size < 10**300 else format_count(size)} entries (limit {MAX_GRAPH_TABLE:,}); use --solver cpsat"
        )
    t0 = time.perf_counter()
    vc = VectorCosts(problem)
    factors: list[tuple[tuple[int, ...], np.ndarray]] = [((n,), vc.intra_vec(n)) for n in range(N)]
    factors += [((u, v), vc.edge_matrix(e)) for e, (u, v) in enumerate(problem.tables.edges)]
    constant = 0
    records: list[tuple[list[int], int, np.ndarray]] = []
    for z in order:
        bucket = [f for f in factors if z in f[0]]
        factors = [f for f in factors if z not in f[0]]
        scope = sorted({n for fv, _ in bucket for n in fv})
        table = np.zeros((1,) * len(scope), dtype=vc.dtype)
        for fv, arr in bucket:
            perm = sorted(range(len(fv)), key=lambda k: scope.index(fv[k]))
            table = table + arr.transpose(perm).reshape([V if n in fv else 1 for n in scope])
        vc.clamp(table)
        ax = scope.index(z)
        arg = table.argmin(axis=ax)
        rest = scope[:ax] + scope[ax + 1:]
        reduced = np.take_along_axis(table, np.expand_dims(arg, ax), axis=ax).squeeze(ax)
        records.append((rest, z, arg))
        if rest:
            factors.append((tuple(rest), reduced))
        else:
            constant = min(constant + reduced.item(), vc.big)
    if constant >= vc.big:
        return Solution("exact", Status.INFEASIBLE, None, None, None, None, time.perf_counter() - t0,
                        {"reason": "pins and forbids leave no plan"})
    chosen: dict[int, int] = {}
    for rest, z, arg in reversed(records):
        chosen[z] = int(arg[tuple(chosen[n] for n in rest)])
    plan = Plan.from_layer_vectors([tuple(vc.types[d] for d in _digits(chosen[n], K, H)) for n in range(N)])
    return _finish(problem, plan, int(constant), time.perf_counter() - t0, {"type_vectors_per_layer": V, "width": width})


def _finish(problem: Problem, plan: Plan, value: int, wall: float, info: dict) -> Solution:
    """Score the plan from the tables, check it against the DP value and the coupling constraints."""
    sol = plan_solution("exact", problem, plan, Status.OPTIMAL, wall)
    broken = problem.plan_violations_units(sol.level_units, plan.types)
    if broken:
        raise CannotEnforce(
            "exact: its optimum without caps and memory breaks " + "; ".join(broken)
            + ", and it cannot enforce them exactly; use --solver cpsat (or brute on tiny nets)"
        )
    if sol.objective != value:
        raise AssertionError(f"exact: DP value {value} != table re-score {sol.objective}")
    return Solution(sol.solver, sol.status, sol.plan, sol.objective, sol.objective, sol.level_units, wall, info)


def _digits(n: int, K: int, H: int) -> list[int]:
    out = [0] * H
    for h in range(H - 1, -1, -1):
        n, out[h] = divmod(n, K)
    return out


def _number(digits: list[int], K: int) -> int:
    n = 0
    for d in digits:
        n = n * K + d
    return n
