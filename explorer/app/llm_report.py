"""The LLM planner's report: a table for people and one JSON object (``--format json``).

Rendering only formats: every figure is the evaluator's (``core.llm_step.LlmEvaluation``) or the
search's (``solvers.llm_search.LlmSearchResult``). JSON numbers are exact (``exact_decimal``: an
int or a float when the float is exact, as ``exact_number`` in the rest of ``explore``; else the
exact decimal string when the expansion ends, else "p/q"); the table rounds for reading.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from ..core.llm_calibration import TABLE5, calibration_for, range_notes, uncalibrated_note
from ..core.names import Frontend, given_as, named_for, running
from ..core.solution import Status
from ..core.units import GiB, count_words, decimal_text, memory_text, plural, safe_float
from ..solvers.llm_search import LlmSearchResult, Scored, tensor_types_proven
from .figures_text import exact_number, fmt_seconds

SCHEMA_VERSION = 1
HEADROOM_NOTE_BYTES = 2 * GiB  # a plan that fits with less to spare says that no framework reserve is taken
BUBBLE_NOTE = Fraction(1, 10)  # a plain-1F1B plan idling this much of its step says whether interleaving was possible
MAX_STAGE_LINES = 6  # more stages than this: runs of stages with as many layers are said together


@dataclass(frozen=True, slots=True)
class LlmReport:
    """One LLM run: what was asked, what the search found."""

    model: str
    cluster: str
    gpu: str
    gpus: int
    gpus_per_node: int
    batch: int
    sequence: int
    layers: int
    mode: str  # "search", "megatron" or "zero3"
    result: LlmSearchResult
    block_nodes: tuple[str, ...]  # one transformer block's nodes (the per-layer types' columns)
    megatron_types: tuple[str, ...]  # Megatron's types of those nodes (what tensor_types None means)
    efficiency: Fraction  # the calibrated compute efficiency of the GPU kind
    notes: tuple[str, ...] = ()
    approximations: tuple[str, ...] = ()  # of the model file (also among the notes; the CLI says them on stderr)
    experts: int = 0  # a mixture of experts: experts a layer (0: dense; then nothing says expert parallelism)
    top_k: int = 0
    parameters: int = 0  # every parameter of the model (0: not given)
    active_parameters: int = 0  # those one token uses (a mixture of experts: its top_k routed experts'; else all)
    named: Frontend = field(default_factory=running)  # the front end that asked: its notes name its inputs

    @property
    def ok(self) -> bool:
        return self.result.best is not None

    @property
    def all_notes(self) -> tuple[str, ...]:
        """Every note of the report, the one source of the JSON's ``notes`` and the table's
        ``note:`` lines: the model file's and the evaluator's, then the plan's headroom."""
        best = self.result.best
        if best is None:
            return self.notes
        with named_for(self.named):
            return (self.notes + headroom_notes(self.result.capacity_bytes - best.evaluation.memory_bytes_per_accelerator,
                                                 self.result.capacity_bytes)
                    + bubble_notes(self) + stream_notes(self))


def exact_decimal(x: Fraction | int | None) -> int | float | str | None:
    """An exact JSON value: ``exact_number``'s int or exact float (or None); else the decimal string
    when the fraction's expansion ends ("4.90371083904"), else "p/q"."""
    out = exact_number(x)
    if not isinstance(out, str):
        return out
    text = decimal_text(x)
    return out if text is None else text


def pct(x: Fraction) -> str:
    return f"{safe_float(x) * 100:.1f}%"


def stage_spans(stage_layers: tuple[int, ...]) -> list[tuple[int, int, int]]:
    """(stage, first layer, last layer + 1) per stage."""
    out, first = [], 0
    for i, n in enumerate(stage_layers):
        out.append((i, first, first + n))
        first += n
    return out


def _layers_text(a: int, b: int) -> str:
    if b - a == 0:
        return "no layers"
    return f"layer {a}" if b - a == 1 else f"layers {a}-{b - 1}"


