"""Levels of any fan-out: a level splits each group into k parts (HyPar's levels: k = 2).

One formula set (docs/model-implemented.md, "Levels of any fan-out"). A type splits its
dimension k ways (I: batch, II: input channels, III: output channels); the collectives are
ring collectives (for powers of two, recursive halving/doubling moves the same bytes): per part
and one way, an all-reduce sends 2(k-1)/k of the tensor, an all-gather (split -> duplicated)
(k-1)/k, an all-to-all (row <-> col) (k-1)/k^2, the same layout or from duplicated nothing.
At k = 2 they are 1, 1/2, 1/4: the binary model's numbers, and the binary helpers
(``partition.relayout_cost``, ``partition.node_inter_coeff``, ``comm.intra_amount``,
``comm.inter_amount``) are these functions at k = 2. Sizes at a level are divided by the
fan-outs of the levels above whose chosen type splits one of their dimensions (the k-way form
of the binary model's halvings): ``comm.divided_sizes``, ``comm.divide``.

``level_amounts`` mirrors the evaluator's per-level c_h (``explorer.core.evaluate``): each
node's own exchange (``comm.exchange_amount``) plus every edge's forward and backward re-layout
on the consumer's input times the edge's share (``comm.edge_amount``), each node with its kind's
behaviour (``Layer.node_types``: joins, grouped convs, embeddings, attention heads). With every
fan-out 2 the sum of a level's two amounts is the evaluator's level cost exactly
(tests/test_fanout.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

from .comm import WHOLE, Divisors, divide, divided_sizes, edge_amount, exchange_amount
from .network import Network
from .partition import (  # noqa: F401 - the primitives are re-exported: this module is the k-way interface
    PartitionType,
    Size,
    allreduce_fraction,
    node_inter_fraction,
    relayout_fraction,
)

_W = Size.WEIGHTS.index

__all__ = ["LevelAmounts", "allreduce_fraction", "check_rows", "level_amounts", "node_inter_fraction",
           "relayout_fraction"]


@dataclass(frozen=True, slots=True)
class LevelAmounts:
    """Elements one group sends to the others of its level per step (one way, per group)."""

    activations: Fraction  # what scales with the batch: II/III partial sums, re-layouts on edges
    weights: Fraction  # what does not: type I weight-gradient all-reduces

    @property
    def total(self) -> Fraction:
        return self.activations + self.weights


def check_rows(network: Network, fanouts: Sequence[int], rows: Sequence[Sequence[PartitionType]]) -> None:
    """ValueError naming the level and node unless ``rows`` has one row per fan-out, one type per
    node, every type one the node's kind takes, and type II splits whole groups/heads: the
    product of the fan-outs of the node's II levels (this one included) divides its
    ``Layer.split_units`` (under binary levels: ``Layer.split_levels``, which is stricter)."""
    if len(rows) != len(fanouts):
        raise ValueError(f"{len(rows)} rows of types for {len(fanouts)} levels")
    for k in fanouts:
        allreduce_fraction(k)  # the fan-out's own check
    layers = network.layers
    split = [1] * len(layers)
    for h, (k, row) in enumerate(zip(fanouts, rows)):
        if len(row) != len(layers):
            raise ValueError(f"level {h}: {len(row)} types for {len(layers)} nodes")
        for n, (x, t) in enumerate(zip(layers, row)):
            if not isinstance(t, PartitionType) or x.node_types.specs[t.index] is None:
                raise ValueError(f"level {h}, node {x.name}: type {t} is not offered to a {x.kind.value} node")
            units = x.split_units
            if t is PartitionType.II and units is not None:
                split[n] *= k
                if units % split[n]:
                    raise ValueError(f"level {h}, node {x.name}: type II at fan-out {k} splits its {units} "
                                     f"{'groups' if x.groups > 1 else 'heads'} into {split[n]} parts (not whole)")


def level_amounts(network: Network, batch: int, fanouts: tuple[int, ...],
                  rows: Sequence[Sequence[PartitionType]]) -> tuple[LevelAmounts, ...]:
    """Per level (top first), the elements one group sends to the others of its level per step
    (per group, one way), at batch ``batch`` (the network's own batch is not read): the sizes at
    level h divided by the fan-outs of the levels above whose type (``rows[j][node]``, as Plan
    rows) splits them. ValueError on rows that do not fit (``check_rows``)."""
    check_rows(network, fanouts, rows)
    layers, edges, shares = network.layers, network.edges, network.edge_shares
    kinds = [x.node_types for x in layers]
    divisors: list[Divisors] = [WHOLE] * len(layers)
    out = []
    for k, row in zip(fanouts, rows):
        sizes = [divided_sizes(x, batch, d) for x, d in zip(layers, divisors)]
        activations = weights = Fraction(0)
        for x, t, s in zip(layers, row, sizes):
            amount = exchange_amount(x, t, s, k)
            if amount:
                if x.node_types.exchanged[t.index] == _W:
                    weights += amount
                else:
                    activations += amount
        for (u, v), share in zip(edges, shares):
            activations += edge_amount(kinds[u], row[u], kinds[v], row[v], sizes[v].f_in, share, k)
        out.append(LevelAmounts(activations, weights))
        divisors = [divide(nt, d, t, k) for nt, d, t in zip(kinds, divisors, row)]
    return tuple(out)
