"""An LLM training problem and a layout of it: the inputs of the step model (``core.llm_step``).

``LlmProblem`` is a transformer (its network, the integers the closed forms need, its
parameter count) on a GPU cluster; ``LlmLayout`` is one way to train it (tensor / pipeline /
data degrees, micro-batch, recompute, ZeRO stage, optional stage cuts and tensor-level types);
``LlmEvaluation`` is what ``evaluate_llm`` says of it. Frontends build the problem
(``explorer.frontends.transformer_problem.llm_problem``); the core takes only these integers.

``ParameterCount`` lives here (the core needs it); ``explorer.frontends.transformer_params``
re-exports it beside ``parameter_count``, which reads a ``TransformerShape``.
"""

from __future__ import annotations

import math

from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

from .llm_memory import MemoryBreakdown, Parallelism, Recompute, ZeroStage, check_positive
from .network import Network
from .partition import PartitionType

if TYPE_CHECKING:  # the cluster spec (explorer.core.cluster); evaluate_llm reads only what the interface names
    from .cluster import ClusterSpec


@dataclass(frozen=True, slots=True)
class ParameterCount:
    """Parameters by place: ``per_layer`` (each transformer layer), ``embedding`` (token and
    learned positions; the pipeline's first stage), ``head`` (untied LM head; the last stage)
    and ``final_norm`` (the last stage)."""

    layers: int
    per_layer: int
    embedding: int
    head: int
    final_norm: int
    expert_per_layer: int = 0  # of per_layer: a mixture of experts' expert weights (expert parallelism divides them)

    def __post_init__(self):
        if not 0 <= self.expert_per_layer <= self.per_layer:
            raise ValueError(f"expert_per_layer: must be in 0..per_layer {self.per_layer}, got {self.expert_per_layer}")

    @property
    def total(self) -> int:
        return self.layers * self.per_layer + self.embedding + self.head + self.final_norm

    def stage(self, first_layer: int, last_layer: int, pipeline: int, index: int) -> int:
        """Parameters of pipeline stage ``index`` of ``pipeline`` holding layers
        ``first_layer`` .. ``last_layer - 1``: the embedding on the first stage, the head and
        final norm on the last (a tied head's copy on the last stage, which Megatron keeps
        for p > 1, is not counted)."""
        if not 0 <= first_layer <= last_layer <= self.layers or not 0 <= index < pipeline:
            raise ValueError(f"stage {index} of {pipeline} with layers {first_layer}..{last_layer}: out of range")
        n = (last_layer - first_layer) * self.per_layer
        if index == 0:
            n += self.embedding
        if index == pipeline - 1:
            n += self.head + self.final_norm
        return n


@dataclass(frozen=True, slots=True)
class TransformerDims:
    """The integers the closed forms need: ``layers`` l, ``hidden`` h, ``heads`` a, ``kv_heads``,
    ``ffn``, ``vocab`` V, ``seq`` s, ``batch`` B (global, samples of s tokens), and whether the
    LM head is tied to the token embedding (then the network leaves the logit layer out and the
    step model adds its FLOPs explicitly); a mixture of experts: ``experts`` E per layer (0:
    dense), each token routed to ``top_k`` k of them, each of width ``ffn``; ``head_dim`` d, each
    head's width (0: h/a, a config that gives none; the activation memory sizes Q, K, V and the
    attention output by a d and kv d, as the network's FLOPs and weights do)."""

    layers: int
    hidden: int
    heads: int
    kv_heads: int
    ffn: int
    vocab: int
    seq: int
    batch: int
    tied_head: bool = False
    experts: int = 0
    top_k: int = 0
    head_dim: int = 0

    def __post_init__(self):
        check_positive(self, ("layers", "hidden", "heads", "kv_heads", "ffn", "vocab", "seq", "batch"))
        if self.head_dim:
            check_positive(self, ("head_dim",))
        if self.experts or self.top_k:
            check_positive(self, ("experts", "top_k"))
            if self.top_k > self.experts:
                raise ValueError(f"top_k: {self.top_k} is more than the {self.experts} experts")

    @property
    def moe(self) -> bool:
        return self.experts > 0

    @property
    def head_groups(self) -> int:
        """What a tensor degree must divide: the query heads and the key/value heads (grouped-query
        attention: Megatron splits whole KV groups), i.e. their gcd."""
        return math.gcd(self.heads, self.kv_heads)


