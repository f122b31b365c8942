"""Figures of a finished sweep (matplotlib, headless): line, bar, scatter and heatmap charts of
results.csv, a Pareto-front scatter, and one point's plan as a levels x layers grid coloured by
partition type (the form of HyPar's Fig. 5). Needs the plot extra: ``pip install -e '.[plot]'``.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable

from ...core.errors import SpecError, shown
from ...core.units import plural
from . import fonts, layout, plan_labels
from .labels import factor, label, plain_log_labels, time_unit
from .plot_checks import check_categories, check_numbers, check_series, to_float
from .table import cell, file_lines, number, numeric_columns, pareto_labels, read_json_file, read_rows
from .titles import point_scope, proven_text, titled

KINDS = ("line", "bar", "scatter", "heatmap")
TYPE_COLOURS = {"I": "#4c72b0", "II": "#dd8452", "III": "#55a868"}
MAX_TITLE, MAX_TITLE_LINES = 200, 4  # --title: refused beyond (docs/commands.md; 100,000 characters took 226 s)
BROKEN = "breaks a limit (see violations)"  # legend entry of a plan over the memory limit or a cap
BROKEN_MARK = dict(marker="x", color="black", s=46, linewidths=1.6, zorder=6)  # drawn over such a point
PARETO_STYLE = {  # label -> (legend text, marker, filled)
    "yes": ("Pareto-optimal (plan proven optimal for its objective)", "o", True),  # the legend: titles.proven_text
    "level-optimal": ("Pareto front, level-optimal only (DP)", "s", True),
    "unproven": ("Pareto front, optimality not proven", "D", False),
}
PLAN_SAID = frozenset({"model", "array", "space", "batch", "solver"})  # keys a plan's title says (not again as fixed)


@dataclass(frozen=True)
class Chart:
    """What to draw from results.csv."""

    kind: str = "line"
    x: str | None = None
    y: str | None = None
    hue: tuple[str, ...] = ()  # one or more columns: one series per combination
    z: str | None = None  # heatmap cell value
    where: tuple[tuple[str, str], ...] = ()  # keep rows whose column equals the text
    logx: bool = False
    logy: bool = False
    title: str | None = None
    reference: bool = False  # draw the paper's values from the sweep file's ``reference:`` beside ours
    units: tuple[tuple[str, str], ...] = ()  # (column, unit) of the time results drawn, picked from the data

    def unit(self, column: str | None) -> str | None:
        return dict(self.units).get(column)

    def with_units(self, rows: list[dict[str, str]]) -> "Chart":
        """The chart with each time result it draws (``labels.time_unit``) in the unit its values suit."""
        cols = [c for c in (self.x, self.y, self.z) if c]
        found = [(c, time_unit(c, [float(v) for r in rows if (v := number(r.get(c))) is not None])) for c in cols]
        return replace(self, units=tuple((c, u) for c, u in found if u is not None))


@dataclass(frozen=True)
class Plotted:
    """An image written, and what it leaves out (points a log axis cannot show), for the CLI to say."""

    path: Path
    notes: tuple[str, ...] = ()


def pyplot(command: str = "explore plot"):
    """matplotlib's pyplot on the Agg backend; one line naming ``command`` when it is missing."""
    try:
        import matplotlib
    except ImportError:
        raise SpecError(command, "needs matplotlib: pip install 'hypar-explorer[plot]' "
                                 "(in a checkout: pip install -e '.[plot]')") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fonts.use_fallbacks(matplotlib)

    return plt


def check_target(out: str | Path) -> Path:
    """The image's path, refused (``--out: ...``) when it cannot be written: called before any work."""
    from ..output import OutputError, check_writable

    path = Path(out)
    if path.suffix.lower() not in (".png", ".svg"):
        raise SpecError("--out", f"must end in .png or .svg, got {shown(str(out))}")
    if not path.parent.is_dir():
        raise SpecError("--out", f"no such folder {str(path.parent)!r}")
    try:
        check_writable(str(out), "--out")
    except OutputError as err:
        raise SpecError("--out", err.problem) from None
    return path


def _draw(out: str | Path, make: Callable[[], tuple[Any, tuple[str, ...]]]) -> Plotted:
    """Every plot's one path: check ``out`` before any work, make the figure (laid out by
    ``layout.finish``; no layout here: what it checked is what is saved) and its notes, write it,
    and add a note of the characters drawn as boxes (if any)."""
    import matplotlib.pyplot as plt

    path = check_target(out)
    before = set(plt.get_fignums())
    with fonts.missing_glyphs() as missing, fonts.literal_text():
        try:
            fig, notes = make()
        except BaseException:  # a refusal met after a figure was opened: none is left open
            for num in set(plt.get_fignums()) - before:
                plt.close(num)
            raise
        try:
            fig.savefig(path, dpi=110)
        except OSError as err:
            raise SpecError("--out", f"cannot write {path}: {err.strerror or err}") from None
        finally:
            plt.close(fig)
    return Plotted(path, notes + fonts.glyph_note(missing))