def stage_lines(stage_layers: tuple[int, ...]) -> list[str]:
    """"stage 0: embedding + layers 0-11", ...; long pipelines: runs of equal stages on one line."""
    spans = stage_spans(stage_layers)
    last = len(spans) - 1

    def one(i: int, a: int, b: int) -> str:
        parts = (["embedding"] if i == 0 else []) + ([_layers_text(a, b)] if b > a or i not in (0, last) else [])
        parts += ["final norm + head"] if i == last else []
        return f"stage {i}: " + " + ".join(parts)

    if len(spans) <= MAX_STAGE_LINES:
        return [one(*s) for s in spans]
    lines = [one(*spans[0])]
    mid = spans[1:last]
    j = 0
    while j < len(mid):
        k = j
        while k + 1 < len(mid) and mid[k + 1][2] - mid[k + 1][1] == mid[j][2] - mid[j][1]:
            k += 1
        n = mid[j][2] - mid[j][1]
        if k == j:
            lines.append(one(*mid[j]))
        else:
            lines.append(f"stages {mid[j][0]}-{mid[k][0]}: {n} layer{'s' if n != 1 else ''} each "
                         f"({_layers_text(mid[j][1], mid[k][2])})")
        j = k + 1
    lines.append(one(*spans[last]))
    return lines


def interleaved_lines(layers: int, pipeline: int, virtual: int) -> list[str]:
    """Megatron's interleaved schedule: stage s holds chunks s, s + p, ..., of L / (p v) layers each."""
    c = layers // (pipeline * virtual)

    def one(s: int) -> str:
        chunks = ", ".join(_layers_text((s + pipeline * j) * c, (s + pipeline * j + 1) * c).replace("layers ", "")
                           .replace("layer ", "") for j in range(virtual))
        head = "embedding + " if s == 0 else ""
        tail = " + final norm + head" if s == pipeline - 1 else ""
        return f"stage {s}: {head}layers {chunks}{tail}"

    if pipeline <= MAX_STAGE_LINES:
        return [one(s) for s in range(pipeline)]
    return [one(0), f"stages 1-{pipeline - 2}: {virtual} chunks of {c} layer{'s' if c != 1 else ''} each "
                    f"(stage s: layers from s x {c}, every {pipeline * c})", one(pipeline - 1)]


def schedule_words(c) -> str:
    if c.degrees.pipeline == 1:
        return "no pipeline"
    return "1F1B" if c.virtual == 1 else f"interleaved 1F1B, {c.virtual} chunks a stage"


def _plan_words(s: Scored, batch: int, moe: bool = False) -> str:
    c = s.candidate
    deg = c.degrees
    sp = s.layout.parallelism.sequence_parallel
    pipe = "p=1 (no pipeline)" if deg.pipeline == 1 else f"p={deg.pipeline} (pipeline, {schedule_words(c)})"
    ep = "" if not moe else ("e=1 (no expert parallelism: every data rank holds every expert), " if deg.expert == 1
                             else f"e={deg.expert} (expert parallel, EP: experts sharded {deg.expert} ways inside d), ")
    return (f"t={deg.tensor} (tensor), {pipe}, d={deg.data} (data), {ep}"
            f"micro-batch size {c.micro_batch}, {plural(c.microbatches(batch), 'micro-batch', 'micro-batches')} per "
            f"pipeline per step, recompute {c.recompute.value}, "
            f"ZeRO stage {c.zero.value}, sequence parallel {'on' if sp and deg.tensor > 1 else 'off'}")


def _types(s: Scored, report: LlmReport) -> tuple[str, ...]:
    tt = s.layout.tensor_types
    return report.megatron_types if tt is None else tuple(str(t) for t in tt)


def _types_origin(report: LlmReport, best: Scored) -> str:
    if best.candidate.degrees.tensor == 1:
        return "no tensor parallelism: the types split nothing"
    mega_name = "Megatron's"  # LLaMA's q, k, v (gate, up) share their exchanges as fused (core/siblings.py)
    if report.mode != "search" or not report.result.types_searched:
        return mega_name
    if report.experts:  # llm_search: the block types are not searched on a mixture of experts
        return f"{mega_name}: a mixture of experts' block is not searched (its nodes hold the routed work, not the experts' weights)"
    mega = "Megatron's pattern" if best.layout.tensor_types is None else "not Megatron's pattern"
    if tensor_types_proven(report.result):
        return f"searched, proven fastest: {mega}"
    return f"searched, not proven: {mega}"


