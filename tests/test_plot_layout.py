"""explore plot's layout: x tick labels never overlap, a legend never covers a bar, a log axis says
how many points it leaves out, and every axis label comes from the one column -> label mapping,
with its unit. Each check runs on the drawn figure (fig.canvas.draw(), Agg)."""

from __future__ import annotations

import csv
from fractions import Fraction

import pytest

pytest.importorskip("matplotlib")

from explorer.api import sweep  # noqa: E402
from explorer.app.sweep import labels, layout, plot  # noqa: E402
from explorer.app.sweep.point import SPLIT_KEYS  # noqa: E402
from explorer.app.sweep.table import FIGURES  # noqa: E402

from .conftest import run_cli  # noqa: E402

# fast DP points: eleven networks (long names), 2 to 1,024 accelerators, two memory limits
WIDE = """\
version: 1
name: wide
grid:
  model: [sfc, sconv, lenet-c, cifar-c, alexnet, alexnet-paper, vgg-a, vgg-b, vgg-e, resnet18, efficientnet-b0]
  levels: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
  memory_GiB: [0.015625, 1024]
fixed: {batch: 128, solver: dp}
"""
# the DP's gap: 0 on some points, above 0 on others (ResNet-18 from 32 accelerators)
GAPS = """\
version: 1
name: gaps
grid:
  model: [resnet18, alexnet]
  levels: [3, 4, 5, 6]
  solver: [dp, cpsat]
fixed: {array: array-1024, space: hypar, objective: traffic, time_limit: 60}
"""


def _run(root, name, text):
    (root / f"{name}.yaml").write_text(text)
    list(sweep(root / f"{name}.yaml", root / name, workers=1))
    return root / name


@pytest.fixture(scope="module")
def wide(tmp_path_factory):
    return _run(tmp_path_factory.mktemp("wide"), "wide", WIDE)


# four networks on 2 to 16 accelerators: bars of like heights, where a legend inside has no free corner
FEW = """\
version: 1
name: few
grid:
  model: [vgg-a, vgg-e, resnet18, alexnet]
  levels: [1, 2, 3, 4]
  memory_GiB: [0.015625, 1024]
fixed: {batch: 128, solver: dp}
"""


@pytest.fixture(scope="module")
def few(tmp_path_factory):
    return _run(tmp_path_factory.mktemp("few"), "few", FEW)


@pytest.fixture(scope="module")
def gaps(tmp_path_factory):
    return _run(tmp_path_factory.mktemp("gaps"), "gaps", GAPS)


def _close(fig):
    import matplotlib.pyplot as plt

    plt.close(fig)


def _tick_overlaps(fig):
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    out = []
    for ax in fig.axes:
        texts = layout.shown_xticklabels(ax)
        boxes = [t.get_window_extent(renderer) for t in texts]
        out += [(texts[i].get_text(), texts[j].get_text()) for i in range(len(boxes)) for j in range(i + 1, len(boxes))
                if boxes[i].overlaps(boxes[j])]
    return out


def _chart(kind, x, y, hue=(), z=None, where=(), logx=False, logy=False):
    return plot.Chart(kind, x, y, tuple(hue), z, tuple(where), logx, logy)


@pytest.mark.parametrize("sweep_,pareto,chart", [
    ("wide", True, _chart("line", "accelerators", "step_time_s", where=[("model", "vgg-a"), ("memory_GiB", "1024")])),
    # a log axis spanning less than a decade: matplotlib labels its minor ticks, 1.54e-2, 1.56e-2, ...
    ("gaps", True, _chart("line", "step_time_s", "traffic_bytes", where=[("model", "resnet18")], logx=True, logy=True)),
    ("wide", False, _chart("line", "accelerators", "step_time_s", hue=["model"], where=[("memory_GiB", "1024")])),
    ("wide", False, _chart("heatmap", "model", "levels", z="step_time_s", where=[("memory_GiB", "1024")])),
    ("wide", False, _chart("bar", "model", "speedup_over_all_I", hue=["levels"], where=[("memory_GiB", "1024")])),
])
def test_x_tick_labels_do_not_overlap(request, sweep_, pareto, chart):
    wide = request.getfixturevalue(sweep_)
    fig, _ = plot.pareto_figure(wide, chart) if pareto else plot.chart_figure(wide, chart)
    try:
        shown = [t.get_text() for t in layout.shown_xticklabels(fig.axes[0])]
        assert len(shown) >= 2, shown  # the axis is still labelled
        assert _tick_overlaps(fig) == []
        if chart.kind in ("heatmap", "bar"):  # categories: every one is still named
            cats = {r["model"] for r in csv.DictReader(open(wide / "results.csv"))}
            assert set(shown) == cats
    finally:
        _close(fig)