@dataclass(frozen=True, slots=True)
class LlmProblem:
    """A transformer on a GPU cluster: ``network`` (build_transformer(shape, batch, seq): per-node
    FLOPs and tensor sizes), ``dims``, ``params`` (every parameter, by place) and ``cluster``."""

    network: Network
    dims: TransformerDims
    params: ParameterCount
    cluster: ClusterSpec

    def __post_init__(self):
        if self.params.layers != self.dims.layers:
            raise ValueError(f"params.layers {self.params.layers} != dims.layers {self.dims.layers}")
        if self.network.sequence not in (None, self.dims.seq):
            raise ValueError(f"network.sequence {self.network.sequence} != dims.seq {self.dims.seq}")


@dataclass(frozen=True, slots=True)
class LlmLayout:
    """One way to train: degrees (``parallelism``), ``micro_batch`` b (samples per micro-batch
    per data-parallel rank), ``recompute``, ``zero``; ``stage_layers``: transformer layers per
    pipeline stage (len p; None: the exact min-max cut); ``tensor_types``: one partition type per
    node of one transformer block at the tensor level (None: Megatron's column- then row-parallel
    pattern, ``llm_step.megatron_types``); ``virtual_stages`` v: Megatron's interleaved 1F1B with
    v model chunks per GPU (1: plain 1F1B; an extension of the agreed interface, for Korthikanti
    et al.'s Table 5 runs, which interleave)."""

    parallelism: Parallelism
    micro_batch: int
    recompute: Recompute = Recompute.SELECTIVE
    zero: ZeroStage = ZeroStage.ZERO0
    stage_layers: tuple[int, ...] | None = None
    tensor_types: tuple[PartitionType, ...] | None = None
    virtual_stages: int = 1

    def __post_init__(self):
        check_positive(self, ("micro_batch", "virtual_stages"))


@dataclass(frozen=True, slots=True)
class LlmEvaluation:
    """What ``evaluate_llm`` says of a layout; times in seconds, memory in bytes, all exact.

    ``step_time_s`` = ``compute_s + tensor_comm_s + pipeline_comm_s + bubble_s + data_comm_s``:
    the first three are the slowest stage's m micro-batches (its matmuls, its tensor-level
    exchanges (with a mixture of experts' all-to-alls, ``expert_comm_s`` of them), its
    point-to-point sends), ``bubble_s`` the pipeline fill and drain,
    ``data_comm_s`` the data-level traffic (gradient all-reduce, ZeRO-3 gathers) and the
    tensor level's weight-gradient exchanges, not overlapped with compute."""

    step_time_s: Fraction
    compute_s: Fraction
    tensor_comm_s: Fraction
    data_comm_s: Fraction
    pipeline_comm_s: Fraction
    bubble_s: Fraction
    bubble_fraction: Fraction
    tflops_per_gpu: Fraction  # FLOPs executed: Megatron's count (with the recompute forward when recompute is on)
    model_tflops_per_gpu: Fraction  # model FLOPs (no recompute) / (step time x GPUs): the validation tables' figure
    mfu: Fraction  # model_tflops_per_gpu / peak
    memory_bytes_per_accelerator: Fraction  # the worst stage's total
    memory: MemoryBreakdown  # of the worst stage
    memory_limit_bytes: Fraction
    fits: bool
    stage_layers: tuple[int, ...]
    stage_times_s: tuple[Fraction, ...]  # per stage, one micro-batch (forward + backward + recompute + sends)
    microbatches: int  # m = batch / (d x b)
    efficiency: Fraction  # the fraction of peak the matmuls reach (llm_calibration)
    calibrated: bool  # True: the GPU kind's calibrated efficiency; False: borrowed (no calibration row: "uncalibrated") or given
    notes: tuple[str, ...] = ()
    expert_comm_s: Fraction = Fraction(0)  # of tensor_comm_s: the slowest stage's expert-parallel all-to-alls
