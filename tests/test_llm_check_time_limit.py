"""``explore check`` on a GPU cluster takes ``--time-limit`` as the planner does (same option, same
minimum): the search and the exhaustive scoring stop there cleanly, and what was scored is compared."""

from __future__ import annotations

import json
from dataclasses import replace

from explorer.app.llm_check import check_llm, llm_check_json, render_llm_check
from explorer.core.solution import Status
from explorer.solvers.llm_space import LlmSpace

from .conftest import run_cli
from .test_llm_planner import problem

BIG = ["check", "--model", "gpt3-1.7b", "--array", "dgx-a100", "--gpus", "16"]  # 2,745 layouts, ~3 s to score all


def test_time_limit_stops_the_scoring_cleanly_with_what_was_checked(capsys):
    code, out, err = run_cli([*BIG, "--time-limit", "0.1", "--format", "json"], capsys)
    r = json.loads(out)
    assert code == 0 and "Traceback" not in err
    assert r["time_limit_s"] == 0.1 and r["complete"] is False and r["agree"] is True
    e = r["exhaustive"]
    assert e["unresolved"] > 0 and e["scored"] >= 1 and e["scored"] + e["unresolved"] == e["candidates"]
    code, out, _ = run_cli([*BIG, "--time-limit", "0.1"], capsys)
    assert code == 0 and "(stopped at the check's time limit of 0.1 s: " in out
    assert "agree: yes, on what was checked" in out


def test_time_limit_minimum_as_the_planners(capsys):
    code, _, err = run_cli([*BIG, "--time-limit", "0.05"], capsys)
    code_p, _, err_p = run_cli([*BIG[1:], "--time-limit", "0.05"], capsys)
    assert code == code_p == 2
    assert err.split(" (see")[0] == err_p.split(" (see")[0] == \
        "explore: error: Invalid value for '--time-limit': must be a finite number of seconds >= 0.1, got 0.05"


def test_a_complete_check_is_unchanged_by_a_generous_limit():
    p, space = problem("gpt3-1.7b", 8, 32, 512), LlmSpace(max_micro_batch=4)
    c = check_llm(p, space, time_limit_s=600)
    assert c.complete and c.agree and c.same_optimum and c.exhaustive.unresolved == 0
    assert "agree: yes\n" in render_llm_check(c)


def test_a_partial_check_disagrees_only_on_a_contradiction():
    """Stopped early: agree while nothing scored contradicts the search; a scored layout faster than
    an optimum the search claims proven is a disagreement."""
    c = check_llm(problem("gpt3-1.7b", 8, 32, 512), LlmSpace(max_micro_batch=4))
    partial = replace(c, exhaustive=replace(c.exhaustive, unresolved=5))
    assert not partial.complete and partial.agree
    slower = max((s for s in c.exhaustive.evaluated if s.fits), key=lambda s: s.step_time_s)
    assert slower.step_time_s > c.exhaustive.best.step_time_s
    wrong = replace(partial, search=replace(c.search, best=slower, bound_s=None, status=Status.OPTIMAL))
    assert not wrong.agree and "agree: NO" in render_llm_check(wrong)
    unproven = replace(wrong, search=replace(wrong.search, status=Status.FEASIBLE))
    assert unproven.agree  # a search stopped early may hold a slower plan


def _cut_at_once(monkeypatch):
    """Both sides stopped before their first score (a deadline already past: the order's clock), no
    rescue score."""
    from explorer.solvers import llm_search

    monkeypatch.setattr(llm_search, "_rescue", lambda *a, **k: None)


def test_a_check_cut_before_any_plan_says_so_not_that_nothing_fits(monkeypatch):
    """Trial 12 #1: gpt3-175b on 1,024 A100 (it fits: t8/p8/d16) cut before any layout fits (now
    before any is scored: the order is under the clock too, issue 23): neither side proves anything,
    so neither says "no layout fits", and there is no optimum to call the same."""
    _cut_at_once(monkeypatch)
    c = check_llm(problem("gpt3-175b", 1024), LlmSpace(), time_limit_s=1e-9)
    s, e = c.search, c.exhaustive
    assert s.best is None and e.best is None and s.unresolved > 0 and e.unresolved > 0
    assert s.status is Status.UNKNOWN and e.status is Status.UNKNOWN
    assert c.same_optimum is None and not c.complete and c.agree
    out = render_llm_check(c)
    assert "no layout fits" not in out
    assert "search:     unknown, no plan within the time limit; scored 0 of 4,752," in out
    assert f"exhaustive: unknown, no plan within the time limit; scored {e.scored:,} of 4,752 (stopped at" in out
    assert f"agree: yes, on what was checked ({e.scored:,} of 4,752 layouts scored within the time limit" in out
    j = llm_check_json(c)
    assert j["same_optimum"] is None and j["exhaustive"]["status"] == "unknown" and j["exhaustive"]["bound"] is None


