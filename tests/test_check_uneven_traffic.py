"""``explore check --uneven --objective traffic`` (and ``check --split optimal``, ``api.check(...,
split="optimal", objective="traffic")``): the uneven-split solvers compared on the least traffic,
ties to the least step time. brute, exact and cpsat prove the lexicographic optimum and must agree
on it (the traffic, and the step time where both are proven); joint and accpar minimise the step
time and are refused; dp, search and proportional give heuristic plans, their traffic compared
with the proven optimum. Every expected value here comes from an independent brute-force call."""

from __future__ import annotations

import json
import random
from dataclasses import replace
from fractions import Fraction as F

import pytest

from explorer import api
from explorer.app.check_uneven import SplitCheckRow, _verdict, check_uneven
from explorer.app.figures_text import fmt_seconds
from explorer.app.results import exact_number
from explorer.core.evaluate import evaluate_split
from explorer.core.objective import Objective
from explorer.core.partition import Space
from explorer.core.errors import SpecError
from explorer.core.randnet import random_chain
from explorer.core.solution import Status
from explorer.core.split_rules import SplitRules
from explorer.core.uneven import FreeAlphas, alpha_grid, alpha_space
from explorer.frontends import load_array, load_model
from explorer.solvers.brute import solve_split as brute_split
from explorer.solvers.uneven_cpsat import cpsat_uneven
from explorer.solvers.uneven_levels import levels_uneven

from .conftest import run_cli
from .test_split_rules import _random_rules
from .test_uneven_model import mix


def _count(cell: str) -> F:
    """A printed element count, exact: '3,768,794+62/69' (``figures_text.exact_count``) or '2,200,380'."""
    return sum((F(part) for part in cell.replace(",", "").split("+")), F(0))


TRAFFIC = SplitRules(Objective.TRAFFIC)
FC2 = """version: 1
name: fc2
batch: 256
layers:
  - {name: fc1, kind: fc, in_features: 784, out_features: 2048}
  - {name: fc2, kind: fc, in_features: 2048, out_features: 2048}
"""


def _fc2(tmp_path) -> str:
    path = tmp_path / "fc2.yaml"
    path.write_text(FC2)
    return str(path)


def _brute(model: str, array: str, grid: int = 2):
    """Brute force's lexicographic optimum (traffic, step time) over the check's declared space."""
    net, arr = load_model(model), load_array(array)
    aspace = alpha_space(arr, alpha_grid(grid), FreeAlphas.UNLIKE)
    sol = brute_split(net, arr, Space.HYPAR, aspace, rules=TRAFFIC)
    assert sol.status is Status.OPTIMAL
    return sol.split_value, evaluate_split(net, arr, sol.plan).step_time_s


def _args(model: str, array: str, *more: str) -> list[str]:
    return ["check", "--uneven", "--model", model, "--array", array, "--space", "hypar", "--alpha-grid", "2",
            "--objective", "traffic", *more]


def test_check_uneven_under_traffic_on_mix4(mix4, tmp_path, capsys):
    """Refused before ("--objective: not with --uneven"); now the table in elements, the proving
    solvers agreeing with brute force's (traffic, step time), joint and accpar refused, exit 0."""
    model = _fc2(tmp_path)
    traffic, step = _brute(model, mix4)
    code, out, err = run_cli(_args(model, mix4), capsys)
    assert code == 0, err
    lines = out.splitlines()
    assert "objective traffic (elements; ties to the least step time)" in lines[0]
    assert lines[1].split()[:7] == ["solver", "status", "traffic", "bound", "gap", "step", "time"]
    rows = {line.split()[0]: line for line in lines[2:-2]}
    for name in ("brute", "exact", "cpsat"):
        cells = rows[name].split()
        assert cells[1:5] == ["optimal", f"{int(traffic):,}", f"{int(traffic):,}", "0.000%"], rows[name]
        assert " ".join(cells[5:7]) == fmt_seconds(step, 6)  # the split report's units, 6 digits
    assert "joint (uneven splits): the step time only, not the traffic objective" in rows["joint"]
    assert "refused" in rows["accpar"] and "accpar: the step time only" in rows["accpar"]
    for name in ("dp", "search", "proportional"):
        assert rows[name].split()[1] == "feasible" and _count(rows[name].split()[2]) >= traffic
    assert lines[-2] == f"proven optimum {int(traffic):,} elements, step time {fmt_seconds(step, 6)} (brute, exact, cpsat)"
    assert lines[-1].startswith("agree: brute, exact, cpsat prove the optimum; no plan below it, no bound above it")


