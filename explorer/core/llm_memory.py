"""Training memory per GPU of a transformer under tensor / pipeline / data parallelism.

The full derivation is in the manual: docs/derivations.md, "LLM training".
"""

from __future__ import annotations

import enum
import functools
import math
from dataclasses import dataclass
from fractions import Fraction

from .errors import is_int

BYTES_WEIGHTS = 2  # fp16/bf16 weights
BYTES_GRADIENTS = 2  # fp16/bf16 gradients
BYTES_OPTIMIZER = 12  # fp32 master weights (4), Adam momentum (4) and variance (4)


class Recompute(enum.Enum):
    """Activation recomputation (Korthikanti et al.): none, selective (the attention core's
    s x s tensors are recomputed), full (only each layer's input is kept)."""

    __hash__ = object.__hash__  # members are singletons (equality is identity): C's hash, not Enum's Python-level one

    NONE = "none"
    SELECTIVE = "selective"
    FULL = "full"


class ZeroStage(enum.Enum):
    """ZeRO stage: 0 (nothing sharded), 1 (optimizer state over d), 3 (all model states over d)."""

    __hash__ = object.__hash__  # members are singletons (equality is identity): C's hash, not Enum's Python-level one

    ZERO0 = 0
    ZERO1 = 1
    ZERO3 = 3


def check_positive(obj, names) -> None:
    """ValueError naming the first of ``obj``'s fields ``names`` that is not an integer >= 1."""
    for name in names:
        value = getattr(obj, name)
        if not is_int(value) or value < 1:
            raise ValueError(f"{name}: must be an integer >= 1, got {value!r}")


@dataclass(frozen=True, slots=True)
class Parallelism:
    """Degrees: ``tensor`` t, ``pipeline`` p, ``data`` d; ``sequence_parallel``: Megatron's
    sequence parallelism alongside tensor parallelism (Korthikanti et al. section 4);
    ``expert`` e: a mixture of experts' experts sharded e ways inside the data-parallel group
    (it divides d and the experts; 1: every data rank holds every expert)."""

    tensor: int = 1
    pipeline: int = 1
    data: int = 1
    sequence_parallel: bool = True
    expert: int = 1

    def __post_init__(self):
        check_positive(self, ("tensor", "pipeline", "data", "expert"))

    @property
    def gpus(self) -> int:
        return self.tensor * self.pipeline * self.data


@dataclass(frozen=True, slots=True)
class Tokens:
    """What one layer's activations depend on: ``sequence`` s, ``micro_batch`` b, ``hidden`` h,
    ``heads`` a (the attention scores are a x s x s per sample)."""

    sequence: int
    micro_batch: int
    hidden: int
    heads: int

    def __post_init__(self):
        check_positive(self, ("sequence", "micro_batch", "hidden", "heads"))


