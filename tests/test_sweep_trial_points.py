"""A new-user trial's findings on sweeps and plots: a plan figure's title names its point's swept
keys (it named the base array of a swept mix or link bandwidth), a sweep says its points'
``warning:`` lines on stderr and in results.csv (they were in plans.jsonl alone), and the Pareto
legend says what its proven points were proven optimal for (their objective, not the axes)."""

from __future__ import annotations

import csv
import json
import shutil

import pytest

pytest.importorskip("matplotlib")

from explorer.app.sweep import plot  # noqa: E402

from .conftest import run_cli  # noqa: E402

ARRAY = """\
version: 1
name: my-4
levels: 2
dtype_bytes: 4
link_bandwidth_GBps: [25, 50]
peak_TFLOPS: 8
memory_GiB: 16
"""
# levels 3 and 4 are beyond the array's 2: each such point warns (its bandwidth in the text),
# and the extra point (batch 16 on 32 accelerators) warns twice: 6 distinct warnings on 5 points
SWEEP = """\
version: 1
name: beyond
grid:
  levels: [2, 3, 4]
  link_bandwidth_GBps: [10, 200]
fixed: {model: lenet-c, array: arr.yaml, solver: exact, objective: traffic}
points:
  - {levels: 5, model: lenet-c, array: arr.yaml, solver: exact, batch: 16}
"""
MIX = """\
version: 1
name: mixes
grid:
  mix: ["2 v2 + 2 v3", "1 v2 + 3 v3"]
fixed: {model: lenet-c, array: tpu-mix-16, levels: 2, split: equal, batch: 32}
"""
BEYOND = ("levels 2-3 are beyond the 2 levels array my-4 lists: their link bandwidth is the last listed level's "
          "again (200 GB/s at level 2; the array's bandwidth_beyond: repeat)")
SMALL_BATCH = ("batch 16 is smaller than the 32 accelerators: splitting the batch (type I) at every level gives 1/2 "
               "of a sample per accelerator (amounts are exact fractions, not whole samples)")


@pytest.fixture(scope="module")
def beyond(tmp_path_factory):
    """The folder of the sweep file and its array (the tests run the sweep there)."""
    root = tmp_path_factory.mktemp("beyond")
    (root / "arr.yaml").write_text(ARRAY)
    (root / "s.yaml").write_text(SWEEP)
    return root


def _run(args, capsys, cwd):
    import os

    old = os.getcwd()
    os.chdir(cwd)
    try:
        return run_cli(args, capsys)
    finally:
        os.chdir(old)


def _warning_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("explore: warning: ")]


def _close(fig):
    import matplotlib.pyplot as plt

    plt.close(fig)