def test_an_exhaustive_scoring_stopped_early_claims_no_optimum():
    """Stopped with layouts left, the scoring's best is its best so far (feasible, no bound), even
    where the time bounds of the layouts left would prove it: the check tests those bounds."""
    p, space = problem("gpt3-1.7b", 8, 32, 512), LlmSpace(max_micro_batch=4)
    c = check_llm(p, space, time_limit_s=1e-9)
    e = c.exhaustive
    assert e.unresolved > 0 and e.best is not None
    assert e.status is Status.FEASIBLE and e.bound_s is None and c.same_optimum is None
    assert "exhaustive: feasible, " in render_llm_check(c)


def test_same_optimum_is_null_in_json_unless_complete(capsys):
    code, out, _ = run_cli([*BIG, "--time-limit", "0.1", "--format", "json"], capsys)
    r = json.loads(out)
    assert code == 0 and r["complete"] is False and r["same_optimum"] is None
    assert r["exhaustive"]["status"] in ("feasible", "unknown") and r["exhaustive"]["bound"] is None


def test_infeasible_still_says_no_layout_fits():
    """Every layout scored and none fits: proven, so both sides say so."""
    c = check_llm(problem("gpt3-175b", 8), LlmSpace(max_micro_batch=1), time_limit_s=None)
    assert c.complete and c.search.status is Status.INFEASIBLE and c.exhaustive.status is Status.INFEASIBLE
    out = render_llm_check(c)
    assert "search:     infeasible, no layout fits;" in out and "exhaustive: infeasible, no layout fits;" in out
    assert c.same_optimum is True and c.agree


def test_same_optimum_and_agree_need_proofs_not_just_plans():
    """A complete check whose search holds a slower plan: without a proof (feasible) that is no
    contradiction and no optimum to compare (null); claimed optimal, it is a disagreement."""
    c = check_llm(problem("gpt3-1.7b", 8, 32, 512), LlmSpace(max_micro_batch=4))
    assert c.complete and c.same_optimum is True and c.agree
    slower = max((s for s in c.exhaustive.evaluated if s.fits), key=lambda s: s.step_time_s)
    unproven = replace(c, search=replace(c.search, best=slower, status=Status.FEASIBLE))
    assert unproven.complete and unproven.same_optimum is None and unproven.agree
    assert "agree: yes, no contradiction (no optimum proven on both sides to compare)" in render_llm_check(unproven)
    assert llm_check_json(unproven)["same_optimum"] is None
    wrong = replace(unproven, search=replace(unproven.search, status=Status.OPTIMAL))
    assert wrong.same_optimum is False and not wrong.agree and "agree: NO" in render_llm_check(wrong)
    low = replace(unproven, search=replace(unproven.search, bound_s=c.exhaustive.best.step_time_s * 2))
    assert not low.agree  # a bound above a scored layout


def test_the_scoring_progress_names_the_scoring_with_its_counts():
    """``explore check``'s bar (``cli.StepProgress``, on a terminal after 2 s) says which side runs:
    the exhaustive side's counts come under "scoring every layout (no pruning)", up to every layout."""
    heard = []
    c = check_llm(problem("gpt3-1.7b", 8, 32, 512), LlmSpace(max_micro_batch=4),
                  progress=lambda step, done=None, total=None: heard.append((step, done, total)))
    scoring = [(d, t) for s, d, t in heard if s == "scoring every layout (no pruning)" and d is not None]
    assert scoring and all(t == c.exhaustive.candidates for _, t in scoring)
    assert not any(s == "searching layouts" and t == c.exhaustive.candidates and d > c.search.scored
                   for s, d, t in heard)


def test_the_check_says_its_whole_wall_since_the_process_start():
    """Its --time-limit counts from the process's start: the table's last line and the JSON's
    ``total_wall_s`` say that time, more than either side's own; in process (no start given) neither."""
    import re
    import subprocess
    import sys

    cmd = [sys.executable, "-m", "explorer.app.cli", "check", "--model", "gpt3-1.7b", "--array", "dgx-a100", "--gpus",
           "8", "--batch", "32", "--seq", "512", "--recompute", "selective", "--zero", "1"]
    last = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.splitlines()[-1]
    assert re.fullmatch(r"wall \d+\.\d\d s since the process started", last)
    out = json.loads(subprocess.run(cmd + ["--format", "json"], capture_output=True, text=True, check=True).stdout)
    assert out["total_wall_s"] > max(out["search"]["wall_s"], out["exhaustive"]["wall_s"])
    c = check_llm(problem("gpt3-1.7b", 8, 32, 512), LlmSpace(max_micro_batch=4))
    assert c.total_wall_s is None and "since the process started" not in render_llm_check(c)
