"""The LLM training planner: the fastest layout that fits, proven, or a bound and the gap.

Joint search over the degrees (t, p, d), the micro-batch, recompute and the ZeRO stage
(``llm_space``), with, for each candidate, the tensor-level types of one transformer block
(``llm_type_choice``, ``llm_types``) and the stage cuts (``llm_cuts``), by branch and bound over
an explicit list with the bounds of ``llm_bounds``. Every candidate that is looked at is scored
by the one evaluator, ``core.llm_step.evaluate_llm``: nothing here computes a time or a memory
of its own. The search and its statuses are described in the manual: docs/llm-training.md,
"What is searched" and "Bounds and status".
"""

from __future__ import annotations


import time
from bisect import bisect_left
from dataclasses import dataclass, field, replace
from fractions import Fraction
from operator import itemgetter
from typing import Callable

from ..core.solution import Status
from ..core.llm_memory import Recompute
from ..core.llm_calibration import efficiency_for
from .deadline import past
from ..core.comm import network_flops
from .llm_bounds import compute_floor_s, memory_floor_bytes, routed_floor_elements, tensor_floor_s, time_bound_s
from .llm_cuts import memory_cut
from .llm_order import BoundOrder
from .llm_space import Candidate, LlmSpace, candidates
from .llm_type_choice import TypeChooser, quick_bound, refine_bound

RUNNERS_UP = 5  # "why not the others": this many other uniform layouts in the report
EXTRA_FOR_REPORT = 8  # at most this many unscored (t, p) pairs are scored for that list (not for the proof)


@dataclass(frozen=True, slots=True)
class Scored:
    """A candidate, the layout it became, and the evaluator's verdict."""

    candidate: Candidate
    layout: object  # core.llm_step.LlmLayout
    evaluation: object  # core.llm_step.LlmEvaluation
    types_bound: Fraction | None = None  # no block types make this candidate faster (None: it does not fit)
    blocks_certified: bool = False  # every block and the head at their own least exchange (llm_types)
    certificate_gap: str = ""  # why ``blocks_certified`` failed (empty when it holds or was not tried)

    @property
    def types_proven(self) -> bool:
        """Its block types are proven the fastest for its layout (the step model's types: one per node of a block)."""
        return self.types_bound is not None and self.types_bound == self.evaluation.step_time_s

    @property
    def step_time_s(self) -> Fraction:
        return self.evaluation.step_time_s

    @property
    def fits(self) -> bool:
        return self.evaluation.fits


@dataclass(frozen=True, slots=True)
class LlmSearchResult:
    status: Status
    best: Scored | None
    bound_s: Fraction | None  # proven lower bound of the optimum's step time (None: no plan fits)
    candidates: int  # in the space
    scored: int  # evaluated (for the proof)
    pruned_time: int  # skipped: time bound >= the best step time
    pruned_memory: int  # skipped: memory bound > the GPU's memory
    unresolved: int  # left when the time limit struck
    capacity_bytes: Fraction
    smallest_memory_bytes: Fraction | None  # infeasible: the least memory of a scored layout (None: none scored)
    runners_up: tuple[Scored, ...] = ()
    wall_s: float = 0.0  # the search's own
    total_wall_s: float | None = None  # since ``started`` (explore: its process's start, as --time-limit counts; None: not given)
    space: LlmSpace = field(default_factory=LlmSpace)
    floor_s: Fraction | None = None  # the step's compute at the calibrated efficiency (the time bounds' unit)
    evaluated: tuple[Scored, ...] = ()  # every candidate scored for the proof, in scoring order
    memory_bound_bytes: Fraction | None = None  # no layout of the space (any cut) needs less memory a GPU
    types_searched: bool = False  # the block types were part of the space (else Megatron's pattern)
    time_limit_s: float | None = None  # the wall-clock limit the search was given (None: none)

    @property
    def gap(self) -> Fraction | None:
        if self.best is None or self.bound_s is None:
            return None
        return (self.best.step_time_s - self.bound_s) / self.best.step_time_s


Progress = Callable[..., None]  # progress(step, done, total)


