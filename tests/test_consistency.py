"""One vocabulary for the even and the uneven split (issue 20): status words, ``ok``, size and
time limits, the sweep's commands, the LLM planner's JSON and check."""

from __future__ import annotations

import json

from explorer import api
from explorer.core.solution import BROKEN_PLAN_NOTE, Status

from .conftest import run_cli


# -- 1. a heuristic's plan that breaks a rule is not "infeasible" ------------------------------


def test_even_and_split_dp_plans_over_a_cap_say_the_same(capsys):
    """The DP's plan over a cap keeps its status on both paths: the same note by the status,
    ``ok`` false in the JSON and exit status 1; never ``infeasible`` (nothing was proven)."""
    even = ["--model", "vgg-a", "--cap", "0=1MB"]
    split = even + ["--array", "tpu-mix-16", "--split", "equal"]
    for args in (even, split):
        code, out, _ = run_cli(args, capsys)
        assert code == 1 and "level-optimal" in out.splitlines()[1 if args is even else 0], out
        assert f"({BROKEN_PLAN_NOTE})" in out and "infeasible (" not in out
        code, out, _ = run_cli(args + ["--format", "json"], capsys)
        r = json.loads(out)
        assert code == 1 and r["status"] == "level-optimal" and r["ok"] is False and r["violations"], args


def test_api_solve_keeps_the_dp_status_with_ok_false():
    r = api.solve("vgg-a", caps={3: "55MB"})
    assert r.status is Status.LEVEL_OPTIMAL and r.ok is False and r.plan is not None
    assert [v.constraint for v in r.figures.violations] == ["cap level 3 <= 55 MB (caps)"]
    assert r.to_json()["ok"] is False
    assert api.solve("lenet-c", levels=2).to_json()["ok"] is True


def test_rescore_still_catches_a_plan_that_breaks_a_rule_the_solver_does_not_name():
    """The DP's broken plan passes the evaluator only because it names what it breaks; a plan that
    breaks a rule silently, or one marked infeasible, is a solver bug."""
    from dataclasses import replace

    import pytest

    from explorer.app.run import EvaluatorMismatch, rescore
    from explorer.core.constraints import Cap, Constraints
    from explorer.core.partition import Space
    from explorer.core.problem import Problem
    from explorer.frontends import load_array, load_model
    from explorer.solvers import dp
    from fractions import Fraction

    p = Problem(load_model("vgg-a"), load_array("hypar-16"), Space.HYPAR,
                constraints=Constraints(caps=(Cap(3, Fraction(55 * 10**6), "test"),)))
    d = dp.solve(p)
    rescore(p, d)  # names its violation: fine
    with pytest.raises(EvaluatorMismatch, match="breaks cap level 3"):
        rescore(p, replace(d, info={}))
    with pytest.raises(EvaluatorMismatch, match="marked infeasible"):
        rescore(p, replace(d, status=Status.INFEASIBLE))


# -- 2. one size limit per solver, explore --split and check --uneven alike ---------------------


def test_brute_and_exact_refuse_above_the_same_size_in_explore_and_check(capsys):
    """brute refuses above its plan count alike in explore and check; exact's Pareto DP, no longer
    capped by its column pairs, ends at once alike in explore and check where its least time
    estimate passes the limit: lenet-c accpar at the default grid has 5,038,848 pairs (their column
    tables, built one consumer column at a time, fit its memory guard; their time, ~30 s, does not
    fit the 10 s default). Under the time objective explore's exact keeps each kind's memory: the
    constrained path (the joint solver's labels) proves the default ``--split optimal``'s optimum."""
    from explorer.solvers.brute import SPLIT_MAX_PLANS

    base = ["--model", "lenet-c", "--array", "tpu-mix-16", "--space", "accpar"]
    code, _, err = run_cli(base + ["--split", "optimal", "--solver", "brute"], capsys)
    assert code == 2 and f"exceeds its limit of {SPLIT_MAX_PLANS:,}" in err, err
    code, out, err = run_cli(base + ["--split", "optimal", "--solver", "exact", "--format", "json"], capsys)
    got = json.loads(out)
    code, out, err = run_cli(base + ["--split", "optimal", "--format", "json"], capsys)
    joint = json.loads(out)
    assert got["status"] == joint["status"] == "optimal" and got["objective_value"] == joint["objective_value"]
    code, out, err = run_cli(base + ["--split", "optimal", "--solver", "exact", "--objective", "traffic"], capsys)
    assert code == 0 and "ended at once: 5,038,848 column pairs: their column tables and completion bounds are estimated at no less than" in out, (code, out, err)
    assert "feasible by exact" in out.splitlines()[0], out  # the best seed plan, not a proof
    code, out, _ = run_cli(["check", "--uneven", *base, "--solvers", "brute,exact", "--format", "json"], capsys)
    rows = json.loads(out)["solvers"]
    # exact ends at once with the best of its seeds: the even split's proven optimum (check --uneven's
    # proving rows start from it, as --split optimal's do), not a proof
    assert rows["brute"]["status"] == "refused" and rows["exact"]["status"] == "feasible"
    assert f"exceeds its limit of {SPLIT_MAX_PLANS:,}" in rows["brute"]["reason"]
    assert "5,038,848 column pairs: their column tables and completion bounds are estimated at no less than" in rows["exact"]["reason"]