def test_categories_stay_level_when_they_fit(wide):
    fig, _ = plot.chart_figure(wide, _chart("bar", "levels", "step_time_s", hue=["memory_GiB"], where=[("model", "vgg-a")]))
    try:
        assert {t.get_rotation() for t in layout.shown_xticklabels(fig.axes[0])} == {0.0}
    finally:
        _close(fig)


@pytest.mark.parametrize("chart", [
    _chart("bar", "levels", "traffic_ratio_to_all_I", hue=["memory_GiB"], where=[("model", "vgg-a")]),
    _chart("bar", "levels", "speedup_over_all_I", hue=["model"], where=[("memory_GiB", "1024")]),
    _chart("bar", "model", "speedup_over_all_I", hue=["levels"], where=[("memory_GiB", "1024")]),
])
def test_the_legend_covers_no_bar(few, chart):
    fig, _ = plot.chart_figure(few, chart)
    try:
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        ax = fig.axes[0]
        legend = ax.get_legend().get_window_extent(renderer)
        bars = [p.get_window_extent(renderer) for p in ax.patches]
        assert len(bars) >= 8
        assert not [b for b in bars if b.height > 0.5 and b.overlaps(legend)]
    finally:
        _close(fig)


def _zero_gaps(folder) -> int:
    rows = [r for r in csv.DictReader(open(folder / "results.csv")) if r["solver"] == "dp" and r["dp_gap"]]
    return sum(Fraction(r["dp_gap"]) == 0 for r in rows), len(rows)


def test_logy_says_how_many_zeros_it_leaves_out(gaps, tmp_path, capsys):
    zeros, total = _zero_gaps(gaps)
    assert 0 < zeros < total  # the sweep has both
    target = tmp_path / "gap.svg"
    code, _, err = run_cli(["plot", str(gaps), "--x", "levels", "--y", "dp_gap", "--hue", "model", "--where", "solver=dp",
                            "--logy", "--out", str(target)], capsys)
    note = f"not drawn: {zeros} point{'s' * (zeros != 1)} with dp_gap <= 0 (log y axis)"
    assert code == 0 and err.splitlines() == [f"explore plot: warning: {note}", f"wrote {target}"], err
    assert note.replace("<", "&lt;") in target.read_text()  # on the figure too
    fig, notes = plot.chart_figure(gaps, _chart("line", "levels", "dp_gap", hue=["model"], where=[("solver", "dp")],
                                                logy=True))
    try:
        assert notes == (note,)
        assert sum(len(line.get_xdata()) for line in fig.axes[0].lines) == total - zeros
    finally:
        _close(fig)
    code, _, err = run_cli(["plot", str(gaps), "--x", "levels", "--y", "dp_gap", "--hue", "model", "--where", "solver=dp",
                            "--out", str(target)], capsys)
    assert code == 0 and err.splitlines() == [f"wrote {target}"]  # a linear axis draws them: no warning


def test_logy_on_a_pareto_front_and_nothing_left(gaps, tmp_path, capsys):
    zeros, _ = _zero_gaps(gaps)
    code, _, err = run_cli(["plot", str(gaps), "--pareto", "--x", "levels", "--y", "dp_gap", "--logy",
                            "--out", str(tmp_path / "p.png")], capsys)
    assert code == 0 and f"warning: not drawn: {zeros} points with dp_gap <= 0 (log y axis)" in err
    code, _, err = run_cli(["plot", str(gaps), "--x", "levels", "--y", "dp_gap", "--hue", "model", "--where",
                            "solver=dp", "--where", "levels=3", "--logy"], capsys)
    assert code == 2 and err.count("\n") == 1 and "--logy: no point left to draw" in err, err