def make_layout(problem, cand: Candidate, tensor_types):
    from ..core.llm_memory import Parallelism
    from ..core.llm_problem import LlmLayout

    deg = cand.degrees
    return LlmLayout(Parallelism(deg.tensor, deg.pipeline, deg.data, expert=deg.expert), cand.micro_batch,
                     cand.recompute, cand.zero, tensor_types=tensor_types, virtual_stages=cand.virtual)


def _status_bound(best: Scored | None, scored: list[Scored], unresolved_bound: Fraction | None):
    """The search's status and proven bound: UNKNOWN (candidates left unscored) or INFEASIBLE with no
    plan; else the least of the plan, the types' bounds and the first unscored candidate's time bound
    (``unresolved_bound``; None: none left), OPTIMAL when that is the plan's own step time."""
    if best is None:
        return (Status.UNKNOWN if unresolved_bound is not None else Status.INFEASIBLE), None
    typed = min((s.types_bound for s in scored if s.types_bound is not None), default=best.step_time_s)
    bound = min(best.step_time_s, typed, best.step_time_s if unresolved_bound is None else unresolved_bound)
    return (Status.OPTIMAL if bound == best.step_time_s else Status.FEASIBLE), bound


def bound_order(problem, space: LlmSpace, types: TypeChooser | None = None) -> BoundOrder:
    """The candidates of ``space`` in increasing time bound (``llm_order``), with their memory bounds;
    the tensor-level floors through ``types`` (None: a chooser of its own)."""
    dims, cluster = problem.dims, problem.cluster
    cands = candidates(space, cluster.gpus, cluster.gpus_per_node, dims.layers, dims.batch, dims.head_groups,
                       dims.experts)
    eff = efficiency_for(cluster.gpu.name)[0]  # the evaluator's (one per GPU kind)
    floor = compute_floor_s(network_flops(problem.network), cluster.gpus, cluster.gpu.peak_TFLOPS, eff)
    types = TypeChooser(problem, space) if types is None else types
    return BoundOrder(problem, cands, _memory_floors(problem, cands), floor,
                      lambda c: tensor_floor_s(problem, c, block_floor(problem, c, types)))


def search(problem, space: LlmSpace = LlmSpace(), time_limit_s: float | None = None, evaluate=None,
           progress: Progress | None = None, prune: bool = True, started: float | None = None,
           order: BoundOrder | None = None) -> LlmSearchResult:
    """The joint optimum of ``space`` on ``problem`` (``prune=False``: score every candidate).
    ``time_limit_s`` counts from ``started`` (a ``time.perf_counter()`` value: ``explore`` passes its
    process's start) or else from here; no candidate is started that its predecessors' cost says would
    end past it (``_Pace``). ``order``: ``bound_order(problem, space)`` shared with another search of
    the same space (``explore check``; None: one of its own)."""
    if evaluate is None:
        from ..core.llm_step import evaluate_llm as evaluate
    start = time.perf_counter()
    deadline = None if time_limit_s is None else (start if started is None else started) + time_limit_s
    pace = _Pace(deadline)
    capacity = problem.cluster.gpu.memory_bytes
    eff = efficiency_for(problem.cluster.gpu.name)[0]  # the evaluator's (one per GPU kind)
    types = TypeChooser(problem, space)
    order = bound_order(problem, space, types) if order is None else order
    cands, memory, floor = order.cands, order.memory, order.floor
    fitting = sum(1 for mf in memory if not (prune and mf > capacity))
    best: Scored | None = None
    scored: list[Scored] = []
    n = pruned_time = unresolved = 0
    unresolved_bound = None
    order.deadline, order.stopped = deadline, False  # the order stops there, before its first score too
    for tf, mf, _i, cand in order:
        if prune and mf > capacity:
            continue
        if prune and best is not None and tf > best.step_time_s:  # strict: a tie may need less memory
            pruned_time = fitting - n
            break
        if scored and pace.over():
            unresolved_bound = tf
            break
        s = _checked(pace.timed(_score, problem, cand, types, evaluate), eff)
        scored.append(s)
        if s.fits and (best is None or _better(s, best)):
            best = s
        if progress is not None and n % 8 == 0:
            progress("searching layouts" if prune else "scoring every layout (no pruning)", n + 1, fitting)
        n += 1
    if order.stopped and unresolved_bound is None and fitting > n:  # its clock, with fitting layouts left unscored
        unresolved_bound = order.least()
    if unresolved_bound is not None:  # one more score if no plan: a plan with a bound rather than none
        best, unresolved = _add_rescue(problem, cands, memory, capacity, scored, types, evaluate, fitting - n,
                                       order.top()) if best is None else (best, fitting - n)
    if best is not None and space.search_types:
        scored, best = _settle_types(problem, scored, best, types, evaluate, deadline)
        best = _certify(best, types)
    status, bound = _status_bound(best, scored, unresolved_bound)
    smallest = min((x.evaluation.memory_bytes_per_accelerator for x in scored), default=None) if best is None else None
    extra = _report_extra(problem, order, scored, types, evaluate, pace, placed=lambda out: _placed(best, scored + out))
    return LlmSearchResult(status, best, bound, len(cands), len(scored), pruned_time, len(cands) - fitting,
                           unresolved, capacity, smallest, runners_up(best, scored + extra), *_since(start, started),
                           space, floor, tuple(scored), min(memory, default=None), space.search_types, time_limit_s)


