"""The one efficiency per GPU kind of the LLM step model: the fraction of peak its matmuls reach.

The derivation: docs/derivations.md, "`explorer.core.llm_calibration`".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

from .units import count_words

DIGITS = 4  # the stored constant: the exact root rounded to 4 decimal places
EFFICIENCY_A100 = Fraction(1237, 2000)  # 0.6185: calibrate_efficiency(Table 5) = 0.6184544..., rounded
# (0.6432 before the tensor level charged sequence parallelism's reduce-scatters, which lowered
# the communication the efficiency had absorbed)


@dataclass(frozen=True, slots=True)
class Calibration:
    """One calibrated efficiency: the exact GPU name it was fitted on, its source and the range of
    model sizes (every parameter) of the rows fitted (a prediction outside it is flagged, not refitted)."""

    gpu: str
    efficiency: Fraction
    source: str
    min_parameters: int
    max_parameters: int


TABLE5 = Calibration("A100-SXM4-80GB", EFFICIENCY_A100,
                     "Korthikanti et al. (MLSys 2023) Table 5: GPT 22B to 1T on 8 to 512 A100-SXM4-80GB, t = 8, "
                     "sequence 2,048", 22_074_273_792, 1_008_038_758_400)  # the rows' parameter_count (tested)
CALIBRATIONS = {c.gpu: c for c in (TABLE5,)}  # by the cluster's exact GPU name (no substring: an A100-PCIE-40GB is not it)


def calibration_for(gpu_name: str) -> Calibration | None:
    """The calibration of the GPU named exactly ``gpu_name`` (None: none)."""
    return CALIBRATIONS.get(gpu_name)


def efficiency_for(gpu_name: str) -> tuple[Fraction, bool]:
    """(efficiency, calibrated) of a GPU kind by its exact name ('A100-SXM4-80GB' -> the A100's,
    calibrated; any other name, 'A100-PCIE-40GB' too -> the A100's, uncalibrated)."""
    c = calibration_for(gpu_name)
    return (c.efficiency, True) if c is not None else (EFFICIENCY_A100, False)


def uncalibrated_note(gpu_name: str) -> str:
    """What a GPU without a calibration row of its exact name is told (it borrows the A100's)."""
    return (f"{gpu_name}: uncalibrated (no calibration row for this exact GPU name; the "
            "A100-SXM4-80GB's efficiency is used)")


def range_notes(gpu_name: str, parameters: int, experts: int = 0) -> tuple[str, ...]:
    """Where a prediction is outside the calibration rows (flagged, never refitted): the GPU's
    calibration, or the A100's that an uncalibrated GPU borrows."""
    c = calibration_for(gpu_name) or TABLE5
    out = []
    if parameters < c.min_parameters or parameters > c.max_parameters:
        side = "below" if parameters < c.min_parameters else "above"
        out.append(f"outside the calibrated range: {count_words(parameters)} parameters, {side} the calibration "
                   f"rows' {count_words(c.min_parameters)} to {count_words(c.max_parameters)} (one efficiency does not "
                   "follow the matmul size: small models ran below it, large ones above; flagged, not refitted)")
    if experts:
        out.append("outside the calibrated range: a mixture of experts (the efficiency was fitted on dense GPTs; "
                   "flagged, not refitted)")
    return tuple(out)


def calibrate_efficiency(rows: Sequence[tuple[object, object, Fraction]]) -> Fraction:
    """The exact efficiency e at which the mean over ``rows`` (problem, layout, measured seconds)
    of predicted / measured step time is 1. Each row's prediction at x = 1/e is
    ``StepParts.step_time(x)`` = (m + fill) max_s (a_s x + k_s) + data: increasing, convex and
    piecewise linear in x, so Newton's method from an x above the root converges to it exactly
    in finitely many steps."""
    from .llm_stage import step_parts

    if not rows:
        raise ValueError("calibrate_efficiency: no rows")
    x = Fraction(100)  # efficiency 1%: every row slower than measured, so the mean ratio > 1
    for _ in range(200):
        parts = [(step_parts(problem, layout, x), Fraction(measured)) for problem, layout, measured in rows]
        f = sum(sp.step_time(x) / t for sp, t in parts) - len(rows)
        if f == 0:
            return 1 / x
        slope = sum((sp.microbatches + sp.fill) * sp.a[sp.slowest(x)] / t for sp, t in parts)
        if f < 0 or slope <= 0:
            raise ValueError("calibrate_efficiency: the root is not above 1 / efficiency = 1 (comm alone exceeds the times)")
        x -= f / slope
    raise ValueError("calibrate_efficiency: Newton's method did not converge")


def rounded(value: Fraction, digits: int = DIGITS) -> Fraction:
    """``value`` rounded to ``digits`` decimal places, exactly (half to even)."""
    return Fraction(round(value * 10**digits), 10**digits)
