"""The LLM step model's memos and integer stage cut (issue 23): the same values as computing afresh."""

from __future__ import annotations

import random
from dataclasses import replace
from fractions import Fraction

from explorer.core import llm_stage, llm_stage_memory, llm_step
from explorer.core.llm_block import block_parts
from explorer.core.llm_memory import Parallelism, Recompute, ZeroStage
from explorer.core.llm_problem import LlmLayout
from explorer.core.llm_stage import stage_cut
from explorer.core.llm_step import evaluate_llm
from explorer.frontends import load_cluster
from explorer.frontends.transformer_problem import llm_problem
from explorer.frontends.transformer_source import load_transformer


def _reference_cut(layers, pipeline, per_layer, extras):
    """The cut as computed in Fractions before it moved to integers (kept here as the reference)."""
    distinct = sorted(set(extras))
    which = [distinct.index(e) for e in extras]
    count = [which.count(i) for i in range(len(distinct))]

    def caps(T):
        cap = [min(layers, int((T - e) // per_layer)) if T >= e else 0 for e in distinct]
        if cap[-1] < 1 or sum(c * n for c, n in zip(cap, count)) < layers:
            return None
        return [cap[i] for i in which]

    best = None
    for e in distinct:
        lo, hi = 1, layers
        if caps(hi * per_layer + e) is None:
            continue
        while lo < hi:
            mid = (lo + hi) // 2
            if caps(mid * per_layer + e) is None:
                lo = mid + 1
            else:
                hi = mid
        T = lo * per_layer + e
        best = T if best is None or T < best else best
    cut = caps(best)
    while sum(cut) > layers:
        s = max((s for s in range(pipeline) if cut[s] > 1), key=lambda s: (cut[s] * per_layer + extras[s], -s))
        cut[s] -= 1
    return tuple(cut)


def test_integer_stage_cut_is_the_fraction_one():
    rng = random.Random(23)
    for _ in range(400):
        layers = rng.randint(2, 130)
        p = rng.randint(2, min(layers, 64))
        per = Fraction(rng.randint(1, 10**6), rng.randint(1, 10**5))
        ends = [Fraction(rng.randint(0, 10**7), rng.randint(1, 10**5)) for _ in range(3)]
        extras = tuple(ends[0] if s == 0 else ends[2] if s == p - 1 else ends[1] + (s % 2) * ends[0] / 7
                       for s in range(p))
        assert stage_cut(layers, p, per, extras) == _reference_cut(layers, p, per, extras)


def _problem():
    src = load_transformer("gpt3-1.7b", None)
    return llm_problem(src.shape, load_cluster("dgx-a100", 64), 512, src.sequence, src.name)


def _fresh(problem, layout):
    llm_stage._MEMO.clear()
    llm_stage._DATA.clear()
    llm_stage._STEPS.clear()
    llm_stage_memory._MEMO.clear()
    stage_cut.cache_clear()
    llm_step._TIMES.clear()
    llm_step._WORST.clear()
    return evaluate_llm(problem, layout)


def test_memoised_evaluations_equal_fresh_ones():
    """Every ZeRO stage, recompute and type pattern, evaluated in one order with the memos warm,
    equals each evaluated alone with them cleared (ZeRO 0 and 1 share the step's parts)."""
    from explorer.solvers.llm_types import TYPES

    problem = _problem()
    rng = random.Random(5)
    layouts = []
    for t, p, d in ((2, 4, 8), (4, 2, 8), (8, 8, 1), (1, 8, 8)):
        for z in ZeroStage:
            for rc in Recompute:
                lay = LlmLayout(Parallelism(t, p, d), 1, rc, z)
                layouts.append(lay)
    n = block_parts(problem.network, problem.dims.layers).block_len
    for _ in range(6):
        layouts.append(replace(layouts[rng.randrange(len(layouts))], tensor_types=tuple(rng.choice(TYPES) for _ in range(n))))
    warm = []
    for lay in layouts:
        try:
            warm.append(evaluate_llm(problem, lay))
        except ValueError as e:
            warm.append(str(e))
    for lay, got in zip(layouts, warm):
        try:
            fresh = _fresh(problem, lay)
        except ValueError as e:
            fresh = str(e)
        assert got == fresh, lay


def test_tensor_floor_is_its_formula():
    """``llm_bounds.tensor_floor_s`` (one fraction of integers) is (m + (p - 1)/v) (L / p) b A BYTES / bw(t)."""
    from explorer.core.llm_stage import BYTES
    from explorer.solvers.llm_bounds import tensor_floor_s
    from explorer.solvers.llm_space import LlmSpace, candidates

    problem = _problem()
    cl, dims = problem.cluster, problem.dims
    cands = candidates(LlmSpace(), cl.gpus, cl.gpus_per_node, dims.layers, dims.batch, dims.head_groups, 0)
    rng = random.Random(7)
    for c in rng.sample(cands, 200):
        block = Fraction(rng.randint(1, 10**9), rng.randint(1, 10**4))
        t = c.degrees.tensor
        want = Fraction(0) if t == 1 else (c.microbatches(dims.batch) + c.fill()) * Fraction(dims.layers, c.degrees.pipeline) \
            * (c.micro_batch * block * BYTES / cl.bandwidth_Bps(t))
        assert tensor_floor_s(problem, c, block) == want


def test_a_planner_build_makes_the_network_once_and_equal_to_a_fresh_one():
    # the spec's checks (transformer_source) and the problem (transformer_problem) ask for the same
    # network: the second is the memo's, equal to building it afresh; another batch builds anew
    from explorer.app.llm_options import parse_request
    from explorer.app.llm_run import build
    from explorer.frontends import transformer

    transformer._BUILT.clear()
    calls = []
    real = transformer._build_transformer

    def spy(*args):
        calls.append(args)
        return real(*args)

    transformer._build_transformer = spy
    try:
        req = parse_request("gpt3-1.7b", "dgx-a100", None, None, None, None, None, None, None, None, None, None)
        problem, _space, src = build(req)
        assert len(calls) == 1
        fresh = real(src.shape, src.name, problem.dims.batch, src.sequence, src.source)
        assert problem.network == fresh and problem.network is not fresh
        other = replace(req, batch=2 * problem.dims.batch)
        assert build(other)[0].network.batch == 2 * problem.dims.batch and len(calls) == 2
    finally:
        transformer._build_transformer = real


def test_a_breakdowns_total_is_the_sum_of_its_parts():
    # MemoryBreakdown.total sums four Fractions over their lcm: the same value (and type) as adding them
    from explorer.core.llm_memory import MemoryBreakdown

    rng = random.Random(7)
    for _ in range(500):
        parts = [Fraction(rng.randrange(-10**12, 10**15), rng.choice([1, 3, 7, 1024, 3 * 2**40, rng.randrange(1, 10**9)]))
                 for _ in range(4)]
        total = MemoryBreakdown(*parts).total
        assert type(total) is Fraction and total == parts[0] + parts[1] + parts[2] + parts[3]
    assert MemoryBreakdown(1, 2, Fraction(1, 2), 3).total == Fraction(13, 2)  # not all Fractions: plain addition


def test_stage_times_are_a_x_plus_t_plus_q():
    # llm_stage._times sums each stage over its denominators' lcm: the same Fractions as a * x + t + q
    rng = random.Random(11)

    def frac():
        return Fraction(rng.randrange(0, 10**15), rng.choice([1, 5, 1024, 10**12, rng.randrange(1, 10**9)]))

    for _ in range(200):
        p = rng.randrange(1, 9)
        a, t, q, x = [frac() for _ in range(p)], [frac() for _ in range(p)], [frac() for _ in range(p)], frac() + 1
        got = llm_stage._times(a, t, q, x)
        assert got == tuple(ai * x + ti + qi for ai, ti, qi in zip(a, t, q)) and all(type(g) is Fraction for g in got)
    assert llm_stage._times([1, Fraction(1, 2)], [0, 0], [Fraction(1, 3), 2], Fraction(3, 2)) == (Fraction(11, 6), Fraction(11, 4))
