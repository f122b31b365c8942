"""Lower bounds the LLM search prunes with: never above what ``evaluate_llm`` reports.

The full derivation is in the manual: docs/derivations.md, "LLM training: the search's types and bounds".
"""

from __future__ import annotations

from fractions import Fraction

from ..core.llm_memory import Recompute, ZeroStage, model_state_bytes
from ..core.units import TERA
from .llm_space import Candidate


def compute_floor_s(flops: int, gpus: int, peak_TFLOPS: Fraction, efficiency: Fraction) -> Fraction:
    """``flops`` spread over ``gpus`` GPUs at the calibrated rate: no communication, no bubble."""
    return Fraction(flops) / (gpus * Fraction(peak_TFLOPS) * TERA * Fraction(efficiency))


def data_floor_s(problem, cand: Candidate) -> Fraction:
    """A lower bound of the step's data-level time: ``llm_stage.data_seconds`` at the mean stage's
    parameters (memoised per problem on ``data_key``: ``terms``)."""
    memo, key = terms(problem), data_key(cand)
    value = memo.get(key)
    if value is None:
        value = memo[key] = _data_floor(problem, cand)
    return value


def data_key(cand: Candidate) -> tuple:
    """What ``data_seconds`` reads of a candidate: the degrees, the ZeRO stage, and only under ZeRO-3
    the micro-batch and whether the recompute is full (``data_floor_s``'s key in ``terms``)."""
    if cand.zero is ZeroStage.ZERO3:
        return ("data", cand.degrees, cand.zero, cand.micro_batch, cand.recompute is Recompute.FULL)
    return ("data", cand.degrees, cand.zero)


def _data_floor(problem, cand: Candidate) -> Fraction:
    from ..core.llm_stage import data_seconds

    deg, pc = cand.degrees, problem.params
    return data_seconds(problem, _layout(cand), Fraction(pc.total, deg.pipeline),
                        Fraction(pc.layers * pc.expert_per_layer, deg.pipeline))


def alltoall_floor_s(problem, cand: Candidate) -> Fraction:
    """A mixture of experts under expert parallelism: (m + (p - 1)/v) x the mean stage's L / p
    layers' all-to-alls a micro-batch (``llm_experts.alltoall_seconds``, 0 when dense or e = 1)."""
    deg = cand.degrees
    if deg.expert == 1:
        return Fraction(0)
    m = cand.microbatches(problem.dims.batch)
    return (m + cand.fill()) * Fraction(problem.dims.layers, deg.pipeline) * alltoall_layer_s(problem, cand)


def alltoall_layer_s(problem, cand: Candidate) -> Fraction:
    """One layer's all-to-alls a micro-batch (``llm_experts.alltoall_seconds``; the candidate has
    e > 1), memoised per problem on ``alltoall_key``."""
    memo, key = terms(problem), alltoall_key(cand)
    value = memo.get(key)
    if value is None:
        from ..core.llm_experts import alltoall_seconds

        value = memo[key] = alltoall_seconds(problem, _layout(cand))
    return value


def alltoall_key(cand: Candidate) -> tuple:
    """What ``alltoall_seconds`` reads of a candidate: t, e, the micro-batch, whether the recompute is full."""
    deg = cand.degrees
    return ("alltoall", deg.tensor, deg.expert, cand.micro_batch, cand.recompute is Recompute.FULL)


def _layout(cand: Candidate):
    from ..core.llm_memory import Parallelism
    from ..core.llm_problem import LlmLayout

    deg = cand.degrees
    return LlmLayout(Parallelism(deg.tensor, deg.pipeline, deg.data, expert=deg.expert), cand.micro_batch,
                     cand.recompute, cand.zero, virtual_stages=cand.virtual)


_TERMS: dict = {}  # id(problem) -> (problem, {a term's key: its value}); the last few problems
MAX_PROBLEMS = 16


