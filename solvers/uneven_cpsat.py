"""CP-SAT for uneven splits (``explorer.core.uneven``): the third, independent proof on small
chains, beside ``solvers.uneven``'s exact Pareto DP; it reads the same shared split tables.

The derivation: docs/derivations.md, "Uneven splits: brute force, exact and CP-SAT".
"""

from __future__ import annotations

import math
import time
from fractions import Fraction

from explorer.core.array import ArraySpec
from explorer.core.uneven import FreeAlphas, check_array, check_network
from explorer.core.errors import Refused
from explorer.core.network import Network
from explorer.core.objective import Objective
from explorer.core.partition import Space
from explorer.core.split_costs import SplitCosts, VectorLayout
from explorer.core.plan import Plan
from explorer.core.solution import Solution, Status, split_solution
from explorer.core.split_rules import TIME_ONLY, SplitRules
from explorer.core.units import format_count

from .uneven import _chain_columns, _column_counts, _columns_plan, _limits, _space_of, is_path, least_column_counts

def cpsat_size_check(network: Network, array: ArraySpec, space: Space, alphas, free: FreeAlphas = FreeAlphas.UNLIKE,
                     rules: SplitRules = TIME_ONLY, max_columns: int = 2_000, max_pairs: int = 20_000) -> None:
    """Refused where ``cpsat_uneven``'s model would hold more than ``max_columns`` columns or
    ``max_pairs`` pairs of consecutive columns, counted before any column or table is built (a
    refusal at once); nothing where a layer has no column (no plan: not a size question)."""
    check_array(array)
    check_network(network)
    if not is_path(network):
        raise Refused("cpsat (uneven splits): chains only")
    aspace = _space_of(array, alphas, free)
    least = sum(least_column_counts(network, space, aspace, array.levels, rules))  # before enumerating any
    if least > max_columns:
        raise Refused(f"cpsat (uneven splits): {format_count(least)} columns, more than {max_columns:,}")
    counts = _column_counts(network, space, aspace, array.levels, rules)
    if 0 in counts:
        return
    if sum(counts) > max_columns:
        raise Refused(f"cpsat (uneven splits): {format_count(sum(counts))} columns, more than {max_columns:,}")
    pairs = sum(a * b for a, b in zip(counts, counts[1:]))
    if pairs > max_pairs:  # one Boolean and one exact amount vector per pair: minutes beyond this
        raise Refused(f"cpsat (uneven splits): {pairs:,} column pairs, more than {max_pairs:,}")


# ---- CP-SAT (a third, independent proof on tiny chains) ---------------------------------------


def _build(m, array: ArraySpec, costs, columns, rules: SplitRules, hint: Plan | None, H: int):
    """``cpsat_uneven``'s model on ``m``: the column Booleans (with the hint), the components, the caps,
    the memory limits and the objective T (S: traffic's tie-break step time, else None); and the scale."""
    lay = costs.layout
    own, edge, scale, ints, rate = _scaled_amounts(array, costs, columns, rules)
    x, y = _column_booleans(m, columns, edge)
    if hint is not None:
        _hint_plan(m, x, y, hint, H)
    exprs = _amount_terms(lay, own, edge, x, y, ints)
    ub = _amount_bound(own, edge, ints) + 1
    comp, link = _component_vars(m, lay, exprs, ub, rules.objective is not Objective.TRAFFIC)
    for p, most in _limits(array, lay, rules):
        if p < lay.pos_end:
            m.Add(comp[p] <= math.floor(most * rate[p] * scale))
    _memory_limits(m, array, costs, own, x, rules)
    if rules.objective is Objective.TRAFFIC:
        return m, x, y, _traffic_var(m, lay, link, ub), _tie_step_time(m, array, costs, columns, x, y), scale
    return m, x, y, _step_time_var(m, array, lay, comp, link, ub), None, scale


