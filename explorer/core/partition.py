"""Partition types described once, partition spaces, and the inter-layer table derived from layouts.

The derivation: docs/derivations.md, "Partition types and layouts".
"""

from __future__ import annotations

import enum
import numbers
from dataclasses import dataclass, replace
from fractions import Fraction
from functools import lru_cache


class PartitionType(enum.Enum):
    """How one level halves a layer's work between the two sibling groups (described in ``TYPE_SPECS``)."""

    __hash__ = object.__hash__  # members are singletons (equality is identity): C's hash, not Enum's Python-level one

    I = "I"  # noqa: E741 - the paper's name. Data parallelism: split batch B.
    II = "II"  # model parallelism: split input channels D_i.
    III = "III"  # AccPar Type-III: split output channels D_o.

    # Set on each member from the type table below (plain attributes: hot loops read them, and
    # dicts keyed by an enum pay for Enum.__hash__):
    index: int  # position in the global type order (ALL_TYPES) and in count vectors
    spec: TypeSpec  # its row of TYPE_SPECS
    exchanged: int  # position, in (A(F_l), A(W_l), A(F_{l+1})), of the size its intra exchange carries

    def __str__(self) -> str:
        return self.value


class Dim(enum.Enum):
    """A dimension of a layer's matrix product that a partition type can halve (model.md section 2)."""

    B = "B"  # batch
    D_I = "D_i"  # input channels (fc: input features)
    D_O = "D_o"  # output channels
    S = "S"  # spatial extent (S_in of the input, S_out of the output); no type halves it today
    G = "G"  # groups of a grouped convolution: a group split halves every tensor of the layer


class Size(enum.Enum):
    """A layer's three tensor sizes and the dimensions each one spans (model.md section 2)."""

    __hash__ = object.__hash__  # members are singletons (equality is identity): C's hash, not Enum's Python-level one

    F_IN = (Dim.B, Dim.D_I, Dim.S, Dim.G)  # A(F_l) = A(E_l) = B * D_i * S_in
    WEIGHTS = (Dim.D_I, Dim.D_O, Dim.G)  # A(W_l) = A(dW_l) = D_i * D_o * k^2 / G
    F_OUT = (Dim.B, Dim.D_O, Dim.S, Dim.G)  # A(F_{l+1}) = A(E_{l+1}) = B * D_o * S_out

    @property
    def dims(self) -> tuple[Dim, ...]:
        return self.value

    @property
    def index(self) -> int:
        """Position in (A(F_l), A(W_l), A(F_{l+1})) tuples."""
        return _SIZE_INDEX[self]


class Tensor(enum.Enum):
    """A tensor a partition type's intra-layer partial-sum exchange carries, and its size."""

    DW = ("dW_l", Size.WEIGHTS)  # weight gradient
    F_OUT = ("F_{l+1}", Size.F_OUT)  # output activation
    E_IN = ("E_l", Size.F_IN)  # input error

    @property
    def size(self) -> Size:
        return self.value[1]

    def __str__(self) -> str:
        return self.value[0]


class Layout(enum.Enum):
    """How a tensor is laid out across the two sibling groups of a level."""

    __hash__ = object.__hash__  # members are singletons (equality is identity): C's hash, not Enum's Python-level one

    ROW = "row"  # split by batch
    COL = "col"  # split by channel
    DUP = "dup"  # duplicated in both groups


HALF = Fraction(1, 2)  # the even split: each subgroup gets half of the split dimension
Pair = tuple[Fraction, Fraction]  # (side 0 sends, side 1 sends)


def _positive(x):
    return max(x, x * 0)


def relayout_split(src: Layout, a: Fraction, dst: Layout, b: Fraction, whole=1, positive=_positive) -> Pair:
    """The one re-layout formula: (side 0 sends, side 1 sends) as fractions of the whole tensor,
    to go from ``src`` split a : 1-a between the two subgroups to ``dst`` split b : 1-b.

    row(a) -> col(b) (or col -> row): side 0 keeps a*b and receives (1-a)*b, side 1 receives
    a*(1-b); the same split a -> b: only the part that moves, max(a-b, 0) and max(b-a, 0); split
    -> duplicated: each side sends what it holds, a and 1-a; duplicated -> anything: nothing.

    In integer units (``core.split_costs``): a = k_a and b = k_b parts of ``whole`` = D give the
    same amounts times D^2, exactly; a and b may then be numpy integer arrays (broadcast together)
    with ``positive`` = max(x, 0) elementwise."""
    if src is Layout.DUP:
        return a * 0, a * 0
    if dst is Layout.DUP:
        return a * whole, (whole - a) * whole
    if src is dst:
        return positive(a - b) * whole, positive(b - a) * whole
    return a * (whole - b), (whole - a) * b


