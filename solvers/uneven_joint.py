"""A proven joint optimum (types and alphas per layer) for arrays split by kind at the top.

The derivation: docs/derivations.md, "`solvers.uneven_joint`".
"""

from __future__ import annotations

import time
from fractions import Fraction
from math import ceil, floor

import numpy as np

from explorer.core.array import ArraySpec
from explorer.core.errors import Refused
from explorer.core.uneven import AlphaSpace, check_array, check_network
from explorer.core.network import Network
from explorer.core.partition import Space
from explorer.core.plan import Plan
from explorer.core.evaluate import evaluate_split
from explorer.core.solution import Solution, Status, split_solution
from explorer.core.split_rules import SplitRules, joint_refusal

from .uneven_sp import blocks
from .joint_blocks import _Graph, _PerTermMax, _Weighted
from . import joint_columns
from .joint_labels import LabelsMemory, _descend
from .joint_memory import solver_bytes
from .joint_close_graph import _cut_backward, _pareto_graph
from .joint_columns import (INF, JointOptions, _Model, _Tables, _VirtualSource, _weights, better, step_of, with_limits)


def check_scope(network: Network, array: ArraySpec, aspace: AlphaSpace, name: str = "joint") -> None:
    """Refused (the message names the solver, ``name``) unless the declared space frees only the
    top split and compute does not overlap."""
    check_array(array)
    check_network(network)
    if array.overlap:
        raise Refused(f"{name} (uneven splits): arrays that overlap compute and communication are not covered")
    if any(h > 0 for h, _ in aspace.free_classes()):
        raise Refused(f"{name} (uneven splits): only arrays whose alpha space frees the top split alone "
                      "(each half of the tree one kind) are covered")
    peaks = array.leaf_peaks_TFLOPS()
    n = len(peaks) // 2
    if len(set(peaks[:n])) > 1 or len(set(peaks[n:])) > 1:
        raise Refused(f"{name} (uneven splits): each half of the tree must be one kind")


def _scale(m: _Model, Q: int) -> int:
    """2^k seconds^-1 such that Q times any plan's components stays below 2^58 (floats only size it)."""
    ub = m.upper_s()
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


