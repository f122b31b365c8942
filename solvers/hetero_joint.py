"""A proven joint optimum (types and alphas per layer) for arrays split by kind at the top.

Scope: the declared alpha space (``core.hetero.AlphaSpace``) frees only the top split (level 0):
each half of the tree is one kind (e.g. ``tpu-mix-16``: 8 v2 | 8 v3), every split below is 1/2.
No overlap of compute and communication. Then, for any plan of the space:

- every leaf of side s (s = 0, 1 at the top) has the same compute and the same exchanges below
  the top (levels >= 1 split 1/2, which sends the same amount each way), so with
  S_s = what side s sends at the top (times dtype / b_0) and V_s = a side-s leaf's compute plus
  its exchanges at levels >= 1 (seconds), the step time is

      T = max(S_0, S_1) + max(V_0, V_1);

- S_0, S_1, V_0, V_1 are sums of per-layer and per-edge terms over *columns*: a layer's column is
  its top cell (type t_0, alpha) and its types t_1 .. t_{H-1} below. An edge's top terms depend
  on the two top cells only; its level-h terms (h >= 1) on the producer's t_h and on the
  consumer's top cell and t_1 .. t_h. So a DP step eliminates the producer one level at a time
  (top cell first), never a full column x column table.

**Graphs.** Series-parallel graphs (``hetero_sp``): global cut nodes (no edge passes over them)
split the graph into top-level *links*; a link joins its entry and exit by parallel branches,
each an edge or a *series* of nodes joined by links that may again hold parallel branches
(ResNet blocks: a path beside a shortcut; EfficientNet's MBConv: a squeeze-excite link nested in
the residual path; a transformer block: a fan-out into one join nested at the path's start).
Several sources (BERT's and GPT-2's embeddings) get a virtual source before them
(``_VirtualSource``: no terms, zero-cost edges, every column; dropped from the plan).
Other graphs are refused in one line.

**Bound.** For integer weights 0 <= l, m <= Q, Q*T >= l*S_0 + (Q-l)*S_1 + m*V_0 + (Q-m)*V_1,
and the least right-hand side over all plans is an ordinary DP (chains; on graphs a DP over the
cut nodes, each block's table built by running its branches from every column of its entry, a
nested link through its own table, entry x exit columns, built once per weighting and crossed
by a min-plus product). Maximising over (l, m) is a 2-parameter concave problem: Kelley's
cutting planes (the LP in floats only chooses weights), from m at the kinds' peak balance.
Every DP works on integers: each term is floored at scale 2^k seconds^-1, so every DP value is a
proven lower bound (the floors only lower it).

**Plans.** Every DP's argmin plan, then a descent over single layers' alphas, scored exactly
(Fractions, the same terms): the incumbent, an upper bound.

**Closing the gap** (chains): every plan whose weighted lower bound is below the incumbent is
enumerated backwards (depth first, completion bounds: the weighted forward DP values and the
component-wise forward minima, both exact on floored integers); each complete plan scores
exactly. When the enumeration ends within its budget the incumbent is proven optimal (OPTIMAL,
bound = objective); otherwise FEASIBLE with the proven bound and the gap.

**Closing the gap** (graphs): the same label setting from cut node to cut node
(``_pareto_graph``): per entry column, each branch's labels to every exit column, summed over
the branches with the entry's labels; inside a branch, a nested link is crossed the same way per
column of its entry (``_cross_link``, recursively). Completion bounds: the weighted least rest
at the weights of the best Lagrangian step (``_cut_backward`` at the cut nodes; inside a block,
the other branches' least plus what follows), the component-wise prefix; a consumer column is
tried only when the least weighted label plus the edge plus that rest stays below the incumbent
(one factored min-plus row). Dominance: label A (same column) drops B when max(A_S0 - B_S0,
A_S1 - B_S1) + max(A_V0 - B_V0, A_V1 - B_V1) <= -2 * slack, since max(x + d, y + e) <=
max(x, y) + max(d, e) gives T(A + R) <= T(B + R) for every completion R (slack: one floor per
term). After every Lagrangian step, cut-node columns whose weighted min-marginal reaches the
incumbent are fixed out (no plan through them beats it); the first step's block tables already
skip the entry columns whose forward value plus a relaxed rest (the branches' exit column
decoupled) exceeds the incumbent. A beam version (a few labels per column, by weighted sum and
by step time) runs first for the incumbent."""

