"""``explore check`` with its default solvers runs ``pruned`` where ``exact`` refuses a graph
(MobileNet-v2 at 1,024 accelerators, accpar: 60 s and "no solver proved" before; pruned proves it
in 2-6 s), and a refusal names check's ``--solvers``, not explore's ``--solver``."""

from __future__ import annotations

from explorer.api import build_problem
from explorer.app.check import JOINT_SOLVERS, CheckOptions, check
from explorer.app.render import render_check
from explorer.core.errors import InstanceTooLarge
from explorer.core.solution import SolveOptions, Status
from explorer.solvers import get_solver
from explorer.solvers.elimination import instead


class _ExactRefuses:
    """A ``lookup`` whose exact solver refuses as on a graph too wide for its elimination; it
    records the order the solvers ran in and the hint CP-SAT got."""

    def __init__(self):
        self.ran, self.hint = [], None

    def __call__(self, name):
        real = get_solver(name)

        def solve(problem, options):
            self.ran.append(name)
            if name == "exact":
                raise InstanceTooLarge(f"exact: eliminating this graph would need a table beyond 20 entries; "
                                       f"{instead(problem)}")
            if name == "cpsat":
                self.hint = options.hint
            return real(problem, options)
        return solve


def _graph():
    return build_problem("resnet18", "hypar-16", space="accpar")


def test_default_solvers_run_pruned_where_exact_refuses():
    lookup = _ExactRefuses()
    report = check(_graph(), CheckOptions(solve=SolveOptions(time_limit_s=60)), lookup=lookup)
    names = [n for n, _ in report.solvers]
    assert names == ["exact", "pruned", "cpsat", "brute"]
    joint = dict(report.solvers)
    assert joint["exact"].reason.endswith("; pruned runs in its place") and "--solver " not in joint["exact"].reason
    assert joint["pruned"].status is Status.OPTIMAL and "pruned" in report.optimum.proven_by
    assert lookup.hint == joint["pruned"].plan  # CP-SAT starts from pruned's plan
    assert render_check(report).splitlines()[-1] == "verdict: everything agrees with the model"


def test_given_solvers_are_kept_and_the_refusal_names_check_s_option():
    lookup = _ExactRefuses()
    report = check(_graph(), CheckOptions(solve=SolveOptions(time_limit_s=2), solvers=("exact", "brute")), lookup=lookup)
    assert [n for n, _ in report.solvers] == ["exact", "brute"] and "pruned" not in lookup.ran
    reason = dict(report.solvers)["exact"].reason
    assert "; add to --solvers: pruned (bound and prune" in reason and "--solver " not in reason
    assert report.optimum is None
    assert render_check(report).splitlines()[-1].startswith("verdict: nothing proven, so no optimum to compare with")


def test_chains_keep_the_default_set():
    assert JOINT_SOLVERS == ("exact", "cpsat", "brute")
    lookup = _ExactRefuses()
    report = check(build_problem("lenet-c", "hypar-16"), CheckOptions(solve=SolveOptions(time_limit_s=20)), lookup=lookup)
    assert "pruned" not in lookup.ran and [n for n, _ in report.solvers] == list(JOINT_SOLVERS)
    reason = dict(report.solvers)["exact"].reason
    assert reason.endswith("exact: eliminating this graph would need a table beyond 20 entries")  # cpsat runs: no advice
