"""The exact DP engine over type vectors, shared by ``solvers.exact`` and ``solvers.constrained``:
chain forward/backward values and backtracking, and variable elimination on graphs (optimum,
backtracking, min-marginals). Each function takes a ``VectorCosts`` and optional per-level
weights ``W`` and per-node ``extras``; nothing here knows about caps or memory.
"""

from __future__ import annotations

import math

import numpy as np

from explorer.core.errors import InstanceTooLarge
from explorer.core.names import given_as
from explorer.core.plan import Plan

from .deadline import check_deadline
from .vectors import TimeUp, VectorCosts, reduce_peak  # noqa: F401 (TimeUp: re-exported)

MAX_GRAPH_TABLE = 20_000_000  # entries of one dense elimination table on graphs (int64: 160 MB)


# chains ------------------------------------------------------------------------------------------
def chain_forward(vc: VectorCosts, W=None, extras=None) -> list[np.ndarray]:
    """alpha[l][v]: the least cost of layers 0..l with layer l at vector v (its intra included)."""
    L = vc.N
    alphas = [vc.intra_vec(0, W, None if extras is None else extras[0])]
    for l in range(1, L):  # noqa: E741
        a = vc.reduce_producer(alphas[-1][None, :], l - 1, W)[0] + vc.intra_vec(l, W, None if extras is None else extras[l])
        alphas.append(vc.clamp(a))
    return alphas


def chain_backward(vc: VectorCosts, W=None, extras=None) -> list[np.ndarray]:
    """beta[l][v]: the least cost of layers l+1..L-1 and edges after l, given layer l at vector v."""
    L = vc.N
    betas = [np.zeros(vc.dom[L - 1].V, dtype=vc.dtype)]
    for l in range(L - 2, -1, -1):  # noqa: E741
        nxt = vc.clamp(betas[0] + vc.intra_vec(l + 1, W, None if extras is None else extras[l + 1]))
        betas.insert(0, vc.reduce_consumer(nxt[None, :], l, W)[0])
    return betas


def chain_backtrack(vc: VectorCosts, alphas: list[np.ndarray], W=None) -> list[int]:
    """The vectors of a least-cost chain plan, from the forward values."""
    L = vc.N
    vectors = [0] * L
    vectors[L - 1] = int(np.argmin(alphas[L - 1]))
    for l in range(L - 2, -1, -1):  # noqa: E741
        vectors[l] = int(np.argmin(alphas[l] + vc.edge_given(l, l + 1, vectors[l + 1], W)))
    return vectors


def vectors_plan(vc: VectorCosts, vectors: list[int]) -> Plan:
    return Plan.from_layer_vectors([tuple(vc.dom[n].types[d] for d in vc.dom[n].digits(v)) for n, v in enumerate(vectors)])


# graphs ------------------------------------------------------------------------------------------
class Factor:
    """A node's costs, an edge (symbolic: ``edge``, no array) or a message over ``scope``."""

    __slots__ = ("scope", "array", "edge")

    def __init__(self, scope: tuple[int, ...], array: np.ndarray | None = None, edge: int | None = None):
        self.scope, self.array, self.edge = scope, array, edge


def node_factors(vc) -> list[list[Factor]]:
    """Per node, the factors whose scope holds it: its own (no array yet), then its edges' in
    edge order (symbolic); ``vc`` needs only ``N`` and ``edges``."""
    at: list[list[Factor]] = [[Factor((n,))] for n in range(vc.N)]
    for e, (u, v) in enumerate(vc.edges):
        f = Factor((u, v), edge=e)
        at[u].append(f)
        at[v].append(f)
    return at


def _dense(vc: VectorCosts, scope: list[int], bucket: list[Factor], W=None) -> np.ndarray:
    """The sum of the bucket's factors as one table with axes in ``scope`` order."""
    table = np.zeros([1] * len(scope), dtype=vc.dtype)
    for f in bucket:
        arr = f.array if f.edge is None else vc.edge_matrix(f.edge, W)
        perm = sorted(range(len(f.scope)), key=lambda k: scope.index(f.scope[k]))
        shape = [vc.dom[n].V if n in f.scope else 1 for n in scope]
        table = vc.clamp(table + arr.transpose(perm).reshape(shape))
    return table