def _since(start: float, started: float | None) -> tuple[float, float | None]:
    """(the search's own wall time, the time since ``started``, None when not given), both to now."""
    end = time.perf_counter()
    return end - start, None if started is None else end - started


def _checked(s: Scored, eff) -> Scored:
    if s.evaluation.efficiency != eff:
        raise ValueError(f"evaluate_llm used efficiency {s.evaluation.efficiency}, the bounds {eff}")
    return s


def _add_rescue(problem, cands, memory, capacity, scored: list[Scored], types, evaluate, unresolved: int,
                top: Candidate | None):
    """(best, unresolved) after ``_rescue``'s score, appended to ``scored`` (as they were without one);
    ``top``: the order's candidate of least key left, the rescue's layout when none was scored."""
    if not scored and top is None:
        return None, unresolved
    rescue = _rescue(problem, cands, memory, capacity, scored, types, evaluate, top)
    if rescue is None:
        return None, unresolved
    scored.append(rescue)
    return (rescue if rescue.fits else None), unresolved - 1


def _rescue(problem, cands: list[Candidate], memory: list[Fraction], capacity, scored: list[Scored], types,
            evaluate, top: Candidate | None = None) -> Scored | None:
    """The time limit struck with no plan: the last scored layout's (none scored: ``top``'s, the
    order's least key left) degrees, micro-batch and schedule under full recomputation and the ZeRO
    stage of least memory (the variant most likely to fit), scored (None: no such candidate left
    unscored within the memory bound)."""
    last, have = scored[-1].candidate if scored else top, {s.candidate for s in scored}
    pick = [(memory[i], i) for i, c in enumerate(cands)
            if c.recompute is Recompute.FULL and c.degrees == last.degrees and c.micro_batch == last.micro_batch
            and c.virtual == last.virtual and memory[i] <= capacity and c not in have]
    if not pick:
        return None
    return _checked(_score(problem, cands[min(pick)[1]], types, evaluate), efficiency_for(problem.cluster.gpu.name)[0])


def _memory_floors(problem, cands: list[Candidate]) -> list[Fraction]:
    """``llm_bounds.memory_floor_bytes`` of every candidate (it reads the degrees and the ZeRO stage only)."""
    memo: dict = {}
    total, experts = problem.params.total, expert_total(problem)
    out = []
    for c in cands:
        key = (c.degrees, c.zero)
        if key not in memo:
            memo[key] = memory_floor_bytes(c, total, experts)
        out.append(memo[key])
    return out


