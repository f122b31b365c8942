"""The step model of LLM training (issue 21, items 5 to 7): ``evaluate_llm(problem, layout)``.

Work in progress: the dataclasses (``core.llm_problem``) and this signature are the agreed
interface (LLM-DESIGN.md); the body follows.
"""

from __future__ import annotations

from fractions import Fraction

from .llm_problem import LlmEvaluation, LlmLayout, LlmProblem, ParameterCount, TransformerDims  # noqa: F401

__all__ = ["LlmEvaluation", "LlmLayout", "LlmProblem", "ParameterCount", "TransformerDims", "evaluate_llm"]


def evaluate_llm(problem: LlmProblem, layout: LlmLayout, efficiency: Fraction | None = None) -> LlmEvaluation:
    """The step time, throughput and memory of ``layout`` on ``problem`` (exact)."""
    raise NotImplementedError("evaluate_llm: the body lands in the next commit on branch i21-step")
