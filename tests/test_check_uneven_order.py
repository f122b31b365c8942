"""``explore check --uneven``: the provers that end soonest run before exact (lenet-c on tpu-mix-16:
joint proves in 0.13 s, exact's column tables need ~20 s), the rows stay in the order given, and
"agree" is printed only where something was compared with a proof."""

from __future__ import annotations

from explorer.app import check_uneven as cu
from explorer.app.check_uneven import check_uneven, render_check_uneven, run_order
from explorer.core.partition import Space
from explorer.core.solution import Status
from explorer.frontends import load_array, load_model


def test_run_order_puts_the_cheap_rows_then_the_fast_provers_first():
    assert run_order(cu.UNEVEN_CHECK_SOLVERS) == ("dp", "search", "proportional", "joint", "accpar",
                                                  "brute", "exact", "cpsat")
    assert run_order(("exact", "cpsat")) == ("exact", "cpsat")


def test_joint_runs_before_exact_and_seeds_it(monkeypatch):
    """With exact given the whole limit it used to spend it all (8.56 s of 10) and joint was not
    run; now joint runs first, proves, and exact starts from its plan (its row: the optimum)."""
    ran, seeds, real = [], {}, cu._run

    def recording(name, *args, **kwargs):
        ran.append(name)
        seeds[name] = args[6] if len(args) > 6 else ()
        return real(name, *args, **kwargs)

    monkeypatch.setattr(cu, "_run", recording)
    net, arr = load_model("lenet-c"), load_array("tpu-mix-16")
    r = check_uneven(net, arr, Space.HYPAR, solvers=("exact", "joint", "dp"), time_limit_s=10)
    assert ran.index("joint") < ran.index("exact")
    assert [row.solver for row in r.rows] == ["exact", "joint", "dp"]  # shown in the order given
    rows = {row.solver: row for row in r.rows}
    assert rows["joint"].status == Status.OPTIMAL.value and "joint" in r.proven_by
    assert rows["joint"].plan in seeds["exact"] and rows["dp"].plan in seeds["exact"]  # exact starts from them
    assert rows["exact"].step_time_s == r.optimum_s
    text = render_check_uneven(r)
    assert text.splitlines()[-1].startswith("agree: ")
    assert "3 plans, 2 bounds compared" in text.splitlines()[-1]


def test_no_agree_when_nothing_was_proven():
    net, arr = load_model("lenet-c"), load_array("tpu-mix-16")
    r = check_uneven(net, arr, Space.HYPAR, solvers=("dp", "search"), time_limit_s=60)
    assert r.optimum is None and r.agree  # no problem found, and nothing proven
    last = render_check_uneven(r).splitlines()[-1]
    assert last == "nothing proven, so nothing to agree on: 2 plans re-scored by the evaluator (dp, search)"