def test_check_split_optimal_json_under_traffic_on_mix4(mix4, tmp_path, capsys):
    """``check --split optimal --objective traffic --format json``: the objective named in the
    header, every row's ``objective`` and ``bound`` in elements, ``optimum`` with the proven tie-break."""
    model = _fc2(tmp_path)
    traffic, step = _brute(model, mix4)
    args = _args(model, mix4, "--format", "json", "--solvers", "brute,exact,cpsat,joint,accpar,dp")
    code, out, err = run_cli(["check", "--split", "optimal", *args[2:]], capsys)
    assert code == 0, err
    d = json.loads(out)
    assert d["objective"] == "traffic" and d["agree"] is True and d["problems"] == []
    assert d["optimum"] == {"objective": exact_number(traffic), "proven_by": ["brute", "exact", "cpsat"],
                            "step_time_s": exact_number(step)}
    for name in ("brute", "exact", "cpsat"):
        row = d["solvers"][name]
        assert row["status"] == "optimal" and row["objective"] == row["bound"] == exact_number(traffic)
        assert row["gap"] == 0.0 and row["step_time_s"] == float(step) and row["ok"] is True
    assert d["solvers"]["joint"] == {"status": "refused",
                                     "reason": "joint (uneven splits): the step time only, not the traffic objective"}
    assert d["solvers"]["accpar"]["status"] == "refused"
    dp = d["solvers"]["dp"]
    assert dp["status"] in ("feasible", "level-optimal") and F(dp["objective"]) >= traffic and dp["bound"] is None


def test_time_json_keeps_its_optimum_shape(mix4, tmp_path, capsys):
    """Under the time objective the optimum is the step time alone (no tie-break key)."""
    model = _fc2(tmp_path)
    code, out, err = run_cli(["check", "--uneven", "--model", model, "--array", mix4, "--space", "hypar",
                              "--alpha-grid", "2", "--solvers", "exact,dp", "--format", "json"], capsys)
    assert code == 0, err
    d = json.loads(out)
    assert d["objective"] == "time" and set(d["optimum"]) == {"objective", "proven_by"}


def test_api_check_split_optimal_under_traffic(mix4, tmp_path):
    model = _fc2(tmp_path)
    traffic, step = _brute(model, mix4)
    r = api.check(model, mix4, space="hypar", split="optimal", objective="traffic", alpha_grid=2,
                  solvers=["exact", "cpsat", "search"])
    assert r.objective is Objective.TRAFFIC and r.agree
    assert (r.optimum, r.optimum_traffic, r.optimum_s, r.proven_by) == (traffic, traffic, step, ("exact", "cpsat"))
    search = r.rows[2]
    assert search.status == "feasible" and search.traffic >= traffic and search.bound is None


def test_bad_input_is_refused_as_before(mix4, tmp_path, capsys):
    model = _fc2(tmp_path)
    code, _, err = run_cli(_args(model, mix4, "--workers", "2"), capsys)
    assert code == 2 and "--workers: not with --uneven" in err
    code, _, err = run_cli(_args(model, mix4)[:-1] + ["energy"], capsys)
    assert code == 2 and "--objective" in err
    with pytest.raises(SpecError, match="objective"):
        api.check(model, mix4, space="hypar", split="optimal", objective="nosuch", alpha_grid=2)


def test_cpsat_tie_break_after_a_hint_is_proven(mix4, tmp_path):
    """check's cpsat row starts from the level DP's plan (a hint); under traffic the tie-break
    stage hinted every variable again, so the model was invalid and the row only ``feasible``."""
    net, arr = load_model(_fc2(tmp_path)), load_array(mix4)
    aspace = alpha_space(arr, alpha_grid(2), FreeAlphas.UNLIKE)
    hint = levels_uneven(net, arr, Space.HYPAR, aspace, rules=TRAFFIC, name="dp").plan
    sol = cpsat_uneven(net, arr, Space.HYPAR, aspace, time_limit_s=30, rules=TRAFFIC, hint=hint)
    best = brute_split(net, arr, Space.HYPAR, aspace, rules=TRAFFIC)
    assert sol.status is Status.OPTIMAL and sol.split_value == best.split_value
    assert evaluate_split(net, arr, sol.plan).step_time_s == evaluate_split(net, arr, best.plan).step_time_s


