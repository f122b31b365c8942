"""The space the LLM planner searches: degrees (t, p, d), micro-batch, recompute, ZeRO stage.

Every candidate is one ``(t, p, d, b, recompute, zero)`` (and the schedule, and a mixture of
experts' expert degree); the stage cuts and the tensor-level types of a block are chosen per
candidate by the search (``llm_search``). What is enumerated is described in the manual:
docs/llm-training.md, "What is searched". Bad choices raise ``SpecError`` naming the option and
the value (the CLI's exit 2).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from ..core.errors import SpecError
from ..core.names import given_as
from ..core.llm_memory import Recompute, ZeroStage

MAX_MICRO_BATCH = 64  # micro-batches searched: divisors of B/d up to this (stated in the report); larger ones
# only lengthen the bubble and the activations in flight (the efficiency does not grow with b)


@dataclass(frozen=True, slots=True)
class Degrees:
    """Tensor ``t``, pipeline ``p`` and data ``d`` degrees (Megatron's rank order: t innermost);
    ``expert`` e: a mixture of experts' experts sharded e ways inside the data-parallel group."""

    tensor: int
    pipeline: int
    data: int
    expert: int = 1

    @property
    def gpus(self) -> int:
        return self.tensor * self.pipeline * self.data

    def __str__(self) -> str:
        return f"t={self.tensor} p={self.pipeline} d={self.data}" + (f" e={self.expert}" if self.expert > 1 else "")


@dataclass(frozen=True, slots=True)
class Candidate:
    """One point of the space (types and stage cuts are chosen for it by the search)."""

    degrees: Degrees
    micro_batch: int
    recompute: Recompute
    zero: ZeroStage
    virtual: int = 1  # model chunks a pipeline stage (Megatron's interleaved 1F1B when > 1)

    def microbatches(self, batch: int) -> int:
        return batch // (self.degrees.data * self.micro_batch)

    def fill(self) -> Fraction:
        """The pipeline's fill and drain in stage times: (p - 1) / v."""
        return Fraction(self.degrees.pipeline - 1, self.virtual)


@dataclass(frozen=True, slots=True)
class LlmSpace:
    """What to search. ``None`` or an empty tuple: search it; a value: fix it."""

    tensor: int | None = None  # a fixed degree (--degrees); None: searched
    pipeline: int | None = None
    data: int | None = None
    expert: int | None = None  # a mixture of experts: every e dividing the experts and d, or this one
    micro_batch: int | None = None
    recomputes: tuple[Recompute, ...] = tuple(Recompute)
    zeros: tuple[ZeroStage, ...] = tuple(ZeroStage)
    max_tensor: int | None = None  # None: the cluster's GPUs per node
    max_micro_batch: int = MAX_MICRO_BATCH
    search_types: bool = True  # per-node types of a block at the tensor level (False: Megatron's)
    interleave: bool = True  # also Megatron's interleaved schedule, v chunks a stage (False: plain 1F1B)
    virtual: int | None = None  # a fixed number of model chunks a stage (--degrees virtual=V); None: as interleave says


def divisors(n: int) -> list[int]:
    small = [i for i in range(1, int(n**0.5) + 1) if n % i == 0]
    return sorted(set(small + [n // i for i in small]))


def degree_triples(gpus: int, max_tensor: int, layers: int, batch: int, heads: int = 0) -> list[Degrees]:
    """Every (t, p, d) with t p d = gpus, t <= max_tensor, t | heads (when given), p <= layers, d | batch."""
    out = []
    for t in divisors(gpus):
        if t > max_tensor:
            break
        if heads and heads % t:
            continue
        for p in divisors(gpus // t):
            d = gpus // (t * p)
            if p <= layers and batch % d == 0:
                out.append(Degrees(t, p, d))
    return out


def micro_batches(batch: int, data: int, cap: int) -> list[int]:
    """Divisors of batch / data up to ``cap``."""
    return [b for b in divisors(batch // data) if b <= cap]


def validate_degrees(deg: Degrees, gpus: int, layers: int, batch: int, option: str = "--degrees") -> None:
    """A fixed layout's degrees: SpecError naming ``option`` and the value when they cannot run."""
    if deg.gpus != gpus:
        raise SpecError(option, f"tensor={deg.tensor} x pipeline={deg.pipeline} x data={deg.data} = {deg.gpus:,} GPUs, "
                                f"but the cluster has {gpus:,} ({given_as('--gpus')})")
    if deg.pipeline > layers:
        raise SpecError(option, f"pipeline={deg.pipeline} is deeper than the model's {layers} transformer layers")
    if batch % deg.data:
        raise SpecError(option, f"data={deg.data} does not divide the batch {batch} ({given_as('--batch')}): every data-parallel "
                                "rank takes whole samples")


def validate_micro_batch(b: int, batch: int, data: int) -> None:
    if b < 1:
        raise SpecError("--micro-batch", f"must be >= 1, got {b}")
    if (batch // data) % b:
        raise SpecError("--micro-batch", f"{b} does not divide batch / data = {batch} / {data} = {batch // data}")


def candidates(space: LlmSpace, gpus: int, gpus_per_node: int, layers: int, batch: int,
               heads: int = 0, experts: int = 0) -> list[Candidate]:
    """Every candidate of ``space`` (in a fixed order: t, p, e, b, recompute, zero ascending);
    ``experts``: a mixture of experts' experts a layer (0: dense, e = 1 only)."""
    max_tensor = space.tensor or space.max_tensor or gpus_per_node
    triples = [deg for deg in degree_triples(gpus, max_tensor, layers, batch, heads)
               if all(fixed in (None, got) for fixed, got in ((space.tensor, deg.tensor),
                                                               (space.pipeline, deg.pipeline), (space.data, deg.data)))]
    triples = [Degrees(deg.tensor, deg.pipeline, deg.data, e) for deg in triples
               for e in expert_degrees(experts, deg.data, space.expert)]
    out = []
    for deg in triples:
        if space.micro_batch is not None:
            if (batch // deg.data) % space.micro_batch:
                continue
            bs = [space.micro_batch]
        else:
            bs = micro_batches(batch, deg.data, space.max_micro_batch)
        for b in bs:
            for v in schedules(space, deg.pipeline, layers, batch // (deg.data * b)):
                for r in space.recomputes:
                    for z in space.zeros:
                        out.append(Candidate(deg, b, r, z, v))
    return out


def expert_degrees(experts: int, data: int, fixed: int | None = None) -> list[int]:
    """Expert degrees of a data degree: every e dividing the experts and ``data`` (1 when dense),
    or ``fixed`` alone when it does."""
    found = [e for e in divisors(math.gcd(experts, data))] if experts else [1]
    return [e for e in found if fixed in (None, e)]


def schedules(space: LlmSpace, pipeline: int, layers: int, microbatches: int) -> list[int]:
    """The model chunks a stage a candidate may take: ``space.virtual`` alone when given (and
    possible), else every interleaving when ``space.interleave``, else plain 1F1B."""
    if space.virtual is not None:
        return [v for v in virtual_stages(pipeline, layers, microbatches) if v == space.virtual]
    return virtual_stages(pipeline, layers, microbatches) if space.interleave else [1]


def virtual_stages(pipeline: int, layers: int, microbatches: int) -> list[int]:
    """Model chunks a stage can take: 1, and under Megatron's interleaved schedule every v > 1 with
    the layers split evenly into p x v chunks and the micro-batches a multiple of p (Megatron-LM's
    requirement for interleaving)."""
    if pipeline == 1 or layers % pipeline or microbatches % pipeline:
        return [1]
    return divisors(layers // pipeline)