@dataclass(frozen=True, slots=True)
class MemoryBreakdown:
    """Bytes per GPU (exact): weights, gradients, optimizer state, stored activations."""

    weights: Fraction
    gradients: Fraction
    optimizer: Fraction
    activations: Fraction

    @property
    def model_states(self) -> Fraction:
        return self.weights + self.gradients + self.optimizer

    @property
    def total(self) -> Fraction:
        """model_states + activations; four Fractions summed over their denominators' lcm (one
        reduction instead of three additions: a search sums every stage of every layout it scores)."""
        w, g, o, a = self.weights, self.gradients, self.optimizer, self.activations
        if not type(w) is type(g) is type(o) is type(a) is Fraction:
            return w + g + o + a
        dw, dg, do, da = w.denominator, g.denominator, o.denominator, a.denominator
        lcd = math.lcm(dw, dg, do, da)
        return Fraction(w.numerator * (lcd // dw) + g.numerator * (lcd // dg) + o.numerator * (lcd // do)
                        + a.numerator * (lcd // da), lcd)


@functools.lru_cache(maxsize=4096)  # pure; a search asks for the same values across layouts
def activation_bytes_per_layer(tok: Tokens, tensor: int = 1, sequence_parallel: bool = True,
                               recompute: Recompute = Recompute.NONE) -> Fraction:
    """Bytes one transformer layer stores for one micro-batch on one GPU (Korthikanti et al. section 4)."""
    s, b, h, a, t = tok.sequence, tok.micro_batch, tok.hidden, tok.heads, Fraction(tensor)
    sbh = s * b * h
    if recompute is Recompute.FULL:
        return 2 * sbh / (t if sequence_parallel else 1)
    scores = 0 if recompute is Recompute.SELECTIVE else Fraction(5 * a * s, h)
    if sequence_parallel:
        return sbh * (34 + scores) / t
    return sbh * (10 + 24 / t + scores / t)


@functools.lru_cache(maxsize=4096)  # pure; a search asks for the same values across layouts
def gated_activation_bytes_per_layer(tok: Tokens, kv_heads: int, ffn: int, tensor: int = 1,
                                     sequence_parallel: bool = True,
                                     recompute: Recompute = Recompute.NONE, head_dim: int = 0) -> Fraction:
    """Bytes a LLaMA-style layer (RMSNorm, grouped-query attention with ``kv_heads`` heads of
    ``head_dim`` d (0: h/a), SwiGLU MLP of ``ffn``, no dropout) stores for one micro-batch on one
    GPU, by Korthikanti et al.'s section 4 accounting (16-bit tensors kept for the backward pass;
    the same count gives their s b h (10 + 24/t + 5 a s/(h t)) on a GPT layer):

    - replicated without sequence parallelism: the two norms' inputs and the inputs of the QKV
      and gate/up matmuls, 8 s b h;
    - split t ways: Q (2 s b a d), K and V (4 s b kv d), the output projection's input
      (2 s b a d), the gate and up outputs (4 s b ffn: Megatron's fused SwiGLU keeps them and
      recomputes the SiLU in the backward; an unfused SiLU would keep its output too, 2 s b ffn
      more), the down projection's input (2 s b ffn); the attention scores' softmax output
      2 a s^2 b (no dropout), which selective recomputation (and FlashAttention) does not keep.

    s b h (8 + 4 a d/h + 4 kv d/h + 6 ffn/h + 2 a s/h) / t with sequence parallelism, s b h (8 +
    (4 a d/h + 4 kv d/h + 6 ffn/h + 2 a s/h)/t) without; with d = h/a (every config without a
    head_dim of its own) 4 a d/h = 4 and 4 kv d/h = 4 kv/a. Full recomputation keeps the layer
    input, 2 s b h (/ t with sequence parallelism), as for a GPT layer."""
    if not is_int(head_dim) or head_dim < 0:
        raise ValueError(f"head_dim: must be an integer >= 0 (0: hidden / heads), got {head_dim!r}")
    s, b, h, a, t = tok.sequence, tok.micro_batch, tok.hidden, tok.heads, Fraction(tensor)
    sbh = s * b * h
    if recompute is Recompute.FULL:
        return 2 * sbh / (t if sequence_parallel else 1)
    d = head_dim or Fraction(h, a)  # h/a exactly (a Fraction): the standard layer's terms come out as before
    scores = 0 if recompute is Recompute.SELECTIVE else Fraction(2 * a * s, h)
    split = Fraction(4 * a * d + 4 * kv_heads * d + 6 * ffn, h) + scores
    if sequence_parallel:
        return sbh * (8 + split) / t
    return sbh * (8 + split / t)


def in_flight_microbatches(stage: int, pipeline: int, microbatches: int) -> int:
    """Micro-batches whose activations stage ``stage`` (0-based) of ``pipeline`` holds at once
    under 1F1B: min(p - stage, m) (Narayanan et al. SC21 section 2.2.1)."""
    if not 0 <= stage < pipeline:
        raise ValueError(f"stage: must be in 0..{pipeline - 1}, got {stage}")
    if microbatches < 1:
        raise ValueError(f"microbatches: must be >= 1, got {microbatches}")
    return min(pipeline - stage, microbatches)


@functools.lru_cache(maxsize=4096)  # pure; a search asks for the same values across layouts
def model_state_bytes(params_per_gpu: Fraction | int, data: int, zero: ZeroStage) -> tuple[Fraction, Fraction, Fraction]:
    """(weights, gradients, optimizer) bytes for ``params_per_gpu`` parameters (this GPU's
    tensor/pipeline share before ZeRO) under ZeRO stage ``zero`` over ``data`` ranks."""
    n, d = Fraction(params_per_gpu), Fraction(data)
    shard_all = zero is ZeroStage.ZERO3
    shard_opt = zero is not ZeroStage.ZERO0
    return (BYTES_WEIGHTS * n / (d if shard_all else 1), BYTES_GRADIENTS * n / (d if shard_all else 1),
            BYTES_OPTIMIZER * n / (d if shard_opt else 1))


@functools.lru_cache(maxsize=4096)  # keyed by integers: no Fraction built and hashed for a hit
def _split_model_state_bytes(parameters: int, tensor: int, data: int, zero: ZeroStage) -> tuple[Fraction, Fraction, Fraction]:
    """``model_state_bytes`` of ``parameters / tensor`` parameters a GPU."""
    return model_state_bytes(Fraction(parameters, tensor), data, zero)


def stage_memory(stage_parameters: int, stage_layers: int, tok: Tokens, par: Parallelism, microbatches: int,
                 stage: int = 0, recompute: Recompute = Recompute.NONE,
                 zero: ZeroStage = ZeroStage.ZERO0) -> MemoryBreakdown:
    """Bytes per GPU of pipeline stage ``stage`` holding ``stage_layers`` transformer layers and
    ``stage_parameters`` parameters (its layers plus any embedding or head it owns).

    Every parameter is split ``t`` ways (Megatron splits each matmul and the vocabulary
    embedding; the replicated layer norms and row-parallel biases, under 0.01% of a GPT's
    parameters, are divided too). Activations: ``stage_layers`` x the 1F1B in-flight count x
    ``activation_bytes_per_layer``; the embedding, final norm and loss activations (a few
    s b h and s b V terms, Korthikanti et al. section 4) are not counted."""
    if stage_parameters < 0 or stage_layers < 0:
        raise ValueError("stage_parameters and stage_layers: must be >= 0")
    weights, grads, opt = _split_model_state_bytes(stage_parameters, par.tensor, par.data, zero)
    per_layer = activation_bytes_per_layer(tok, par.tensor, par.sequence_parallel, recompute)
    held = in_flight_microbatches(stage, par.pipeline, microbatches)
    return MemoryBreakdown(weights, grads, opt, stage_layers * held * per_layer)


@functools.lru_cache(maxsize=4096)  # pure; a search asks for the same values across layouts
def moe_activation_bytes_per_layer(tok: Tokens, kv_heads: int, ffn: int, experts: int, top_k: int,
                                   tensor: int = 1, sequence_parallel: bool = True,
                                   recompute: Recompute = Recompute.NONE, head_dim: int = 0) -> Fraction:
    """Bytes a mixture-of-experts layer (Mixtral: the LLaMA layer of
    ``gated_activation_bytes_per_layer`` with E SwiGLU experts of width ``ffn``, each token routed
    to ``top_k`` k of them; balanced routing) stores for one micro-batch on one GPU, by the same
    accounting:

    - the k routed experts' SwiGLU tensors, as a dense MLP of width k ffn: 6 s b k ffn (split t
      ways: tensor parallelism splits every expert);
    - with the replicated tensors (divided by t under sequence parallelism): the dispatched
      (permuted) copies of the routed tokens, the experts' inputs, 2 k s b h, and the experts'
      outputs before the weighted combine (its backward needs them for the routing weights'
      gradient), 2 k s b h; the router's softmax output in fp32, 4 s b E (the router's input is
      the norm's output, already counted).

    s b h (8 + 4k + 4E/h + 4 a d/h + 4 kv d/h + 6 k ffn/h + 2 a s/h) / t with sequence
    parallelism (``head_dim`` d, 0: h/a, which makes 4 a d/h + 4 kv d/h = 4 + 4 kv/a);
    full recomputation keeps the layer input only, 2 s b h (/ t), as for a dense layer. Expert
    parallelism changes none of it: under balanced routing a rank computes k s b tokens' experts
    whichever ranks they came from."""
    dense = gated_activation_bytes_per_layer(tok, kv_heads, top_k * ffn, tensor, sequence_parallel, recompute,
                                             head_dim)
    if recompute is Recompute.FULL:
        return dense
    s, b, h = tok.sequence, tok.micro_batch, tok.hidden
    routed = Fraction(4 * top_k * s * b * h + 4 * s * b * experts)
    return dense + routed / (tensor if sequence_parallel else 1)
