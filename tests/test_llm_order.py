"""The LLM search's lazy bound order (solvers/llm_order.py, issue 23): the same order as sorting
every candidate by (time bound, index), with fewer time bounds computed; and the search's
time-limited runs give a plan with a bound."""

from __future__ import annotations

import random

import pytest

from explorer.core.llm_calibration import efficiency_for
from explorer.frontends import load_cluster
from explorer.frontends.transformer_problem import llm_problem
from explorer.frontends.transformer_source import load_transformer
from explorer.solvers import llm_search as S
from explorer.core.comm import network_flops
from explorer.solvers.llm_bounds import compute_floor_s, memory_floor_bytes, tensor_floor_s
from explorer.solvers.llm_order import BoundOrder
from explorer.solvers.llm_space import LlmSpace, candidates

CASES = [("gpt3-1.7b", "dgx-a100", 64, 512), ("llama3-8b", "dgx-h100", 128, 512), ("mixtral-8x7b", "dgx-h100", 64, 256),
         ("gpt3-18.4b", "dgx-a100", 256, 1024)]


def _setup(model, cluster, gpus, batch):
    src = load_transformer(model, None)
    problem = llm_problem(src.shape, load_cluster(cluster, gpus), batch, src.sequence, src.name)
    space = LlmSpace()
    cl, dims = problem.cluster, problem.dims
    cands = candidates(space, cl.gpus, cl.gpus_per_node, dims.layers, dims.batch, dims.head_groups, dims.experts)
    floor = compute_floor_s(network_flops(problem.network), cl.gpus, cl.gpu.peak_TFLOPS, efficiency_for(cl.gpu.name)[0])
    types = S.TypeChooser(problem, space)
    memory = [memory_floor_bytes(c, problem.params.total, S.expert_total(problem)) for c in cands]
    return problem, space, cands, floor, types, memory


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}@{c[1]}x{c[2]}")
def test_lazy_order_is_the_sorted_order(case):
    problem, _space, cands, floor, types, memory = _setup(*case)
    eager = sorted(((S.time_bound(problem, c, floor, types), memory[i], i, c) for i, c in enumerate(cands)),
                   key=lambda x: (x[0], x[2]))
    order = BoundOrder(problem, cands, memory, floor, lambda c: tensor_floor_s(problem, c, S.block_floor(problem, c, types)))
    assert list(order) == eager and order.computed == len(cands)


@pytest.mark.parametrize("case", CASES[:2], ids=lambda c: c[0])
def test_lazy_order_prefix_and_through(case):
    """Taken part way (as the search stops), the prefix is the sorted one's, fewer bounds are
    computed than there are candidates, and ``through`` holds every candidate tied at a bound."""
    problem, _space, cands, floor, types, memory = _setup(*case)
    eager = sorted(((S.time_bound(problem, c, floor, types), memory[i], i, c) for i, c in enumerate(cands)),
                   key=lambda x: (x[0], x[2]))
    order = BoundOrder(problem, cands, memory, floor, lambda c: tensor_floor_s(problem, c, S.block_floor(problem, c, types)))
    k = len(cands) // 5
    got = [x for _, x in zip(range(k), order)]
    assert got == eager[:k] and order.computed < len(cands)
    rng = random.Random(23)
    for bound in rng.sample([x[0] for x in eager], 5):
        done = order.through(bound)
        assert [x for x in done if x[0] <= bound] == [x for x in eager if x[0] <= bound]
        assert done == eager[:len(done)]


def _orders_made(monkeypatch) -> list:
    """Every BoundOrder built from now on, in order."""
    made = []
    real = BoundOrder.__init__

    def spy(self, *a, **k):
        real(self, *a, **k)
        made.append(self)

    monkeypatch.setattr(BoundOrder, "__init__", spy)
    return made


def test_search_computes_fewer_bounds_than_candidates(monkeypatch):
    """The search itself stops early: the time bounds of candidates above the optimum are not all computed."""
    problem, space, cands, *_ = _setup("gpt3-1.7b", "dgx-a100", 1024, 512)
    made = _orders_made(monkeypatch)
    res = S.search(problem, space)
    assert res.status.value == "optimal" and made and made[0].computed < len(cands)