def _plan_step(vc: VectorCosts, z: int, bucket: list[Factor]):
    """(work, how, detail) of eliminating z; how is 'dense' or 'chain' (detail: (a, b, edge factor))."""
    V = [vc.dom[n].V for n in range(vc.N)]
    others = sorted({n for f in bucket for n in f.scope} - {z})
    dense = V[z]
    for n in others:  # (a loop: here math.prod over a generator costs more than the product)
        dense *= V[n]
    best = (float(dense), "dense", None) if dense <= MAX_GRAPH_TABLE else (float("inf"), "dense", None)
    if len(others) == 2:
        for b in others:
            touching = [f for f in bucket if b in f.scope]
            if len(touching) == 1 and touching[0].edge is not None:
                a = others[0] if others[1] == b else others[1]
                work = float(V[a]) * V[z] * (1 + vc.H * vc.dom[b].K)
                peak = V[a] * max(V[z], V[b]) * max(vc.dom[b].K, vc.dom[z].K)
                if peak <= 4 * MAX_GRAPH_TABLE and work < best[0]:
                    best = (work, "chain", (a, b, touching[0]))
    return best


# TimeUp: ``vectors`` (a step's edge reduction checks between levels too)


def graph_optimum(vc: VectorCosts, W=None, extras=None, steps: list | None = None,
                  deadline: float | None = None) -> tuple[int, list[int] | None, int]:
    """min over plans of sum_h W_h c_h (+ per-node ``extras``) on a graph, its vectors (None when
    pins and forbids leave no plan), and the most nodes one elimination step combined. With a
    ``steps`` list, every elimination step is recorded there (for ``graph_marginals``). ``TimeUp``
    once ``deadline`` (a ``time.perf_counter()`` value) passes between two steps."""
    at = _weighted_factors(vc, W, extras)
    alive = set(range(vc.N))
    constant = 0
    records: list[tuple[int, list[Factor]]] = []
    widest = 1
    order = vc.elimination_order  # (later eliminations of the same graph repeat the first one's order)
    chosen_order: list[int] = []
    while alive:
        check_deadline(deadline, TimeUp)
        if order is not None:
            z = order[len(chosen_order)]
            _, how, detail = _plan_step(vc, z, at[z])
        else:
            how, detail, z = _cheapest_step(vc, alive, at)
        chosen_order.append(z)
        bucket = take_bucket(at, z)
        scope = sorted({n for f in bucket for n in f.scope})
        widest = max(widest, len(scope))
        alive.discard(z)
        records.append((z, bucket))
        step = [z, bucket, how, detail, scope, None, 0]  # ..., the message produced, the constant added
        if steps is not None:
            steps.append(step)
        new, const = _eliminate(vc, z, bucket, how, detail, scope, W, deadline)
        if new is None:
            constant = min(constant + const, vc.big)
            step[6] = const
            continue
        step[5] = new
        for n in new.scope:
            at[n].append(new)
    vc.elimination_order = chosen_order
    if constant >= vc.big:
        return int(constant), None, widest
    return int(constant), backtrack(vc, records, W), widest


def _weighted_factors(vc: VectorCosts, W, extras) -> list[list[Factor]]:
    """``node_factors`` with each node's intra costs at these weights."""
    at = node_factors(vc)
    for n in range(vc.N):
        at[n][0].array = vc.intra_vec(n, W, None if extras is None else extras[n])
    return at