def log_dropped(pts: list, chart: Chart, categorical: bool) -> tuple[list, tuple[str, ...]]:
    """The points (x, y, ...) a log axis can draw, and a note of how many it cannot (x or y <= 0)."""
    logx = chart.logx and not categorical
    bad_x = [p for p in pts if logx and p[0] <= 0]
    bad_y = [p for p in pts if chart.logy and p[1] <= 0 and not (logx and p[0] <= 0)]
    parts = [f"{len(bad)} point{'' if len(bad) == 1 else 's'} with {col} <= 0 (log {name} axis)"
             for bad, col, name in ((bad_x, chart.x, "x"), (bad_y, chart.y, "y")) if bad]
    keep = [p for p in pts if not (logx and p[0] <= 0) and not (chart.logy and p[1] <= 0)]
    return keep, (f"not drawn: {' and '.join(parts)}",) if parts else ()


def broken(r: dict[str, str]) -> bool:
    """Whether a row's plan breaks the memory limit or a cap (its violations column is set)."""
    return bool((r.get("violations") or "").strip())


def broken_note(n: int, how: str) -> tuple[str, ...]:
    """The note (under the title, and a warning line) of how many drawn plans break a limit."""
    return (f"{n} plan{'' if n == 1 else 's'} {'breaks' if n == 1 else 'break'} a limit ({how}; see violations)",) if n else ()


def no_value_note(rows: list[dict[str, str]], y: str) -> tuple[str, ...]:
    """The note of the points with nothing to draw in ``y`` (no plan: infeasible, unknown, refused,
    an error), counted by status, so that they do not vanish from a chart silently."""
    if not rows:
        return ()
    counts: dict[str, int] = {}
    for r in rows:
        counts[r.get("status") or "no status"] = counts.get(r.get("status") or "no status", 0) + 1
    by = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
    return (f"not drawn: {plural(len(rows), 'point')} with no {y} ({by})",)


def _noted_title(ax, title: str, notes: tuple[str, ...]) -> None:
    ax.set_title("\n".join((title, *notes)), fontsize=10)


