"""Solvers for uneven splits (``explorer.core.uneven``): an exact Pareto DP and the alpha search
(CP-SAT is ``solvers.uneven_cpsat``, brute force ``solvers.brute.solve_split``).

The derivation: docs/derivations.md, "Uneven splits: brute force, exact and CP-SAT".
"""

from __future__ import annotations

import math
import time
from dataclasses import replace
from fractions import Fraction
from itertools import product

from explorer.core.array import ArraySpec
from explorer.core.uneven import (
    MAX_FREE_CLASSES,
    AlphaSpace,
    FreeAlphas,
    alpha_space,
    check_array,
    check_network,
    split_units,
    whole_units,
)
from explorer.core.evaluate import evaluate_split
from explorer.core.errors import Refused
from explorer.core.names import given_as
from explorer.core.network import Network
from explorer.core.objective import Objective
from explorer.core.partition import Space
from explorer.core.split_costs import SplitCosts, VectorLayout, layout_for
from explorer.core.plan import Plan
from explorer.core.solution import Solution, Status, split_solution
from explorer.core.split_rules import TIME_ONLY, SplitRules
from explorer.core.units import format_count

from .deadline import Cut, past
from .uneven_bound import BOUND_COLUMN_S, BOUND_MAX_COLUMNS, CONVEX_MAX_COLUMNS, convex_bound, separable_bound
from .search_scorer import Scorer
from .uneven_blocks import best_on_grid as _best_on_grid, block_probes, grid_probes, refine_blocks
from .uneven_prune import SLOT, TUPLE, Pruner, greedy_plan, memory_estimate, plan_vector, time_score, traffic_score
from .uneven_tables import ColumnTables, TablesTooSlow


def _space_of(array: ArraySpec, alphas, free: FreeAlphas) -> AlphaSpace:
    """``alphas`` is a grid (declared with ``free``) or an AlphaSpace already."""
    return alphas if isinstance(alphas, AlphaSpace) else alpha_space(array, alphas, free)


# ---- the exact Pareto DP ----------------------------------------------------------------------


def _columns(network: Network, space: Space, aspace: AlphaSpace, H: int, rules: SplitRules = TIME_ONLY) -> list[list]:
    """Per layer, its columns: a (type, alpha per group) cell at every level, from the declared
    space and the types ``rules`` allow (offered by the node, pins, forbids); a grouped conv (an
    attention node with heads) keeps only the columns whose every side holds whole groups (heads)
    (``core.uneven.whole_units``: the rule is refused here, in the candidates, not in the network).
    A layer with no column leaves no plan."""
    rows = [aspace.level_rows(h) for h in range(H)]
    out = []
    for l, node in enumerate(network.layers):  # noqa: E741
        cells = [[(t, r) for t in rules.types(network, space, h, l) for r in rows[h]] for h in range(H)]
        out.append([c for c in product(*cells) if whole_units(node, [t for t, _ in c], [r for _, r in c])])
    return out


def _column_counts(network: Network, space: Space, aspace: AlphaSpace, H: int, rules: SplitRules) -> list[int]:
    """Per layer, how many columns ``_columns`` gives it, without building them: ``least_column_counts``,
    a grouped conv or an attention node with heads counted one by one (its whole-units columns)."""
    rows = [aspace.level_rows(h) for h in range(H)]
    out = least_column_counts(network, space, aspace, H, rules)
    for l, node in enumerate(network.layers):  # noqa: E741
        if split_units(node) is not None:
            cells = [[(t, r) for t in rules.types(network, space, h, l) for r in rows[h]] for h in range(H)]
            out[l] = sum(1 for c in product(*cells) if whole_units(node, [t for t, _ in c], [r for _, r in c]))
    return out




def least_column_counts(network: Network, space: Space, aspace: AlphaSpace, H: int, rules: SplitRules) -> list[int]:
    """Per layer, how many columns ``_columns`` gives it, counted without building or enumerating
    them: exact, but 1 for a layer whose columns must be enumerated to be counted (whole units), so
    that sums and products of them are lower bounds (a refusal on them is never wrong)."""
    rows = [aspace.row_count(h) for h in range(H)]
    return [math.prod(len(rules.types(network, space, h, l)) * rows[h] for h in range(H))  # noqa: E741
            if split_units(node) is None else 1 for l, node in enumerate(network.layers)]  # noqa: E741


def _columns_fit(network: Network, array: ArraySpec, space: Space, aspace: AlphaSpace, rules: SplitRules,
                 max_bytes: int) -> list[int]:
    """Refused before any column is built where the columns alone (each a tuple of its cells: the
    least ``memory_estimate`` counts for a column) exceed ``max_bytes``: ``--free all`` on a 4-level
    array of kinds has billions (lenet-c on tpu-mix-16 at grid 16: 2.9 G a layer; building them was
    killed for its memory). Else the least column counts, per layer."""
    least = least_column_counts(network, space, aspace, array.levels, rules)
    n = sum(least)
    need = n * (TUPLE + SLOT * 8)
    if need > max_bytes:
        raise Refused(f"exact (uneven splits): {format_count(n)} columns, at least {format_count((need + 2**19) // 2**20)} MiB before any table, "
                      f"beyond its limit of {max_bytes / 2**20:,.0f} MiB (a coarser {given_as('--alpha-grid')} or "
                      f"{given_as('--free')} unlike has fewer)")
    return least