def cpsat_uneven(network: Network, array: ArraySpec, space: Space, alphas,
                 time_limit_s: float = 60.0, max_columns: int = 2_000, free: FreeAlphas = FreeAlphas.UNLIKE,
                 max_pairs: int = 20_000, rules: SplitRules = TIME_ONLY, hint: Plan | None = None) -> Solution:
    """CP-SAT over the same columns as the Pareto DP: one Boolean per layer column, one per
    pair of consecutive columns; every leaf's compute and every group side's amount are linear
    in them, scaled to seconds times one common integer; T >= each leaf's compute plus its
    groups' max(side 0, side 1) (or their max with overlap); minimise T, or (traffic) sum_h 2^h
    times the level's busiest side. ``rules``: pins and forbids in the columns, every side of a
    capped level at most its cap, every leaf's footprint at most its limit (linear constraints).
    OPTIMAL only when CP-SAT proves it (objective == bound); INFEASIBLE when it proves no plan.
    Under traffic, ties go to the least step time: a second solve (``_tie_break``, within the
    same time limit) with the traffic fixed at its proven optimum minimises the step time (its
    own variables on the same Booleans); OPTIMAL only when both stages are proven. ``hint``: a plan
    given to CP-SAT as its first solution to try (``_hint_plan``: a start, not a proof)."""
    t0 = time.perf_counter()
    cpsat_size_check(network, array, space, alphas, free, rules, max_columns, max_pairs)
    from ortools.sat.python import cp_model  # after the size check: a refusal at once (its import takes ~0.4 s)

    from .cpsat_run import proven, proven_bound, search_seconds

    H, L, costs, columns = _chain_columns(network, array, space, alphas, "cpsat", free, rules)
    if any(not c for c in columns):
        return split_solution("cpsat", Status.INFEASIBLE, None, None, None, time.perf_counter() - t0, 0,
                              objective=rules.objective)
    m, x, y, T, S, scale = _build(cp_model.CpModel(), array, costs, columns, rules, hint, H)
    # the search gets what the build left of the limit (``search_seconds``, no margin): the limit bounds the whole
    left = time_limit_s - (time.perf_counter() - t0)
    solver, st, stopped = _minimise(m, T, search_seconds(time_limit_s, left, margin=False))

    def done(status: Status, plan=None, value=None, bound=None) -> Solution:
        return _cpsat_answer(status, plan, value, bound, time.perf_counter() - t0, len(columns), rules, stopped)

    if st == cp_model.INFEASIBLE:
        return done(Status.INFEASIBLE)
    if st not in (cp_model.OPTIMAL, cp_model.FEASIBLE):  # no plan within the time limit (or before Ctrl-C)
        return done(Status.UNKNOWN)
    value, bound = solver.Value(T), proven_bound(solver)  # (exact integers: T is the objective)
    optimal = proven(st, value, bound)
    if S is not None and optimal and not stopped:  # stage 2: the traffic fixed at its proven optimum, the least step time
        solver, optimal, stopped = _tie_break(m, x, T, S, solver, time_limit_s - (time.perf_counter() - t0))
    cols = [next(c for c in columns[l] if solver.Value(x[l][c])) for l in range(L)]  # noqa: E741
    return done(Status.OPTIMAL if optimal else Status.FEASIBLE, _columns_plan(cols, H), Fraction(value, scale),
                Fraction(bound, scale))


def _hint_plan(m, x, y, plan: Plan, H: int) -> None:
    """``plan``'s columns (and their pairs) as CP-SAT's solution hint, every other Boolean 0; a
    layer whose column the model lacks (outside the declared space or the rules) is left unhinted."""
    from .cpsat_run import hint

    at, xs, values = [], [], []  # per layer: its column's position, or None; the hinted Booleans, their values
    for l, xl in enumerate(x):  # noqa: E741
        col = tuple((plan.types[h][l], tuple(plan.alphas[h][g][l] for g in range(2**h))) for h in range(H))
        at.append(list(xl).index(col) if col in xl else None)
        if at[l] is not None:
            xs += xl.values()
            values += [int(i == at[l]) for i in range(len(xl))]
    for l, pairs in enumerate(y):  # noqa: E741
        if at[l] is not None and at[l + 1] is not None:
            xs += pairs.values()
            values += [int(i == at[l] and j == at[l + 1]) for i, j in pairs]
    hint(m, xs, values)


def _cpsat_answer(status: Status, plan, value, bound, wall_s: float, explored: int, rules: SplitRules,
                  stopped: bool) -> Solution:
    """CP-SAT's split solution; stopped by Ctrl-C (``cpsat.run_solver``) without a proof: status
    interrupted, the best plan so far (if any) with its bound, and why (as the even cpsat's)."""
    from explorer.core.solution import INTERRUPTED_WITH_PLAN

    if stopped and status in (Status.FEASIBLE, Status.UNKNOWN):
        sol = split_solution("cpsat", Status.INTERRUPTED, plan, value, bound, wall_s, explored, objective=rules.objective)
        sol.info["reason"] = INTERRUPTED_WITH_PLAN if plan is not None else "stopped by Ctrl-C before any plan"
        return sol
    return split_solution("cpsat", status, plan, value, bound, wall_s, explored, objective=rules.objective)


def _tie_step_time(m, array: ArraySpec, costs: SplitCosts, columns, x, y):
    """Under traffic, the step time on the same Booleans (its own integer scale: the time's rates)."""
    lay = costs.layout
    own, edge, _, ints, _ = _scaled_amounts(array, costs, columns, TIME_ONLY)
    ub = _amount_bound(own, edge, ints) + 1
    comp, link = _component_vars(m, lay, _amount_terms(lay, own, edge, x, y, ints), ub)
    return _step_time_var(m, array, lay, comp, link, ub)


