"""Networks: weighted layers, join nodes and the edges between them, from the YAML network spec.

The full derivation is in the manual: docs/derivations.md, "Networks and graphs".
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache

from .errors import SpecError, shown
from .units import plural
from .partition import EMBEDDING_TYPES, GROUPED_TYPES, JOIN_NODE_TYPES, LAYER_TYPES, NodeTypes, PartitionType

NETWORK_INPUT = "input"  # reserved input name: the network's input (no edge)
# how a network's approximations say it is a mixture of experts (its importer: frontends.transformer;
# frontends.dense_only refuses it on an accelerator array)
MOE_NOTE = "mixture of experts:"
# The share of an edge carrying its consumer's whole input (every edge but those into a concat or
# attention): one object, so that a check over many shares can compare them by identity first.
WHOLE = Fraction(1)


class LayerKind(enum.Enum):
    __hash__ = object.__hash__  # members are singletons (equality is identity): C's hash, not Enum's Python-level one

    CONV = "conv"
    FC = "fc"
    ADD = "add"
    CONCAT = "concat"
    ATTENTION = "attention"
    EMBEDDING = "embedding"

    @property
    def is_join(self) -> bool:
        return self._value_ in _JOIN_KINDS  # by value: Enum.__hash__ is slow in hot loops


_JOIN_KINDS = frozenset({LayerKind.ADD.value, LayerKind.CONCAT.value, LayerKind.ATTENTION.value})
# The members as module constants: reading ``LayerKind.X`` goes through the enum class's
# attribute lookup, several times slower than a global (the per-layer properties run per problem).
_CONV, _EMBEDDING, _ATTENTION = LayerKind.CONV, LayerKind.EMBEDDING, LayerKind.ATTENTION
_TYPE_II = PartitionType.II


def two_adic(n: int) -> int:
    """How many times n can be halved into whole numbers (n > 0)."""
    return (n & -n).bit_length() - 1


@dataclass(frozen=True, slots=True)
class Layer:
    """A node: a weighted layer (a matrix product with spatial extents folded in, model.md
    section 2) or a join (no weights; in_size == out_size; in_channels == out_channels except
    for attention, whose input is its Q, K and V channels together and whose output is the
    context's channels).

    ``in_size``/``out_size`` of fc, embedding and attention nodes are ``(tokens, 1)``: the
    sequence length (1 for a per-sample fc). ``groups`` (conv only) splits the channels into
    G independent groups; ``heads`` (attention only, 0 = not given) is the number of heads;
    ``kv_heads`` (attention only, 0 = as many as ``heads``) the number of key/value heads under
    grouped-query attention: the input is Q (``out_channels``) plus K and V of
    ``kv_heads * out_channels / heads`` channels each."""

    name: str
    kind: LayerKind
    in_channels: int  # D_i (fc: input features; embedding: vocabulary; join: its channels)
    out_channels: int  # D_o (fc: output features; embedding: hidden width)
    kernel: tuple[int, int] = (1, 1)
    in_size: tuple[int, int] = (1, 1)
    out_size: tuple[int, int] = (1, 1)
    groups: int = 1
    heads: int = 0
    kv_heads: int = 0

    @property
    def is_join(self) -> bool:
        return self.kind._value_ in _JOIN_KINDS  # LayerKind.is_join, without a second property call

    @property
    def node_types(self) -> NodeTypes:
        """How the node behaves under each partition type (the per-layer hook of the type table)."""
        if self.is_join:
            return JOIN_NODE_TYPES
        if self.kind is _EMBEDDING:
            return EMBEDDING_TYPES
        return GROUPED_TYPES if self.groups > 1 else LAYER_TYPES

    @property
    def split_units(self) -> int | None:
        """What type II must split whole: the groups of a grouped conv, the heads of an attention
        node with ``heads`` (under grouped-query attention a KV head with its group of query heads:
        ``kv_heads``; a part holding part of a group would need its K and V copied). None: no limit."""
        if self.kind is _CONV and self.groups > 1:
            return self.groups
        if self.kind is _ATTENTION and self.heads > 0:
            return self.kv_heads or self.heads
        return None

    @property
    def split_levels(self) -> int | None:
        """Type II splits whole ``split_units`` (groups, heads): under binary levels it is offered
        only at the first ``two_adic(units)`` levels, where the halves still hold whole units
        (docs/model-implemented.md, "Per-node behaviour"; k-way levels: ``fanout.check_rows``).
        None: no limit."""
        units = self.split_units
        return None if units is None else two_adic(units)

    def offers(self, t: PartitionType, level: int) -> bool:
        """Whether the node can take type t at this level (its kind's types, and ``split_levels``)."""
        if self.node_types.specs[t.index] is None:
            return False
        limit = self.split_levels
        return not (t is _TYPE_II and limit is not None and level >= limit)

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
        """A(F_l) = A(E_l) = B * D_i * S_in (embedding: its B * S token ids)."""
        if self.kind is _EMBEDDING:
            return batch * self.s_in
        return batch * self.in_channels * self.s_in

    def weight_elements(self) -> int:
        """A(W_l) = A(dW_l) = D_i * D_o * k^2 / G (0 for a join; embedding: vocabulary x hidden)."""
        return 0 if self.is_join else self.in_channels * self.out_channels * self.kernel_area // self.groups

    def output_elements(self, batch: int) -> int:
        """A(F_{l+1}) = A(E_{l+1}) = B * D_o * S_out."""
        return batch * self.out_channels * self.s_out

    def forward_macs(self, batch: int) -> int:
        """Multiply-accumulates of the forward product: B * S_out * D_o * D_i * k^2 / G; attention:
        B * S^2 * (D_qk + D_v) (S tokens), Q.K^T (per head an S x d by d x S product, S^2 * D_qk
        over the heads) plus softmax(.).V (S^2 * D_v), where D_v = D_o (the context) and
        D_qk = (D_i - D_o) / 2 (the input is Q, K and V together; Q and K are equally wide): under
        multi-head attention D_i = 3 * D_o, so 2 * B * S^2 * D_o, Megatron's 4 * B * s^2 * h forward
        FLOPs. Under grouped-query attention (``kv_heads``) every query head still meets a K and a V
        head of its own width (shared by its group), so D_qk = D_v = D_o: 2 * B * S^2 * D_o too.
        (Halved last: exact unless B, S and D_i - D_o are all odd, a node whose Q and K differ.)
        0 for an embedding lookup and the other joins."""
        if self.kind is _ATTENTION:
            qk2 = 2 * self.out_channels if self.kv_heads else self.in_channels - self.out_channels  # 2 * D_qk
            return batch * self.s_in * self.s_in * (qk2 + 2 * self.out_channels) // 2
        if self.is_join or self.kind is _EMBEDDING:
            return 0
        return batch * self.s_out * self.out_channels * self.in_channels * self.kernel_area // self.groups


@dataclass(frozen=True, slots=True)
class InputShape:
    """A data input as an importer read it (ONNX): its shape with the symbolic axes filled, and
    which axes were symbolic (axis, dimension name), so a user sees the batch and sequence used."""

    name: str
    shape: tuple[int, ...]
    symbolic: tuple[tuple[int, str], ...] = ()
    batch_axis: int | None = None

    def with_batch(self, batch: int) -> "InputShape":
        if self.batch_axis is None:
            return self
        shape = self.shape[:self.batch_axis] + (batch,) + self.shape[self.batch_axis + 1:]
        return InputShape(self.name, shape, self.symbolic, self.batch_axis)

    def describe(self) -> str:
        """'input 'x': 8 x 3 x 32 x 32 (batch_size = 8)'."""
        filled = ", ".join(f"{dim} = {self.shape[axis]}" for axis, dim in self.symbolic)
        dims = " x ".join(map(str, self.shape)) if self.shape else "a scalar"
        return f"input {self.name!r}: {dims}" + (f" ({filled})" if filled else "")

    def to_json(self) -> dict:
        return {"name": self.name, "shape": list(self.shape),
                "symbolic": [{"axis": axis, "dim": dim, "value": self.shape[axis]} for axis, dim in self.symbolic]}


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
    sequence: int | None = None  # tokens per sample, when the network has a sequence axis
    approximations: tuple[str, ...] = ()  # what the importer could not model exactly
    input_shapes: tuple[InputShape, ...] = ()  # the data inputs an importer read (ONNX), axes filled
    # ``is_chain``, computed on first use (every field it reads is immutable); not a field of
    # equality, hashing or the repr, and never passed: ``dataclasses.replace`` starts it afresh
    _chain: bool | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        n = len(self.layers)
        if n == 0:  # a SpecError (a ValueError): the one-line message every front end gives
            raise SpecError(self.source or f"network {shown(self.name)}", "layers: must be a non-empty list")
        for u, v in self.edges:
            if not (0 <= u < v < n):
                raise ValueError(f"bad edge {u}->{v}: nodes must be in topological order")
        if not self.edge_shares:
            object.__setattr__(self, "edge_shares", (WHOLE,) * len(self.edges))
        if len(self.edge_shares) != len(self.edges):
            raise ValueError("one share per edge")

    @property
    def is_chain(self) -> bool:
        """No joins and every edge from one node to the next (computed once per network)."""
        if self._chain is None:
            object.__setattr__(self, "_chain", not self.has_joins and self.edges == chain_edges(len(self.layers)))
        return self._chain

    @property
    def whole_edges(self) -> bool:
        """Whether every edge carries its consumer's whole input (share 1)."""
        shares = self.edge_shares
        return shares == (WHOLE,) * len(shares) or all(s == 1 for s in shares)

    @property
    def has_joins(self) -> bool:
        return any(L.is_join for L in self.layers)

    @property
    def node_words(self) -> str:
        """Its nodes in words, as ``explore list`` counts them: '8 layers' (a chain) or '29 nodes
        (21 layers, 8 joins)' (joins are nodes the solvers choose a type for, not weighted layers)."""
        joins = sum(L.is_join for L in self.layers)
        n = len(self.layers)
        if not joins:
            return plural(n, "layer")
        return f"{n} nodes ({plural(n - joins, 'layer')}, {plural(joins, 'join')})"

    @property
    def layer_names(self) -> list[str]:
        return [layer.name for layer in self.layers]

    def with_batch(self, batch: int) -> "Network":
        return Network(self.name, batch, self.layers, self.edges, self.source, self.edge_shares, self.sequence,
                       self.approximations, tuple(s.with_batch(batch) for s in self.input_shapes))

    @staticmethod
    def chain(name: str, batch: int, layers: list[Layer] | tuple[Layer, ...], source: str = "") -> "Network":
        return Network(name, batch, tuple(layers), chain_edges(len(layers)), source)


@lru_cache(maxsize=16)
def chain_edges(layers: int) -> tuple[tuple[int, int], ...]:
    """A chain's edges: (0, 1), (1, 2), ... (one tuple per length, shared: ``Network.is_chain``
    compares a network's edges with it, element by element, identical ones at once)."""
    return tuple((i - 1, i) for i in range(1, layers))


