"""The communication model of model.md, in exact rational elements.

This is the definition: tensor sizes (section 2), scaling across levels (section 3),
intra- and inter-layer amounts (section 4). ``explorer.core.costs`` turns it into the integer
cost tables that every solver reads; the evaluator (``explorer.core.evaluate``) scores plans
straight from these functions, so a mistake in the integer tables cannot hide.

``counts`` is how many times a layer took each type at the levels above the current one:
one entry per type in the global type order (``explorer.core.partition.Counts``). What each
type halves and which tensor it exchanges come from the type table ``TYPE_SPECS``.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from .network import Layer, Network
from .network_memo import NetworkMemo
from .partition import (  # noqa: F401 - Counts, ZERO_COUNTS, add_type, advance, zero_counts are re-exported
    JOIN_NODE_TYPES,
    LAYER_TYPES,
    ZERO_COUNTS,
    Counts,
    NodeTypes,
    PartitionType,
    add_type,
    advance,
    allreduce_fraction,
    inter_fractions,
    Layout,
    Pair,
    node_inter_fraction,
    node_inter_split,
    reduce_scatter_fraction,
    scattered_layouts,
    zero_counts,
)


@dataclass(frozen=True, slots=True)
class ScaledSizes:
    """A layer's tensor sizes (elements) at a level, after the halvings of the levels above."""

    f_in: Fraction  # A(F_l) = A(E_l) = B * D_i * S_in
    weights: Fraction  # A(W_l) = A(dW_l) = D_i * D_o * k^2
    f_out: Fraction  # A(F_{l+1}) = A(E_{l+1}) = B * D_o * S_out


Divisors = tuple[int, int, int]  # what each size (``Size`` order) is divided by at a level
WHOLE: Divisors = (1, 1, 1)  # the top level's: nothing divided yet


def divided_sizes(layer: Layer, batch: int, divisors: Divisors) -> ScaledSizes:
    """A layer's tensor sizes at a level: each divided by the product of the fan-outs of the
    levels above whose chosen type splits one of its dimensions (``divide``; under binary levels
    2^halvings, ``scaled_sizes``)."""
    df, dw, do = divisors
    return ScaledSizes(
        f_in=Fraction(layer.input_elements(batch), df),
        weights=Fraction(layer.weight_elements(), dw),
        f_out=Fraction(layer.output_elements(batch), do),
    )


def divide(node_types: NodeTypes, divisors: Divisors, t: PartitionType, k: int) -> Divisors:
    """The divisors after one more level of fan-out k where the node took type t: a size is
    divided by k when t splits one of its dimensions (``NodeTypes.halved_by``)."""
    return tuple(d * k if t.index in hb else d for d, hb in zip(divisors, node_types.halved_by))


def scaled_sizes(layer: Layer, batch: int, counts: Counts) -> ScaledSizes:
    """Each size is halved once per earlier choice of a type that halves one of its dimensions
    (model.md section 3: every I halves B, every II halves D_i, every III halves D_o; the
    layer's ``node_types`` says where a kind differs, e.g. II on a grouped conv halves G):
    ``divided_sizes`` with every fan-out 2."""
    sf, sw, so = layer.node_types.halvings(counts)
    return divided_sizes(layer, batch, (2**sf, 2**sw, 2**so))


def exchange_amount(layer: Layer, t: PartitionType, sizes: ScaledSizes, k: int, scatter: bool = False) -> Fraction:
    """The layer's own partial-sum exchange at a level of fan-out k: a ring all-reduce
    (``allreduce_fraction(k)``) of the tensor its type exchanges (``TypeSpec.exchanges``:
    I -> dW_l, II -> F_{l+1}, III -> E_l, from the layer's ``node_types``), at its ``sizes`` at
    the level; none for a join or a type that splits without partial sums. ``scatter``: a
    reduce-scatter into a split layout instead (``reduce_scatter_fraction(k)``; II's and III's
    activations only, ``fanout.scatter_targets`` says when)."""
    i = layer.node_types.exchanged[t.index]
    if i is None:
        return Fraction(0)
    f = reduce_scatter_fraction(k) if scatter else allreduce_fraction(k)
    return f * (sizes.f_in, sizes.weights, sizes.f_out)[i]


def intra_amount(layer: Layer, batch: int, t: PartitionType, counts: Counts) -> Fraction:
    """The layer's own partial-sum exchange under binary levels (``exchange_amount`` at k = 2:
    the whole scaled tensor, model.md section 4)."""
    if layer.node_types.exchanged[t.index] is None:
        return Fraction(0)
    return exchange_amount(layer, t, scaled_sizes(layer, batch, counts), 2)


def edge_amount(producer: NodeTypes, prev: PartitionType, consumer: NodeTypes, nxt: PartitionType,
                f_in: Fraction, share: Fraction, k: int, producer_scatter: Layout | None = None,
                consumer_scatter: Layout | None = None) -> Fraction:
    """Re-layout of the tensor on an edge at a level of fan-out k, forward and backward
    (``node_inter_fraction``), charged on the consumer's input ``f_in`` at the level times the
    edge's ``share`` of it. ``producer_scatter`` / ``consumer_scatter``: the layout the node's
    reduce-scatter leaves its reduced tensor in (``partition.scattered_layouts``; None: its
    type's own layouts)."""
    if producer_scatter is None and consumer_scatter is None:
        return node_inter_fraction(prev, nxt, producer, consumer, k) * f_in * share
    c = inter_fractions(scattered_layouts(producer, prev, producer_scatter),
                        scattered_layouts(consumer, nxt, consumer_scatter), k)
    return c.total * f_in * share