def types_proof(report: LlmReport) -> tuple[bool, str | None]:
    """(the plan's tensor-level block types are proven the fastest for its layout, why not when they
    are not): the JSON's ``tensor_types_proven`` and ``tensor_types_reason``, the status line's words."""
    r = report.result
    best = r.best
    if best is None:
        return False, "no plan fits" if r.status is Status.INFEASIBLE else no_plan_reason(report)
    if best.candidate.degrees.tensor == 1:
        return True, None  # the types split nothing
    if report.experts:
        return False, ("a mixture of experts' block types are Megatron's, not searched (its nodes hold the "
                       "routed work, not the experts' weights)")
    if report.mode != "search" or not r.types_searched:
        return False, "a given layout: Megatron's block types, not searched"
    if tensor_types_proven(r):
        return True, None
    if best.types_proven:
        return False, ("proven with the same types in every block only, not across blocks: "
                       + (best.certificate_gap or "the across-blocks certificate does not hold"))
    return False, "the plan's block types bound is below its step: the types were not settled (see the status)"


# what "proven" is over: the step model's block, whose nodes are the matmuls, the attention core, the joins
UNCHARGED = "norms, activation functions, rotary embeddings, dropout and biases cost nothing in it"


def _types_words(report: LlmReport) -> str:
    if report.experts:
        return "its tensor-level block types: Megatron's"
    proven, why = types_proof(report)
    return (f"its tensor-level block types: proven under the step model ({UNCHARGED})" if proven
            else f"its tensor-level block types: not proven ({why})")


def stream_notes(report: LlmReport) -> tuple[str, ...]:
    """A note when the plan's types split the residual stream by channel (a residual add, type I in
    Megatron's pattern, at II or III with t > 1): each norm then needs every token's statistics from
    the tensor ranks, an exchange the step model does not charge (its block has no norm nodes)."""
    best = report.result.best
    t = best.candidate.degrees.tensor
    if t == 1:
        return ()
    split = [f"{n} {x}" for n, m, x in zip(report.block_nodes, report.megatron_types, _types(best, report))
             if m == "I" and x != "I"]
    if not split:
        return ()
    return (f"the block types split the residual stream by channel ({', '.join(split)}): each layer norm then "
            f"needs every token's statistics from the {t} tensor ranks, an all-reduce the step model does not charge "
            "(it has no norm nodes); Megatron's pattern, the stream split by token, needs none",)


def _wall(r) -> str:
    """The run's wall time: since the process's start when the search was given it (``explore``: what
    ``--time-limit`` counts, start-up and loading included), with the search's own; else the search's."""
    if r.total_wall_s is None:
        return f"wall {r.wall_s:.2f} s"
    return f"wall {r.total_wall_s:.2f} s (search {r.wall_s:.2f} s)"


def _status_line(report: LlmReport) -> str:
    r = report.result
    counts = (f"{plural(r.candidates, 'layout')}: {r.scored:,} scored, {r.pruned_time:,} pruned by the time bound, "
              f"{r.pruned_memory:,} by the memory bound")
    if r.status is Status.OPTIMAL and report.mode != "search":
        return (f"status: optimal over the given layout's {plural(r.candidates, 'variant')} "
                f"(micro-batch, recompute, ZeRO stage as asked; {r.scored:,} scored), {_wall(r)}")
    fixed = _with_fixed(report, given=True)
    if r.status is Status.OPTIMAL:
        return (f"status: optimal over the layouts{fixed} (proven over {counts}), {_wall(r)}; "
                f"{_types_words(report)}")
    if r.status is Status.FEASIBLE:
        left = (f"{r.unresolved:,} left at the time limit" if r.unresolved
                 else "the block types of a layout bounded, not settled")
        return (f"status: feasible{fixed}, bound {fmt_seconds(r.bound_s)}, gap {pct(r.gap)} ({counts}, {left}), "
                f"{_wall(r)}")
    if r.status is Status.INFEASIBLE:
        least = "" if r.smallest_memory_bytes is None else f"; the least seen needs {memory_text(r.smallest_memory_bytes)}"
        floor = "" if r.memory_bound_bytes is None else f"; every layout needs at least {memory_text(r.memory_bound_bytes)}"
        return (f"status: infeasible{fixed}, no layout fits in {memory_text(r.capacity_bytes)} per GPU{least}{floor} "
                f"({counts}), {_wall(r)}")
    left = f", {r.unresolved:,} left at the time limit" if r.unresolved else ""
    return f"status: {r.status.value}{fixed}, {no_plan_reason(report)} ({counts}{left}), {_wall(r)}"