def _tie_break(m, x, T, S, first, time_left_s: float):
    """Fix T at the value ``first`` proved least, hint its plan and minimise S in the time left:
    (the solver holding the plan, whether S's least is proven, whether Ctrl-C stopped it); on no
    answer in time, the first plan (traffic optimal, the tie not proven)."""
    from ortools.sat.python import cp_model

    from .cpsat_run import hint, proven, proven_bound

    m.Add(T == int(first.Value(T)))
    m.ClearHints()  # a hint given to the first stage (``_hint_plan``): one hint per variable, or the model is invalid
    xs = [var for layer in x for var in layer.values()]
    hint(m, xs, [first.Value(var) for var in xs])
    if time_left_s <= 0:
        return first, False, False
    solver, st, stopped = _minimise(m, S, time_left_s)
    if st == cp_model.OPTIMAL and proven(st, solver.Value(S), proven_bound(solver)):  # (Value needs a solution)
        return solver, True, stopped
    return (solver, False, stopped) if st == cp_model.FEASIBLE else (first, False, stopped)


def _minimise(m, T, time_limit_s: float):
    """Minimise T (one worker) as the even cpsat solves (``cpsat.run_solver``: a Ctrl-C stops the
    search gracefully); the solver, its status and whether Ctrl-C stopped it."""
    from .cpsat import run_solver  # (``cpsat.run_solver``: where tests simulate a Ctrl-C)
    from .cpsat_run import new_solver

    m.Minimize(T)
    # no probing: its probing of these wide sums took the whole limit (lenet-c)
    solver = new_solver(1, time_limit_s=time_limit_s, presolve=False, probing=0)
    st, stopped = run_solver(solver, m)
    return solver, st, stopped


