"""Where ``--split search`` starts (``search_start``): the equal and the proportional split put on
the declared space's choices (``on_grid``, ``nearest_choice``), grouped convs kept whole
(``whole_or_half``); ``scored_start`` hands the start's evaluation on, so it is scored once."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from ..core.array import ArraySpec
from ..core.evaluate import evaluate_split
from ..core.network import Network
from ..core.plan import Plan
from ..core.split_rules import SplitRules
from ..core.uneven import HALF, AlphaSpace, proportional_alphas, split_units, whole_units, with_group_alphas
from ..solvers.deadline import past


def nearest_choice(choices, target: Fraction) -> Fraction:
    """The value of ``choices`` nearest ``target`` (on a tie, the one nearer 1/2)."""
    return min(choices, key=lambda v: (abs(v - target), abs(v - HALF)))


def on_grid(network: Network, types: Plan, aspace: AlphaSpace, target) -> Plan:
    """The plan's types with, per level per group, the choice of its class in the declared space
    nearest ``target[level][group]`` (a fixed class: 1/2) for every layer; a grouped conv (an
    attention node with heads) whose sides would then hold a fraction of its groups (heads)
    (``whole_units``) splits 1/2 on every level, as in the equal-split plan."""
    near: dict = {}  # (level, class, target) -> its choice: groups alike take it once
    rows = [tuple(near[h, c, t] if (h, c, t) in near else near.setdefault((h, c, t), nearest_choice(aspace.choices(h, c), t))
                  for c, t in zip(aspace.group_class[h], target[h])) for h in range(aspace.levels)]
    return whole_or_half(network, with_group_alphas(types, rows))


def whole_or_half(network: Network, plan: Plan) -> Plan:
    """The plan with every grouped conv (attention node with heads) whose sides would hold a
    fraction of its groups (heads) (``whole_units``) split 1/2 on every level, as in the
    equal-split plan."""
    halve = {l for l, node in enumerate(network.layers) if split_units(node) is not None  # noqa: E741
             and not whole_units(node, [row[l] for row in plan.types], [[r[l] for r in level] for level in plan.alphas])}
    if not halve:  # the plan itself, its row objects kept (groups alike share them: the evaluator scores them once)
        return plan
    rows: dict = {}  # id(row) -> the row with those layers at 1/2
    return Plan(plan.types, tuple(tuple(rows.setdefault(id(r), tuple(HALF if l in halve else a for l, a in enumerate(r)))
                                        for r in level) for level in plan.alphas))


def search_start(network: Network, array: ArraySpec, types: Plan, aspace: AlphaSpace, rules: SplitRules | None = None,
                 deadline: float | None = None) -> Plan:
    """Where ``--split search`` starts: of the equal and the proportional split in the declared
    space (``on_grid``: each class's nearest choice, the split itself where it is declared: the
    proportional ratio always, 1/2 on an even grid), the one of less step time. The search then
    stays in the space, so its plan is never faster than the space's proven optimum (``--split
    optimal``) and never slower than either start. Under ``rules``: the one of less ``SplitRules.rank``
    (rules broken, then the objective). Past ``deadline`` (``perf_counter``): the equal one, unscored."""
    return scored_start(network, array, types, aspace, rules, deadline)[0]


def scored_start(network: Network, array: ArraySpec, types: Plan, aspace: AlphaSpace, rules: SplitRules | None = None,
                 deadline: float | None = None) -> tuple[Plan, Any]:
    """``search_start``'s plan and its ``evaluate_split`` (with ``rules.weight_copies``; None where
    unscored, past ``deadline``): the search takes it as its start's score (``search_level_alphas``'s
    ``start_scored``), not scoring the same plan again."""
    equal = on_grid(network, types, aspace, [[HALF] * 2**h for h in range(aspace.levels)])
    if past(deadline):
        return equal, None
    copies = 0 if rules is None else rules.weight_copies
    scored = [(p, evaluate_split(network, array, p, copies))
              for p in (equal, on_grid(network, types, aspace, proportional_alphas(array)))]
    if rules is None:
        return min(scored, key=lambda pe: pe[1].step_time_s)
    return min(scored, key=lambda pe: rules.rank(pe[1], array, pe[0]))