def no_plan_reason(report: LlmReport) -> str | None:
    """Why there is no plan (None: there is one): nothing fits (proven: status infeasible), or the
    time limit struck before a layout that fits was found (status unknown: the layouts left were
    neither scored nor pruned, so nothing is proven about them). The CLI's stderr line, the JSON's
    ``reason`` and the status line's words."""
    r = report.result
    if r.best is not None:
        return None
    if r.status is Status.INFEASIBLE:
        return "no layout fits in the GPU's memory"
    if r.unresolved:
        limit = "" if r.time_limit_s is None else f" ({r.time_limit_s:g} s)"
        return (f"no plan within the time limit{limit}: {plural(r.unresolved, 'layout')} "
                "unresolved")
    return "no plan found"


def choices(report: LlmReport) -> list[tuple[str, str, Any, str, bool]]:
    """The choices of the space, in order: (name, JSON key, the fixed value or None when searched,
    the fixed value's words, implied). With two of t, p, d fixed the third is implied (the GPUs
    over their product): not searched, not given either."""
    sp = report.result.space
    rec = sp.recomputes[0].value if len(sp.recomputes) == 1 else None
    zero = sp.zeros[0].value if len(sp.zeros) == 1 else None
    v = sp.virtual if sp.virtual is not None else (None if sp.interleave else 1)
    rows = [(n, k, x, f"{n}={x}", False) for n, k, x in (("t", "tensor", sp.tensor), ("p", "pipeline", sp.pipeline),
                                                          ("d", "data", sp.data))]
    given = [x for _n, _k, x, _w, _i in rows if x is not None]
    if len(given) == 2:
        rows = [r if r[2] is not None else (r[0], r[1], report.gpus // (given[0] * given[1]),
                                            f"{r[0]}={report.gpus // (given[0] * given[1])} (implied)", True)
                for r in rows]
    rows += [("e", "expert", sp.expert, f"e={sp.expert}", False)] if report.experts else []
    return rows + [("micro-batch", "micro_batch", sp.micro_batch, f"micro-batch {sp.micro_batch}", False),
                   ("schedule", "virtual_stages", v, f"v={v} (plain 1F1B)" if v == 1 else f"v={v} (interleaved 1F1B)", False),
                   ("recompute", "recompute", rec, f"recompute {rec}", False),
                   ("ZeRO stage", "zero", zero, f"ZeRO {zero}", False)]


def fixed_json(report: LlmReport) -> dict[str, Any]:
    """The JSON's ``inputs.fixed``: each choice the request fixed (--degrees, --micro-batch,
    --recompute, --zero, or the --layout given), by the plan's JSON key; empty: all searched."""
    return {k: x for _n, k, x, _w, implied in choices(report) if x is not None and not implied}


def _with_fixed(report: LlmReport, skip: tuple[str, ...] = (), given: bool = False) -> str:
    """" with t=4, ZeRO 3 fixed" (a search with choices fixed; ``given``: a given layout's too, its
    status line: "infeasible with t=8, p=1, d=8, recompute none fixed"), else empty."""
    if report.mode != "search" and not given:
        return ""
    words = [w for n, _k, x, w, _i in choices(report) if x is not None and n not in skip]
    return f" with {', '.join(words)} fixed" if words else ""


def _searched(report: LlmReport) -> list[str]:
    return [n for n, _k, x, _w, _i in choices(report) if x is None]


def _micro_batch_words(space) -> str:
    """What the header says of the micro-batch: the given one, or the searched range."""
    if space.micro_batch is not None:
        return f"micro-batch {space.micro_batch} (given)"
    return f"micro-batches up to {space.max_micro_batch}"


def headroom_notes(headroom: Fraction, capacity: Fraction) -> tuple[str, ...]:
    """A note when a plan fits with little to spare: the memory model reserves nothing for the
    framework; how to keep headroom (a usable memory 5% below ``capacity`` bytes, as a value the
    user can pass; the default rule, the fastest plan that fits, is unchanged)."""
    if headroom >= HEADROOM_NOTE_BYTES:
        return ()
    cli = running() is Frontend.CLI
    less = f"{float(capacity * Fraction(95, 100) / GiB):.4g}"
    return (f"{memory_text(headroom)} to spare: the memory model takes no framework reserve (CUDA context, NCCL "
            f"buffers, allocator fragmentation) out of the usable memory ({given_as('--memory')}"
            f"{' GiB' if cli else ''} sets it); to keep headroom give less, e.g. {given_as('--memory')}"
            f"{' ' if cli else '='}{less} (5% kept), and the search picks the fastest plan that fits it",)