def test_axis_labels_have_units_and_values_are_scaled(gaps):
    fig, _ = plot.chart_figure(gaps, _chart("line", "levels", "traffic_bytes", hue=["model", "solver"]))
    try:
        ax = fig.axes[0]
        assert (ax.get_xlabel(), ax.get_ylabel()) == ("levels", "traffic (GB)")
        drawn = sorted(y for line in ax.lines for y in line.get_ydata())
        rows = csv.DictReader(open(gaps / "results.csv"))
        assert drawn == pytest.approx(sorted(int(r["traffic_bytes"]) / 1e9 for r in rows if r["traffic_bytes"]))
    finally:
        _close(fig)
    fig, _ = plot.chart_figure(gaps, _chart("heatmap", "levels", "model", z="memory_bytes_per_accelerator",
                                            where=[("solver", "dp")]))
    try:
        assert fig.axes[1].get_ylabel() == "memory per accelerator (MiB)"  # the colour bar
    finally:
        _close(fig)


@pytest.mark.parametrize("column,text", [
    ("step_time_s", "step time (s)"), ("traffic_bytes", "traffic (GB)"), ("idle_s", "idle time of the faster group (ms)"),
    ("memory_bytes_per_accelerator", "memory per accelerator (MiB)"), ("link_bandwidth_GBps", "link bandwidth (GB/s)"),
    ("dp_gap", "DP's excess over the proven optimum (%)"), ("accelerators", "accelerators"),
    ("accelerators_v3", "v3 accelerators"), ("my_warmup_s", "my warmup (s)"), ("weights_bytes", "weights (GB)"),
])
def test_label_mapping(column, text):
    assert labels.label(column) == text


def test_every_figure_column_is_mapped_with_its_unit():
    for column in (*FIGURES, *SPLIT_KEYS, "dp_gap", "wall_s"):
        assert column in labels.COLUMNS, column
        axis = labels.COLUMNS[column]
        assert "_" not in axis.label and (axis.unit or column == "accelerators" or "objective" in column
                                          or column == "bound"), column  # counts and the objective: no unit
        for suffix, unit in labels.SUFFIXES.items():  # a unit in the name is on the axis, in the axis' scale
            if column.endswith(suffix):
                assert (axis.unit, axis.factor) in ((unit.unit, unit.factor), ("ms", 1000) if suffix == "_s" else ()), column
        if "speedup" in column or "ratio" in column or "efficiency" in column:
            assert axis.unit == labels.TIMES, column


REF_GB = """\
version: 1
name: ref
grid: {model: [lenet-c, sfc]}
fixed: {levels: 2}
reference:
  figure: 8
  x: model
  y: traffic_bytes
  unit: GB
  series:
    HyPar: {lenet-c: 0.5, sfc: 2.5}
"""


def test_a_reference_in_gb_lands_on_the_gb_axis(tmp_path):
    folder = _run(tmp_path, "ref", REF_GB)
    chart = plot.with_reference_axes(folder, plot.Chart("bar", reference=True))
    fig, _ = plot.chart_figure(folder, chart)
    try:
        ax = fig.axes[0]
        paper = [line for line in ax.lines if line.get_label().startswith("paper:")]
        assert [line.get_label() for line in paper] == ["paper: HyPar"]  # same unit: no "GB x 1e+09"
        assert list(paper[0].get_ydata()) == [0.5, 2.5] and ax.get_ylabel() == "traffic (GB)"
    finally:
        _close(fig)


# three networks on 2 to 1,024 accelerators: the front's points lie within a few pixels of each other
CLOSE = """\
version: 1
name: close
grid:
  model: [lenet-c, cifar-c, sfc]
  levels: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
fixed: {array: array-1024, objective: time, solver: exact}
"""


