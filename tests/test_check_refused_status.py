"""A refused solver inside ``explorer.api.check`` has ``Status.REFUSED`` (trial 8, item 10: it
was None, so a script's ``s.status.value`` crashed), the word the CLI table and the sweep's
status column print; the JSON and the table are unchanged."""

from __future__ import annotations

from explorer import api
from explorer.app import render
from explorer.app.sweep import point
from explorer.core.solution import Status


def test_refused_solver_status_is_refused():
    r = api.check("alexnet", levels=9, space="accpar", solvers=["exact", "brute"])
    brute = r.solver("brute")
    assert brute.status is Status.REFUSED and brute.status.value == "refused" and brute.refused
    assert "brute:" in brute.reason and "exceeds its limit" in brute.reason
    assert not r.solver("exact").refused and r.solver("exact").status is Status.OPTIMAL
    assert r.to_json()["solvers"]["brute"] == {"status": "refused", "reason": brute.reason}
    assert f"  brute   {'refused':<15}  {brute.reason}" in render.render_check(r)


def test_sweep_status_column_uses_the_same_word():
    assert point.REFUSED == Status.REFUSED.value == "refused"