# -- 3. one minimum --time-limit, one message, every command ------------------------------------


def test_every_command_refuses_a_short_time_limit_in_one_message(capsys, tmp_path):
    from explorer.core.errors import SpecError
    from explorer.core.solution import MIN_TIME_LIMIT_S

    message = f"must be a finite number of seconds >= {MIN_TIME_LIMIT_S:g}, got 0.01"
    mix = ["--model", "lenet-c", "--array", "tpu-mix-16"]
    for args in (mix + ["--split", "optimal"], ["split", *mix], ["check", "--uneven", *mix],
                 ["--model", "lenet-c", "--solver", "cpsat"], ["check", "--model", "lenet-c"]):
        code, out, err = run_cli(args + ["--time-limit", "0.01"], capsys)
        assert code == 2 and out == "" and err.startswith(f"explore: error: Invalid value for '--time-limit': {message}"), args
    for kw in ({}, {"split": "optimal", "array": "tpu-mix-16"}):
        try:
            api.solve("lenet-c", time_limit=0.01, **kw)
        except SpecError as err:
            assert str(err) == f"time_limit: {message}", kw
        else:
            raise AssertionError(f"time_limit=0.01 accepted with {kw}")
    for point in ("{solver: cpsat}", "{split: search}"):
        f = tmp_path / "s.yaml"
        f.write_text(f"version: 1\ngrid: {{model: [lenet-c]}}\nfixed: {{time_limit: 0.01}}\npoints:\n  - {point}\n")
        code, _, err = run_cli(["sweep", str(f), "--out", str(tmp_path / "o")], capsys)
        assert code == 2 and f"time_limit: {message}" in err, err
    assert run_cli(["--model", "lenet-c", "--solver", "cpsat", "--time-limit", "0.1", "--workers", "1"], capsys)[0] == 0


# -- 4. explore sweep --help lists its merge command --------------------------------------------


def test_sweep_help_lists_merge(capsys):
    code, out, _ = run_cli(["sweep", "--help"], capsys)
    assert code == 0 and out.startswith("Usage: explore sweep [OPTIONS] FILE")
    commands = out.split("\nCommands:\n", 1)[1]
    assert commands.split()[0] == "merge" and "Join the outputs of shards" in commands
    assert "run " not in commands  # the sweep itself is hidden: it is `explore sweep FILE`


# -- 5 and 6. the LLM planner's JSON says ok; its check has schema_version, parameters, notes ----

LLM = ["--model", "gpt3-1.7b", "--array", "dgx-a100", "--gpus", "8", "--batch", "32", "--seq", "512",
       "--recompute", "selective", "--zero", "1"]


def test_llm_json_says_ok_as_the_other_reports_and_keeps_fits(capsys):
    code, out, _ = run_cli(LLM + ["--format", "json"], capsys)
    r = json.loads(out)
    assert code == 0 and r["ok"] is True and r["fits"] is True
    assert r["runners_up"] and all(s["ok"] is s["fits"] for s in r["runners_up"])
    code, out, _ = run_cli(LLM + ["--memory", "1", "--format", "json"], capsys)  # nothing fits in 1 GiB
    r = json.loads(out)
    assert code == 1 and r["status"] == "infeasible" and r["ok"] is False


def test_llm_check_shows_the_planners_inputs_parameters_and_notes(capsys):
    from explorer.app.llm_report import SCHEMA_VERSION

    _, plan_table, _ = run_cli(LLM, capsys)
    _, plan_json, _ = run_cli(LLM + ["--format", "json"], capsys)
    code, table, _ = run_cli(["check", *LLM], capsys)
    assert code == 0
    first, *rest = plan_table.splitlines()
    assert table.splitlines()[0] == "check: " + first and "1.7B parameters" in first
    notes = [x for x in rest if x.startswith("note: ")]
    assert notes and all(n in table.splitlines() for n in notes)
    code, out, _ = run_cli(["check", *LLM, "--format", "json"], capsys)
    c, p = json.loads(out), json.loads(plan_json)
    assert code == 0 and c["schema_version"] == p["schema_version"] == SCHEMA_VERSION
    assert c["inputs"] == p["inputs"] and c["inputs"]["parameters"] == 1_652_230_656
    assert c["notes"] == p["notes"] and c["agree"] is True


