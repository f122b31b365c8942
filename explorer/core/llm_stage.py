"""The pieces of the LLM step model: what each pipeline stage costs per micro-batch, the exact
min-max stage cut and the data-level traffic (``core.llm_step`` assembles them with the memory
of ``core.llm_stage_memory``; ``core.llm_calibration`` reads ``step_parts``).

Time of stage s for one micro-batch (seconds): ``a_s x + k_s`` where ``x = 1/efficiency``:
``a_s`` is its FLOPs (training + recompute forward) / (t x peak), ``k_s`` its tensor-level
exchanges (``llm_block.tensor_amounts``, reduce-scattered under sequence parallelism, 2-byte
elements at ``cluster.bandwidth_Bps(t)``; under
full recomputation the forward's exchanges once more) plus its point-to-point sends. Step = (m + (p - 1)/v) max_s (a_s x + k_s) + the slowest stage's
data-level time (not overlapped with compute).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from fractions import Fraction

from .comm import training_flops
from .llm_experts import alltoall_seconds, check_experts, expert_params, routed_tensor_elements, router_layer
from .llm_block import (TensorAmounts, block_parts, edge_types, forward_flops, megatron_types, tensor_amounts,
                        tied_head)
from .llm_memory import Recompute, ZeroStage
from .llm_problem import LlmLayout, LlmProblem
from .network import Layer, LayerKind
from .partition import PartitionType
from .units import TERA

BYTES = 2  # bf16/fp16 activations, gradients and weights on the wire


@dataclass(frozen=True, slots=True)
class PartCost:
    """One micro-batch of one part (a block, the embedding, the head): FLOPs (training +
    recompute forward), tensor-level seconds; ``weights_s`` per step (type I weight-gradient
    exchanges at the tensor level, which do not scale with the micro-batch)."""

    flops: int
    tensor_s: Fraction
    weights_s: Fraction


@dataclass(frozen=True, slots=True)
class StepParts:
    """Everything the step time needs: per stage ``a`` (seconds at full efficiency), ``tensor``
    and ``p2p`` (seconds that do not scale with it), ``data`` (per step), and the whole-step terms."""

    stage_layers: tuple[int, ...]
    a: tuple[Fraction, ...]
    tensor: tuple[Fraction, ...]
    p2p: tuple[Fraction, ...]
    data: tuple[Fraction, ...]
    microbatches: int
    fill: Fraction  # (p - 1)/v: the pipeline's fill and drain, in stage times
    model_flops: int  # the step's model FLOPs (no recompute)
    recompute_flops: int  # the step's recompute forward FLOPs
    tied_head: bool

    def stage_times(self, x: Fraction) -> tuple[Fraction, ...]:
        """Per stage, one micro-batch, at x = 1/efficiency: a x + t + q (``_times``)."""
        return _times(self.a, self.tensor, self.p2p, x)

    def slowest(self, x: Fraction) -> int:
        times = self.stage_times(x)
        return times.index(max(times))

    def step_time(self, x: Fraction) -> Fraction:
        """(m + (p - 1)/v) x the slowest stage + the slowest data-level time, at x = 1/efficiency."""
        return (self.microbatches + self.fill) * max(self.stage_times(x)) + max(self.data)


def _times(a_s, t_s, q_s, x: Fraction) -> tuple[Fraction, ...]:
    """``a x + t + q`` for each stage: for Fractions, one sum over the denominators' lcm (one reduction
    instead of a product and two additions: every evaluation computes every stage's time); the same values."""
    if type(x) is not Fraction:
        return tuple(a * x + t + q for a, t, q in zip(a_s, t_s, q_s))
    xn, xd = x.numerator, x.denominator
    out = []
    for a, t, q in zip(a_s, t_s, q_s):
        if not type(a) is type(t) is type(q) is Fraction:
            out.append(a * x + t + q)
            continue
        ad, td, qd = a.denominator * xd, t.denominator, q.denominator
        lcd = math.lcm(ad, td, qd)
        out.append(Fraction(a.numerator * xn * (lcd // ad) + t.numerator * (lcd // td) + q.numerator * (lcd // qd), lcd))
    return tuple(out)


def check_layout(problem: LlmProblem, layout: LlmLayout) -> None:
    """ValueError naming the field when ``layout`` cannot run ``problem``."""
    par, dims = layout.parallelism, problem.dims
    t, p, d = par.tensor, par.pipeline, par.data
    gpus = problem.cluster.gpus
    if par.gpus != gpus:
        raise ValueError(f"degrees: tensor {t} x pipeline {p} x data {d} = {par.gpus}, but the cluster has {gpus} GPUs")
    if p > dims.layers:
        raise ValueError(f"pipeline: {p} stages is deeper than the {dims.layers} layers")
    if dims.heads % t:
        raise ValueError(f"tensor: {t} does not divide the {dims.heads} attention heads")
    if dims.batch % (d * layout.micro_batch):
        raise ValueError(f"micro_batch: data {d} x micro-batch {layout.micro_batch} does not divide the batch {dims.batch}")
    v, sl = layout.virtual_stages, layout.stage_layers
    if v > 1 and p == 1:
        raise ValueError("virtual_stages: interleaving needs a pipeline (pipeline > 1)")
    if sl is not None and (len(sl) != p or any(n < 1 for n in sl) or sum(sl) != dims.layers):
        raise ValueError(f"stage_layers: {p} stages of >= 1 layer summing to {dims.layers}, got {list(sl)}")
    if v > 1 and (any(n % v for n in sl) if sl is not None else dims.layers % (p * v)):
        raise ValueError(f"virtual_stages: {v} model chunks a stage need every stage's layers divisible by {v}"
                         + ("" if sl is not None else f" (the uniform cut: {dims.layers} layers = {p} x {v} x n)"))
    check_experts(problem, layout)


def recompute_forward(layer_nodes, batch: int, recompute: Recompute) -> int:
    """The forward FLOPs recomputation repeats in one layer: full, the whole layer's forward;
    selective, the attention node's (Q K^T and the product with V, Korthikanti et al. section 5);
    none, 0. For a Megatron GPT these are ``llm_flops.recompute_flops`` per layer (tested)."""
    if recompute is Recompute.NONE:
        return 0
    if recompute is Recompute.SELECTIVE:
        return forward_flops([x for x in layer_nodes if x.kind is LayerKind.ATTENTION], batch)
    return forward_flops(layer_nodes, batch)


@dataclass(frozen=True, slots=True)
class Parts:
    """Per micro-batch: one block, the embedding (first stage), the head (last stage); the block's nodes."""

    block: PartCost
    pre: PartCost
    post: PartCost
    block_nodes: tuple[Layer, ...]  # with a mixture of experts' router (``llm_experts.router_layer``)
    block_model_flops: int = 0  # one block's training FLOPs a micro-batch, no recompute
    block_recompute_flops: int = 0  # one block's recompute forward FLOPs a micro-batch


_MEMO: dict = {}  # (id(network), id(cluster), dims, t, sequence_parallel, b, types, recompute) -> (network, cluster, Parts)
_MEMO_SIZE = 4096


def _per_problem(memo: dict, key: tuple, problem: LlmProblem, compute, *args):
    """``compute(*args)``, memoised in ``memo`` under ``key`` (which starts with ``id(problem)``:
    an entry counts only while it holds that very problem); a full memo starts over."""
    hit = memo.get(key)
    if hit is not None and hit[0] is problem:
        return hit[1]
    out = compute(*args)
    if len(memo) >= _MEMO_SIZE:
        memo.clear()
    memo[key] = (problem, out)
    return out


def part_costs(problem: LlmProblem, layout: LlmLayout) -> Parts:
    """The cost of one micro-batch of each part; memoised (a pure function of the network, the
    cluster's bandwidth, t, b, the types and the recompute mode, sequence parallelism: a search
    scores many layouts that share them)."""
    key = (id(problem.network), id(problem.cluster), problem.dims, layout.parallelism.tensor,
           layout.parallelism.sequence_parallel, layout.micro_batch, layout.tensor_types, layout.recompute,
           layout.parallelism.expert)
    hit = _MEMO.get(key)
    if hit is not None and hit[0] is problem.network and hit[1] is problem.cluster:
        return hit[2]
    parts = _part_costs(problem, layout)
    if len(_MEMO) >= _MEMO_SIZE:
        _MEMO.clear()
    _MEMO[key] = (problem.network, problem.cluster, parts)
    return parts


def template_block(problem: LlmProblem) -> tuple[tuple[int, ...], int | None, PartitionType | None]:
    """The block the step model charges for every layer (its nodes, its lead, the lead's type when
    fixed): block 1 fed by block 0's last node (a residual add), whose type is the block's last
    node's (the same types repeat: ``None`` here); with one layer, block 0 fed by the embedding's
    last node with its Megatron type (``llm_block.edge_types``)."""
    net, dims = problem.network, problem.dims
    parts = block_parts(net, dims.layers)
    if dims.layers > 1:
        return parts.blocks[1], parts.blocks[0][-1], None
    pre_t, _post_t = edge_types(net, parts)
    return parts.blocks[0], (parts.pre[-1] if parts.pre else None), (pre_t[-1] if parts.pre else None)


def block_amounts(problem: LlmProblem, types: tuple[PartitionType, ...], t: int, micro_batch: int,
                  sequence_parallel: bool, recompute: Recompute) -> TensorAmounts:
    """What one GPU sends at the tensor level for one layer and one micro-batch (``template_block``,
    ``llm_block.tensor_amounts``, reduce-scattered under sequence parallelism); under full
    recomputation the forward's exchanges once more (in ``activations``)."""
    blk, lead, lead_fixed = template_block(problem)
    lead_t = lead_fixed if lead_fixed is not None or lead is None else types[-1]
    amounts = tensor_amounts(problem.network, blk, types, t, micro_batch, lead, lead_t,
                             reduce_scatter=sequence_parallel)
    if recompute is Recompute.FULL:  # the recompute forward sends the forward's exchanges again
        amounts = TensorAmounts(amounts.activations + amounts.forward, amounts.weights, amounts.forward)
    return amounts


def post_amounts(problem: LlmProblem, last_type: PartitionType, t: int, micro_batch: int,
                 sequence_parallel: bool) -> TensorAmounts:
    """What one GPU sends at the tensor level for the part after the last block (final norm, head;
    a tied head's logit layer as an explicit fc node of type III) for one micro-batch, fed by the
    last block's last node of type ``last_type``. Memoised per problem."""
    key = (id(problem), "post", last_type, t, micro_batch, sequence_parallel)
    return _per_problem(_DATA, key, problem, _post_amounts, problem, last_type, t, micro_batch, sequence_parallel)


def _post_amounts(problem: LlmProblem, last_type: PartitionType, t: int, micro_batch: int,
                  sequence_parallel: bool) -> TensorAmounts:
    net, dims = problem.network, problem.dims
    parts = block_parts(net, dims.layers)
    _pre_t, post_t = edge_types(net, parts)
    head = (tied_head(net, dims.hidden, dims.vocab),) if dims.tied_head else ()
    return tensor_amounts(net, parts.post, post_t, t, micro_batch, parts.blocks[-1][-1], last_type, head,
                          (PartitionType.III,) * len(head), reduce_scatter=sequence_parallel)


def _part_costs(problem: LlmProblem, layout: LlmLayout) -> Parts:
    net, dims = problem.network, problem.dims
    t, b = layout.parallelism.tensor, layout.micro_batch
    parts = block_parts(net, dims.layers)
    types = tuple(layout.tensor_types or megatron_types(net, dims.layers))
    if len(types) != parts.block_len:
        raise ValueError(f"tensor_types: one type per node of a block ({parts.block_len}), got {len(types)}")
    bw = problem.cluster.bandwidth_Bps(t) if t > 1 else Fraction(1)
    pre_t, _post_t = edge_types(net, parts)
    head = (tied_head(net, dims.hidden, dims.vocab),) if dims.tied_head else ()
    blk, _lead, _lead_fixed = template_block(problem)
    nodes = tuple(net.layers[k] for k in blk)
    flop_nodes = nodes + router_layer(problem)  # the router's FLOPs (its exchanges: none, it is replicated)

    def cost(flops: int, amounts, extra_s: Fraction = Fraction(0)) -> PartCost:
        return PartCost(flops, amounts.activations * BYTES / bw + extra_s, amounts.weights * BYTES / bw)

    sp = layout.parallelism.sequence_parallel  # reduce-scatters into the token-split stream (fanout.level_amounts)
    amounts = block_amounts(problem, types, t, b, sp, layout.recompute)
    # a mixture of experts: the all-to-alls, and the routed copies' tensor exchanges
    block = cost(sum(training_flops(x, b) for x in flop_nodes) + recompute_forward(flop_nodes, b, layout.recompute),
                 amounts, alltoall_seconds(problem, layout) + routed_tensor_elements(problem, layout) * BYTES / bw)
    pre = cost(sum(training_flops(net.layers[k], b) for k in parts.pre),
               tensor_amounts(net, parts.pre, pre_t, t, b, reduce_scatter=sp))
    post_nodes = tuple(net.layers[k] for k in parts.post) + head
    post = cost(sum(training_flops(x, b) for x in post_nodes), post_amounts(problem, types[-1], t, b, sp))
    return Parts(block, pre, post, flop_nodes, sum(training_flops(x, b) for x in flop_nodes),
                 recompute_forward(flop_nodes, b, layout.recompute))


@functools.lru_cache(maxsize=1024)  # pure; layouts differing in the ZeRO stage alone share a cut
def stage_cut(layers: int, pipeline: int, per_layer: Fraction, extras: tuple[Fraction, ...]) -> tuple[int, ...]:
    """The exact min-max cut of ``layers`` identical layers (``per_layer`` seconds each) into
    ``pipeline`` contiguous stages of >= 1 layer, stage s costing ``n_s per_layer + extras[s]``.

    The optimum T* is one of the values n per_layer + e (e one of the extras, 1 <= n <= layers);
    T is feasible when every stage's capacity floor((T - extras[s]) / per_layer) is >= 1 and they
    sum to >= layers, which is monotone in T: for each distinct e a binary search finds the
    smallest feasible n, and T* is the least of those. The capacities are then trimmed to the
    layer count by taking a layer from the costliest stage (the first one on a tie) until they sum
    to ``layers``: the max stays T*, and the earlier stages, which hold more micro-batches in
    flight, are relieved first."""
    if pipeline == 1:
        return (layers,)
    if per_layer <= 0:
        base, rest = divmod(layers, pipeline)
        return tuple(base + (1 if s < rest else 0) for s in range(pipeline))

    # in integers over a common denominator D (the same floors and comparisons, no Fraction arithmetic)
    D = math.lcm(Fraction(per_layer).denominator, *(Fraction(e).denominator for e in extras))
    P = int(Fraction(per_layer) * D)
    ext = [int(Fraction(e) * D) for e in extras]
    distinct = sorted(set(ext))
    which = [distinct.index(e) for e in ext]
    count = [which.count(i) for i in range(len(distinct))]

    def caps(T: int) -> list[int] | None:
        cap = [min(layers, (T - e) // P) if T >= e else 0 for e in distinct]
        if cap[-1] < 1 or sum(c * n for c, n in zip(cap, count)) < layers:
            return None
        return [cap[i] for i in which]

    best = None
    for e in distinct:
        lo, hi = 1, layers  # T = layers x per_layer + max(extras) is always feasible; search the least n
        if caps(hi * P + e) is None:
            continue
        while lo < hi:
            mid = (lo + hi) // 2
            if caps(mid * P + e) is None:
                lo = mid + 1
            else:
                hi = mid
        T = lo * P + e
        best = T if best is None or T < best else best
    assert best is not None
    cut = caps(best)
    assert cut is not None
    while sum(cut) > layers:
        s = max((s for s in range(pipeline) if cut[s] > 1), key=lambda s: (cut[s] * P + ext[s], -s))
        cut[s] -= 1
    return tuple(cut)


def p2p_sends(stage: int, pipeline: int, virtual: int) -> int:
    """Point-to-point sends of one micro-batch by a GPU of ``stage``: v forward (none from the
    last chunk of the last stage) and v backward (none from the first chunk of the first stage)."""
    if pipeline == 1:
        return 0
    return 2 * virtual - (stage == pipeline - 1) - (stage == 0)


def data_seconds(problem: LlmProblem, layout: LlmLayout, stage_params: int | Fraction,
                 stage_experts: int | Fraction = 0) -> Fraction:
    """Data-level traffic of one GPU of a stage holding ``stage_params`` parameters (its 1/t share
    sent), per step, at ``cluster.bandwidth_Bps(t d)`` (the data group spans t x d consecutive
    ranks): ZeRO 0 and 1, a ring all-reduce of the bf16 gradients, 2(d-1)/d of them (ZeRO-1's
    reduce-scatter + all-gather of the updated weights moves the same); ZeRO-3, a reduce-scatter
    of the gradients, (d-1)/d, once per step, plus an all-gather of the weights, (d-1)/d, in each
    micro-batch's forward and backward (and its recompute forward under full recomputation).
    Of the ``stage_params``, ``stage_experts`` are a mixture's expert weights: under expert
    parallelism e a GPU holds 1/(t e) of them, exchanged over the d / e ranks holding the same
    experts (spread over the same t x d ranks). Memoised per problem (``_DATA``)."""
    par = layout.parallelism
    zero3 = layout.zero is ZeroStage.ZERO3  # only ZeRO-3's gathers read the micro-batches and the recompute
    key = (id(problem), par.tensor, par.data, par.expert, layout.zero,
           (layout.micro_batch, layout.recompute is Recompute.FULL) if zero3 else None, stage_params, stage_experts)
    return _per_problem(_DATA, key, problem, _data_seconds, problem, layout, stage_params, stage_experts)


_DATA: dict = {}  # (id(problem), t, d, e, zero, ZeRO-3's (b, full), params, expert params) -> (problem, seconds);
# also post_amounts' (id(problem), "post", ...) -> (problem, amounts)


def _data_seconds(problem: LlmProblem, layout: LlmLayout, stage_params: int | Fraction,
                  stage_experts: int | Fraction) -> Fraction:
    par = layout.parallelism
    d, t, e = par.data, par.tensor, par.expert
    dense = Fraction(stage_params) - Fraction(stage_experts)
    m = problem.dims.batch // (d * layout.micro_batch)
    sent = _data_sent(layout, Fraction(BYTES) * dense / t, d, m)
    sent += _data_sent(layout, Fraction(BYTES) * Fraction(stage_experts) / (t * e), d // e, m)
    return sent / problem.cluster.bandwidth_Bps(t * d) if sent else Fraction(0)


def _data_sent(layout: LlmLayout, share: Fraction, ranks: int, microbatches: int) -> Fraction:
    """Bytes one GPU sends to exchange its ``share`` bytes of weights over ``ranks`` ranks."""
    if ranks == 1 or not share:
        return Fraction(0)
    ring = Fraction(ranks - 1, ranks)
    if layout.zero is ZeroStage.ZERO3:
        gathers = 3 if layout.recompute is Recompute.FULL else 2
        return ring * share * (1 + gathers * microbatches)
    return 2 * ring * share


def p2p_seconds(problem: LlmProblem, layout: LlmLayout) -> Fraction:
    """One send of a stage boundary's activations, s b h 2-byte elements, split over the t GPUs
    of the stage (Megatron's scatter/gather of the pipeline message, Narayanan et al. SC21
    section 4.1), at ``cluster.bandwidth_Bps(2 t d)`` (adjacent stages are t x d ranks apart)."""
    par, dims = layout.parallelism, problem.dims
    if par.pipeline == 1:
        return Fraction(0)
    sent = Fraction(BYTES * dims.seq * layout.micro_batch * dims.hidden, par.tensor)
    return sent / problem.cluster.bandwidth_Bps(2 * par.tensor * par.data)


def stage_params(problem: LlmProblem, stage_layers: tuple[int, ...]) -> tuple[int, ...]:
    """Parameters of each stage (``ParameterCount.stage``), plus, for a tied head with p > 1, the
    copy of the token embedding Megatron keeps on the last stage for the logit layer."""
    p, out, first = len(stage_layers), [], 0
    for s, n in enumerate(stage_layers):
        k = problem.params.stage(first, first + n, p, s)
        if problem.dims.tied_head and p > 1 and s == p - 1:
            k += problem.dims.vocab * problem.dims.hidden
        out.append(k)
        first += n
    return tuple(out)


def step_parts(problem: LlmProblem, layout: LlmLayout, x: Fraction) -> StepParts:
    """The step's parts; the stage cut (when the layout gives none) is the exact min-max one at
    ``x`` = 1/efficiency. Memoised per problem; ZeRO 0 and 1 share an entry (the ZeRO stage enters
    only ``data_seconds``, where the two send the same)."""
    zero = ZeroStage.ZERO0 if layout.zero is ZeroStage.ZERO1 else layout.zero
    key = (id(problem), layout.parallelism, layout.micro_batch, layout.recompute, zero, layout.stage_layers,
           layout.tensor_types, layout.virtual_stages, x)
    return _per_problem(_STEPS, key, problem, _step_parts, problem, layout, x)


_STEPS: dict = {}  # (id(problem), the layout's fields with ZeRO 1 as 0, x) -> (problem, StepParts)


def _extras(extra_a: list[Fraction], extra_k: list[Fraction], x: Fraction) -> tuple[Fraction, ...]:
    """Each stage's time beyond its layers, ``a x + k``: computed for the first, one middle and the
    last stage (the middle stages' terms are all the same)."""
    p = len(extra_a)
    if p <= 3:
        return tuple(a * x + k for a, k in zip(extra_a, extra_k))
    middle = extra_a[1] * x + extra_k[1]
    return (extra_a[0] * x + extra_k[0],) + (middle,) * (p - 2) + (extra_a[-1] * x + extra_k[-1],)


def _step_parts(problem: LlmProblem, layout: LlmLayout, x: Fraction) -> StepParts:
    check_layout(problem, layout)
    par, dims, gpu = layout.parallelism, problem.dims, problem.cluster.gpu
    t, p, v, b = par.tensor, par.pipeline, layout.virtual_stages, layout.micro_batch
    m = dims.batch // (par.data * b)
    parts = part_costs(problem, layout)
    unit = 1 / (t * Fraction(gpu.peak_TFLOPS) * TERA)  # seconds per FLOP at full efficiency
    q = p2p_seconds(problem, layout)
    extra_a = [Fraction(0)] * p
    extra_a[0] += parts.pre.flops * unit
    extra_a[-1] += parts.post.flops * unit
    sends = [q * k for k in (p2p_sends(0, p, v), p2p_sends(min(1, p - 1), p, v), p2p_sends(p - 1, p, v))]
    p2p = [sends[0]] + [sends[1]] * (p - 2) + [sends[2]] * (p > 1)  # q * p2p_sends(s, p, v): first, middle, last
    extra_k = list(p2p)
    extra_k[0] += parts.pre.tensor_s
    extra_k[-1] += parts.post.tensor_s
    layer_a = parts.block.flops * unit
    uniform = (dims.layers // p,) * p if v > 1 and layout.stage_layers is None else None  # interleaved: Megatron's cut
    cut = layout.stage_layers or uniform or stage_cut(dims.layers, p, layer_a * x + parts.block.tensor_s,
                                                      _extras(extra_a, extra_k, x))
    params = stage_params(problem, cut)
    per: dict = {}  # a stage's terms read its layers, its parameters and whether it is the first or the last
    for s, n in enumerate(cut):
        first, last = s == 0, s == p - 1
        if (n, params[s], first, last) not in per:
            w = n * parts.block.weights_s + (parts.pre.weights_s if first else 0) + (parts.post.weights_s if last else 0)
            per[n, params[s], first, last] = (
                n * layer_a + extra_a[s],
                n * parts.block.tensor_s + (parts.pre.tensor_s if first else 0) + (parts.post.tensor_s if last else 0),
                data_seconds(problem, layout, params[s], expert_params(problem, n)) + w)
    terms = [per[n, params[s], s == 0, s == p - 1] for s, n in enumerate(cut)]
    whole = par.data * m  # micro-batches in the step, over all data ranks
    model = (dims.layers * parts.block_model_flops + (parts.pre.flops + parts.post.flops)) * whole
    recompute = dims.layers * parts.block_recompute_flops * whole
    return StepParts(tuple(cut), tuple(x_[0] for x_ in terms), tuple(x_[1] for x_ in terms), tuple(p2p),
                     tuple(x_[2] for x_ in terms), m, Fraction(p - 1, v),
                     model, recompute, dims.tied_head)