# ---- k-way levels: the collectives (docs/model-implemented.md, "Levels of any fan-out") --------
# A level splits a group into k parts (HyPar: k = 2). Per part (subgroup) and one way, with ring
# collectives (for powers of two, recursive halving/doubling moves the same bytes): an all-reduce
# of a tensor sends 2(k-1)/k of it, an all-gather (split -> duplicated) (k-1)/k, an all-to-all
# (row <-> col) (k-1)/k^2; the same layout, or from duplicated, nothing. At k = 2: 1, 1/2, 1/4,
# HyPar's numbers; the even-split helpers below (the inter-layer coefficients, the intra amount
# of ``comm``) are these functions at k = 2.


def _check_fanout(k: int) -> None:
    if not isinstance(k, numbers.Integral) or isinstance(k, bool) or k < 1:
        raise ValueError(f"a level's fan-out must be a whole number >= 1, got {k!r}")


def allreduce_fraction(k: int) -> Fraction:
    """Elements each of the k parts sends, as a fraction of the tensor, in a ring all-reduce of
    the parts' partial sums: 2(k-1)/k (reduce-scatter (k-1)/k, then all-gather (k-1)/k)."""
    _check_fanout(k)
    return Fraction(2 * (k - 1), k)


def reduce_scatter_fraction(k: int) -> Fraction:
    """Elements each of the k parts sends, as a fraction of the tensor, in a ring reduce-scatter
    of the parts' partial sums into a split layout (each part left with the sum of its 1/k):
    (k-1)/k, half an all-reduce (the all-reduce is a reduce-scatter then an all-gather)."""
    _check_fanout(k)
    return Fraction(k - 1, k)


def relayout_fraction(src: Layout, dst: Layout, k: int) -> Fraction:
    """Elements each of the k parts sends, as a fraction of the whole tensor, to go from src to
    dst laid out evenly over k parts: all-gather (k-1)/k for split -> duplicated, all-to-all
    (k-1)/k^2 for row <-> col (each part keeps the 1/k^2 block of its row in its column), 0 from
    duplicated or to the same layout."""
    _check_fanout(k)
    if src is Layout.DUP or src is dst:
        return Fraction(0)
    if dst is Layout.DUP:
        return Fraction(k - 1, k)
    return Fraction(k - 1, k * k)


@dataclass(frozen=True, slots=True)
class TypeLayouts:
    """Layouts one partition type produces and needs at its input and output."""

    f_in_needed: Layout  # layer input F_l as the layer needs it
    f_out_produced: Layout  # layer output F_{l+1} as the layer leaves it (after its own reduction)
    e_in_produced: Layout  # input error E_l as the layer leaves it (after its own reduction)
    e_out_needed: Layout  # output error E_{l+1} as the layer needs it


@dataclass(frozen=True, slots=True)
class TypeSpec:
    """Everything the model knows about one partition type."""

    halves: Dim  # the dimension each choice of this type halves at the levels below
    exchanges: Tensor | None  # the tensor of its intra-layer exchange (None: no partial sums)
    layouts: TypeLayouts  # on a layer (conv, fc)
    join_layouts: TypeLayouts | None  # on a join node (add, concat, attention); None: not allowed there
    aliases: tuple[str, ...] = ()  # other spellings accepted on input (besides the name and 1-based number)


_ROW = TypeLayouts(Layout.ROW, Layout.ROW, Layout.ROW, Layout.ROW)
_COL = TypeLayouts(Layout.COL, Layout.COL, Layout.COL, Layout.COL)

# The type table, in the global type order (count vectors, tie-breaking, enumeration order).
# Type I splits the batch: everything is row-split; it exchanges its weight gradients.
# Type II splits D_i: it needs F_l channel-split, reduces F_{l+1} to duplicated, needs E_{l+1}
#   whole (duplicated) and produces its own D_i slice of E_l (channel-split).
# Type III splits D_o: it needs F_l whole, leaves F_{l+1} channel-split, needs E_{l+1}
#   channel-split and reduces E_l to duplicated.
# A join node is elementwise and keeps one layout throughout: I = row, II = column; no III.
TYPE_SPECS: dict[PartitionType, TypeSpec] = {
    PartitionType.I: TypeSpec(Dim.B, Tensor.DW, _ROW, _ROW, aliases=("DP",)),
    PartitionType.II: TypeSpec(Dim.D_I, Tensor.F_OUT, TypeLayouts(Layout.COL, Layout.DUP, Layout.COL, Layout.DUP), _COL,
                               aliases=("MP",)),
    PartitionType.III: TypeSpec(Dim.D_O, Tensor.E_IN, TypeLayouts(Layout.DUP, Layout.COL, Layout.DUP, Layout.COL), None),
}
assert set(TYPE_SPECS) == set(PartitionType), "every partition type has a row in TYPE_SPECS"

