"""``explore split``: a plan with uneven splits on an array of kinds, against equal-split plans.

``--split equal`` keeps alpha = 1/2 everywhere (what ``explore`` does on any array), ``proportional``
sets each group's alpha to its subgroup 0's part of the group's peak compute (any mix), ``search``
starts from the better of those two and moves one free class's alpha at a time over the declared
space (``core.hetero.alpha_space``, multiples of 1/grid) while the step time drops
(``solvers.hetero.search_level_alphas``: no proof); for these three the partition types are those
of the time-optimal equal-split plan of the hierarchical DP in the chosen space. ``optimal``
chooses types and alphas jointly (``solvers.hetero_joint``: a proof, or the best plan with a
proven bound and the gap; arrays with one kind per half only). ``levels``: AccPar's hierarchical DP chooses
every layer's type and alpha level by level (``solvers.hetero_levels``: a heuristic, no proof).
Every step time is the slowest accelerator's (``core.hetero``).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ..core.array import ArraySpec
from ..core.hetero import (
    AlphaSpace,
    FreeAlphas,
    HeteroPlan,
    alpha_grid,
    alpha_space,
    check_array,
    evaluate_hetero,
    proportional_alphas,
    with_group_alphas,
)
from ..core.network import Network
from ..core.objective import Objective
from ..core.partition import Space
from ..core.problem import Problem
from ..core.solution import SolveOptions, Status
from ..solvers import get_solver
from ..solvers.hetero import search_level_alphas
from ..solvers.hetero_levels import levels_hetero
from .baselines import baseline_plan


class Split(enum.Enum):
    EQUAL = "equal"
    PROPORTIONAL = "proportional"
    SEARCH = "search"
    OPTIMAL = "optimal"
    LEVELS = "levels"  # AccPar's hierarchical DP: type and alpha per layer, level by level

    def __str__(self) -> str:
        return self.value


COMPARED = ("all-I", "trick", "hypar")  # data parallelism, the trick, HyPar's DP plan: each with an equal split


@dataclass(frozen=True)
class SplitReport:
    network: str
    array: str
    space: Space
    split: Split
    grid: int
    status: Status
    plan: HeteroPlan
    step_time_s: Fraction
    group_times_s: tuple[Fraction, Fraction]  # the two top-level groups' slowest accelerators
    idle_s: Fraction  # how long the faster top-level group waits
    compared: tuple[tuple[str, Fraction], ...]  # (plan, its equal-split step time)
    layer_names: tuple[str, ...]
    wall_s: float
    alpha_space: AlphaSpace | None = None  # the declared space (groups' classes)
    class_labels: tuple[tuple[str, ...], ...] = ()  # [level][class]: "v2x4|v3x4"
    bound_s: Fraction | None = None  # a proven lower bound on the step time (optimal: the step time)
    equal_best_s: Fraction | None = None  # the best equal-split plan's step time (optimal only)
    solver_wall_s: float | None = None  # optimal: the joint solver's own wall time (to proof or to its limit)

    @property
    def gap(self) -> Fraction | None:
        return None if self.bound_s is None else (self.step_time_s - self.bound_s) / self.step_time_s

    def speedup(self, name: str) -> Fraction:
        return dict(self.compared)[name] / self.step_time_s

    def level_alphas(self) -> list[dict[Fraction, list[str]]]:
        """Per level: alpha -> the layers that take it in group 0 (one entry when the level is uniform)."""
        return [self._alpha_layers(groups[0]) for groups in self.plan.alphas]

    def _alpha_layers(self, row) -> dict[Fraction, list[str]]:
        d: dict[Fraction, list[str]] = {}
        for name, a in zip(self.layer_names, row):
            d.setdefault(a, []).append(name)
        return d

    def class_alphas(self) -> list[list[tuple[str, dict[Fraction, list[str]]]]]:
        """Per level, per class of groups (identical subtrees): its label and alpha -> layers."""
        out = []
        for h, groups in enumerate(self.plan.alphas):
            classes = self.alpha_space.group_class[h] if self.alpha_space else (0,) * len(groups)
            row = []
            for c in range(max(classes) + 1):
                g = classes.index(c)
                label = self.class_labels[h][c] if self.class_labels else f"group {g}"
                row.append((label, self._alpha_layers(groups[g])))
            out.append(row)
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "network": self.network, "array": self.array, "space": str(self.space), "split": str(self.split),
            "alpha_grid": self.grid, "status": self.status.value,
            "plan": [[t.value for t in row] for row in self.plan.types],
            "alphas": [[[str(a) for a in row] for row in groups] for groups in self.plan.alphas],  # [level][group][layer]
            "step_time_s": float(self.step_time_s), "step_time_s_exact": str(self.step_time_s),
            "group_times_s": [float(t) for t in self.group_times_s], "idle_s": float(self.idle_s),
            "compared": {name: {"step_time_s": float(t), "speedup": float(t / self.step_time_s)} for name, t in self.compared},
            "wall_s": self.wall_s,
            "bound_s": None if self.bound_s is None else float(self.bound_s),
            "bound_s_exact": None if self.bound_s is None else str(self.bound_s),
            "gap": None if self.gap is None else float(self.gap),
            "equal_best_s": None if self.equal_best_s is None else float(self.equal_best_s),
        }


def _dp_plan(problem: Problem):
    sol = get_solver("dp")(problem, SolveOptions())
    return sol.plan


def _runs(names) -> str:
    out: list[list] = []
    for n in names:
        if out and out[-1][0] == n:
            out[-1][1] += 1
        else:
            out.append([n, 1])
    return " ".join(f"{n}x{k}" for n, k in out)


def class_labels(array: ArraySpec, aspace: AlphaSpace) -> tuple[tuple[str, ...], ...]:
    """Per level per class: its subgroups' kinds, run-length coded ("v2x4|v3x4")."""
    names = [k.name for k in array.leaves] if array.leaves else ["acc"] * array.accelerators
    out = []
    for h, classes in enumerate(aspace.group_class):
        n = 2 ** (array.levels - h)
        row = []
        for c in range(max(classes) + 1):
            g = classes.index(c)
            leaves = names[g * n : (g + 1) * n]
            row.append(_runs(leaves[: n // 2]) + "|" + _runs(leaves[n // 2 :]))
        out.append(tuple(row))
    return tuple(out)


def split_run(network: Network, array: ArraySpec, space: Space, split: Split, grid: int = 16,
              free: FreeAlphas = FreeAlphas.UNLIKE, time_limit_s: float = 10.0) -> SplitReport:
    """One ``explore split`` run on any mix of kinds (module docstring)."""
    import time

    t0 = time.perf_counter()
    check_array(array)
    aspace = alpha_space(array, alpha_grid(grid), free)
    problem = Problem(network, array, space, Objective.TIME)
    types = _dp_plan(problem)
    hypar = _dp_plan(Problem(network, array, Space.HYPAR, Objective.TIME))
    compared = [(name, evaluate_hetero(network, array, HeteroPlan.equal(baseline_plan(problem, name))).step_time_s)
                for name in COMPARED[:2]]
    compared.append(("hypar", evaluate_hetero(network, array, HeteroPlan.equal(hypar)).step_time_s))
    equal = HeteroPlan.equal(types)
    status = Status.LEVEL_OPTIMAL if split is Split.EQUAL else Status.FEASIBLE
    bound = equal_best = solver_wall = None
    if split is Split.EQUAL:
        plan = equal
    elif split is Split.OPTIMAL:
        plan, status, bound, equal_best, solver_wall = _optimal(network, array, space, aspace, equal, time_limit_s)
    elif split is Split.LEVELS:
        plan = levels_hetero(network, array, space, aspace).plan
    else:
        prop = with_group_alphas(types, proportional_alphas(array))
        plan = prop
        if split is Split.SEARCH:
            start = min((equal, prop), key=lambda p: evaluate_hetero(network, array, p).step_time_s)
            plan = search_level_alphas(network, array, start, aspace).plan
    ev = evaluate_hetero(network, array, plan)
    g0, g1, idle = ev.top_groups()
    return SplitReport(network.name, array.name, space, split, grid, status, plan, ev.step_time_s, (g0, g1), idle,
                       tuple(compared), tuple(L.name for L in network.layers), time.perf_counter() - t0,
                       aspace, class_labels(array, aspace), bound, equal_best, solver_wall)


def _optimal(network: Network, array: ArraySpec, space: Space, aspace: AlphaSpace, equal: HeteroPlan,
             time_limit_s: float):
    """``--split optimal``: the joint solver from the equal-split and the search plans; a one-line
    error where it does not apply. (plan, status, bound, best equal-split step time)."""
    from ..core.errors import SpecError
    from ..solvers.hetero import HeteroRefused
    from ..solvers.hetero_joint import JointOptions, joint_hetero

    search = search_level_alphas(network, array, equal, aspace).plan
    try:
        sol = joint_hetero(network, array, space, aspace, JointOptions(time_limit_s=time_limit_s), starts=(equal, search))
    except HeteroRefused as err:
        raise SpecError("--split", f"optimal: {err}; use --split search") from None
    return sol.plan, sol.status, sol.bound_s, sol.equal_best_s, sol.wall_s


def _ms(x: Fraction) -> str:
    return f"{float(x) * 1e3:.4g} ms"


def _alphas_text(d: dict[Fraction, list[str]]) -> str:
    if len(d) == 1:
        return f"{next(iter(d))} (every layer)"
    return "; ".join(f"{a}: {', '.join(names)}" for a, names in d.items())


def render_split(r: SplitReport) -> str:
    lines = [f"{r.network} on {r.array}: split {r.split} (alpha grid 1/{r.grid}), space {r.space}, {r.status}",
             f"step time {_ms(r.step_time_s)} (the slowest accelerator)"
             + ("" if r.bound_s is None else f"; proven bound {_ms(r.bound_s)}, gap {float(r.gap) * 100:.3f}%"),
             f"top-level groups: {_ms(r.group_times_s[0])} and {_ms(r.group_times_s[1])}; the faster idles {_ms(r.idle_s)}",
             "alpha (subgroup 0's share) per level:"]
    for h, classes in enumerate(r.class_alphas()):
        if all(d == classes[0][1] for _, d in classes):  # every group of the level alike
            lines.append(f"  level {h}: {_alphas_text(classes[0][1])}")
        else:
            for label, d in classes:
                lines.append(f"  level {h} [{label}]: {_alphas_text(d)}")
    lines.append("types per level: " + " | ".join(" ".join(t.value for t in row) for row in r.plan.types))
    if r.equal_best_s is not None:
        lines.append(f"best equal-split plan (every alpha 1/2, types chosen for it): {_ms(r.equal_best_s)}, "
                     f"x{float(r.equal_best_s / r.step_time_s):.3f}")
    lines.append("speedup over equal-split plans:")
    labels = {"all-I": "data parallelism", "trick": "the trick (conv I, fc II)", "hypar": "HyPar's plan (hypar DP, time)"}
    for name, t in r.compared:
        lines.append(f"  {labels[name]:<32} {_ms(t):>12}  x{float(t / r.step_time_s):.3f}")
    return "\n".join(lines) + "\n"
