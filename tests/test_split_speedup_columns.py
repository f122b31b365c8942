"""A split sweep's ``speedup_over_all_I`` and ``speedup_over_all_I_equal`` are the same figure (the
trial user's 32-point sweep: equal in every row): a split run's all-I baseline is the equal-split
all-I on the same array (docs/sweeps.md says so); this pins it, so the docs stay true."""

from __future__ import annotations

import json

import pytest

from explorer.app.sweep.point import split_summary

from .conftest import run_cli


@pytest.mark.parametrize("split", ["proportional", "search"])
def test_the_two_columns_are_one_figure(split, capsys):
    code, out, err = run_cli(["--model", "vgg-a", "--array", "tpu-mix-16", "--split", split, "--format", "json"], capsys)
    assert code == 0, err
    r = json.loads(out)
    all_i = r["baselines"]["all-I"]
    assert r["speedup_over_all_I"] == split_summary(r)["speedup_over_all_I_equal"] == all_i["split_speedup"]
    assert r["speedup_over_all_I"] == pytest.approx(all_i["step_time_s"] / r["step_time_s"])
    assert r["speedup_over_all_I"] > 1  # the split beats the equal split's data parallelism here
