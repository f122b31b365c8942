"""The least value a cap or the memory limit of an uneven run could take with every other rule kept:
what an infeasible run suggests, as the even split's (``cpsat.explain_infeasible``,
``core.constraints.limit_suggestion``). CP-SAT over the exact DP's columns and the one integer
table (``core.split_costs``): minimise the busiest side of the cap's level (or the largest leaf
footprint) under the pins, forbids and the other limits; a value only when CP-SAT proves it."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace
from fractions import Fraction

from explorer.core.array import ArraySpec
from explorer.core.names import given_as
from explorer.core.network import Network
from explorer.core.partition import Space
from explorer.core.split_costs import SplitCosts, VectorLayout
from explorer.core.split_rules import SplitRules
from explorer.core.uneven import AlphaSpace, check_array, check_network

from .uneven import _columns, _pareto_insert, is_path, unit_limits


@dataclass(frozen=True)
class LeastLimit:
    """One cap (``level``) or the memory limit (``level`` None) of an infeasible run: the least value
    (bytes) that would admit a plan with every other rule kept (None: none proven, e.g. the others
    conflict too), and whether it conflicts alone (no plan keeps to it, whatever the other rules)."""

    level: int | None
    need_bytes: Fraction | None
    alone: bool
    why: str = ""  # need_bytes None: why ("time", "states", "int64": the search gave up; "none": no value admits a plan)


def least_limits(network: Network, array: ArraySpec, space: Space, aspace: AlphaSpace, rules: SplitRules,
                 time_limit_s: float = 10.0) -> list[LeastLimit]:
    """Per cap, then the memory limit (``rule_names``' order): its ``LeastLimit``. Empty on a graph
    (the columns need a chain) or where pins and forbids leave a layer no column; CP-SAT gets
    ``time_limit_s`` shared among the solves, and what it does not prove is left out (None, False).
    The memory limit is left out (the list ends before it) where it cannot bind (each layer's
    largest footprint summed keeps to it: it takes no part in a conflict). Under ``MIN_SEARCH_S``
    nothing is searched (its set-up alone takes seconds on AlexNet): each cap, and a memory limit
    given (``memory_set``), gave up for time. Each limit takes an equal part of what is left; where
    other rules bind, half of it, and the limit alone what that left."""
    check_array(array)
    check_network(network)
    if not is_path(network):
        return []
    H, c = array.levels, rules.constraints
    memory = rules.leaf_memory_bytes is not None
    if time_limit_s < MIN_SEARCH_S:
        return [LeastLimit(x.level, None, False, "time") for x in c.caps] + (
            [LeastLimit(None, None, False, "time")] if memory and c.memory_set else [])
    deadline = time.perf_counter() + time_limit_s
    columns = _columns(network, space, aspace, H, rules)
    free = _columns(network, space, aspace, H, SplitRules(rules.objective))
    if not all(columns):
        return []
    costs = SplitCosts(network, H, aspace.values(), VectorLayout(H, memory), rules.weight_copies)
    lay = costs.layout
    tried = [(cap.level, cap.bytes, replace(rules, constraints=replace(c, caps=tuple(x for x in c.caps if x is not cap))),
              [p + s for (h, _), p in lay.pos.items() if h == cap.level for s in (0, 1)]) for cap in c.caps]
    every = unit_limits(array, costs, rules)
    own = _own(costs, columns)
    if memory and _binding(costs, own, [(p, most) for p, most in every if p >= lay.mem]):
        tried.append((None, min(rules.leaf_memory_bytes), rules, list(range(lay.mem, lay.size))))
    out = []
    for k, (level, limit, others, positions) in enumerate(tried):
        share = (deadline - time.perf_counter()) / (len(tried) - k)  # this limit's part of what is left
        if share <= 0:  # the set-up or the limits before it took the time
            out.append(LeastLimit(level, None, False, "time"))
            continue
        limits = _binding(costs, own, [(p, most) for p, most in unit_limits(array, costs, others) if p not in positions])
        twice, ends = bool(c.pins or c.forbids or limits), time.perf_counter() + share  # twice: the limit alone next
        proven, least, why = _least(costs, columns, positions, limits, share / 2 if twice else share)
        need = None if least is None else costs.to_elements(least) * array.dtype_bytes
        need = need if need is not None and need > limit else None
        why = why or ("none" if need is None else "")
        if twice:  # the limit alone (no pins, forbids or other limits), in what the first left of the share
            proven, least, _ = _least(costs, free, positions, [(p, most) for p, most in every if p in positions],
                                      max(ends - time.perf_counter(), 0.01))
        out.append(LeastLimit(level, need, proven and (least is None or costs.to_elements(least) * array.dtype_bytes > limit),
                              why))
    return out


MIN_SEARCH_S = 1.0  # seconds below which ``least_limits`` searches nothing


def _own(costs: SplitCosts, columns) -> list[dict]:
    return [{col: costs.layer(l, col) for col in cols} for l, cols in enumerate(columns)]  # noqa: E741


def _binding(costs: SplitCosts, own, limits) -> list[tuple[int, int]]:
    """The limits that can bind: a footprint (a layer's own part, no edge part) whose largest sum is
    within its limit never does; every side limit is kept."""
    return [(p, most) for p, most in limits
            if p < costs.layout.pos_end or sum(max(v[p] for v in d.values()) for d in own) > most]


MAX_STATES = 200_000  # Pareto vectors kept at a layer by ``_least_pareto`` (beyond: no suggestion)
BEAM = 4  # states per column of ``_least_pareto``'s first, incomplete pass (its incumbent)
CACHE_PAIRS = 500_000  # column pairs up to which the passes share their projected edge vectors (memory)


def _least_pareto(costs: SplitCosts, columns, own, positions: list[int], limits, deadline: float) -> tuple[bool, int | None, str]:
    """``_least`` where sides count (a cap's level, or caps kept): the exact DP's Pareto fronts per
    last column over the few components that matter (the positions and the limits), a partial plan
    over a limit dropped (every component is a sum of non-negative parts). A first pass keeping
    ``BEAM`` states per column (the least largest position; more than two components) finds a plan of some value U; the exact
    pass then keeps only partial plans whose positions are all below U (a plan of value U exists,
    so any better one has every position below it), which leaves it far fewer states.
    (False, None, "time") past the deadline, (False, None, "states") beyond ``MAX_STATES``."""
    comps = sorted(set(positions) | {p for p, _ in limits})
    top = [comps.index(p) for p in positions]
    most = [(comps.index(p), m) for p, m in limits]
    pairs = sum(len(a) * len(b) for a, b in zip(columns, columns[1:]))
    cache = {} if pairs <= CACHE_PAIRS else None
    if len(comps) <= 2:  # a two-component front is a staircase, small: the exact pass alone
        return _fronts(costs, columns, own, comps, top, most, deadline)
    done, found, why = _fronts(costs, columns, own, comps, top, most, deadline, BEAM, cache)
    if not done:
        return False, None, why
    if found is None:  # no plan within the limits even among the beam's: the exact pass says whether any
        return _fronts(costs, columns, own, comps, top, most, deadline, None, cache)
    done, better, why = _fronts(costs, columns, own, comps, top, most + [(i, found - 1) for i in top], deadline,
                                None, cache)
    return (True, found if better is None else better, "") if done else (False, None, why)


def _fronts(costs: SplitCosts, columns, own, comps: list[int], top: list[int], most, deadline: float,
            beam: int | None = None, cache: dict | None = None) -> tuple[bool, int | None, str]:
    """The Pareto DP of ``_least_pareto`` on the components ``comps`` within ``most`` (index, most
    units): (finished, the least largest component at ``top`` over the plans left (None: none),
    why it did not finish: "time" or "states").
    ``beam``: keep at most that many states per column, those of least largest ``top`` component
    (not exact: a plan's value, an upper bound on the least). ``cache``: the projected edge
    vectors into each column, kept for the next pass (None: computed in each)."""
    def proj(v):
        return tuple(v[p] for p in comps)

    def within(w):
        return all(w[i] <= m for i, m in most)

    def value(w):
        return max(w[i] for i in top)

    fronts = {c: [(w, None)] for c, v in own[0].items() if within(w := proj(v))}
    for l in range(1, len(columns)):  # noqa: E741
        new = {}
        for b in columns[l]:
            ob, front = proj(own[l][b]), []
            edges = None if cache is None else cache.get((l, b))
            if edges is None:
                edges = [proj(e) for e in costs.edges_into(l - 1, columns[l - 1], b)]
                if cache is not None:
                    cache[(l, b)] = edges
            for a, pe in zip(columns[l - 1], edges):
                for v, _ in fronts.get(a, ()):
                    w = tuple(x + y + z for x, y, z in zip(v, pe, ob))
                    if not within(w):
                        continue
                    if beam is None:
                        _pareto_insert(front, w, None)
                    else:  # no dominance test (quadratic in the front): the least values are kept below
                        front.append((w, None))
            if front:
                new[b] = front if beam is None else sorted(front, key=lambda f: (value(f[0]), sum(f[0])))[:beam]
            if time.perf_counter() > deadline:  # per column: a layer's fronts can take minutes
                return False, None, "time"
        fronts = new
        if sum(map(len, fronts.values())) > MAX_STATES:
            return False, None, "states"
    return True, min((value(w) for f in fronts.values() for w, _ in f), default=None), ""


def _depth(lay: VectorLayout, used: list[int]) -> int:
    """How many levels, from the top, the components at ``used`` depend on: a side of a level-h
    group, on levels 0..h (the shares its ancestors give it, its own type and alpha); a leaf's
    compute or footprint, on every level."""
    if any(p < lay.leaves or p >= lay.pos_end for p in used):  # a leaf's compute or footprint
        return lay.H
    return 1 + max((h for (h, _), p in lay.pos.items() if p in used or p + 1 in used), default=lay.H - 1)


def _least(costs: SplitCosts, columns, positions: list[int], limits, time_limit_s: float) -> tuple[bool, int | None, str]:
    """The least, over the plans of ``columns`` within ``limits`` (position, most units), of the
    largest component at ``positions`` (table units): (proven, that value (None: no plan), why
    not proven: "time", "states" or "int64"), within ``time_limit_s`` from the call, the model's
    build included (it took 5 s past a 25 s share at load 9)."""
    ends = time.perf_counter() + time_limit_s
    from ortools.sat.python import cp_model

    own = _own(costs, columns)
    limits = _binding(costs, own, limits)
    used = sorted(set(positions) | {p for p, _ in limits})
    depth = _depth(costs.layout, used)
    if depth < costs.levels:  # the levels below leave these sides as they are: one column per prefix
        columns = [list({col[:depth]: col for col in reversed(cols)}.values()) for cols in columns]
        own = _own(costs, columns)
    if any(p < costs.layout.pos_end for p in used):
        return _least_pareto(costs, columns, own, positions, limits, ends)
    if time.perf_counter() >= ends:  # the tables took the time (1.4 s each at load 11): no model built
        return False, None, "time"
    g = math.gcd(*(v[p] for vecs in own for v in vecs.values() for p in used)) or 1
    ub = max(sum(max(v[p] for v in vecs.values()) for vecs in own) // g for p in used)
    span = max(sum(v[p] // g for vecs in own for v in vecs.values()) for p in used)  # a comp row's coefficients
    if max(ub * len(used), ub + span) >= 2**62:  # CP-SAT checks every row's sum of |coefficient| x bound
        return False, None, "int64"  # beyond CP-SAT's int64: no suggestion rather than a wrong one
    from .uneven_cpsat import column_choices  # (no pair Booleans: nothing reads the edges)

    m = cp_model.CpModel()
    x = column_choices(m, columns)
    comp = {p: m.NewIntVar(0, ub, "") for p in used}
    for p in used:
        m.Add(comp[p] == sum(v[p] // g * b[key] for vecs, b in zip(own, x) for key, v in vecs.items() if v[p]))
    for p, most in limits:
        m.Add(comp[p] <= most // g)
    top = m.NewIntVar(0, ub, "least")
    for p in positions:
        m.Add(top >= comp[p])
    m.Minimize(top)
    from .cpsat import run_solver  # (``cpsat.run_solver``: where tests simulate a Ctrl-C)
    from .cpsat_run import new_solver

    if time.perf_counter() >= ends:  # the model's build took the time
        return False, None, "time"
    solver = new_solver(1, time_limit_s=ends - time.perf_counter())

    status, interrupted = run_solver(solver, m)
    if interrupted:  # Ctrl-C: the user's, not a time limit's (CP-SAT's own handler would swallow it)
        raise KeyboardInterrupt
    if status == cp_model.INFEASIBLE:
        return True, None, ""
    if status == cp_model.MODEL_INVALID:  # the guard above covers int64: anything else is a bug in this model
        raise RuntimeError(f"uneven least-resource model invalid: {solver.SolutionInfo()}")
    return (True, solver.Value(top) * g, "") if status == cp_model.OPTIMAL else (False, None, "time")


GAVE_UP = {"time": "its search ran out of time (the {s:.2g} s the run's {time_limit} left it, shared by the limits; "
                   "a longer {time_limit} gives more)",
           "time of": "its search ran out of time (the {s:.2g} s the run's {run:g} s limit left it, shared by the "
                      "limits): try {time_limit} {more:g}",
           "states": "its search outgrew its state limit ({n:,} Pareto states a layer)",
           "int64": "its search's sums exceed CP-SAT's int64 range",
           "none": "no value of it alone admits a plan (the other rules conflict with it)"}


def gave_up_text(least: list[LeastLimit], limit_s: float, run_s: float | None = None) -> str | None:
    """Why no smallest feasible value was found, per limit ('cap at level 1: its search ran out of
    time ...'), from ``least_limits``' answer (``limit_s``: the time it was given, what the run's
    limit ``run_s`` left it; with ``run_s``, run out of time, the limit to give: ``MORE_TIME`` times
    it); None where it says nothing."""
    def why(x: LeastLimit) -> str:
        key = "time of" if x.why == "time" and run_s is not None else x.why
        return GAVE_UP[key].format(s=limit_s, n=MAX_STATES, time_limit=given_as("--time-limit"), run=run_s,
                                   more=math.ceil(MORE_TIME * (run_s or 0)))

    parts = [f"{'memory' if x.level is None else f'cap at level {x.level}'}: " + why(x) for x in least if x.why in GAVE_UP]
    return "; ".join(parts) or None


# the limit a search that ran out of time suggests, times the run's: vgg-a on 4 TPU-v2 + 4 v3 at
# 25 GB/s, memory 0.05 GiB: the search took 11.5 s at load 6.5, past the 8.4 s the default 10 s left it
MORE_TIME = 3
