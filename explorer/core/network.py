"""Networks: weighted layers, join nodes and the edges between them, from the YAML network spec.

Spec (version 1), one file per network::

    version: 1
    name: alexnet
    batch: 512                 # default, overridable on the command line
    layers:
      - {name: conv1, kind: conv, in_channels: 3, out_channels: 96, kernel: 11, in_size: 224, out_size: 55}
      - {name: fc1, kind: fc, in_features: 9216, out_features: 4096}

``in_size``/``out_size`` are square spatial sizes or ``[h, w]``; ``kernel`` an int or
``[kh, kw]``; all three are required for conv layers. They are given, not derived
(model.md section 2). ``description`` is an optional top-level key. Shapes must chain: a
conv's ``in_channels`` equals its input's channels; an fc reads its input flattened, so its
``in_features`` is the input's channels times a spatial size from 1 to the input's own
(pooling may sit between).

Graphs. Every node takes ``inputs: [names]`` (default: the node before it in the file; the
first node, or ``inputs: []``, reads the network input). Weighted layers (conv, fc) take one
input; join nodes (no weights) take two or more:

    - {name: res1, kind: add, inputs: [conv2, proj1]}       # elementwise sum
    - {name: cat1, kind: concat, inputs: [b1, b2]}          # channel concatenation
    - {name: att1, kind: attention, inputs: [q1, k1, v1]}   # attention core, costed like add

A join's channels and spatial size are derived from its inputs (add/attention: all equal;
concat: channels add up); ``size`` sets the spatial size where pooling sits between an
input and the join. The reserved input name ``input`` is the network's input (no edge). Nodes may be listed in any order; they are sorted topologically,
and cycles or inputs naming no node are errors.

How edges cost (extending model.md section 4 to graphs): every edge (producer -> consumer)
carries a tensor and is charged the inter-layer re-layout of the chain model, with the
consumer's scaled sizes. A join node has no weights and no intra-layer cost; it is an
elementwise node that keeps one layout, chosen per level like a layer's type: I = split by
batch (row layout throughout), II = split by channel (column layout throughout); III is not
offered to joins. Its own choices scale its tensor like a layer's (I halves the batch, II
the channels). An edge into a concat carries the producer's share of the concatenated
tensor (its channels / the join's); every other edge carries the consumer's whole input.
A chain written with explicit ``inputs`` costs exactly what the same chain costs in file order.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from fractions import Fraction

NETWORK_INPUT = "input"  # reserved input name: the network's input (no edge)


class LayerKind(enum.Enum):
    CONV = "conv"
    FC = "fc"
    ADD = "add"
    CONCAT = "concat"
    ATTENTION = "attention"

    @property
    def is_join(self) -> bool:
        return self._value_ in _JOIN_KINDS  # by value: Enum.__hash__ is slow in hot loops


_JOIN_KINDS = frozenset({LayerKind.ADD.value, LayerKind.CONCAT.value, LayerKind.ATTENTION.value})


@dataclass(frozen=True, slots=True)
class Layer:
    """A node: a weighted layer (a matrix product with spatial extents folded in, model.md
    section 2) or a join (no weights; in_channels == out_channels, in_size == out_size)."""

    name: str
    kind: LayerKind
    in_channels: int  # D_i (fc: input features; join: its channels)
    out_channels: int  # D_o (fc: output features)
    kernel: tuple[int, int] = (1, 1)
    in_size: tuple[int, int] = (1, 1)
    out_size: tuple[int, int] = (1, 1)

    @property
    def is_join(self) -> bool:
        return self.kind.is_join

    @property
    def kernel_area(self) -> int:
        return self.kernel[0] * self.kernel[1]

    @property
    def s_in(self) -> int:
        return self.in_size[0] * self.in_size[1]

    @property
    def s_out(self) -> int:
        return self.out_size[0] * self.out_size[1]

    def input_elements(self, batch: int) -> int:
        """A(F_l) = A(E_l) = B * D_i * S_in."""
        return batch * self.in_channels * self.s_in

    def weight_elements(self) -> int:
        """A(W_l) = A(dW_l) = D_i * D_o * k^2 (0 for a join)."""
        return 0 if self.is_join else self.in_channels * self.out_channels * self.kernel_area

    def output_elements(self, batch: int) -> int:
        """A(F_{l+1}) = A(E_{l+1}) = B * D_o * S_out."""
        return batch * self.out_channels * self.s_out

    def forward_macs(self, batch: int) -> int:
        """Multiply-accumulates of the forward product: B * S_out * D_o * D_i * k^2 (0 for a join)."""
        if self.is_join:
            return 0
        return batch * self.s_out * self.out_channels * self.in_channels * self.kernel_area


@dataclass(frozen=True, slots=True)
class Network:
    """Nodes in topological order plus edges (producer index -> consumer index).

    ``edge_shares[e]`` is the fraction of the consumer's input tensor that edge e carries
    (below 1 only into a concat)."""

    name: str
    batch: int
    layers: tuple[Layer, ...]
    edges: tuple[tuple[int, int], ...]
    source: str = ""
    edge_shares: tuple[Fraction, ...] = ()

    def __post_init__(self) -> None:
        n = len(self.layers)
        if n == 0:
            raise ValueError("a network needs at least one layer")
        for u, v in self.edges:
            if not (0 <= u < v < n):
                raise ValueError(f"bad edge {u}->{v}: nodes must be in topological order")
        if not self.edge_shares:
            object.__setattr__(self, "edge_shares", tuple(Fraction(1) for _ in self.edges))
        if len(self.edge_shares) != len(self.edges):
            raise ValueError("one share per edge")

    @property
    def is_chain(self) -> bool:
        return not self.has_joins and self.edges == tuple((i - 1, i) for i in range(1, len(self.layers)))

    @property
    def has_joins(self) -> bool:
        return any(L.is_join for L in self.layers)

    @property
    def layer_names(self) -> list[str]:
        return [layer.name for layer in self.layers]

    def with_batch(self, batch: int) -> "Network":
        return Network(self.name, batch, self.layers, self.edges, self.source, self.edge_shares)

    @staticmethod
    def chain(name: str, batch: int, layers: list[Layer] | tuple[Layer, ...], source: str = "") -> "Network":
        return Network(name, batch, tuple(layers), tuple((i - 1, i) for i in range(1, len(layers))), source)