def _chain_columns(network: Network, array: ArraySpec, space: Space, alphas, solver: str,
                   free: FreeAlphas = FreeAlphas.UNLIKE, rules: SplitRules = TIME_ONLY):
    """What the joint solvers start from: a checked chain (``is_path``), its levels H, layers L,
    the integer table of its columns (``core.split_costs``; its layout carries each leaf's
    footprint only where a memory limit can bind) and each layer's columns; Refused otherwise."""
    check_array(array)
    check_network(network)
    if not is_path(network):
        raise Refused(f"{solver} (uneven splits): chains only")
    H = array.levels
    aspace = _space_of(array, alphas, free)
    columns = _columns(network, space, aspace, H, rules)
    costs = _memory_costs(network, array, H, aspace, columns, rules)
    if costs is None:
        costs = SplitCosts(network, H, aspace.values(), layout_for(array, aspace), rules.weight_copies)
    return H, len(network.layers), costs, columns


def _memory_costs(network: Network, array: ArraySpec, H: int, aspace: AlphaSpace, columns,
                  rules: SplitRules) -> SplitCosts | None:
    """The table with each leaf's footprint in its vectors if some plan of these columns could
    exceed an accelerator's memory limit (each leaf's footprint summed over the layers' largest
    columns), else None: only then do the vectors carry it."""
    if rules.leaf_memory_bytes is None or any(not c for c in columns):
        return None
    costs = SplitCosts(network, H, aspace.values(), layout_for(array, aspace, True), rules.weight_copies)
    m = costs.layout.mem
    most = [0] * 2**H
    for l, cols in enumerate(columns):  # noqa: E741
        per = [costs.layer(l, c)[m:] for c in cols]
        most = [x + max(p[i] for p in per) for i, x in enumerate(most)]
    binds = any(costs.to_elements(x) * array.dtype_bytes > lim for x, lim in zip(most, rules.leaf_memory_bytes))
    return costs if binds else None


def is_path(network: Network) -> bool:
    """Whether every node reads the one before it and nothing else: a chain, where a join may
    sit too (an attention node over one fused QKV input); the Pareto DP and CP-SAT need no more."""
    return network.edges == tuple((i - 1, i) for i in range(1, len(network.layers)))


def _columns_plan(cols, H: int) -> Plan:
    """The plan whose layer l has column ``cols[l]``."""
    L = len(cols)
    return Plan(tuple(tuple(cols[l][h][0] for l in range(L)) for h in range(H)),  # noqa: E741
                      tuple(tuple(tuple(cols[l][h][1][g] for l in range(L)) for g in range(2**h))  # noqa: E741
                            for h in range(H)))


def _add(a, b):
    return tuple(x + y for x, y in zip(a, b))


def _dominated(v, others) -> bool:
    return any(all(o_i <= v_i for o_i, v_i in zip(o, v)) for o in others)


def _pareto_insert(front: list, vec, plan) -> None:
    if _dominated(vec, [f[0] for f in front]):
        return
    front[:] = [f for f in front if not all(v_i <= f_i for v_i, f_i in zip(vec, f[0]))]
    front.append((vec, plan))


def _steps(array: ArraySpec, costs: SplitCosts):
    """vec -> its step time in seconds, exact: the integer score of ``uneven_prune.time_score`` over its scale."""
    score = time_score(array, costs)
    return lambda vec: Fraction(score(vec), score.scale)


def _limits(array: ArraySpec, lay: VectorLayout, rules: SplitRules) -> list[tuple[int, Fraction]]:
    """(position, the most it may sum to): both sides of every capped level's pairs (cap / dtype),
    and each leaf's footprint where the vectors carry it (its limit / dtype). Every component is
    a sum of non-negative parts, so a partial plan over a limit stays over it."""
    out = []
    for (h, _), p in lay.pos.items():
        cap = rules.cap_elements(array, h)
        if cap is not None:
            out += [(p, cap), (p + 1, cap)]
    if lay.mem is not None:
        out += [(lay.mem + i, lim / array.dtype_bytes) for i, lim in enumerate(rules.leaf_memory_bytes)]
    return out


def _within(vec, limits) -> bool:
    return all(vec[p] <= most for p, most in limits)


# Bytes the exact DP may hold by its estimate (``uneven_prune.memory_estimate``: the columns, their
# completion bounds, the live Pareto states and, when pruning, the column tables, about 2 kB a
# column pair; bench/bench_exact_prune.py --pairs measures it within 1.5x), in explore --split and
# check --uneven alike. Its time grows with the column pairs (one
# re-layout vector each for the completion bounds): ``time_limit_s`` ends it, not a size limit.
EXACT_MAX_BYTES = 4 * 2**30


def table_sides(lay) -> int:
    """The side components of a column pair's re-layout vector (what the column tables hold a pair)."""
    return lay.pos_end - lay.leaves