def bubble_notes(report: LlmReport) -> tuple[str, ...]:
    """A note when the plan idles a large part of its step in plain 1F1B's fill and drain: whether
    Megatron's interleaved schedule was possible for its degrees and micro-batch, and why not."""
    best = report.result.best
    c = best.candidate
    p = c.degrees.pipeline
    if c.virtual > 1 or p == 1 or best.evaluation.bubble_fraction < BUBBLE_NOTE:
        return ()
    m = c.microbatches(report.batch)
    why = [f"p={p} does not divide the {report.layers} layers"] if report.layers % p else []
    why += [f"the {m:,} micro-batches a step are not a multiple of p={p}"] if m % p else []
    head = f"pipeline bubble {pct(best.evaluation.bubble_fraction)} under plain 1F1B"
    if why:
        return (f"{head}: Megatron's interleaved schedule was impossible for this layout ({'; '.join(why)}; it needs "
                "the layers in p x v equal chunks and the micro-batches a multiple of p)",)
    if report.mode != "search":
        return (f"{head} as given: {given_as('--degrees')} virtual=V would interleave it (V dividing {report.layers // p}, "
                "the layers a stage)",)
    return (f"{head}: interleaving these degrees was possible and searched, and is not faster (or does not fit)",)


def _parameter_words(report: LlmReport) -> str:
    """", 175.0B parameters" (a mixture of experts: ", 46.7B parameters, 12.9B active")."""
    if not report.parameters:
        return ""
    active = f", {count_words(report.active_parameters)} active" if report.experts else ""
    return f", {count_words(report.parameters)} parameters{active}"


def header_line(report: LlmReport) -> str:
    """The report's first line (the planner's and ``explore check``'s): model, cluster, shape, parameters."""
    moe = f", {report.experts} experts (top-{report.top_k}, routing assumed balanced)" if report.experts else ""
    return (f"{report.model} on {report.cluster} ({report.gpus:,} x {report.gpu}, {report.gpus_per_node} per node), "
            f"batch {report.batch:,}, sequence {report.sequence:,}, {report.layers:,} layers"
            f"{_parameter_words(report)}{moe}")


def inputs_json(report: LlmReport) -> dict[str, Any]:
    """The JSON's ``inputs`` (the planner's and ``explore check``'s)."""
    space = report.result.space
    return {"model": report.model, "cluster": report.cluster, "gpu": report.gpu, "gpus": report.gpus,
            "gpus_per_node": report.gpus_per_node, "batch": report.batch, "sequence": report.sequence,
            "layers": report.layers, "mode": report.mode, "max_micro_batch": space.max_micro_batch,
            "micro_batch": space.micro_batch, "fixed": fixed_json(report), "efficiency": exact_decimal(report.efficiency),
            "parameters": report.parameters, "active_parameters": report.active_parameters,
            **({"experts": report.experts, "top_k": report.top_k} if report.experts else {})}


def search_words(report: LlmReport) -> str:
    """The table's second line for a search: what is searched, then what was fixed ("search over p,
    d, micro-batch, recompute, stage cuts and tensor-level types with t=4, ZeRO 3 fixed"); a given
    micro-batch is said after it ("micro-batch 2 (given)")."""
    short = {"e": "e (expert)", "ZeRO stage": "ZeRO"}
    names = [short.get(n, n) for n in _searched(report) if n != "schedule"]
    if report.experts:  # the expert degree is searched, the block's types are not
        head = " and ".join(x for x in (", ".join(names), "stage cuts (tensor-level types: Megatron's)") if x)
    else:
        head = ", ".join(names + ["stage cuts and tensor-level types"])
    return f"search over {head}{_with_fixed(report, skip=('micro-batch',))}"


