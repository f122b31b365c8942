"""One concept in one place in the app layer (issues 20 and 23 leftovers): one code stamp for the
caches, one sentinel and one shape for a cut heuristic (the API's one number checker:
tests/test_second_trial_fixes.py, ``test_one_wording_per_number_rule``)."""

from __future__ import annotations

from explorer.core.errors import SpecError


def test_a_sweep_file_error_drops_its_own_keys_option_and_names_others_as_keys():
    # _about dropped any source starting with "--": an error about another option lost its name
    from explorer.app.sweep.spec import _about

    assert _about(SpecError("--model", "unknown model 'x'"), "model") == "unknown model 'x'"
    assert _about(SpecError("--array", "bad"), "array") == "bad"
    assert _about(SpecError("--batch", "must be >= 1, got 0"), "model") == "batch: must be >= 1, got 0"
    assert _about(SpecError("net.yaml: layers[0]", "no kind"), "model") == "net.yaml: layers[0]: no kind"


def test_ended_at_once_is_read_from_its_field_not_from_the_reasons_text():
    # the notes matched "column pairs need" in the reason: a reason worded otherwise lost the note
    from explorer.app.split_notes import proof_note
    from explorer.core.solution import Status

    info = {"reason": "9 pairs, beyond the 2 s left", "ended_at_once": "9 column pairs: their column tables and completion bounds are estimated at no less than ~2 s",
            "proved_by": "", "method": "pareto-dp"}
    assert proof_note("exact", Status.FEASIBLE, 2.0, info) == (
        "exact: ended at once: 9 column pairs: their column tables and completion bounds are estimated at no less than ~2 s, beyond what the time limit leaves: the best seed "
        "plan, not proven optimal")
    alone = dict(info, reason="CP-SAT refused the instance (x)", alone=True, exact_reason="9 pairs, beyond")
    assert proof_note("cpsat", Status.OPTIMAL, 2.0, alone) == (
        "cpsat: CP-SAT refused the instance (x): the exact constrained path answered alone and ended at once: "
        "9 column pairs: their column tables and completion bounds are estimated at no less than ~2 s, beyond what the time limit leaves: the best seed plan, proven optimal: "
        "it meets the bound")
    stopped = dict(info, reason="column pairs need more", ended_at_once="")  # the words alone: not ended at once
    assert proof_note("exact", Status.FEASIBLE, 2.0, stopped).startswith("exact: stopped at the time limit (2 s)")


def test_element_counts_with_a_fraction_are_printed_exactly_with_a_note(capsys):
    # the proportional row printed 2,555,213.7 (a float rounded to 0.1): the model's value is 125205470/49
    from fractions import Fraction

    from explorer.app.figures_text import exact_count
    from .conftest import run_cli

    assert exact_count(Fraction(125205470, 49)) == "2,555,213+33/49" and exact_count(2200380) == "2,200,380"
    assert exact_count(Fraction(1, 2)) == "1/2" and exact_count(Fraction(51, 4)) == "12+3/4"  # one number, not two
    assert exact_count(5 + Fraction(1, 10**12 + 1)) == "~5.00"  # a long fraction: rounded, marked (as a long alpha)
    code, out, err = run_cli(["check", "--uneven", "--model", "lenet-c", "--array", "tpu-mix-16", "--alpha-grid", "4",
                              "--objective", "traffic", "--solvers", "dp,proportional"], capsys)
    assert code == 0, err
    row = next(line for line in out.splitlines() if line.startswith("proportional"))
    assert " 2,555,213+33/49 " in row and ".7" not in row
    assert "note: element counts are exact: an alpha gives a side a fraction" in out
    code, out, err = run_cli(["--model", "lenet-c", "--array", "tpu-mix-16", "--split", "proportional",
                              "--objective", "traffic"], capsys)
    assert code == 0 and "traffic 2,555,213+33/49 elements" in out and "330,100+40/49" in out
    assert "note: element counts are exact: an alpha gives a side a fraction" in out
    code, out, err = run_cli(["check", "--uneven", "--model", "lenet-c", "--array", "tpu-mix-16", "--alpha-grid", "4",
                              "--objective", "traffic", "--solvers", "dp"], capsys)
    assert "fraction" not in out  # whole counts: no note


def test_cpsat_refused_before_or_after_its_count_gives_the_exact_paths_answer_one_way():
    # _exact_alone and cpsat_after_exact's refusal after the count each built the answer (reason, the
    # exact path's own reason, proved_by) inline: one function, _cpsat_refused
    from fractions import Fraction

    from explorer.app.split_solve import _cpsat_refused
    from explorer.core.errors import Refused
    from explorer.core.solution import Status, split_solution

    pre = split_solution("exact", Status.FEASIBLE, None, Fraction(3), Fraction(2), 0.0, 0)
    pre.info.update(method="pareto-dp", reason="ended early: 9 pairs")
    alone, after = (_cpsat_refused(pre, Refused("too big"), 0.0, alone=a) for a in (True, False))
    for sol in (alone, after):
        assert sol.solver == "cpsat" and sol.info["reason"] == "CP-SAT refused the instance (too big)"
        assert sol.info["exact_reason"] == "ended early: 9 pairs" and sol.info["proved_by"] == "exact:pareto-dp"
    assert alone.info["exact_alone"] and "exact_alone" not in after.info
    unproved = split_solution("exact", Status.FEASIBLE, None, Fraction(3), None, 0.0, 0)
    assert "proved_by" not in _cpsat_refused(unproved, Refused("too big"), 0.0).info