from __future__ import annotations

import time
from fractions import Fraction
from math import ceil

import numpy as np

from explorer.core.array import ArraySpec
from explorer.core.hetero import AlphaSpace, check_array, check_network
from explorer.core.network import Network
from explorer.core.partition import Space
from explorer.core.plan import Plan
from explorer.core.solution import Status

from .hetero import HeteroRefused, HeteroSolution
from .hetero_sp import blocks
from .joint_blocks import _Graph, _PerTermMax
from .joint_close_chain import _chain_bounds, _descend, _pareto_chain
from .joint_close_graph import _cut_backward, _pareto_graph
from .joint_columns import JointOptions, _Model, _Tables, _VirtualSource, _weights, step_of


def check_scope(network: Network, array: ArraySpec, aspace: AlphaSpace) -> None:
    """HeteroRefused unless the declared space frees only the top split and compute does not overlap."""
    check_array(array)
    check_network(network)
    if array.overlap:
        raise HeteroRefused("joint (uneven splits): arrays that overlap compute and communication are not covered")
    if any(h > 0 for h, _ in aspace.free_classes()):
        raise HeteroRefused("joint (uneven splits): only arrays whose alpha space frees the top split alone "
                            "(each half of the tree one kind) are covered")
    peaks = array.leaf_peaks_TFLOPS()
    n = len(peaks) // 2
    if len(set(peaks[:n])) > 1 or len(set(peaks[n:])) > 1:
        raise HeteroRefused("joint (uneven splits): each half of the tree must be one kind")


def _scale(m: _Model, Q: int) -> int:
    """2^k seconds^-1 such that Q times any plan's components stays below 2^58 (floats only size it)."""
    ub = 0.0
    for l, layer in enumerate(m.net.layers):  # noqa: E741
        ub += max(m.whole[l]) * sum(float(r) for r in m.rate) + m.flops[l] / float(min(m.peak))
    for e, (u, v) in enumerate(m.net.edges):
        ub += 2 * m.whole[v][0] * float(m.net.edge_shares[e]) * sum(float(r) for r in m.rate)
    k = 0
    while 2 * Q * ub * 2.0 ** (k + 1) < 2.0**58:
        k += 1
    return 2**k


def _kelley(points: list, Q: int):
    """The (l, m) in [0, Q]^2 maximising min over the plans seen of l*S0 + (Q-l)*S1 + m*V0 + (Q-m)*V1
    (an LP in floats: it only picks the next weights)."""
    from ortools.linear_solver import pywraplp

    lp = pywraplp.Solver.CreateSolver("GLOP")
    lam, mu, z = lp.NumVar(0, 1, "l"), lp.NumVar(0, 1, "m"), lp.NumVar(-lp.infinity(), lp.infinity(), "z")
    for S0, S1, V0, V1 in points:
        lp.Add(z <= lam * (S0 - S1) + S1 + mu * (V0 - V1) + V1)
    lp.Maximize(z)
    lp.Solve()
    return round(lam.solution_value() * Q), round(mu.solution_value() * Q), z.solution_value()


