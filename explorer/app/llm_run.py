"""``explore --array <GPU cluster>``: load the transformer and the cluster, check the layout asked
for against them, run the search (or score the given layout), and build the report.

Checks that need the model or the cluster (degrees against the GPU count and the layers, the
micro-batch against the batch) raise ``SpecError`` naming the option before anything is searched.
"""

from __future__ import annotations

from fractions import Fraction

from dataclasses import replace

from ..core.errors import SpecError
from ..core.names import given_as
from ..core.llm_block import megatron_types
from ..core.llm_memory import Recompute, ZeroStage
from ..core.units import memory_text
from ..frontends import load_cluster
from ..frontends.graph_build import article
from ..frontends.transformer_params import active_parameter_count
from ..frontends.transformer_problem import llm_problem
from ..frontends.transformer_source import load_transformer
from ..solvers.llm_search import search
from ..solvers.llm_space import (Degrees, LlmSpace, candidates, degree_triples, validate_degrees,
                                  validate_micro_batch)
from .llm_options import LayoutMode, LlmRequest
from .llm_report import LlmReport


def build(req: LlmRequest):
    """(problem, space, source) of a request, every option checked against the model and the
    cluster; ``source.approximations``: what the model file asks for that the model does not follow."""
    src = load_transformer(req.model, req.seq)
    cluster = with_memory(load_cluster(req.cluster, req.gpus), req.memory_GiB)
    batch = req.batch if req.batch is not None else src.batch
    if batch is None:
        raise SpecError("--batch", f"{src.source} (a Hugging Face config) gives no training batch: give {given_as('--batch')} N")
    problem = llm_problem(src.shape, cluster, batch, src.sequence, src.name, src.source)
    space = space_of(req, cluster.gpus, cluster.gpus_per_node, src.shape.layers, batch, problem.dims.head_groups,
                     problem.dims.experts)
    return problem, space, src


def with_memory(cluster, memory_GiB: float | None):
    """The cluster with each GPU's usable memory set by --memory (a headroom below the data sheet's,
    or more), unchanged without it."""
    if memory_GiB is None:
        return cluster
    if memory_GiB > cluster.gpu.memory_GiB:
        raise SpecError("--memory", f"{memory_GiB:g} GiB is more than {article(cluster.gpu.name)} {cluster.gpu.name}'s {float(cluster.gpu.memory_GiB):g} GiB")
    gpu = replace(cluster.gpu, memory_GiB=Fraction(str(memory_GiB)))
    return replace(cluster, gpu=gpu)


def space_of(req: LlmRequest, gpus: int, gpus_per_node: int, layers: int, batch: int, heads: int,
             experts: int = 0) -> LlmSpace:
    """The searched space of a request (SpecError naming --degrees or --micro-batch when it is empty);
    ``heads``: what the tensor degree must divide (``TransformerDims.head_groups``); ``experts``: a
    mixture of experts' experts a layer (0: dense)."""
    given = {"tensor": req.tensor, "pipeline": req.pipeline, "data": req.data}
    if req.layout is LayoutMode.ZERO3 and req.data is None:
        if batch % gpus:
            raise SpecError(_batch_field(req), f"{batch:,} is not a multiple of the {gpus:,} GPUs ({given_as('--gpus')}): "
                                       f"{given_as('--layout')} zero3 is "
                                       "pure data parallelism, every GPU a data-parallel rank taking whole samples")
        given["data"] = gpus
    if req.layout is LayoutMode.MEGATRON:
        given = _complete_degrees(given, gpus)
    _check_given(given, gpus, layers, batch)
    _check_expert(req.expert, experts, given["data"])
    if given["tensor"] is not None and heads % given["tensor"]:
        raise SpecError("--degrees", f"tensor={given['tensor']} does not divide {heads}, the gcd of the model's attention "
                                     "and key/value heads (Megatron splits whole heads and KV groups)")
    known = [v for v in given.values() if v is not None]
    data = given["data"]
    if data is None and len(known) == 2:
        data = gpus // (known[0] * known[1])
    if req.micro_batch is not None and data is not None:
        validate_micro_batch(req.micro_batch, batch, data)
    if experts and req.layout is not None and req.expert is None:
        req = replace(req, expert=1)  # a given layout: no expert parallelism unless expert=E (zero3: pure data parallelism)
    space = LlmSpace(tensor=given["tensor"], pipeline=given["pipeline"], data=given["data"], expert=req.expert,
                     micro_batch=req.micro_batch,
                     recomputes=tuple(Recompute) if req.recompute is None else (req.recompute,),
                     zeros=tuple(ZeroStage) if req.zero is None else (req.zero,),
                     search_types=req.layout is None, interleave=req.layout is None, virtual=req.virtual)
    if not candidates(space, gpus, gpus_per_node, layers, batch, heads, experts):
        _refuse_empty(req, space, given, gpus, gpus_per_node, layers, batch, heads, experts)
    return space