def block_floor(problem, cand: Candidate, types) -> Fraction:
    """At least what one layer sends at the tensor level for one sample under any block types of the
    space (``llm_stage.block_amounts`` at micro-batch 1): the least of the periodic per-last-type
    minima (``llm_types``: every layer is charged the template block with the same types), or
    Megatron's block when the types are not searched (always for a mixture of experts, whose layer
    also sends its routed tokens' extra copies: ``llm_bounds.routed_floor_elements``); 0 at t = 1.
    Memoised in ``types.memo`` on what it reads: t, e, whether b is a multiple of t, the recompute."""
    if cand.degrees.tensor == 1:
        return Fraction(0)
    deg = cand.degrees  # what the floor reads of the candidate (``TypeChooser.key``, the routed copies)
    key = ("floor", deg.tensor, deg.expert, cand.micro_batch % deg.tensor == 0, cand.recompute)
    if key not in types.memo:
        layout = make_layout(problem, cand, None)
        bt = types.block_types(cand, layout)
        types.memo[key] = min(o.best.amount for o in bt.options) if bt is not None else \
            _megatron_block(problem, cand, layout, types) + routed_floor_elements(problem, cand)
    return types.memo[key]


def _megatron_block(problem, cand: Candidate, layout, types) -> Fraction:
    """What Megatron's block sends at the tensor level a sample (micro-batch 1), memoised."""
    key = ("megatron",) + types.key(cand, layout)
    if key not in types.memo:
        from ..core.llm_block import megatron_types
        from ..core.llm_stage import block_amounts

        mega = tuple(megatron_types(problem.network, problem.dims.layers))
        types.memo[key] = block_amounts(problem, mega, cand.degrees.tensor, 1, layout.parallelism.sequence_parallel,
                                        cand.recompute).activations
    return types.memo[key]


def time_bound(problem, cand: Candidate, floor: Fraction, types) -> Fraction:
    """The candidate's time bound (``llm_bounds.time_bound_s``) with its tensor-level floor."""
    return time_bound_s(problem, cand, floor, block_floor(problem, cand, types))


def _score(problem, cand: Candidate, types, evaluate) -> Scored:
    """The candidate with the fastest of its block types (``llm_type_choice``: the exact per-last-type
    minima of ``llm_types``, each scored by the evaluator) and a lower bound over every other
    assignment (``types_bound``)."""
    layout = make_layout(problem, cand, None)
    bt = types.block_types(cand, layout)
    if bt is None:  # t = 1 (types split nothing: proven) or types not searched (Megatron's)
        s, _raw = _with_cut(problem, cand, layout, evaluate)
        one = cand.degrees.tensor == 1
        return replace(s, types_bound=s.step_time_s if s.fits and one else None, blocks_certified=one)
    tries = [_with_cut(problem, cand, lay, evaluate) for lay in types.options(bt, layout)]
    s, _raw = min(tries, key=lambda x: (not x[0].fits, x[0].step_time_s))
    if not s.fits:  # memory does not depend on the types, nor, when no cut fits, the cut
        return s
    at_cuts = [x.evaluation if x.fits else raw for x, raw in tries]  # the least stage time over cuts that fit
    return replace(s, types_bound=quick_bound(problem, cand, layout, s.step_time_s, at_cuts))


def _certify(best: Scored, types) -> Scored:
    """The best plan with ``blocks_certified``: its last type's periodic optimum at the relaxation's
    minimum (``llm_types.BlockTypes.blocks_certified``, whose relaxation is computed for it only);
    t = 1 (nothing to certify) or types not searched: as scored."""
    bt = types.block_types(best.candidate, best.layout)
    if bt is None:
        return best
    last = (best.layout.tensor_types or bt.megatron)[-1]
    ok = bt.blocks_certified(last)
    return replace(best, blocks_certified=ok, certificate_gap="" if ok else certificate_gap(bt, last))


def certificate_gap(bt, last) -> str:
    """Why the across-blocks certificate fails for the periodic option ``last`` (``llm_types``)."""
    o = next(x for x in bt.options if x.last is last)
    if o.best.amount != bt.relaxed:
        return (f"a block's least tensor-level amount with the previous block's last type free "
                f"({float(bt.relaxed):.6g}) is below the plan's repeated block ({float(o.best.amount):.6g}): "
                "blocks of different types might send less")
    least = min(x.post for x in bt.options)
    return (f"the head's tensor-level amount after the plan's last type ({float(o.post):.6g}) is above its "
            f"least ({float(least):.6g}): a different last block might send less")


