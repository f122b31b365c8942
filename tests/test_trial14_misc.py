"""Trial 14's smaller findings (#6, #9): the reasons and numbers the user reads."""

from __future__ import annotations

import pytest

from .conftest import run_cli


def test_an_overflowing_suggestion_model_says_int64_not_time(capsys):
    # batch 2^40: CP-SAT rejects the suggestion's model (MODEL_INVALID, overflow) at once; the
    # note named a timeout and advised a longer --time-limit
    code, out, err = run_cli(["--model", "lenet-c", "--array", "tpu-mix-16", "--split", "optimal",
                              "--batch", str(2**40), "--memory", "1e-20", "--time-limit", "100"], capsys)
    assert code == 1
    assert "memory: its search's sums exceed CP-SAT's int64 range" in out + err
    assert "ran out of time" not in out + err and "--time-limit above" not in out + err


def _fig(tmp_path, capsys, n: str, accounting: str):
    import json

    code, out, err = run_cli(["reproduce", "hypar", "--figure", n, "--out", str(tmp_path), "--format", "json",
                              "--accounting", accounting], capsys)
    assert code == 0, err
    f = json.loads(out)["figures"][0]
    return {(r["series"], r["x"]): r for r in f["rows"]}, f["notes"][0]


def test_fig9_peak_note_prints_the_digits_that_tell_the_paper_plan_apart(tmp_path, capsys):
    rows, note = _fig(tmp_path, capsys, "9", "model")
    ours, paper = rows[("peak", "plan")]["ours"], rows[("peak", "plan")]["paper"]
    assert rows[("peak", "plan")]["error"] == sum(a != b for a, b in zip(ours, paper)) > 0
    # "scores 2.865 here" beside "our peak 2.865" read as a tie; the two differ in the 4th digit
    head, tail = note.split("; the paper's peak plan ")
    top, theirs = head.split("(")[1].rstrip(")"), tail.split(" scores ")[1].split(" here")[0]
    assert top != theirs and float(theirs) < float(top) and "lower" in tail


def test_fig10_peak_row_counts_cells_even_when_the_plans_tie(tmp_path, capsys):
    rows, note = _fig(tmp_path, capsys, "10", "hypar-figures")
    row = rows[("peak", "plan")]
    assert row["ours"] != row["paper"]
    assert row["error"] == sum(a != b for a, b in zip(row["ours"], row["paper"])) == 2
    assert "is one of them (a tie" in note


def test_the_peak_note_names_a_tie_ours_or_the_gap():
    from explorer.app.reproduce.hypar import _peak_note

    grid = {("0", "0"): 2.0, ("0", "1"): 2.0, ("1", "0"): 1.99999}
    assert _peak_note(grid, ("0", "0"), [("0", "0"), ("0", "1")], ("0", "0")).endswith("the paper's peak plan 0,0 is ours")
    assert "is one of them" in _peak_note(grid, ("0", "0"), [("0", "0"), ("0", "1")], ("0", "1"))
    far = _peak_note(grid, ("0", "0"), [("0", "0"), ("0", "1")], ("1", "0"))
    assert "our peak 2 (2.00000)" in far and "scores 1.99999 here" in far


def test_a_tiny_llm_memory_limit_is_printed_not_rounded_to_zero(capsys):
    from fractions import Fraction

    from explorer.core.units import GiB, memory_text  # the LLM report's memory form is every report's

    assert memory_text(80 * GiB) == "80 GiB" and memory_text(Fraction(0)) == "0 B"
    assert memory_text(GiB / 200) == "5.12 MiB"
    assert memory_text(Fraction(GiB, 10**9)) == "1.074 B"
    code, out, err = run_cli(["--model", "llama3-8b", "--array", "dgx-a100", "--gpus", "8", "--batch", "8",
                              "--seq", "512", "--memory", "1e-9"], capsys)
    assert code == 1 and "no layout fits in 1.074 B per GPU" in out and "0 GiB" not in out


