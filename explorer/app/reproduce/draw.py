"""PNGs of the reproduced figures (matplotlib, headless): our values beside the paper's, on the
paper's axes, units, normalisation and scale. Ours are solid, the paper's hatched in the same
colour; every series the paper draws is in the legend."""

from __future__ import annotations

from pathlib import Path

from ..sweep import layout
from ..sweep.plot import pyplot
from .hypar import Figure, Row

COLOURS = {"model-parallel": "#2020d0", "data-parallel": "#1f6fa8", "hypar": "#33cc55", "torus": "#2020d0",
           "h-tree": "#33cc55", "hypar-energy": "#33cc55", "trick": "#999999", "peak": "#d04020"}
LABELS = {"hypar": "HyPar", "data-parallel": "data parallelism", "model-parallel": "model parallelism",
          "torus": "torus", "h-tree": "H-tree", "hypar-energy": "HyPar energy efficiency"}


def _num(v) -> float | None:
    return float(v) if isinstance(v, (int, float)) else None


def _series(rows: tuple[Row, ...], unit: str | None = None) -> dict[str, list[Row]]:
    out: dict[str, list[Row]] = {}
    for r in rows:
        if unit is None or r.unit == unit:
            out.setdefault(r.series, []).append(r)
    return out


def _grouped_bars(ax, groups: dict[str, list[Row]], log: bool, clip: float | None = None,
                  colours: dict | None = None, labels: dict | None = None) -> None:
    xs = [r.x for r in next(iter(groups.values()))]
    n = len(groups)
    width = 0.8 / (2 * n)
    for i, (name, rows) in enumerate(groups.items()):
        colour = (colours or {}).get(name) or COLOURS.get(name, "#888888")
        label = (labels or {}).get(name) or LABELS.get(name, name)
        for j, (kind, values) in enumerate((("ours", [_num(r.ours) for r in rows]), ("paper", [_num(r.paper) for r in rows]))):
            pos = [k + (2 * i + j - n + 0.5) * width for k in range(len(xs))]
            shown = [(p, v) for p, v in zip(pos, values) if v is not None]
            heights = [min(v, clip) if clip else v for _, v in shown]
            style = {"color": colour} if kind == "ours" else {"facecolor": "white", "edgecolor": colour, "hatch": "////"}
            ax.bar([p for p, _ in shown], heights, width, label=f"{label} ({kind})", linewidth=0.8, **style)
            for (p, v), h in zip(shown, heights):
                if clip and v > clip:
                    ax.text(p, h * 1.01, f"{v:.1f}", ha="center", va="bottom", fontsize=7)
        for k, r in enumerate(rows):
            if isinstance(r.paper, str) and r.paper.startswith(">") and clip:  # a bound the paper prints
                p = k + (2 * i + 1 - n + 0.5) * width
                ax.bar([p], [clip], width, facecolor="white", edgecolor=colour, hatch="////", linewidth=0.8)
                ax.text(p, clip * 1.06, r.paper, ha="center", va="bottom", fontsize=7, color=colour)
    ax.set_xticks(range(len(xs)), xs, rotation=35, ha="right", fontsize=8)
    if log:
        ax.set_yscale("log")
    if clip:
        ax.set_ylim(0, clip * 1.2)
    ax.grid(axis="y", alpha=0.3, which="both")


def _legend_below(f, handles, labels, ncol: int) -> None:
    """The legend under the axes and their tick labels, with no band between (constrained layout
    makes room for it; a legend anchored at a fixed offset left a gap or overlapped the labels)."""
    f.legend(handles, labels, fontsize=7, ncol=ncol, loc="outside lower center")


def _bars(fig: Figure, ax) -> None:
    _grouped_bars(ax, _series(fig.rows), fig.chart.get("log", False), fig.chart.get("clip"), fig.chart.get("colours"),
                  fig.chart.get("labels"))
    ax.set_ylabel(fig.chart["ylabel"])
    _legend_below(ax.figure, *ax.get_legend_handles_labels(), ncol=3)


def _scalability(fig: Figure, ax) -> None:
    _grouped_bars(ax, _series(fig.rows, "x one accelerator"), log=False)
    ax.set_ylabel("performance gain over one accelerator")
    ax.set_xlabel("accelerators")
    right = ax.twinx()
    for name, rows in _series(fig.rows, "GB").items():
        pos = [k for k, _ in enumerate(rows, start=1)]
        colour = "black"
        line = "--" if name == "data-parallel" else "-"
        label = LABELS[name]
        right.plot(pos, [float(r.ours) for r in rows], line, color=colour, marker="o", label=f"{label} traffic (ours)")
        right.plot(pos, [float(r.paper) for r in rows], line, color="#cc3333", marker="s", mfc="none",
                   label=f"{label} traffic (paper)")
    right.set_yscale("log")
    right.set_ylabel("total communication / GB")
    h1, l1 = ax.get_legend_handles_labels()
    h2, l2 = right.get_legend_handles_labels()
    _legend_below(ax.figure, h1 + h2, l1 + l2, ncol=4)


