"""A sweep predicted to take less than ``SERIAL_SECONDS`` is solved in the parent, without a pool
(issue 23, item 6: two workers were slower than one on cheap points); its outputs are those of
the pool, byte for byte apart from the timing column."""

from __future__ import annotations

import csv
import io
import json

import pytest

from explorer.api import sweep
from explorer.app.sweep import cache as cache_mod
from explorer.app import seal as seal_mod
from explorer.app.sweep import engine
from explorer.app.sweep.point import Outcome

CHEAP = {"version": 1, "name": "cheap",
         "grid": {"model": ["lenet-c", "sfc", "alexnet"], "levels": [1, 2, 3], "space": ["hypar", "accpar"]},
         "fixed": {"array": "hypar-16"}}  # 18 DP points of about a millisecond


def csv_without_timing(folder) -> str:
    rows = list(csv.reader(io.StringIO((folder / "results.csv").read_text())))
    drop = rows[0].index("wall_s")
    assert len(rows) > 1 and all(len(r) == len(rows[0]) for r in rows)
    return "\n".join(",".join(r[:drop] + r[drop + 1:]) for r in rows)


@pytest.fixture
def spy(monkeypatch):
    """Counts the pools started and the points the parent solved itself."""
    seen = {"pools": 0, "parent": []}
    real_pool, real_solve = engine.ProcessPoolExecutor, engine.solve_point

    def pool(*a, **k):
        seen["pools"] += 1
        return real_pool(*a, **k)

    def solve(index, params):  # only the parent's calls are counted: a forked worker's list is its own
        seen["parent"].append(index)
        return real_solve(index, params)

    monkeypatch.setattr(engine, "ProcessPoolExecutor", pool)
    monkeypatch.setattr(engine, "solve_point", solve)
    return seen


def test_a_cheap_sweep_runs_in_the_parent_with_the_pools_answers(tmp_path, spy, monkeypatch):
    monkeypatch.setattr(engine, "SERIAL_SECONDS", 5.0)  # ~20 ms here; a shared machine may be slow
    serial = list(sweep(CHEAP, tmp_path / "serial", workers=2))
    assert spy == {"pools": 0, "parent": list(range(18))}
    monkeypatch.setattr(engine, "SERIAL_SOLVERS", ())  # every point to the pool, as before
    pooled = list(sweep(CHEAP, tmp_path / "pool", workers=2))
    assert spy["pools"] == 1 and spy["parent"] == list(range(18))
    assert csv_without_timing(tmp_path / "serial") == csv_without_timing(tmp_path / "pool")
    keep = lambda r: {k: v for k, v in r.items() if k != "wall_s"}  # noqa: E731
    assert [keep(r) for r in serial] == [keep(r) for r in pooled]
    assert {r["status"] for r in serial} == {"level-optimal"}


def test_a_sweep_predicted_longer_goes_to_the_pool_after_its_first_point(tmp_path, spy, monkeypatch):
    monkeypatch.setattr(engine, "SERIAL_SECONDS", 1e-9)
    rows = list(sweep(CHEAP, tmp_path / "a", workers=2))
    assert spy == {"pools": 1, "parent": [0]}  # the first point measures the cost; the rest to the pool
    monkeypatch.setattr(engine, "SERIAL_SECONDS", 60.0)
    again = list(sweep(CHEAP, tmp_path / "b", workers=1))
    assert spy == {"pools": 1, "parent": [0, *range(18)]}
    assert csv_without_timing(tmp_path / "a") == csv_without_timing(tmp_path / "b")
    assert [r["objective_value"] for r in rows] == [r["objective_value"] for r in again]


def test_the_parent_stops_at_the_first_point_it_may_not_solve(tmp_path, spy, monkeypatch):
    monkeypatch.setattr(engine, "SERIAL_SECONDS", 60.0)
    spec = {**CHEAP, "grid": {**CHEAP["grid"], "solver": ["dp", "exact"]}}  # dp, exact, dp, exact, ...
    rows = list(sweep(spec, tmp_path / "a", workers=2))
    assert spy == {"pools": 1, "parent": [0]}
    by_solver = {}
    for r in rows:
        by_solver.setdefault((r["model"], r["levels"], r["space"]), {})[r["solver"]] = r
    for pair in by_solver.values():  # the DP's plans are optimal at one level (the exact optimum there)
        if pair["dp"]["levels"] == 1:
            assert pair["dp"]["objective_value"] == pair["exact"]["objective_value"]


def test_exponential_solvers_cpsat_and_split_points_stay_in_the_pool():
    assert engine.in_parent({"solver": "dp"}) and engine.in_parent({})
    for params in ({"solver": "exact"}, {"solver": "pruned"}, {"solver": "brute"}, {"solver": "cpsat"},
                   {"solver": "dp", "split": "optimal"}):
        assert not engine.in_parent(params)


def test_solve_serially_keeps_to_the_prediction(monkeypatch):
    """First point always; then another only while time so far + mean x points left <= budget."""
    now = [0.0]
    cost = {0: 0.03}  # the first point warms up: its cost does not count once others have run

    def solve(i, p):
        now[0] += cost.get(i, 0.01)
        return Outcome.make(i, None, "unknown", "", 0.5)

    monkeypatch.setattr(engine, "solve_point", solve)
    def run(budget):
        queue = [(i, {"solver": "dp"}) for i in reversed(range(10))]
        now[0], seen = 0.0, [0, 0.0]
        done = [o.index for o in engine.solve_serially(queue, seen, budget=budget, clock=lambda: now[0])]
        assert len(done) + len(queue) == 10 and seen == [len(done), 0.5 * len(done)]
        return done

    assert run(0.29) == [0]  # after point 0: 0.03 s so far + 9 left x 0.03 = 0.30 > 0.29
    # on: after point 1, 0.04 + 8 x 0.01 (the mean after the first) = 0.12; and so on to the end
    assert run(0.31) == list(range(10))
    cost[1] = 0.05
    assert run(0.31) == [0, 1]  # after point 1: 0.08 + 8 x 0.05 = 0.48 > 0.31


def test_a_cache_entry_is_the_outcome_as_one_json_text(tmp_path):
    c = cache_mod.Cache(tmp_path)
    out = Outcome.make(3, {"plan": [1], "step_time_s": 0.5}, "optimal", "", 0.25)
    c.put("ab" + "0" * 62, out)  # its folder cache/ab/ made on the way
    path = tmp_path / "cache" / "ab" / ("ab" + "0" * 62 + ".json")
    assert path.read_text() == seal_mod.seal(json.dumps({"key": "ab" + "0" * 62, **out.to_json()}))  # sealed
    assert c.get("ab" + "0" * 62, 3) == Outcome.make(3, {"plan": [1], "step_time_s": 0.5}, "optimal", "", 0.25, cached=True)
