"""Memory per GPU of each pipeline stage under a layout (``core.llm_step``).

The derivation: docs/derivations.md, "`explorer.core.llm_stage_memory`".
"""

from __future__ import annotations

from fractions import Fraction

from .llm_block import has_gated_mlp
from .llm_memory import (MemoryBreakdown, Recompute, Tokens, ZeroStage, activation_bytes_per_layer,
                         gated_activation_bytes_per_layer, in_flight_microbatches, model_state_bytes,
                         moe_activation_bytes_per_layer, stage_memory)
from .llm_problem import LlmLayout, LlmProblem


def stage_memories(problem: LlmProblem, layout: LlmLayout, cut: tuple[int, ...],
                   params: tuple[int, ...]) -> tuple[MemoryBreakdown, ...]:
    """Bytes per GPU of each stage of ``cut`` holding ``params`` parameters. Memoised per problem on
    what it reads of the layout (not the block's types, which layouts scored for their types differ in alone)."""
    key = (id(problem), layout.parallelism, layout.micro_batch, layout.recompute, layout.zero, layout.virtual_stages,
           cut, params)
    hit = _MEMO.get(key)
    if hit is not None and hit[0] is problem:
        return hit[1]
    if len(_MEMO) >= 4096:
        _MEMO.clear()
    out = _stage_memories(problem, layout, cut, params)
    _MEMO[key] = (problem, out)
    return out


_MEMO: dict = {}  # (id(problem), degrees, b, recompute, zero, v, cut, params) -> (problem, memories)


def _stage_memories(problem: LlmProblem, layout: LlmLayout, cut: tuple[int, ...],
                    params: tuple[int, ...]) -> tuple[MemoryBreakdown, ...]:
    par, dims = layout.parallelism, problem.dims
    t, p, v, b = par.tensor, par.pipeline, layout.virtual_stages, layout.micro_batch
    m = dims.batch // (par.data * b)
    tok = Tokens(dims.seq, b, dims.hidden, dims.heads)
    interleave = 1 + Fraction(p - 1, p * v) if v > 1 else Fraction(1)
    sbh = Fraction(dims.seq * b * dims.hidden, t)
    gated = has_gated_mlp(problem.network, dims.layers)
    transient = _recompute_transient(tok, dims, par, layout.recompute, gated)
    out, seen = [], {}  # a stage's memory reads its layers, parameters, micro-batches in flight, first or last
    for s, n in enumerate(cut):
        key = (n, params[s], min(p - s, m), s == 0, s == p - 1)
        if key in seen:
            out.append(seen[key])
            continue
        experts = n * problem.params.expert_per_layer  # expert parallelism divides these (e ways)
        mem = stage_memory(params[s] - experts, n, tok, par, m, stage=s, recompute=layout.recompute, zero=layout.zero)
        act = mem.activations
        if gated:  # a LLaMA layer (or a mixture of experts): its own count in place of the GPT layer's
            act = n * in_flight_microbatches(s, p, m) * _gated_layer(tok, dims, par, layout.recompute)
        if v > 1:
            act *= interleave
        if n and transient:
            act += transient
        if s == 0:
            act += sbh * in_flight_microbatches(0, p, m)
        if s == p - 1:
            act += 4 * sbh * (1 + Fraction(dims.vocab, dims.hidden))
        if experts:
            ew, eg, eo = model_state_bytes(Fraction(experts, t * par.expert), par.data // par.expert, layout.zero)
            weights, grads, optimizer = mem.weights + ew, mem.gradients + eg, mem.optimizer + eo
        else:  # a dense model: no expert states to add
            weights, grads, optimizer = mem.weights, mem.gradients, mem.optimizer
        if layout.zero is ZeroStage.ZERO3 and par.data > 1:
            unit = _largest_unit(problem, s, p, par.expert)
            weights += 2 * unit / t
            grads += 2 * unit / t
        seen[key] = MemoryBreakdown(weights, grads, optimizer, act)
        out.append(seen[key])
    return tuple(out)


def _gated_layer(tok: Tokens, dims, par, recompute: Recompute) -> Fraction:
    """One LLaMA layer's (or mixture-of-experts layer's) activation bytes a micro-batch."""
    if dims.moe:
        return moe_activation_bytes_per_layer(tok, dims.kv_heads, dims.ffn, dims.experts, dims.top_k, par.tensor,
                                              par.sequence_parallel, recompute, dims.head_dim)
    return gated_activation_bytes_per_layer(tok, dims.kv_heads, dims.ffn, par.tensor, par.sequence_parallel, recompute,
                                            dims.head_dim)


def _recompute_transient(tok: Tokens, dims, par, recompute: Recompute, gated: bool) -> Fraction:
    """Bytes the layer being recomputed adds while it runs: its activations without recomputation
    less what ``recompute`` keeps of it (0 without recomputation)."""
    def per_layer(mode: Recompute) -> Fraction:
        if gated:
            return _gated_layer(tok, dims, par, mode)
        return activation_bytes_per_layer(tok, par.tensor, par.sequence_parallel, mode)
    return per_layer(Recompute.NONE) - per_layer(recompute)


def _largest_unit(problem: LlmProblem, stage: int, pipeline: int, expert: int = 1) -> Fraction:
    pc = problem.params
    units = [pc.per_layer - pc.expert_per_layer + Fraction(pc.expert_per_layer, expert)]
    if stage == 0:
        units.append(pc.embedding)
    if stage == pipeline - 1:
        units.append(pc.head or (problem.dims.vocab * problem.dims.hidden if problem.dims.tied_head else 0))
    return max(units)