def _cheapest_step(vc: VectorCosts, alive: set[int], at: list[list[Factor]]):
    """(how, detail, node) of the live node cheapest to eliminate (ties: the lowest node)."""
    work, how, detail, z = min((_plan_step(vc, n, at[n]) + (n,) for n in alive), key=lambda s: (s[0], s[3]))
    if work == float("inf"):
        V = max(d.V for d in vc.dom)
        raise InstanceTooLarge(
            f"exact: eliminating this graph would need a table beyond {MAX_GRAPH_TABLE:,} entries "
            f"(up to {V:,} type vectors per node); {instead(vc.problem)}"
        )
    return how, detail, z


def _eliminate(vc: VectorCosts, z: int, bucket: list[Factor], how: str, detail, scope: list[int], W,
               deadline: float | None = None):
    """Minimise z out of its bucket: (the message, 0), or (None, the constant) when nothing is left."""
    if how == "chain":
        a, b, edge_f = detail
        F = _dense(vc, [a, z], [f for f in bucket if f is not edge_f], W)
        if vc.edges[edge_f.edge][0] == z:
            out = vc.reduce_producer(F, edge_f.edge, W, deadline)
        else:
            out = vc.reduce_consumer(F, edge_f.edge, W, deadline)
        return Factor((a, b), out), 0
    table = _dense(vc, scope, bucket, W)
    reduced = table.min(axis=scope.index(z))
    rest = tuple(n for n in scope if n != z)
    if not rest:
        return None, reduced.item()
    return Factor(rest, reduced), 0


def take_bucket(at: list[list[Factor]], z: int) -> list[Factor]:
    """z's bucket (the factors holding z), taken out of its other nodes' lists."""
    for f in at[z]:
        for n in f.scope:
            if n != z:
                at[n].remove(f)
    return at[z]


def backtrack(vc: VectorCosts, records: list[tuple[int, list[Factor]]], W=None, domains=None) -> list[int]:
    """Each node's best vector, in reverse elimination order (``records``: (node, its bucket)),
    given the nodes chosen after it; over ``domains`` (the factors' arrays then index positions in
    them) or every vector. An edge factor without an array is read off its edge."""
    pos: dict[int, int] = {}
    for z, bucket in reversed(records):
        total = np.zeros(vc.dom[z].V if domains is None else len(domains[z]), dtype=vc.dtype)
        for f in bucket:
            if f.array is None:
                u, x = vc.edges[f.edge]
                m = x if u == z else u  # the edge's other node
                part = vc.edge_given(f.edge, m, pos[m] if domains is None else int(domains[m][pos[m]]), W)
                part = part if domains is None else part[domains[z]]
            else:
                part = f.array[tuple(slice(None) if n == z else pos[n] for n in f.scope)]
            total = vc.clamp(total + part)
        pos[z] = int(np.argmin(total))
    return [pos[n] if domains is None else int(domains[n][pos[n]]) for n in range(vc.N)]


