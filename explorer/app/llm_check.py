"""``explore check`` on a GPU cluster: the LLM search against exhaustive scoring of its space.

The search prunes with lower bounds (``solvers.llm_bounds``); the check scores every candidate of
the same space without pruning (each through ``evaluate_llm``) and says whether the two agree:
the same optimal step time (or both find nothing that fits), and the search's bound at most
every scored step time (so the bound is a bound). Meant for small instances (gpt3-1.7b on 16
GPUs scores about 900 layouts in a few seconds). A time limit ends both cleanly: the search gets at
most half of it, the scoring the rest; what was scored is still compared (``complete`` says
whether every layout was). The scoring proves nothing about the layouts it did not score (it does
not trust the bounds it checks): stopped early, its status is feasible (its best so far) or
unknown (none scored fits), with no bound, and ``same_optimum`` is None (no optimum to compare).
Both sides take their candidates from one ``llm_search.bound_order`` (the scoring goes on where
the search's ordering stopped); the bounds the check tests are computed again, on their own
(``time_bound`` and ``memory_floor_bytes`` with a type chooser of the check's).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any

from ..core.names import given_as
from ..core.solution import Status
from ..solvers.llm_bounds import memory_floor_bytes
from ..solvers.llm_search import LlmSearchResult, bound_order, expert_total, search, time_bound
from ..solvers.llm_type_choice import TypeChooser
from .figures_text import fmt_seconds
from .llm_report import SCHEMA_VERSION, LlmReport, exact_decimal, header_line, inputs_json


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
    time_limit_s: float | None = None  # the whole check's (None: none)
    total_wall_s: float | None = None  # since the check's ``started`` (explore check: its process's start; None: not given)

    @property
    def same_optimum(self) -> bool | None:
        """Whether both found the same optimal step time (or both that nothing fits); None unless
        both proved theirs (status optimal or infeasible: the scoring only when it scored every
        layout, ``_unproven``): a side stopped at the time limit has no optimum to compare."""
        if not (_proven(self.search) and _proven(self.exhaustive)):
            return None
        a, b = self.search.best, self.exhaustive.best
        if a is None or b is None:
            return a is None and b is None
        return a.step_time_s == b.step_time_s

    @property
    def complete(self) -> bool:
        """Whether both ran to the end (no layout left unresolved at the time limit)."""
        return self.search.unresolved == 0 and self.exhaustive.unresolved == 0

    @property
    def agree(self) -> bool:
        """No contradiction found: every scored layout at or above its bounds and the search's bound,
        the same optimum when both proved one, and no scored layout beating an optimum (or a proof
        that none fits) the search claims. Stopped at the time limit, that covers what was scored."""
        bound_ok = self.search.bound_s is None or self.exhaustive.best is None or \
            self.search.bound_s <= self.exhaustive.best.step_time_s
        same = self.same_optimum
        return bound_ok and self.bound_violations == 0 and same is not False and not self._beaten

    @property
    def _beaten(self) -> bool:
        """A scored layout better than what the search proved (its optimum, or that none fits)."""
        a, b = self.search, self.exhaustive.best
        if b is None or a.status not in (Status.OPTIMAL, Status.INFEASIBLE):
            return False
        return a.best is None or b.step_time_s < a.best.step_time_s


def check_llm(problem, space, progress=None, time_limit_s: float | None = None, started: float | None = None) -> LlmCheck:
    """The search and exhaustive scoring of ``space`` on ``problem``, compared; ``time_limit_s``
    bounds both (the search at most half, the scoring what is left; each scores one layout at least),
    counted from ``started`` (``explore check``: its process's start) or else from here."""
    start = time.perf_counter() if started is None else started
    if progress is not None:
        progress("searching (with bounds)")
    order = bound_order(problem, space)  # one order for both: the scoring goes on where the search stopped
    fast = search(problem, space, time_limit_s=None if time_limit_s is None else time_limit_s / 2, started=start,
                  order=order)
    if progress is not None:
        progress("scoring every layout (no pruning)")
    left = None if time_limit_s is None else max(0.0, time_limit_s - (time.perf_counter() - start))
    full = _unproven(search(problem, space, prune=False, progress=progress, time_limit_s=left, order=order))
    bad = 0
    types = TypeChooser(problem, space)
    for s in full.evaluated:
        tf = time_bound(problem, s.candidate, full.floor_s, types)
        mf = memory_floor_bytes(s.candidate, problem.params.total, expert_total(problem))
        bad += tf > s.step_time_s or mf > s.evaluation.memory_bytes_per_accelerator
    c = problem.cluster
    total = None if started is None else time.perf_counter() - started
    return LlmCheck(problem.network.name, c.name, c.gpus, fast, full, bad, time_limit_s=time_limit_s,
                    total_wall_s=total)


def _proven(r: LlmSearchResult) -> bool:
    return r.status in (Status.OPTIMAL, Status.INFEASIBLE)


def _unproven(full: LlmSearchResult) -> LlmSearchResult:
    """The exhaustive scoring's result as its own evidence: stopped with layouts left, feasible with
    its best so far or unknown, and no bound (``search``'s status there rests on the time bounds of
    the layouts left, which the check is to test, not to trust)."""
    if not full.unresolved:
        return full
    return replace(full, status=Status.FEASIBLE if full.best is not None else Status.UNKNOWN, bound_s=None)


def _best(r: LlmSearchResult) -> str:
    if r.best is None:  # proven (every layout scored or pruned), or the time limit struck first
        return "no layout fits" if r.status is Status.INFEASIBLE else "no plan within the time limit"
    c = r.best.candidate
    v = f" v={c.virtual}" if c.virtual > 1 else ""  # interleaved 1F1B: model chunks a stage
    e = f" e={c.degrees.expert}" if c.degrees.expert > 1 else ""  # a mixture of experts' expert degree
    return (f"{fmt_seconds(r.best.step_time_s)} (t={c.degrees.tensor} p={c.degrees.pipeline}{v} d={c.degrees.data}{e}, "
            f"micro-batch {c.micro_batch}, recompute {c.recompute.value}, ZeRO {c.zero.value})")


def _every(r: LlmSearchResult, limit: float | None) -> str:
    if r.unresolved:
        of = "" if limit is None else f" of {limit:g} s"
        return f" (stopped at the check's time limit{of}: {r.unresolved:,} not scored)"
    return " (every layout)"


def _verdict(c: LlmCheck) -> str:
    if not c.agree:
        return "agree: NO"
    if c.complete:  # the same optimum, or no contradiction where a side proved none (status feasible)
        return "agree: yes" if c.same_optimum else "agree: yes, no contradiction (no optimum proven on both sides to compare)"
    e = c.exhaustive
    return (f"agree: yes, on what was checked ({e.scored:,} of {e.candidates:,} layouts scored within the time limit, "
            f"no contradiction among them; {given_as('--time-limit')} gives more)")


def render_llm_check(c: LlmCheck) -> str:
    s, e = c.search, c.exhaustive
    head = [f"check: {c.model} on {c.cluster} ({c.gpus:,} GPUs): the search against scoring every layout"]
    if c.report is not None:  # the planner's first line and notes
        head = [f"check: {header_line(c.report)}", "the search against scoring every layout",
                *(f"note: {n}" for n in c.report.all_notes)]
    lines = [*head,
             f"search:     {s.status.value}, {_best(s)}; scored {s.scored:,} of {s.candidates:,}, wall {s.wall_s:.1f} s",
             f"exhaustive: {e.status.value}, {_best(e)}; scored {e.scored:,} of {e.candidates:,}{_every(e, c.time_limit_s)}, wall {e.wall_s:.1f} s",
             f"bounds: {c.bound_violations} of {e.scored:,} scored layouts below their time or memory bound",
             _verdict(c)]
    if c.total_wall_s is not None:  # what --time-limit counts: start-up, loading, both sides and the bounds' check
        lines.append(f"wall {c.total_wall_s:.2f} s since the process started")
    return "\n".join(lines) + "\n"


def llm_check_json(c: LlmCheck) -> dict[str, Any]:
    def side(r: LlmSearchResult) -> dict[str, Any]:
        return {"status": r.status.value, "scored": r.scored, "candidates": r.candidates,
                "step_time_s": None if r.best is None else exact_decimal(r.best.step_time_s),
                "bound": exact_decimal(r.bound_s), "wall_s": round(r.wall_s, 3),
                "unresolved": r.unresolved}

    out: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "model": c.model, "cluster": c.cluster, "gpus": c.gpus,
                           "time_limit_s": c.time_limit_s,
                           "total_wall_s": None if c.total_wall_s is None else round(c.total_wall_s, 3)}
    if c.report is not None:  # as the planner's JSON: its inputs (parameters among them) and notes
        out.update(inputs=inputs_json(c.report), notes=list(c.report.all_notes))
    return {**out, "search": side(c.search), "exhaustive": side(c.exhaustive), "bound_violations": c.bound_violations,
            "same_optimum": c.same_optimum, "complete": c.complete, "agree": c.agree}
