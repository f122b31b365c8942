"""The block's tensor-level types for a search candidate, and the proof that no other types are faster.

The full derivation is in the manual: docs/derivations.md, "LLM training: the search's types and bounds".
"""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

from ..core.llm_memory import Recompute
from ..core.llm_stage import data_seconds, part_costs, stage_cut, stage_params
from .llm_types import BlockModel, BlockTypes, block_types, kbest

MAX_WALK = 64  # distinct amounts scored per last type when refining a bound


class TypeChooser:
    """Per candidate the block types to score (memoised on what they depend on: t, whether the
    attention node may split the batch, sequence parallelism, the recompute mode)."""

    def __init__(self, problem, space):
        self.problem, self.space = problem, space
        self.memo: dict = {}

    @staticmethod
    def key(cand, layout) -> tuple:
        """What the block's amounts depend on: t, whether the attention node may split the batch,
        sequence parallelism, and full recomputation (the re-send) or not (selective recomputes
        the attention core's FLOPs, not its exchanges)."""
        t = cand.degrees.tensor
        rc = Recompute.FULL if cand.recompute is Recompute.FULL else Recompute.NONE
        return (t, cand.micro_batch % t == 0, layout.parallelism.sequence_parallel, rc)

    def _terms(self, key: tuple) -> dict:
        t, _att, sp, _rc = key
        return self.memo.setdefault(("terms", t, sp), {})  # the raw terms: every recompute mode's

    def block_types(self, cand, layout) -> BlockTypes | None:
        """None when the types are not searched or split nothing (t = 1), and for a mixture of experts
        (Megatron's pattern: its nodes hold the routed work, not the weights)."""
        if not self.space.search_types or cand.degrees.tensor == 1 or self.problem.dims.moe:
            return None
        key = self.key(cand, layout)
        if key not in self.memo:
            self.memo[key] = block_types(self.problem, *key, memo=self._terms(key))
        return self.memo[key]

    def model(self, cand, layout) -> BlockModel:
        key = ("model",) + self.key(cand, layout)
        if key not in self.memo:
            self.memo[key] = BlockModel(self.problem, *self.key(cand, layout), memo=self._terms(self.key(cand, layout)))
        return self.memo[key]

    def options(self, bt: BlockTypes, layout, every: bool = False) -> list:
        """The layouts to score: one per Pareto option (``every``: per last type), Megatron's pattern
        as ``tensor_types=None``."""
        out = []
        for o in (bt.options if every else bt.pareto()):
            types = None if o.best.types == bt.megatron else o.best.types
            out.append(replace(layout, tensor_types=types))
        return out


def cut_is_fixed(cand) -> bool:
    return cand.degrees.pipeline == 1 or cand.virtual > 1


def data_floor_s(problem, layout) -> Fraction:
    """The least, over every stage cut, of the slowest stage's data-level time with any block types:
    each stage's is linear in its layers (``llm_stage.data_seconds`` is linear in the parameters; the
    block's weight exchanges are >= 0), so the exact min-max cut (``llm_stage.stage_cut``) gives it."""
    p, L = layout.parallelism.pipeline, problem.dims.layers
    fixed = stage_params(problem, (0,) * p)
    per_layer = data_seconds(problem, layout, problem.params.per_layer)
    pre_w = part_costs(problem, layout).pre.weights_s  # the embedding's types are fixed
    extras = tuple(data_seconds(problem, layout, f) + (pre_w if s == 0 else 0) for s, f in enumerate(fixed))
    cut = stage_cut(L, p, per_layer, extras)
    return max(n * per_layer + e for n, e in zip(cut, extras))


def pipeline_part(ev) -> Fraction:
    """(m + (p-1)/v) x the slowest stage's time of an evaluation: its step less its data-level time."""
    return ev.step_time_s - ev.data_comm_s


def quick_bound(problem, cand, layout, step: Fraction, at_cuts) -> Fraction:
    """A lower bound of the candidate's step over every assignment of block types that fits (``step``
    when the cut is fixed); ``at_cuts``: the scored options' evaluations at the fastest cut that fits
    (the step model's min-max cut, or ``llm_cuts.memory_cut``'s), or at the min-max cut when none
    does. Memory does not depend on the types, so the cuts that fit are the same for all: the least
    stage time over them is non-decreasing in (c, e) like the min-max cut's."""
    if cut_is_fixed(cand):
        return step
    return min(step, min(pipeline_part(ev) for ev in at_cuts) + data_floor_s(problem, layout))


def refine_bound(chooser: TypeChooser, cand, layout, target: Fraction, score):
    """(bound, fastest): a lower bound of the candidate's step over every assignment of block types
    that fits, and the fastest fitting one scored on the way (None if none). ``score(types)`` ->
    (scored, evaluation at the fastest cut that fits, or at the min-max cut when none does)."""
    model = chooser.model(cand, layout)
    floor = data_floor_s(chooser.problem, layout)
    bound = fastest = None
    for last in model.allowed[model.n]:
        done, k, tail = 0, 4, None
        while tail is None:
            picks = kbest(model, last, k=k)
            for pick in picks[done:]:
                x, ev = score(pick.types)
                lb = pipeline_part(ev) + floor  # every assignment sending at least this amount
                if lb >= target:
                    tail = lb
                    break
                if x.fits:
                    fastest = x if fastest is None or x.step_time_s < fastest.step_time_s else fastest
                    bound = x.step_time_s if bound is None else min(bound, x.step_time_s)
            else:
                if len(picks) < k:
                    tail = target  # every assignment of this last type scored
                elif k >= MAX_WALK:
                    tail = lb
            done, k = len(picks), k * 4
        bound = tail if bound is None else min(bound, tail)
    return bound, fastest
