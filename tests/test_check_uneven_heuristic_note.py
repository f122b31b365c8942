"""``explore check --uneven``'s heuristic rows (accpar, dp, levels, search, proportional) say why they
have no bound in ``explore --split``'s words (``app.split_notes.HEURISTIC``), in the table and in
the JSON row's ``reason``; the proving rows do not, and a row not run says so instead."""

from __future__ import annotations

import json
import time

from explorer.app.check_uneven import check_uneven
from explorer.app.split_notes import HEURISTIC
from explorer.core.partition import Space
from explorer.frontends import load_array, load_model

from .conftest import run_cli

HEURISTICS = ("accpar", "dp", "levels", "search", "proportional")
ARGS = ["check", "--uneven", "--model", "lenet-c", "--array", "tpu-mix-16", "--space", "hypar", "--alpha-grid", "4",
        "--solvers", "joint," + ",".join(HEURISTICS)]


def test_the_heuristic_rows_say_they_have_no_bound(capsys):
    code, out, _ = run_cli(ARGS, capsys)
    assert code == 0
    rows = {line.split()[0]: line for line in out.splitlines()[2:] if line.split() and line.split()[0] in
            ("joint", *HEURISTICS)}
    for name in HEURISTICS:
        assert rows[name].endswith(f"  {name}: {HEURISTIC}"), rows[name]
    assert HEURISTIC not in rows["joint"]
    code, out, _ = run_cli([*ARGS, "--format", "json"], capsys)
    solvers = json.loads(out)["solvers"]
    assert code == 0 and {n: solvers[n]["reason"] for n in HEURISTICS} == {n: f"{n}: {HEURISTIC}" for n in HEURISTICS}
    assert solvers["joint"]["status"] == "optimal" and "reason" not in solvers["joint"]


def test_a_heuristic_row_not_run_says_so():
    """The check's limit spent before the search's turn: its row says it was not run, not the heuristic's words."""
    net, arr = load_model("lenet-c"), load_array("tpu-mix-16")
    r = check_uneven(net, arr, Space.HYPAR, grid=4, solvers=("search",), time_limit_s=5.0,
                     started=time.perf_counter() - 100)
    (row,) = r.rows
    assert row.status == "unknown" and row.note.startswith("not run: ") and HEURISTIC not in row.note