ALL_TYPES: tuple[PartitionType, ...] = tuple(TYPE_SPECS)
NUM_TYPES = len(ALL_TYPES)
_SIZE_INDEX: dict[Size, int] = {s: i for i, s in enumerate(Size)}
for _k, _t in enumerate(ALL_TYPES):
    _t.index, _t.spec, _t.exchanged = _k, TYPE_SPECS[_t], TYPE_SPECS[_t].exchanges.size.index


class Space(enum.Enum):
    """Which partition types a plan may use."""

    HYPAR = "hypar"  # the paper's two types
    ACCPAR = "accpar"  # every type in the table

    @property
    def types(self) -> tuple[PartitionType, ...]:
        """The space's types, in the global type order."""
        if self is Space.HYPAR:
            return (PartitionType.I, PartitionType.II)
        return ALL_TYPES

    def __str__(self) -> str:
        return self.value


# ---- count vectors: how many times a layer took each type at the levels above ----------------

Counts = tuple[int, ...]  # one entry per type, in the global type order (NUM_TYPES long)
ZERO_COUNTS: Counts = (0,) * NUM_TYPES


def zero_counts(layers: int) -> list[Counts]:
    """Every layer's counts before level 0."""
    return [ZERO_COUNTS] * layers


class _Successors(dict):
    """counts -> the counts after one more level of each type (in type order), memoised."""

    def __missing__(self, counts: Counts) -> tuple[Counts, ...]:
        nxt = tuple(counts[:i] + (counts[i] + 1,) + counts[i + 1 :] for i in range(NUM_TYPES))
        self[counts] = nxt
        return nxt


_SUCCESSORS = _Successors()


def add_type(counts: Counts, t: PartitionType) -> Counts:
    """Counts after one more level of type t."""
    return _SUCCESSORS[counts][t.index]


def advance(counts: list[Counts], row) -> list[Counts]:
    """Every layer's counts after a level whose row of types is ``row``."""
    successors = _SUCCESSORS
    return [successors[c][t.index] for c, t in zip(counts, row)]


# For each size: the positions (in count vectors) of the types whose halved dimension it spans.
HALVED_BY: dict[Size, tuple[int, ...]] = {
    size: tuple(i for i, t in enumerate(ALL_TYPES) if TYPE_SPECS[t].halves in size.dims) for size in Size
}


class _Halvings(dict):
    """counts -> ``halvings(counts)``, memoised (the tables look it up in their inner loops)."""

    def __missing__(self, counts: Counts) -> tuple[int, ...]:
        shifts = tuple(sum(counts[i] for i in HALVED_BY[size]) for size in Size)
        self[counts] = shifts
        return shifts


HALVINGS = _Halvings()


def halvings(counts: Counts) -> tuple[int, ...]:
    """How many times each size (in ``Size`` order) has been halved by the choices in ``counts``:
    a dimension is halved once per earlier choice of any type that halves it (model.md section 3)."""
    return HALVINGS[counts]


def compositions(h: int, space: Space) -> list[Counts]:
    """Every count vector reachable after h levels in the space (entries of types outside it are 0),
    in descending lexicographic order."""
    return list(_compositions(h, space))


@lru_cache(maxsize=None)
def _compositions(h: int, space: Space) -> tuple[Counts, ...]:
    positions = [t.index for t in space.types]
    out: list[Counts] = []
    acc = [0] * NUM_TYPES

    def fill(j: int, left: int) -> None:
        if j == len(positions) - 1:
            acc[positions[j]] = left
            out.append(tuple(acc))
            return
        for a in range(left, -1, -1):
            acc[positions[j]] = a
            fill(j + 1, left - a)
        acc[positions[j]] = 0

    fill(0, h)
    return tuple(out)


# ---- layouts and the derived inter-layer table -----------------------------------------------

JOIN_TYPES: tuple[PartitionType, ...] = tuple(t for t in ALL_TYPES if TYPE_SPECS[t].join_layouts is not None)


