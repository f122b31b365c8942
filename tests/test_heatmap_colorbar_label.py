"""The heatmap's colour-bar label stays inside the image (trial 8, item 12: "speedup over data
parallelism, equal split (×)" on a two-row heatmap was cut at the image's edge): wrapped to the
colour bar's height when longer."""

from __future__ import annotations

import pytest

pytest.importorskip("matplotlib")

from explorer.api import sweep  # noqa: E402
from explorer.app.sweep import plot  # noqa: E402

SMALL = """\
version: 1
name: small
grid:
  model: [sfc, alexnet]
  levels: [1, 2]
fixed: {solver: dp}
"""


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    root = tmp_path_factory.mktemp("hm")
    (root / "small.yaml").write_text(SMALL)
    list(sweep(root / "small.yaml", root / "small", workers=1))
    return root / "small"


def _inside(fig, artist) -> bool:
    fig.canvas.draw()
    box = artist.get_window_extent(fig.canvas.get_renderer())
    w, h = fig.canvas.get_width_height()
    return box.x0 >= 0 and box.y0 >= 0 and box.x1 <= w and box.y1 <= h


@pytest.mark.parametrize("text", ["speedup over data parallelism, equal split (×)",
                                  "a very long label of some measured column of the sweep, with its unit in brackets (s)"])
def test_the_colour_bar_label_fits_the_image(small, monkeypatch, text):
    import matplotlib.pyplot as plt

    monkeypatch.setattr(plot, "label", lambda col, unit=None: text if col == "step_time_s" else col)
    fig, _ = plot.chart_figure(small, plot.Chart("heatmap", "levels", "model", z="step_time_s"))
    try:
        bar = fig.axes[1].yaxis.label
        assert " ".join(bar.get_text().split()) == text  # every word kept
        assert _inside(fig, bar)
    finally:
        plt.close(fig)