@pytest.mark.parametrize("case", [CASES[2], CASES[1]], ids=lambda c: c[0])
def test_stage_one_keys_are_the_fraction_sums(case):
    """Stage 1's keys, summed in integers without reducing, are the rational
    compute-with-bubble + data floor + all-to-alls of every member of the groups expanded."""
    from explorer.solvers.llm_bounds import alltoall_floor_s, data_floor_s

    problem, _space, cands, floor, types, memory = _setup(*case)
    order = BoundOrder(problem, cands, memory, floor, lambda c: tensor_floor_s(problem, c, S.block_floor(problem, c, types)))
    [x for _, x in zip(range(20), order)]  # part way: groups expanded, stage-1 entries left
    ones = [e for e in order._heap if e.stage == 1]
    assert ones and any(cands[e.i].degrees.expert > 1 for e in ones) == bool(problem.dims.moe)
    for e in ones:
        c = cands[e.i]
        m = c.microbatches(problem.dims.batch)
        want = floor * (m + c.fill()) / m + data_floor_s(problem, c) + alltoall_floor_s(problem, c)
        assert e.key is None and e.d > 0 and e.n * want.denominator == want.numerator * e.d


def test_check_shares_one_order(monkeypatch):
    """``explore check`` builds one bound order for the search and the exhaustive scoring, which
    still scores every candidate and finds the search's optimum."""
    from explorer.app.llm_check import check_llm

    problem, space, cands, *_ = _setup("gpt3-1.7b", "dgx-a100", 16, 32)
    space = LlmSpace(max_micro_batch=2)
    cands = candidates(space, 16, problem.cluster.gpus_per_node, problem.dims.layers, 32, problem.dims.head_groups,
                       problem.dims.experts)
    made = _orders_made(monkeypatch)
    c = check_llm(problem, space)
    whole = [o for o in made if len(o) == len(cands)]  # the others: the report's subsets (BoundOrder.subset)
    assert len(whole) == 1 and whole[0].computed == len(cands) and all(len(o) < len(cands) for o in made[1:])
    assert c.exhaustive.scored == len(cands) and c.agree and c.same_optimum


def test_the_order_stops_at_its_deadline_with_a_bound():
    """Past its deadline the order expands no more groups: what left is the sorted order's prefix,
    and ``least`` bounds the time bound of every candidate left."""
    problem, _space, cands, floor, types, memory = _setup("mixtral-8x7b", "dgx-h100", 64, 256)
    eager = sorted(((S.time_bound(problem, c, floor, types), memory[i], i, c) for i, c in enumerate(cands)),
                   key=lambda x: (x[0], x[2]))
    order = BoundOrder(problem, cands, memory, floor, lambda c: tensor_floor_s(problem, c, S.block_floor(problem, c, types)))
    first = [x for _, x in zip(range(3), order)]
    order.deadline = -1.0  # long past
    rest = list(order)
    assert order.stopped and rest[:3] == first and rest == eager[:len(rest)] and len(rest) < len(cands)
    least = order.least()
    assert least is not None and all(least <= x[0] for x in eager[len(rest):])
    assert least > rest[-1][0] or least == rest[-1][0]


def test_a_search_whose_order_stops_keeps_a_plan_and_a_true_bound(monkeypatch):
    """The order's clock strikes right after the first score (the pace never does): the search
    ends with its plan and the order's least key as a bound, at most the proven optimum, and no
    optimum claimed that it did not prove."""
    from explorer.solvers import llm_order

    problem, space, *_ = _setup("llama3-8b", "dgx-h100", 128, 512)
    full = S.search(problem, space)
    monkeypatch.setattr(llm_order, "past", lambda d: d is not None)
    monkeypatch.setattr(S._Pace, "over", lambda self: False)
    res = S.search(problem, space, time_limit_s=3600.0)
    assert full.status.value == "optimal" and res.unresolved > 0 and res.scored < full.scored
    assert res.best is not None and res.bound_s is not None and res.bound_s <= full.best.step_time_s
    assert res.status.value == ("optimal" if res.bound_s == res.best.step_time_s else "feasible")