def test_a_sweep_says_its_points_warnings_once_each_and_writes_them_to_results_csv(beyond, capsys):
    code, _, err = _run(["sweep", "s.yaml", "--out", "o", "--workers", "1"], capsys, beyond)
    assert code == 0, err
    lines = err.splitlines()
    head = lines.index("explore: warnings on 5 of 7 points (6 distinct; each point's are in the warnings column "
                       "of results.csv):")
    assert lines[head - 1].startswith("sweep beyond: 7 points")
    shown = _warning_lines(err)
    assert len(shown) == 6  # the first 5 distinct warnings, then how many more
    assert f"explore: warning: {BEYOND} (1 of 7 points)" in shown
    assert f"explore: warning: {SMALL_BATCH} (1 of 7 points)" in shown
    assert shown[-1] == "explore: warning: ... and 1 more distinct warning (see the warnings column)"
    with open(beyond / "o" / "results.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [bool(r["warnings"]) for r in rows] == [False, False, True, True, True, True, True]
    assert rows[5]["warnings"] == BEYOND
    assert rows[6]["warnings"].split(" | ") == [SMALL_BATCH, BEYOND.replace("2-3", "2-4").replace("200", "50")]
    code, _, again = _run(["sweep", "s.yaml", "--out", "o", "--workers", "1"], capsys, beyond)
    assert code == 0 and "(7 reused from the cache, 0 computed" in again  # cached points' warnings still counted
    assert _warning_lines(again) == shown


def test_a_merge_of_shards_says_the_warnings_and_refuses_an_edited_list(beyond, capsys):
    for i in (0, 1):
        code, _, err = _run(["sweep", "s.yaml", "--out", f"sh{i}", "--shard", f"{i}/2", "--workers", "1"], capsys, beyond)
        assert code == 0, err
    code, _, err = _run(["sweep", "merge", "sh0", "sh1", "--out", "m"], capsys, beyond)
    assert code == 0, err
    assert "explore: warnings on 5 of 7 points (6 distinct;" in err and len(_warning_lines(err)) == 6
    with open(beyond / "m" / "results.csv", newline="") as fh:
        assert [r["warnings"] for r in csv.DictReader(fh)][5] == BEYOND
    lines = (beyond / "sh0" / "plans.jsonl").read_text().splitlines()
    d = json.loads(lines[-1])
    d["result"]["warnings"] = 5
    shutil.copytree(beyond / "sh0", beyond / "bad")
    (beyond / "bad" / "plans.jsonl").write_text("\n".join([*lines[:-1], json.dumps(d)]) + "\n")
    code, _, err = _run(["sweep", "merge", "bad", "sh1", "--out", "m2"], capsys, beyond)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert f"plans.jsonl, line {len(lines)}: result.warnings: 5 is not a list of sentences: an edited record" in err


def test_a_plan_title_names_its_points_swept_keys(beyond, capsys):
    """Point 5 (levels 4, 200 GB/s links) was titled '... (my-4)' alone; its swept keys are
    under the first line, then the fixed ones the title does not say already."""
    if not (beyond / "o" / "results.csv").exists():
        _run(["sweep", "s.yaml", "--out", "o", "--workers", "1"], capsys, beyond)
    fig = plot.plan_figure(beyond / "o", 5)
    lines = fig.axes[0].get_title().split("\n")
    _close(fig)
    assert lines[0] == "point 5: lenet-c on 16 accelerators (my-4), hypar space, batch 256"
    assert lines[1:3] == ["swept: levels=4, link_bandwidth_GBps=200", "fixed: objective=traffic"]
    fig = plot.plan_figure(beyond / "o", 6)  # the extra point: batch swept too (set on it alone)
    assert fig.axes[0].get_title().split("\n")[1:3] == ["swept: levels=5, batch=16", "fixed: objective=traffic"]
    _close(fig)
    shutil.copytree(beyond / "o", beyond / "nocsv", ignore=shutil.ignore_patterns("cache"))
    (beyond / "nocsv" / "results.csv").unlink()  # no table to tell swept from fixed: the point's keys
    fig = plot.plan_figure(beyond / "nocsv", 5)
    said = " ".join(fig.axes[0].get_title().split("\n"))  # the line is wrapped to the figure's width
    assert ("point: levels=4, link_bandwidth_GBps=200, model=lenet-c, array=arr.yaml, solver=exact, "
            "objective=traffic") in said
    _close(fig)


def test_a_mix_points_plan_title_names_its_mix_and_fits(tmp_path, capsys):
    (tmp_path / "m.yaml").write_text(MIX)
    code, _, err = _run(["sweep", "m.yaml", "--out", "o", "--workers", "1"], capsys, tmp_path)
    assert code == 0, err
    fig = plot.plan_figure(tmp_path / "o", 1)
    title = fig.axes[0].title
    lines = title.get_text().split("\n")
    assert lines[0] == "point 1: lenet-c on 4 accelerators (tpu-mix-16), hypar space, batch 32"
    assert lines[1:3] == ["swept: mix=1 v2 + 3 v3", "fixed: levels=2"]
    fig.canvas.draw()
    box = title.get_window_extent(fig.canvas.get_renderer())
    assert 0 <= box.x0 and box.x1 <= fig.bbox.width and box.y1 <= fig.bbox.height  # inside the image
    _close(fig)


def test_the_pareto_legend_says_the_plans_were_proven_optimal_for_their_objective(beyond, capsys):
    if not (beyond / "o" / "results.csv").exists():
        _run(["sweep", "s.yaml", "--out", "o", "--workers", "1"], capsys, beyond)
    fig, _ = plot.pareto_figure(beyond / "o", plot.Chart("scatter", "memory_bytes_per_accelerator", "step_time_s"))
    texts = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    _close(fig)
    assert "Pareto-optimal (plan proven traffic-optimal)" in texts
    assert not any("(proven optimal)" in t for t in texts)
    from explorer.app.sweep.titles import proven_text

    assert proven_text([{"objective": "time"}, {"objective": ""}]) == "Pareto-optimal (plan proven time- or traffic-optimal)"
    assert proven_text([{"split": "search"}]) == "Pareto-optimal (plan proven time-optimal)"  # a split point's default