def joint_hetero(network: Network, array: ArraySpec, space: Space, aspace: AlphaSpace,
                 options: JointOptions | None = None, starts: tuple[Plan, ...] = ()) -> HeteroSolution:
    """The best plan found, a proven lower bound, OPTIMAL only when they meet (module docstring).
    ``starts``: plans to begin from (those outside the declared space are ignored)."""
    o = options or JointOptions()
    t_start = time.perf_counter()
    clock = _Clock(t_start)
    check_scope(network, array, aspace)
    net = _VirtualSource.of(network)
    blks = blocks(net)
    m = _Model(net, array, space, aspace)
    v0 = 1 if m.virtual else 0
    starts = tuple(_VirtualSource.plan(m.cols, p) if v0 else p for p in starts if aspace.contains(p))
    Q = o.weight_scale
    tables = _Tables(m, _scale(m, Q))
    graph = _Graph(tables, blks)
    clock.mark("tables")
    best = _equal_best(m, graph, Q)
    equal_s = best[0] if Fraction(1, 2) in m.cols.alphas else None
    for p in starts:
        cols = _plan_columns(m, p)
        if cols is not None:
            best = min(best, (step_of(m.components(cols)), cols), key=lambda b: b[0])
    type_sets = [best[1]] + [c for c in (_plan_columns(m, p, True) for p in starts) if c is not None]
    clock.mark("starts")
    best_bound, best_w, best, seen, fw = _dual(m, graph, Q, o, t_start, best)
    clock.mark("bound")
    chain = all(b.direct for b in blks)
    # on graphs the beam passes below find the plans; the descent from the incumbent's types only
    best = _descend(m, tables, best, type_sets + seen if chain or fw is None else [])
    clock.mark("plans")
    bound = Fraction(best_bound, Q * tables.s)
    proven = bound >= best[0]
    explored = 0
    if not proven and chain and time.perf_counter() - t_start < o.time_limit_s:
        w = np.array(_weights(*best_w, Q), dtype=np.int64)
        bounds = _chain_bounds(graph, w, len(m.net.layers))
        for beam in (4, 12):  # plans first (no proof), then the proof from the best of them
            best = _pareto_chain(m, tables, graph, best, best_w, Q, o, t_start, beam, bounds)[1]
        clock.mark("beam")
        proven, best, explored = _pareto_chain(m, tables, graph, best, best_w, Q, o, t_start, None, bounds)
        clock.mark("labels")
    elif not proven and fw is not None and time.perf_counter() - t_start < o.time_limit_s:
        for beam in o.graph_beams:  # plans first (no proof), then the proof from the best of them
            best = _pareto_graph(m, tables, graph, best, best_w, Q, o, t_start, fw, beam)[1]
        clock.mark("beam")
        proven, best, explored = _pareto_graph(m, tables, graph, best, best_w, Q, o, t_start, fw)
        clock.mark("labels")
    status = Status.OPTIMAL if proven else Status.FEASIBLE
    return HeteroSolution("joint", status, m.plan(best[1][v0:]), best[0], best[0] if proven else bound,
                          time.perf_counter() - t_start, explored, equal_s, tuple(clock.phases))


class _Clock:
    def __init__(self, t0: float):
        self.t, self.phases = t0, []

    def mark(self, name: str) -> None:
        now = time.perf_counter()
        self.phases.append((name, round(now - self.t, 3)))
        self.t = now


def _plan_columns(m: _Model, plan: Plan, types_only: bool = False) -> list[int] | None:
    """The columns of a plan of the declared space (None if a type is not in the space);
    ``types_only``: the top alpha replaced by the grid's first."""
    C = m.cols
    out = []
    for l in range(len(m.net.layers)):  # noqa: E741
        try:
            a = 0 if types_only else C.alphas.index(plan.alphas[0][0][l])
            top = C.types.index(plan.types[0][l]) * C.A + a
            tau = 0
            for h in range(1, m.H):
                tau = tau * C.K + C.types.index(plan.types[h][l])
        except ValueError:
            return None
        out.append(top * C.n_tau + tau)
    return out


