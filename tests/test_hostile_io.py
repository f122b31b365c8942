"""A hostile trial's findings on the files the tool owns and on plot text: a '$' in a title or a
layer name is drawn as written (matplotlib read it as mathtext: a traceback); a FIFO, or a file
larger than any the tool writes, where a cache entry, plans.jsonl or results.csv goes is refused in
one line (exit 2) or, a cache entry, solved again (it blocked or ate the memory); a title too long
to draw is refused; an interrupted sweep counts all the points cached, not only this run's."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytest.importorskip("matplotlib")

from explorer.api import sweep  # noqa: E402
from explorer.app.sweep import fonts, plot  # noqa: E402

LAYER = "f$\\q{$"  # passes the spec reader's printable check; mathtext fails on it
TITLES = ("$x^{$", "$\\frac{1}{0}\\undefinedmacro$")


def _explore(cwd, *args, timeout=300):
    return subprocess.run([sys.executable, "-m", "explorer.app.cli", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout)


@pytest.fixture(scope="module")
def dollar(tmp_path_factory):
    """A sweep of a model whose first layer is named LAYER, at batch 8 and 16."""
    root = tmp_path_factory.mktemp("dollar")
    (root / "m.yaml").write_text(
        'version: 1\nname: "m$\\\\bad{$"\nbatch: 8\nlayers:\n'
        '  - {name: "f$\\\\q{$", kind: fc, in_features: 4, out_features: 4}\n'
        '  - {name: fc2, kind: fc, in_features: 4, out_features: 4}\n')
    spec = {"version": 1, "name": "d", "grid": {"batch": [8, 16]},
            "fixed": {"model": str(root / "m.yaml"), "array": "hypar-16", "solver": "exact"}}
    list(sweep(spec, root / "out", workers=1))
    return root


@pytest.mark.parametrize("title", TITLES)
def test_a_title_with_dollars_is_drawn_as_written(dollar, title):
    r = _explore(dollar, "plot", "out", "--x", "batch", "--y", "step_time_s", "--title", title, "--out", "p.png")
    assert r.returncode == 0 and "Traceback" not in r.stderr and (dollar / "p.png").is_file(), r.stderr
    with fonts.literal_text():
        fig, _ = plot.chart_figure(dollar / "out", plot.Chart("line", "batch", "step_time_s", title=title))
        fig.canvas.draw()
    assert fig.axes[0].get_title().split("\n")[0] == title
    assert not any(t.get_parse_math() for t in fig.findobj(lambda a: hasattr(a, "get_parse_math")))
    plot.pyplot().close(fig)


def test_a_layer_name_with_dollars_is_drawn_as_written(dollar):
    r = _explore(dollar, "plot", "out", "--plan", "0", "--out", "d.png")
    assert r.returncode == 0 and "Traceback" not in r.stderr and (dollar / "d.png").is_file(), r.stderr
    with fonts.literal_text():
        fig = plot.plan_figure(dollar / "out", 0)
        fig.canvas.draw()
    assert LAYER in [t.get_text() for t in fig.axes[0].get_xticklabels()]
    plot.pyplot().close(fig)