@pytest.mark.parametrize("case", CASES[:2], ids=lambda c: c[0])
def test_a_subset_order_is_the_sorted_order_of_the_subset(case):
    """``BoundOrder.subset`` (the report's extra pairs: candidates of the pairs not scored) gives the
    subset's entries in the full order's sequence, without advancing the full order."""
    problem, _space, cands, floor, types, memory = _setup(*case)
    order = BoundOrder(problem, cands, memory, floor, lambda c: tensor_floor_s(problem, c, S.block_floor(problem, c, types)))
    first = [x for _, x in zip(range(len(cands) // 10), order)]
    keep = lambda c: c.degrees.tensor != first[0][3].degrees.tensor  # noqa: E731
    sub = order.subset(keep)
    full = list(order)
    assert full[:len(first)] == first
    assert [(t, m, c) for t, m, _i, c in sub] == [(t, m, c) for t, m, _i, c in full if keep(c)]


def test_the_report_extras_are_those_of_the_full_order():
    """The search's extra runners-up, found on the subset of unscored pairs, are those the sorted list
    of every candidate gives (``_report_extra``'s other form, which scans every entry)."""
    problem, space, cands, floor, types, memory = _setup(*CASES[0])
    result = S.search(problem, space)
    eager = sorted(((S.time_bound(problem, c, floor, types), memory[i], i, c) for i, c in enumerate(cands)),
                   key=lambda x: (x[0], x[2]))
    from explorer.core.llm_step import evaluate_llm

    listed = S._report_extra(problem, eager, list(result.evaluated), types, evaluate_llm, None)
    ordered = S._report_extra(problem, S.bound_order(problem, space, types), list(result.evaluated), types,
                              evaluate_llm, None)
    assert len(listed) >= 3  # every pair not scored, up to EXTRA_FOR_REPORT
    assert [(x.candidate, x.layout, x.evaluation) for x in ordered] == [(x.candidate, x.layout, x.evaluation)
                                                                         for x in listed]


def test_the_order_reads_the_bounds_one_cache():
    """Stage 1's terms come from ``llm_bounds.terms`` (the order kept caches of its own, keyed like
    the bounds' but finer): after the order, the problem's cache holds every member's data-level
    floor and all-to-alls on ``data_key`` / ``alltoall_key``, each equal to a fresh computation."""
    from explorer.core.llm_experts import alltoall_seconds
    from explorer.solvers.llm_bounds import _data_floor, _layout, alltoall_key, data_key, terms

    problem, _space, cands, floor, types, memory = _setup(*CASES[2])  # a mixture: all-to-alls too
    order = BoundOrder(problem, cands, memory, floor, lambda c: tensor_floor_s(problem, c, S.block_floor(problem, c, types)))
    list(order)
    memo = terms(problem)
    assert not hasattr(order, "_data") and not hasattr(order, "_alltoall")
    assert all(memo[data_key(c)] == _data_floor(problem, c) for c in cands[::7])
    moe = [c for c in cands if c.degrees.expert > 1]
    assert moe and all(memo[alltoall_key(c)] == alltoall_seconds(problem, _layout(c)) for c in moe[::7])
    assert terms(problem) is memo and order.subset(lambda c: True).cands == cands


@pytest.mark.parametrize("case", CASES, ids=lambda c: c[0])
def test_the_report_extras_cut_keeps_the_runners_up(case):
    """``_report_extra`` with ``placed`` (the search's: it stops at a pair whose time bound is above
    the last runner-up's step time) gives the runners-up that scoring every extra pair gives, with
    no more extras; on GPT-3 1.7B it scores fewer."""
    problem, space, *_ = _setup(*case)
    result = S.search(problem, space)
    from explorer.core.llm_step import evaluate_llm

    scored, best = list(result.evaluated), result.best
    types = S.TypeChooser(problem, space)
    full = S._report_extra(problem, S.bound_order(problem, space, types), scored, types, evaluate_llm, None)
    cut = S._report_extra(problem, S.bound_order(problem, space, types), scored, types, evaluate_llm, None,
                          placed=lambda out: S._placed(best, scored + out))
    assert cut == full[:len(cut)]
    assert S.runners_up(best, scored + cut) == S.runners_up(best, scored + full) == result.runners_up
    if case[0] == "gpt3-1.7b":
        assert len(cut) < len(full)


def test_placed_is_the_last_runner_up_that_fits():
    """``_placed``: None until n runners-up fit, then the n-th's step time (a bound above it cannot place)."""
    problem, space, *_ = _setup(*CASES[0])
    result = S.search(problem, space)
    scored, best = list(result.evaluated), result.best
    shown = S.runners_up(best, scored, 3)
    assert len(shown) == 3 and all(s.fits for s in shown)
    assert S._placed(best, scored, 3) == shown[-1].step_time_s
    assert S._placed(best, scored, 10**6) is None
    unfit = [s for s in scored if not s.fits]
    if unfit:
        assert S._placed(None, unfit, 1) is None