def _equal_best(m: _Model, graph: _Graph, Q: int):
    """The least step time with every alpha 1/2 (a linear objective then: S_0 = S_1 and V_0 - V_1 is
    the plan-independent compute difference); a floored DP, scored exactly. Without 1/2 on the grid:
    the least plan of that weighting over every alpha (a start only)."""
    C = m.cols
    half = Fraction(1, 2)
    idx = np.arange(C.n)
    mask = (idx // C.n_tau) % C.A == C.alphas.index(half) if half in C.alphas else None
    slow = 0 if m.peak[0] <= m.peak[1] else 1
    w = (Q // 2, Q - Q // 2, Q if slow == 0 else 0, Q if slow == 1 else 0)
    W, G, tb = graph.forward(w, mask)
    cols = graph.backtrack(W, G, tb)
    return step_of(m.components(cols)), cols


def _dual(m: _Model, graph: _Graph, Q: int, o: JointOptions, t_start: float, best):
    """Kelley's cutting planes on (l, m); (best bound in units Q*s, its (l, m), best plan seen)."""
    graph_ = not all(b.direct for b in graph.blocks)
    if graph_:  # a descended incumbent first: the first pass's tables skip what cannot beat it
        best = _descend(m, graph.t, best, [])
    # first weights: V's at the balance of the two kinds' peaks (mu * V0 + (1 - mu) * V1 flat in alpha)
    lam, mu = Q // 2, round(Q * m.peak[0] / (m.peak[0] + m.peak[1]))
    best_bound, best_w, fw = -1, (lam, mu), None
    seen = [tuple(float(x) for x in m.components(best[1]))]
    plans = []
    last = graph.blocks[-1].exit
    alive: dict = {}
    for k in range(o.dual_rounds):
        cap = Q * ceil(best[0] * graph.t.s) if graph_ else None
        W, G, tbls = graph.forward(_weights(lam, mu, Q), alive=alive, cap=cap)
        g = int(G[last].min())
        cols = graph.backtrack(W, G, tbls)
        plans.append(cols)
        comp = m.components(cols)
        if step_of(comp) < best[0]:
            best = (step_of(comp), cols)
        if graph_:  # reduced-cost fixing at the cut nodes (graphs), from a descended incumbent
            if k == 0:
                best = _descend(m, graph.t, best, [cols])
            Hc = _cut_backward(graph, W, tbls)
            thr = Q * ceil(best[0] * graph.t.s)
            for n in Hc:
                ok = G[n] + Hc[n] < thr
                alive[n] = ok if n not in alive else alive[n] & ok
        if g > best_bound:
            best_bound, best_w, fw = g, (lam, mu), (W, G, tbls, alive)
        seen.append(tuple(float(x) for x in comp))
        nl, nm, zhat = _kelley(seen, Q)
        # on graphs the label pass proves: stop once Kelley's estimate is within graph_dual_tol
        tol = 1 + (o.graph_dual_tol * best_bound if graph_ else 0)
        if (nl, nm) == (lam, mu) or zhat * Q * graph.t.s <= best_bound + tol or time.perf_counter() - t_start > o.time_limit_s:
            break
        lam, mu = nl, nm
    return best_bound, best_w, best, plans, fw


def accpar_hetero(network: Network, array: ArraySpec, space: Space, aspace: AlphaSpace) -> HeteroSolution:
    """AccPar-style heuristic (``check --uneven``'s "accpar"): one DP over the columns with each
    layer's and edge's cost its busier side (``_PerTermMax``), the plan scored exactly. No bound
    (FEASIBLE); same scope as ``joint_hetero``."""
    t0 = time.perf_counter()
    check_scope(network, array, aspace)
    net = _VirtualSource.of(network)  # several sources: as in joint_hetero
    m = _Model(net, array, space, aspace)
    tables = _Tables(m, _scale(m, 1))
    graph = _Graph(tables, blocks(net))
    W = _PerTermMax(tables)
    _, G, tbls = graph.forward(None, W=W)
    cols = graph.backtrack(W, G, tbls)
    value = step_of(m.components(cols))
    plan = m.plan(cols[1:] if m.virtual else cols)
    return HeteroSolution("accpar", Status.FEASIBLE, plan, value, None, time.perf_counter() - t0, 0)
