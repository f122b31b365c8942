"""Lower bounds the LLM search prunes with: never above what ``evaluate_llm`` reports.

Time. The step model (``core.llm_step``) charges ``(m + p - 1) * max_s tau_s`` plus
data-parallel communication, and every ``tau_s`` holds the compute of stage ``s`` for one
micro-batch: ``F_s(b) / (t * peak * efficiency)`` plus communication >= 0. The stages' FLOPs
add up to the network's, ``F(b)``, linear in ``b``, so ``max_s`` is at least their mean and

    step >= (m + p - 1) * F(b) / (p t peak eff) = (m + p - 1) / m * F(B) / (G peak eff)

with ``m = B / (d b)`` micro-batches and ``G = t p d`` GPUs: the calibrated compute of the whole
step with no communication, times the bubble factor. ``F(B)`` here is the model's FLOPs without
the recompute forward (recompute only adds work), so the bound holds for every recompute mode.
Under the interleaved schedule (v chunks a stage) the fill is (p - 1)/v stage times: the factor
is (m + (p - 1)/v) / m.

A mixture of experts under expert parallelism: every stage's micro-batch time also holds its
layers' all-to-alls, ``n_s`` x the same per-layer seconds, and the max over the stages of
(compute + all-to-all) is at least the mean of both: the bound adds (m + (p - 1)/v) x (L / p) x
the per-layer all-to-all.

Data level. The step adds the slowest stage's data-level time (gradient all-reduce, or ZeRO-3's
reduce-scatter and gathers: ``llm_stage.data_seconds``, linear in the stage's parameters, plus
type I weight exchanges >= 0). The slowest stage holds at least the mean of the stages'
parameters, so ``data_seconds`` at ``P / p`` is a lower bound of that term; it is added to the
compute bound above (the two are separate terms of the step). A mixture of experts: its expert
weights and the others are exchanged over different groups (d / e and d ranks), and
``data_seconds`` is linear in each; every layer's expert weights lie in the stages' layers, so the
slowest stage is again at least the function at the means (P / p and P_experts / p).

Memory. The worst stage holds at least the mean of the stages; their model states add up to the
whole model's (16 bytes a parameter, split ``t`` ways, ZeRO-sharded over ``d``), so the worst
stage holds at least ``model_state_bytes(P / (t p), d, zero)``; activations add to that (>= 0).
Expert weights count 1/e of theirs, sharded over d / e (``llm_stage_memory``).
Tensor-level types other than Megatron's duplicate weights, which only adds.

tests/test_llm_search.py checks both against every candidate scored on seeded instances.
"""

from __future__ import annotations

from fractions import Fraction

from ..core.comm import training_flops
from ..core.llm_memory import model_state_bytes
from .llm_space import Candidate

TERA = 10**12


def network_flops(network) -> int:
    """Training FLOPs of one step of the whole network at its batch (forward + backward, no recompute)."""
    return sum(training_flops(layer, network.batch) for layer in network.layers)


def compute_floor_s(flops: int, gpus: int, peak_TFLOPS: Fraction, efficiency: Fraction) -> Fraction:
    """``flops`` spread over ``gpus`` GPUs at the calibrated rate: no communication, no bubble."""
    return Fraction(flops) / (gpus * Fraction(peak_TFLOPS) * TERA * Fraction(efficiency))


def data_floor_s(problem, cand: Candidate) -> Fraction:
    """A lower bound of the step's data-level time: ``llm_stage.data_seconds`` at the mean stage's parameters."""
    from ..core.llm_memory import Parallelism
    from ..core.llm_problem import LlmLayout
    from ..core.llm_stage import data_seconds

    deg = cand.degrees
    layout = LlmLayout(Parallelism(deg.tensor, deg.pipeline, deg.data, expert=deg.expert), cand.micro_batch,
                       cand.recompute, cand.zero, virtual_stages=cand.virtual)
    pc = problem.params
    return data_seconds(problem, layout, Fraction(pc.total, deg.pipeline),
                        Fraction(pc.layers * pc.expert_per_layer, deg.pipeline))


def alltoall_floor_s(problem, cand: Candidate) -> Fraction:
    """A mixture of experts under expert parallelism: (m + (p - 1)/v) x the mean stage's L / p
    layers' all-to-alls a micro-batch (``llm_experts.alltoall_seconds``, 0 when dense or e = 1)."""
    if cand.degrees.expert == 1:
        return Fraction(0)
    from ..core.llm_experts import alltoall_seconds
    from ..core.llm_memory import Parallelism
    from ..core.llm_problem import LlmLayout

    deg = cand.degrees
    layout = LlmLayout(Parallelism(deg.tensor, deg.pipeline, deg.data, expert=deg.expert), cand.micro_batch,
                       cand.recompute, cand.zero, virtual_stages=cand.virtual)
    m = cand.microbatches(problem.dims.batch)
    return (m + cand.fill()) * Fraction(problem.dims.layers, deg.pipeline) * alltoall_seconds(problem, layout)


def time_bound_s(problem, cand: Candidate, floor_s: Fraction) -> Fraction:
    """The search's lower bound of the candidate's step time: compute with its bubble, plus a mixture
    of experts' all-to-alls, plus data level."""
    m = cand.microbatches(problem.dims.batch)
    compute = floor_s * (m + cand.fill()) / m  # the bubble factor (m + (p - 1)/v) / m
    return compute + alltoall_floor_s(problem, cand) + data_floor_s(problem, cand)


def memory_floor_bytes(cand: Candidate, parameters: int, expert_parameters: int = 0) -> Fraction:
    """A lower bound of the worst stage's bytes per GPU: its share of the model states (of the
    ``parameters``, a mixture's ``expert_parameters`` divided by e too and sharded over d / e)."""
    deg = cand.degrees
    dense = sum(model_state_bytes(Fraction(parameters - expert_parameters, deg.tensor * deg.pipeline), deg.data,
                                  cand.zero))
    return dense + sum(model_state_bytes(Fraction(expert_parameters, deg.tensor * deg.pipeline * deg.expert),
                                         deg.data // deg.expert, cand.zero))
