"""A proven lower bound for the uneven exact DP's early ends (``solvers.uneven.exact_uneven``: "at
once" by ``least_seconds``, "early" by its column tables' measured pace), where no completion
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

from typing import Callable

from explorer.core.split_costs import SplitCosts

# Columns up to which an at-once end (before any column is built) still builds them for the bound:
# ~20-40 us a column in Python (its cells and its own vector); beyond, no bound. The caller builds
# them only where BOUND_COLUMN_S a column fits the time left; the bound checks the clock as it goes.
BOUND_MAX_COLUMNS = 100_000
BOUND_COLUMN_S = 40e-6
CLOCK_EVERY = 1_000  # columns scored between two looks at the clock


def separable_bound(costs: SplitCosts, columns, score: Callable[[tuple], int],
                    expired: Callable[[], bool] = lambda: False) -> int | None:
    """The module docstring's bound in ``score``'s integer units, or None (a layer without a column:
    no plan to bound; or ``expired()`` turned true, checked per layer and every ``CLOCK_EVERY`` columns)."""
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
    return None if least is None else max(score(least), most)
