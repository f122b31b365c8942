"""A heuristic split's report says why its plan is unproven, as a proven route says its bound: the
note "<split or solver>: a heuristic, no bound" (``app.split_notes.HEURISTIC``) in the text and the
JSON of ``--split proportional``, ``search``, ``levels`` and ``optimal --solver dp``; not on a proving
route, and a heuristic cut at its time limit keeps its own note (which says "no proof")."""

from __future__ import annotations

import json
import time

import pytest

from explorer.app.split import Split, split_run
from explorer.app.split_notes import HEURISTIC
from explorer.core.partition import Space
from explorer.frontends import load_array, load_model

from .conftest import run_cli

LENET = ["--model", "lenet-c", "--array", "tpu-mix-16"]


@pytest.mark.parametrize("args, name", [(["--split", "proportional"], "proportional"), (["--split", "search"], "search"),
                                        (["--split", "levels"], "levels"),
                                        (["--split", "optimal", "--solver", "dp"], "dp")])
def test_a_heuristic_split_says_it_has_no_bound(args, name, capsys):
    code, out, _ = run_cli([*LENET, *args], capsys)
    assert code == 0 and f"note: {name}: a heuristic, no bound\n" in out
    code, out, _ = run_cli([*LENET, *args, "--format", "json"], capsys)
    doc = json.loads(out)
    assert doc["note"] == f"{name}: {HEURISTIC}" and doc["bound"] is None and doc["status"] == "feasible"


@pytest.mark.parametrize("args", [["--split", "optimal"], ["--split", "proportional", "--solver", "exact"],
                                  ["--split", "equal"]])
def test_a_proven_or_equal_split_has_no_heuristic_note(args, capsys):
    code, out, _ = run_cli([*LENET, *args, "--format", "json"], capsys)
    assert code == 0 and HEURISTIC not in (json.loads(out)["note"] or "")


def test_a_cut_heuristic_keeps_its_cut_note():
    """The run's limit spent before the search began: its note says it was cut ("no proof")."""
    net, arr = load_model("lenet-c"), load_array("tpu-mix-16")
    r = split_run(net, arr, Space.HYPAR, Split.SEARCH, time_limit_s=5.0, started=time.perf_counter() - 100)
    assert "search: cut at the time limit (5 s)" in r.note and "no proof" in r.note and HEURISTIC not in r.note
