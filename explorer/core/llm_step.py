"""The step model of LLM training (issue 21, items 5 to 7): ``evaluate_llm(problem, layout)``.

One training step of a transformer under tensor (t), pipeline (p) and data (d) parallelism,
exact (``Fraction``) throughout. Ranks follow Megatron's order: tensor innermost, then data,
then pipeline; the bandwidth of a collective is ``cluster.bandwidth_Bps(span)`` of the ranks it
spans.

- Compute: FLOPs from the network's nodes (``comm.training_flops``, forward + backward), the
  recompute forward (``llm_stage.recompute_forward``: full, every layer's forward again;
  selective, the attention core's), a tied LM head's logit layer added explicitly (the network
  leaves it out), divided over the t GPUs of a stage at ``peak x efficiency`` (one efficiency
  per GPU kind, ``core.llm_calibration``).
- Tensor level: ``fanout.level_amounts`` of each part at fan-out t (Megatron's column- then
  row-parallel pattern unless ``LlmLayout.tensor_types`` says otherwise, ``core.llm_block``),
  2 bytes an element, at ``bandwidth_Bps(t)``, per micro-batch; with sequence parallelism
  (``Parallelism.sequence_parallel``, the default) the partial sums are reduce-scattered into
  the token-split residual stream (``level_amounts(..., reduce_scatter=True)``: 8 (t-1)/t s b h
  a GPT layer, Megatron's), all-reduced without it (12); under full recomputation the
  forward's exchanges (``llm_block.TensorAmounts.forward``) once more.
- Mixture of experts (``core.llm_experts``): the router's FLOPs with the block's; under expert
  parallelism e each layer's all-to-alls (dispatch and combine, forward and backward) with the
  block's tensor-level time (``expert_comm_s`` of ``tensor_comm_s``), expert weights, gradients
  and optimizer state divided by e, their gradients all-reduced over d / e ranks.
- Pipeline: stage cuts given or the exact min-max cut (``llm_stage.stage_cut``); the embedding
  on the first stage, the head on the last; 1F1B (or interleaved with v chunks): step =
  (m + (p - 1)/v) x the slowest stage's micro-batch time; each stage boundary sends s b h
  2-byte elements per micro-batch each way, over the stage's t GPUs.
- Data level: the slowest stage's gradient all-reduce (ZeRO 0/1) or ZeRO-3's reduce-scatter and
  per-micro-batch weight all-gathers (``llm_stage.data_seconds``), not overlapped with compute.
- Memory: ``core.llm_stage_memory`` per stage; ``fits`` when the worst stage is within the GPU's
  memory.
"""

from __future__ import annotations

from fractions import Fraction

from .llm_calibration import efficiency_for
from .llm_experts import alltoall_seconds
from .llm_problem import LlmEvaluation, LlmLayout, LlmProblem, ParameterCount, TransformerDims  # noqa: F401
from .llm_stage import TERA, stage_params, step_parts
from .llm_stage_memory import stage_memories

__all__ = ["LlmEvaluation", "LlmLayout", "LlmProblem", "ParameterCount", "TransformerDims", "evaluate_llm"]

GiB = 2**30


def evaluate_llm(problem: LlmProblem, layout: LlmLayout, efficiency: Fraction | None = None) -> LlmEvaluation:
    """The step time, throughput and memory of ``layout`` on ``problem`` (ValueError naming the
    field when the layout cannot run it). ``efficiency``: the fraction of peak the matmuls reach
    (default: the GPU kind's, ``llm_calibration.efficiency_for``; ``calibrated`` is True only when
    that is a calibrated value, False when it is borrowed from the A100 or given here)."""
    given = efficiency is not None
    if efficiency is None:
        efficiency, calibrated = efficiency_for(problem.cluster.gpu.name)
    else:
        calibrated = False
    if not 0 < efficiency <= 1:
        raise ValueError(f"efficiency: must be in (0, 1], got {efficiency}")
    x = 1 / Fraction(efficiency)
    sp = step_parts(problem, layout, x)
    times = sp.stage_times(x)
    s = sp.slowest(x)
    m = sp.microbatches
    mems = stage_memories(problem, layout, sp.stage_layers, stage_params(problem, sp.stage_layers))
    worst = max(range(len(mems)), key=lambda k: mems[k].total)
    gpus, peak = problem.cluster.gpus, Fraction(problem.cluster.gpu.peak_TFLOPS)
    limit = Fraction(problem.cluster.gpu.memory_GiB) * GiB
    step = sp.step_time(x)
    notes = []
    if sp.tied_head:
        notes.append("LM head tied to the embedding: its logit layer (6 B s h V FLOPs) is added to the last stage")
    if given:
        notes.append(f"efficiency {efficiency} given (not the calibrated one)")
    elif not calibrated:
        notes.append(f"{problem.cluster.gpu.name}: uncalibrated (no calibration row; the A100's efficiency is used)")
    return LlmEvaluation(
        step_time_s=step, compute_s=m * sp.a[s] * x, tensor_comm_s=m * sp.tensor[s], data_comm_s=max(sp.data),
        pipeline_comm_s=m * sp.p2p[s], bubble_s=sp.fill * times[s], bubble_fraction=sp.fill / (m + sp.fill),
        tflops_per_gpu=Fraction(sp.model_flops + sp.recompute_flops) / (step * gpus * TERA),
        mfu=Fraction(sp.model_flops) / (step * gpus * peak * TERA),
        memory_bytes_per_accelerator=mems[worst].total, memory=mems[worst], memory_limit_bytes=limit,
        fits=mems[worst].total <= limit, stage_layers=sp.stage_layers, stage_times_s=times, microbatches=m,
        efficiency=Fraction(efficiency), calibrated=calibrated, notes=tuple(notes),
        expert_comm_s=m * sp.stage_layers[s] * alltoall_seconds(problem, layout))
