"""``explore check`` on a GPU cluster: the LLM search against exhaustive scoring of its space.

The search prunes with lower bounds (``solvers.llm_bounds``); the check scores every candidate of
the same space without pruning (each through ``evaluate_llm``) and says whether the two agree:
the same optimal step time (or both find nothing that fits), and the search's bound at most
every scored step time (so the bound is a bound). Meant for small instances (gpt3-1.7b on 16
GPUs scores about 900 layouts in a few seconds).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ..solvers.llm_bounds import memory_floor_bytes
from ..solvers.llm_search import LlmSearchResult, expert_total, search, time_bound
from ..solvers.llm_type_choice import TypeChooser
from .llm_report import SCHEMA_VERSION, LlmReport, exact_decimal, header_line, inputs_json
from .render import fmt_seconds


@dataclass(frozen=True, slots=True)
class LlmCheck:
    model: str
    cluster: str
    gpus: int
    search: LlmSearchResult
    exhaustive: LlmSearchResult
    bound_violations: int  # scored candidates whose time or memory lies below its bound
    approximations: tuple[str, ...] = ()  # of the model file (the CLI says them on stderr)
    report: LlmReport | None = None  # the search's report (``llm_run.report_of``): the inputs, parameters and notes

    @property
    def same_optimum(self) -> bool:
        a, b = self.search.best, self.exhaustive.best
        if a is None or b is None:
            return a is None and b is None
        return a.step_time_s == b.step_time_s

    @property
    def agree(self) -> bool:
        bound_ok = self.search.bound_s is None or self.exhaustive.best is None or \
            self.search.bound_s <= self.exhaustive.best.step_time_s
        return self.same_optimum and bound_ok and self.bound_violations == 0


def check_llm(problem, space, progress=None) -> LlmCheck:
    """The search and exhaustive scoring of ``space`` on ``problem``, compared."""
    if progress is not None:
        progress("searching (with bounds)")
    fast = search(problem, space)
    if progress is not None:
        progress("scoring every layout (no pruning)")
    full = search(problem, space, prune=False, progress=progress)
    bad = 0
    types = TypeChooser(problem, space)
    for s in full.evaluated:
        tf = time_bound(problem, s.candidate, full.floor_s, types)
        mf = memory_floor_bytes(s.candidate, problem.params.total, expert_total(problem))
        bad += tf > s.step_time_s or mf > s.evaluation.memory_bytes_per_accelerator
    c = problem.cluster
    return LlmCheck(problem.network.name, c.name, c.gpus, fast, full, bad)


def _best(r: LlmSearchResult) -> str:
    if r.best is None:
        return "no layout fits"
    c = r.best.candidate
    v = f" v={c.virtual}" if c.virtual > 1 else ""  # interleaved 1F1B: model chunks a stage
    e = f" e={c.degrees.expert}" if c.degrees.expert > 1 else ""  # a mixture of experts' expert degree
    return (f"{fmt_seconds(r.best.step_time_s)} (t={c.degrees.tensor} p={c.degrees.pipeline}{v} d={c.degrees.data}{e}, "
            f"micro-batch {c.micro_batch}, recompute {c.recompute.value}, ZeRO {c.zero.value})")


def render_llm_check(c: LlmCheck) -> str:
    s, e = c.search, c.exhaustive
    head = [f"check: {c.model} on {c.cluster} ({c.gpus:,} GPUs): the search against scoring every layout"]
    if c.report is not None:  # the planner's first line and notes
        head = [f"check: {header_line(c.report)}", "the search against scoring every layout",
                *(f"note: {n}" for n in c.report.all_notes)]
    lines = [*head,
             f"search:     {s.status.value}, {_best(s)}; scored {s.scored:,} of {s.candidates:,}, wall {s.wall_s:.1f} s",
             f"exhaustive: {_best(e)}; scored {e.scored:,} of {e.candidates:,} (every layout), wall {e.wall_s:.1f} s",
             f"bounds: {c.bound_violations} of {e.scored:,} scored layouts below their time or memory bound",
             "agree: yes" if c.agree else "agree: NO"]
    return "\n".join(lines) + "\n"


def llm_check_json(c: LlmCheck) -> dict[str, Any]:
    def side(r: LlmSearchResult) -> dict[str, Any]:
        return {"status": r.status.value, "scored": r.scored, "candidates": r.candidates,
                "step_time_s": None if r.best is None else exact_decimal(r.best.step_time_s),
                "bound": None if r.bound_s is None else exact_decimal(Fraction(r.bound_s)), "wall_s": round(r.wall_s, 3)}

    out: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "model": c.model, "cluster": c.cluster, "gpus": c.gpus}
    if c.report is not None:  # as the planner's JSON: its inputs (parameters among them) and notes
        out.update(inputs=inputs_json(c.report), notes=list(c.report.all_notes))
    return {**out, "search": side(c.search), "exhaustive": side(c.exhaustive), "bound_violations": c.bound_violations,
            "same_optimum": c.same_optimum, "agree": c.agree}