@dataclass(frozen=True, slots=True)
class InterCoeff:
    """Inter-layer amount as fractions of the consumer's F and E: f * A(F) + e * A(E)."""

    f: Fraction
    e: Fraction

    @property
    def total(self) -> Fraction:
        """f + e: the amount in units of A(F) = A(E) (they have the same size)."""
        return self.f + self.e


def inter_coeff(prev: PartitionType, nxt: PartitionType) -> InterCoeff:
    """Derived inter-layer re-layout between a layer of type prev and a layer of type nxt
    (``node_inter_coeff`` for nodes of any behaviour).

    Forward: the producer's F_out layout must become the consumer's needed F_in layout.
    Backward: the consumer's produced E_in layout must become the producer's needed E_out layout.
    """
    return node_inter_coeff(prev, nxt, LAYER_TYPES, LAYER_TYPES)


def inter_fractions(p: TypeLayouts, n: TypeLayouts, k: int) -> InterCoeff:
    """The re-layouts on an edge from a producer laid out ``p`` to a consumer laid out ``n`` at a
    level of fan-out k, as fractions of the consumer's A(F) = A(E): forward F (the producer's
    output to the consumer's needed input) and backward E (the consumer's input error to the
    producer's needed output error), each ``relayout_fraction``."""
    return InterCoeff(f=relayout_fraction(p.f_out_produced, n.f_in_needed, k),
                      e=relayout_fraction(n.e_in_produced, p.e_out_needed, k))


# ---- per-node behaviour: the one hook for layers whose types act differently ------------------

# Type II on a grouped convolution whose split falls on group boundaries (docs/model-implemented.md, "Per-node behaviour":
# grouped convolutions): each half takes half of the groups, so it halves G (every tensor of the
# layer), needs its groups' input channels, leaves its groups' output channels (column-split
# both ways) and needs no partial-sum reduction.
GROUP_SPLIT = TypeSpec(Dim.G, None, _COL, None)
# Type III on an embedding splits the hidden width: the lookup's input is token ids, which
# have no error to reduce, so it exchanges nothing.
EMBEDDING_III = TypeSpec(Dim.D_O, None, TYPE_SPECS[PartitionType.III].layouts, None)


class NodeTypes:
    """How one kind of node behaves under each partition type: one ``TypeSpec`` per type (in
    the global order; None where the node cannot take the type) and whether it is a join (then
    its layouts are the specs' ``join_layouts``). Costs everywhere are the one formula of
    ``explorer.core.comm`` applied to these specs: intra = the scaled size of ``exchanges``
    (0 when None), inter from the layouts, halvings from ``halves``."""

    __slots__ = ("name", "specs", "join", "halved_by", "_halvings", "exchanged", "offered")

    def __init__(self, name: str, specs: tuple[TypeSpec | None, ...], join: bool = False):
        self.name, self.specs, self.join = name, specs, join
        self.offered = tuple(t for t in ALL_TYPES if specs[t.index] is not None)
        # for each size: the count positions of the types whose halved dimension it spans
        self.halved_by = tuple(
            tuple(k for k, sp in enumerate(specs) if sp is not None and sp.halves in size.dims) for size in Size)
        self.exchanged = tuple(None if sp is None or sp.exchanges is None or join else sp.exchanges.size.index
                               for sp in specs)
        self._halvings: dict[Counts, tuple[int, ...]] = {}

    def halvings(self, counts: Counts) -> tuple[int, ...]:
        """How many times each size (``Size`` order) is halved after the choices in ``counts``."""
        h = self._halvings.get(counts)
        if h is None:
            h = self._halvings[counts] = tuple(sum(counts[i] for i in hb) for hb in self.halved_by)
        return h

    def layouts(self, t: PartitionType) -> TypeLayouts:
        sp = self.specs[t.index]
        if sp is None:
            raise ValueError(f"a {self.name} node cannot take type {t}")
        return sp.join_layouts if self.join else sp.layouts

    def __repr__(self) -> str:
        return f"NodeTypes({self.name})"


LAYER_TYPES = NodeTypes("layer", tuple(TYPE_SPECS[t] for t in ALL_TYPES))
JOIN_NODE_TYPES = NodeTypes("join", tuple(TYPE_SPECS[t] if t in JOIN_TYPES else None for t in ALL_TYPES), join=True)
GROUPED_TYPES = NodeTypes("grouped conv", tuple(
    GROUP_SPLIT if t is PartitionType.II else TYPE_SPECS[t] if t is PartitionType.I else None for t in ALL_TYPES))
