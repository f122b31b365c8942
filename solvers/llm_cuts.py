"""Stage cuts that fit: the exact min-max cut under a memory cap per stage (``memory_cut``).

Derivation: docs/derivations.md, "LLM training: the search's types and bounds".
"""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction
from math import lcm

from ..core.llm_stage import stage_params, step_parts
from ..core.llm_stage_memory import stage_memories



def _memories(problem, layout, cut: tuple[int, ...]) -> tuple[Fraction, ...]:
    """Bytes per GPU of each stage of ``cut`` (which may hold fewer than all the layers: each stage's
    memory depends on its own layer count and place only)."""
    return tuple(m.total for m in stage_memories(problem, layout, cut, stage_params(problem, cut)))


def memory_caps(problem, layout, limit: Fraction) -> list[int]:
    """Per stage, the most layers it can hold within ``limit`` bytes (0: not even one)."""
    return _caps(problem, layout, limit, _memories(problem, layout, (1,) * layout.parallelism.pipeline))


def _caps(problem, layout, limit: Fraction, ones: tuple[Fraction, ...]) -> list[int]:
    """``memory_caps`` from ``ones``, each stage's bytes holding one layer."""
    p, L = layout.parallelism.pipeline, problem.dims.layers
    big = L - p + 1  # the most one stage can take
    k = L // p
    if k >= 2:  # every stage's memory is linear in its layers: two probes give every slope
        many = _memories(problem, layout, (k,) * p)
        slopes = [(many[s] - ones[s]) / (k - 1) for s in range(p)]
    else:  # L < 2p: probes giving 2 layers to at most L - p stages at once (was one probe per stage: p = 64
        # stages of LLaMA-3-405B's 126 layers made one candidate's score 0.5-1.4 s, past --time-limit)
        slopes = [Fraction(0)] * p
        room = L - p  # (big - 1: the layers beyond one a stage that one probe may add)
        for first in range(0, p, max(room, 1)) if room > 0 else ():
            group = range(first, min(first + room, p))
            two = _memories(problem, layout, tuple(2 if j in group else 1 for j in range(p)))
            for j in group:
                slopes[j] = two[j] - ones[j]
    caps = []
    for s in range(p):
        if ones[s] > limit:
            caps.append(0)
        elif slopes[s] <= 0:
            caps.append(big)
        else:
            caps.append(min(big, 1 + int((limit - ones[s]) // slopes[s])))
    return caps


def stage_costs(problem, layout, x: Fraction) -> tuple[Fraction, tuple[Fraction, ...]] | None:
    """(c, e): stage s of n layers takes n c + e_s seconds a micro-batch at x = 1/efficiency."""
    p, L = layout.parallelism.pipeline, problem.dims.layers
    if L < p + 1:
        return None
    one = (1,) * (p - 1) + (L - p + 1,)
    two = (2,) + (1,) * (p - 2) + (L - p,) if p > 1 else None
    t1 = step_parts(problem, replace(layout, stage_layers=one), x).stage_times(x)
    t2 = step_parts(problem, replace(layout, stage_layers=two), x).stage_times(x)
    c = t2[0] - t1[0]
    e = tuple(t1[s] - one[s] * c for s in range(p))
    if c <= 0 or any(t2[s] != two[s] * c + e[s] for s in range(p)):
        return None  # not the linear form assumed: leave the step model's cut alone
    return c, e


def memory_cut(problem, layout, efficiency: Fraction) -> tuple[int, ...] | None:
    """The min-max cut (by stage time) among cuts whose every stage fits the GPU's memory. The memory
    caps come first (most layouts that do not fit at the step model's cut fit at no cut: a stage of
    one layer is over the memory, or the caps hold fewer than all the layers), then the stage costs;
    the cut is found in integers, every time scaled by one common denominator (the same order)."""
    p, L = layout.parallelism.pipeline, problem.dims.layers
    if p == 1 or layout.virtual_stages > 1:
        return None
    limit = problem.cluster.gpu.memory_bytes
    ones = _memories(problem, layout, (1,) * p)
    if max(ones) > limit:  # a stage of one layer does not fit: no cut does
        return None
    mem = _caps(problem, layout, limit, ones)
    if min(mem) < 1 or sum(mem) < L:
        return None
    costs = stage_costs(problem, layout, 1 / Fraction(efficiency))
    if costs is None:
        return None
    return _min_max_cut(mem, *_scaled(*costs), L)


def _scaled(c: Fraction, e: tuple[Fraction, ...]) -> tuple[int, tuple[int, ...]]:
    """(c, e) times the least common denominator: integers in the same order, the same quotients."""
    den = lcm(c.denominator, *(x.denominator for x in e))
    return c.numerator * (den // c.denominator), tuple(x.numerator * (den // x.denominator) for x in e)


def _min_max_cut(mem: list[int], c: int, e: tuple[int, ...], L: int) -> tuple[int, ...] | None:
    """The least slowest-stage time ``n c + e_s`` (n layers on stage s, at most ``mem[s]``) of a cut of
    ``L`` layers: bisection over the times a stage can take, then layers off the slowest stages."""
    p = len(e)

    def caps(T: int) -> list[int] | None:
        got = [min(mem[s], (T - e[s]) // c) if T >= e[s] else 0 for s in range(p)]
        return got if min(got) >= 1 and sum(got) >= L else None

    values = sorted({n * c + x for n in range(1, L + 1) for x in set(e)})
    lo, hi = 0, len(values) - 1
    if caps(values[hi]) is None:
        return None
    while lo < hi:
        mid = (lo + hi) // 2
        if caps(values[mid]) is None:
            lo = mid + 1
        else:
            hi = mid
    cut = caps(values[lo])
    while sum(cut) > L:
        s = max((s for s in range(p) if cut[s] > 1), key=lambda s: (cut[s] * c + e[s], -s))
        cut[s] -= 1
    return tuple(cut)
