"""explore plot DIR --plan N on a split point: each cell's type and alphas fit inside the cell
(new-user trial 3: "1/2|15/43|..." on one line overprinted the neighbouring cells). Checked on
the drawn matplotlib texts' boxes against their cells, not on pixels."""

from __future__ import annotations

import json
import shutil

import pytest

pytest.importorskip("matplotlib")

from explorer.api import sweep  # noqa: E402
from explorer.app.sweep import plan_labels  # noqa: E402
from explorer.app.sweep.plot import plan_figure  # noqa: E402


@pytest.fixture(scope="module")
def uneven(tmp_path_factory):
    """The trial's kind of point: levels 5 on tpu-mix-16 with 4 v3, split search (levels 1-2's
    groups give different alphas)."""
    root = tmp_path_factory.mktemp("uneven")
    spec = {"version": 1, "name": "u", "grid": {"model": ["vgg-a"], "split": ["search"]},
            "fixed": {"array": "tpu-mix-16", "levels": 5, "accelerators_v3": 4, "space": "accpar"}}
    list(sweep(spec, out=root / "out", workers=1))
    return root / "out"


def _texts(fig):
    ax = fig.axes[0]
    return ax, list(ax.texts)


def test_the_trial_point_s_labels_stack_their_alphas_inside_their_cells(uneven):
    fig = plan_figure(uneven, 0)
    ax, texts = _texts(fig)
    res = json.loads((uneven / "plans.jsonl").read_text().splitlines()[0])["result"]
    assert len(texts) == 5 * len(res["layers"])
    assert plan_labels.overflowing(ax, texts) == []
    assert not any("|" in t.get_text() for t in texts)
    conv = res["layers"].index("conv1_1")
    level1 = texts[1 * len(res["layers"]) + conv].get_text()
    assert level1 == "I\n1/2\n15/43", level1  # the level's two groups: one alpha a line, in group order
    assert "each distinct one, in group order" in ax.get_title()


def _widened(uneven, tmp_path, layers: int, width: int):
    """The trial point's result made wider: ``layers`` layers, 4 groups of distinct alphas of
    ``width`` characters at every level below the top."""
    out = tmp_path / "w"
    shutil.copytree(uneven, out)
    d = json.loads((out / "plans.jsonl").read_text().splitlines()[0])
    r = d["result"]
    r["layers"] = [f"l{j}" for j in range(layers)]
    r["plan"] = [[("I", "II", "III")[(h + j) % 3] for j in range(layers)] for h in range(5)]
    r["alphas"] = [[[f"{g + j + 1}/{'9' * (width - len(str(g + j + 1)) - 1)}" for j in range(layers)]
                    for g in range(min(4, 2 ** h))] for h in range(5)]
    (out / "plans.jsonl").write_text(json.dumps(d) + "\n")
    return out


def test_forty_layers_of_four_distinct_alphas_fit(uneven, tmp_path):
    fig = plan_figure(_widened(uneven, tmp_path, 40, 7), 0)
    ax, texts = _texts(fig)
    assert plan_labels.overflowing(ax, texts) == []
    assert all(t.get_text().count("\n") == min(4, 2 ** (i // 40)) for i, t in enumerate(texts))  # no alpha left out
    assert "left out" not in ax.get_title()


def test_alphas_too_long_for_any_cell_are_left_out_and_the_title_says_so(uneven, tmp_path):
    fig = plan_figure(_widened(uneven, tmp_path, 40, 40), 0)
    ax, texts = _texts(fig)
    assert plan_labels.overflowing(ax, texts) == []
    cut = [t for t in texts if "\n" not in t.get_text()]
    assert cut and f"{len(cut)} cells' alphas left out (no room): plans.jsonl has them" in ax.get_title()
