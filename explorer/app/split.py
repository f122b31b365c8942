"""``explore split``: a plan with uneven splits on an array of kinds, against equal-split plans.

``--split equal`` keeps alpha = 1/2 everywhere (what ``explore`` does on any array), ``proportional``
sets each level's alpha to its subgroup 0's part of the group's peak compute, ``search`` starts
from the better of those two and moves one level's alpha at a time over the declared grid
(multiples of 1/grid) while the step time drops (``solvers.hetero.search_level_alphas``: no
proof). The partition types are those of the time-optimal equal-split plan of the hierarchical
DP in the chosen space. Every step time is the slowest accelerator's (``core.hetero``).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ..core.array import ArraySpec
from ..core.hetero import HeteroPlan, alpha_grid, check_array, evaluate_hetero, proportional_alphas, with_level_alphas
from ..core.network import Network
from ..core.objective import Objective
from ..core.partition import Space
from ..core.problem import Problem
from ..core.solution import SolveOptions, Status
from ..solvers import get_solver
from ..solvers.hetero import search_level_alphas
from .baselines import baseline_plan


class Split(enum.Enum):
    EQUAL = "equal"
    PROPORTIONAL = "proportional"
    SEARCH = "search"

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

    def speedup(self, name: str) -> Fraction:
        return dict(self.compared)[name] / self.step_time_s

    def level_alphas(self) -> list[dict[Fraction, list[str]]]:
        """Per level: alpha -> the layers that take it (one entry when the level is uniform)."""
        out = []
        for row in self.plan.alphas:
            d: dict[Fraction, list[str]] = {}
            for name, a in zip(self.layer_names, row):
                d.setdefault(a, []).append(name)
            out.append(d)
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "network": self.network, "array": self.array, "space": str(self.space), "split": str(self.split),
            "alpha_grid": self.grid, "status": self.status.value,
            "plan": [[t.value for t in row] for row in self.plan.types],
            "alphas": [[str(a) for a in row] for row in self.plan.alphas],
            "step_time_s": float(self.step_time_s), "step_time_s_exact": str(self.step_time_s),
            "group_times_s": [float(t) for t in self.group_times_s], "idle_s": float(self.idle_s),
            "compared": {name: {"step_time_s": float(t), "speedup": float(t / self.step_time_s)} for name, t in self.compared},
            "wall_s": self.wall_s,
        }


def _dp_plan(problem: Problem):
    sol = get_solver("dp")(problem, SolveOptions())
    return sol.plan


def split_run(network: Network, array: ArraySpec, space: Space, split: Split, grid: int = 16) -> SplitReport:
    import time

    t0 = time.perf_counter()
    check_array(array)
    problem = Problem(network, array, space, Objective.TIME)
    types = _dp_plan(problem)
    hypar = _dp_plan(Problem(network, array, Space.HYPAR, Objective.TIME))
    compared = [(name, evaluate_hetero(network, array, HeteroPlan.equal(baseline_plan(problem, name))).step_time_s)
                for name in COMPARED[:2]]
    compared.append(("hypar", evaluate_hetero(network, array, HeteroPlan.equal(hypar)).step_time_s))
    equal = HeteroPlan.equal(types)
    status = Status.LEVEL_OPTIMAL if split is Split.EQUAL else Status.FEASIBLE
    if split is Split.EQUAL:
        plan = equal
    else:
        prop = with_level_alphas(types, proportional_alphas(array))
        plan = prop
        if split is Split.SEARCH:
            start = min((equal, prop), key=lambda p: evaluate_hetero(network, array, p).step_time_s)
            plan = search_level_alphas(network, array, start, alpha_grid(grid)).plan
    ev = evaluate_hetero(network, array, plan)
    g0, g1, idle = ev.top_groups()
    return SplitReport(network.name, array.name, space, split, grid, status, plan, ev.step_time_s, (g0, g1), idle,
                       tuple(compared), tuple(L.name for L in network.layers), time.perf_counter() - t0)


def _ms(x: Fraction) -> str:
    return f"{float(x) * 1e3:.4g} ms"


def render_split(r: SplitReport) -> str:
    lines = [f"{r.network} on {r.array}: split {r.split} (alpha grid 1/{r.grid}), space {r.space}, {r.status}",
             f"step time {_ms(r.step_time_s)} (the slowest accelerator)",
             f"top-level groups: {_ms(r.group_times_s[0])} and {_ms(r.group_times_s[1])}; the faster idles {_ms(r.idle_s)}",
             "alpha (subgroup 0's share) per level:"]
    for h, d in enumerate(r.level_alphas()):
        if len(d) == 1:
            lines.append(f"  level {h}: {next(iter(d))} (every layer)")
        else:
            lines.append(f"  level {h}: " + "; ".join(f"{a}: {', '.join(names)}" for a, names in d.items()))
    lines.append("types per level: " + " | ".join(" ".join(t.value for t in row) for row in r.plan.types))
    lines.append("speedup over equal-split plans:")
    labels = {"all-I": "data parallelism", "trick": "the trick (conv I, fc II)", "hypar": "HyPar's plan (hypar DP, time)"}
    for name, t in r.compared:
        lines.append(f"  {labels[name]:<32} {_ms(t):>12}  x{float(t / r.step_time_s):.3f}")
    return "\n".join(lines) + "\n"