EMBEDDING_TYPES = NodeTypes("embedding", tuple(
    EMBEDDING_III if t is PartitionType.III else TYPE_SPECS[t] for t in ALL_TYPES))


def scattered_layouts(node_types: NodeTypes, t: PartitionType, scatter: Layout | None) -> TypeLayouts:
    """The layouts of a node of kind ``node_types`` under type t whose partial-sum exchange is a
    reduce-scatter into ``scatter`` (ROW or COL; None: today's all-reduce, the type's own
    layouts): the reduced tensor is left split that way instead of duplicated: F_{l+1} when the
    type exchanges its output (II), E_l when it exchanges its input error (III)
    (``fanout.scatter_targets`` says when; docs/model-implemented.md, "Levels of any fan-out")."""
    lay = node_types.layouts(t)
    if scatter is None:
        return lay
    key = (id(node_types), t.index, scatter)
    hit = _SCATTERED.get(key)
    if hit is None:
        i = node_types.exchanged[t.index]
        if scatter is Layout.DUP or i not in (Size.F_OUT.index, Size.F_IN.index):
            raise ValueError(f"a {node_types.name} node of type {t} cannot reduce-scatter into {scatter.value}")
        hit = _SCATTERED[key] = (replace(lay, f_out_produced=scatter) if i == Size.F_OUT.index
                                 else replace(lay, e_in_produced=scatter))
    return hit


_SCATTERED: dict[tuple[int, int, Layout], TypeLayouts] = {}  # NodeTypes are module-level singletons


def node_inter_coeff(prev: PartitionType, nxt: PartitionType, producer: NodeTypes, consumer: NodeTypes) -> InterCoeff:
    """``inter_coeff`` between two nodes of any behaviour (layouts from their ``NodeTypes``)."""
    return inter_fractions(producer.layouts(prev), consumer.layouts(nxt), 2)


def node_inter_fraction(prev: PartitionType, nxt: PartitionType, producer: NodeTypes, consumer: NodeTypes,
                        k: int) -> Fraction:
    """Forward plus backward re-layout (F + E) on an edge at a level of fan-out k, as a fraction of
    the consumer's A(F), each node with its own layouts; ``node_inter_coeff(...).total`` at k = 2."""
    return inter_fractions(producer.layouts(prev), consumer.layouts(nxt), k).total


def node_relayouts(prev: PartitionType, a: Fraction, nxt: PartitionType, b: Fraction, producer: NodeTypes,
                   consumer: NodeTypes, whole=1, positive=_positive) -> tuple[Pair, Pair]:
    """The re-layouts on an edge with uneven splits (producer split a : 1-a, consumer b : 1-b), as
    fractions of A(F) of the consumer's input: (the forward F's (side 0, side 1), held in the
    producer's layout; the backward E's, held in the consumer's). ``whole``, ``positive``: in
    integer units, over arrays (``relayout_split``)."""
    p, n = producer.layouts(prev), consumer.layouts(nxt)
    return (relayout_split(p.f_out_produced, a, n.f_in_needed, b, whole, positive),
            relayout_split(n.e_in_produced, b, p.e_out_needed, a, whole, positive))


def node_inter_split(prev: PartitionType, a: Fraction, nxt: PartitionType, b: Fraction, producer: NodeTypes,
                     consumer: NodeTypes) -> Pair:
    """Forward plus backward re-layout (``node_relayouts`` summed), (side 0, side 1) as fractions of
    A(F) of the consumer's input; at a = b = 1/2 each side sends ``node_inter_coeff(...).total``."""
    (f0, f1), (e0, e1) = node_relayouts(prev, a, nxt, b, producer, consumer)
    return f0 + e0, f1 + e1


# ---- spellings ---------------------------------------------------------------------------------

_SPELLINGS: dict[str, PartitionType] = {
    **{str(i + 1): t for i, t in enumerate(ALL_TYPES)},
    **{a.upper(): t for t in ALL_TYPES for a in TYPE_SPECS[t].aliases},
    **{t.value.upper(): t for t in ALL_TYPES},
}


def _expected() -> str:
    names = [t.value for t in ALL_TYPES]
    return ", ".join(names[:-1]) + " or " + names[-1]


def parse_type(text: str) -> PartitionType:
    """'I', 'II', 'III' (also the 1-based number and the aliases of ``TYPE_SPECS``) -> PartitionType;
    ValueError otherwise."""
    t = _SPELLINGS.get(str(text).strip().upper())
    if t is None:
        raise ValueError(f"unknown partition type {text!r} (expected {_expected()})")
    return t