def render_llm(report: LlmReport) -> str:
    r = report.result
    what = {"search": search_words(report),
            "megatron": "evaluate Megatron-LM's layout (micro-batch, recompute and ZeRO searched unless given)",
            "zero3": "evaluate ZeRO-3 data parallelism (micro-batch and recompute searched unless given)"}[report.mode]
    lines = [header_line(report),
             f"{what}; {_micro_batch_words(r.space)}",
             _status_line(report)]
    headroom = report.all_notes[len(report.notes):]  # the plan's own notes: said under the memory line
    lines += [f"note: {n}" for n in report.notes]
    if r.best is None:
        return "\n".join(lines) + "\n"
    best, ev = r.best, r.best.evaluation
    a2a = f" (of it expert all-to-all {fmt_seconds(ev.expert_comm_s)})" if report.experts else ""
    lines += ["", "plan: " + _plan_words(best, report.batch, bool(report.experts)),
              f"step time {fmt_seconds(ev.step_time_s)}, {safe_float(ev.tflops_per_gpu):.1f} TFLOP/s per GPU "
              f"(FLOPs executed, recompute included), {safe_float(ev.model_tflops_per_gpu):.1f} model TFLOP/s per GPU "
              f"(no recompute), MFU {pct(ev.mfu)} (model), pipeline bubble {pct(ev.bubble_fraction)}",
              f"  compute {fmt_seconds(ev.compute_s)}, tensor comm {fmt_seconds(ev.tensor_comm_s)}{a2a}, data comm "
              f"{fmt_seconds(ev.data_comm_s)}{' (not overlapped)' if ev.data_comm_s else ''}, pipeline comm {fmt_seconds(ev.pipeline_comm_s)}",
              f"memory per GPU {memory_text(ev.memory_bytes_per_accelerator)} of {memory_text(r.capacity_bytes)}",
              *(f"note: {n}" for n in headroom),
              "", "stages:"]
    if best.candidate.virtual > 1:
        lines += ["  " + x for x in interleaved_lines(report.layers, best.candidate.degrees.pipeline,
                                                      best.candidate.virtual)]
    else:
        lines += ["  " + x for x in stage_lines(tuple(ev.stage_layers))]
    types = _types(best, report)
    lines += ["", f"tensor-level types of every block ({_types_origin(report, best)}): "
              + ", ".join(f"{n} {t}" for n, t in zip(report.block_nodes, types))]
    lines += ["", *render_runners_up(report)]
    return "\n".join(lines) + "\n"


def why_loses(s: Scored, best: Scored, capacity: Fraction) -> str:
    ev = s.evaluation
    if not ev.fits:
        return f"needs {memory_text(ev.memory_bytes_per_accelerator)} > {memory_text(capacity)}"
    slower = (ev.step_time_s - best.step_time_s) / best.step_time_s
    return "ties" if slower == 0 else f"{pct(slower)} slower"


def render_runners_up(report: LlmReport) -> list[str]:
    r = report.result
    if report.mode != "search":
        with named_for(report.named):
            return [f"why not the others: the layout was given (without {given_as('--layout')} the search compares them)"]
    if not r.runners_up:
        return ["why not the others: no other layout was scored"]
    e = ("e",) if report.experts else ()  # a mixture of experts: the expert degree too
    rows = [("t", "p", "d", *e, "b", "v", "recompute", "ZeRO", "step time", "memory", "why not")]
    for s in r.runners_up:
        c, ev = s.candidate, s.evaluation
        ce = (str(c.degrees.expert),) if e else ()
        rows.append((str(c.degrees.tensor), str(c.degrees.pipeline), str(c.degrees.data), *ce, str(c.micro_batch),
                     str(c.virtual), c.recompute.value, str(c.zero.value), fmt_seconds(ev.step_time_s),
                     memory_text(ev.memory_bytes_per_accelerator), why_loses(s, r.best, r.capacity_bytes)))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    out = [f"why not the others (the best scored layout of each other t, p{', e' if e else ''}; "
           "b: micro-batch size, v: model chunks per pipeline stage):"]
    for row in rows:
        out.append("  " + "  ".join(cell.rjust(w) if i < 5 + len(e) else cell.ljust(w)
                                    for i, (cell, w) in enumerate(zip(row, widths))).rstrip())
    return out


