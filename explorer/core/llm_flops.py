"""FLOPs per training iteration of a GPT and the throughput figures derived from them.

The derivation: docs/derivations.md, "`explorer.core.llm_flops`".
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from .llm_memory import Recompute, check_positive
from .units import TERA


@dataclass(frozen=True, slots=True)
class GptIteration:
    """One iteration of a Megatron GPT: ``batch`` B (global), ``sequence`` s, ``layers`` l,
    ``hidden`` h, ``vocab`` V."""

    batch: int
    sequence: int
    layers: int
    hidden: int
    vocab: int

    def __post_init__(self):
        check_positive(self, ("batch", "sequence", "layers", "hidden", "vocab"))


def model_flops(it: GptIteration) -> int:
    """Forward + backward FLOPs, no recomputation: 72 B s l h^2 (1 + s/(6h) + V/(12 l h))."""
    B, s, l, h, V = it.batch, it.sequence, it.layers, it.hidden, it.vocab
    return 72 * B * s * l * h * h + 12 * B * s * s * l * h + 6 * B * s * h * V


def recompute_flops(it: GptIteration, recompute: Recompute) -> int:
    """The extra forward work recomputation does: none 0; selective 4 B s^2 h per layer;
    full one layer forward, 24 B s h^2 + 4 B s^2 h per layer."""
    B, s, l, h = it.batch, it.sequence, it.layers, it.hidden
    if recompute is Recompute.NONE:
        return 0
    if recompute is Recompute.SELECTIVE:
        return 4 * B * s * s * h * l
    return (24 * B * s * h * h + 4 * B * s * s * h) * l


def hardware_flops(it: GptIteration, recompute: Recompute) -> int:
    """FLOPs the GPUs execute: model FLOPs plus the recompute forward."""
    return model_flops(it) + recompute_flops(it, recompute)


def megatron_flops(it: GptIteration) -> int:
    """Megatron-LM's reported count, 96 B s l h^2 (1 + s/(6h) + V/(16 l h)) (full recompute)."""
    return hardware_flops(it, Recompute.FULL)


def tflops_per_gpu(flops: int | Fraction, seconds: int | Fraction, gpus: int) -> Fraction:
    """Achieved TFLOP/s per GPU: flops / (seconds x gpus) / 10^12."""
    _exact(flops, seconds)
    if seconds <= 0 or gpus < 1:
        raise ValueError(f"seconds must be > 0 and gpus >= 1, got {seconds}, {gpus}")
    return Fraction(flops) / (Fraction(seconds) * gpus * TERA)


def mfu(achieved_tflops: int | Fraction, peak_tflops: int | Fraction) -> Fraction:
    """Utilisation: achieved / peak TFLOP/s per GPU. Model FLOPs utilisation when the achieved
    figure counts model FLOPs (no recompute), hardware FLOPs utilisation when it counts the
    recompute forward too (Korthikanti et al.; Chowdhery et al., PaLM, 2022)."""
    _exact(achieved_tflops, peak_tflops)
    if peak_tflops <= 0:
        raise ValueError(f"peak_tflops must be > 0, got {peak_tflops}")
    return Fraction(achieved_tflops) / Fraction(peak_tflops)


def _exact(*values) -> None:
    """Exact arithmetic only: a float (37.83 is not 3783/100) is refused; pass Fraction("37.83")."""
    for v in values:
        if isinstance(v, float):
            raise TypeError(f"{v!r}: pass an int or a Fraction (e.g. Fraction(\"{v}\")), not a float")
