"""Plots (trial finding 6): a time axis takes the unit its values suit (a step of 3.5 ms was drawn
as 0.0035 s), and a chart's title names the sweep keys it sweeps and those it holds fixed."""

from __future__ import annotations

import pytest

pytest.importorskip("matplotlib")

from explorer.api import sweep  # noqa: E402
from explorer.app.sweep import plot  # noqa: E402
from explorer.app.sweep.labels import label, time_unit  # noqa: E402
from explorer.app.sweep.titles import scope  # noqa: E402

SPEC = {"version": 1, "name": "t", "grid": {"model": ["lenet-c", "alexnet"], "levels": [1, 2, 3]},
        "fixed": {"array": "hypar-16", "objective": "time"}}


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    out = tmp_path_factory.mktemp("plots") / "out"
    list(sweep(SPEC, out, workers=1))
    return out


@pytest.mark.parametrize("values,unit", [
    ([0.0035, 0.0009], "ms"), ([3.4, 0.0009], "s"), ([1.0], "s"), ([0.999e-3, 2.1e-5], "us"),
    ([4.5e-7], "ns"), ([1e-12], "ns"), ([], "s"), ([0.0], "s"), ([float("nan"), 0.02], "ms"),
])
def test_the_time_unit_is_the_largest_in_which_the_largest_value_is_at_least_1(values, unit):
    assert time_unit("step_time_s", values) == unit
    assert label("step_time_s", unit) == f"step time ({unit})"


def test_options_and_other_columns_keep_their_unit():
    assert time_unit("time_limit", [0.5]) is None and time_unit("traffic_bytes", [5.0]) is None
    assert label("idle_s") == "idle time of the faster group (ms)" and label("idle_s", "us").endswith("(us)")


def _close(fig):
    import matplotlib.pyplot as plt

    plt.close(fig)


def test_a_line_charts_time_axis_and_title(folder):
    """LeNet-C's step times (3.46, 1.76, 0.91 ms) drawn in ms; its title: levels swept, the rest fixed."""
    chart = plot.Chart("line", "levels", "step_time_s", where=(("model", "lenet-c"),))
    fig, _ = plot.chart_figure(folder, chart)
    ax = fig.axes[0]
    assert ax.get_ylabel() == "step time (ms)"
    ys = list(ax.lines[0].get_ydata())
    assert ys == pytest.approx([3.4609973333333335, 1.7564473333333333, 0.9053976666666667], rel=1e-12)
    lines = ax.get_title().split("\n")
    assert lines == ["step_time_s vs levels (model=lenet-c)", "swept: levels (3 values)",
                     "fixed: model=lenet-c, array=hypar-16, objective=time"]
    _close(fig)
    fig, _ = plot.chart_figure(folder, plot.Chart("line", "levels", "step_time_s", hue=("model",)))
    ax = fig.axes[0]  # AlexNet's 3.4 s: seconds for both
    assert ax.get_ylabel() == "step time (s)" and ax.get_title().split("\n")[1:] == [
        "swept: levels (3 values), model (2)", "fixed: array=hypar-16, objective=time"]
    _close(fig)


def test_the_pareto_and_heatmap_axes_take_the_unit_too(folder):
    chart = plot.Chart("scatter", "comm_time_s", "step_time_s", where=(("model", "lenet-c"),))
    fig, _ = plot.pareto_figure(folder, chart)
    ax = fig.axes[0]
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("communication time (us)", "step time (ms)")
    assert "swept: levels (3 values)" in ax.get_title()
    _close(fig)
    fig, _ = plot.chart_figure(folder, plot.Chart("heatmap", "levels", "model", z="comm_time_s"))
    assert fig.axes[1].get_ylabel() == "communication time (ms)"  # the colour bar: AlexNet's 2.2 ms at most
    assert fig.axes[0].get_title().split("\n")[1:] == ["swept: levels (3 values), model (2)",
                                                       "fixed: array=hypar-16, objective=time"]
    _close(fig)


def test_scope_leaves_out_unset_keys_and_cuts_long_values():
    rows = [{"model": "m", "batch": "", "constraints": "x" * 60, "levels": str(n)} for n in (1, 2)]
    said = scope(rows, ["model", "batch", "constraints", "levels"], ("levels",))
    assert said == f"swept: levels (2 values)\nfixed: model=m, constraints={'x' * 37}..."
    assert scope(rows[:1], ["model"], ()) == "fixed: model=m"
