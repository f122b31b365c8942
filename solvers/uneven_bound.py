"""Proven lower bounds for the uneven exact DP's early ends (``solvers.uneven.exact_uneven``: "at
once" by ``least_seconds``, "early" by its column tables' measured pace, at its memory guard: the
separable bound below and, for the step time, ``convex_bound``), where no completion
bound is ever computed: a separable bound, read from each layer's own columns only (no column
pair, no edge), so that it costs what the columns cost, not what their pairs cost.

Why it is a bound. A plan picks one column c_l per layer l of a chain; its sum vector is
V = sum_l own_l(c_l) + sum_l edge_l(c_l, c_l+1), every entry a non-negative integer of the one
table (``core.split_costs``). Hence, component by component, (i) V >= m = sum_l min_c own_l(c)
(each layer's least over its columns, component by component; the edges dropped, being >= 0),
and (ii) V >= own_l(c_l) for every single layer l. Both objectives' integer scores
(``uneven_prune.time_score``: per leaf its compute plus the links of its groups' busiest sides,
or their max under overlap, with non-negative rates; ``traffic_score``: sum_h 2^h times the
busiest side of level h) are maxima and sums of non-negative multiples of components, so
non-decreasing in every component: score(V) >= score(m) and score(V) >= min_c score(own_l(c)).
The bound is the larger of score(m) and max_l min_c score(own_l(c)). The minima run over every
column the rules allow (pins, forbids, whole units), a superset of the plans within the caps and
memory limits, so it bounds those too. For the max-over-sides step time, summing per-layer least
step times would not be a bound (the slowest side of a sum is at most the sum of the slowest
sides, not at least); the component-wise sum m, scored once, is.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Callable

from explorer.core.split_costs import SplitCosts

from .uneven_prune import step_rates

# Columns up to which an at-once end (before any column is built) still builds them for the bound:
# ~20-40 us a column in Python (its cells and its own vector); beyond, no bound. The caller builds
# them only where BOUND_COLUMN_S a column fits the time left; the bound checks the clock as it goes.
BOUND_MAX_COLUMNS = 100_000
BOUND_COLUMN_S = 40e-6
CLOCK_EVERY = 1_000  # columns scored between two looks at the clock


def separable_bound(costs: SplitCosts, columns, score: Callable[[tuple], int],
                    expired: Callable[[], bool] = lambda: False, keep: list | None = None) -> int | None:
    """The module docstring's bound in ``score``'s integer units, or None (a layer without a column:
    no plan to bound; or ``expired()`` turned true, checked per layer and every ``CLOCK_EVERY`` columns).
    ``keep``: a list that gets each layer's vectors as an integer matrix (``_matrix``), for ``convex_bound``."""
    least = None
    most = 0
    for l, cols in enumerate(columns):  # noqa: E741
        if not cols or expired():
            return None
        vecs = []
        for i, c in enumerate(cols):
            if i % CLOCK_EVERY == CLOCK_EVERY - 1 and expired():
                return None
            vecs.append(costs.layer(l, c))
        low = tuple(map(min, zip(*vecs)))
        least = low if least is None else tuple(x + y for x, y in zip(least, low))
        most = max(most, min(map(score, vecs)))
        if keep is not None:
            keep.append(_matrix(vecs))
    return None if least is None else max(score(least), most)


def _matrix(vecs):
    """The vectors as rows of an int64 matrix (8 bytes an entry), or of Python ints where one passes int64."""
    import numpy as np

    try:
        return np.array(vecs, dtype=np.int64)
    except OverflowError:
        return np.array(vecs, dtype=object)


# ---- the convex-combination bound (the step time) ----------------------------------------------

# Columns up to which an early end computes the convex bound (it holds every column's vector, 8 bytes
# an entry: 37 MB at H = 4; its exact pass multiplies Python ints, about 1 s a 100,000 columns)
CONVEX_MAX_COLUMNS = 100_000
ROUNDS = 60  # column-generation rounds of the weights' LP (any weights give a bound: fewer, a lower one)
DENOMINATOR = 10**6  # the LP's float weights as rationals over about this (then made exact)

# columns of one layer scored exactly between looks at the clock (a large layer took ~1 s in one go)
EXACT_CHUNK = 20_000