def parse_where(items: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    out = []
    for item in items:
        if "=" not in item:
            raise SpecError("--where", f"{shown(item)} is not COLUMN=VALUE")
        k, v = item.split("=", 1)
        if not k.strip():
            raise SpecError("--where", f"{shown(item)} is not COLUMN=VALUE (no column name before '=')")
        out.append((k.strip(), v.strip()))
    return tuple(out)


def check_whole(folder: Path, rows: int) -> None:
    """A folder whose sweep.json counts more points than results.csv holds (not a shard's: a merge
    of some shards written by an older explore) is refused: its lines would run across the gaps."""
    try:
        m = read_json_file(folder / "sweep.json")
        total, shard = int(m["total"]), m["shard"]
    except (OSError, ValueError, KeyError, TypeError):
        return  # a results.csv without a manifest: nothing to compare with
    if not shard and rows < total:
        raise SpecError(str(folder), f"holds {rows} of the sweep's {plural(total, 'point')} (sweep.json): a partial "
                                     "merge; merge the folders of every shard (explore sweep merge)")


def load_table(folder: str | Path, chart: Chart) -> tuple[list[str], list[dict[str, str]]]:
    cols, rows = read_rows(Path(folder))
    csv_path = Path(folder) / "results.csv" if Path(folder).is_dir() else Path(folder)
    if Path(folder).is_dir():
        check_whole(Path(folder), len(rows))
    needed = [(o, c) for o, c in (("--x", chart.x), ("--y", chart.y), ("--z", chart.z), *(("--hue", h) for h in chart.hue),
                                  *(("--where", k) for k, _ in chart.where)) if c]
    unknown = [(o, c) for o, c in needed if c not in cols]
    if unknown:
        raise SpecError(unknown[0][0], f"unknown column {', '.join(c for _, c in unknown)} (columns: {', '.join(cols)})")
    rows = filter_rows(rows, chart.where)
    for col in dict.fromkeys(c for c in (chart.x, chart.y, chart.z) if c):
        check_numbers(rows, col, col == chart.z or (col == chart.y and chart.kind != "heatmap"), csv_path)
    return cols, rows


def _matches(cell: str, value: str) -> bool:
    """A --where value matches a cell as text, as a number (1.0 is 1) or ignoring case (AlexNet)."""
    if cell == value or cell.casefold() == value.casefold():
        return True
    a, b = number(cell), number(value)
    return a is not None and a == b


def filter_rows(rows: list[dict[str, str]], where: tuple[tuple[str, str], ...]) -> list[dict[str, str]]:
    """The rows every --where filter keeps; the filter that keeps none is named with the values it could take."""
    for k, v in where:
        kept = [r for r in rows if _matches(r[k], v)]
        if not kept:
            values = _sorted_cats([r[k] for r in rows])
            shown_ = ", ".join(x or "(empty)" for x in values[:12]) + (", ..." if len(values) > 12 else "")
            raise SpecError(f"--where {k}={v}", f"no row has it (values: {shown_})" if rows else "no row left to filter")
        rows = kept
    return rows


def _label(value: str, col: str) -> str:
    return f"{col}={value}" if value.replace(".", "").isdigit() else value


def _hue_of(r: dict[str, str], hue: tuple[str, ...]) -> str:
    return " ".join(_label(r[h], h) for h in hue) if hue else ""


def _check_unique(rows: list[dict[str, str]], keys: tuple[str, ...], params: list[str]) -> None:
    """One row per (keys): otherwise say which other options vary, so the user can pick."""
    seen = set()
    for r in rows:
        k = tuple(r[c] for c in keys)
        if k in seen:
            vary = [c for c in params if c not in keys and len({x[c] for x in rows}) > 1]
            raise SpecError("--hue", f"several rows for {', '.join(f'{c}={v}' for c, v in zip(keys, k))}; "
                                            f"these columns also vary: {', '.join(vary) or '(none)'} "
                                            "(keep one value with --where COL=VALUE, or add them to --hue)")
        seen.add(k)


def _no_number(y: str, cols: list[str], rows: list[dict[str, str]]) -> SpecError:
    """--y names a column without a number: a text column (say which columns are numeric), or a
    numeric one that no row filled (say the rows' statuses)."""
    if any(r[y] not in ("", None) for r in rows):  # values, none of them a number
        numeric = [c for c in numeric_columns(cols) if any(number(r[c]) is not None for r in rows)]
        return SpecError("--y", f"{y} is a text column; numeric columns: {', '.join(numeric) or '(none)'}")
    return SpecError("--y", f"no row has a number in {y} (statuses: {', '.join(sorted({r['status'] for r in rows}))})")


def _params(cols: list[str]) -> list[str]:
    return cols[: cols.index("status")] if "status" in cols else cols


def _xvalues(rows, x, categorical: bool = False):
    """Numeric x when every value is a number (and not ``categorical``), else categories
    (numbers sorted, other values in first-seen order)."""
    nums = [number(r[x]) for r in rows]
    if not categorical and all(v is not None for v in nums):
        return [float(v) for v in nums], None
    cats = _sorted_cats([r[x] for r in rows])
    return [float(cats.index(r[x])) for r in rows], [c if c != "" else "(none)" for c in cats]


def _pow2(values) -> bool:
    return all(v > 0 and float(v).is_integer() and (int(v) & (int(v) - 1)) == 0 for v in values)


def _axes_style(ax, chart: Chart, xs, cats) -> None:
    if cats is not None:  # turned only if they would overlap (layout.finish)
        ax.set_xticks(range(len(cats)), cats)
    if chart.logx and cats is None:
        ax.set_xscale("log", base=2 if _pow2(xs) else 10)
        if _pow2(xs):
            ticks = sorted(set(xs))
            ax.set_xticks(ticks)
            ax.set_xticklabels([f"{int(t):,}" for t in ticks])
        else:
            plain_log_labels(ax.xaxis)
    elif cats is None and len(set(xs)) <= 24 and all(float(v).is_integer() for v in xs):
        ax.set_xticks(sorted(set(xs)))  # integer options (levels, batch): no 1.5 ticks
    if chart.logy:
        ax.set_yscale("log")
        plain_log_labels(ax.yaxis)
    ax.set_xlabel(label(chart.x, chart.unit(chart.x)))
    ax.set_ylabel(label(chart.y, chart.unit(chart.y)))
    ax.grid(True, alpha=0.3, which="both" if chart.logy else "major")


def read_reference(folder: str | Path) -> dict[str, Any]:
    """The ``reference:`` mapping of the sweep file a finished folder was run from (sweep.json
    names it): {figure, x, y, unit, series: {name: {x value: the paper's value}}, gmean}."""
    from ...frontends.yamlio import load_yaml_file

    try:
        source = read_json_file(Path(folder) / "sweep.json")["source"]
    except (OSError, ValueError, KeyError, TypeError):
        raise SpecError("--reference", f"no sweep.json in {folder} naming its sweep file") from None
    if not source or not Path(source).is_file():
        raise SpecError("--reference", f"the sweep file {shown(source)} is not there any more")
    ref = load_yaml_file(source).get("reference")
    series = ref.get("series") if isinstance(ref, dict) else None
    if not isinstance(series, dict) or not series or not all(isinstance(v, dict) for v in series.values()):
        raise SpecError("--reference", f"{source}: no reference.series (name: {{x value: value}}) to draw")
    return ref


def with_reference_axes(folder: str | Path, chart: Chart) -> Chart:
    """--reference without --x/--y: the columns the reference names (when results.csv has them)."""
    if not chart.reference or (chart.x and chart.y):
        return chart
    from dataclasses import replace

    ref = read_reference(folder)
    return replace(chart, x=chart.x or str(ref.get("x") or ""), y=chart.y or str(ref.get("y") or ""))


# the paper's unit -> (suffix of our column, factor to our unit): Fig. 8 prints GB, our column is bytes
REFERENCE_UNITS = {"GB": ("_bytes", 10**9)}


def reference_scale(unit: Any, column: str | None) -> float:
    """The factor that puts a reference in ``unit`` into ``column``'s unit (1 when they agree)."""
    suffix, factor = REFERENCE_UNITS.get(str(unit), (None, 1))
    return factor if suffix and column and column.endswith(suffix) else 1


def _reference_points(folder, chart: Chart, cats) -> list[tuple[str, str, list[tuple[float, float]]]]:
    """The paper's series as (name, legend note, points in the axes' units)."""
    ref = read_reference(folder)
    # a reference that plots another quantity than --y says which, in its legend entry
    other = f" ({ref.get('y')})" if ref.get("y") and str(ref.get("y")) != chart.y else ""
    unit = reference_scale(ref.get("unit"), chart.y) * factor(chart.y, chart.unit(chart.y))  # into the axis' unit (labels.py)
    if abs(unit - 1) > 1e-12:
        other += f" ({ref.get('unit')} x {unit:g})"
    out = []
    for name, points in ref["series"].items():
        pts = []
        for key, value in points.items():
            where = f"--reference: reference.series.{name}.{key}"
            v = to_float(value, where)
            if v is None:
                continue
            if cats is None:
                x = to_float(key, where)
                x = None if x is None else x * factor(chart.x, chart.unit(chart.x))
            else:
                x = float(cats.index(str(key))) if str(key) in cats else None
            if x is not None:
                pts.append((x, v * unit))
        out.append((name, other, sorted(pts)))
    return out


def _draw_reference(ax, series, cats) -> None:
    for n, (name, other, pts) in enumerate(series):
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], ls="--" if cats is None else "none", lw=1, marker="x",
                    ms=7, mew=2, color=f"C{n + 5}", label=f"paper: {name}{other}", zorder=6)


