"""Integer cost table of uneven splits: what the uneven solvers sum, per layer column and per
edge's column pair, as exact integers in one unit (docs/model-implemented.md, "Uneven splits in
integers").

A column is a layer's (type, alpha per group) at every level; its vector holds, per leaf, the
layer's training FLOPs there, per (level, group) the elements side 0 and side 1 send (its intra
exchange), and (``VectorLayout.mem``) per leaf its footprint elements; an edge's vector holds its
re-layout per (level, group) side, for the producer's and the consumer's columns.

The unit, U = S * D^(H+1) per element, makes every entry an exact integer (no floor, no slack):
the derivation is on that page.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from fractions import Fraction
from math import lcm, prod
from typing import TYPE_CHECKING, Iterable

from .comm import training_flops
from .network import Network
from .partition import Size, node_relayouts
from .timing import Topology
from .torus_links import link_share, link_windows
from .uneven import SHARE_POSITION, SIZE_DIMS, alpha_units, spec_of

if TYPE_CHECKING:
    from .array import ArraySpec

_F_IN, _W = Size.F_IN.index, Size.WEIGHTS.index


class VectorLayout:
    """Positions in a sum vector: per leaf its FLOPs, then per (level, group) side 0 and side 1,
    then (``links``: a torus whose splits below the top may be uneven) per (level, group) above the
    last its link windows' loads (``torus_links.link_windows``), then (``memory``: where a limit
    can bind) per leaf its footprint elements from ``mem`` on. ``time_pos[(h, g)]``: the positions
    whose max is the group's exchange (its sides, or its windows)."""

    def __init__(self, H: int, memory: bool = False, links: bool = False):
        self.H = H
        self.leaves = 2**H
        self.pos = {}
        i = self.leaves
        for h in range(H):
            for g in range(2**h):
                self.pos[(h, g)] = i
                i += 2
        self.windows: dict = {}  # (h, g) -> ((position, its leaves), ...)
        for h in range(H - 1 if links else 0):
            for g in range(2**h):
                self.windows[(h, g)] = tuple((i + k, w) for k, w in enumerate(link_windows(H, h, g)))
                i += len(self.windows[(h, g)])
        self.time_pos = {hg: tuple(p for p, _ in self.windows[hg]) if hg in self.windows else (p, p + 1)
                         for hg, p in self.pos.items()}
        self.pos_end = i  # the sides (and windows) end here
        self.mem = i if memory else None
        self.size = i + (self.leaves if memory else 0)


def layout_for(array: "ArraySpec", aspace, memory: bool = False) -> VectorLayout:
    """The layout of a solve: link windows on a torus whose alpha space frees a split below the top
    (where a side's accelerators may send unequal parts), sides alone elsewhere."""
    links = array.topology is Topology.TORUS and any(h > 0 for h, _ in aspace.free_classes())
    return VectorLayout(array.levels, memory, links)


def alpha_denominator(alphas: Iterable[Fraction]) -> int:
    """D: the lcm of 2 and the alphas' denominators (every side part is then k/D)."""
    d = 2
    for a in alphas:
        d = lcm(d, a.denominator)
    return d


def edge_tensors(network: Network) -> tuple[list[Fraction], int]:
    """Per edge the tensor it carries (its consumer's A(F) times its share, elements), and S: the
    lcm of their denominators."""
    B = network.batch
    tensors = [network.layers[v].input_elements(B) * share for (_, v), share in zip(network.edges, network.edge_shares)]
    return tensors, lcm(1, *(Fraction(x).denominator for x in tensors))