def _with_cut(problem, cand: Candidate, layout, evaluate) -> tuple[Scored, object]:
    """``layout`` with the step model's min-max cut; when that does not fit, the fastest cut that
    does (``llm_cuts.memory_cut``), if any. Also the evaluation at the min-max cut."""
    s = Scored(cand, layout, evaluate(problem, layout))
    if s.fits or cand.degrees.pipeline == 1 or cand.virtual > 1:
        return s, s.evaluation
    cut = memory_cut(problem, layout, s.evaluation.efficiency)
    if cut is None or cut == s.evaluation.stage_layers:
        return s, s.evaluation
    moved = replace(layout, stage_layers=cut)
    other = Scored(cand, moved, evaluate(problem, moved))
    return (other if other.fits else s), s.evaluation


def _settle_types(problem, scored: list[Scored], best: Scored, types, evaluate,
                  deadline: float | None = None) -> tuple[list[Scored], Scored]:
    """Candidates whose types bound is below the best step (plain 1F1B, whose cut moves with the
    block's time): score every last type's least amount and bound the rest at the next distinct
    amount (``llm_type_choice``); a faster plan found so becomes the best."""
    out, done = list(scored), set()
    changed = True
    while changed:
        changed = False
        for i, s in enumerate(out):
            if s.types_bound is None or s.types_bound >= best.step_time_s or i in done:
                continue
            if past(deadline):
                return out, best  # the bounds left stand: the status says feasible, with the gap
            done.add(i)
            was_best = s is best  # refined, the plan keeps its place with its settled bound
            s = out[i] = _refine(problem, s, types, evaluate, best.step_time_s)
            improved = s.fits and _better(s, best)
            if was_best or improved:
                best = s
            changed = changed or improved
    return out, best


def _refine(problem, s: Scored, types, evaluate, target: Fraction) -> Scored:
    cand = s.candidate
    layout = make_layout(problem, cand, None)
    bt = types.block_types(cand, layout)

    def score(tt):
        x, raw = _with_cut(problem, cand, replace(layout, tensor_types=None if tt == bt.megatron else tt), evaluate)
        return x, (x.evaluation if x.fits else raw)

    bound, fastest = refine_bound(types, cand, layout, target, score)
    top = fastest if fastest is not None and _better(fastest, s) else s
    return replace(top, types_bound=min(bound, top.step_time_s))


def expert_total(problem) -> int:
    """A mixture of experts' expert weights, every layer (0 when dense)."""
    return problem.params.layers * problem.params.expert_per_layer


def _uniform_key(c: Candidate) -> tuple[int, int, int]:
    return (c.degrees.tensor, c.degrees.pipeline, c.degrees.expert)


def _report_extra(problem, keyed: "BoundOrder | list", scored, types, evaluate,
                  pace: "_Pace | float | None", placed: Callable[[list[Scored]], Fraction | None] | None = None
                  ) -> list[Scored]:
    """For "why not the others": the lowest-bound candidates of (t, p) pairs no scored candidate has,
    each pair's best of those tied at its lowest bound (ZeRO 0 and 1 share a bound: a tie on time goes
    to the smaller memory, as ``_better``'s); none started that would end past the deadline (a pair
    cut there keeps what was scored of it). ``keyed``: the search's ``BoundOrder`` (the pairs not
    scored are ordered on a ``BoundOrder.subset`` of their own: the scored pairs' time bounds are not
    completed), or its entries sorted. ``pace``: the search's, or a deadline (None: none). ``placed(out)``:
    ``_placed`` of the runners-up with ``out`` so far; a pair whose time bound is above it is not
    scored, nor any after it (the list shown would not change)."""
    pace = pace if isinstance(pace, _Pace) else _Pace(pace)
    have = {_uniform_key(s.candidate) for s in scored}
    if isinstance(keyed, BoundOrder):  # the pairs scored are skipped: their time bounds need not be completed
        keyed = keyed.subset(lambda c: _uniform_key(c) not in have)
    out: list[Scored] = []
    for tf, _mf, _i, cand in keyed:
        pair = _uniform_key(cand)
        if pair in have:
            continue
        if len(out) >= EXTRA_FOR_REPORT or pace.over():
            break
        last = None if placed is None else placed(out)
        if last is not None and tf > last:
            break
        have.add(pair)
        upto = keyed.through(tf) if isinstance(keyed, BoundOrder) else keyed
        tied, got = [c for c in _at_bound(upto, tf) if _uniform_key(c) == pair], []
        for c in tied:
            if got and pace.over():
                break
            got.append(pace.timed(_score, problem, c, types, evaluate))
        out.append(min(got, key=_rank))
    return out