def _scored_json(s: Scored, report: LlmReport) -> dict[str, Any]:
    c, ev = s.candidate, s.evaluation
    exact = dict(step_time_s=ev.step_time_s, tflops_per_gpu=ev.tflops_per_gpu,
                 model_tflops_per_gpu=ev.model_tflops_per_gpu, mfu=ev.mfu,
                 bubble_fraction=ev.bubble_fraction, memory_bytes_per_accelerator=ev.memory_bytes_per_accelerator)
    return {
        "degrees": {"tensor": c.degrees.tensor, "pipeline": c.degrees.pipeline, "data": c.degrees.data,
                    **({"expert": c.degrees.expert} if report.experts else {})},
        "micro_batch": c.micro_batch, "virtual_stages": c.virtual, "recompute": c.recompute.value, "zero": c.zero.value,
        "sequence_parallel": s.layout.parallelism.sequence_parallel and c.degrees.tensor > 1,  # as the table says
        # ok: the layout keeps to the GPU's memory, as ``ok`` in explore's other reports; fits: its alias (kept)
        **exact_values(exact), "ok": ev.fits, "fits": ev.fits, "approx": approx(**exact),
    }


def exact_values(exact: dict[str, Fraction | int | None]) -> dict[str, int | float | str | None]:
    """The exact JSON values of ``exact``; ``approx(**exact)`` gives their floats (one dict, both)."""
    return {k: exact_decimal(v) for k, v in exact.items()}


def approx(**exact) -> dict[str, float | None]:
    """The JSON's ``approx`` block: a float beside each exact value of its object (the exact strings
    such as "46775953576033/2355615234375" stay the values; these are for scripts)."""
    return {k: None if v is None else safe_float(v) for k, v in exact.items()}


def stages_json(stage_layers: tuple[int, ...], virtual: int) -> list[dict[str, Any]]:
    """Per stage its layers; interleaved (v > 1): its v chunks (stage s holds chunks s, s + p, ...)."""
    if virtual == 1:
        return [{"stage": i, "first_layer": a, "layers": b - a} for i, a, b in stage_spans(stage_layers)]
    p, c = len(stage_layers), stage_layers[0] // virtual
    return [{"stage": s, "layers": n, "chunks": [{"first_layer": (s + p * j) * c, "layers": c} for j in range(virtual)]}
            for s, n in enumerate(stage_layers)]


def given_words(report: LlmReport) -> str:
    """What a given layout's ``optimal`` covers: the degrees and schedule given, what of the rest was
    searched (the block types are Megatron's, the stage cut the step model's)."""
    space, best = report.result.space, report.result.best
    c = best.candidate if best is not None else None
    deg = str(c.degrees) if c is not None else ", ".join(
        f"{k}={v}" for k, v in (("t", space.tensor), ("p", space.pipeline), ("d", space.data)) if v is not None)
    sched = "plain 1F1B" if space.virtual in (None, 1) else f"interleaved 1F1B, {space.virtual} chunks a stage"
    free = [name for name, fixed in (("micro-batch", space.micro_batch is not None),
                                      ("recompute", len(space.recomputes) == 1), ("ZeRO stage", len(space.zeros) == 1))
            if not fixed]
    over = f"searched: {', '.join(free)}" if free else "nothing searched"
    return (f"the given layout {deg} ({sched}, Megatron's block types, the step model's stage cut or the fastest "
            f"that fits); {over}")


def optimal_over(report: LlmReport) -> str:
    """What ``optimal`` covers, precisely: the searched space, or the given layout and what of it
    was searched."""
    r = report.result
    if report.mode != "search":
        return given_words(report)
    types = (", tensor-level block types (the same types repeated in every block; tensor_types_proven says whether "
             "the plan's also beat different types per block)") if r.types_searched and not report.experts else \
        ", tensor-level block types fixed to Megatron's"
    over = ", ".join(_searched(report) + ["stage cut (the step model's min-max cut, or the fastest that fits)"])
    return f"layouts{_with_fixed(report)}: {over}{types}"


def calibration_json(report: LlmReport) -> dict[str, Any]:
    """The JSON's ``calibration``: whether the GPU's efficiency is calibrated (its exact name), on
    what, the model sizes of the rows fitted, and whether this prediction is inside them: ``in_range``
    when the GPU has its own row and the model is a dense one within the rows' parameter counts;
    ``outside`` says each reason it is not (docs/limits.md)."""
    cal = calibration_for(report.gpu)
    used = cal or TABLE5  # an uncalibrated GPU borrows the A100's
    outside = (() if cal is not None else (uncalibrated_note(report.gpu),)) + \
        (range_notes(report.gpu, report.parameters, report.experts) if report.parameters else ())
    return {"calibrated": cal is not None, "efficiency": exact_decimal(used.efficiency),
            "source": used.source, "gpu": used.gpu,
            "parameters_range": [used.min_parameters, used.max_parameters],
            "in_range": cal is not None and not outside, "outside": list(outside)}