def test_pareto_front_labels_do_not_overlap(tmp_path):
    """--pareto --hue labels each front point; close points piled their labels on each other.
    Every label drawn is clear of the others and of the legend, inside the axes; a label that
    finds no free place is left out and the figure's notes say which."""
    folder = _run(tmp_path, "close", CLOSE)
    chart = _chart("scatter", "step_time_s", "memory_bytes_per_accelerator", hue=["model", "levels"])
    fig, notes = plot.pareto_figure(folder, chart)
    try:
        ax = fig.axes[0]
        renderer = layout._renderer(fig)
        texts = [t for t in ax.texts if t.get_text()]
        boxes = [layout.label_box(t, renderer) for t in texts]  # the text, without its leader line
        assert len(texts) >= 5 and not [(i, j) for i in range(len(boxes)) for j in range(i) if boxes[i].overlaps(boxes[j])]
        legend, page = ax.get_legend().get_window_extent(renderer), ax.bbox
        for t, box in zip(texts, boxes):
            assert not box.overlaps(legend) and page.x0 <= box.x0 and box.x1 <= page.x1 and page.y0 <= box.y0 <= box.y1 <= page.y1
            line = layout.leader(t, renderer)  # a label away from its point: its line crosses no other label
            assert line is None or not any(line.intersects_bbox(b, filled=False) for b in boxes if b is not box)
        _, rows = plot.load_table(folder, chart)
        front = [r for r, lab in zip(rows, plot.pareto_labels(rows, (chart.x, chart.y))) if lab and lab != "no"]
        names = {f"{r['model']} levels={r['levels']}" for r in front}
        assert len(names) >= 8  # close points: lenet-c and cifar-c on 2 to 1,024 accelerators
        drawn = {n for t in texts for n in t.get_text().split(", ")}
        left = names - drawn
        assert drawn <= names and (not left or any(all(n in note for n in left) for note in notes)), (left, notes)
    finally:
        _close(fig)


def test_labels_with_no_room_are_left_out_and_returned():
    """More labels on one spot than the axes hold: those drawn never overlap, the others are not
    drawn and are returned (for the figure's note)."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(3, 2))
    try:
        ax.scatter([0, 1], [0, 1])
        layout.finish(fig)
        left = layout.place_labels(ax, [(0.5, 0.5, f"label {i}") for i in range(40)])
        renderer = layout._renderer(fig)
        boxes = [layout.label_box(t, renderer) for t in ax.texts]
        assert left and len(boxes) + len(left) == 40 and len(boxes) >= 5
        assert not [(i, j) for i in range(len(boxes)) for j in range(i) if boxes[i].overlaps(boxes[j])]
        assert set(left).isdisjoint(t.get_text() for t in ax.texts)
    finally:
        _close(fig)


def test_a_log_axis_is_labelled_in_plain_numbers(gaps):
    """The new-user trial: `--logy` on a ms axis spanning less than a decade was labelled '6 x 10^0'."""
    chart = _chart("line", "step_time_s", "traffic_bytes", where=[("model", "resnet18")], logx=True, logy=True)
    fig, _ = plot.pareto_figure(gaps, chart)
    try:
        fig.canvas.draw()
        texts = [t.get_text() for ax in (fig.axes[0].yaxis, fig.axes[0].xaxis)
                 for t in ax.get_ticklabels() + ax.get_ticklabels(minor=True) if t.get_text()]
        assert texts and not [t for t in texts if "times" in t or "^" in t or "\\mathdefault" in t], texts
    finally:
        _close(fig)


@pytest.mark.parametrize("lo, hi, want", [(1e3, 1e8, {"1000", "10\u2076", "10\u2078"}),
                                          (1e-7, 1e-3, {"10\u207b\u2077", "10\u207b\u2075", "0.0001", "0.001"})])
def test_a_log_axis_past_the_plain_range_says_powers_of_ten(lo, hi, want):
    """Review finding: from a million up (and under 1e-4) the plain labels were Python's '%g', '1e+06'
    beside '1e\u221207' (one minus sign changed, the plus not); now a power of ten in plain text, 10\u2076."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    try:
        ax.plot([lo, hi], [lo, hi])
        ax.set_yscale("log")
        labels.plain_log_labels(ax.yaxis)
        fig.canvas.draw()
        texts = {t.get_text() for t in ax.get_yticklabels() + ax.get_yticklabels(minor=True) if t.get_text()}
        assert want <= texts and not [t for t in texts if "e" in t], texts
    finally:
        _close(fig)
    assert labels.plain_number(2e6) == "2\u00d710\u2076" and labels.plain_number(6) == "6"
    assert labels.plain_number(0.5) == "0.5" and labels.plain_number(3e-7) == "3\u00d710\u207b\u2077"