# The least CPU seconds the exact path spends on one column pair before its Pareto DP can start:
# the column tables (``ColumnTables``: the pair's re-layout vector built in Python, a few operations
# per group of the array, then copied into numpy) and the completion bounds (``ColumnTables.rest``).
# Calibrated 2026-12-03 (22:45-23:16 UTC, load 2.7-7 on the 2 shared cores) with
# ``python bench/bench_exact_prune.py --tables --repeat 3 --large`` and ``--repeat 2`` (each case its
# own process, the least CPU kept): at least 2.54 us a pair at H = 2 (3 groups; 2.5-3.8 us over the
# cases and loads; trial 13's sfc at 1/16, 15.9 M pairs: 3.48 us, 55 s) and 9.37 us at H = 4 (15
# groups; 9.4-14.5 us). Divided by a safety factor of 1.5 for a quieter or faster machine (the
# quietest runs were 1.3x below the loaded ones) and fitted as PAIR_S + groups x PAIR_GROUP_S:
# 1.68 us a pair at H = 2, 6.0 us at H = 4. So a run that ends at once for them (``_short_of_time``)
# could not have built its tables, let alone a plan, within its limit. (Before: 0.5 us a pair and
# group, the tables not counted: 1.5 us at H = 2, 7.5 us at H = 4; trial 13's sfc, 23.9 s
# estimated, ran its 24-35 s limits out in the tables and returned the seed plan.)
PAIR_S = 0.6e-6
PAIR_GROUP_S = 0.36e-6
# A torus link window in a pair's vector (``VectorLayout(links=True)``: a free split below the top) adds
# its leaves' producer and consumer parts, in Python: ``bench_exact_prune.py --windows --repeat 2``
# (2026-12-04 04:40-04:50 UTC, load 8.5-9.4), each torus against its H-tree twin, the least CPU kept:
# 1.13-1.18 us more a pair and window at H = 2 (4 windows; sfc and lenet-c at 1/8: 7.5 and 6.6 us a
# pair against 2.8 and 2.1), 1.49-1.65 us at H = 4 (48 windows; 84-92 us a pair against 12).
# The least over 1.5, as PAIR_S.
PAIR_WINDOW_S = 0.75e-6


def exact_uneven(network: Network, array: ArraySpec, space: Space, alphas,
                 max_bytes: int = EXACT_MAX_BYTES, free: FreeAlphas = FreeAlphas.UNLIKE,
                 time_limit_s: float | None = None, rules: SplitRules = TIME_ONLY, prune: bool = True,
                 seeds: tuple[Plan, ...] = ()) -> Solution:
    """The proven optimum of a chain by the Pareto DP of the module docstring, under ``rules``
    (its objective; pins and forbids in the columns; a partial plan over a cap or a memory limit
    dropped): OPTIMAL, or INFEASIBLE (no plan keeps to them); Refused where its memory estimate
    exceeds ``max_bytes`` (before the DP or as its live states grow). At ``time_limit_s`` seconds:
    FEASIBLE with the greedy incumbent and a proven bound when the completion bounds are done
    (the time objective, pruning), else UNKNOWN (no plan; at once, ``info["reason"]``, when the
    column pairs cannot be done in time: ``_short_of_time``; or early, by the column tables' measured
    pace: both with the separable bound of ``solvers.uneven_bound`` where it is done in time). Under the traffic objective ties go to
    the least step time (``_exact_traffic``). ``prune``: drop the partial plans whose completion
    bound exceeds an incumbent's value or a limit (``solvers.uneven_prune``: the same answer, plan
    included; ``info["pruned"]`` counts them). ``seeds``: plans already known (a check's level DP,
    search and proportional plans; explore's equal-split and level DP plans, a generator computing
    them only when asked): a run stopped at the time limit returns the best of its incumbent and
    those within the space and the rules (``seeded``), never a worse plan."""
    t0 = time.perf_counter()
    least = _columns_fit(network, array, space, _space_of(array, alphas, free), rules, max_bytes)
    least_cols = [range(n) for n in least]  # what ``memory_estimate`` and ``_short_of_time`` read: the counts
    lay = layout_for(array, _space_of(array, alphas, free))  # the least layout (a memory limit that can bind adds to it)
    _tables_fit(memory_estimate(least_cols, lay.size, 0, 2 if rules.objective is Objective.TRAFFIC else 1,
                                table_sides(lay) if prune else 0), 0, max_bytes)  # a lower bound, at once
    if prune and is_path(network) and (short := _short_of_time(least_cols, array.levels, time_limit_s, window_count(lay))):
        # the least counts' pairs alone need more than the limit: ends at once, before any column is built
        sol = split_solution("exact", Status.UNKNOWN, None, None, None, time.perf_counter() - t0, 0,
                             objective=rules.objective)
        sol.info.update(reason=short, ended_at_once=pairs_need(least_cols, array.levels, window_count(lay)))
        if sum(least) <= BOUND_MAX_COLUMNS and not past(t0 + time_limit_s - sum(least) * BOUND_COLUMN_S):
            # few columns, and time left to build them: for the separable bound (their pairs never)
            _, _, costs, columns = _chain_columns(network, array, space, alphas, "exact", free, rules)
            sol = _bounded(sol, array, costs, columns, rules.objective, lambda: past(t0 + time_limit_s))
        return seeded(sol, network, array, _space_of(array, alphas, free), rules, seeds)
    H, L, costs, columns = _chain_columns(network, array, space, alphas, "exact", free, rules)
    aspace = _space_of(array, alphas, free)
    run = _Run(t0, time_limit_s, max_bytes, columns, costs.layout.size, rules.objective,
               table_sides(costs.layout) if prune else 0)
    try:
        run.check_memory(0)
        if prune and (short := _short_of_time(columns, H, time_limit_s, window_count(costs.layout))):
            sol = run.unknown(rules.objective, reason=short)
            sol.info["ended_at_once"] = pairs_need(columns, H, window_count(costs.layout))
            sol = _bounded(sol, array, costs, columns, rules.objective, run.expired)
            return seeded(sol, network, array, aspace, rules, seeds)
        sol = exact_run(array, costs, columns, unit_limits(array, costs, rules), run, rules.objective, prune)
    except MemoryLimit as err:
        return _memory_end(err, run, network, array, aspace, costs, columns, rules, seeds)
    return seeded(sol, network, array, aspace, rules, seeds)


