"""The uneven splits under caps or memory limits (docs/uneven.md, "Caps and memory"): ``joint_under``,
the joint solver's bound and labels (``solvers.uneven_joint``, the limits' terms in its labels) on
the arrays and networks it takes (chains and series-parallel graphs, the top split free, the step
time): ``--split optimal`` with or without ``--solver exact``; and ``constrained_uneven``
(``--solver exact``, ``check``'s exact row): it, else the exact Pareto DP
(``solvers.uneven.exact_uneven``, chains: the traffic objective, deeper free levels, overlap).
Both prove the same optimum; ``info["method"]`` says which ran."""

from __future__ import annotations

from dataclasses import replace
from itertools import islice

from explorer.core.array import ArraySpec
from explorer.core.errors import Refused
from explorer.core.kinds import SOLVE_TIME_LIMIT
from explorer.core.network import Network
from explorer.core.partition import Space
from explorer.core.solution import Solution
from explorer.core.split_rules import TIME_ONLY, SplitRules, joint_refusal
from explorer.core.plan import Plan
from explorer.core.uneven import AlphaSpace, FreeAlphas

from .uneven import EXACT_MAX_BYTES, _space_of, exact_uneven, is_path
from .uneven_joint import JointOptions, joint_uneven


def constrained_uneven(network: Network, array: ArraySpec, space: Space, alphas,
                       max_bytes: int = EXACT_MAX_BYTES, free: FreeAlphas = FreeAlphas.UNLIKE,
                       time_limit_s: float | None = None, rules: SplitRules = TIME_ONLY, seeds=(),
                       even: tuple[Plan, ...] | None = None) -> Solution:
    """The proven optimum under ``rules`` (module docstring): the joint solver where it applies
    (its plan's status, value and bound, named ``exact``; the first of ``seeds`` its start: cut
    while it builds its tables, that plan if it keeps every rule), else ``exact_uneven`` (stopped at
    the time limit: the best of its incumbent and ``seeds``). ``seeds`` may be a generator (the
    split's: the equal-split plan, then the level DP's): only its first is read before a solve.
    ``even``: the even exact solve under ``rules``, done already (``joint_uneven``'s): a start of the joint solver."""
    aspace = _space_of(array, alphas, free)
    if not joint_takes(network, array, aspace, rules):  # outside its scope or objective: the Pareto DP (chains)
        sol = exact_uneven(network, array, space, aspace, max_bytes, free, time_limit_s, rules, seeds=seeds)
        sol.info["method"] = "pareto-dp"
        return sol
    first = tuple(islice(iter(seeds), 1))
    first += tuple(p for p in even or () if p not in first)  # (the joint solver starts from it: not solved again)
    sol = joint_under(network, array, space, aspace, time_limit_s or SOLVE_TIME_LIMIT, rules, starts=first, even=even)
    return replace(sol, solver="exact")


def joint_takes(network: Network, array: ArraySpec, aspace: AlphaSpace, rules: SplitRules = TIME_ONLY) -> bool:
    """Whether ``joint_under`` takes the instance, checked at once (nothing built): the step time
    (``joint_refusal``), its scope (``check_scope``) and a series-parallel network (``blocks``), all
    that ``joint_uneven`` refuses; ``constrained_uneven`` runs the Pareto DP where it does not."""
    from .joint_columns import _VirtualSource
    from .uneven_joint import check_scope
    from .uneven_sp import blocks

    if joint_refusal(rules.objective):
        return False
    try:
        check_scope(network, array, aspace)
        blocks(_VirtualSource.of(network))
    except Refused:
        return False
    return True


def runs_pareto_dp(network: Network, array: ArraySpec, aspace: AlphaSpace, rules: SplitRules, constrained: bool) -> bool:
    """Whether a solve reaches the exact Pareto DP (``exact_uneven``, which reads its seeds when it
    stops): on a chain, ``constrained_uneven`` (``constrained``) where the joint solver does not
    take the instance (``joint_takes``), ``exact_uneven`` always; elsewhere neither does. A caller
    asks this before the solve (e.g. to compute a seed first: ``app.split_solve.SeedPlans``)."""
    return is_path(network) and not (constrained and joint_takes(network, array, aspace, rules))


def joint_under(network: Network, array: ArraySpec, space: Space, aspace: AlphaSpace, time_limit_s: float,
                rules: SplitRules, starts: tuple[Plan, ...] = (), even: tuple[Plan, ...] | None = None) -> Solution:
    """The joint solver under ``rules`` (pins, forbids, caps, memory; the step time): the one route of
    ``--split optimal`` with or without ``--solver exact``. Its status, plan and bound as it proves
    them (optimal; feasible with the bound; infeasible; unknown); Refused outside its scope.
    ``even``: the even exact solve under ``rules`` done already, its plan among ``starts`` (``joint_uneven``)."""
    sol = joint_uneven(network, array, space, aspace, JointOptions(time_limit_s=time_limit_s), starts=starts,
                       types_allowed=(lambda h, l: rules.types(network, space, h, l)) if rules.restricts_types else None,  # noqa: E741
                       rules=rules, even=even)
    sol.info["method"] = "joint:bound+labels"
    return sol
