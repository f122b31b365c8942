"""HyPar's Figs. 5-13 (HPCA 2019): our numbers beside the paper's, figure by figure.

Each ``figN`` returns a ``Figure``: rows ``series, x, ours, paper, unit, error`` (error: ours /
paper - 1 for numbers; differing cells for plans) and what to draw. Everything runs on the
paper array (``hypar-paper``: one shared medium, calibrated ONCE, globally, by
bench/calibrate_hypar.py; nothing here is fitted), at the paper's batch, with HyPar's
hierarchical DP, under the chosen accounting (``Accounting.MODEL``, the default, or
``HYPAR_FIGURES``: explorer/core/paper_accounting.py). Normalisations are the paper's: Figs.
6, 7 and 12 to data parallelism on the H-tree, Fig. 11 to ONE accelerator, Fig. 13 to the trick.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from itertools import product
from pathlib import Path
from typing import Any

from ...core.paper_accounting import Accounting, level_costs
from ...core.partition import PartitionType
from ...core.plan import Plan
from .paper import paper_values
from .points import Ledger, Point, figures, point

SERIES = {"hypar": "hypar", "all-I": "data-parallel", "all-II": "model-parallel", "trick": "trick"}


@dataclass(frozen=True)
class Row:
    series: str
    x: str
    ours: float | str | None
    paper: float | str | None
    unit: str
    error: float | int | None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Figure:
    number: int
    title: str
    rows: tuple[Row, ...]
    chart: dict[str, Any] = field(default_factory=dict)  # what draw.py needs beyond the rows
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Context:
    accounting: Accounting = Accounting.MODEL
    cache: Path | None = None
    ledger: Ledger = field(default_factory=Ledger, compare=False)  # where the points came from


def gmean(xs) -> float:
    xs = [float(x) for x in xs]
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def rel(ours, paper) -> float | None:
    if isinstance(ours, (int, float)) and isinstance(paper, (int, float)) and paper:
        return float(ours) / float(paper) - 1
    return None


def _row(series, x, ours, paper, unit) -> Row:
    return Row(series, str(x), ours, paper, unit, rel(ours, paper))


def _points(ctx: Context) -> dict[str, Point]:
    pv = paper_values()
    return {name: point(pv.network(name), 4, ctx.accounting, ctx.cache, ctx.ledger) for name in pv.networks}


def _bars(ctx: Context, n: int, values, unit: str, series=("all-II", "all-I", "hypar")) -> Figure:
    """A per-network figure: ``values(point, plan)`` for each series, plus the gmean."""
    pv = paper_values()
    pts = _points(ctx)
    rows = []
    for plan in series:
        name = SERIES[plan]
        ours = {net: float(values(p, plan)) for net, p in pts.items()}
        ours["gmean"] = gmean(ours.values())
        rows += [_row(name, x, ours[x], pv.series(n, name).get(x), unit) for x in ours]
    fig = pv.figure(n)
    return Figure(n, fig["title"], tuple(rows), {"kind": "bars", "log": fig.get("scale") == "log", "ylabel": unit})


def fig6(ctx: Context) -> Figure:
    return _bars(ctx, 6, lambda p, plan: figures(p, "all-I").step_s / figures(p, plan).step_s, "x data parallelism")


def fig7(ctx: Context) -> Figure:
    return _bars(ctx, 7, lambda p, plan: figures(p, "all-I").energy_J / figures(p, plan).energy_J, "x data parallelism")


def fig8(ctx: Context) -> Figure:
    return _bars(ctx, 8, lambda p, plan: figures(p, plan).traffic_bytes / 10**9, "GB")


def _code(plan: Plan) -> list[str]:
    return ["".join("1" if t is PartitionType.II else "0" for t in row) for row in plan.types]


def fig5(ctx: Context) -> Figure:
    pv = paper_values()
    rows, panels = [], []
    for name, p in _points(ctx).items():
        ours, paper = _code(p.plan("hypar")), pv.figure(5)["plans"][name]
        for h, (o, q) in enumerate(zip(ours, paper)):
            rows.append(Row("hypar", f"{name} H{h + 1}", o, q, "plan (1 = model parallel)",
                            sum(a != b for a, b in zip(o, q))))
        panels.append((name, [x.name for x in p.network.layers], ours, paper))
    return Figure(5, pv.figure(5)["title"], tuple(rows), {"kind": "plans", "panels": panels})


def _explore(p: Point, ctx: Context, cells: list[tuple[int, int]], axis_a: list[tuple[int, int]]):
    """Performance over data parallelism of every plan that changes ``cells`` (level, layer) of the
    HyPar plan: axis a takes the cells ``axis_a`` (bit strings), axis b the others."""
    base = [list(row) for row in p.plan("hypar").types]
    axis_b = [c for c in cells if c not in axis_a]
    dp = figures(p, "all-I").step_s
    grid = {}
    for bits in product((0, 1), repeat=len(cells)):
        rows = [r[:] for r in base]
        for (h, l), b in zip(axis_a + axis_b, bits):
            rows[h][l] = PartitionType.II if b else PartitionType.I
        plan = Plan(tuple(tuple(r) for r in rows))
        pt = Point(p.network, p.levels, ctx.accounting, (("x", plan, level_costs(p.network, plan, ctx.accounting)),))
        code = "".join(map(str, bits))
        grid[(code[:len(axis_a)], code[len(axis_a):])] = float(dp / figures(pt, "x").step_s)
    return grid


def _apart(a: float, b: float) -> str:
    """The format spec (4 significant digits or more) under which ``a`` and ``b`` print apart where they differ."""
    d = 4
    while a != b and d < 17 and f"{a:.{d}g}" == f"{b:.{d}g}":
        d += 1
    return ".4g" if d == 4 else f"#.{d}g"  # "#": 2.00000 against 1.99999, not 2


def _peak_note(grid: dict, peak, ties: list, paper_peak: tuple) -> str:
    """Figs. 9, 10: how many plans reach our peak, and whether the paper's peak plan is one of them
    (a tie, stated) or how far below it scores (with the digits that tell the two apart)."""
    top, theirs, name = grid[peak], grid[paper_peak], ",".join(paper_peak)
    head = f"  {len(ties)} of {len(grid)} plans reach our peak {top:.4g}"
    if paper_peak == peak:
        return head + f"; the paper's peak plan {name} is ours"
    if paper_peak in ties:
        return head + f"; the paper's peak plan {name} is one of them (a tie: the peak row counts the cells it differs by)"
    f = _apart(top, theirs)
    head += f" ({top:{f}})" if f != ".4g" else ""
    return head + f"; the paper's peak plan {name} scores {theirs:{f}} here, {(1 - theirs / top) * 100:.2g}% lower"


def _space_figure(ctx: Context, n: int, cells_a, cells_b, label_a: str, label_b: str) -> Figure:
    pv = paper_values()
    fig = pv.figure(n)
    p = point(pv.network(fig["network"]), 4, ctx.accounting, ctx.cache, ctx.ledger)
    grid = _explore(p, ctx, cells_a + cells_b, cells_a)
    code = "".join("1" if p.plan("hypar").at(h, l) is PartitionType.II else "0" for h, l in cells_a + cells_b)
    hy = (code[:len(cells_a)], code[len(cells_a):])
    peak = max(grid, key=lambda k: (grid[k], k == hy))
    ties = [k for k, v in grid.items() if v == grid[peak]]
    rows = []
    for name, key in (("hypar", hy), ("peak", peak)):
        paper = fig["series"][name]
        code_ab, paper_ab = ",".join(key), ",".join(paper["plan"])
        differ = sum(a != b for a, b in zip(code_ab, paper_ab))  # cells, even where the two plans tie (the note says so)
        rows.append(Row(name, "plan", code_ab, paper_ab, f"{label_a},{label_b} (1 = model parallel)", differ))
        rows.append(_row(name, "performance", grid[key], paper["performance"], "x data parallelism"))
    notes = (_peak_note(grid, peak, ties, tuple(fig["series"]["peak"]["plan"])),)
    chart = {"kind": "grid", "grid": grid, "xlabel": label_b, "ylabel": label_a, "marks": {"hypar": hy, "peak": peak},
             "paper_marks": {k: tuple(fig["series"][k]["plan"]) for k in ("hypar", "peak")}}
    return Figure(n, fig["title"], tuple(rows), chart, notes)


def fig9(ctx: Context) -> Figure:
    """Lenet-c: levels H1 and H4 explored for its four layers, H2 and H3 as HyPar chose."""
    return _space_figure(ctx, 9, [(0, l) for l in range(4)], [(3, l) for l in range(4)], "H1", "H4")  # noqa: E741


def fig10(ctx: Context) -> Figure:
    """VGG-A: conv5_2 and fc6 (the paper's fc1) explored at H1..H4, every other cell as HyPar chose."""
    names = [x.name for x in paper_values().network("VGG-A").layers]
    a, b = names.index("conv5_2"), names.index("fc6")
    return _space_figure(ctx, 10, [(h, a) for h in range(4)], [(h, b) for h in range(4)], "conv5_2", "fc6")


def fig11(ctx: Context) -> Figure:
    """VGG-E on 1..64 accelerators: speedup over one accelerator (all FLOPs, no communication)."""
    pv = paper_values()
    fig = pv.figure(11)
    net = pv.network(fig["network"])
    rows, speed, traffic = [], {}, {}
    for n in fig["series"]["hypar"]:
        if n == 1:
            speed[n], traffic[n] = {"hypar": 1.0, "all-I": 1.0}, None
            continue
        p = point(net, int(n).bit_length() - 1, ctx.accounting, ctx.cache, ctx.ledger)
        t1 = figures(p, "hypar").compute_s * n
        speed[n] = {plan: float(t1 / figures(p, plan).step_s) for plan in ("hypar", "all-I")}
        traffic[n] = {plan: float(figures(p, plan).traffic_bytes) / 1e9 for plan in ("hypar", "all-I")}
    for plan in ("hypar", "all-I"):
        s = SERIES[plan]
        rows += [_row(s, n, speed[n][plan], fig["series"][s][n], "x one accelerator") for n in speed]
        rows += [_row(s, n, traffic[n][plan], fig["traffic_GB"][s].get(n), "GB") for n in speed if traffic[n]]
    return Figure(11, fig["title"], tuple(rows), {"kind": "scalability"})


def fig12(ctx: Context) -> Figure:
    """HyPar's plan on the H-tree and on the uniform-link torus, over data parallelism on the H-tree."""
    pv = paper_values()
    fig = pv.figure(12)
    pts = _points(ctx)
    rows = []
    for name, torus in (("torus", True), ("h-tree", False)):
        ours = {net: float(figures(p, "all-I").step_s / figures(p, "hypar", torus=torus).step_s) for net, p in pts.items()}
        ours["gmean"] = gmean(ours.values())
        for x, v in ours.items():
            paper = fig["series"][name].get(x)
            bound = fig.get("at_least", {}).get(name, {}).get(x)
            if paper is None and bound is not None:
                rows.append(Row(name, x, v, f">{bound}", "x data parallelism", 0 if v > bound else v / bound - 1))
            else:
                rows.append(_row(name, x, v, paper, "x data parallelism"))
    return Figure(12, fig["title"], tuple(rows), {"kind": "bars", "log": False, "ylabel": "x data parallelism (H-tree)",
                                                   "clip": 5.2})


def fig13(ctx: Context) -> Figure:
    pv = paper_values()
    fig = pv.figure(13)
    perf, energy = {}, {}
    for w in fig["workloads"]:
        net, levels = pv.workload(w)
        p = point(net, levels, ctx.accounting, ctx.cache, ctx.ledger)
        trick, hy = figures(p, "trick"), figures(p, "hypar")
        perf[w], energy[w] = float(trick.step_s / hy.step_s), float(trick.energy_J / hy.energy_J)
    perf["gmean"], energy["gmean"] = gmean(perf.values()), gmean(energy.values())
    rows = [_row("hypar", x, v, fig["series"]["hypar"][x], "x trick (performance)") for x, v in perf.items()]
    rows += [_row("hypar-energy", x, v, fig["series"]["hypar-energy"][x], "x trick (energy efficiency)")
             for x, v in energy.items()]
    return Figure(13, fig["title"], tuple(rows), {"kind": "bars", "log": False, "ylabel": "x trick",
                                                   "colours": {"hypar": "#2020d0"},
                                                   "labels": {"hypar": "HyPar performance"}})


MAKERS = {5: fig5, 6: fig6, 7: fig7, 8: fig8, 9: fig9, 10: fig10, 11: fig11, 12: fig12, 13: fig13}


def reproduce(n: int, ctx: Context) -> Figure:
    return MAKERS[n](ctx)