def _memory_end(err: "MemoryLimit", run: "_Run", network: Network, array: ArraySpec, aspace: AlphaSpace,
                costs: SplitCosts, columns, rules: SplitRules, seeds) -> Solution:
    """The memory guard tripped after the columns were built (``MemoryLimit``: the column tables, their
    Python ints or the live Pareto states): the plan in hand, FEASIBLE, with a proven bound and
    ``info["memory_end"]`` (how many MiB the DP would need). The plan: the best of the greedy incumbent
    (``_stopped``'s answer, with its bound, where the Pareto DP itself tripped: ``run.held``; under the traffic
    objective's second pass, the first pass's plan with its proven least traffic as bound) and
    ``seeds``, each re-scored by ``evaluate_split`` (``seeded``); the bound: the higher of
    ``_stopped``'s and the separable one (``_bounded``, where done in time). OPTIMAL only where that
    bound meets the plan's value (a proof). Refused (``err``, one line) where no plan is in hand."""
    sol = run.held if run.held is not None else run.unknown(rules.objective)
    run.tables = run.rest = run.last = None  # freed before the bound and the seeds (the level DP may run)
    if sol.status is Status.OPTIMAL:  # the incumbent met the bound of the complete fronts: proven anyway
        return sol
    sol.info.update(reason=err.words(), memory_end=err.words())
    sol = _bounded(sol, array, costs, columns, rules.objective, run.expired)
    sol = seeded(sol, network, array, aspace, rules, seeds)
    if sol.plan is None:
        raise err
    if rules.objective is Objective.TIME and sol.status is Status.FEASIBLE and (sol.split_bound or 0) >= sol.split_value:
        return replace(sol, status=Status.OPTIMAL)  # the incumbent, no seed better, meets the raised bound: proven
    return sol


def seeded(sol: Solution, network: Network, array: ArraySpec, alphas, rules: SplitRules, seeds,
           solver: str = "exact") -> Solution:
    """A time-limited run's FEASIBLE plan (or an UNKNOWN run's none) replaced by the seed plan of
    least objective value (``rules.value``: step time or traffic) that beats it (in the declared
    space, within the rules), its proven bound kept (OPTIMAL when the two meet under the time
    objective; after an UNKNOWN run, the separable bound of an early end, ``_bounded``, if any),
    named ``solver`` (``app.split_solve.SeedPlans.floor``: every proving route's answer).
    ``seeds`` may be a generator: it is read only here."""
    if sol.status not in (Status.FEASIBLE, Status.UNKNOWN):
        return sol
    value, bound = sol.split_value, sol.split_bound
    if sol.status is Status.FEASIBLE and value is None:
        return sol
    best = None
    for plan in seeds:
        ev = evaluate_split(network, array, plan, rules.weight_copies)
        if not alphas.contains(plan) or (rules.side_constrained and not rules.feasible(ev, array, plan)):
            continue
        beat = best[0] if best is not None else value
        if beat is None or rules.value(ev) < beat:
            best = (rules.value(ev), plan)
    if best is None:
        return sol
    # optimal where a seed meets the bound, under the time objective only: under traffic, ties go to the
    # least step time, which a bound on the traffic does not settle
    met = rules.objective is Objective.TIME and bound is not None and best[0] <= bound
    status = Status.OPTIMAL if met else Status.FEASIBLE
    out = split_solution(solver, status, best[1], best[0], bound, sol.wall_s, sol.info.get("explored", 0),
                         objective=rules.objective)
    out.info.update({k: v for k, v in sol.info.items() if k not in out.info and k not in ("value", "bound")},
                    incumbent="a seed plan (the even split's optimum, the level DP's, the equal split's or the check's)")
    return out


def _bounded(sol: Solution, array: ArraySpec, costs: SplitCosts, columns, objective: Objective, expired) -> Solution:
    """An early end's ``sol`` with the bound of ``solvers.uneven_bound`` (every plan of ``columns``
    is at least it: the separable one; under the time objective the convex-combination one where it
    is higher, ``info["convex_bound"]``) where it is higher than ``sol``'s own bound (none without a
    plan; a memory end's ``_stopped`` bound), unchanged where it is not done before ``expired()``
    (the separable bound alone where the convex one is not)."""
    if objective is Objective.TRAFFIC:
        score, scale = traffic_score(costs.layout), costs.unit
    else:
        score = time_score(array, costs)
        scale = score.scale
    rows = [] if objective is Objective.TIME and sum(map(len, columns)) <= CONVEX_MAX_COLUMNS else None
    low = separable_bound(costs, columns, score, expired, rows)  # (keeping the layers' vectors for the convex one)
    convex = None if rows is None or low is None else convex_bound(array, costs, columns, expired, rows)
    if convex is not None and math.ceil(convex * scale) > low:  # a score is an integer: so is its bound
        low = math.ceil(convex * scale)
        sol.info["convex_bound"] = True
    if low is None or (sol.split_bound is not None and Fraction(low, scale) <= sol.split_bound):
        sol.info.pop("convex_bound", None)
        return sol
    sol.info["separable_bound"] = True
    if objective is Objective.TRAFFIC:
        sol.info["bound"] = Fraction(low, scale)
        return sol
    return replace(sol, bound_s=Fraction(low, scale))


def unit_limits(array: ArraySpec, costs: SplitCosts, rules: SplitRules) -> list[tuple[int, int]]:
    """``_limits`` in the table's units (floored: a plan's integer sum is within iff within these)."""
    return [(p, math.floor(most * costs.unit)) for p, most in _limits(array, costs.layout, rules)]