def convex_bound(array, costs: SplitCosts, columns, expired: Callable[[], bool] = lambda: False,
                 rows: list | None = None) -> Fraction | None:
    """A lower bound on every plan's step time in seconds (``uneven_prune.time_score``'s over its
    scale), or None (a layer without a column; ``expired()``; OR-Tools' GLOP fails). The proof:
    docs/derivations.md, "A convex-combination bound for the early ends", in short: the step time is
    a max over pieces (per leaf its compute plus its groups' exchanges, or under overlap each apart)
    of non-negative multiples of maxima of components, so for weights mu, pi, lam >= 0 (a convex
    combination of the pieces; per group a convex combination of its time positions) it is at
    least w . V, w >= 0 (``_weights``); the edges (>= 0) dropped, w . V >= sum_l min_c w . own_l(c).
    An LP over the weights (``_lp_weights``, floats) picks w; the bound is then evaluated exactly
    (rational weights, integer sums) over every column: any weights give a bound. ``rows``: each
    layer's vectors as ``separable_bound`` keeps them (else built here)."""
    import numpy as np

    if not all(columns) or sum(map(len, columns)) > CONVEX_MAX_COLUMNS or expired():
        return None
    lay = costs.layout
    comp, comm = step_rates(array, costs)
    groups = [(h, g, lay.time_pos[(h, g)]) for h, g in lay.pos]
    if rows is None:
        rows = []
        if separable_bound(costs, columns, lambda v: 0, expired, rows) is None:
            return None
    idx = list(range(lay.leaves)) + [q for _, _, pos in groups for q in pos]  # a coefficient per mu, then per nu
    rate = np.array([float(a) for a in comp] + [float(comm[h]) for h, _, pos in groups for _ in pos]) * 1e6
    picked = _lp_weights([m[:, idx].astype(float) * rate for m in rows], groups, lay, array.overlap, expired)
    if picked is None:
        return None
    w = _weights(*picked, comp, comm, groups, lay)
    M = math.lcm(*(x.denominator for x in w.values()))
    ks = [k for k, x in w.items() if x]
    W = np.array([int(w[k] * M) for k in ks], dtype=object)
    total = 0
    for m in rows:  # exact: Python ints, a chunk of columns between looks at the clock
        least = []
        for i in range(0, len(m), EXACT_CHUNK):
            if expired():
                return None
            least.append(min((m[i:i + EXACT_CHUNK, ks].astype(object) @ W).tolist()))
        total += min(least)
    return Fraction(total, M)


def _weights(mu, pi, lam, comp, comm, groups, lay) -> dict[int, Fraction]:
    """The exact w of ``convex_bound`` from rational mu, pi (per leaf; sum(mu) + sum(pi) = 1, or pi
    is mu: its pieces are compute plus exchanges) and lam (per group, over its time positions, sum 1)."""
    H = lay.H
    w = {i: a * m for i, (a, m) in enumerate(zip(comp, mu))}
    for (h, g, pos), row in zip(groups, lam):
        below = sum(pi[i] for i in range(lay.leaves) if i >> (H - h) == g)
        for q, x in zip(pos, row):
            w[q] = w.get(q, 0) + comm[h] * x * below
    return w


def _exact(values, total=Fraction(1)) -> list[Fraction]:
    """Non-negative floats as rationals summing to ``total`` exactly (uniform where all are ~0)."""
    xs = [Fraction(max(v, 0.0)).limit_denominator(DENOMINATOR) for v in values]
    s = sum(xs)
    return [total * x / s for x in xs] if s > 0 else [total / len(xs)] * len(xs)


def _lp_weights(mats, groups, lay, overlap: bool, expired):
    """(mu, pi, lam), exact, for ``_weights``: the LP max sum_l z_l over mu, pi and nu = lam * (the pi
    below the group), z_l <= w . own_l(c) for a working set of columns, grown by column generation
    (each layer's column of least w . own under the LP's weights, while one is below its z_l) for
    at most ``ROUNDS`` rounds; None where GLOP fails or ``expired()``."""
    import numpy as np
    from ortools.linear_solver import pywraplp

    n, H = lay.leaves, lay.H
    lp = pywraplp.Solver.CreateSolver("GLOP")
    mu = [lp.NumVar(0, 1, "") for _ in range(n)]
    pi = [lp.NumVar(0, 1, "") for _ in range(n)] if overlap else mu
    nu = [[lp.NumVar(0, 1, "") for _ in pos] for _, _, pos in groups]
    lp.Add(sum(mu) + (sum(pi) if overlap else 0) == 1)
    for (h, g, _), row in zip(groups, nu):
        lp.Add(sum(row) == sum(pi[i] for i in range(n) if i >> (H - h) == g))
    coef = mu + [x for row in nu for x in row]
    z = [lp.NumVar(-lp.infinity(), lp.infinity(), "") for _ in mats]
    lp.Maximize(sum(z))
    x = np.array([1.0 / n] * n + [1.0 / n / len(pos) * sum(1 for i in range(n) if i >> (H - h) == g)
                                  for h, g, pos in groups for _ in pos])  # uniform weights to start
    zs, kept = [None] * len(mats), None  # z and every weight at the last solve (read before rows are added)
    for _ in range(ROUNDS):
        added = 0
        for l, m in enumerate(mats):  # noqa: E741
            vals = m @ x
            c = int(vals.argmin())
            if zs[l] is None or vals[c] < zs[l] - 1e-9 * max(1.0, abs(zs[l])):
                lp.Add(z[l] <= sum(float(a) * v for a, v in zip(m[c], coef) if a))
                added += 1
        if not added or expired():
            break
        if lp.Solve() != pywraplp.Solver.OPTIMAL:
            return None
        zs = [v.solution_value() for v in z]
        x = np.array([v.solution_value() for v in coef])
        kept = [[v.solution_value() for v in mu + (pi if overlap else [])], [[v.solution_value() for v in r] for r in nu]]
    if kept is None or expired():
        return None
    weights = _exact(kept[0])
    mu_x, pi_x = (weights[:n], weights[n:]) if overlap else (weights, weights)
    return mu_x, pi_x, [_exact(row) for row in kept[1]]