def graph_marginals(vc: VectorCosts, W=None, extras=None, solved: tuple | None = None,
                    deadline: float | None = None) -> tuple[int, list[np.ndarray]]:
    """The optimum and, for every node n and vector v, the least cost of a plan with n at v
    (min-marginals): the elimination forward, then outside messages back down its bucket tree.

    A step's clique is its node and the nodes its message reaches; the clique's full table is
    the bucket's factors plus the message's outside table; a child's outside table is that sum
    without the child's message, minimised down to the child's scope. A "chain" clique (a, z, b)
    never forms its V^3 table: b goes first, across its edge, one level at a time. ``solved``:
    (total, vectors, steps) of ``graph_optimum`` at the same weights, when already run. ``TimeUp``
    once ``deadline`` passes between two steps."""
    if solved is None:
        steps: list = []
        total, vectors, _ = graph_optimum(vc, W, extras, steps, deadline)
    else:
        total, vectors, steps = solved
    marg: list[np.ndarray | None] = [None] * vc.N
    if vectors is None:
        return total, [np.full(d.V, vc.big, dtype=vc.dtype) for d in vc.dom]
    outside: dict[int, np.ndarray] = {}
    produced = {id(st[5]) for st in steps if st[5] is not None}
    for z, bucket, how, detail, scope, new, const in reversed(steps):
        check_deadline(deadline, TimeUp)
        out = outside.pop(id(new)) if new is not None else np.array(total - const, dtype=vc.dtype)
        if how == "chain":
            a, b, edge_f = detail
            e = edge_f.edge
            G = vc.reduce_consumer(out, e, W) if vc.edges[e][0] == z else vc.reduce_producer(out, e, W)
            clique, rest_bucket, extra = [a, z], [f for f in bucket if f is not edge_f], G
        else:
            clique, rest_bucket = scope, bucket
            extra = np.expand_dims(out, scope.index(z)) if out.ndim else out
        full = vc.clamp(_dense(vc, clique, rest_bucket, W) + extra)
        axes = tuple(i for i, n in enumerate(clique) if n != z)
        marg[z] = full.min(axis=axes) if axes else full
        for f in rest_bucket:
            if id(f) not in produced:
                continue
            part = vc.clamp(_dense(vc, clique, [g for g in rest_bucket if g is not f], W) + extra)
            drop = tuple(i for i, n in enumerate(clique) if n not in f.scope)
            kept = [n for n in clique if n in f.scope]
            reduced = part.min(axis=drop) if drop else part
            outside[id(f)] = reduced.transpose([kept.index(n) for n in f.scope])
    return total, marg


def graph_peak_entries(vc) -> int:
    """The most array entries ``graph_optimum`` holds at once beyond the nodes' own cached vectors,
    replaying its elimination order on scopes alone (``vc`` needs only ``dom[n].V``/``.K``, ``H``,
    ``N``, ``edges``): every message it has made (the records keep them for the backtrack) plus
    the step's tables (``_dense_peak``, ``vectors.reduce_peak``). ``bench/bench_memory_guard.py``."""
    V = [d.V for d in vc.dom]
    at = node_factors(vc)
    alive, held, peak = set(range(vc.N)), 0, 0
    while alive:
        how, detail, z = _cheapest_step(vc, alive, at)
        bucket = take_bucket(at, z)
        scope = sorted({n for f in bucket for n in f.scope})
        if how == "chain":
            a, b, edge_f = detail
            F, temp = _dense_peak(V, [f for f in bucket if f is not edge_f])
            u, x = vc.edges[edge_f.edge]
            temp = max(temp, F + reduce_peak(vc.H, vc.dom[u].K, vc.dom[x].K, V[a], u == z))
            new_scope: tuple[int, ...] = (a, b)
        else:
            S, temp = _dense_peak(V, bucket)
            temp = max(temp, S + S // V[z])
            new_scope = tuple(n for n in scope if n != z)
        peak = max(peak, held + temp)
        alive.discard(z)
        if new_scope:
            held += math.prod(V[n] for n in new_scope)
            new = Factor(new_scope, np.empty(0))
            for n in new_scope:
                at[n].append(new)
    return peak


def _dense_peak(V: list[int], bucket: list[Factor]) -> tuple[int, int]:
    """(entries of ``_dense``'s table, the most entries it holds at once): the table grows factor
    by factor (old and new table alive together); an edge's matrix is built with two temporaries."""
    table, covered, peak = 1, set(), 0
    for f in bucket:
        arr = math.prod(V[n] for n in f.scope) if f.edge is not None else 0  # intra vectors and messages are held already
        peak = max(peak, table + 3 * arr)
        covered |= set(f.scope)
        new = math.prod(V[n] for n in covered)
        peak = max(peak, table + arr + new)
        table = new
    return table, peak


def instead(problem) -> str:
    """What takes a graph too large for the exact elimination: bound and prune (``solvers.pruned``)
    where no link cap couples the layers (it checks the memory limit on its plan), and CP-SAT."""
    if problem.network.is_chain or problem.constraints.caps:
        return f"use {given_as('--solver')} cpsat"
    return f"use {given_as('--solver')} pruned (bound and prune: a proven optimum, or a bound and the gap) or cpsat"
