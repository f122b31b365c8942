"""Uneven splits: group shares and amounts of plans with split fractions, the alpha space and the split rules.

The derivation: docs/derivations.md, "`explorer.core.uneven`".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from fractions import Fraction
from itertools import product
from math import prod
from typing import Sequence

from .array import ArraySpec
from .comm import held_elements, share_flops, whole_sizes
from .errors import SpecError
from .identity_memo import once
from .kinds import DEFAULT_ALPHA_GRID, MAX_ALPHA_GRID, MIN_ALPHA_GRID, SPLIT_TIME_LIMIT, FreeAlphas  # noqa: F401 - re-exported
from .network import Layer, LayerKind, Network
from .partition import HALF, Dim, Pair, PartitionType, Size, TypeSpec, node_relayouts
from .plan import Plan
from .timing import Communication

SHARE_POSITION = {Dim.B: 0, Dim.D_I: 1, Dim.D_O: 2, Dim.G: 3}  # in a share tuple (S is never split)
SIZE_DIMS = tuple(tuple(SHARE_POSITION[d] for d in s.dims if d in SHARE_POSITION) for s in Size)  # per size

_DIMS = (Dim.B, Dim.D_I, Dim.D_O, Dim.G)




def alpha_grid(denominator: int) -> tuple[Fraction, ...]:
    """The declared alpha set: k / denominator for k = 1 .. denominator - 1 (1/2 among them when even)."""
    if denominator < 2:
        raise ValueError("an alpha grid needs a denominator of at least 2")
    return tuple(Fraction(k, denominator) for k in range(1, denominator))


def check_network(network: Network) -> None:
    """The model covers every node kind of the equal-split model (conv, grouped too; fc; embedding;
    add, concat and attention joins); a kind added later is refused until it is derived here."""
    for layer in network.layers:
        if layer.kind not in _MODELLED:
            raise SpecError("--model", f"{network.name}: node {layer.name!r} is a {layer.kind.value} node; uneven "
                            "splits are not modelled for it")


_MODELLED = frozenset({LayerKind.CONV, LayerKind.FC, LayerKind.EMBEDDING, LayerKind.ADD, LayerKind.CONCAT,
                       LayerKind.ATTENTION})


def spec_of(layer: Layer, t: PartitionType) -> TypeSpec:
    """The node's behaviour under type t (``Layer.node_types``: a grouped conv's II is ``GROUP_SPLIT``)."""
    sp = layer.node_types.specs[t.index]
    if sp is None:
        raise ValueError(f"node {layer.name!r} ({layer.node_types.name}) cannot take type {t}")
    return sp


def split_units(layer: Layer) -> tuple[int, Dim, str] | None:
    """What type II must keep whole on each side of a split, as (count, the dimension II splits,
    its name): a grouped conv's G groups (its group split halves ``Dim.G``), an attention node's
    heads (II halves D_i, the heads' channels); None for other nodes (``Layer.split_levels``)."""
    if layer.split_levels is None:
        return None
    unit = spec_of(layer, PartitionType.II).halves
    return (layer.groups, unit, "group") if layer.kind is LayerKind.CONV else (layer.kv_heads or layer.heads, unit, "head")


def whole_units(layer: Layer, types: Sequence[PartitionType], alphas: Sequence[Sequence[Fraction]]) -> bool:
    """The whole-groups rule of a grouped conv and the whole-heads rule of an attention node with
    ``heads``, for one node's choices on every level (``types[h]``, ``alphas[h][group]``): wherever
    a group splits the units (type II) unevenly or not, each side must get a whole number of
    them, i.e. alpha times the group's count of units (the node's count times its share of the
    units' dimension: G for groups, D_i for heads) is an integer. Always true for other nodes."""
    units = split_units(layer)
    return units is None or _whole_units(layer, units, types, alphas)


def _whole_units(node: Layer, units, types, alphas, fix: bool = False) -> bool:
    """``whole_units`` of a node that splits ``units``; ``fix``: a group of n units whose side would
    get a fraction takes the nearest k/n, 1 <= k < n (the smaller on a tie), into ``alphas``
    (lists), False only where that cannot be (``round_to_whole_units``)."""
    total, unit, _ = units
    counts = [Fraction(total)]  # per group of the level: its count of units
    for h, t in enumerate(types):
        split = spec_of(node, t).halves is unit
        nxt = []
        for g, n in enumerate(counts):
            if not split:
                nxt += [n, n]
                continue
            a = alphas[h][g]
            if (n * a).denominator != 1:
                if not fix or n.denominator != 1 or n < 2:
                    return False
                k = min(range(1, int(n)), key=lambda k: (abs(Fraction(k) - n * a), k))
                a = alphas[h][g] = Fraction(k) / n
            nxt += [n * a, n * (1 - a)]
        counts = nxt
    return True


def check_array(array: ArraySpec) -> None:
    """SpecError (naming the array's file and ``communication``) on a shared medium: a pair's
    exchange takes max(side 0, side 1) / b_h on links of its own, and on one medium every transfer
    queues behind the others. Per-level links of an H-tree or a torus are modelled (a torus link by
    link where a split below the top is uneven: ``core.torus_links``)."""
    if array.communication is not Communication.PER_LEVEL:
        raise SpecError(_array_source(array), "communication: shared: uneven splits are modelled on per-level links "
                        "(an H-tree or a torus) only: a pair's exchange takes the busier side's amount at the "
                        "level's bandwidth on links of its own, while on one shared medium every transfer queues")


def _array_source(array: ArraySpec) -> str:
    return array.source or f"array {array.name!r}"


# ---- shares of a group ------------------------------------------------------------------------


def side_share(alpha: Fraction, side: int) -> Fraction:
    return alpha if side == 0 else 1 - alpha


def alpha_units(alpha: Fraction, D: int) -> int:
    """Side 0's part ``alpha`` as its numerator over D (a multiple of its denominator: the integer
    tables' common denominator); side 1's is D minus it."""
    return alpha.numerator * (D // alpha.denominator)


def ancestor_path(level: int, group: int):
    """(level k, its group, the side taken) for k = 0 .. level-1 on the way down to ``group``."""
    return [(k, group >> (level - k), (group >> (level - 1 - k)) & 1) for k in range(level)]


def group_shares(plan: Plan, level: int, group: int, layer: int, node: Layer | None = None) -> dict[Dim, Fraction]:
    """Layer's share of B, D_i, D_o and G in group ``group`` of level ``level`` (its path: the binary
    spelling of ``group`` on ``level`` bits, top first; each ancestor's own alpha)."""
    shares = {d: Fraction(1) for d in _DIMS}
    for k, anc, side in ancestor_path(level, group):
        t = plan.types[k][layer]
        shares[(t.spec if node is None else spec_of(node, t)).halves] *= side_share(plan.alphas[k][anc][layer], side)
    return shares


def group_amounts(network: Network, plan: Plan, level: int, group: int) -> Pair:
    """Elements each side of the group's pair sends at its level: every layer's intra exchange and every edge's re-layout."""
    shares = [_share_triple(group_shares(plan, level, group, l, network.layers[l])) for l in range(len(network.layers))]  # noqa: E741
    return pair_amounts(network, whole_sizes(network), plan.types[level], plan.alphas[level][group], shares)


def _share_triple(s: dict[Dim, Fraction]) -> tuple[Fraction, Fraction, Fraction, Fraction]:
    return s[Dim.B], s[Dim.D_I], s[Dim.D_O], s[Dim.G]


# a size's share from a (B, D_i, D_o, G) share tuple (S is never split; G spans every size)
def _f_in(s) -> Fraction:
    return s[0] * s[1] * s[3]


def _weights(s) -> Fraction:
    return s[1] * s[2] * s[3]


def _f_out(s) -> Fraction:
    return s[0] * s[2] * s[3]


_SIZE_SHARE = {Size.F_IN: _f_in, Size.WEIGHTS: _weights, Size.F_OUT: _f_out}


def group_tensors(network: Network, whole, row, alphas, shares) -> list[tuple[int, Fraction, int, Size]]:
    """(side, elements, holder node, its size) of every tensor one group's sides send at its level:
    each layer's intra exchange (both sides, held by the layer), each edge's forward F (held by the
    producer) and backward E (by the consumer). ``row``: its level's types, ``alphas``: its alphas,
    ``shares``: its (B, D_i, D_o, G) share tuple per layer. Summed by side: ``pair_amounts``; each
    held in its holder's layout: the torus's links (``core.torus_links``)."""
    out = []
    for l, layer in enumerate(network.layers):  # noqa: E741
        tensor = None if layer.is_join else spec_of(layer, row[l]).exchanges
        if tensor is not None:  # None: a grouped conv's group split, no partial sums
            size = tensor.size
            x = whole[l][size.index] * _SIZE_SHARE[size](shares[l])
            out += [(0, x, l, size), (1, x, l, size)]
    for (u, v), share in zip(network.edges, network.edge_shares):
        x = whole[v][0] * _f_in(shares[v]) * share
        f, e = node_relayouts(row[u], alphas[u], row[v], alphas[v], network.layers[u].node_types,
                              network.layers[v].node_types)
        out += [(0, f[0] * x, u, Size.F_OUT), (1, f[1] * x, u, Size.F_OUT), (0, e[0] * x, v, Size.F_IN),
                (1, e[1] * x, v, Size.F_IN)]
    return out


def pair_amounts(network: Network, whole, row, alphas, shares) -> Pair:
    """(side 0, side 1) elements of one group: its ``group_tensors`` summed by side."""
    sides = [Fraction(0), Fraction(0)]
    for side, x, _, _ in group_tensors(network, whole, row, alphas, shares):
        sides[side] += x
    return sides[0], sides[1]


def level_shares(network: Network, plan: Plan) -> list[list[tuple[tuple[Fraction, Fraction, Fraction], ...]]]:
    """[level 0..H][group][layer] -> its (B, D_i, D_o, G) shares, top down: a child's are its
    parent's with the parent's type's dimension times the side's part (``group_shares`` for
    all groups at once). Groups whose paths carry the same alphas get the very same row object
    (computed once), so the evaluator can score such groups once (``evaluate.evaluate_split``)."""
    one = Fraction(1)
    L = len(network.layers)
    out = [[((one, one, one, one),) * L]]
    for h in range(plan.levels):
        dims = [_DIMS.index(spec_of(node, t).halves) for node, t in zip(network.layers, plan.types[h])]
        memo: dict = {}  # (parent row, the side's parts) -> child row
        rest: dict = {}  # alphas -> 1 - alphas (side 1's parts)
        nxt = []
        for g, parent in enumerate(out[h]):
            alphas = plan.alphas[h][g]
            if alphas not in rest:
                rest[alphas] = tuple(1 - a for a in alphas)
            for parts in (alphas, rest[alphas]):
                key = (id(parent), parts)
                row = memo.get(key)
                if row is None:
                    row = memo[key] = _child_row(parent, dims, parts)
                nxt.append(row)
        out.append(nxt)
    return out


def _child_row(parent, dims, parts):
    row = []
    for l, s in enumerate(parent):  # noqa: E741
        t = list(s)
        t[dims[l]] *= parts[l]
        row.append(tuple(t))
    return tuple(row)


def leaf_flops(network: Network, plan: Plan, leaf: int) -> Fraction:
    """Training FLOPs of one accelerator: every layer's FLOPs times its shares of B, D_i and D_o."""
    H = plan.levels
    return shares_flops(network, [_share_triple(group_shares(plan, H, leaf, l, network.layers[l])) for l in range(len(network.layers))])  # noqa: E741


def shares_flops(network: Network, shares) -> Fraction:
    return sum((share_flops(layer, network.batch, s) for layer, s in zip(network.layers, shares)), Fraction(0))


def leaf_footprint_elements(network: Network, shares, weight_copies: int = 0) -> Fraction:
    """One accelerator's memory in elements, ``comm.footprint_elements`` with its shares in
    place of the halvings: per (non-join) layer, (2 + weight_copies) * A(W_l) * share(D_i) *
    share(D_o) + A(F_l) * share(B) * share(D_i). With every alpha 1/2 it is the equal split's."""
    B = network.batch
    return sum((held_elements(layer, layer.input_elements(B) * _f_in(s), layer.weight_elements() * _weights(s), weight_copies)
                for layer, s in zip(network.layers, shares)), Fraction(0))


# ---- plan checks ----------------------------------------------------------------------------


def check_plan(network: Network, array: ArraySpec, plan: Plan) -> None:
    """ValueError unless the plan fits the array and network: shapes, 0 < alpha < 1, types the
    nodes offer at their levels (``offers``) and whole groups or heads (``whole_units``)."""
    L = len(network.layers)
    if plan.levels != array.levels or len(plan.alphas) != array.levels:
        raise ValueError(f"the plan has {plan.levels} levels, the array {array.levels}")
    for h in range(plan.levels):
        if len(plan.types[h]) != L or len(plan.alphas[h]) != 2**h:
            raise ValueError(f"level {h}: one type per layer ({L}) and one alpha row per group ({2**h})")
        for row in {id(r): r for r in plan.alphas[h]}.values():  # each distinct row object once
            if len(row) != L:
                raise ValueError(f"level {h}: one alpha per layer ({L}) in every group")
            for a in row:
                if not 0 < a < 1:
                    raise ValueError(f"level {h}: alpha must be strictly between 0 and 1, got {a}")
    for l, layer in enumerate(network.layers):  # noqa: E741
        types = [plan.types[h][l] for h in range(plan.levels)]
        for h, t in enumerate(types):
            if not layer.offers(t, h):
                raise ValueError(f"level {h}: node {layer.name!r} ({layer.node_types.name}) cannot take type {t}")
        if not whole_units(layer, types, [[row[l] for row in plan.alphas[h]] for h in range(plan.levels)]):
            n, _, unit = split_units(layer)
            raise ValueError(f"node {layer.name!r}: a {unit} split leaves a side a fraction of its {n} {unit}s")


# ---- split rules ------------------------------------------------------------------------------


@lru_cache(maxsize=4)  # (the level DP's start rows ask per level: 10 x 15 ms of Fraction sums on 1,024 kinds)
def proportional_alphas(array: ArraySpec) -> tuple[tuple[Fraction, ...], ...]:
    """Per level per group, subgroup 0's part of the group's peak compute (the ``proportional``
    rule): 1/2 wherever the two subgroups are identical subtrees, so it lies in every AlphaSpace.
    The groups' peak sums are built bottom up (each the sum of its two subgroups': exact, as the
    leaves' sum), and groups of equal sums share one ratio (an array of 2^H leaves: its classes)."""
    sums = [list(array.leaf_peaks_TFLOPS())]  # [H - h] -> per group of level h: its peak sum
    for _ in range(array.levels):
        sums.append(_pairwise(sums[-1], lambda a, b: a + b))
    return tuple(tuple(_pairwise(sums[array.levels - h - 1], lambda a, b: Fraction(a) / (a + b)))
                 for h in range(array.levels))


def _pairwise(xs: list, f) -> list:
    """f(xs[2i], xs[2i + 1]) for each i, computed once per pair of the very objects (leaves of a
    kind share their peak's object, so groups alike share their sums'; ``xs`` outlives the memo)."""
    memo: dict = {}
    return [once(memo, f, xs[i], xs[i + 1]) for i in range(0, len(xs), 2)]


def with_group_alphas(plan: Plan, alphas: Sequence[Sequence[Fraction]]) -> Plan:
    """The plan's types with one alpha per level per group ([level][group]) for every layer (groups
    of one alpha object share one row object: the evaluator scores them once)."""
    rows: dict = {}
    return Plan(plan.types, tuple(tuple(rows.setdefault((id(a), len(row)), (a,) * len(row)) for a in alphas[h])
                                  for h, row in enumerate(plan.types)))


def round_to_whole_units(network: Network, plan: Plan) -> Plan:
    """The plan with each grouped conv's and each attention node's (with heads) alphas moved to
    whole units (``whole_units``): top down, wherever the node splits its units (type II), a
    group of n units whose side would get a fraction takes the nearest k/n, 1 <= k < n (the
    smaller on a tie); where that cannot be (n < 2), every alpha of the node becomes 1/2, which
    holds whole units whenever the plan's types are offered (``Layer.split_levels``). Other
    nodes keep their alphas. Used by the ``proportional`` rule (a peak ratio is rarely a whole
    number of heads)."""
    if all(split_units(node) is None for node in network.layers):
        return plan  # (its row objects kept: groups alike share them, the evaluator scores them once)
    alphas = [[list(row) for row in level] for level in plan.alphas]
    for l, node in enumerate(network.layers):  # noqa: E741
        units = split_units(node)
        if units is None:
            continue
        types = [plan.types[h][l] for h in range(plan.levels)]
        mine = [[row[l] for row in level] for level in alphas]
        whole = _whole_units(node, units, types, mine, fix=True)
        for level, own in zip(alphas, mine):
            for row, a in zip(level, own):
                row[l] = a if whole else HALF
    return Plan(plan.types, tuple(tuple(tuple(row) for row in level) for level in alphas))


def proportional_plan(network: Network, array: ArraySpec, types: Plan) -> Plan:
    """The ``proportional`` rule's plan on ``types``' partition types: every group's alpha its
    subgroup 0's part of the peak compute (``proportional_alphas``), rounded to whole units."""
    return round_to_whole_units(network, with_group_alphas(types, proportional_alphas(array)))


# ---- the declared alpha space -----------------------------------------------------------------


MAX_FREE_CLASSES = 64  # the alpha search (``solvers.uneven.search_level_alphas``) moves one class at a time: more would take hours on a deep mix


@dataclass(frozen=True)
class AlphaSpace:
    """The alphas the solvers choose from: per level, the groups' classes (identical subtrees,
    by leaf peaks and memory) share one alpha per layer; a class is fixed at 1/2 or free: it then chooses
    any value of ``grid`` (multiples of 1/N) or its own proportional ratio (``class_ratio``: its
    subgroup 0's part of its peak compute, e.g. 15/56), so the proportional split lies in the
    space; ``proportional=False`` (``--grid-only``) declares the grid alone. Every solver takes a
    class's values from ``choices``."""

    grid: tuple[Fraction, ...]
    free: FreeAlphas
    group_class: tuple[tuple[int, ...], ...]  # [level][group] -> class (numbered by first appearance)
    class_free: tuple[tuple[bool, ...], ...]  # [level][class]
    class_peaks: tuple[tuple[tuple[Fraction, ...], ...], ...]  # [level][class] -> its leaves' peaks
    proportional: bool = True  # free classes also take their proportional ratio
    _choices: tuple = field(init=False, repr=False, compare=False)  # [level][class] -> sorted values

    def __post_init__(self) -> None:
        rows = tuple(tuple(self._declared(h, c) for c in range(len(row))) for h, row in enumerate(self.class_free))
        object.__setattr__(self, "_choices", rows)

    def _declared(self, level: int, cls: int) -> tuple[Fraction, ...]:
        if not self.class_free[level][cls]:
            return (HALF,)
        if not self.proportional:
            return tuple(self.grid)
        return tuple(sorted(set(self.grid) | {self.class_ratio(level, cls)}))

    def class_ratio(self, level: int, cls: int) -> Fraction:
        """The class's proportional alpha: its subgroup 0's part of its leaves' peak compute."""
        peaks = self.class_peaks[level][cls]
        left = sum(peaks[: len(peaks) // 2], Fraction(0))
        return left / (left + sum(peaks[len(peaks) // 2 :], Fraction(0)))

    def values(self) -> tuple[Fraction, ...]:
        """Every alpha some class may take, and 1/2, sorted."""
        return tuple(sorted({a for row in self._choices for vs in row for a in vs} | {HALF}))

    @property
    def levels(self) -> int:
        return len(self.group_class)

    def choices(self, level: int, cls: int) -> tuple[Fraction, ...]:
        """The class's declared alphas, ascending: (1/2,) if fixed, else the grid and its ratio."""
        return self._choices[level][cls]

    def free_classes(self) -> list[tuple[int, int]]:
        """(level, class) of every free class, top first."""
        return [(h, c) for h, row in enumerate(self.class_free) for c, f in enumerate(row) if f]

    def row_count(self, level: int) -> int:
        """How many rows ``level_rows`` gives, without building them (an array of many kinds: astronomically many)."""
        return prod(len(self.choices(level, c)) for c in range(len(self.class_free[level])))

    def level_rows(self, level: int) -> list[tuple[Fraction, ...]]:
        """Every choice of a level's alphas for one layer, as one alpha per group."""
        classes = self.group_class[level]
        out = []
        for pick in product(*(self.choices(level, c) for c in range(len(self.class_free[level])))):
            out.append(tuple(pick[c] for c in classes))
        return out

    def contains(self, plan: Plan) -> bool:
        """Whether a plan's alphas lie in this space (classes agree, fixed ones 1/2, free ones in ``choices``)."""
        for h, groups in enumerate(plan.alphas):
            pairs = {(c, id(row)): (c, row) for c, row in zip(self.group_class[h], groups)}  # each alike once
            for l in range(len(groups[0])):  # noqa: E741
                seen: dict[int, Fraction] = {}
                for c, row in pairs.values():
                    if seen.setdefault(c, row[l]) != row[l] or row[l] not in self.choices(h, c):
                        return False
        return True


def alpha_space(array: ArraySpec, grid: Sequence[Fraction], free: FreeAlphas = FreeAlphas.UNLIKE,
                proportional: bool = True) -> AlphaSpace:
    """The declared alpha space of an array (module docstring): classes by identical subtrees
    (leaf by leaf equal peak compute and memory, ``ArraySpec.leaf_figures``: kinds of equal speed
    but unequal memory differ, so their split is free); ``proportional=False``: the grid alone
    (each free class's ratio left out)."""
    figures = array.leaf_figures()
    H = array.levels
    leaf: dict = {}  # figures -> a leaf's identity; a group's: its class (its subgroups' identities)
    below = [leaf.setdefault(f, len(leaf)) for f in figures]  # per group of the level below: its identity
    group_class, class_free, class_peaks = [None] * H, [None] * H, [None] * H
    for h in reversed(range(H)):
        n = 2 ** (H - h)
        pairs = [(below[2 * g], below[2 * g + 1]) for g in range(2**h)]
        nums: dict = {}  # pair -> class, numbered by first appearance (left to right)
        group_class[h] = tuple(nums.setdefault(p, len(nums)) for p in pairs)
        first = {c: g for g, c in reversed(list(enumerate(group_class[h])))}  # class -> its first group
        class_peaks[h] = tuple(tuple(peak for peak, _ in figures[first[c] * n: (first[c] + 1) * n]) for c in range(len(nums)))
        class_free[h] = tuple(free is FreeAlphas.ALL or p[0] != p[1] for p in nums)
        below = group_class[h]
    return AlphaSpace(tuple(grid), free, tuple(group_class), tuple(class_free), tuple(class_peaks), proportional)
