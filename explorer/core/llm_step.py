"""The step model of LLM training (issue 21, items 5 to 7): ``evaluate_llm(problem, layout)``.

The full derivation is in the manual: docs/derivations.md, "LLM training".
"""

from __future__ import annotations

from fractions import Fraction

from .llm_calibration import calibration_for, efficiency_for, range_notes
from .llm_experts import alltoall_seconds
from .llm_problem import LlmEvaluation, LlmLayout, LlmProblem, ParameterCount, TransformerDims  # noqa: F401
from .llm_stage import TERA, stage_params, step_parts
from .llm_stage_memory import stage_memories

__all__ = ["LlmEvaluation", "LlmLayout", "LlmProblem", "ParameterCount", "TransformerDims", "evaluate_llm"]



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
    s = times.index(max(times))  # sp.slowest(x), and below sp.step_time(x), from the times computed once
    m = sp.microbatches
    mems = stage_memories(problem, layout, sp.stage_layers, stage_params(problem, sp.stage_layers))
    totals = [x_.total for x_ in mems]
    worst = totals.index(max(totals))
    gpus, peak = problem.cluster.gpus, Fraction(problem.cluster.gpu.peak_TFLOPS)
    limit = problem.cluster.gpu.memory_bytes
    step = (m + sp.fill) * times[s] + max(sp.data)
    notes = _notes(problem, given, efficiency, calibrated, sp.tied_head)
    return LlmEvaluation(
        step_time_s=step, compute_s=m * sp.a[s] * x, tensor_comm_s=m * sp.tensor[s], data_comm_s=max(sp.data),
        pipeline_comm_s=m * sp.p2p[s], bubble_s=sp.fill * times[s], bubble_fraction=sp.fill / (m + sp.fill),
        tflops_per_gpu=Fraction(sp.model_flops + sp.recompute_flops) / (step * gpus * TERA),
        mfu=Fraction(sp.model_flops) / (step * gpus * peak * TERA),
        memory_bytes_per_accelerator=totals[worst], memory=mems[worst], memory_limit_bytes=limit,
        fits=totals[worst] <= limit, stage_layers=sp.stage_layers, stage_times_s=times, microbatches=m,
        efficiency=Fraction(efficiency), calibrated=calibrated, notes=notes,
        expert_comm_s=m * sp.stage_layers[s] * alltoall_seconds(problem, layout))


_NOTES: dict = {}  # (GPU name, given, efficiency, calibrated, tied head, parameters, experts) -> notes


def _notes(problem: LlmProblem, given: bool, efficiency, calibrated: bool, tied_head: bool) -> tuple[str, ...]:
    """The evaluation's notes (memoised: a search asks for the same ones for every layout)."""
    key = (problem.cluster.gpu.name, given, efficiency, calibrated, tied_head, problem.params.total, problem.dims.experts)
    if key not in _NOTES:
        _NOTES[key] = _make_notes(problem, given, efficiency, calibrated, tied_head)
    return _NOTES[key]


def _make_notes(problem: LlmProblem, given: bool, efficiency, calibrated: bool, tied_head: bool) -> tuple[str, ...]:
    notes = []
    if tied_head:
        notes.append("LM head tied to the embedding: its logit layer (6 B s h V FLOPs) is added to the last stage")
    if given:
        notes.append(f"efficiency {efficiency} given (not the calibrated one)")
    elif not calibrated:
        notes.append(f"{problem.cluster.gpu.name}: uncalibrated (no calibration row for this exact GPU name; the "
                     "A100-SXM4-80GB's efficiency is used)")
    else:
        c = calibration_for(problem.cluster.gpu.name)
        notes.append(f"{c.gpu}: efficiency {float(c.efficiency):g}, calibrated on {c.source}")
    if not given:
        notes.extend(range_notes(problem.cluster.gpu.name, problem.params.total, problem.dims.experts))
    return tuple(notes)