def exact_run(array: ArraySpec, costs: SplitCosts, columns, limits, run: _Run, objective: Objective,
              prune: bool = True) -> Solution:
    """The Pareto DP of ``exact_uneven`` on its tables and limits, with ``run``'s clock and memory limit."""
    run.pruned = 0 if prune else None
    if prune and all(columns):
        try:
            run.tables = run.tables or ColumnTables(costs, columns, run.expired, run.deadline(), run.python_ints)
            run.rest = run.rest or run.tables.rest()
        except TablesTooSlow as slow:  # their pace, measured, says they cannot end in time: ends now
            why = f"{slow} ({pairs_floor(columns, costs.layout.H, window_count(costs.layout))})"
            sol = run.unknown(objective, reason=why)
            sol.info["ended_early"] = why
            return _bounded(sol, array, costs, columns, objective, run.expired)
        except TimeoutError:
            return run.unknown(objective)
    if objective is Objective.TRAFFIC:
        return _exact_traffic(array, costs, columns, limits, run)
    return _exact_time(array, costs, columns, limits, run)


def _exact_time(array: ArraySpec, costs: SplitCosts, columns, limits, run: "_Run") -> Solution:
    """The least step time (``exact_uneven``): the greedy incumbent, then the pruned Pareto DP; at the
    time limit the incumbent with the DP's bound so far (``_stopped``)."""
    pruner = inc = None
    if run.rest is not None:
        score = time_score(array, costs)
        pruner = Pruner(run.rest, limits, score)
        inc = greedy_plan(run.tables, columns, lambda v: v, lambda v: _within(v, limits), pruner, run.expired)
        if run.expired():
            return run.unknown(Objective.TIME)
        run.incumbent(pruner, score, inc)
        pruner.dropped = 0
    try:
        fronts, kept = _pareto_dp(run.tables or costs, columns, limits, lambda v: v, run, pruner=pruner)
    except MemoryLimit:  # its live states: the incumbent and the bound of the last complete fronts (``_memory_end``)
        run.note(pruner)
        run.held = _stopped(run, pruner, inc, costs.layout.H, 0)
        raise
    run.note(pruner)
    if fronts is None:
        return _stopped(run, pruner, inc, costs.layout.H, kept)
    step = _steps(array, costs)
    best = min(((step(vec), cols) for items in fronts.values() for vec, cols in items),
               key=lambda b: b[0], default=None)
    return _exact_solution(best, costs.layout.H, kept, run.t0, Objective.TIME, run.pruned)


def _stopped(run: "_Run", pruner, inc, H: int, kept: int) -> Solution:
    """The DP stopped by the time limit after the completion bounds and the incumbent: FEASIBLE with
    the incumbent and, as bound, the least of its score and the bounds of the last layer's complete
    fronts (every plan within the limits either beats the incumbent, so its prefix there is kept or
    dominated by a kept one of no larger bound, or does not); UNKNOWN without an incumbent."""
    if inc is None or run.last is None:
        return run.unknown(Objective.TIME, kept)
    l, fronts = run.last  # noqa: E741
    value = pruner.score(inc[0])
    low = min((pruner.score(pruner.bound(l, c, v)) for c, items in fronts.items() for v, _ in items), default=value)
    Q = pruner.score.scale
    status = Status.OPTIMAL if low >= value else Status.FEASIBLE  # no kept prefix can beat the incumbent
    sol = split_solution("exact", status, _columns_plan(inc[1], H), Fraction(value, Q),
                         Fraction(min(value, low), Q), time.perf_counter() - run.t0, kept, objective=Objective.TIME)
    sol.info["pruned"] = run.pruned
    return sol


def least_seconds(columns, H: int, windows: int = 0) -> float:
    """At least the CPU seconds of the column tables and completion bounds of ``columns`` (every
    column pair, ``PAIR_S`` plus ``PAIR_GROUP_S`` a group of the H levels' 2^H - 1, plus
    ``PAIR_WINDOW_S`` a torus link window of its vectors, ``window_count``)."""
    pairs = sum(len(a) * len(b) for a, b in zip(columns, columns[1:]))
    return pairs * (PAIR_S + (2**H - 1) * PAIR_GROUP_S + windows * PAIR_WINDOW_S)


def window_count(lay: VectorLayout) -> int:
    """The torus link windows a layout's vectors carry (``VectorLayout(links=True)``; 0 on an H-tree)."""
    return sum(len(ws) for ws in lay.windows.values())


def _short_of_time(columns, H: int, time_limit_s: float | None, windows: int = 0) -> str:
    """Why the run cannot end within ``time_limit_s`` (its column tables and completion bounds alone
    are estimated, at the fastest pace calibrated, ``least_seconds``, at more), or "": such a run ends
    at once, as it would at the limit (UNKNOWN: no plan, no proof), without spending the time."""
    if time_limit_s is None or least_seconds(columns, H, windows) <= time_limit_s:
        return ""
    return f"{pairs_need(columns, H, windows)}, beyond the {time_limit_s:.3g} s the time limit leaves"


def pairs_need(columns, H: int, windows: int = 0) -> str:
    """A run's column pairs and the least time estimated for them (``least_seconds``: the fastest pace
    calibrated, an estimate, not a measured need), in words (``info["ended_at_once"]``)."""
    pairs = sum(len(a) * len(b) for a, b in zip(columns, columns[1:]))
    return (f"{pairs:,} column pairs: their column tables and completion bounds are estimated at no less than "
            f"{_floor_words(columns, H, windows)}")