def _refuse_empty(req: LlmRequest, space: LlmSpace, given: dict, gpus: int, gpus_per_node: int, layers: int,
                  batch: int, heads: int, experts: int) -> None:
    """SpecError saying why ``space`` holds no layout: the given degree, expert, virtual or micro-batch
    that empties it, else the batch, else the degrees (or GPUs) with the rules a layout keeps."""
    known = [v for v in given.values() if v is not None]
    if req.virtual is not None and candidates(replace(space, virtual=None), gpus, gpus_per_node, layers, batch,
                                              heads, experts):
        raise SpecError("--degrees", f"virtual={req.virtual}: no layout with the other degrees given can take "
                                     f"{req.virtual} model chunks a stage (interleaving needs the pipeline degree "
                                     f"to divide the {layers} layers, virtual to divide layers / pipeline, and the "
                                     "micro-batches a step to be a multiple of the pipeline degree)")
    if req.expert is not None and candidates(replace(space, expert=None), gpus, gpus_per_node, layers, batch,
                                             heads, experts):
        raise SpecError("--degrees", f"expert={req.expert} divides the data degree of no layout of {gpus:,} GPUs "
                                     "with the other degrees given (experts are sharded inside the data-parallel group)")
    if req.micro_batch is not None and not candidates(replace(space, micro_batch=None), gpus, gpus_per_node,
                                                      layers, batch, heads, experts):
        raise SpecError("--degrees", f"{_given_text(given)}: no layout of {gpus:,} GPUs has these degrees")
    if req.micro_batch is not None:
        raise SpecError("--micro-batch", f"{req.micro_batch} divides batch / data ({batch:,} / d) for no data "
                                         f"degree d of the layouts of {gpus:,} GPUs")
    _check_batch(space, given, gpus, gpus_per_node, layers, batch, heads, _batch_field(req))
    named, what = ("--degrees", f"{_given_text(given)}: no layout of {gpus:,} GPUs has these degrees") if known else \
        ("--gpus", f"{gpus:,}: no layout of {gpus:,} GPUs and batch {batch:,} exists")
    raise SpecError(named, f"{what} (tensor at most {gpus_per_node} unless given, dividing {heads} (the heads' and "
                           f"KV heads' gcd), pipeline at most {layers} layers, data dividing the batch {batch:,})")


def _batch_field(req: LlmRequest) -> str:
    """Whose batch an error blames: --batch when given, else the model file's (not an option never given)."""
    return "--batch" if req.batch is not None else f"batch (the model's, {req.model}; {given_as('--batch')} N gives another)"


def _check_batch(space: LlmSpace, given: dict, gpus: int, gpus_per_node: int, layers: int, batch: int,
                 heads: int, field: str = "--batch") -> None:
    """SpecError naming --batch when the batch is what leaves no layout: some layouts exist but the
    batch splits over none of their data degrees (the data degree was not given)."""
    if given["data"] is not None:
        return
    fixed = ((space.tensor, "tensor"), (space.pipeline, "pipeline"))
    max_tensor = space.tensor or space.max_tensor or gpus_per_node  # as llm_space.candidates takes it
    datas = sorted({d.data for d in degree_triples(gpus, max_tensor, layers, gpus, heads)
                    if all(v in (None, getattr(d, k)) for v, k in fixed)})
    if not datas:
        return
    shown_d = ", ".join(f"{d:,}" for d in datas) if len(datas) <= 6 else \
        ", ".join(f"{d:,}" for d in datas[:4]) + f", ..., {datas[-1]:,}"
    what = "is smaller than every" if batch < datas[0] else "is a multiple of no"
    with_given = f" with {_given_text(given)}" if any(v is not None for v in given.values()) else ""
    raise SpecError(field, f"{batch:,} {what} data degree of the layouts of {gpus:,} GPUs{with_given} ({shown_d}; "
                               f"d = GPUs / (t x p), t at most {max_tensor} dividing {heads}, p at most "
                               f"{layers} layers): every data-parallel rank takes whole samples")


