"""A mixture of experts in the LLM step model (Mixtral): the router, expert parallelism's
all-to-all, and the expert weights expert parallelism divides.

The model (balanced routing, the all-to-alls, the divided weights): docs/llm-training.md,
"Mixture of experts (Mixtral)".
"""

from __future__ import annotations

from fractions import Fraction

from .llm_memory import Recompute
from .llm_problem import LlmLayout, LlmProblem
from .network import Layer, LayerKind
from .partition import Layout, reduce_scatter_fraction, relayout_fraction

BYTES = 2  # bf16 tokens on the wire


def check_experts(problem: LlmProblem, layout: LlmLayout) -> None:
    """ValueError naming ``expert`` when the expert degree cannot shard this model's experts."""
    e, d, dims = layout.parallelism.expert, layout.parallelism.data, problem.dims
    if e == 1:
        return
    if not dims.moe:
        raise ValueError(f"expert: {e} on a dense model (expert parallelism needs a mixture of experts)")
    if dims.experts % e:
        raise ValueError(f"expert: {e} does not divide the {dims.experts} experts")
    if d % e:
        raise ValueError(f"expert: {e} does not divide data {d} (experts are sharded inside the data-parallel group)")


def router_layer(problem: LlmProblem) -> tuple[Layer, ...]:
    """The router of one layer as an fc node (h x E over the sequence), () for a dense model: its
    FLOPs are counted with the block's (the network's nodes leave it out)."""
    dims = problem.dims
    if not dims.moe:
        return ()
    return (Layer("router", LayerKind.FC, dims.hidden, dims.experts, in_size=(dims.seq, 1), out_size=(dims.seq, 1)),)


def alltoalls(recompute: Recompute) -> int:
    """All-to-alls a layer runs per micro-batch: dispatch and combine forward and backward, and
    the forward's two again under full recomputation."""
    return 6 if recompute is Recompute.FULL else 4


def alltoall_elements(problem: LlmProblem, layout: LlmLayout) -> Fraction:
    """Elements one GPU sends in one all-to-all of one layer and micro-batch: of the e ranks'
    routed token-vectors (e x k s b h / t), ``relayout_fraction(ROW, COL, e)`` = (e - 1)/e^2."""
    par, dims = layout.parallelism, problem.dims
    e = par.expert
    if e == 1 or not dims.moe:
        return Fraction(0)
    routed = Fraction(dims.top_k * dims.seq * layout.micro_batch * dims.hidden, par.tensor)
    return relayout_fraction(Layout.ROW, Layout.COL, e) * e * routed


def alltoall_seconds(problem: LlmProblem, layout: LlmLayout) -> Fraction:
    """Seconds one layer's all-to-alls take per micro-batch (bf16, at ``bandwidth_Bps(t e)``)."""
    sent = alltoall_elements(problem, layout)
    if not sent:
        return Fraction(0)
    span = layout.parallelism.tensor * layout.parallelism.expert
    return alltoalls(layout.recompute) * BYTES * sent / problem.cluster.bandwidth_Bps(span)


def routed_tensor_elements(problem: LlmProblem, layout: LlmLayout) -> Fraction:
    """Elements one GPU sends at the tensor level per layer and micro-batch beyond what the
    block's nodes charge, under expert and tensor parallelism together (e > 1, t > 1). Megatron-
    Core's all-to-all dispatcher then all-gathers the dispatched tokens over the tensor ranks and
    reduce-scatters the experts' outputs before the combine: k copies of each token, where the
    nodes' exchanges (the dense MLP's, which is right for e = 1, the all-gather dispatcher) carry
    one. The k - 1 more: an all-gather ``relayout_fraction(ROW, DUP, t)`` and a reduce-scatter
    ``reduce_scatter_fraction(t)`` of s b h each, forward and backward (and the recompute forward)."""
    par, dims = layout.parallelism, problem.dims
    t = par.tensor
    if par.expert == 1 or t == 1 or not dims.moe or dims.top_k == 1:
        return Fraction(0)
    sbh = dims.seq * layout.micro_batch * dims.hidden
    one = (relayout_fraction(Layout.ROW, Layout.DUP, t) + reduce_scatter_fraction(t)) * sbh
    passes = 3 if layout.recompute is Recompute.FULL else 2
    return (dims.top_k - 1) * one * passes


def expert_params(problem: LlmProblem, layers: int) -> int:
    """Expert weights of ``layers`` layers (every expert; 0 for a dense model)."""
    return layers * problem.params.expert_per_layer