@dataclass(frozen=True)
class SplitCosts:
    """The integer vectors of one network on H levels for alphas in ``values`` (the alpha space's
    ``values()``), in ``unit`` units per element (module docstring); ``layout`` places them."""

    network: Network
    levels: int
    values: tuple[Fraction, ...]
    layout: VectorLayout
    weight_copies: int = 0
    D: int = field(init=False)
    unit: int = field(init=False)
    S: int = field(init=False)  # the lcm of the edge tensors' denominators (``edge_tensors``)
    _edge_units: list = field(init=False, repr=False)  # per edge its tensor times S (an integer)
    _whole: list = field(init=False, repr=False)  # per layer (A(F_in), A(W), A(F_out)) times S
    _flops: list = field(init=False, repr=False)  # per layer its training FLOPs times S * D

    def __post_init__(self) -> None:
        D = alpha_denominator(self.values)
        tensors, S = edge_tensors(self.network)
        B = self.network.batch
        object.__setattr__(self, "D", D)
        object.__setattr__(self, "S", S)
        object.__setattr__(self, "unit", S * D ** (self.levels + 1))
        object.__setattr__(self, "_edge_units", [int(x * S) for x in tensors])
        object.__setattr__(self, "_whole", [(n.input_elements(B) * S, n.weight_elements() * S, n.output_elements(B) * S)
                                            for n in self.network.layers])
        object.__setattr__(self, "_flops", [training_flops(n, B) * S * D for n in self.network.layers])

    def to_elements(self, units: int) -> Fraction:
        return Fraction(units, self.unit)

    def unit_rates(self, array: "ArraySpec", traffic: bool) -> list[Fraction]:
        """Per component of a vector, the objective's amount per table unit, exact: a leaf's compute
        in seconds (1 / (unit * its peak FLOP/s); nothing under the traffic objective), a link side
        in seconds (dtype bytes / (unit * the level's bandwidth)) or in elements under traffic
        (1 / unit); 0 for the rest (footprints). The one place the solvers turn units into time."""
        lay, U = self.layout, self.unit
        rate = [Fraction(0) if traffic else Fraction(1, U) / (p * 10**12) for p in array.leaf_peaks_TFLOPS()]
        rate += [Fraction(0)] * (lay.size - lay.leaves)
        for (h, _), p in lay.pos.items():
            rate[p] = rate[p + 1] = Fraction(1, U) if traffic else Fraction(array.dtype_bytes, U) / array.bandwidth_Bps(h)
        for (h, _), ws in lay.windows.items():  # a window's load in seconds (none under traffic: it counts sides)
            for p, _ in ws:
                rate[p] = Fraction(0) if traffic else (Fraction(array.dtype_bytes, U) * link_share(self.levels, h)
                                                       / (array.bandwidth_GBps[h] * 10**9))
        return rate

    def whole_units(self, l: int) -> tuple[int, int, int, int]:  # noqa: E741
        """Layer l's whole A(F_in), A(W), A(F_out) and its training FLOPs, in units."""
        w, D = self.D ** self.levels, self.D
        return tuple(x * D * w for x in self._whole[l]) + (self._flops[l] * w,)

    def split_share(self, node, t, nums: tuple, exps: tuple, part) -> tuple[tuple, tuple]:
        """A group's (numerators, powers of D) of its (B, D_i, D_o, G) shares -> its child's on the
        side of ``part`` (k or D - k) under type t. The numerators may be numpy object arrays (one
        entry per alpha: the joint solver's tables)."""
        d = SHARE_POSITION[spec_of(node, t).halves]
        return times(nums, d, part), times(exps, d, 1, 1)

    def shares(self, node, col) -> tuple[list[list[tuple[int, ...]]], list[tuple[int, ...]]]:
        """[level 0..len(col)][group] -> the numerators of its (B, D_i, D_o, G) shares, and [level] ->
        the powers of D under them (the same for every group of a level): ``split_share`` group by
        group. ``col``: per level from the top (all H, or the levels above one) (type, alpha per group)."""
        D = self.D
        rows, exps = [[ONE]], [ZERO]
        for h, (t, alphas) in enumerate(col):
            d = SHARE_POSITION[spec_of(node, t).halves]
            nxt = []
            for s, a in zip(rows[h], alphas):
                k = alpha_units(a, D)
                nxt += [times(s, d, k), times(s, d, D - k)]
            rows.append(nxt)
            exps.append(times(exps[h], d, 1, 1))
        return rows, exps

    def fraction_shares(self, node, col) -> list[list[tuple[Fraction, ...]]]:
        """``shares`` as exact Fractions: [level][group] -> its (B, D_i, D_o, G) shares, each over its
        own path's alphas (no power of the table's D: small where D has thousands of digits)."""
        rows = [[(Fraction(1),) * 4]]
        for h, (t, alphas) in enumerate(col):
            d = SHARE_POSITION[spec_of(node, t).halves]
            rows.append([x for s, a in zip(rows[h], alphas) for x in (times(s, d, a), times(s, d, 1 - a))])
        return rows

    def share_of(self, l: int, size: int | None, shares: tuple) -> Fraction:  # noqa: E741
        """Layer l's whole tensor of ``size`` (a ``Size`` index; None: its training FLOPs) times a
        group's ``fraction_shares`` over the dimensions it spans, exact: what ``group_flops``,
        ``intra`` and ``input_units`` give over ``unit``."""
        if size is None:
            return training_flops(self.network.layers[l], self.network.batch) * prod(shares)
        return Fraction(self._whole[l][size], self.S) * prod(shares[i] for i in SIZE_DIMS[size])

    def intra_share(self, l: int, t, shares: tuple) -> Fraction:  # noqa: E741
        """``intra`` over ``unit`` for a group's ``fraction_shares``, exact."""
        x = self._exchange(l, t)
        return Fraction(0) if x is None else self.share_of(l, x[1], shares)

    def _size_units(self, whole: int, size: int, nums: tuple[int, ...], exps: tuple[int, ...], extra: int = 0) -> int:
        """``whole`` elements of a size times a group's share, in units; ``extra``: powers of D the
        caller's coefficient carries (an edge's: 2)."""
        dims = SIZE_DIMS[size]
        return whole * prod(nums[i] for i in dims) * self.D ** (self.levels + 1 - extra - sum(exps[i] for i in dims))

    def _exchange(self, l: int, t) -> tuple[int, int] | None:  # noqa: E741
        """(whole elements times S, size index) of layer l's intra exchange under t; None for a
        join and a grouped conv's group split (no partial sums)."""
        node = self.network.layers[l]
        tensor = None if node.is_join else spec_of(node, t).exchanges
        return None if tensor is None else (self._whole[l][tensor.size.index], tensor.size.index)

    def intra(self, l: int, t, nums: tuple, exps: tuple):  # noqa: E741
        """What each side of a group with shares (``nums``, ``exps``) sends in layer l's intra
        exchange under type t, in units (0: none)."""
        x = self._exchange(l, t)
        return 0 if x is None else self._size_units(*x, nums, exps)

    def input_units(self, l: int, nums: tuple, exps: tuple):  # noqa: E741
        """Layer l's A(F_in) times a group's F_in share (``nums``, ``exps``), in units: what a
        re-layout coefficient of one moves into the group, before the edge's share."""
        return self._size_units(self._whole[l][_F_IN], _F_IN, nums, exps)

    def group_flops(self, l: int, nums: tuple, level: int):  # noqa: E741
        """Layer l's training FLOPs in a level-``level`` group of share numerators ``nums`` (over
        D^level), in units (``leaf_flops`` at level H)."""
        return self.leaf_flops(l, nums) * self.D ** (self.levels - level)

    def leaf_flops(self, l: int, nums: tuple):  # noqa: E741
        """Layer l's training FLOPs on a leaf of share numerators ``nums`` (over D^H), in units."""
        return self._flops[l] * nums[0] * nums[1] * nums[2] * nums[3]

    def relayout_share(self, e: int, nums: tuple, exps: tuple):
        """Edge e's tensor times its consumer's F_in share (``nums``, ``exps``) at a group, in units
        per D^2 of the re-layout coefficient (``coefficients``): the re-layout is their product."""
        return self._size_units(self._edge_units[e], _F_IN, nums, exps, 2)

    def footprint(self, l: int, nums: tuple, exps: tuple):  # noqa: E741
        """Layer l's footprint on a leaf of shares (``nums``, ``exps``), in units: its weights, their
        gradient and ``weight_copies`` more, and its input (a join's: none, the caller's to skip)."""
        whole = self._whole[l]
        return ((2 + self.weight_copies) * self._size_units(whole[_W], _W, nums, exps)
                + self._size_units(whole[_F_IN], _F_IN, nums, exps))

    def layer(self, l: int, col) -> tuple[int, ...]:  # noqa: E741
        """Layer l's own vector under column ``col``: FLOPs per leaf, its intra exchange on both
        sides of every group, its footprint per leaf (``layout.mem``)."""
        lay, node = self.layout, self.network.layers[l]
        rows, exps = self.shares(node, col)
        H = self.levels
        v = [0] * lay.size
        for i, s in enumerate(rows[H]):
            v[i] = self.leaf_flops(l, s)
        if lay.mem is not None and not node.is_join:
            for i, s in enumerate(rows[H]):
                v[lay.mem + i] = self.footprint(l, s, exps[H])
        if node.is_join:
            return tuple(v)
        for h, (t, _) in enumerate(col):
            x = self._exchange(l, t)
            parts = None  # the node's leaf parts at level h (torus windows): one for every group
            for g, s in enumerate(rows[h] if x else ()):
                p = lay.pos[(h, g)]
                v[p] = v[p + 1] = self._size_units(*x, s, exps[h])
                if (h, g) in lay.windows:
                    parts = parts or self.leaf_parts(node, col, h, _SIZES[x[1]])
                    for q, leaves in lay.windows[(h, g)]:
                        v[q] = self._below(h, v[p] * sum(parts[i] for i in leaves))
        return tuple(v)

    def leaf_parts(self, node, col, h: int, size: Size) -> list[int]:
        """Per leaf, its part of a tensor of ``size`` held by ``node`` (under column ``col``) that its
        side sends at level h, times D^(H-h-1): over the levels below, its side's alpha where the
        level's type splits a dimension the tensor spans, else 1/2 (``torus_links.leaf_part``)."""
        H, D = self.levels, self.D
        out = []
        for leaf in range(2**H):
            part = 1
            for k in range(h + 1, H):
                t, alphas = col[k]
                if spec_of(node, t).halves in size.dims:
                    a = alphas[leaf >> (H - k)]
                    n = alpha_units(a, D)
                    part *= D - n if (leaf >> (H - 1 - k)) & 1 else n
                else:
                    part *= D // 2
            out.append(part)
        return out

    def _below(self, h: int, x: int) -> int:
        """x / D^(H-h-1), exact (a window's sum of units times leaf parts: docs/model-implemented.md)."""
        q, r = divmod(x, self.D ** (self.levels - h - 1))
        assert r == 0
        return q

    def edge(self, e: int, cu, cv) -> tuple[int, ...]:
        """Edge e's re-layout vector, its producer under column ``cu``, its consumer under ``cv``."""
        return self.edges_into(e, (cu,), cv)[0]

    def edges_into(self, e: int, cus, cv) -> list[tuple[int, ...]]:
        """``edge(e, cu, cv)`` for every cu of ``cus`` in order (the consumer's shares computed once)."""
        u, v = self.network.edges[e]
        U, V = self.network.layers[u], self.network.layers[v]
        lay = self.layout
        rows, exps = self.shares(V, cv)
        x0 = self._edge_units[e]
        moved = [[self._size_units(x0, _F_IN, s, exps[h], 2) for s in rows[h]] for h in range(self.levels)]  # relayout_share
        D, ut, vt = self.D, U.node_types, V.node_types
        kv = [[alpha_units(b, D) for b in av] for _, av in cv]
        outs, ep = [], {}  # the consumer's leaf parts per level (torus windows): one for every producer
        for cu in cus:
            out = [0] * lay.size
            for h in range(self.levels):
                tu, au = cu[h]
                fp = None  # the producer's leaf parts at level h: one for every group
                kind = (ut, tu, vt, cv[h][0])
                for g, x in enumerate(moved[h]):
                    a = au[g]
                    c0, c1 = edge_units(kind, alpha_units(a, D), kv[h][g], D)  # coefficients
                    if c0 or c1:
                        p = lay.pos[(h, g)]
                        out[p] = c0 * x
                        out[p + 1] = c1 * x
                        if (h, g) in lay.windows:
                            fp = fp or self.leaf_parts(U, cu, h, Size.F_OUT)
                            ep[h] = ep.get(h) or self.leaf_parts(V, cv, h, Size.F_IN)
                            self._edge_windows(out, (U, cu, au[g], fp), (V, cv, kv[h][g], ep[h]), h, g, x)
            outs.append(tuple(out))
        return outs

    def _edge_windows(self, out: list, producer, consumer, h: int, g: int, x: int) -> None:
        """An edge's loads on the group's link windows: each leaf sends its producer-held part of the
        forward F and its consumer-held part of the backward E (``uneven.group_tensors``)."""
        (U, cu, a, fp), (V, cv, kv, ep) = producer, consumer  # fp, ep: their ``leaf_parts`` at level h
        D, H = self.D, self.levels
        f0, f1, e0, e1 = edge_units_fe((U.node_types, cu[h][0], V.node_types, cv[h][0]),
                                       alpha_units(a, D), kv, D)
        for q, leaves in self.layout.windows[(h, g)]:
            total = 0
            for i in leaves:
                f, e = (f1, e1) if (i >> (H - 1 - h)) & 1 else (f0, e0)
                total += f * fp[i] + e * ep[i]
            out[q] = self._below(h, total * x)

    def coefficients(self, U, tu, a, V, tv, b) -> tuple[int, int]:
        """The re-layout coefficients (side 0, side 1) times D^2 of an edge from node U under (tu,
        alpha a) to node V under (tv, alpha b): integers (``edge_units``)."""
        D = self.D
        return edge_units((U.node_types, tu, V.node_types, tv), alpha_units(a, D),
                          alpha_units(b, D), D)


