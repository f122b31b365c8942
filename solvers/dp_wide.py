"""One level of the hierarchical DP solved exactly by CP-SAT, for graphs whose frontier is too wide
for ``dp.graph_level``'s elimination (DenseNet blocks). Its 0-1 model: docs/derivations.md,
"The hierarchical DP".
"""

from __future__ import annotations

from math import gcd

INT64_SAFE = 2**62  # CP-SAT's objective and rows stay below this (int64 with headroom)


def level_by_cpsat(intra, inter, edges, allowed: list[list[int]], time_limit_s: float | None = None,
                   seed: int = 0) -> tuple[list[int], int, bool] | None:
    """(type index per node, c_h, proven) of one level, or None when the costs exceed int64."""
    from ortools.sat.python import cp_model

    coefs = [c for n, ks in enumerate(allowed) for k in ks if (c := intra[n][k])]
    coefs += [c for e, (u, v) in enumerate(edges) for a in allowed[u] for b in allowed[v] if (c := inter[e][a][b])]
    g = gcd(*coefs) if coefs else 1
    if sum(coefs) // g >= INT64_SAFE:
        return None
    m = cp_model.CpModel()
    x = [{k: m.new_bool_var(f"x[{n},{k}]") for k in ks} for n, ks in enumerate(allowed)]
    terms = [(intra[n][k] // g, var) for n in range(len(allowed)) for k, var in x[n].items()]
    for xn in x:
        m.add_exactly_one(xn.values())
    for e, (u, v) in enumerate(edges):
        y = {(a, b): m.new_bool_var(f"y[{e},{a},{b}]") for a in allowed[u] for b in allowed[v]}
        for a in allowed[u]:
            m.add(sum(y[(a, b)] for b in allowed[v]) == x[u][a])
        for b in allowed[v]:
            m.add(sum(y[(a, b)] for a in allowed[u]) == x[v][b])
        terms += [(inter[e][a][b] // g, var) for (a, b), var in y.items()]
    used = [(c, var) for c, var in terms if c]
    m.minimize(cp_model.LinearExpr.weighted_sum([v for _, v in used], [c for c, _ in used]))
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1  # deterministic
    solver.parameters.random_seed = seed
    solver.parameters.relative_gap_limit = 0.0
    solver.parameters.absolute_gap_limit = 0.0
    if time_limit_s is not None:
        solver.parameters.max_time_in_seconds = float(time_limit_s)
    status = solver.solve(m)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None
    choice = [next(k for k, var in xn.items() if solver.value(var)) for xn in x]
    cost = sum(intra[n][k] for n, k in enumerate(choice))
    cost += sum(inter[e][choice[u]][choice[v]] for e, (u, v) in enumerate(edges))
    bound = solver.response_proto.inner_objective_lower_bound * g
    return choice, cost, status == cp_model.OPTIMAL and cost == bound