def test_a_sweep_refusing_a_moe_model_names_its_key_not_the_cli_flag(tmp_path, capsys):
    spec = tmp_path / "llm.yaml"
    spec.write_text("version: 1\ngrid: {model: [mixtral-8x7b]}\nfixed: {array: tpu-mix-16, split: optimal}\n")
    code, out, err = run_cli(["sweep", str(spec), "--out", str(tmp_path / "r")], capsys)
    assert code == 2 and out == "" and len(err.splitlines()) == 1
    assert "llm.yaml: grid.model[0]: 'mixtral-8x7b' is a mixture of experts" in err and "--" not in err.split("explore: error: ")[1]


def test_force_into_another_sweeps_folder_says_whose_plots_it_removed(tmp_path, capsys):
    one, two, out = tmp_path / "one.yaml", tmp_path / "two.yaml", tmp_path / "r"
    one.write_text("version: 1\nname: first\ngrid: {model: [lenet-c, alexnet], levels: [1, 2]}\n")
    two.write_text("version: 1\nname: second\ngrid: {model: [lenet-c], levels: [1, 2]}\n")
    assert run_cli(["sweep", str(one), "--out", str(out), "--quiet"], capsys)[0] == 0
    assert run_cli(["plot", str(out), "--plan", "3"], capsys)[0] == 0
    code, _, err = run_cli(["sweep", str(two), "--out", str(out), "--quiet", "--force"], capsys)
    assert code == 0 and "removed 1 plot drawn from the results of sweep 'first' (replaced) (plan-3.png)" in err
    assert "of this sweep" not in err and not (out / "plan-3.png").exists()


@pytest.mark.parametrize("kw, message", [
    ({"zero": "1"}, "zero: must be one of 0, 1, 3, got '1'"),
    ({"zero": 1.0}, "zero: must be one of 0, 1, 3, got 1.0"),
    ({"degrees": {"tensor": "8"}}, "degrees: 'tensor': must be an integer, got '8'"),
    ({"degrees": {"tensor": 8.0}}, "degrees: 'tensor': must be an integer, got 8.0"),
    ({"degrees": {1: 8}}, "degrees: 1: must be a degree's name (tensor, pipeline, data, expert, virtual), "
                          "without '=' or ','"),
    ({"seq": "512"}, "seq: must be an integer, got '512'"),
    ({"micro_batch": 2.5}, "micro_batch: must be an integer, got 2.5"),
    ({"memory_GiB": "80"}, "memory_GiB: must be a number of GiB, got '80'"),
    ({"memory_GiB": True}, "memory_GiB: must be a number of GiB, got True"),
])
def test_plan_llm_numbers_follow_one_rule(kw, message):
    # zero="1" and degrees={"tensor": "8"} were taken as text while seq="512" was refused
    from explorer import api
    from explorer.core.errors import SpecError

    with pytest.raises(SpecError) as err:
        api.plan_llm("gpt3-1.7b", "dgx-a100", gpus=8, batch=8, **{"seq": 512, **kw})
    assert str(err.value) == message


def test_plan_llm_takes_the_same_values_as_numbers():
    from explorer import api

    r = api.plan_llm("gpt3-1.7b", "dgx-a100", gpus=8, batch=8, seq=512, layout="megatron", zero=1,
                     degrees={"tensor": 2, "pipeline": 1, "data": 4}, micro_batch=1, recompute="selective", memory_GiB=80)
    assert r.ok


def test_a_large_memory_suggestion_prints_no_trailing_point_zero():
    from fractions import Fraction

    from explorer.core.constraints import limit_suggestion
    from explorer.core.units import GiB

    assert limit_suggestion(None, Fraction(24825, 10) * GiB).endswith("try --memory 2483")
    assert limit_suggestion(None, Fraction(6060_5, 10**5) * GiB).endswith("try --memory 0.6061")
    assert limit_suggestion(None, Fraction(3, 2) * GiB).endswith("try --memory 1.5")
