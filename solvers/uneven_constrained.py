"""The exact solver on uneven splits under caps or memory limits (``--split optimal --solver exact``,
``check``'s exact row; docs/uneven.md, "Caps and memory"): the joint solver's bound and labels
(``solvers.uneven_joint``, the limits' terms in its labels) on the arrays and networks it takes
(chains and series-parallel graphs, the top split free, the step time), else the exact Pareto DP
(``solvers.uneven.exact_uneven``, chains: the traffic objective, deeper free levels, overlap).
Both prove the same optimum; ``info["method"]`` says which ran."""

from __future__ import annotations

from dataclasses import replace

from explorer.core.array import ArraySpec
from explorer.core.errors import Refused
from explorer.core.network import Network
from explorer.core.partition import Space
from explorer.core.solution import Solution
from explorer.core.split_rules import TIME_ONLY, SplitRules
from explorer.core.uneven import FreeAlphas

from .uneven import EXACT_MAX_BYTES, _space_of, exact_uneven
from .uneven_joint import JointOptions, joint_uneven

DEFAULT_LIMIT_S = 60.0  # the joint solver's time limit when none is given


def constrained_uneven(network: Network, array: ArraySpec, space: Space, alphas,
                       max_bytes: int = EXACT_MAX_BYTES, free: FreeAlphas = FreeAlphas.UNLIKE,
                       time_limit_s: float | None = None, rules: SplitRules = TIME_ONLY) -> Solution:
    """The proven optimum under ``rules`` (module docstring): the joint solver where it applies
    (its plan's status, value and bound, named ``exact``), else ``exact_uneven``."""
    aspace = _space_of(array, alphas, free)
    try:
        sol = joint_uneven(network, array, space, aspace, JointOptions(time_limit_s=time_limit_s or DEFAULT_LIMIT_S),
                           types_allowed=lambda h, l: rules.types(network, space, h, l), rules=rules)  # noqa: E741
    except Refused:  # outside its scope: the Pareto DP (chains)
        sol = exact_uneven(network, array, space, aspace, max_bytes, free, time_limit_s, rules)
        sol.info["method"] = "pareto-dp"
        return sol
    sol.info["method"] = "joint:bound+labels"
    return replace(sol, solver="exact")
