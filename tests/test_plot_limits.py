"""explore plot refuses in one line what it cannot draw legibly or would misread (trial hostile,
findings 3 and 10): more than 40 x (or heatmap y) categories (a 2,500-column heatmap was a
206,525 px wide PNG after 3 minutes), a results.csv cell that is not a number as explore writes
numbers ('1_000', ' 5'), inf or nan ("not a finite number"); each error names the folder's
results.csv (exit 2, nothing written)."""

from __future__ import annotations

import csv
import subprocess
import sys

import pytest

pytest.importorskip("matplotlib")

from explorer.app.sweep.plot_checks import MAX_CATEGORIES  # noqa: E402
from explorer.app.sweep.table import number  # noqa: E402


def _folder(root, batches: int, cell=None, all_cells: bool = False):
    """A results.csv of batch 1..batches x levels 1..4 (traffic_bytes = batch * levels * 1000);
    ``cell``: traffic_bytes of the first row (of every row with ``all_cells``)."""
    d = root / "f"
    d.mkdir()
    with open(d / "results.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["batch", "levels", "status", "traffic_bytes", "violations"])
        for b in range(1, batches + 1):
            for lv in (1, 2, 3, 4):
                first = b == 1 and lv == 1
                w.writerow([b, lv, "optimal", cell if cell is not None and (first or all_cells) else b * lv * 1000, ""])
    return d


def _plot(cwd, *args):
    return subprocess.run([sys.executable, "-m", "explorer.app.cli", "plot", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=600)


def _refused(r, out, *words):
    assert r.returncode == 2, r.stdout + r.stderr
    line = r.stderr.strip()
    assert "\n" not in line and "Traceback" not in line and all(w in line for w in words), line
    assert not out.exists()


@pytest.mark.parametrize("args, words", [
    (("--x", "batch", "--y", "levels", "--z", "traffic_bytes", "--kind", "heatmap"),
     ("--x: 41 values of batch, more than the 40 a heatmap can show as columns", "--kind line")),
    (("--x", "levels", "--y", "batch", "--z", "traffic_bytes", "--kind", "heatmap"),
     ("--y: 41 values of batch, more than the 40 a heatmap can show as rows",)),
    (("--x", "batch", "--y", "traffic_bytes", "--hue", "levels", "--kind", "bar"),
     ("--x: 41 values of batch, more than the 40 a bar chart can label on its x axis", "--where COL=VALUE")),
])
def test_more_categories_than_a_figure_can_label_are_refused(tmp_path, args, words):
    d = _folder(tmp_path, MAX_CATEGORIES + 1)
    _refused(_plot(tmp_path, str(d), *args, "--out", "p.png"), tmp_path / "p.png", *words)


def test_forty_categories_are_drawn_within_a_sane_size(tmp_path):
    import matplotlib.image as mpimg

    d = _folder(tmp_path, MAX_CATEGORIES)
    for kind, more in (("heatmap", ("--y", "levels", "--z", "traffic_bytes")),
                       ("bar", ("--y", "traffic_bytes", "--hue", "levels"))):
        r = _plot(tmp_path, str(d), "--x", "batch", *more, "--kind", kind, "--out", f"{kind}.png")
        assert r.returncode == 0, r.stderr
        h, w = mpimg.imread(tmp_path / f"{kind}.png").shape[:2]
        assert w <= 4000 and h <= 1000, (kind, w, h)
    # a line chart of many x values is a numeric axis: not limited
    (tmp_path / "many").mkdir()
    big = _folder(tmp_path / "many", 300)
    assert _plot(tmp_path, str(big), "--x", "batch", "--y", "traffic_bytes", "--hue", "levels", "--out", "l.png").returncode == 0


@pytest.mark.parametrize("cell, all_cells, words", [
    ("nan", False, "'nan' is not a finite number"), ("inf", True, "'inf' is not a finite number"),
    ("-Infinity", False, "'-Infinity' is not a finite number"),
    ("1_000", False, "'1_000' is not a number"), (" 5", False, "' 5' is not a number"),
])
def test_cells_not_numbers_as_explore_writes_them_are_refused_naming_the_file(tmp_path, cell, all_cells, words):
    d = _folder(tmp_path, 3, cell, all_cells)
    r = _plot(tmp_path, str(d), "--x", "batch", "--y", "traffic_bytes", "--hue", "levels", "--out", "p.png")
    _refused(r, tmp_path / "p.png", f"{d / 'results.csv'}, row 1 of the plotted rows, column traffic_bytes: {words}")


def test_number_reads_what_explore_writes_only():
    assert number("1000") == 1000 and number("7009477600/49") * 49 == 7009477600 and number("2.5e-05") > 0
    assert number("1_000") is None and number(" 5") is None and number("5 ") is None and number("inf") is None


def test_a_refusal_met_after_the_figure_opened_leaves_none_open(tmp_path):
    """A plot whose checks refuse after its figure was made (the library, called repeatedly from
    the API or a notebook) must not leave that figure in pyplot."""
    import matplotlib.pyplot as plt

    from explorer.app.sweep import plot
    from explorer.core.errors import SpecError

    def make():
        plt.subplots()
        raise SpecError("--x", "refused after the figure opened")

    before = set(plt.get_fignums())
    with pytest.raises(SpecError):
        plot._draw(tmp_path / "p.png", make)
    assert set(plt.get_fignums()) == before and not (tmp_path / "p.png").exists()