def _check_chart(chart: Chart) -> None:
    if chart.reference and chart.kind == "heatmap":
        raise SpecError("--reference", "draws on line, bar and scatter charts, not on a heatmap")
    if chart.kind not in KINDS:
        raise SpecError("--kind", f"must be one of {', '.join(KINDS)}, got {shown(chart.kind)}")
    if not chart.x or not chart.y:
        raise SpecError("explore plot", "give --x and --y (or --plan ROW)")
    if chart.kind == "heatmap" and not chart.z:
        raise SpecError("--z", "a heatmap needs --z COL, the value shown in each cell")
    _check_title(chart.title)


def _check_title(title: str | None) -> None:
    """--title: at most MAX_TITLE characters in MAX_TITLE_LINES lines (100,000 took 226 s to lay out)."""
    if title is not None and (len(title) > MAX_TITLE or title.count("\n") >= MAX_TITLE_LINES):
        size = f"{len(title):,} characters" if len(title) > MAX_TITLE else f"{title.count(chr(10)) + 1} lines"
        raise SpecError("--title", f"{size}: a title has at most {MAX_TITLE} characters in {MAX_TITLE_LINES} lines "
                                   "(a long line is wrapped to the figure's width)")


def plot_chart(folder: str | Path, chart: Chart, out: str | Path) -> Plotted:
    """Draw a line, bar, scatter or heatmap chart of a sweep's results.csv into ``out`` (.png/.svg);
    with ``chart.reference``, the paper's values from the sweep file's ``reference:`` beside ours."""
    chart = with_reference_axes(folder, chart)
    _check_chart(chart)
    return _draw(out, lambda: chart_figure(folder, chart))


def chart_figure(folder: str | Path, chart: Chart):
    """The chart's figure, laid out, and its notes (points a log axis leaves out)."""
    _check_chart(chart)
    cols, rows = load_table(folder, chart)
    chart = chart.with_units(rows)
    plt = pyplot()
    if chart.kind == "heatmap":
        return _heatmap(plt, cols, rows, chart)
    y_ok = [r for r in rows if number(r[chart.y]) is not None]
    if not y_ok:
        raise _no_number(chart.y, cols, rows)
    if chart.kind != "scatter":
        _check_unique(y_ok, (*chart.hue, chart.x), _params(cols))
    xs_all, cats = _xvalues(y_ok, chart.x, categorical=chart.kind == "bar")
    if cats is not None:
        check_categories("--x", chart.x, cats, chart)
    if cats is not None:  # categories are drawn as written: in the column's own unit
        chart = replace(chart, units=tuple(u for u in chart.units if u[0] != chart.x))
    fx, fy = (factor(chart.x, chart.unit(chart.x)) if cats is None else 1), factor(chart.y, chart.unit(chart.y))
    xs_all = [x * fx for x in xs_all]
    series = list(dict.fromkeys(_hue_of(r, chart.hue) for r in y_ok))
    check_series(len(series), chart)
    ours = [(x, float(number(r[chart.y])) * fy, _hue_of(r, chart.hue), broken(r)) for x, r in zip(xs_all, y_ok)]
    ours, notes = log_dropped(ours, chart, cats is not None)
    notes += broken_note(sum(p[3] for p in ours), "hatched" if chart.kind == "bar" else "crossed")
    notes += no_value_note([r for r in rows if number(r[chart.y]) is None], chart.y)
    ref_all = _reference_points(folder, chart, cats) if chart.reference else []
    ref = [(name, other, log_dropped(pts, chart, cats is not None)[0]) for name, other, pts in ref_all]
    dropped_ref = sum(len(p) for *_, p in ref_all) - sum(len(p) for *_, p in ref)
    if not ours:
        raise SpecError("--logy" if chart.logy else "--logx", f"no point left to draw: {notes[0].removeprefix('not drawn: ')}")
    fig, ax = plt.subplots(figsize=(7, 4.3))
    if len(series) > 10:  # more series than the default ten colours: no two share one
        ax.set_prop_cycle(color=plt.get_cmap("tab20").colors)
    _draw_series(ax, chart, series, ours, joined=cats is None)
    if chart.reference:
        _draw_reference(ax, ref, cats)
        if dropped_ref:
            notes = (*notes, f"not drawn: {dropped_ref} of the paper's values <= 0 (log axis)")
    _axes_style(ax, chart, [*xs_all, *(p[0] for *_, pts in ref for p in pts)], cats)  # the paper's x get ticks too
    extra = [broken_handle(chart.kind == "bar")] if any(p[3] for p in ours) else []
    if any(series) or chart.reference or extra:
        ax.legend(handles=ax.get_legend_handles_labels()[0] + extra, fontsize=8, title=" ".join(chart.hue) or None,
                  title_fontsize=8)
    vs_paper = ", with the paper's values" if chart.reference else ""
    title = chart.title or f"{chart.y} vs {chart.x}{where_text(chart)}{vs_paper}"
    _noted_title(ax, titled(title, rows, _params(cols), (chart.x, *chart.hue)), notes)
    layout.finish(fig, {ax: cats is not None})
    return fig, notes


