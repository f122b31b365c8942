"""A split sweep's table carries each row's note (trial finding 5: a feasible split row's reason
was only in plans.jsonl, its error cell empty) and the energy columns the even rows have."""

from __future__ import annotations

import csv
import json
from fractions import Fraction

import pytest

from explorer.api import sweep


def _table(out):
    with open(out / "results.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    results = [json.loads(line) for line in (out / "plans.jsonl").read_text().splitlines()]
    return rows, results


@pytest.fixture(scope="module")
def energy_sweep(tmp_path_factory):
    """Split points alone, and the even DP point of the same problem, on an array that models energy."""
    root = tmp_path_factory.mktemp("energy")
    fixed = {"model": "alexnet", "array": "hypar-paper-torus", "levels": 2, "objective": "time"}
    list(sweep({"version": 1, "grid": {"split": ["equal", "search"]}, "fixed": fixed}, root / "split", workers=1))
    list(sweep({"version": 1, "points": [fixed]}, root / "even", workers=1))
    return _table(root / "split"), _table(root / "even")[0][0]


def test_the_note_column_is_the_json_note(energy_sweep):
    (rows, results), _ = energy_sweep
    assert [r["split"] for r in rows] == ["equal", "search"]
    for row, line in zip(rows, results):
        assert row["note"] == ((line["result"] or {}).get("note") or "")
    # one kind of accelerator: the search has nothing to balance, and its note says so
    assert rows[1]["note"].startswith("no free class of groups (every split is between identical subtrees)")


def test_split_rows_have_the_energy_of_the_even_row(energy_sweep):
    (rows, results), plain = energy_sweep
    assert plain["energy_J"] and all(plain["step_time_s"] == r["step_time_s"] for r in rows)
    for r, line in zip(rows, results):  # the same plan as the even DP's: its energy
        assert float(r["energy_J"]) == float(plain["energy_J"]) == line["result"]["energy_J"]
        assert float(r["energy_efficiency_over_all_I"]) == float(plain["energy_efficiency_over_all_I"])
        base = line["result"]["baselines"]["all-I"]["energy_J"]
        assert float(r["energy_efficiency_over_all_I"]) == pytest.approx(base / line["result"]["energy_J"], rel=1e-12)


def test_a_feasible_split_rows_why_is_in_its_note(tmp_path):
    """Cut by a time limit of 0.1 s: the row is feasible, its note (not its error) says why."""
    spec = {"version": 1, "grid": {"split": ["optimal", "levels"]},
            "fixed": {"model": "vgg-a", "array": "tpu-mix-16", "space": "accpar", "accelerators_v3": 8, "time_limit": 0.1}}
    list(sweep(spec, tmp_path / "o", workers=1))
    rows, results = _table(tmp_path / "o")
    for row, line in zip(rows, results):
        assert row["note"] == (line["result"].get("note") or "")
        assert row["status"] == "feasible" and not row["error"] and not row["bound"]
    assert rows[0]["note"]  # the proving route cut short says why it has no proof
    # the level DP (a heuristic, no proof to miss): its note says where the limit cut it; on a quiet
    # machine it may finish in 0.1 s, then its note says it is a heuristic (split_notes.HEURISTIC)
    assert rows[1]["note"] in ("levels: a heuristic, no bound",) or "cut at the time limit (0.1 s)" in rows[1]["note"], \
        rows[1]["note"]


def test_memory_cells_are_exact_as_in_the_json(tmp_path):
    """Memory per accelerator on a split row: an exact p/q of bytes when an alpha cuts a tensor,
    the JSON's value written as it is (an int when integral)."""
    spec = {"version": 1, "grid": {"split": ["proportional"]},
            "fixed": {"model": "vgg-a", "array": "tpu-mix-16", "space": "accpar", "accelerators_v3": 4}}
    list(sweep(spec, tmp_path / "o", workers=1))
    (row,), (line,) = _table(tmp_path / "o")
    assert row["memory_bytes_per_accelerator"] == str(line["result"]["memory_bytes_per_accelerator"])
    assert Fraction(row["memory_bytes_per_accelerator"]).denominator > 1