def pairs_floor(columns, H: int, windows: int = 0) -> str:
    """``pairs_need``'s estimate, as an early end by the tables' measured pace recalls it (the two agree:
    the estimate is the least, the measured pace the actual one)."""
    return f"estimated before the build, with the completion bounds, at no less than {_floor_words(columns, H, windows)}"


def _floor_words(columns, H: int, windows: int) -> str:
    pairs = sum(len(a) * len(b) for a, b in zip(columns, columns[1:]))
    least = least_seconds(columns, H, windows)
    return f"~{least:,.1f} s (the fastest pace calibrated, {least / max(pairs, 1) * 1e6:.2g} us a pair)"


def _tables_fit(need: int, states: int, max_bytes: int) -> None:
    """Refused where the exact DP's estimate ``need`` (with ``states`` live Pareto states) exceeds ``max_bytes``."""
    if need > max_bytes:
        what = (f"column tables, completion bounds and {states:,} Pareto states" if states
                else "column tables and completion bounds, before any Pareto state")  # (checked up front too)
        raise MemoryLimit(f"exact (uneven splits): about {need / 2**20:,.0f} MiB of {what}, beyond its limit of "
                          f"{max_bytes / 2**20:,.0f} MiB (a coarser {given_as('--alpha-grid')} has fewer columns)",
                          need, max_bytes)


class MemoryLimit(Refused):
    """The exact DP's memory guard (``_tables_fit``, ``_Run.python_ints``): its estimate ``need`` passes
    ``limit`` bytes. Up front (before any column is built, as the even ``exact``'s ``check_size``) a
    refusal; after, the plan in hand where there is one (``_memory_end``)."""

    def __init__(self, message: str, need: int, limit: int):
        super().__init__(message)
        self.need, self.limit = need, limit

    def words(self) -> str:
        """The end in words (``info["memory_end"]``)."""
        return (f"the exact DP stopped at its memory limit: it would need about {self.need / 2**20:,.0f} MiB, "
                f"beyond its limit of {self.limit / 2**20:,.0f} MiB")


class _Run:
    """One exact solve's clock, memory limit, completion bounds (``rest``, when pruning), pruned count,
    and the last layer whose Pareto fronts were complete when the time limit struck (``last``).
    ``check_memory(0)`` once its columns are built (``exact_uneven``)."""

    def __init__(self, t0: float, time_limit_s: float | None, max_bytes: int, columns, size: int,
                 objective: Objective, sides: int = 0):
        self.t0, self.time_limit_s, self.max_bytes = t0, time_limit_s, max_bytes
        self.columns, self.size, self.sides = columns, size, sides  # sides: the column tables' (0: none built)
        self.rest_copies = 2 if objective is Objective.TRAFFIC else 1  # the traffic pass projects a copy
        self.rest = None
        self.tables = None  # the column tables (``solvers.uneven_tables``), built once
        self.int_bits = None  # set once the tables are sure to be Python ints (``python_ints``)
        self.pruned = None  # None: no pruning
        self.last = None
        self.held = None  # what the Pareto DP holds when the memory guard trips in it (``_exact_time``, ``_least_traffic``)

    def incumbent(self, pruner, score, inc) -> None:
        """The pruner's incumbent check: the score of the greedy plan ``inc``, if any."""
        if inc is not None:
            pruner.checks.append((score, score(inc[0])))

    def expired(self) -> bool:
        return self.time_limit_s is not None and time.perf_counter() - self.t0 > self.time_limit_s

    def deadline(self) -> float | None:
        """The ``time.perf_counter()`` value of the time limit (None: none)."""
        return None if self.time_limit_s is None else self.t0 + self.time_limit_s

    def estimate(self, states: int) -> int:
        """``memory_estimate`` with ``states`` live Pareto states and the column tables as they are held."""
        return memory_estimate(self.columns, self.size, states, self.rest_copies, self.sides, self.int_bits)

    def check_memory(self, states: int) -> None:
        """Refused when the estimate with ``states`` live Pareto states exceeds the limit."""
        _tables_fit(self.estimate(states), states, self.max_bytes)

    def python_ints(self, bits: int) -> None:
        """The column tables are to be Python ints of up to ``bits`` bits (``ColumnTables``' ``on_ints``,
        before any is converted): Refused where they, so held, pass the limit."""
        self.int_bits = bits
        need = self.estimate(0)
        if need > self.max_bytes:
            raise MemoryLimit(f"exact (uneven splits): its column tables must be Python ints ({bits}-bit entries: "
                              f"int64 sums are not proven safe), about {need / 2**20:,.0f} MiB with the completion "
                              f"bounds, beyond its limit of {self.max_bytes / 2**20:,.0f} MiB (a coarser "
                              f"{given_as('--alpha-grid')} has fewer columns)", need, self.max_bytes)

    def note(self, pruner) -> None:
        if pruner is not None:
            self.pruned = (self.pruned or 0) + pruner.dropped

    def unknown(self, objective: Objective, kept: int = 0, reason: str = "") -> Solution:
        sol = split_solution("exact", Status.UNKNOWN, None, None, None, time.perf_counter() - self.t0, kept,
                             objective=objective)
        if reason:
            sol.info["reason"] = reason
        return sol


def _exact_solution(best, H: int, kept: int, t0: float, objective: Objective, pruned: int | None = None) -> Solution:
    wall = time.perf_counter() - t0
    if best is None:
        sol = split_solution("exact", Status.INFEASIBLE, None, None, None, wall, kept, objective=objective)
    else:
        sol = split_solution("exact", Status.OPTIMAL, _columns_plan(best[1], H), best[0], best[0], wall, kept,
                             objective=objective)
    if pruned is not None:
        sol.info["pruned"] = pruned
    return sol