def edge_parts(producer: NodeTypes, prev: PartitionType, consumer: NodeTypes, nxt: PartitionType,
               f_in: Fraction, share: Fraction, k: int, producer_scatter: Layout | None = None,
               consumer_scatter: Layout | None = None) -> tuple[Fraction, Fraction]:
    """``edge_amount`` as (forward, backward): the re-layout of F and that of E, each alone."""
    key = (id(producer), prev.index, producer_scatter, id(consumer), nxt.index, consumer_scatter, k)
    c = _PARTS.get(key)
    if c is None:  # NodeTypes are module-level singletons: their ids are stable
        if len(_PARTS) > 100_000:
            _PARTS.clear()
        c = _PARTS[key] = inter_fractions(scattered_layouts(producer, prev, producer_scatter),
                                          scattered_layouts(consumer, nxt, consumer_scatter), k)
    x = f_in * share
    return c.f * x, c.e * x


_PARTS: dict = {}  # edge_parts' coefficients by the two ends' kinds, types, reduce-scatters and k


def inter_amount(
    consumer: Layer,
    batch: int,
    prev: PartitionType,
    nxt: PartitionType,
    counts: Counts,
    share: Fraction = Fraction(1),
    producer_is_join: bool = False,
    producer: Layer | None = None,
) -> Fraction:
    """Re-layout of the tensor on an edge, charged on the consumer's input with its scaled sizes;
    ``share`` is the part of the consumer's input the edge carries (below 1 into a concat or an
    attention node). The layouts come from the producer's and consumer's ``node_types`` (when
    ``producer`` is not given: a layer, or a join if ``producer_is_join``); ``edge_amount`` at k = 2."""
    s = scaled_sizes(consumer, batch, counts)
    made = producer.node_types if producer is not None else JOIN_NODE_TYPES if producer_is_join else LAYER_TYPES
    return edge_amount(made, prev, consumer.node_types, nxt, s.f_in, share, 2)  # A(E_l) = A(F_l)


def edge_split(producer: Layer, prev: PartitionType, a: Fraction, consumer: Layer, nxt: PartitionType,
               b: Fraction) -> Pair:
    """``inter_amount``'s coefficient with uneven splits (producer split a : 1-a, consumer b : 1-b),
    each node with its own layouts (``Layer.node_types``): (side 0, side 1) as fractions of the
    consumer's A(F); at a = b = 1/2 both equal the even coefficient's total."""
    return node_inter_split(prev, a, nxt, b, producer.node_types, consumer.node_types)


def footprint_elements(layer: Layer, batch: int, final_counts: Counts, weight_copies: int = 0) -> Fraction:
    """Per-accelerator memory of a layer after all levels, in elements.

    The layer's final local shares (counts after every level): its weights and weight
    gradients split by the II and III choices, ``weight_copies`` more weight-sized buffers
    (optimizer state: 1 for momentum, 2 for Adam), and its input activation F_l, kept for
    the backward pass, split by the I and II choices:
        (2 + weight_copies) * A(W_l) / 2^(n_II + n_III)  +  A(F_l) / 2^(n_I + n_II)
    (the halvings of each size, as in ``scaled_sizes``).
    Output activations are the next layer's inputs; the last layer's output and the error
    tensors in flight are not counted.
    """
    s = scaled_sizes(layer, batch, final_counts)
    return held_elements(layer, s.f_in, s.weights, weight_copies)


def held_elements(layer: Layer, f_in: Fraction, weights: Fraction, weight_copies: int = 0) -> Fraction:
    """The one footprint formula: what an accelerator holding ``f_in`` of the layer's input and
    ``weights`` of its weights (elements, its shares) keeps, (2 + weight_copies) * weights + f_in;
    a join holds nothing. Even splits: the halved sizes (``footprint_elements``); uneven: each
    accelerator's shares (``uneven.leaf_footprint_elements``)."""
    if layer.is_join:
        return Fraction(0)
    return (2 + weight_copies) * weights + f_in


def training_flops(layer: Layer, batch: int) -> int:
    """FLOPs of one training step of a layer: 3 matrix products (forward, backward error,
    weight gradient) of ``Layer.forward_macs`` multiply-accumulates (B * S_out * D_o * D_i * k^2 / G;
    attention 2 * B * S^2 * D), 2 FLOPs each."""
    return 3 * 2 * layer.forward_macs(batch)


_FLOPS: NetworkMemo[int] = NetworkMemo(4)  # a run asks for the same network's FLOPs several times
_SIZES: NetworkMemo[tuple[tuple[int, int, int], ...]] = NetworkMemo(4)


def whole_sizes(network: Network) -> tuple[tuple[int, int, int], ...]:
    """Per node: A(F_l), A(W_l), A(F_{l+1}) in elements at the network's batch (the cost tables
    and the evaluator read them both), memoised for the last few networks."""
    sizes = _SIZES.get(network)
    if sizes is None:
        b = network.batch
        sizes = _SIZES.put(network, tuple([(L.input_elements(b), L.weight_elements(), L.output_elements(b))
                                           for L in network.layers]))
    return sizes


def network_flops(network: Network) -> int:
    """Training FLOPs of one step of the whole network at its batch (``training_flops`` summed over
    the nodes; forward + backward, no recompute), memoised for the last few networks."""
    flops = _FLOPS.get(network)
    if flops is None:
        flops = _FLOPS.put(network, sum(training_flops(layer, network.batch) for layer in network.layers))
    return flops


Shares = tuple[Fraction, Fraction, Fraction, Fraction]  # a group's share of (B, D_i, D_o, G)


def share_flops(layer: Layer, batch: int, s: Shares) -> Fraction:
    """Training FLOPs of the part of a layer a group computes: every FLOP spans B, D_i, D_o and G,
    so ``training_flops`` times the four shares (under even splits: 1 / 2^levels)."""
    return training_flops(layer, batch) * s[0] * s[1] * s[2] * s[3]