def _draw(rng):
    """A tiny chain on a random mix with its check arguments: (net, array, grid, free, grid_only)."""
    while True:
        H = rng.choice([1, 1, 2])
        peaks = [rng.choice([1, 2, 3, 5]) for _ in range(2**H)]
        arr = mix(H, peaks, bw=rng.choice([1, 10, 100]), dtype=rng.choice([1, 2, 4]))
        net = random_chain(rng.randrange(10**6), rng.choice([2, 3]) if H == 1 else 2, max_channels=16, max_size=4,
                           consistent=True)
        grid, free, grid_only = rng.choice([2, 3, 4]), rng.choice(list(FreeAlphas)), rng.random() < 0.3
        aspace = alpha_space(arr, alpha_grid(grid), free, proportional=not grid_only)
        n = 1
        for h in range(H):
            n *= len(Space.HYPAR.types) * len(aspace.level_rows(h))
        if n ** len(net.layers) <= 150:
            return net, arr, grid, free, grid_only, aspace


def test_brute_exact_cpsat_agree_in_check_on_seeded_random_chains():
    """check under traffic on 12 seeded random chains: brute, exact and cpsat each prove brute
    force's (traffic, step time), the check agrees, and no heuristic's plan beats it."""
    rng = random.Random(4520)
    for _ in range(12):
        net, arr, grid, free, grid_only, aspace = _draw(rng)
        best = brute_split(net, arr, Space.HYPAR, aspace, rules=TRAFFIC)
        step = evaluate_split(net, arr, best.plan).step_time_s
        r = check_uneven(net, arr, Space.HYPAR, grid, free, ("brute", "exact", "cpsat", "joint", "dp", "search"),
                         time_limit_s=120, grid_only=grid_only, rules=TRAFFIC)
        assert r.agree, r.problems
        assert (r.optimum_traffic, r.optimum_s) == (best.split_value, step)
        assert r.proven_by == ("brute", "exact", "cpsat")
        assert all(row.key() >= (best.split_value, step) for row in r.rows if row.plan is not None)


def test_check_under_traffic_with_pins_caps_and_memory_on_seeded_random_chains():
    """As above under random pins, forbids, caps and memory limits (``test_split_rules``' draw):
    the proving rows agree with brute force on the optimum or on there being no plan."""
    rng = random.Random(4521)
    seen = set()
    for _ in range(10):
        net, arr, grid, free, grid_only, aspace = _draw(rng)
        rules = replace(_random_rules(rng, net, arr, Space.HYPAR, aspace), objective=Objective.TRAFFIC)
        best = brute_split(net, arr, Space.HYPAR, aspace, rules=rules)
        r = check_uneven(net, arr, Space.HYPAR, grid, free, ("brute", "exact", "cpsat", "dp", "search", "proportional"),
                         time_limit_s=120, grid_only=grid_only, rules=rules)
        assert r.agree, r.problems
        seen.add(best.status)
        if best.status is Status.INFEASIBLE:
            assert r.optimum is None and [x.status for x in r.rows[:3]] == ["infeasible"] * 3
            continue
        assert (r.optimum, r.optimum_s) == (best.split_value, evaluate_split(net, arr, best.plan).step_time_s)
        assert r.proven_by == ("brute", "exact", "cpsat")
    assert seen == {Status.OPTIMAL, Status.INFEASIBLE}


def _row(name, status, traffic, step, bound=None):
    return SplitCheckRow(name, status, F(step), None, 0.0, "", True, objective=Objective.TRAFFIC, traffic=F(traffic),
                         traffic_bound=None if bound is None else F(bound), plan=None)


def test_verdict_compares_the_tie_break_only_where_both_are_proven():
    ok = (_row("exact", "optimal", 10, 2, 10), _row("cpsat", "feasible", 10, 3, 10), _row("dp", "feasible", 10, 2))
    best, by, problems = _verdict(ok, Objective.TRAFFIC)
    assert best == (10, 2) and by == ("exact",) and problems == ()
    differ = (_row("exact", "optimal", 10, 2, 10), _row("cpsat", "optimal", 10, 3, 10))
    assert _verdict(differ, Objective.TRAFFIC)[2] == ("proven step times of the least traffic differ: exact 2, cpsat 3",)
    beaten = (_row("exact", "optimal", 10, 2, 10), _row("search", "feasible", 10, 1))
    assert "below the proven 2 s" in _verdict(beaten, Objective.TRAFFIC)[2][0]
    optima = (_row("exact", "optimal", 10, 2, 10), _row("brute", "optimal", 9, 5, 9))
    assert _verdict(optima, Objective.TRAFFIC)[2][0] == "proven optima differ: exact 10, brute 9"
