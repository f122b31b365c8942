"""A transformer shape on a GPU cluster -> the step model's ``LlmProblem`` (issue 21).

The core's step model (``explorer.core.llm_step``) takes a network and integers; this builds
them from a ``TransformerShape`` (a zoo file's ``transformer:`` block or a Hugging Face config)
with the frontends' builder and parameter count, so the core never imports a frontend.
"""

from __future__ import annotations

from ..core.llm_problem import LlmProblem, TransformerDims
from .transformer import TransformerShape, build_transformer
from .transformer_params import parameter_count


def transformer_dims(shape: TransformerShape, batch: int, seq: int) -> TransformerDims:
    """The integers of ``shape`` at global ``batch`` samples of ``seq`` tokens."""
    return TransformerDims(layers=shape.layers, hidden=shape.hidden, heads=shape.heads, kv_heads=shape.kv,
                           ffn=shape.ffn, vocab=shape.vocab, seq=seq, batch=batch, tied_head=shape.tied_head,
                           experts=shape.experts, top_k=shape.top_k, head_dim=shape.head_dim)


def llm_problem(shape: TransformerShape, cluster, batch: int, seq: int, name: str = "transformer",
                source: str = "") -> LlmProblem:
    """``shape`` trained at global ``batch`` samples of ``seq`` tokens on ``cluster`` (a
    ``ClusterSpec``): the network, its dims and its parameter count."""
    network = build_transformer(shape, name, batch, seq, source or name)
    return LlmProblem(network, transformer_dims(shape, batch, seq), parameter_count(shape), cluster)