def _first_incumbent(m, tables, graph, Q: int, deadline: float, starts: tuple[Plan, ...]):
    """The equal split's best plan (None: cut by the deadline), its step time where it is reported
    (only where no cap or memory limit can bind: the equal-split DP does not keep them) and the
    best of it and the starts (``(above every plan, None)`` where there is none)."""
    equal = _equal_best(m, graph, Q, deadline)
    equal_s = equal[0] if equal and Fraction(1, 2) in m.cols.alphas and not len(tables.lim) else None
    best = (Fraction(2**61 // Q, tables.s), None)
    for cols in ([equal[1]] if equal else []) + [_plan_columns(m, p) for p in starts]:
        if cols is not None:
            best = better(m, best, cols)
    return equal, equal_s, best


def joint_uneven(network: Network, array: ArraySpec, space: Space, aspace: AlphaSpace,
                 options: JointOptions | None = None, starts: tuple[Plan, ...] = (),
                 types_allowed=None, rules: SplitRules | None = None, even: tuple[Plan, ...] | None = None) -> Solution:
    """The best plan found, a proven lower bound, OPTIMAL only when they meet (module docstring).
    ``starts``: plans to begin from (those outside the declared space are ignored). ``even``: the even exact solve
    under ``rules`` done by the caller (``app.split_solve.even_optimum``: its plan or ()), not again; None: here.
    ``types_allowed(level, layer)``: the types pins and forbids leave each layer (``SplitRules.types``;
    a column with another type costs INF, as one its node does not offer). ``rules``: caps and
    memory limits (``_limit_terms``; the time objective only): every plan it returns keeps them,
    INFEASIBLE when the labels prove none does, UNKNOWN (with the bound) when they end first.
    ``options.time_limit_s`` bounds every phase, the tables' build too (``deadline``): cut, the best plan
    (or start) so far, the bound so far (none before the first bounding pass ends); UNKNOWN without a plan."""
    o = options or JointOptions()
    t_start = time.perf_counter()
    deadline = t_start + o.time_limit_s
    clock = _Clock(t_start)
    check_scope(network, array, aspace)
    if rules is not None and joint_refusal(rules.objective):
        raise Refused(joint_refusal(rules.objective))
    if _no_type_left(network, array, types_allowed):  # pins and forbids conflict: no plan at all
        return split_solution("joint", Status.INFEASIBLE, None, None, None, time.perf_counter() - t_start, 0)
    Q = o.weight_scale
    try:
        m, tables, graph = _setup(network, array, space, aspace, types_allowed, rules, Q, deadline)
    except TimeoutError:  # the tables' build outlasted the limit: the best start, scored by the evaluator
        return _starts_only(network, array, space, aspace, starts, rules, t_start, o.time_limit_s)
    except TablesMemory as e:  # the tables would pass the memory limit: the best start, none built
        return _starts_only(network, array, space, aspace, starts + (even or ()), rules, t_start, o.time_limit_s, str(e))
    if (below := _cap_floor_proof(tables, array, rules, t_start)) is not None:  # in milliseconds, before any pass
        return below
    v0 = 1 if m.virtual else 0
    if len(tables.lim):  # a cap or a memory limit can bind: starts that may keep it
        starts = starts + _cheap_plans(network, array, space, aspace, rules, o.time_limit_s * EVEN_SEED_SHARE, deadline,
                                       even)
    starts = tuple(_VirtualSource.plan(m.cols, p) if v0 else p for p in starts if aspace.contains(p))
    clock.mark("tables")
    equal, equal_s, best = _first_incumbent(m, tables, graph, Q, deadline, starts)
    best_bound, best_w, seen, fw = -1, None, [], None  # -1: no bound (no bounding pass ended)
    if equal is not None:
        best = _penalised(m, graph, Q, best, equal[0], t_start + o.time_limit_s * PENALTY_SHARE)
        clock.mark("starts")
        best_bound, best_w, best, seen, fw = _dual(m, graph, Q, o, deadline, best, equal[1])
    clock.mark("bound")
    # the beam passes below find the plans; the descent from the incumbent's types only (not once past the deadline)
    best = best if time.perf_counter() > deadline else _descend(m, tables, best, seen if fw is None else [], deadline)
    clock.mark("plans")
    bound = Fraction(best_bound, Q * tables.s) if best_bound >= 0 else None
    proven = bound is not None and bound >= best[0]
    explored, note = 0, None
    if not proven and fw is not None and time.perf_counter() - t_start < o.time_limit_s:
        proven, best, explored, note = _label_passes(m, tables, graph, best, best_w, Q, o, t_start, fw, clock)
    report = (time.perf_counter() - t_start, explored, equal_s, tuple(clock.phases))
    return _answer(m, best, bound, proven, report, deadline, o.time_limit_s, note)


def _label_passes(m: _Model, tables, graph, best, best_w, Q: int, o: JointOptions, t_start: float, fw, clock):
    """The beam passes (plans, no proof), then the proof from the best of them: (proven, best, labels
    kept, note); a pass that would pass the memory limit (``LabelsMemory``) ends them, the best plan so
    far kept and the note saying why (None: none did)."""
    try:
        for beam in o.graph_beams:
            best = _pareto_graph(m, tables, graph, best, best_w, Q, o, t_start, fw, beam)[1]
        clock.mark("beam")
        proven, best, explored = _pareto_graph(m, tables, graph, best, best_w, Q, o, t_start, fw)
    except LabelsMemory as e:
        clock.mark("labels")
        return False, best, 0, f"the joint solver stopped: {e}"
    clock.mark("labels")
    return proven, best, explored, None


def _answer(m: _Model, best, bound: Fraction | None, proven: bool, report: tuple, deadline: float,
            limit_s: float, note: str | None = None) -> Solution:
    """OPTIMAL when proven, else FEASIBLE with the bound (None: no bounding pass ended); without a
    plan INFEASIBLE (proven) or UNKNOWN with the bound, and the reason when ``deadline`` passed, or
    ``note`` (a label pass stopped by the memory limit). ``report``: (wall, explored, equal_s, phases)."""
    if best[1] is None:  # under limits: none kept (proven), or none found yet
        sol = split_solution("joint", Status.INFEASIBLE if proven else Status.UNKNOWN, None, None,
                             None if proven else bound, *report)
        if not proven and time.perf_counter() > deadline:
            sol.info["reason"] = f"the time limit ({limit_s:.3g} s left to it) ran out before a plan was found"
        elif not proven and note is not None:
            sol.info["reason"] = note
        return sol
    status = Status.OPTIMAL if proven else Status.FEASIBLE
    sol = split_solution("joint", status, m.plan(best[1][1 if m.virtual else 0:]), best[0],
                         best[0] if proven else bound, *report)
    if not proven and time.perf_counter() > deadline:
        cut = "before a bounding pass ended: the best plan so far, no bound" if bound is None else \
            "before the gap closed: the best plan and bound so far"
        sol.info["reason"] = f"the time limit ({limit_s:.3g} s left to it) ran out {cut}"
    elif not proven and note is not None:
        sol.info["reason"] = note
    return sol


def _setup(network: Network, array: ArraySpec, space: Space, aspace: AlphaSpace, types_allowed, rules, Q: int,
           deadline: float):
    """(model, tables, graph) of ``joint_uneven``, the limits' terms in the tables; TimeoutError once
    past ``deadline`` (the column tables are checked per layer and per edge); TablesMemory, before any
    table is built, where their estimate (``joint_memory.solver_bytes``) passes ``joint_columns.MAX_BYTES``."""
    net = _VirtualSource.of(network)
    m = _Model(net, array, space, aspace, types_allowed, 0 if rules is None else rules.weight_copies)
    blks = blocks(net)
    caps, memory = limits_of(m, array, rules)
    check_tables(m, blks, len(caps), memory is not None)
    tables = _Tables(m, _scale(m, Q), deadline=deadline)
    graph = _Graph(tables, blks)
    _limit_terms(m, tables, network, array, rules, (caps, memory), deadline)
    return m, tables, graph


class TablesMemory(Exception):
    """The joint solver's tables would pass its memory limit (``check_tables``); the message says so."""


def check_tables(m: _Model, blks, caps: int = 0, memory: bool = False) -> None:
    """TablesMemory where the estimate of its tables and its passes' (``joint_memory.solver_bytes``: a graph's
    block and link tables too; ``blks``: the graph's blocks; ``caps`` capped levels and a ``memory`` limit: their
    tables and terms, ``with_limits``) passes ``joint_columns.MAX_BYTES``."""
    if (need := solver_bytes(m, blks, caps, memory)) > (limit := joint_columns.MAX_BYTES):
        raise TablesMemory(f"the joint solver's tables and passes would take {need / 2**20:,.0f} MiB by its estimate, "
                           f"beyond its memory limit of {limit / 2**20:,.0f} MiB (joint_columns.MAX_BYTES; a coarser "
                           "alpha grid fits)")


def _starts_only(network: Network, array: ArraySpec, space: Space, aspace: AlphaSpace, starts: tuple[Plan, ...],
                 rules: SplitRules | None, t_start: float, limit_s: float, why: str | None = None) -> Solution:
    """``joint_uneven`` cut before its tables were built: the least of ``starts`` in the declared
    space that keeps ``rules`` (each scored by the evaluator), FEASIBLE with no bound; else UNKNOWN.
    ``why``: what cut it (None: the time limit)."""
    best = None
    for plan in starts:
        if not aspace.contains(plan) or any(t not in space.types for row in plan.types for t in row):
            continue
        ev = evaluate_split(network, array, plan, 0 if rules is None else rules.weight_copies)
        if rules is not None and rules.violations(ev, array, plan):  # (pins, forbids, caps, memory)
            continue
        if best is None or ev.step_time_s < best[0]:
            best = (ev.step_time_s, plan)
    why = why or f"the time limit ({limit_s:.3g} s left to it) ran out while the joint solver built its tables"
    wall = time.perf_counter() - t_start
    if best is None:
        sol = split_solution("joint", Status.UNKNOWN, None, None, None, wall, 0)
        sol.info["reason"] = why + ": no plan"
        return sol
    sol = split_solution("joint", Status.FEASIBLE, best[1], best[0], None, wall, 0)
    sol.info["reason"] = why + ": the best of its starting plans, no bound"
    return sol


EVEN_SEED_SHARE = 0.2  # of the time limit: the even exact solve under the limits (``_cheap_plans``)


def _cheap_plans(network: Network, array: ArraySpec, space: Space, aspace: AlphaSpace, rules: SplitRules,
                 even_limit_s: float, deadline: float | None = None, even: tuple[Plan, ...] | None = None) -> tuple:
    """Under limits, starts that may keep them: the even exact solve's plan under the same limits
    where 1/2 is declared (``solvers.uneven_seed``, within ``even_limit_s``: a plan that keeps them
    whenever the even split has one the even solve finds; ``even``, where the caller solved it
    already: not solved again, its plan among the starts it gave), the level DP's plan
    (``solvers.uneven_levels``) and the alpha search's from it (``search_level_alphas``: rules
    broken first, then the step time); each only while the clock is before ``deadline`` (None: always),
    and each stops there with its plan so far."""
    from .uneven import search_level_alphas
    from .uneven_levels import levels_uneven
    from .uneven_seed import even_under_limits

    if even is None:
        plan = even_under_limits(network, array, space, aspace, rules, even_limit_s)
        seeds = () if plan is None else (plan,)
    else:  # (the caller's: among ``starts`` already where it has a plan)
        seeds = ()
    try:
        if deadline is not None and time.perf_counter() > deadline:
            return seeds
        dp = levels_uneven(network, array, space, aspace, rules=rules, deadline=deadline).plan  # (cut: the equal split)
        if dp is None or (deadline is not None and time.perf_counter() > deadline):
            return seeds if dp is None else seeds + (dp,)
        return seeds + (dp, search_level_alphas(network, array, dp, aspace, rules=rules, deadline=deadline).plan)
    except Refused:  # e.g. a level the level DP cannot take
        return seeds


PENALTY_ROUNDS = 12  # weighted DPs at most in ``_penalised``
# of the time limit (from the start): ``_penalised`` ends by then, leaving the rest to the bound
PENALTY_SHARE = 0.5


def _penalised(m: _Model, graph: _Graph, Q: int, best, step: Fraction, deadline: float):
    """Under limits, plans that tend to keep them (incumbents, ``better``): the weighted DP with each
    limit term weighted by mu_r times the step time ``step`` over its limit, mu_r doubled while the
    plan is over that limit and lowered while under (a heuristic: floats size the weights only).
    Until ``deadline`` (a pass cut by it is dropped): each pass takes seconds on wide graphs
    (4 s on ResNet-50, tpu-mix-16, accpar 1/16)."""
    t = graph.t
    if not len(t.lim):
        return best
    share = t.lnode[:, 4:, :].astype(float) / np.maximum(t.lim, 1)[None, :, None]  # (L, limits, n)
    mu, base, top = np.ones(len(t.lim)), float(Q * step * t.s), 2**50 // len(t.node)  # top: a plan's sum stays below INF
    for _ in range(PENALTY_ROUNDS):
        W = _Weighted(t, _weights(Q // 2, Q // 2, Q))
        for l, n in enumerate(W.node):  # noqa: E741
            W.node[l] = np.minimum(n + np.minimum((mu @ share[l]) * base, top).astype(np.int64), INF)
        try:
            _, G, tbls = graph.forward(None, W=W, deadline=deadline)
        except TimeoutError:
            return best
        cols = graph.backtrack(W, G, tbls)
        del W, G, tbls  # (before the next pass: one weighting's tables alive, ``joint_memory.LIVE_WEIGHTINGS``)
        best = better(m, best, cols)
        used = sum(share[l][:, c] for l, c in enumerate(cols))  # noqa: E741  (node terms: the caps' edges left out)
        mu = np.where(used > 1, mu * 2, mu * 0.7)
    return best


def limits_of(m: _Model, array: ArraySpec, rules: SplitRules | None) -> tuple[dict[int, int], tuple[int, int] | None]:
    """The caps (level -> most units a side sends) and the memory limit (most footprint units on a leaf
    of each side, None: none) of ``with_limits``, in table units, floored ({} and None without either)."""
    if rules is None or not rules.couples_layers:
        return {}, None
    U = m.costs.unit
    caps = {h: floor(c * U) for h in range(m.H) if (c := rules.cap_elements(array, h)) is not None}
    lm = rules.leaf_memory_bytes
    return caps, None if lm is None else tuple(floor(x / array.dtype_bytes * U) for x in (lm[0], lm[-1]))


def _limit_terms(m: _Model, t: _Tables, network: Network, array: ArraySpec, rules: SplitRules | None,
                 limits: tuple, deadline: float | None = None) -> None:
    """Under caps or memory limits (``limits``: ``limits_of``'s): their terms in the labels (``with_limits``)
    and ``m.keeps``, the exact check of a plan (the evaluator's violations)."""
    if rules is None or not rules.couples_layers:
        return
    v0 = 1 if m.virtual else 0
    with_limits(t, *limits, deadline)
    if not len(t.lim):  # none can bind
        return

    def keeps(cols) -> bool:
        plan = m.plan(cols[v0:])
        return not rules.violations(evaluate_split(network, array, plan, rules.weight_copies), array, plan)

    m.keeps = keeps


def _cap_floor_proof(t: _Tables, array: ArraySpec, rules: SplitRules | None, t_start: float) -> Solution | None:
    """INFEASIBLE where a cap is below its floor (``joint_floor.cap_floors``: the least its level's
    busiest side can be), ``info["reason"]`` naming the first such cap and its floor; None where none is."""
    from explorer.core.constraints import format_bytes

    from .joint_floor import bound_bytes, cap_floors

    if rules is None or not t.extra:
        return None
    levels = [h for h in range(t.m.H) if rules.cap_elements(array, h) is not None]
    for h, (least, most) in zip(levels, cap_floors(t, levels)):
        if least > most:
            sol = split_solution("joint", Status.INFEASIBLE, None, None, None, time.perf_counter() - t_start, 0)
            sol.info["reason"] = (f"every plan's busiest side at level {h} is at least "
                                  f"{format_bytes(bound_bytes(t, least, array.dtype_bytes))} (its floor: half the least "
                                  "sum of both sides' amounts, or either side's least; docs/uneven.md)")
            return sol
    return None


def _no_type_left(network: Network, array: ArraySpec, types_allowed) -> bool:
    """Whether the pins and forbids leave some layer no type at some level (the columns of such a
    layer all cost INF, and a DP over them would return one anyway)."""
    return types_allowed is not None and any(not types_allowed(h, l) for h in range(array.levels)
                                             for l in range(len(network.layers)))  # noqa: E741


class _Clock:
    def __init__(self, t0: float):
        self.t, self.phases = t0, []

    def mark(self, name: str) -> None:
        now = time.perf_counter()
        self.phases.append((name, round(now - self.t, 3)))
        self.t = now


def _plan_columns(m: _Model, plan: Plan) -> list[int] | None:
    """The columns of a plan of the declared space (None if a type is not in the space, or a column is
    one its layer may not take: ``_Model.allowed``, its node's types and the pins and forbids; such a
    start is no plan of the model, and ``better`` scores columns without asking)."""
    C = m.cols
    out = []
    for l in range(len(m.net.layers)):  # noqa: E741
        try:
            a = C.alphas.index(plan.alphas[0][0][l])
            top = C.types.index(plan.types[0][l]) * C.A + a
            tau = 0
            for h in range(1, m.H):
                tau = tau * C.K + C.types.index(plan.types[h][l])
        except ValueError:
            return None
        if not m.allowed(l, top * C.n_tau + tau):
            return None
        out.append(top * C.n_tau + tau)
    return out


def _equal_best(m: _Model, graph: _Graph, Q: int, deadline: float):
    """The least step time with every alpha 1/2 (a linear objective then: S_0 = S_1 and V_0 - V_1 is
    the plan-independent compute difference); a floored DP, scored exactly. Without 1/2 on the grid:
    the least plan of that weighting over every alpha (a start only). None when cut by ``deadline``."""
    C = m.cols
    half = Fraction(1, 2)
    idx = np.arange(C.n)
    mask = (idx // C.n_tau) % C.A == C.alphas.index(half) if half in C.alphas else None
    slow = 0 if m.peak[0] <= m.peak[1] else 1
    w = (Q // 2, Q - Q // 2, Q if slow == 0 else 0, Q if slow == 1 else 0)
    try:
        W, G, tb = graph.forward(w, mask, deadline=deadline)
    except TimeoutError:
        return None
    cols = graph.backtrack(W, G, tb)
    return step_of(m.components(cols)), cols


def _dual(m: _Model, graph: _Graph, Q: int, o: JointOptions, deadline: float, best, first):
    """Kelley's cutting planes on (l, m) from the plan of columns ``first``; (best bound in units
    Q*s, -1 when the first pass is cut by ``deadline``; its (l, m), best plan seen that keeps the
    limits; the passes' plans; the best bound's pass: (weighting, forward values, its rests at the cut
    nodes, ``_cut_backward``, on graphs, else None; the columns alive))."""
    graph_ = not all(b.direct for b in graph.blocks)
    if graph_:  # a descended incumbent first: the first pass's tables skip what cannot beat it
        best = _descend(m, graph.t, best, [], deadline)
    # first weights: V's at the balance of the two kinds' peaks (mu * V0 + (1 - mu) * V1 flat in alpha)
    lam, mu = Q // 2, round(Q * m.peak[0] / (m.peak[0] + m.peak[1]))
    best_bound, best_w, fw = -1, (lam, mu), None
    seen = [tuple(float(x) for x in m.components(first))]
    plans = []
    last = graph.blocks[-1].exit
    alive: dict = {}
    for k in range(o.dual_rounds):
        cap = Q * ceil(best[0] * graph.t.s) if graph_ else None
        try:
            W, G, tbls = graph.forward(_weights(lam, mu, Q), alive=alive, cap=cap, deadline=deadline)
        except TimeoutError:  # the bound so far
            break
        g = int(G[last].min())
        cols = graph.backtrack(W, G, tbls)
        # graphs: the rests at the cut nodes (the fixing below, the label passes), the block tables dropped
        Hc = _cut_backward(graph, W, tbls) if graph_ else None
        del tbls
        plans.append(cols)
        comp = m.components(cols)
        best = better(m, best, cols, step_of(comp))
        if g > best_bound:  # (``alive``, shared with ``fw``, is narrowed below in place)
            best_bound, best_w, fw = g, (lam, mu), (W, G, Hc, alive)
        if time.perf_counter() > deadline:  # the pass's bound kept; no descent, fixing or next weights
            break
        if graph_:  # reduced-cost fixing at the cut nodes (graphs), from a descended incumbent
            if k == 0:
                best = _descend(m, graph.t, best, [cols], deadline)
            thr = Q * ceil(best[0] * graph.t.s)
            for n in Hc:
                ok = G[n] + Hc[n] < thr
                alive[n] = ok if n not in alive else alive[n] & ok
        if time.perf_counter() > deadline:  # (Kelley's LP: its first import and solve, 0.1-0.2 s)
            break
        seen.append(tuple(float(x) for x in comp))
        nl, nm, zhat = _kelley(seen, Q)
        # on graphs the label pass proves: stop once Kelley's estimate is within graph_dual_tol
        tol = 1 + (o.graph_dual_tol * best_bound if graph_ else 0)
        if (nl, nm) == (lam, mu) or zhat * Q * graph.t.s <= best_bound + tol or time.perf_counter() > deadline:
            break
        lam, mu = nl, nm
        del W, G, Hc  # before the next pass: its weighting and ``fw``'s, no third (``joint_memory.LIVE_WEIGHTINGS``)
    return best_bound, best_w, best, plans, fw


def accpar_uneven(network: Network, array: ArraySpec, space: Space, aspace: AlphaSpace,
                  time_limit_s: float | None = None) -> Solution:
    """AccPar-style heuristic (``check --uneven``'s "accpar"): one DP over the columns with each
    layer's and edge's cost its busier side (``_PerTermMax``), the plan scored exactly. No bound
    (FEASIBLE); same scope as ``joint_uneven``. ``time_limit_s`` (None: none) bounds the tables'
    build and the DP (2.5-5 s on ResNet-50 at 1/16): cut, UNKNOWN with no plan and the reason."""
    t0 = time.perf_counter()
    deadline = None if time_limit_s is None else t0 + time_limit_s
    check_scope(network, array, aspace, "accpar")
    net = _VirtualSource.of(network)  # several sources: as in joint_uneven
    m = _Model(net, array, space, aspace)
    blks = blocks(net)
    try:
        check_tables(m, blks)
    except TablesMemory as e:
        sol = split_solution("accpar", Status.UNKNOWN, None, None, None, time.perf_counter() - t0, 0)
        sol.info["reason"] = str(e)
        return sol
    try:
        tables = _Tables(m, _scale(m, 1), deadline=deadline)
        graph = _Graph(tables, blks)
        W = _PerTermMax(tables)
        _, G, tbls = graph.forward(None, W=W, deadline=deadline)
    except TimeoutError:
        sol = split_solution("accpar", Status.UNKNOWN, None, None, None, time.perf_counter() - t0, 0)
        sol.info["reason"] = f"the time limit ({time_limit_s:.3g} s left to it) ran out before its DP ended"
        return sol
    cols = graph.backtrack(W, G, tbls)
    value = step_of(m.components(cols))
    plan = m.plan(cols[1:] if m.virtual else cols)
    return split_solution("accpar", Status.FEASIBLE, plan, value, None, time.perf_counter() - t0, 0)
