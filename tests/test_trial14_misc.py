"""Trial 14's smaller findings (#6, #9): the reasons and numbers the user reads."""

from __future__ import annotations

from .conftest import run_cli


def test_an_overflowing_suggestion_model_says_int64_not_time(capsys):
    # batch 2^40: CP-SAT rejects the suggestion's model (MODEL_INVALID, overflow) at once; the
    # note named a timeout and advised a longer --time-limit
    code, out, err = run_cli(["--model", "lenet-c", "--array", "tpu-mix-16", "--split", "optimal",
                              "--batch", str(2**40), "--memory", "1e-20", "--time-limit", "100"], capsys)
    assert code == 1
    assert "memory: its search's sums exceed CP-SAT's int64 range" in out + err
    assert "ran out of time" not in out + err and "--time-limit above" not in out + err