def _at_bound(entries: list, bound: Fraction) -> list[Candidate]:
    """The candidates of ``entries`` (sorted by time bound) whose time bound is ``bound``, in order:
    a run of them, found by bisection (not a Fraction comparison per entry)."""
    k = bisect_left(entries, bound, key=itemgetter(0))
    out = []
    while k < len(entries) and entries[k][0] == bound:
        out.append(entries[k][3])
        k += 1
    return out


class _Pace:
    """The search's deadline (None: none) and what scoring a candidate costs: the costliest of the
    last ``PACE_WINDOW`` scores (a candidate's cost varies with its pipeline degree; a score past
    the deadline ran 0.3-0.7 s over it on a loaded machine)."""

    def __init__(self, deadline: float | None):
        self.deadline, self.costs = deadline, []

    def timed(self, fn, *args):
        t = time.perf_counter()
        out = fn(*args)
        self.costs = (self.costs + [time.perf_counter() - t])[-PACE_WINDOW:]
        return out

    def over(self) -> bool:
        """Whether the next score, at the recent cost, would end past the deadline."""
        if self.deadline is None:
            return False
        return time.perf_counter() + (max(self.costs) if self.costs else 0.0) > self.deadline


PACE_WINDOW = 4


def runners_up(best: Scored | None, scored: list[Scored], n: int = RUNNERS_UP) -> tuple[Scored, ...]:
    """The best scored layout of each other (t, p): fitting ones by step time, then those that do not
    fit by memory; at most ``n``."""
    per_key: dict[tuple[int, int], Scored] = {}
    for s in scored:
        key = _uniform_key(s.candidate)
        cur = per_key.get(key)
        if cur is None or _rank(s) < _rank(cur):
            per_key[key] = s
    if best is not None:
        per_key.pop(_uniform_key(best.candidate), None)
    return tuple(sorted(per_key.values(), key=_rank)[:n])


def _placed(best: Scored | None, scored: list[Scored], n: int = RUNNERS_UP) -> Fraction | None:
    """The step time of the last of ``runners_up(best, scored, n)`` when it has ``n`` layouts that
    fit, else None. A layout of another (t, p) whose time bound is above it cannot enter that list:
    its step time is at least its bound (it would rank after the last), and one that does not fit
    ranks after every layout that does."""
    shown = runners_up(best, scored, n)
    if len(shown) < n or not shown[-1].fits:
        return None
    return shown[-1].step_time_s


def _rank(s: Scored):
    ev = s.evaluation
    return (0, ev.step_time_s, ev.memory_bytes_per_accelerator) if ev.fits else (1, ev.memory_bytes_per_accelerator, ev.step_time_s)


def tensor_types_proven(result: LlmSearchResult) -> bool:
    """The best plan's block types are proven the fastest for its layout (``Scored.types_proven``) and
    every block and the head are at their own least exchange (``llm_types``' across-blocks
    certificate), so no per-block choice of types is faster at any stage cut either."""
    best = result.best
    return best is not None and best.types_proven and best.blocks_certified


def _better(a: Scored, b: Scored) -> bool:
    """Faster, or as fast on less memory per GPU (ties go to the layout that leaves more room)."""
    return (a.step_time_s, a.evaluation.memory_bytes_per_accelerator) < \
        (b.step_time_s, b.evaluation.memory_bytes_per_accelerator)
