"""Proven optima under link caps and the memory limit, on chains and graphs.

A cap bounds one level's cost c_h (a sum of the exact DP's level-h terms); the memory limit
bounds the sum over layers of a footprint that depends only on each layer's type vector. Both
are resources g_k <= C_k that the exact DP cannot carry in its state, so:

1. Lagrangian bound. For multipliers lam_k >= 0 (integers, in units of 1/D of the objective's
   weights), the exact DP (chain or graph elimination) with level weights D*w_h + lam_h (and
   lam_mem * footprint per layer) gives min_p D*f(p) + sum_k lam_k g_k(p); hence for every
   feasible plan  f(p) >= ceil((that minimum - sum_k lam_k C_k) / D),  a proven lower bound at
   every multiplier (exact integers throughout; D is chosen so that int64 cannot overflow).
   Every plan the DP returns is re-scored from the tables; the feasible ones are incumbents.
   The plan that least uses a resource proves infeasibility when even it breaks the limit.
   Multipliers move one resource at a time by cutting planes on the concave dual.
2. Closing the gap exactly. With the best multipliers, min-marginals (chains: forward +
   backward values; graphs: ``exact.graph_marginals``) give the least Lagrangian cost of a plan
   through each (node, vector); only vectors within D*(U-1) + sum lam_k C_k (U: the incumbent)
   can lie on a better feasible plan. On chains a label-setting pass (a constrained shortest
   path) over them carries each partial plan's exact objective and resources, prunes with the
   Lagrangian (at the best multipliers and at 0.5x and 2x them), objective-only and
   per-resource completion bounds, and drops dominated labels; a beam pass first finds an
   incumbent, then passes aim below targets between the bound and the incumbent (a pass that
   finds nothing raises the bound to its target; one that finds a plan has found the optimum).
   On graphs the label pass is a Pareto elimination (``solvers.labels``) over those vectors.
   Where labels outgrow their limits (``MAX_LABELS``, ``MAX_GRAPH_ROWS``) CP-SAT searches the
   0-1 model restricted to the vectors, in rounds that tighten the restriction as the incumbent
   improves. ``--time-limit`` bounds the whole solve (``time_budget``). Status ``optimal`` only
   when a pass finished (bound == objective); else ``feasible`` with the best proven bound,
   ``unknown`` without a plan -- never a claim it cannot back.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from explorer.core.comm import advance
from explorer.core.constraints import format_bytes
from explorer.core.costs import plan_level_units
from explorer.core.plan import Plan
from explorer.core.problem import Problem
from explorer.core.solution import Solution, SolveOptions, Status, plan_solution

from .exact import chain_backtrack, chain_backward, chain_forward, graph_marginals, graph_optimum, vectors_plan
from .labels import LabelsOverflow, least_plan
from .vectors import VectorCosts

MAX_LABELS = 1_000_000  # labels kept at one layer before the exact pass gives up
MAX_GRAPH_ROWS = 5_000_000  # rows of one factor in the graph label pass before it gives up
MAX_PAIRS = 60_000_000  # label x vector candidates at one layer before it gives up
CHUNK = 2_000_000  # candidates formed at once
MAX_EVALUATIONS = 60
EARLY_STOP = 0.2  # graphs: stop moving the multipliers when less than this share of the gap is left to gain
CPSAT_ROUND = 15.0  # seconds per CP-SAT round before the model is restricted again
DEFAULT_TIME_LIMIT = 60.0  # seconds for a whole constrained solve without --time-limit (what CP-SAT gets is what is left)
BEAM = 64
MORE_AFTER = 20_000  # labels formed at one layer before the label pass prunes with SCALES too
SCALES = (0.5, 2.0)  # further multipliers (x the best) the exact label pass prunes with
REPAIR_STEPS = 200  # single-node moves a repair may take
LOCAL_STARTS = 3  # cheapest limit-breaking plans a local search repairs (and the incumbent)  # labels per layer in the heuristic pass that looks for a good incumbent  # relaxed DPs spent on the multipliers


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
        W, ex = self.weights(lam), self.extras(lam)
        return self.optimum(W, ex, record=True)

    def optimum(self, W, ex, record: bool = False):
        """(value, plan, forward values): on chains the forward values; on graphs, with ``record``,
        the elimination's (value, vectors, steps) for ``graph_marginals`` at the same weights."""
        if self.graph:
            steps: list | None = [] if record else None
            value, vectors, _ = graph_optimum(self.vc, W, ex, steps)
            plan = None if vectors is None else vectors_plan(self.vc, vectors)
            return value, plan, (value, vectors, steps) if record else None
        alphas = chain_forward(self.vc, W, ex)
        value = int(alphas[-1].min())
        return value, vectors_plan(self.vc, chain_backtrack(self.vc, alphas, W)), alphas

    def backward(self, lam) -> list[np.ndarray]:
        """The relaxed chain DP's backward values at multipliers ``lam`` (kept: label passes reuse them)."""
        key = tuple(lam)
        if key not in self._backward:
            self._backward[key] = chain_backward(self.vc, self.weights(lam), self.extras(lam))
        return self._backward[key]

    def objective_backward(self) -> list[np.ndarray]:
        """The unweighted-by-multipliers chain DP's backward values (the objective alone), kept."""
        if None not in self._backward:
            self._backward[None] = chain_backward(self.vc)
        return self._backward[None]

    def bound(self, value: int, lam) -> int:
        rhs = value - sum(x * r.limit for x, r in zip(lam, self.res))
        return -((-rhs) // self.D)


def solve_constrained(problem: Problem, options: SolveOptions, vc: VectorCosts | None = None) -> Solution:
    t0 = time.perf_counter()
    ch = _Chain(problem, vc)
    info: dict = {"type_vectors_per_layer": ch.vc.dom[0].V, "method": "lagrangian"}
    if options.hint is not None:
        ch.offer(options.hint)
    # unconstrained optimum: optimal when it satisfies every limit
    lam = [0] * len(ch.res)
    value, plan, alphas = ch.relaxed(lam)
    if value >= ch.vc.big:
        info["method"] = "proof"
        return _result(problem, ch, None, t0, info, "pins and forbids leave no plan", infeasible=True)
    ch.offer(plan)
    best = (ch.bound(value, lam), list(lam), alphas)  # (bound, multipliers, forward values)
    if _closed(ch, best[0]):
        info["method"] = "graph-elimination" if ch.graph else "chain-dp"
        return _result(problem, ch, best[0], t0, info)
    completion, refused = _least_resources(problem, ch, t0, info)
    if refused is not None:
        return refused
    if ch.graph:  # the free optimum repaired: a feasible plan near it starts the multiplier search close
        ch.offer(_local_search(ch, plan))
    best, closed = _raise_dual(ch, best)
    if closed:
        return _result(problem, ch, best[0], t0, info)
    info["lagrangian_bound"] = best[0]
    info["multipliers"] = [x / ch.D for x in best[1]]
    if ch.graph:  # (chains get their incumbent from the beam pass)
        _polish_graph(ch)
    if _closed(ch, best[0]):
        return _result(problem, ch, best[0], t0, info)
    if ch.graph:
        return _close_with_cpsat(problem, ch, best[1], best[0], t0, info, options, solved=best[2])
    return _close_with_labels(problem, ch, best, completion, t0, info, options)


def time_budget(options: SolveOptions) -> float:
    """Seconds a constrained solve may take: ``--time-limit`` bounds the whole solve, else
    ``DEFAULT_TIME_LIMIT``. The Lagrangian phase and label passes run to their end (each is a
    bounded number of exact DPs); the CP-SAT rounds that close a graph's gap get what is left,
    and a run stopped by the limit reports ``feasible`` with its proven bound and gap."""
    return float(options.time_limit_s) if options.time_limit_s is not None else DEFAULT_TIME_LIMIT


def _closed(ch: _Chain, bound: int) -> bool:
    """Whether the incumbent meets the bound (a proven optimum)."""
    return ch.incumbent is not None and ch.incumbent[0] == bound


def _least_resources(problem: Problem, ch: _Chain, t0: float, info: dict) -> tuple[list, Solution | None]:
    """The least use of each resource: proves infeasibility (the infeasible Solution, second), and
    gives the far side of each search; on chains, each resource's backward values (completion bounds)."""
    completion = []
    for k, r in enumerate(ch.res):
        W, ex = ch.resource_weights(k)
        least, p, _ = ch.optimum(W, ex)
        if least > r.limit:
            info["method"] = "least-resource"
            info.update(_explanation(problem, ch, k, least))
            reason = f"{r.name} cannot hold: every plan needs more"
            return completion, _result(problem, ch, None, t0, info, reason, infeasible=True)
        ch.offer(p)
        if not ch.graph:
            completion.append(chain_backward(ch.vc, W, ex))
    return completion, None


def _raise_dual(ch: _Chain, best: tuple) -> tuple[tuple, bool]:
    """Line searches over the resources in rounds, from ``best`` (bound, multipliers, forward
    values); returns the best evaluated, and whether the incumbent met it (stopping at once)."""
    best_bound, best_lam, best_alphas = best
    for _ in range(3):  # rounds over the resources
        before = list(best_lam)
        for k in range(len(ch.res)):
            for b, l_, a in _line_search(ch, k, best_lam, best_bound):
                if b > best_bound:
                    best_bound, best_lam, best_alphas = b, list(l_), a
            if _closed(ch, best_bound):
                return (best_bound, best_lam, best_alphas), True
        if best_lam == before or len(ch.res) == 1:
            break
    return (best_bound, best_lam, best_alphas), False


def _polish_graph(ch: _Chain) -> None:
    """Repair the cheapest plans that break a limit, polish the incumbent (a better incumbent
    prunes more in the restricted search)."""
    starts = [p for _, _, p in sorted((t for t in ch.plans if t[0] > 0), key=lambda t: t[1])[:LOCAL_STARTS]]
    if ch.incumbent is not None:
        starts.append(ch.incumbent[1])
    for p in starts:
        ch.offer(_local_search(ch, p))


def _close_with_labels(problem: Problem, ch: _Chain, best: tuple, completion: list, t0: float, info: dict,
                       options: SolveOptions) -> Solution:
    """Close a chain's gap with labels: a beam pass for a good incumbent, then the exact pass; CP-SAT
    over the vectors the bounds leave when the labels outgrow their limit."""
    best_bound, best_lam, best_alphas = best
    info["method"] = "lagrangian+labels"
    _label_setting(ch, best_lam, best_alphas, completion, beam=BEAM)  # a good incumbent first
    lo, step = best_bound, None
    while not _closed(ch, lo):
        target = None
        if ch.incumbent is not None:  # aim below the incumbent first: a pass prunes harder the lower it aims
            U = ch.incumbent[0]
            step = max(1, (U - lo) // 4) if step is None else 2 * step
            target = lo + step if lo + step < U else None
        found = _label_setting(ch, best_lam, best_alphas, completion, target=target)
        if found is None:  # the labels outgrew their limit: CP-SAT over the vectors the bounds leave
            info["labels"] = "outgrew the label limit"
            W, ex = _wx(ch, best_lam)
            marg = [a + b for a, b in zip(best_alphas, chain_backward(ch.vc, W, ex))]
            return _close_with_cpsat(problem, ch, best_lam, lo, t0, info, options, marg)
        info["label_passes"] = info.get("label_passes", 0) + 1
        if found == "found" or target is None:  # the least plan below the target (or the incumbent): optimal
            if found == "none" and ch.incumbent is None:
                return _result(problem, ch, None, t0, info, "no plan satisfies the constraints", infeasible=True)
            return _result(problem, ch, ch.incumbent[0], t0, info)
        lo = target  # no feasible plan below the target
    return _result(problem, ch, lo, t0, info)


def _explanation(problem: Problem, ch: _Chain, k: int, least: int) -> dict:
    """When the problem's only cap (or memory limit) is infeasible by itself, pins and forbids aside,
    name it as the conflict and say the least limit that would do (what ``cpsat.explain_infeasible``
    says, without its CP-SAT runs); otherwise nothing (the caller asks CP-SAT)."""
    if len(ch.res) != 1:
        return {}
    r, cons = ch.res[k], problem.constraints
    free = _Chain(problem.with_constraints(type(cons)(caps=cons.caps, memory_bytes=cons.memory_bytes,
                                                       weight_copies=cons.weight_copies)))
    if free.optimum(*free.resource_weights(k))[0] <= r.limit:
        return {}  # pins or forbids are part of the conflict
    need = Fraction(least * problem.array.dtype_bytes, problem.tables.unit_per_element)
    if r.level is not None:
        text = (f"the smallest feasible cap at level {r.level} is {format_bytes(need)} "
                f"({float(need):.0f} bytes): try --cap {r.level}={math.ceil(need)}B")
    else:
        gib = float(need) / 2**30
        digits = max(0, 3 - math.floor(math.log10(gib)))  # four significant digits, rounded up
        text = (f"the smallest feasible memory is {format_bytes(need)} per accelerator "
                f"({gib:.4g} GiB): try --memory {math.ceil(gib * 10**digits) / 10**digits}")
    return {"conflict": [r.name], "suggestion": text}


def _close_with_cpsat(problem: Problem, ch: _Chain, lam: list[int], bound: int, t0: float, info: dict,
                      options: SolveOptions, marg: list[np.ndarray] | None = None, solved: tuple | None = None) -> Solution:
    """Keep only the type vectors whose Lagrangian min-marginal (``marg``; on graphs computed here)
    leaves room for a better feasible plan, and let CP-SAT search that restricted model; each
    better plan it finds tightens the restriction before the next round. Used on graphs, and on
    chains whose label pass outgrew its limit."""
    if marg is None:  # (graphs: from the multipliers' elimination record when kept)
        _, marg = graph_marginals(ch.vc, *_wx(ch, lam), solved=solved)
    slack = sum(x * r.limit for x, r in zip(lam, ch.res))
    if ch.graph and ch.incumbent is not None:
        done = _close_with_graph_labels(problem, ch, marg, slack, t0, info)
        if done is not None:
            return done
    info["method"] = info["method"] + "+cpsat" if not ch.graph else "lagrangian+cpsat"
    search = _Restricted(problem, ch)
    deadline = t0 + time_budget(options)
    rounds, improved = 0, True
    while True:
        U = ch.incumbent[0] if ch.incumbent is not None else None
        if U is not None:  # a better plan uses only vectors whose min-marginal fits under U
            survivors = [np.flatnonzero(m <= ch.D * (U - 1) + slack) for m in marg]
            info["vectors_left"] = int(sum(len(s) for s in survivors))
            if any(len(s) == 0 for s in survivors):
                return _result(problem, ch, U, t0, info)  # no vector of some node fits a better plan
            search.restrict(survivors)
        left = deadline - time.perf_counter()
        if left <= 0.05:
            break
        rounds += 1
        status = search.solve(U, min(left, CPSAT_ROUND) if improved else left, options)
        info["cpsat_status"], info["cpsat_rounds"] = search.solver.status_name(status), rounds
        done, bound = _after_round(problem, ch, search, status, U, bound, t0, info)
        if done is not None:
            return done
        improved = ch.incumbent is not None and (U is None or ch.incumbent[0] < U)
    info["reason"] = "CP-SAT did not finish the restricted search within its time limit; raise --time-limit"
    return _result(problem, ch, bound, t0, info, proven=False)


def _close_with_graph_labels(problem: Problem, ch: _Chain, marg: list[np.ndarray], slack: int, t0: float,
                             info: dict) -> Solution | None:
    """Labels on the graph (``solvers.labels``): the least feasible plan below the incumbent over the
    vectors whose min-marginal leaves room for one; the incumbent is optimal when there is none.
    None when the labels outgrow ``MAX_GRAPH_ROWS`` (CP-SAT then searches those vectors)."""
    U = ch.incumbent[0]
    survivors = [np.flatnonzero(m <= ch.D * (U - 1) + slack) for m in marg]
    info["vectors_left"] = int(sum(len(s) for s in survivors))
    info["method"] = "lagrangian+labels"
    if any(len(s) == 0 for s in survivors):
        return _result(problem, ch, U, t0, info)
    resources = [ch.resource_weights(k) for k in range(len(ch.res))]
    try:
        vectors = least_plan(ch.vc, survivors, resources, [r.limit for r in ch.res], U, MAX_GRAPH_ROWS)
    except LabelsOverflow:
        info["labels"] = "outgrew the label limit"
        return None
    if vectors is not None:
        f, g = ch.offer(vectors_plan(ch.vc, vectors))
        if f >= U or any(x > r.limit for x, r in zip(g, ch.res)):
            raise AssertionError("constrained exact: the graph label pass's plan does not re-score below the incumbent")
    return _result(problem, ch, ch.incumbent[0], t0, info)


def _after_round(problem: Problem, ch: _Chain, search: _Restricted, status, U: int | None, bound: int, t0: float,
                 info: dict) -> tuple[Solution | None, int]:
    """Take a CP-SAT round's plan as a candidate incumbent; the Solution when the round settles the
    question (else None), and the bound raised by the restricted search's own bound."""
    from ortools.sat.python import cp_model

    if status == cp_model.INFEASIBLE:
        if U is None:
            return _result(problem, ch, None, t0, info, "no plan satisfies the constraints", infeasible=True), bound
        return _result(problem, ch, U, t0, info), bound  # nothing in the model, so nothing better than U
    if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        ch.offer(search.plan())
    if status == cp_model.OPTIMAL:  # every plan better than U lies in the model: min(U, its optimum)
        return _result(problem, ch, ch.incumbent[0], t0, info), bound
    if status == cp_model.FEASIBLE:
        restricted = search.lower_bound()
        bound = max(bound, restricted if U is None else min(U, restricted))
    return None, bound


class _Restricted:
    """The CP-SAT model of the formulation, with the cells no surviving vector uses fixed to 0
    (fixings only accumulate), and the solver of its latest round."""

    def __init__(self, problem: Problem, ch: _Chain):
        from .cpsat import to_cp_model
        from .formulation import build

        self.problem, self.ch = problem, ch
        self.f = build(problem)
        self.model, self.xs, _ = to_cp_model(self.f)
        self.fixed: set[int] = set()
        self.allowed: set | None = None
        self.solver = None

    def restrict(self, survivors: list[np.ndarray]) -> None:
        self.allowed = allowed = _allowed_cells(self.problem, self.ch, survivors)
        for key, var in self.f.x.items():
            if key not in allowed and var not in self.fixed:
                self.model.add(self.xs[var] == 0)
                self.fixed.add(var)

    def solve(self, U: int | None, seconds: float, options: SolveOptions):
        """One round, hinted with the incumbent when it lies in the model; returns the status."""
        from ortools.sat.python import cp_model

        from .formulation import assignment

        ch = self.ch
        self.model.clear_hints()
        if U is not None and _cells(self.problem, ch.incumbent[1]) <= self.allowed:
            for var, val in zip(self.xs, assignment(self.problem, self.f, ch.incumbent[1])):
                self.model.add_hint(var, val)
        self.solver = solver = cp_model.CpSolver()
        solver.parameters.num_workers = options.workers or 2
        solver.parameters.random_seed = options.seed
        solver.parameters.max_time_in_seconds = seconds
        return solver.solve(self.model)

    def plan(self) -> Plan:
        from .formulation import extract_plan

        return extract_plan(self.problem, self.f, lambda v: self.solver.value(self.xs[v]))

    def lower_bound(self) -> int:
        return self.solver.response_proto.inner_objective_lower_bound * self.f.objective_gcd


def _wx(ch: _Chain, lam):
    return ch.weights(lam), ch.extras(lam)


def _cells(problem: Problem, plan: Plan) -> set:
    """The formulation's (layer, level, count state, type) cells a plan uses."""
    types, out = problem.tables.types, set()
    counts = [problem.tables.states(0)[0]] * problem.num_layers
    for h, row in enumerate(plan.types):
        out |= {(n, h, counts[n], types.index(t)) for n, t in enumerate(row)}
        counts = advance(counts, row)
    return out


def _allowed_cells(problem: Problem, ch: _Chain, survivors: list[np.ndarray]) -> set:
    """The formulation's (layer, level, count state, type) cells some surviving vector uses."""
    vc, tables = ch.vc, problem.tables
    allowed = set()
    for n, vecs in enumerate(survivors):
        d = vc.dom[n]
        for h in range(ch.H):
            states = tables.states(h)
            for ps, k in set(zip(d.pstate[h][vecs].tolist(), d.type_index[h][vecs].tolist())):
                allowed.add((n, h, states[ps], k))
    return allowed


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
        self.ins: list[list[int]] = [[] for _ in range(N)]
        self.outs: list[list[int]] = [[] for _ in range(N)]
        for e, (u, x) in enumerate(vc.edges):
            self.outs[u].append(e)
            self.ins[x].append(e)
        self.weightings = [(None, None)] + [ch.resource_weights(k) for k in range(len(ch.res))]
        self.cache: dict[int, list[np.ndarray]] = {}  # a node's terms depend on its neighbours' vectors only
        self.near = [{n} | {vc.edges[e][0] for e in self.ins[n]} | {vc.edges[e][1] for e in self.outs[n]}
                     for n in range(N)]

    def terms(self, n: int, W, extras) -> np.ndarray:
        vc, vectors = self.vc, self.vectors
        t = vc.intra_vec(n, W, None if extras is None else extras[n])
        for e in self.ins[n]:
            t = t + vc.edge_given_producer(e, vectors[vc.edges[e][0]], W)
        for e in self.outs[n]:
            t = t + vc.edge_given_consumer(e, vectors[vc.edges[e][1]], W)
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


def _line_search(ch: _Chain, k: int, lam: list[int], known: int | None = None):
    """Maximise the dual along lam_k (others fixed) by cutting planes.

    Every plan seen so far is a line F(p) + x * G(p), F = D f + sum_{j != k} lam_j (g_j - C_j),
    G = g_k - C_k; the dual along x is the lower envelope of all plans' lines, which the known
    lines overestimate. Evaluate where the known envelope peaks; stop when the relaxed optimum
    there lies on it, or when the incumbent meets the best bound (``known``: the bound at ``lam``,
    already evaluated). Returns the evaluated (bound, multipliers, forward values)."""
    out, tried = [], ({lam[k]} if known is not None else set())
    while ch.evaluations < MAX_EVALUATIONS:
        top = max([b for b, _, _ in out] + ([known] if known is not None else []), default=None)
        if top is not None and _closed(ch, top):
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
    if ch.graph and out and b <= max(t[0] for t in out):
        alphas = None  # (a graph's elimination record is kept for the best evaluation only)
    elif ch.graph:
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


@dataclass
class _LabelBounds:
    """What the label pass prunes with: the Lagrangian (multipliers ``lam``, backward values
    ``betas``, threshold ``T``), the objective-only completion (``obj_beta``, below the incumbent
    ``U``), each resource's completion against its limit, and the vectors that survive."""

    ch: _Chain
    lam: list[int]
    betas: list[np.ndarray]
    obj_beta: list[np.ndarray] | None
    completion: list[list[np.ndarray]]
    T: int | None
    U: int | None
    limits: list[int]
    res_intra: list[list[np.ndarray]]  # per resource, per layer: the resource's intra part of each vector
    survivors: list[np.ndarray]
    scales: tuple  # further multipliers (x lam) to prune with once the labels grow (``more``)
    _more: list | None = None

    def more(self, labels: int) -> list[tuple[list[int], list[np.ndarray], int]]:
        """(multipliers, backward values, threshold) besides lam: every multiplier gives a valid
        completion bound, and a label's best one depends on how much of each resource it has
        left; computed (one backward DP each) only once a layer's labels pass ``MORE_AFTER``."""
        if self._more is None and labels > MORE_AFTER and self.T is not None:
            ch, self._more = self.ch, []
            for s in self.scales:
                other = [int(x * s) for x in self.lam]
                if other != self.lam and any(other):
                    To = ch.D * (self.U - 1) + sum(x * r.limit for x, r in zip(other, ch.res))
                    self._more.append((other, ch.backward(other), To))
        return self._more or []


def _label_bounds(ch: _Chain, lam: list[int], alphas: list[np.ndarray], completion,
                  scales: tuple = (), target: int | None = None) -> _LabelBounds:
    vc, D = ch.vc, ch.D
    betas = ch.backward(lam)
    U = target if target is not None else ch.incumbent[0] if ch.incumbent is not None else None
    if U is not None:
        T = D * (U - 1) + sum(x * r.limit for x, r in zip(lam, ch.res))
        obj_beta = ch.objective_backward()
    else:
        T, obj_beta = None, None
    res_intra = []
    for k in range(len(ch.res)):
        Wk, exk = ch.resource_weights(k)
        res_intra.append([vc.intra_vec(n, Wk, None if exk is None else exk[n]) for n in range(ch.L)])
    survivors = []
    for n in range(ch.L):
        keep = alphas[n] + betas[n] <= T if T is not None else np.ones(vc.dom[n].V, dtype=bool)
        keep &= ~vc.blocked(n)
        survivors.append(np.flatnonzero(keep))
    return _LabelBounds(ch, lam, betas, obj_beta, completion, T, U, [r.limit for r in ch.res], res_intra, survivors,
                        scales)


def _label_setting(ch: _Chain, lam: list[int], alphas: list[np.ndarray], completion: list[list[np.ndarray]],
                   beam: int | None = None, target: int | None = None):
    """The exact pass over the vectors that can still lie on a feasible plan below ``target`` (by
    default the incumbent).

    Returns None when it gave up, "none" when no feasible plan lies below it (or exists), else
    "found" (the incumbent is then the least plan below it, hence the optimum). With ``beam`` it keeps only that many
    labels per layer (least Lagrangian bound first): a heuristic for incumbents, proving nothing.
    A layer's labels are (vectors, objectives, [resource amounts], parent labels)."""
    b = _label_bounds(ch, lam, alphas, completion, () if beam is not None else SCALES, target)
    vec = b.survivors[0]
    g = [b.res_intra[k][0][vec] for k in range(len(ch.res))]
    labels = _prune(b, 0, vec, ch.vc.intra_vec(0)[vec], g, np.full(len(vec), -1))
    vecs, parents = [labels[0]], [labels[3]]
    for n in range(1, ch.L):
        vec = labels[0]
        if len(vec) == 0:
            return "none"
        S = b.survivors[n]
        if beam is None and (len(vec) > MAX_LABELS or len(vec) * len(S) > MAX_PAIRS):
            return None
        labels = _dominance(*_extend(b, n, *labels[:3]))
        if beam is not None and len(labels[0]) > beam:
            top = np.argsort(_lagrangian(b, n, *labels[:3]), kind="stable")[:beam]
            labels = labels[0][top], labels[1][top], [x[top] for x in labels[2]], labels[3][top]
        vecs.append(labels[0])
        parents.append(labels[3])
    if len(labels[0]) == 0:
        return "none"
    _offer_best(ch, labels[1], vecs, parents)
    return "found"


def _extend(b: _LabelBounds, n: int, vec, f, g):
    """Layer n's labels from layer n-1's (``vec``, ``f``, ``g``): every label times every surviving
    vector, formed in chunks and pruned as they come; a new label's parent is its label's index."""
    ch, vc, nres = b.ch, b.ch.vc, len(b.ch.res)
    S = b.survivors[n]
    uv, inv = np.unique(vec, return_inverse=True)
    ef, eg = _pair_costs(ch, n - 1, uv, S)
    intra_f = vc.intra_vec(n)[S]
    intra_g = [b.res_intra[k][n][S] for k in range(nres)]
    parts = []
    step = max(1, CHUNK // max(1, len(S)))
    for i0 in range(0, len(vec), step):  # label x vector pairs in chunks, pruned as they come
        sl = slice(i0, i0 + step)
        m = len(vec[sl])
        nf = (f[sl, None] + ef[inv[sl]] + intra_f[None, :]).reshape(-1)
        ng = [(g[k][sl, None] + eg[k][inv[sl]] + intra_g[k][None, :]).reshape(-1) for k in range(nres)]
        nvec = np.tile(S, m)
        npar = np.repeat(np.arange(i0, i0 + m), len(S))
        parts.append(_prune(b, n, nvec, nf, ng, npar))
    vec = np.concatenate([p[0] for p in parts])
    f = np.concatenate([p[1] for p in parts])
    g = [np.concatenate([p[2][k] for p in parts]) for k in range(nres)]
    return vec, f, g, np.concatenate([p[3] for p in parts])


def _pair_costs(ch: _Chain, e: int, uv: np.ndarray, S: np.ndarray):
    """Edge e's objective and per-resource costs for every (producer vector in uv, consumer in S)."""
    vc = ch.vc
    pv = np.repeat(uv, len(S))
    pw = np.tile(S, len(uv))
    ef = vc.edge_pairs(e, pv, pw).reshape(len(uv), len(S))
    eg = []
    for k in range(len(ch.res)):
        Wk, _ = ch.resource_weights(k)
        eg.append(vc.edge_pairs(e, pv, pw, Wk).reshape(len(uv), len(S)))
    return ef, eg


def _offer_best(ch: _Chain, f: np.ndarray, vecs: list[np.ndarray], parents: list[np.ndarray]) -> None:
    """Follow the least-objective last label back through its parents; offer its plan, which must
    re-score to the label and satisfy every limit."""
    i = int(np.argmin(f))
    chosen = [0] * ch.L
    for n in range(ch.L - 1, -1, -1):
        chosen[n] = int(vecs[n][i])
        i = int(parents[n][i])
    fv, gv = ch.offer(vectors_plan(ch.vc, chosen))
    if fv != int(f.min()) or any(x > r.limit for x, r in zip(gv, ch.res)):
        raise AssertionError("constrained exact: the label pass's plan does not re-score to its label")


def _lagrangian(b: _LabelBounds, n: int, vec, f, g, lam=None, betas=None):
    """Each label's least scaled Lagrangian cost of a whole plan through it (at ``lam``, by default
    the best multipliers)."""
    lam, betas = (b.lam, b.betas) if lam is None else (lam, betas)
    scaled = b.ch.D * f + betas[n][vec]
    for k, x in enumerate(lam):
        if x:
            scaled = scaled + x * g[k]
    return scaled


def _prune(b: _LabelBounds, n: int, vec, f, g, parent):
    """The labels that every completion bound leaves (each test runs on the survivors of the last)."""

    def keep(mask, vec, f, g, parent):
        return vec[mask], f[mask], [x[mask] for x in g], parent[mask]

    vec, f, g, parent = keep(f < b.ch.vc.big, vec, f, g, parent)
    for k in range(len(g)):
        vec, f, g, parent = keep(g[k] + b.completion[k][n][vec] <= b.limits[k], vec, f, g, parent)
    if b.T is not None:
        vec, f, g, parent = keep(f + b.obj_beta[n][vec] <= b.U - 1, vec, f, g, parent)
        vec, f, g, parent = keep(_lagrangian(b, n, vec, f, g) <= b.T, vec, f, g, parent)
        for lam, betas, T in b.more(len(vec)):
            vec, f, g, parent = keep(_lagrangian(b, n, vec, f, g, lam, betas) <= T, vec, f, g, parent)
    return vec, f, g, parent


def _dominance(vec, f, g, parent):
    """Drop labels another label at the same vector matches or beats in objective and every resource."""
    if len(vec) <= 1:
        return vec, f, g, parent
    if len(g) == 1 and f.dtype != object:
        order = np.lexsort((g[0], f, vec))
        v, go = vec[order], g[0][order]
        rank = np.empty(len(go), dtype=np.int64)
        rank[np.argsort(go, kind="stable")] = np.arange(len(go))
        # running minimum of g within each vector's group: later groups get smaller offsets
        group = np.cumsum(np.r_[0, (v[1:] != v[:-1]).astype(np.int64)])
        key = rank + (group[-1] - group) * len(go)  # groups' keys are disjoint ranges, later ones lower
        prev = np.minimum.accumulate(key)
        keep = np.r_[True, key[1:] < prev[:-1]]  # the first of a group always passes
        idx = order[keep]
        return vec[idx], f[idx], [g[0][idx]], parent[idx]
    order = sorted(range(len(vec)), key=lambda i: (int(vec[i]), f[i], *(x[i] for x in g)))
    kept: list[int] = []
    start = 0
    for i in range(1, len(order) + 1):
        if i == len(order) or vec[order[i]] != vec[order[start]]:
            front: list[int] = []
            for j in order[start:i]:
                if not any(all(g[k][q] <= g[k][j] for k in range(len(g))) for q in front):
                    front.append(j)
            kept += front
            start = i
    idx = np.array(sorted(kept), dtype=np.int64)
    return vec[idx], f[idx], [x[idx] for x in g], parent[idx]


def _result(problem: Problem, ch: _Chain, bound: int | None, t0: float, info: dict, reason: str | None = None,
            infeasible: bool = False, proven: bool = True) -> Solution:
    wall = time.perf_counter() - t0
    info = dict(info, relaxed_solves=ch.evaluations)
    if infeasible:
        info["reason"] = reason
        return Solution("exact", Status.INFEASIBLE, None, None, None, None, wall, info)
    if ch.incumbent is None:
        info.setdefault("reason", "no plan found within the limits")
        return Solution("exact", Status.UNKNOWN, None, None, bound, None, wall, info)
    f, plan = ch.incumbent
    sol = plan_solution("exact", problem, plan, Status.FEASIBLE, wall, info=info)
    if sol.objective != f or problem.plan_violations_units(sol.level_units, plan.types):
        raise AssertionError("constrained exact: incumbent does not re-score as recorded")
    if bound is not None and bound > f:
        raise AssertionError(f"constrained exact: bound {bound} above a feasible plan's value {f}")
    status = Status.OPTIMAL if proven and bound == f else Status.FEASIBLE
    return Solution("exact", status, plan, f, bound, sol.level_units, wall, info)