def test_explore_split_says_why_exact_ended_at_once(capsys):
    """exact's Pareto DP (the traffic objective: outside the joint solver's labels) ends at once
    where its column pairs cannot be done within the time limit: explore --split says so (the
    reason check --uneven prints), not a bare 'within the time limit', with the best seed plan."""
    base = ["--model", "alexnet", "--array", "tpu-mix-16", "--space", "accpar", "--alpha-grid", "4", "--objective", "traffic"]
    # 3 s: its tables need ~4.4 s at the calibrated least (6.0 us a pair at H = 4; ~7 s of CPU measured)
    code, out, err = run_cli(base + ["--split", "optimal", "--solver", "exact", "--time-limit", "3"], capsys)
    assert code == 0 and "feasible by exact" in out.splitlines()[0], out  # the best seed plan, not proven
    note = next(x for x in out.splitlines() if x.startswith("note: exact:"))
    assert "ended at once: 734,832 column pairs: their column tables and completion bounds are estimated at no less than" in note and "beyond what the time limit leaves" in note, out


def test_infeasible_split_text_names_the_conflict_as_its_json_does(capsys):
    """explore --split with a memory limit no plan meets: the text names the conflicting rule (as
    explore's text and the split's JSON do), not only the generic note."""
    base = ["--model", "lenet-c", "--array", "tpu-mix-16", "--alpha-grid", "2", "--memory", "0.00001",
            "--split", "optimal", "--solver", "exact"]
    code, out, _ = run_cli(base, capsys)
    conflict = "memory <= 10.49 KiB per accelerator (--memory)"
    assert code == 1 and f"no plan satisfies the constraints; these conflict: {conflict}" in out, out
    code, js, _ = run_cli(base + ["--format", "json"], capsys)
    assert code == 1 and json.loads(js)["conflict"] == [conflict]


def test_split_table_marks_a_baseline_that_breaks_a_limit(capsys):
    """Under --memory the equal-split baselines that break it (data parallelism here) say so in the
    text, as their JSON violations do; those that fit carry no mark."""
    base = ["--model", "lenet-c", "--array", "tpu-mix-16", "--alpha-grid", "2", "--memory", "0.0015",
            "--split", "optimal", "--solver", "exact"]
    code, out, _ = run_cli(base, capsys)
    rows = {line.split()[0]: line for line in out.splitlines()[out.splitlines().index("speedup over equal-split plans:") + 1:]}
    assert code == 0 and "BREAKS memory <= 1.536 MiB per accelerator" in rows["data"], out
    assert "BREAKS" not in rows["the"] + rows["HyPar's"]
    code, js, _ = run_cli(base + ["--format", "json"], capsys)
    b = json.loads(js)["baselines"]
    assert b["all-I"]["violations"] and not b["trick"]["violations"] and not b["hypar"]["violations"]


def test_check_uneven_and_explore_split_word_exacts_early_end_alike(capsys):
    """The exact Pareto DP ended at once with its best seed plan: ``explore check --uneven``'s exact
    row and ``explore --split optimal --solver exact`` say it in the same words (``seed_end_note``;
    the check said "ended at once (...): the best seed plan", the split report "ended at once: ...,
    beyond the 1.93 s the time limit leaves: the best seed plan, not proven optimal; bound: ...")."""
    base = ["--model", "lenet-c", "--array", "tpu-mix-16", "--space", "accpar", "--objective", "traffic"]
    code, out, err = run_cli(["check", "--uneven", *base, "--solvers", "exact,dp", "--format", "json"], capsys)
    row = json.loads(out)["solvers"]["exact"]
    assert code == 0 and row["status"] == "feasible", err
    code, out, err = run_cli([*base, "--split", "optimal", "--solver", "exact", "--format", "json"], capsys)
    got = json.loads(out)
    assert code == 0 and got["status"] == "feasible", err
    assert got["note"] == "exact: " + row["reason"], (got["note"], row["reason"])
    assert row["reason"].startswith("ended at once: 5,038,848 column pairs: their column tables and completion bounds are estimated at no less than ~")
    assert "beyond what the time limit leaves: the best seed plan, not proven optimal; bound: " in row["reason"]