ONE, ZERO = (1, 1, 1, 1), (0, 0, 0, 0)  # the root group's share numerators and powers of D


def times(s: tuple[int, ...], d: int, part: int, add: int = 0) -> tuple[int, ...]:
    """A share tuple with its position d multiplied by ``part`` (plus ``add``: a power of D one up)."""
    x = list(s)
    x[d] = x[d] * part + add  # not *=: an entry may be a numpy array shared with the parent
    return tuple(x)


_SIZES = {s.index: s for s in Size}


@lru_cache(maxsize=2**17)  # (bounded: at grid 1/1024 an edge kind alone has a million alpha pairs)
def edge_units_fe(kind, ku: int, kv: int, D: int) -> tuple[int, int, int, int]:
    """``partition.node_relayouts`` times D^2 for alphas ku/D and kv/D on an edge of ``kind``
    (producer behaviour, its type, consumer behaviour, its type): (forward side 0, side 1, backward
    side 0, side 1), integers (each coefficient has degree at most 2 in the two alphas): the formula
    in integer parts of D (``partition.relayout_split``'s ``whole``), no fraction on the way."""
    pt, tu, ct, tv = kind
    (f0, f1), (e0, e1) = node_relayouts(tu, int(ku), tv, int(kv), pt, ct, whole=D)
    return f0, f1, e0, e1