def _draw_series(ax, chart: Chart, series: list[str], ours: list[tuple[float, float, str, bool]],
                 joined: bool = True) -> None:
    """One series per hue value; a plan that breaks a limit is hollow and crossed (a bar: hatched),
    with one legend entry saying so. ``joined``: a line chart joins its points (not across
    categories: independent networks are points). A series equal to an earlier one point for
    point is drawn dashed with hollow markers and says so in its legend entry (it would hide)."""
    seen: dict[tuple, str] = {}
    for n, s in enumerate(series):
        label_ = s or ("ours" if chart.reference else None)
        pts = sorted((x, y, b) for x, y, h, b in ours if h == s)
        xs, ys = [p[0] for p in pts], [p[1] for p in pts]
        bad = [p for p in pts if p[2]]
        same = seen.get((tuple(xs), tuple(ys))) if chart.kind != "bar" else None
        seen.setdefault((tuple(xs), tuple(ys)), s)
        style = {"ls": "--" if joined else "none", "mfc": "none", "ms": 7} if same is not None else \
            {"ls": "-" if joined else "none", "ms": 4}
        if same is not None:
            label_ = f"{label_} (same as {same})"
        if chart.kind == "line":
            colour = ax.plot(xs, ys, marker="o", label=label_, **style)[0].get_color()
        elif chart.kind == "scatter":
            dots = ax.scatter(xs, ys, s=22 if same is None else 60, label=label_, alpha=0.85 if same is None else 1)
            colour = dots.get_facecolor()[0]  # the colour cycle's next: a hollow twin keeps it as its edge
            if same is not None:
                dots.set_facecolor("none")
                dots.set_edgecolor(colour)
        else:
            width = 0.8 / len(series)
            at = [x - 0.4 + width * (n + 0.5) for x in xs]
            ax.bar(at, ys, width=width, label=label_)
            hatched = [(a, p[1]) for a, p in zip(at, pts) if p[2]]  # over the bar: its legend entry stays plain
            if hatched:
                ax.bar(*zip(*hatched), width=width, facecolor="none", edgecolor="black", hatch="xx", linewidth=0.5)
            continue
        if bad:
            ax.scatter([p[0] for p in bad], [p[1] for p in bad], s=40, facecolors="white", edgecolors=[colour], zorder=5)
            ax.scatter([p[0] for p in bad], [p[1] for p in bad], **BROKEN_MARK)


