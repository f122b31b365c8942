"""The step model of LLM training (issue 21, items 5 to 7): ``evaluate_llm(problem, layout)``.

The full derivation is in the manual: docs/derivations.md, "LLM training".
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from .llm_calibration import calibration_for, efficiency_for, range_notes, uncalibrated_note
from .llm_experts import alltoall_seconds
from .llm_problem import LlmEvaluation, LlmLayout, LlmProblem, ParameterCount, TransformerDims  # noqa: F401
from .llm_stage import StepParts, stage_params, step_parts
from .llm_stage_memory import stage_memories
from .units import TERA

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
    gpus, peak = problem.cluster.gpus, Fraction(problem.cluster.gpu.peak_TFLOPS)
    tt = _time_terms(sp, x, gpus, peak)
    mems = stage_memories(problem, layout, sp.stage_layers, stage_params(problem, sp.stage_layers))
    worst, total = _worst(mems)
    limit = problem.cluster.gpu.memory_bytes
    notes = _notes(problem, given, efficiency, calibrated, sp.tied_head)
    expert = Fraction(0) if layout.parallelism.expert == 1 else \
        sp.microbatches * sp.stage_layers[tt.slowest] * alltoall_seconds(problem, layout)
    return LlmEvaluation(
        step_time_s=tt.step, compute_s=tt.compute, tensor_comm_s=tt.tensor, data_comm_s=tt.data,
        pipeline_comm_s=tt.pipeline, bubble_s=tt.bubble, bubble_fraction=tt.bubble_fraction,
        tflops_per_gpu=tt.tflops, model_tflops_per_gpu=tt.model_tflops, mfu=tt.model_tflops / peak,
        memory_bytes_per_accelerator=total, memory=mems[worst], memory_limit_bytes=limit,
        fits=total <= limit, stage_layers=sp.stage_layers, stage_times_s=tt.times, microbatches=sp.microbatches,
        efficiency=Fraction(efficiency), calibrated=calibrated, notes=notes, expert_comm_s=expert)


@dataclass(frozen=True, slots=True)
class _TimeTerms:
    times: tuple[Fraction, ...]
    slowest: int
    step: Fraction
    compute: Fraction
    tensor: Fraction
    data: Fraction
    pipeline: Fraction
    bubble: Fraction
    bubble_fraction: Fraction
    tflops: Fraction
    model_tflops: Fraction


_TIMES: dict = {}  # id(StepParts) -> (step parts, x, GPUs, peak, terms): ZeRO 0 and 1 share the parts
_WORST: dict = {}  # id(stage memories) -> (memories, (worst stage, its bytes))


def _time_terms(sp: StepParts, x: Fraction, gpus: int, peak: Fraction) -> _TimeTerms:
    """The evaluation's time figures from the step's parts (slowest stage: the first of the
    greatest time, as ``StepParts.slowest``; step as ``StepParts.step_time``), memoised."""
    hit = _TIMES.get(id(sp))
    if hit is not None and hit[0] is sp and hit[1:4] == (x, gpus, peak):
        return hit[4]
    times = sp.stage_times(x)
    s = times.index(max(times))
    m = sp.microbatches
    step = (m + sp.fill) * times[s] + max(sp.data)
    out = _TimeTerms(times, s, step, m * sp.a[s] * x, m * sp.tensor[s], max(sp.data), m * sp.p2p[s],
                     sp.fill * times[s], sp.fill / (m + sp.fill),
                     Fraction(sp.model_flops + sp.recompute_flops) / (step * gpus * TERA),
                     Fraction(sp.model_flops) / (step * gpus * TERA))
    if len(_TIMES) >= 4096:
        _TIMES.clear()
    _TIMES[id(sp)] = (sp, x, gpus, peak, out)
    return out


def _worst(mems) -> tuple[int, Fraction]:
    """The stage of the most bytes (the first of them) and its bytes, memoised."""
    hit = _WORST.get(id(mems))
    if hit is not None and hit[0] is mems:
        return hit[1]
    totals = [x_.total for x_ in mems]
    worst = totals.index(max(totals))
    if len(_WORST) >= 4096:
        _WORST.clear()
    _WORST[id(mems)] = (mems, (worst, totals[worst]))
    return worst, totals[worst]


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
        notes.append(uncalibrated_note(problem.cluster.gpu.name))
    else:
        c = calibration_for(problem.cluster.gpu.name)
        notes.append(f"{c.gpu}: efficiency {float(c.efficiency):g}, calibrated on {c.source}")
    if not given:
        notes.extend(range_notes(problem.cluster.gpu.name, problem.params.total, problem.dims.experts))
    return tuple(notes)