def _exact_traffic(array: ArraySpec, costs: SplitCosts, columns, limits, run: _Run) -> Solution:
    """The least traffic, ties to the least step time (lexicographic), in two passes. Pass 1: the
    Pareto DP with compute out of the dominance (it does not count in the traffic): the least
    traffic T*. Pass 2: the DP on the whole vectors (compute too; both the traffic and the step
    time are non-decreasing in every component, so dominance keeps a lexicographic optimum),
    dropping every partial plan whose traffic so far exceeds T* (a lower bound on its end's);
    the least step time of the plans of traffic T*. Both passes count in ``kept``. When pruning
    (``run.rest``), pass 1 drops the partial plans whose traffic bound exceeds a greedy plan's,
    pass 2 those whose traffic bound exceeds T* or whose step-time bound exceeds the step time
    of pass 1's plan (a plan of traffic T*: the least step time among them is at most it)."""
    lay = costs.layout
    objective = Objective.TRAFFIC
    project = lambda v: (0,) * lay.leaves + v[lay.leaves:]  # noqa: E731
    traffic = traffic_score(lay)
    first = None
    if run.rest is not None:
        first = Pruner([{c: project(r) for c, r in rl.items()} for rl in run.rest], limits, traffic)
        inc = greedy_plan(run.tables, columns, project, lambda v: _within(v, limits), first, run.expired)
        if run.expired():
            return run.unknown(objective)
        run.incumbent(first, traffic, inc)
        first.dropped = 0
    fronts, kept = _pareto_dp(run.tables or costs, columns, limits, project, run, pruner=first)
    run.note(first)
    if fronts is None:
        return run.unknown(objective, kept)
    ends = [(traffic(vec), cols) for items in fronts.values() for vec, cols in items]
    if not ends:
        return _exact_solution(None, lay.H, kept, run.t0, objective, run.pruned)
    least = min(t for t, _ in ends)
    second = None
    if run.rest is not None:
        step = time_score(array, costs)
        second = Pruner(run.rest, limits, step)
        second.checks += [(traffic, least), (step, step(plan_vector(run.tables, next(c for t, c in ends if t == least))))]
    try:
        fronts, more = _pareto_dp(run.tables or costs, columns, limits, lambda v: v, run,
                                  keep=lambda v: traffic(v) <= least, pruner=second)
    except MemoryLimit:  # the least traffic is proven: its plan and bound stand (``_memory_end``)
        run.note(second)
        run.held = _least_traffic(run, next(c for t, c in ends if t == least), Fraction(least, costs.unit), lay.H, kept)
        raise
    run.note(second)
    kept += more
    if fronts is None:
        return run.unknown(objective, kept)
    seconds = _steps(array, costs)
    ends = [(seconds(vec), cols) for items in fronts.values() for vec, cols in items
            if traffic(vec) == least]
    _, cols = min(ends, key=lambda b: b[0])
    return _exact_solution((Fraction(least, costs.unit), cols), lay.H, kept, run.t0, objective, run.pruned)


def _least_traffic(run: _Run, cols, least: Fraction, H: int, kept: int) -> Solution:
    """The first traffic pass's plan ``cols`` of the proven least traffic ``least`` where the second
    pass (its ties to the least step time) ends early: FEASIBLE (the tie-break is not proven), bound ``least``."""
    sol = split_solution("exact", Status.FEASIBLE, _columns_plan(cols, H), least, least,
                         time.perf_counter() - run.t0, kept, objective=Objective.TRAFFIC)
    if run.pruned is not None:
        sol.info["pruned"] = run.pruned
    return sol


def _pareto_dp(costs, columns, limits, vector, run: _Run, keep=None, pruner=None):
    """Per last column, the Pareto-minimal ``vector``s of the partial plans (and their columns)
    within ``limits`` and ``keep`` (a predicate on a partial sum vector; a partial plan it drops
    has no completion it would keep) and that ``pruner`` allows (``solvers.uneven_prune``);
    (fronts, states kept), fronts None past the run's time limit (``run.last``: the last layer's
    complete fronts); Refused where the live states' memory estimate passes the run's limit."""
    def fits(l, c, v):  # noqa: E741
        return _within(v, limits) and (keep is None or keep(v)) and (pruner is None or pruner.allows(l, c, v))

    fronts = {c: [(v, (c,))] for c in columns[0] if fits(0, c, v := vector(costs.layer(0, c)))}
    kept = alive = len(fronts)
    for l in range(1, len(columns)):  # noqa: E741
        run.last = (l - 1, fronts)
        new: dict = {}
        here = 0
        for cv in columns[l]:
            own = vector(costs.layer(l, cv))
            front: list = []
            for (cu, items), edge in zip(fronts.items(), costs.edges_into(l - 1, list(fronts), cv)):
                if run.expired():
                    return None, kept  # checked per column pair: a single column's merge may be long
                edge = _add(own, vector(edge))
                for vec, cols in items:
                    nxt = _add(vec, edge)
                    if fits(l, cv, nxt):
                        _pareto_insert(front, nxt, cols + (cv,))
            if front:
                new[cv] = front
            kept += len(front)
            here += len(front)
            run.check_memory(alive + here)
            if run.expired():
                return None, kept
        fronts, alive = new, here
    return fronts, kept


# ---- split search (no proof) ------------------------------------------------------------------


