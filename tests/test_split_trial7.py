"""Trial 7's uneven-split findings: the constraints line names --memory as the even split does,
the PLAN BREAKS hint names --split proportional's proving solvers where they apply."""

from __future__ import annotations

import json

from .conftest import run_cli

MIX = ["--array", "tpu-mix-16", "--model", "lenet-c"]


def test_the_split_constraints_line_names_memory_as_the_even_split_does(capsys):
    code, even, _ = run_cli(["--model", "lenet-c", "--memory", "0.05"], capsys)
    assert "constraints: memory 0.05 GiB/accelerator (weight copies 0)" in even.splitlines()
    code, out, _ = run_cli([*MIX, "--split", "optimal", "--memory", "0.05"], capsys)
    assert out.splitlines()[1] == "constraints: memory 0.05 GiB/accelerator (weight copies 0)"
    code, out, _ = run_cli([*MIX, "--split", "optimal", "--memory", "0.05", "--cap", "0=20MB"], capsys)
    assert out.splitlines()[1] == "constraints: cap level 0 <= 20 MB (--cap); memory 0.05 GiB/accelerator (weight copies 0)"
    code, out, _ = run_cli([*MIX, "--split", "optimal"], capsys)  # each kind's own memory: no constraints line
    assert not any(line.startswith("constraints:") for line in out.splitlines())


def test_the_split_json_gives_memory_as_the_even_split_does(capsys):
    _, even, _ = run_cli(["--model", "lenet-c", "--memory", "0.05", "--format", "json"], capsys)
    _, split, _ = run_cli([*MIX, "--split", "optimal", "--memory", "0.05", "--format", "json"], capsys)
    assert json.loads(split)["constraints"]["memory_bytes"] == json.loads(even)["constraints"]["memory_bytes"] \
        == "268435456/5"


def test_a_proportional_plan_that_breaks_a_cap_names_proportionals_proving_solvers(capsys):
    code, out, err = run_cli([*MIX, "--split", "proportional", "--cap", "0=1KB"], capsys)
    hint = "--split proportional (its alphas) or optimal --solver brute, exact or cpsat keeps to caps"
    assert code == 1 and hint in err and hint in out
    code, out, err = run_cli([*MIX, "--split", "search", "--cap", "0=1KB"], capsys)
    assert code == 1 and "(--split optimal --solver brute, exact or cpsat keeps to caps" in err
