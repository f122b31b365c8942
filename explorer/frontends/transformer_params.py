"""Parameters of a zoo transformer (``TransformerShape``) as a training run stores them: the
built network's weights plus, per family, the biases and norms its nodes leave out (Megatron-LM
GPT, LLaMA 3, Mixtral's experts and routers). Described in the manual: docs/llm-training.md,
"Parameters" and "Mixture of experts (Mixtral)".

``parameter_count`` lives beside the shape because the core must not import a frontend
(tests/test_layers.py); ``ParameterCount`` itself is in ``explorer.core.llm_problem`` (the step
model needs it) and is re-exported here.
"""

from __future__ import annotations

from ..core.llm_problem import ParameterCount  # noqa: F401 - re-exported (it lives in the core, which needs it)
from .transformer import Family, TransformerShape


def parameter_count(shape: TransformerShape) -> ParameterCount:
    """Every parameter of ``shape``: the built network's weights plus biases and norms."""
    h = shape.hidden
    d = shape.d_head
    q, kv = shape.heads * d, shape.kv * d
    if shape.family is Family.GPT:
        matmul = h * 3 * h + h * h + 2 * h * shape.ffn
        extra = 3 * h + h + shape.ffn + h + 2 * 2 * h
        embedding, final_norm = (shape.vocab + shape.positions) * h, 2 * h
    else:
        experts = shape.experts * 3 * h * shape.ffn  # a mixture: every expert's SwiGLU (0 when dense)
        mlp = 3 * h * shape.ffn if not shape.moe else experts + h * shape.experts  # + the router
        matmul = h * q + 2 * h * kv + q * h + mlp
        extra = 2 * h
        embedding, final_norm = shape.vocab * h, h
    head = 0 if shape.tied_head else h * shape.vocab
    return ParameterCount(shape.layers, matmul + extra, embedding, head, final_norm,
                          experts if shape.family is Family.LLAMA else 0)


def active_parameter_count(shape: TransformerShape) -> int:
    """Parameters one token uses: all of them for a dense model; for a mixture of experts, the
    ``top_k`` routed experts' of each layer instead of all ``experts`` (the router included)."""
    pc = parameter_count(shape)
    if not shape.moe:
        return pc.total
    return pc.total - shape.layers * (shape.experts - shape.top_k) * 3 * shape.hidden * shape.ffn