def search_level_alphas(network: Network, array: ArraySpec, start: Plan, alphas,
                        rounds: int = 3, free: FreeAlphas = FreeAlphas.UNLIKE, progress=None,
                        rules: SplitRules = TIME_ONLY, deadline: float | None = None, start_scored=None) -> Solution:
    """Coordinate descent from ``start``, its types kept: each free class of the declared space
    in turn (top first) gets the declared value (``AlphaSpace.choices``: the grid and the class's
    proportional ratio) of least step time for all its groups and layers (``_best_on_grid``:
    every value of a grid up to ``SCAN_ALL``, coarse to fine beyond), until a round changes
    nothing; a class is not rescanned while no other class has changed since its last scan (its
    answer would be the same). Then block moves (``uneven_blocks.refine_blocks``): the layers
    that share their types and an edge move together, to a start's row in every class at once
    or to one class's values, where one alpha for every layer gains nothing. A heuristic (status
    FEASIBLE, no bound); never slower than ``start`` (a change must improve). ``progress(step,
    evaluations so far, at most in all)`` after every evaluation (``step`` names the class or
    block and the round). Under ``rules`` it minimises ``SplitRules.rank`` (rules broken, then
    the objective: a plan that keeps to every cap and memory limit beats any that does not; the
    solution's value is the objective's). Refused beyond ``MAX_FREE_CLASSES`` free classes; none
    evaluated past ``deadline`` (a move then scores ``LATE``; ``info["cut"]`` ``Cut.SEARCH``: its best plan so far).
    ``start_scored``: ``start``'s evaluation made by the caller (not made again); ``info["evaluation"]``:
    the plan's evaluation where the search made it (``Scorer.evaluation_of``; else None)."""
    t0 = time.perf_counter()
    check_array(array)
    aspace = _space_of(array, alphas, free)
    classes = aspace.free_classes()
    if len(classes) > MAX_FREE_CLASSES:
        raise Refused(f"search moves one class of groups at a time: at most {MAX_FREE_CLASSES} free classes, "
                      f"this array has {len(classes)}")

    s = Scorer(network, array, rules, deadline)
    total = (1 + rounds * sum(grid_probes(len(aspace.choices(h, c))) for h, c in classes)
             + rounds * block_probes(network, aspace, start))
    tick = (lambda step, done: progress(step, done, total)) if progress is not None else None
    current, best = start, (s.rank(start) if start_scored is None else s.keep(start, start_scored))
    if past(deadline):  # no move would be scored: neither the rounds nor the blocks' set-up run
        s.cut = True
    else:
        current, best, tried = _class_rounds(network, aspace, start, best, s.moved, rounds, tick)
        current, best, _ = refine_blocks(network, array, aspace, current, s.moved, best, rounds,
                                         progress=tick and (lambda step, done: tick(step, tried + done)))
    sol = split_solution("search", Status.FEASIBLE, current, best[1], None, time.perf_counter() - t0, s.evaluations,
                         objective=rules.objective)
    sol.info["evaluation"] = s.evaluation_of(current)
    if s.cut:  # its best plan so far (``info["explored"]``: the evaluations done by then)
        sol.info["cut"] = Cut.SEARCH
    return sol


def _class_rounds(network: Network, aspace: AlphaSpace, current: Plan, best, rank, rounds: int, progress):
    """The whole-network moves of ``search_level_alphas`` from ``current`` (of rank ``best``):
    (plan, rank, moves scored, 1 for ``current``)."""
    classes = aspace.free_classes()
    tried, changes = 1, 0  # moves scored, improvements so far
    scanned: dict[tuple[int, int], int] = {}  # class -> changes when it was last scanned
    for rnd in range(rounds):
        changed = False
        for k, (h, c) in enumerate(classes):
            if scanned.get((h, c)) == changes:  # nothing else moved since its last scan
                continue
            step = f"search: level {h}, class {k + 1} of {len(classes)}, round {rnd + 1}"

            def score(a, h=h, c=c, step=step):
                nonlocal tried
                tried += 1
                t = rank(_with_class_alpha(network, current, aspace, h, c, a))
                if progress is not None:
                    progress(step, tried)
                return t

            g = aspace.group_class[h].index(c)
            values = aspace.choices(h, c)  # the grid and the class's proportional ratio
            i, t = _best_on_grid(values, score, best, current.alphas[h][g][0])
            if i is not None:
                best, current, changed = t, _with_class_alpha(network, current, aspace, h, c, values[i]), True
                changes += 1
            scanned[(h, c)] = changes
        if not changed:
            break
    return current, best, tried


def _with_class_alpha(network: Network, plan: Plan, aspace: AlphaSpace, h: int, c: int, a: Fraction) -> Plan:
    """``plan`` with alpha ``a`` for every group of class c at level h on every layer, except a
    grouped conv (an attention node with heads) whose sides would then hold a fraction of its
    groups (heads) (``whole_units``): it keeps its alphas (its choices stay as they were, which
    held whole units)."""
    L = len(network.layers)
    row = tuple((a,) * L if aspace.group_class[h][g] == c else r for g, r in enumerate(plan.alphas[h]))
    alphas = list(plan.alphas[:h] + (row,) + plan.alphas[h + 1 :])
    for l, node in enumerate(network.layers):  # noqa: E741
        if split_units(node) is not None and not whole_units(node, [plan.types[k][l] for k in range(plan.levels)],
                                                [[r[l] for r in alphas[k]] for k in range(plan.levels)]):
            alphas[h] = tuple(r[:l] + (old[l],) + r[l + 1 :] for r, old in zip(alphas[h], plan.alphas[h]))
    return Plan(plan.types, tuple(alphas))