def _complete_degrees(given: dict, gpus: int) -> dict:
    """--layout megatron: the three degrees, the missing one (at most one: llm_options) the GPUs over
    the product of the other two."""
    missing = [k for k, v in given.items() if v is None]
    if not missing:
        return given
    known = [v for v in given.values() if v is not None]
    product = known[0] * known[1]
    if gpus % product:
        raise SpecError("--degrees", f"{_given_text(given)}: {product:,} does not divide the cluster's {gpus:,} GPUs "
                                     f"({given_as('--gpus')}), so no {missing[0]} degree completes the layout")
    return {**given, missing[0]: gpus // product}


def _given_text(given: dict) -> str:
    return ",".join(f"{k}={v}" for k, v in given.items() if v is not None) or "(none)"


def _check_expert(expert: int | None, experts: int, data: int | None) -> None:
    """``--degrees expert=E`` against the model: a mixture of experts, E dividing its experts and
    the data degree when that is given."""
    if expert is None:
        return
    if not experts:
        if expert != 1:
            raise SpecError("--degrees", f"expert={expert} on a dense model (expert parallelism needs a mixture of "
                                         "experts: experts/top_k in its shape, num_local_experts in a config.json)")
        return
    if experts % expert:
        raise SpecError("--degrees", f"expert={expert} does not divide the model's {experts} experts")
    if data is not None and data % expert:
        raise SpecError("--degrees", f"expert={expert} does not divide data={data} (experts are sharded inside the "
                                     "data-parallel group)")


def _check_given(given: dict, gpus: int, layers: int, batch: int) -> None:
    if all(v is not None for v in given.values()):
        validate_degrees(Degrees(given["tensor"], given["pipeline"], given["data"]), gpus, layers, batch)
        return
    for name, value in given.items():
        if value is not None and gpus % value:
            raise SpecError("--degrees", f"{name}={value} does not divide the cluster's {gpus:,} GPUs ({given_as('--gpus')})")
    if given["pipeline"] is not None and given["pipeline"] > layers:
        raise SpecError("--degrees", f"pipeline={given['pipeline']} is deeper than the model's {layers} transformer layers")
    if given["data"] is not None and batch % given["data"]:
        raise SpecError("--degrees", f"data={given['data']} does not divide the batch {batch:,} ({given_as('--batch')})")


def block_nodes(network, family_prefixes=("h0_", "l0_")) -> tuple[str, ...]:
    """Names of the first transformer block's nodes (without the layer prefix), in network order."""
    for prefix in family_prefixes:
        names = tuple(L.name[len(prefix):] for L in network.layers if L.name.startswith(prefix))
        if names:
            return names
    return ()


def run_llm(req: LlmRequest, progress=None, started: float | None = None) -> LlmReport:
    """The report of one LLM run (``progress(step, done, total)`` hears the search's steps); its time
    limit counts from ``started`` (``explore``: its process's start, so that start-up and loading
    count) or else from the search's start."""
    problem, space, src = build(req)
    if progress is not None:
        progress("searching layouts")
    result = search(problem, space, time_limit_s=req.time_limit_s, progress=progress, started=started)
    return report_of(req, problem, src, result)


def report_of(req: LlmRequest, problem, src, result) -> LlmReport:
    """The report of a search's result: the planner's, and the header of ``explore check``'s."""
    approximations = src.approximations
    c = problem.cluster
    mode = "search" if req.layout is None else req.layout.value
    shown = result.best or (result.runners_up[0] if result.runners_up else None)
    eff = shown.evaluation.efficiency if shown is not None else None
    notes = approximations + (tuple(shown.evaluation.notes) if shown is not None else ()) + activations_note(result)
    return LlmReport(problem.network.name, c.name, c.gpu.name, c.gpus, c.gpus_per_node, problem.dims.batch,
                     problem.dims.seq, problem.dims.layers, mode, result, block_nodes(problem.network),
                     tuple(str(t) for t in megatron_types(problem.network, problem.dims.layers)), eff, notes,
                     approximations, problem.dims.experts, problem.dims.top_k, problem.params.total,
                     active_parameter_count(src.shape))


def activations_note(result) -> tuple[str, ...]:
    """No layout fits, and the least memory seen is mostly stored activations (a long ``--seq``):
    a note that splitting the sequence across GPUs, which would cut them, is not modelled."""
    if result.best is not None or not result.evaluated:
        return ()
    least = min(result.evaluated, key=lambda s: s.evaluation.memory_bytes_per_accelerator).evaluation
    m = least.memory
    if m.activations <= m.model_states:
        return ()
    return (f"activations dominate the least memory seen ({memory_text(m.activations)} of its "
            f"{memory_text(least.memory_bytes_per_accelerator)} per GPU): context parallelism (the sequence split across "
            "GPUs, as ring attention does) would cut them and is not modelled; sequence parallelism within "
            "the tensor group is (docs/limits.md)",)


def run_llm_check(req: LlmRequest, progress=None, started: float | None = None):
    """``explore check`` on a cluster: the search against scoring every layout of its space (the
    limit counted from ``started``, as ``run_llm``'s)."""
    from .llm_check import check_llm

    problem, space, src = build(req)
    checked = check_llm(problem, space, progress, req.time_limit_s, started)
    return replace(checked, approximations=src.approximations, report=report_of(req, problem, src, checked.search))