def _plans(fig: Figure, plt, title: str):
    panels = fig.chart["panels"]
    f, axes = plt.subplots(2, 5, figsize=(15, 5.2), gridspec_kw={"width_ratios": [4, 4, 5, 8, 19]})
    order = [0, 1, 2, 3, 5, 4, 6, 7, 8, 9]  # small networks in the narrow columns
    for ax, k in zip(axes.flat, order):
        name, layers, ours, paper = panels[k]
        for h, (o, q) in enumerate(zip(ours, paper)):
            for li, (a, b) in enumerate(zip(o, q)):
                ax.scatter(li, -h, s=60, facecolor="black" if a == "1" else "white", edgecolor="black", zorder=2)
                if a != b:
                    ax.scatter(li, -h, s=190, facecolor="none", edgecolor="red", linewidth=1.5, zorder=3)
        ax.set_xticks(range(len(layers)), layers, rotation=0, fontsize=6)  # turned where they overlap
        ax.set_yticks([0, -1, -2, -3], ["H1", "H2", "H3", "H4"], fontsize=7)
        ax.set_xlim(-0.7, len(layers) - 0.3)
        ax.set_ylim(-3.6, 0.6)
        differ = sum(a != b for o, q in zip(ours, paper) for a, b in zip(o, q))
        ax.set_title(f"{name} ({differ} cell{' differs' if differ == 1 else 's differ'})", fontsize=8)
    f.suptitle(title + "\nfilled: model parallelism (II), open: data parallelism (I); red ring: the paper's Fig. 5 "
               "has the other type", fontsize=9)
    _level_where_they_fit(f, axes.flat)
    return f


def _level_where_they_fit(f, axes) -> None:
    """Each panel's layer names level where they fit, else all turned upright (never thinned: each
    names a column of marks)."""
    f.tight_layout()
    f.canvas.draw()
    renderer = f.canvas.get_renderer()
    for ax in axes:
        labels = layout.shown_xticklabels(ax)
        if layout.overlapping(labels, renderer):
            for t in labels:
                t.set_rotation(90)
    f.tight_layout()


def _grid(fig: Figure, plt, title: str):
    grid = fig.chart["grid"]
    a_codes = sorted({k[0] for k in grid})
    b_codes = sorted({k[1] for k in grid})
    values = [[grid[(a, b)] for b in b_codes] for a in a_codes]
    f, ax = plt.subplots(figsize=(7.5, 7), layout="constrained")
    im = ax.imshow(values, cmap="viridis", origin="lower")
    f.colorbar(im, ax=ax, label="performance over data parallelism")
    ax.set_xticks(range(len(b_codes)), b_codes, rotation=90, fontsize=7)
    ax.set_yticks(range(len(a_codes)), a_codes, fontsize=7)
    ax.set_xlabel(fig.chart["xlabel"] + " (one digit per level or layer; 1 = model parallel)")
    ax.set_ylabel(fig.chart["ylabel"])
    marks = [("hypar", fig.chart["marks"]["hypar"], "o", "black", "HyPar (ours)"),
             ("peak", fig.chart["marks"]["peak"], "x", "red", "peak (ours)"),
             ("hypar", fig.chart["paper_marks"]["hypar"], "s", "orange", "HyPar (paper)"),
             ("peak", fig.chart["paper_marks"]["peak"], "D", "magenta", "peak (paper)")]
    for _, (a, b), marker, colour, label in marks:
        style = {"c": colour} if marker == "x" else {"facecolor": "none", "edgecolor": colour}
        ax.scatter(b_codes.index(b), a_codes.index(a), marker=marker, s=110, linewidth=2, label=label, **style)
    perf = {r.series: r for r in fig.rows if r.x == "performance"}
    f.suptitle(title + f"\nours: HyPar {float(perf['hypar'].ours):.2f}, peak {float(perf['peak'].ours):.2f}; "
                 f"paper: HyPar {perf['hypar'].paper}, peak {perf['peak'].paper}", fontsize=9)
    _legend_below(f, *ax.get_legend_handles_labels(), ncol=4)  # inside the axes it covered the top-left cells
    return f


def render(fig: Figure, accounting: str):
    """The figure, laid out (a matplotlib Figure; ``draw`` saves it)."""
    plt = pyplot("explore reproduce")
    kind = fig.chart.get("kind")
    ours = f"hypar-paper array, one global calibration; accounting {accounting}"
    subtitle = f"ours: {ours}" if kind in ("plans", "grid") else f"solid: ours ({ours}); hatched: the paper's"
    title = f"HyPar Fig. {fig.number}: {fig.title}\n{subtitle}"
    if kind == "plans":
        f = _plans(fig, plt, title)
    elif kind == "grid":
        f = _grid(fig, plt, title)
    else:
        f, ax = plt.subplots(figsize=(9, 4.8), layout="constrained")
        (_scalability if kind == "scalability" else _bars)(fig, ax)
        ax.set_title(title, fontsize=9)
    return f  # laid out: the plans by tight_layout, the others by their constrained layout


def draw(fig: Figure, path: Path, accounting: str) -> None:
    """Write the figure's PNG to ``path`` (a PNG whatever its name: ``files.temp_beside``'s temp file)."""
    from .files import MARK

    f = render(fig, accounting)
    f.savefig(path, dpi=90, format="png", metadata=dict([MARK]))  # MARK: reproduce may replace it
    import matplotlib.pyplot as plt

    plt.close(f)