def terms(problem) -> dict:
    """The bound terms computed for ``problem``, by what they read (``data_key``, ``alltoall_key``):
    the one cache of ``data_floor_s`` and ``alltoall_layer_s``, which ``llm_order`` reads too."""
    hit = _TERMS.get(id(problem))
    if hit is None or hit[0] is not problem:
        if len(_TERMS) >= MAX_PROBLEMS:
            _TERMS.clear()
        hit = _TERMS[id(problem)] = (problem, {})
    return hit[1]


def routed_floor_elements(problem, cand: Candidate) -> Fraction:
    """A mixture of experts under expert and tensor parallelism: the elements a layer sends a sample
    at the tensor level beyond its nodes' (the routed tokens' k - 1 extra copies gathered and
    reduce-scattered, ``llm_experts.routed_tensor_elements`` at micro-batch 1: it is linear in the
    micro-batch); 0 otherwise."""
    deg = cand.degrees
    if deg.expert == 1 or deg.tensor == 1 or not problem.dims.moe:
        return Fraction(0)
    from ..core.llm_experts import routed_tensor_elements
    from ..core.llm_memory import Parallelism
    from ..core.llm_problem import LlmLayout

    layout = LlmLayout(Parallelism(deg.tensor, deg.pipeline, deg.data, expert=deg.expert), 1, cand.recompute,
                       cand.zero, virtual_stages=cand.virtual)
    return routed_tensor_elements(problem, layout)


def tensor_floor_s(problem, cand: Candidate, block_elements: Fraction) -> Fraction:
    """(m + (p - 1)/v) x the mean stage's L / p layers' tensor-level time a micro-batch, each layer
    sending at least ``block_elements`` elements a sample (2 bytes each, at ``bandwidth_Bps(t)``; the
    step model charges a layer ``llm_stage.block_amounts``, linear in the micro-batch); 0 at t = 1."""
    t = cand.degrees.tensor
    if t == 1 or not block_elements:
        return Fraction(0)
    from ..core.llm_stage import BYTES

    m, p, v = cand.microbatches(problem.dims.batch), cand.degrees.pipeline, cand.virtual
    block, bw = Fraction(block_elements), Fraction(problem.cluster.bandwidth_Bps(t))
    # (m + (p - 1)/v) (L / p) b block BYTES / bw, as one fraction of integers (one reduction, the same value)
    return Fraction((m * v + p - 1) * problem.dims.layers * cand.micro_batch * block.numerator * BYTES * bw.denominator,
                    v * p * block.denominator * bw.numerator)


def time_bound_s(problem, cand: Candidate, floor_s: Fraction, block_elements: Fraction = Fraction(0)) -> Fraction:
    """The search's lower bound of the candidate's step time: compute with its bubble, plus the
    mean stage's tensor-level exchanges (``block_elements``: at least what a layer sends a sample,
    whatever its types; 0: not counted) and a mixture of experts' all-to-alls, plus data level."""
    m = cand.microbatches(problem.dims.batch)
    compute = floor_s * (m + cand.fill()) / m  # the bubble factor (m + (p - 1)/v) / m
    return (compute + tensor_floor_s(problem, cand, block_elements) + alltoall_floor_s(problem, cand)
            + data_floor_s(problem, cand))


def memory_floor_bytes(cand: Candidate, parameters: int, expert_parameters: int = 0) -> Fraction:
    """A lower bound of the worst stage's bytes per GPU: its share of the model states (of the
    ``parameters``, a mixture's ``expert_parameters`` divided by e too and sharded over d / e)."""
    deg = cand.degrees
    dense = sum(model_state_bytes(Fraction(parameters - expert_parameters, deg.tensor * deg.pipeline), deg.data,
                                  cand.zero))
    return dense + sum(model_state_bytes(Fraction(expert_parameters, deg.tensor * deg.pipeline * deg.expert),
                                         deg.data // deg.expert, cand.zero))