def broken_handle(bar: bool):
    """The legend entry of the plans that break a limit (a handle only: nothing drawn on the axes)."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    if bar:
        return Patch(facecolor="white", edgecolor="black", hatch="xx", label=BROKEN)
    return Line2D([], [], ls="none", marker="x", color="black", mew=1.6, ms=7, label=BROKEN)


def _heatmap(plt, cols, rows, chart: Chart):
    import numpy as np

    _check_unique(rows, (chart.y, chart.x), _params(cols))
    xs = _sorted_cats([r[chart.x] for r in rows])
    ys = _sorted_cats([r[chart.y] for r in rows])
    check_categories("--x", chart.x, xs, chart)
    check_categories("--y", chart.y, ys, chart)
    grid = np.full((len(ys), len(xs)), np.nan)
    notes = {}
    hatched = [(ys.index(r[chart.y]), xs.index(r[chart.x])) for r in rows if broken(r) and number(r[chart.z]) is not None]
    for r in rows:
        i, j = ys.index(r[chart.y]), xs.index(r[chart.x])
        v = number(r[chart.z])
        if v is None:  # no value: say why (no plan), or n/a (e.g. no proven optimum to compare with)
            notes[(i, j)] = "n/a" if r["status"] in ("optimal", "level-optimal", "feasible") else r["status"]
        else:
            grid[i, j] = float(v) * factor(chart.z, chart.unit(chart.z))
    fig, ax = plt.subplots(figsize=(max(5, 0.75 * len(xs) + 2.5), max(3, 0.45 * len(ys) + 1.6)))
    cmap = plt.get_cmap("viridis").with_extremes(bad="#dddddd")
    im = ax.imshow(np.ma.masked_invalid(grid), cmap=cmap, aspect="auto")
    fig.colorbar(im, ax=ax, label=label(chart.z, chart.unit(chart.z)))
    finite = grid[np.isfinite(grid)]
    mid = (finite.min() + finite.max()) / 2 if finite.size else 0
    for i in range(len(ys)):
        for j in range(len(xs)):
            if (i, j) in notes:
                ax.text(j, i, notes[(i, j)], ha="center", va="center", fontsize=6, color="#555555")
            elif np.isfinite(grid[i, j]):
                ax.text(j, i, f"{grid[i, j]:.3g}", ha="center", va="center", fontsize=7,
                        color="white" if grid[i, j] < mid else "black")
    ax.set_xticks(range(len(xs)), xs)
    ax.set_yticks(range(len(ys)), ys)
    ax.set_xlabel(label(chart.x))
    ax.set_ylabel(label(chart.y))
    said = broken_note(len(hatched), "hatched")
    _hatch_cells(ax, hatched)
    title = chart.title or f"{chart.z} by {chart.y} and {chart.x}{where_text(chart)}"
    _noted_title(ax, titled(title, rows, _params(cols), (chart.x, chart.y)), said)
    layout.finish(fig, {ax: True})
    return fig, said


def _hatch_cells(ax, cells: list[tuple[int, int]]) -> None:
    """Hatch the heatmap cells whose plan breaks a limit (the title says so); their numbers stay legible."""
    from matplotlib.patches import Rectangle

    for i, j in cells:
        ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, hatch="xx", edgecolor="black", lw=0, alpha=0.5))
    for t in ax.texts:
        if tuple(round(v) for v in t.get_position())[::-1] in cells:
            t.set(color="black", bbox=dict(boxstyle="round,pad=0.15", facecolor="white", edgecolor="none", alpha=0.85))

def _sorted_cats(values: list[str]) -> list[str]:
    cats = list(dict.fromkeys(values))
    if all(number(c) is not None for c in cats):
        cats.sort(key=lambda c: number(c))
    return cats


def plot_pareto(folder: str | Path, chart: Chart, out: str | Path) -> Plotted:
    """Scatter every point with a valid plan on (x, y), both minimised, and mark the front: only
    proven-optimal points are called Pareto-optimal; DP points on the front are marked level-optimal."""
    if not chart.x or not chart.y:
        raise SpecError("--pareto", "give --x and --y, the two columns to minimise")
    _check_title(chart.title)
    return _draw(out, lambda: pareto_figure(folder, chart))


def pareto_figure(folder: str | Path, chart: Chart):
    """The Pareto figure, laid out, and its notes (points a log axis leaves out)."""
    cols, rows = load_table(folder, chart)
    chart = chart.with_units(rows)
    labels = pareto_labels(rows, (chart.x, chart.y))  # on every point: a log axis only hides some
    fx, fy = factor(chart.x, chart.unit(chart.x)), factor(chart.y, chart.unit(chart.y))
    pts = [(float(number(r[chart.x])) * fx, float(number(r[chart.y])) * fy, lab, r)
           for r, lab in zip(rows, labels) if lab or _drawable_broken(r, chart)]
    if not pts:
        raise SpecError("--pareto", f"no row has a valid plan with numbers in {chart.x} and {chart.y}")
    pts, notes = log_dropped(pts, chart, False)
    if not pts:
        raise SpecError("--logy" if chart.logy else "--logx", "no point left to draw: every point has a value <= 0")
    bad = [p for p in pts if not p[2]]  # plans over a limit: drawn crossed, never on the front
    notes += broken_note(len(bad), "crossed, not ranked")
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    rest = [p for p in pts if p[2] == "no"]
    ax.scatter([p[0] for p in rest], [p[1] for p in rest], s=14, color="#bbbbbb", label="dominated")
    if bad:
        ax.scatter([p[0] for p in bad], [p[1] for p in bad], **BROKEN_MARK, label=BROKEN + ", not ranked")
    front = sorted((p for p in pts if p[2] not in ("no", "")), key=lambda p: (p[0], p[1]))  # ties: never compare the rows
    ax.step([p[0] for p in front], [p[1] for p in front], where="post", color="#c44e52", lw=1, alpha=0.7)
    for n, (lab, (text, marker, filled)) in enumerate(PARETO_STYLE.items()):
        sel = [p for p in front if p[2] == lab]
        if sel:  # a DP square drawn larger, behind a proven circle at the same spot
            text = proven_text([p[3] for p in sel]) if lab == "yes" else text
            ax.scatter([p[0] for p in sel], [p[1] for p in sel], s=(30, 80, 55)[n], marker=marker, label=text,
                       facecolors="#c44e52" if filled else "none", edgecolors="#c44e52", zorder=(5, 3, 4)[n],
                       alpha=(1, 0.45, 1)[n])
    _axes_style(ax, chart, [p[0] for p in pts], None)
    ax.legend(fontsize=8)
    title = titled(chart.title or f"Pareto front: {chart.y} vs {chart.x} (both minimised){where_text(chart)}", rows,
                   _params(cols), (chart.x, chart.y, *chart.hue))
    _noted_title(ax, title, notes)
    layout.finish(fig)
    if chart.hue:
        spots: dict[tuple[float, float], list[str]] = {}
        for x, y, _, r in front:
            spots.setdefault((x, y), []).append(_hue_of(r, chart.hue))
        notes = _label_front(ax, [(x, y, ", ".join(dict.fromkeys(names))) for (x, y), names in spots.items()],
                             title, notes)
    return fig, notes


def _drawable_broken(r: dict[str, str], chart: Chart) -> bool:
    """A row with a plan that breaks a limit and numbers in --x and --y (drawn crossed on a Pareto plot)."""
    has_plan = r["status"] in ("optimal", "level-optimal", "feasible")
    return has_plan and broken(r) and number(r[chart.x]) is not None and number(r[chart.y]) is not None


def _label_front(ax, labels: list[tuple[float, float, str]], title: str, notes: tuple[str, ...]) -> tuple[str, ...]:
    """Each front point's --hue label where it overlaps no other (``layout.place_labels``); the
    labels left out are named under the title (then the layout is redone and the labels placed again)."""
    titled = notes
    for attempt in range(3):
        left = layout.place_labels(ax, labels)
        said = notes + ((_left_out_note(left),) if left else ())
        if said == titled:
            return said
        _noted_title(ax, title, titled := said)
        if attempt < 2:
            for t in list(ax.texts):  # the labels: placed again on the new layout
                t.remove()
            layout.finish(ax.figure)
    return said


def _left_out_note(left: list[str]) -> str:
    shown = ", ".join(left[:6]) + (f" and {len(left) - 6} more" if len(left) > 6 else "")
    return f"{len(left)} front label{'' if len(left) == 1 else 's'} left out (no room clear of the others): {shown}"


def read_plan(folder: str | Path, row: int) -> dict[str, Any]:
    path = Path(folder) / "plans.jsonl"
    try:
        for n, line in enumerate(file_lines(path), 1):  # a line at a time, of a regular file (``bounded``)
            try:
                d = json.loads(line)
                found = d["index"] == row
            except (ValueError, KeyError, TypeError):  # cut short, or not a sweep's line
                raise SpecError(str(path), f"line {n}: not a sweep result (truncated or edited?): rerun explore "
                                           "sweep (cached points are reused)") from None
            if found:
                return d
    except FileNotFoundError:
        raise SpecError(str(folder), "no plans.jsonl here (run explore sweep first)") from None
    except (OSError, UnicodeDecodeError) as err:
        raise SpecError(str(path), f"cannot read: {err}") from None
    raise SpecError("--plan", f"no point {row} in {path}")


def plot_plan(folder: str | Path, row: int, out: str | Path) -> Plotted:
    """One point's plan as a levels x layers grid coloured by partition type (HyPar Fig. 5)."""
    return _draw(out, lambda: (plan_figure(folder, row), ()))


