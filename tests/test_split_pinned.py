"""The proven step times on tpu-mix-16 (8 TPU v2 | 8 TPU v3, AccPar space, alpha grid 1/16 plus
the proportional ratio): ``explore split --split optimal`` proved these before the uneven split
became the even split's model (issue 20); they must not change. Each is OPTIMAL (bound == step
time) and re-scored by the independent evaluator (the run checks it and stops on a mismatch)."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest

from .conftest import run_cli

# recorded with `explore split --model M --array tpu-mix-16 --split optimal --format json` (seconds)
PINNED = {
    "lenet-c": Fraction(1677089, 71750000000),
    "alexnet": Fraction(3936030799, 1121093750000),
    "vgg-a": Fraction(2693995259, 140136718750),
    "resnet18": Fraction(391352483, 71777343750),
}


@pytest.mark.parametrize("model", list(PINNED))
def test_proven_step_times_on_tpu_mix_16_do_not_change(model, capsys):
    code, out, _ = run_cli(["split", "--model", model, "--array", "tpu-mix-16", "--split", "optimal",
                            "--format", "json"], capsys)
    data = json.loads(out)
    assert code == 0 and data["status"] == "optimal", data.get("note")
    assert Fraction(data["objective_value"]) == PINNED[model] == Fraction(data["bound"])  # the step time, exact
    assert data["step_time_s"] == float(PINNED[model])
    assert data["gap"] == 0


# the same runs from the one command, accpar space (the values above) and hypar (recorded at b6421a3,
# before the joint solver read the one integer table)
PINNED_HYPAR = {
    "lenet-c": Fraction(1330477, 52500000000),
    "alexnet": Fraction(27646747, 7324218750),
    "vgg-a": Fraction(331822499, 17089843750),
    "resnet18": Fraction(10713208627, 1961914062500),
}


@pytest.mark.parametrize("space", ["accpar", "hypar"])
@pytest.mark.parametrize("model", list(PINNED))
def test_explore_split_optimal_proves_the_same_step_times(model, space, capsys):
    code, out, _ = run_cli(["--model", model, "--array", "tpu-mix-16", "--space", space, "--split", "optimal",
                            "--format", "json"], capsys)
    data = json.loads(out)
    want = (PINNED if space == "accpar" else PINNED_HYPAR)[model]
    assert code == 0 and data["status"] == "optimal" and data["solver"] == "joint", data.get("note")
    assert Fraction(data["objective_value"]) == want == Fraction(data["bound"])