# Below this D (D^2 < 2^52) the coefficients times D^2 and D^2 itself are exact in int64 and in
# float64, so an int64 array divided by D^2 gives Python's correctly rounded int / int, bit for bit.
ARRAY_MAX_D = 2**26


def edge_units_array(kind, ku, kv, D):
    """``edge_units`` over numpy integer arrays ku and kv (broadcast together), exact: int64 below
    ``ARRAY_MAX_D``, else Python ints (object arrays, the same values). D: an int, or an array
    broadcast with them (a D per group: the formula is homogeneous of degree 2 in k_u, k_v, D).
    (numpy imported here: the even path's small runs never import it, ``tests/test_startup.py``.)"""
    import numpy as np

    if np.max(D) >= ARRAY_MAX_D:
        ku, kv = np.asarray(ku).astype(object), np.asarray(kv).astype(object)
        D = D if isinstance(D, int) else np.asarray(D).astype(object)
    pt, tu, ct, tv = kind
    (f0, f1), (e0, e1) = node_relayouts(tu, ku, tv, kv, pt, ct, whole=D, positive=_positive_array)
    return f0 + e0, f1 + e1


def _positive_array(x):
    import numpy as np

    return np.maximum(x, 0)


_EDGE_UNITS: dict = {}  # (edge kind, k_u, k_v, D) -> coefficients * D^2, for every table and plan of the process


def edge_units(kind, ku: int, kv: int, D: int) -> tuple[int, int]:
    """``comm.edge_split`` (``partition.node_inter_split``: forward plus backward, ``edge_units_fe``
    summed) times D^2 for alphas ku/D and kv/D on an edge of ``kind``: integers."""
    key = (kind, ku, kv, D)
    c = _EDGE_UNITS.get(key)
    if c is None:
        if len(_EDGE_UNITS) > 100_000:
            _EDGE_UNITS.clear()
        f0, f1, e0, e1 = edge_units_fe(kind, ku, kv, D)
        c = _EDGE_UNITS[key] = (f0 + e0, f1 + e1)
    return c