def plan_figure(folder: str | Path, row: int):
    """Point ``row``'s plan figure, laid out: layer names stay level where they fit, turned only
    where they would overlap (``layout.finish``)."""
    d = _plan_record(folder, row)
    res = d["result"]
    plt = pyplot()
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch

    plan, layers, alphas = res["plan"], res["layers"], res.get("alphas")
    types = [t for t in TYPE_COLOURS if any(t in lvl for lvl in plan)]
    codes = [[list(TYPE_COLOURS).index(t) for t in lvl] for lvl in plan]
    H, L = len(plan), len(layers)
    cw, ch = plan_labels.cell_size(plan, alphas) if L <= plan_labels.MAX_LABELLED_LAYERS else (0, 0)
    fig, ax = plt.subplots(figsize=(min(22, max(6, max(0.32, cw) * L + 2.5)), max(2.6, max(0.42, ch) * H + 1.9)))
    ax.imshow(codes, cmap=ListedColormap(list(TYPE_COLOURS.values())), vmin=0, vmax=2, aspect="auto")
    texts = plan_labels.draw(ax, plan, alphas)
    ax.set_xticks(range(L))
    ax.set_xticklabels(layers, rotation=0, fontsize=7 if L <= 40 else 5)  # layout.finish turns them if they overlap
    ax.set_yticks(range(H))
    ax.set_yticklabels([f"level {h}" for h in range(H)], fontsize=8)
    ax.set_xticks([j - 0.5 for j in range(1, L)], minor=True)
    ax.set_yticks([h - 0.5 for h in range(1, H)], minor=True)
    ax.grid(which="minor", color="white", lw=1)
    ax.tick_params(which="minor", length=0)
    ax.legend(handles=[Patch(color=TYPE_COLOURS[t], label=f"type {t}") for t in types], loc="upper left",
              bbox_to_anchor=(1.01, 1), fontsize=8, frameon=False)
    ax.set_title(_plan_title(res, row, _plan_scope(folder, d)), fontsize=9)
    layout.finish(fig, {ax: True})
    cut = plan_labels.fit(ax, texts)  # on the final layout: each label inside its cell
    if cut:
        ax.set_title(ax.get_title() + plan_labels.cut_note(cut), fontsize=9)
        layout.finish(fig, {ax: True})
    return fig


