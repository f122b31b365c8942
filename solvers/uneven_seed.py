"""The even solve's plan under the same limits, as a start of the uneven paths (docs/uneven.md,
"Caps and memory"): the even split is the alpha = 1/2 case of the uneven model, so where 1/2 is in
the declared space the even exact solve's plan under the run's pins, forbids, caps and memory (the
smallest kind's limit: at alpha 1/2 every accelerator holds the same footprint) is a plan of that
space the uneven solvers may start from; they check it exactly (``SplitRules.violations``) before
taking it."""

from __future__ import annotations

from dataclasses import replace

from explorer.core.array import ArraySpec
from explorer.core.errors import Refused
from explorer.core.network import Network
from explorer.core.partition import Space
from explorer.core.plan import Plan
from explorer.core.problem import Problem
from explorer.core.solution import SolveOptions
from explorer.core.split_rules import SplitRules
from explorer.core.uneven import AlphaSpace


def even_under_limits(network: Network, array: ArraySpec, space: Space, aspace: AlphaSpace, rules: SplitRules,
                      time_limit_s: float) -> Plan | None:
    """The even exact solver's plan (``rules``' objective: the even split's proven optimum where it
    ends within ``time_limit_s``) under ``rules``' pins, forbids, caps and memory, as an equal-split
    plan; None where 1/2 is not in ``aspace``, it finds no plan within ``time_limit_s`` or it refuses
    the instance (too large)."""
    from .exact import solve as exact

    memory = rules.leaf_memory_bytes
    constraints = replace(rules.constraints, memory_bytes=None if memory is None else min(memory), memory_set=False)
    problem = Problem(network, array, space, rules.objective, constraints)
    try:
        sol = exact(problem, SolveOptions(time_limit_s=time_limit_s))
    except Refused:  # too large for the even exact solver (InstanceTooLarge, its only refusal): no start from it;
        return None  # anything else (NotImplementedError, OverflowError) is a bug and is raised
    if sol.plan is None:
        return None
    plan = Plan.even(sol.plan)
    return plan if aspace.contains(plan) else None