def _scaled_amounts(array: ArraySpec, costs: SplitCosts, columns, rules: SplitRules = TIME_ONLY):
    """Every column's and consecutive column pair's integer vector (``own``, ``edge``: the table's),
    the least common integer ``scale`` of seconds (the one that makes every amount * rate an
    integer), ``ints``: a vector in integer units (seconds * scale), and the rates (seconds per
    element of each component; 0 for a leaf's footprint, ``_memory_limits``)."""
    lay, L = costs.layout, len(columns)
    # per unit and per element of each vector component: seconds (elements under traffic, which counts no compute)
    per_unit = costs.unit_rates(array, rules.objective is Objective.TRAFFIC)
    rate = [q * costs.unit for q in per_unit]
    own = [{c: costs.layer(l, c) for c in columns[l]} for l in range(L)]  # noqa: E741
    edge = [_edge_vectors(costs, l - 1, columns[l - 1], columns[l]) for l in range(1, L)]  # noqa: E741
    common = [0] * lay.size  # per component: the gcd of its entries
    for vecs in own + edge:
        for v in vecs.values():
            common = [math.gcd(c, x) for c, x in zip(common, v)]
    # x units * (rate / U) is an integer times 1/scale for every entry x: per component, the
    # denominator of rate / U over its gcd with the entries' gcd
    scale = math.lcm(1, *(q.denominator // math.gcd(q.denominator, c) for q, c in zip(per_unit, common)))
    factors = [(q * scale).as_integer_ratio() for q in per_unit]
    ints = lambda v: [x * n // d for x, (n, d) in zip(v, factors)]  # noqa: E731
    return own, edge, scale, ints, rate


def _edge_vectors(costs: SplitCosts, e: int, cols_u, cols_v) -> dict:
    """{(i, j): edge e's vector from column i of ``cols_u`` to column j of ``cols_v``} in row-major
    order: the consumer's shares computed once per cv (``edges_into``), not once per pair; keyed by
    position (a column's tuple of Fractions costs more to hash than the rest of the build)."""
    by_v = [costs.edges_into(e, cols_u, cv) for cv in cols_v]
    return {(i, j): by_v[j][i] for i in range(len(cols_u)) for j in range(len(cols_v))}


def column_choices(m, columns) -> list[dict]:
    """x[l][column]: exactly one column per layer (also ``uneven_least``'s model, which has no pairs)."""
    x = [{c: m.NewBoolVar("") for c in cols} for cols in columns]
    for row in x:
        m.AddExactlyOne(row.values())
    return x


def _column_booleans(m, columns, edge):
    """x[l][column]: exactly one column per layer; y[l-1][(i, j)]: the pair of consecutive
    columns chosen (by position), consistent with x on both sides."""
    from ortools.sat.python import cp_model

    from .formulation import pair_rows

    L = len(columns)
    x = column_choices(m, columns)
    y = []
    for l in range(1, L):  # noqa: E741
        yl = {k: m.NewBoolVar("") for k in edge[l - 1]}  # (row-major: ``_edge_vectors``)
        ys, nv = list(yl.values()), len(columns[l])
        ends = ([[xu] for xu in x[l - 1].values()], [[xv] for xv in x[l].values()])  # a column per class
        for vars_, coefs, rhs in pair_rows([ys[i * nv:(i + 1) * nv] for i in range(len(columns[l - 1]))], *ends):
            m.Add(cp_model.LinearExpr.weighted_sum(vars_, coefs) == rhs)
        y.append(yl)
    return x, y


def _amount_terms(lay: VectorLayout, own, edge, x, y, ints) -> list[tuple[list, list]]:
    """Per vector component, the linear terms of the plan's sum: (Booleans, their integer amounts)."""
    exprs = [([], []) for _ in range(lay.size)]
    # (x and y were built in the order of own's and edge's keys: zipped, not looked up, as a column
    # key is a tuple of Fractions whose hashes cost more than the rest of the model's build)
    for vecs, bools in list(zip(own, x)) + list(zip(edge, y)):
        for v, b in zip(vecs.values(), bools.values()):
            for k, a in enumerate(ints(v)):
                if a:
                    exprs[k][0].append(b)
                    exprs[k][1].append(a)
    return exprs


def _amount_bound(own, edge, ints) -> int:
    """An upper bound on every component's integer sum; refused beyond 64-bit integers."""
    total_bound = 0
    for vecs in list(own) + list(edge):  # each vector scaled once (not once per component)
        scaled = [ints(v) for v in vecs.values()]
        total_bound += sum(max(col) for col in zip(*scaled))
    if total_bound >= 2**62:
        raise Refused("cpsat (uneven splits): the scaled amounts do not fit 64-bit integers")
    return total_bound


def _component_vars(m, lay: VectorLayout, exprs, ub: int, time: bool = True):
    """One integer per vector component (its linear sum) and per (level, group) its exchange: the
    max over ``lay.time_pos`` (its sides, or a torus's link windows), or (``time=False``, traffic)
    max(side 0, side 1)."""
    from ortools.sat.python import cp_model

    comp = [0] * lay.size
    for k in range(lay.size):
        comp[k] = m.NewIntVar(0, ub, "")
        m.Add(comp[k] == cp_model.LinearExpr.weighted_sum(*exprs[k]))  # (a sum of products: 10x slower to build)
    link = {}
    for (h, g), p in lay.pos.items():
        link[(h, g)] = m.NewIntVar(0, ub, "")
        m.AddMaxEquality(link[(h, g)], [comp[q] for q in (lay.time_pos[(h, g)] if time else (p, p + 1))])
    return comp, link


def _memory_limits(m, array: ArraySpec, costs: SplitCosts, own, x, rules: SplitRules) -> None:
    """Each leaf's footprint (its layers' columns) at most its limit / dtype: one linear constraint
    per leaf in its own integer scale (the footprints' common denominator in elements)."""
    lay = costs.layout
    if lay.mem is None:
        return
    for i, lim in enumerate(rules.leaf_memory_bytes):
        k = lay.mem + i
        terms = [(v[k], x[l][c]) for l, vecs in enumerate(own) for c, v in vecs.items() if v[k]]  # noqa: E741
        most = lim / array.dtype_bytes
        g = math.gcd(costs.unit, *(a for a, _ in terms))  # units per element / g: the common denominator
        m.Add(sum((a // g) * var for a, var in terms) <= math.floor(most * (costs.unit // g)))


def _step_time_var(m, array: ArraySpec, lay: VectorLayout, comp, link, ub: int):
    """T >= every leaf's compute plus its groups' max(side 0, side 1) (with overlap: the max of the two)."""
    H = lay.H
    T = m.NewIntVar(0, ub, "T")
    for i in range(lay.leaves):
        comm = sum(link[(h, i >> (H - h))] for h in range(H))
        if array.overlap:
            m.Add(T >= comp[i])
            m.Add(T >= comm)
        else:
            m.Add(T >= comp[i] + comm)
    return T


def _traffic_var(m, lay: VectorLayout, link, ub: int):
    """sum_h 2^h c_h (c_h: the level's busiest side; the sides then count elements * scale)."""
    busiest = {}
    for (h, g), v in link.items():
        if h not in busiest:
            busiest[h] = m.NewIntVar(0, ub, "")
        m.Add(busiest[h] >= v)
    if ub * 2**lay.H >= 2**62:
        raise Refused("cpsat (uneven splits): the scaled traffic does not fit 64-bit integers")
    T = m.NewIntVar(0, ub * 2**lay.H, "traffic")
    m.Add(T == sum(2**h * busiest[h] for h in busiest))
    return T