def _plan_record(folder: str | Path, row: int) -> dict[str, Any]:
    """Point ``row``'s plans.jsonl record, refused in one line when its result has no plan to draw."""
    d = read_plan(folder, row)
    res = d["result"]
    if not res or not res.get("plan"):
        raise SpecError("--plan", f"point {row} has no plan (status {d['status']}: {d.get('error') or 'no plan'})")
    if "layers" not in res:  # a split point of schema 3: types and alphas, no layer names (it raised KeyError)
        raise SpecError(str(Path(folder) / "plans.jsonl"),
                        f"point {row} was written by an older explore (schema_version {res.get('schema_version')}): its "
                        "plan names no layers to draw; rerun explore sweep (the cache recomputes it)")
    if res.get("alphas") and len(res["layers"]) > plan_labels.MAX_LABELLED_LAYERS:  # a split point: alphas in the cells
        raise SpecError("--plan", f"point {row} is an explore split point (split {res.get('split')}) of "
                                  f"{len(res.get('layers') or ())} layers, more than the {plan_labels.MAX_LABELLED_LAYERS} whose "
                                  "alphas --plan can write in their cells; its types and alphas are in plans.jsonl")
    return d


def _plan_scope(folder: str | Path, d: dict[str, Any]) -> str:
    """The lines of the title naming the point's swept keys and the fixed ones the title does not
    say (``titles.point_scope``), against the sweep's rows in results.csv when it reads."""
    point = {k: cell(v) for k, v in d["point"].items()}
    try:
        cols, rows = read_rows(Path(folder))
    except SpecError:  # no readable results.csv: the point's keys alone
        cols, rows = list(point), None
    said = PLAN_SAID | ({"split"} if d["result"].get("alphas") else set())
    return point_scope(point, rows, _params(cols), frozenset(said))


def _plan_title(res: dict[str, Any], row: int, scope: str = "") -> str:
    """The plan's title: its figures in the tables' adaptive units (2.007 MB, 11 us; trial 12: the
    title wrote 0.00201 GB and 0.0107 ms), its point's swept and fixed keys (``scope``) under the first line."""
    from ..render import fmt_bytes, fmt_seconds

    traffic, step = number(res.get("traffic_bytes")) or 0, number(res.get("step_time_s"))
    scope = f"\n{scope}" if scope else ""
    return (f"point {row}: {res['model']} on {res['accelerators']} accelerators ({res['array']}), {res['space']} space, "
            f"batch {res['batch']}{scope}\n{res['solver']} {res['status']}, traffic {fmt_bytes(traffic)}, "
            f"step {'?' if step is None else fmt_seconds(step)}"
            + ("" if not res.get("alphas") else f"\nsplit {res.get('split')}: under each type the alpha, subgroup 0's "
                                                "share; where the level's groups differ, each distinct one, in group order")
            + _broken_title(res))


def _broken_title(res: dict[str, Any]) -> str:
    """A plan that breaks a cap or the memory limit says so in its title (as the charts mark it)."""
    broken = [v.get("constraint", "?") if isinstance(v, dict) else str(v) for v in res.get("violations") or ()]
    return "" if not broken else "\nPLAN BREAKS: " + "; ".join(broken)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._=+-]+", "_", text).strip("_") or "_"


def default_name(chart: Chart, pareto: bool, plan: int | None) -> str:
    """The image's name when --out is not given: every option that changes the picture is in it
    (kind, z, y, x, hue, the --where filter), so two different plots never share a default name."""
    if plan is not None:
        return f"plan-{plan}.png"
    parts = ["pareto" if pareto else chart.kind]
    if chart.z and not pareto:
        parts.append(f"{chart.z}-by")
    parts.append(f"{chart.y}-vs-{chart.x}")
    if chart.hue:
        parts.append("by-" + "+".join(chart.hue))
    parts += [f"{k}={v}" for k, v in chart.where]
    if chart.reference:
        parts.append("vs-paper")
    if chart.logx or chart.logy:
        parts.append("log" + ("x" if chart.logx else "") + ("y" if chart.logy else ""))
    name = _slug("-".join(str(x) for x in parts))
    if len(name) > 150:  # a long filter: keep the name short and still distinct
        name = name[:130] + "-" + hashlib.sha256(name.encode()).hexdigest()[:12]
    return name + ".png"


def where_text(chart: Chart) -> str:
    """The --where filter as the title shows it: ' (model=vgg-a, levels=3)', or ''."""
    return f" ({', '.join(f'{k}={v}' for k, v in chart.where)})" if chart.where else ""

