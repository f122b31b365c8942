"""Parameters of a zoo transformer (``TransformerShape``) as a training run stores them.

``TransformerShape.weights()`` counts the weights of the built network (matmuls and
embeddings: the nodes have no layer norms or biases). Training memory (``core.llm_memory``)
needs every parameter, so this adds them per family:

- ``gpt`` (Megatron-LM GPT): per layer biases of the QKV (3h), attention output (h), MLP
  (ffn, h) and two layer norms (2 x 2h): 12 h^2 + 13 h per layer with ffn = 4h, the count of
  Narayanan et al. (SC21) P = 12 l h^2 (1 + 13/(12 h) + (V + s)/(12 l h)); plus the final
  layer norm (2h), which that formula leaves out.
- ``llama`` (LLaMA 3): no biases; two RMSNorm weight vectors (h each) per layer and a final one
  (h). Qwen2's QKV biases are not counted (the shape does not say a model has them).

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
        matmul = h * q + 2 * h * kv + q * h + 3 * h * shape.ffn
        extra = 2 * h
        embedding, final_norm = shape.vocab * h, h
    head = 0 if shape.tied_head else h * shape.vocab
    return ParameterCount(shape.layers, matmul + extra, embedding, head, final_norm)