def llm_json(report: LlmReport) -> dict[str, Any]:
    r = report.result
    out: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "inputs": inputs_json(report),
        "status": r.status.value, "gap": exact_decimal(r.gap),
        # what "optimal" covers: every (t, p, d, micro-batch, schedule, recompute, ZeRO) scored or pruned by a
        # proven bound, each with its fastest block types (llm_search.Scored.types_bound); tensor_types_proven:
        # the plan's types proven and every block at its own least exchange (llm_search.tensor_types_proven)
        "optimal_over": optimal_over(report),
        "tensor_types_proven": types_proof(report)[0],
        "tensor_types_reason": types_proof(report)[1],
        "bound": exact_decimal(r.bound_s),
        "calibration": calibration_json(report),
        "memory_capacity_bytes": exact_decimal(r.capacity_bytes),
        "search": {"candidates": r.candidates, "scored": r.scored, "pruned_time": r.pruned_time,
                   "pruned_memory": r.pruned_memory, "unresolved": r.unresolved, "wall_s": round(r.wall_s, 3),
                   "total_wall_s": None if r.total_wall_s is None else round(r.total_wall_s, 3),
                   "time_limit_s": r.time_limit_s},
        "notes": list(report.all_notes),
    }
    out.update(_plan_json(report) if r.best is not None else _no_plan_json(report))
    # why there is no plan, the least memory scored (no plan) and every layout's floor: null where they do not apply
    missing = dict(smallest_memory_bytes=r.smallest_memory_bytes, memory_bound_bytes=r.memory_bound_bytes)
    out.update(reason=no_plan_reason(report), **exact_values(missing))
    top = approx(gap=r.gap, bound=r.bound_s, memory_capacity_bytes=r.capacity_bytes, **missing)
    out["approx"] = {**out.pop("approx"), **top}
    return out


def _step_parts(report: LlmReport) -> tuple[str, ...]:
    """The JSON keys of the step's parts (a mixture of experts' expert exchange too)."""
    return ("compute_s", "tensor_comm_s", "data_comm_s", "pipeline_comm_s") + (
        ("expert_comm_s",) if report.experts else ())


def _plan_json(report: LlmReport) -> dict[str, Any]:
    """The plan's keys of ``llm_json`` (``_no_plan_json`` has the same keys)."""
    r = report.result
    best, ev = r.best, r.best.evaluation
    out = _scored_json(best, report)
    out["data_comm_overlapped"] = False  # the step model adds the data level after the compute (Megatron SC21)
    times = {k: getattr(ev, k) for k in _step_parts(report)}
    out.update({
        **exact_values(times),
        "stages": stages_json(tuple(ev.stage_layers), best.candidate.virtual),
        "tensor_types": dict(zip(report.block_nodes, _types(best, report))),
        "tensor_types_origin": _types_origin(report, best),  # the table's words (e.g. "searched, proven fastest: ...")
        "runners_up": [{**_scored_json(s, report), "why_not": why_loses(s, best, r.capacity_bytes)}
                       for s in r.runners_up],
    })
    out["approx"] = {**out["approx"], **approx(**times)}
    return out


def _no_plan_json(report: LlmReport) -> dict[str, Any]:
    """``_plan_json``'s keys without a plan (nothing fits, or the time limit struck first): null
    values, ``ok`` and its alias ``fits`` false, no runners-up; a script reads the same keys
    whatever the status."""
    exact = dict.fromkeys(("step_time_s", "tflops_per_gpu", "model_tflops_per_gpu", "mfu", "bubble_fraction",
                           "memory_bytes_per_accelerator"))
    times = dict.fromkeys(_step_parts(report))
    return {"degrees": None, "micro_batch": None, "virtual_stages": None, "recompute": None, "zero": None,
            "sequence_parallel": None, **exact, "ok": False, "fits": False, "approx": approx(**exact, **times),
            "data_comm_overlapped": False, **times, "stages": None, "tensor_types": None, "tensor_types_origin": None,
            "runners_up": []}
