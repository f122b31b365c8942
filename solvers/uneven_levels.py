"""AccPar's hierarchical DP for uneven splits: level by level, a type and an alpha per layer.

The full derivation is in the manual: docs/derivations.md, "Uneven splits: the levels DP".
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from fractions import Fraction
from itertools import product

import numpy as np

from explorer.core.array import ArraySpec
from explorer.core.errors import Refused
from explorer.core.evaluate import evaluate_split
from explorer.core.names import given_as
from explorer.core.network import Network
from explorer.core.objective import Objective
from explorer.core.partition import Dim, PartitionType, Size, Space
from explorer.core.plan import Plan
from explorer.core.solution import Solution, Status, split_solution
from explorer.core.split_amounts import ONE_D_BITS
from explorer.core.split_costs import ARRAY_MAX_D, SplitCosts, VectorLayout, alpha_denominator, edge_units_array
from explorer.core.split_rules import TIME_ONLY, SplitRules
from explorer.core.uneven import (HALF, SHARE_POSITION, AlphaSpace, FreeAlphas, alpha_space, alpha_units, check_array,
                                  check_network, proportional_alphas, spec_of, split_units)
from explorer.core.timing import step_time

from .deadline import LATE, Cut, check_deadline, past
from .uneven_blocks import refine_blocks


# Cells a level's DP may hold in one tensor (a frontier state times a node's candidates, or a
# node's cost by its producers' candidates, groups and sides): 1 M float64 cells are 8 MB. Every
# zoo network on tpu-mix-16 and on v2/v3 mixes in tree order is solved jointly at every level;
# on shuffled 4 + 12 mixes (two free classes a level) vgg-e and resnet50 take 0.5-1 s with
# blocks against 1-2.6 s jointly at 4 M, the step time within 0.04% (measured; 250 k is faster still).
MAX_CELLS = 1_000_000

# The last resort (types alone, then each class's alpha alone) may use more before the level is
# refused: 16 M cells, 128 MB (resnet18 at alpha grid 1/64 on a 4 + 12 mix needs 1 M at level 1).
MAX_CELLS_ALONE = 16_000_000

# Bytes one block of the level DP may hold by its estimate (``block_bytes``: STATE_BYTES a frontier
# state times a node's candidates, EDGE_BYTES a cell of a node's cost by its producers' candidates,
# groups and sides: the float tensors, the back-pointers and the integer coefficients; measured
# with tracemalloc within 1.5x of the estimate above 4 MiB, bench/bench_time_limit.py --groups
# levels-memory). A level whose last-resort blocks pass it is refused (Refused, one line).
MAX_BYTES = 640 * 2**20
STATE_BYTES, EDGE_BYTES = 24, 32

# Rounds of block coordinate descent at one level (each round lowers the level cost or stops).
MAX_ROUNDS = 8

# A block over one class scores that class's groups and reads the other groups' costs by type
# (``_TypeCosts``: the same floats, so the same plans); False: every group scored in every block
# (the reference ``tests/test_levels_many_kinds.py`` compares against).
BY_CLASS = True

# Bytes a level's blocks by class keep of their class's scores for the next round and the class's
# update (``_TypeCosts.own``; 24 MB on 1,024 kinds at level 7 for alexnet); past it a block's are not
# kept and its class is recomputed before the next block that reads it.
KEPT_BYTES = 128 * 2**20

# Cells of re-layout coefficients computed between two looks at the clock (``_Coefficients.pairs``).
PAIR_CHUNK = 250_000


Candidate = tuple[PartitionType, tuple[Fraction, ...]]  # (type, alpha per class of the level)

class _Late(Exception):
    """The level DP's deadline passed (looked at per level, per block and per node)."""


@dataclass(frozen=True)
class _Level:
    """Everything fixed at level h (the levels above chosen), as floats for the DP."""

    h: int
    group_class: tuple[int, ...]  # [group] -> class
    inv_peak: np.ndarray  # [group, side]: seconds per FLOP of the subgroup (1 / its aggregate peak)
    flops: list[np.ndarray]  # [node] -> [group]: the node's FLOPs in the group (shares from above)
    intra: list[dict[PartitionType, np.ndarray]]  # [node] -> type -> [group]: seconds of its intra exchange
    relayout: list[np.ndarray]  # [node] -> [group]: seconds per unit of re-layout coefficient (A(F_in) in the group)
    overlap: bool
    units: list[tuple[Dim, list[Fraction]] | None]  # [node] -> (the units' dimension, [group]: its count of
    # groups (grouped conv) or heads (attention with heads) there); None: other nodes


def _level_inputs(network: Network, array: ArraySpec, costs: SplitCosts, types, alphas, h: int, aspace: AlphaSpace,
                  traffic: bool = False) -> _Level:
    """Level h's terms from the integer table (``costs``), as floats; ``traffic``: the level's cost
    counts elements sent (no compute, one unit per element)."""
    H = array.levels
    peaks = array.leaf_peaks_TFLOPS()
    n = 2 ** (H - h)
    G = 2**h
    inv = np.array([[1 / float(sum(peaks[g * n + s * n // 2: g * n + (s + 1) * n // 2]) * 10**12) for s in (0, 1)]
                    for g in range(G)])
    per_elem = 1.0 if traffic else float(array.dtype_bytes / array.bandwidth_Bps(h))
    flops, intra, relayout, counts = [], [], [], []
    for l, layer in enumerate(network.layers):  # noqa: E741
        terms = _terms(costs, l, [(types[k][l], [row[l] for row in alphas[k]]) for k in range(h)], h)
        flops.append(np.array([0.0 if traffic else f for f, _, _, _ in terms]))
        intra.append({} if layer.is_join else {
            t: np.array([x(t) * per_elem for _, x, _, _ in terms])
            for t in PartitionType if layer.node_types.specs[t.index] is not None})
        relayout.append(np.array([r * per_elem for _, _, r, _ in terms]))
        units = split_units(layer)
        d = None if units is None else SHARE_POSITION[units[1]]
        counts.append(None if units is None else (units[1], [units[0] * s[d] for _, _, _, s in terms]))
    return _Level(h, aspace.group_class[h], inv, flops, intra, relayout, array.overlap and not traffic, counts)


def one_d(costs: SplitCosts) -> bool:
    """Whether the level DP counts every group's alphas in the table's one D (it fits in
    ``split_amounts.ONE_D_BITS``), else each group's in its own (``_terms``, ``_Coefficients``)."""
    return costs.D.bit_length() <= ONE_D_BITS


def _terms(costs: SplitCosts, l: int, col, h: int) -> list[tuple]:  # noqa: E741
    """Per group of level h (the levels above under ``col``): layer l's FLOPs there, its intra
    exchange's elements under a type (a function), its A(F_in) times the group's share, each the
    float of the exact number, and its (B, D_i, D_o, G) shares (Fractions). From the table's
    integers over its unit (int / int, rounded once) where its D is short (``one_d``), else from
    each group's ``SplitCosts.fraction_shares`` (small Fractions, rounded once): the same floats."""
    node = costs.network.layers[l]
    if one_d(costs):
        rows, exps = costs.shares(node, col)
        U, D, e = costs.unit, costs.D, exps[h]
        return [(costs.group_flops(l, s, h) / U, lambda t, s=s: costs.intra(l, t, s, e) / U,
                 costs.input_units(l, s, e) / U, tuple(Fraction(x, D**y) for x, y in zip(s, e))) for s in rows[h]]
    return [(float(costs.share_of(l, None, s)), lambda t, s=s: float(costs.intra_share(l, t, s)),
             float(costs.share_of(l, Size.F_IN.index, s)), s) for s in costs.fraction_shares(node, col)[h]]


def _whole_units(network: Network, lv: _Level, n: int, cand) -> bool:
    """``core.uneven.whole_units`` at this level, the levels above fixed: a grouped conv's group
    split (an attention node's head split) must give each side of every group a whole number of
    its groups (heads)."""
    units = lv.units[n]
    t, row = cand
    if units is None or spec_of(network.layers[n], t).halves is not units[0]:
        return True
    return all((k * row[c]).denominator == 1 for k, c in zip(units[1], lv.group_class))


def level_cost(network: Network, array: ArraySpec, plan: Plan, h: int) -> Fraction:
    """The DP's cost of level h of ``plan`` (the levels above as the plan has them), exactly, from
    the integer table: the sum over nodes of the max over the level's groups and their sides of
    step_time(compute, exchange) (docs/derivations.md). The reference the DP is tested against."""
    H, peaks = array.levels, array.leaf_peaks_TFLOPS()
    costs = SplitCosts(network, H, tuple({a for level in plan.alphas for row in level for a in row}), VectorLayout(H))
    n, D, U = 2 ** (H - h), costs.D, costs.unit
    per_elem = array.dtype_bytes / array.bandwidth_Bps(h)
    in_edges: list[list[int]] = [[] for _ in network.layers]
    for e, (_, v) in enumerate(network.edges):
        in_edges[v].append(e)
    total = Fraction(0)
    for l, layer in enumerate(network.layers):  # noqa: E741
        t = plan.types[h][l]
        rows, exps = costs.shares(layer, [(plan.types[k][l], [row[l] for row in plan.alphas[k]]) for k in range(h)])
        worst = Fraction(0)
        for g, s in enumerate(rows[h]):
            a = plan.alphas[h][g][l]
            x = 0 if layer.is_join else costs.intra(l, t, s, exps[h])
            sent = [x, x]
            for e in in_edges[l]:
                u = network.edges[e][0]
                c = costs.coefficients(network.layers[u], plan.types[h][u], plan.alphas[h][g][u], layer, t, a)
                r = costs.relayout_share(e, s, exps[h])
                sent = [sent[0] + c[0] * r, sent[1] + c[1] * r]
            part = alpha_units(a, D)
            for side, k in enumerate((part, D - part)):
                peak = sum(peaks[g * n + side * n // 2: g * n + (side + 1) * n // 2]) * 10**12
                compute = Fraction(costs.group_flops(l, s, h) * k, D * U) / peak
                worst = max(worst, step_time(compute, Fraction(sent[side], U) * per_elem, array.overlap))
        total += worst
    return total


# ---- the re-layout coefficients, as float tables over (type, alpha) pairs ------------------


class _Coefficients:
    """The re-layout coefficients (``SplitCosts.coefficients``, over D^2) of an edge's candidate pairs
    as float arrays, computed for the pairs a block holds (no table over every pair of declared
    alphas: at grid 1/1024 one would hold 9.4 M pairs per pair of node behaviours), in integers
    (``split_costs.edge_units_array``) then divided once: the float of each exact coefficient.
    A coefficient over D^2 is the same number for any D its alphas are integer parts of: where the
    table's D is longer than ``ONE_D_BITS`` (1,023 proportional ratios on 1,024 kinds: thousands of
    digits), each group's alphas are counted in its class's own D (``level``), the same floats."""

    def __init__(self, costs: SplitCosts, aspace: AlphaSpace | None = None):
        self.D = costs.D
        self.units = {a: alpha_units(a, costs.D) for a in costs.values}
        self.aspace = None if aspace is None or one_d(costs) else aspace
        self._levels: dict = {}

    def level(self, h: int, group_class) -> tuple[list[dict], list[int], np.ndarray | int]:
        """Per class of level h a memo of its alphas (``_alpha_of``) and the D they are counted in,
        and per group that D (an array; the table's D alone: an int)."""
        if h not in self._levels:
            C = max(group_class) + 1
            if self.aspace is None:
                memo: dict = {}
                self._levels[h] = [memo] * C, [self.D] * C, self.D
            else:
                Ds = [alpha_denominator(self.aspace.choices(h, c)) for c in range(C)]
                dens = [Ds[c] for c in group_class]
                self._levels[h] = ([{} for _ in range(C)], Ds,
                                   np.array(dens, dtype=object if max(dens) >= ARRAY_MAX_D else np.int64))
        return self._levels[h]

    def pairs(self, U, V, tu: np.ndarray, ku: np.ndarray, tv: np.ndarray, kv: np.ndarray,
              deadline: float | None = None, dens: np.ndarray | int | None = None) -> np.ndarray:
        """[producer candidate, consumer candidate, group, side]: the coefficients of an edge from
        node U (type indices ``tu`` [Ku], alpha units ``ku`` [Ku, G]) to node V (``tv``, ``kv``),
        the units over ``dens`` (per group, ``level``; None: the table's D), ``PAIR_CHUNK`` cells
        at a time with the clock checked between (``_Late`` past ``deadline``)."""
        G = ku.shape[1]
        D = self.D if dens is None else dens
        DD = D * D
        out = np.zeros((len(tu), len(tv), G, 2))
        for iu, ru in _runs(tu):
            for iv, rv in _runs(tv):
                kind = (U.node_types, _TYPES[iu], V.node_types, _TYPES[iv])
                if U.node_types.specs[kind[1].index] is None or V.node_types.specs[kind[3].index] is None:
                    continue
                step = max(1, PAIR_CHUNK // ((rv.stop - rv.start) * G))
                for lo in range(ru.start, ru.stop, step):
                    check_deadline(deadline, _Late)
                    rows = slice(lo, min(lo + step, ru.stop))
                    c0, c1 = edge_units_array(kind, ku[rows, None, :], kv[None, rv, :], D)
                    out[rows, rv, :, 0] = c0 / DD
                    out[rows, rv, :, 1] = c1 / DD
        return out


def _runs(types: np.ndarray) -> list[tuple[int, slice]]:
    """(type index, slice) of each run of equal entries (candidates come type by type: one run each)."""
    cut = np.flatnonzero(np.diff(types)) + 1
    starts, stops = [0, *cut.tolist()], [*cut.tolist(), len(types)]
    return [(int(types[a]), slice(a, b)) for a, b in zip(starts, stops)]


_TYPES = tuple(PartitionType)
_TYPE_INDEX = {t: i for i, t in enumerate(PartitionType)}


def _alpha_of(memo: dict, D: int, a: Fraction) -> tuple[Fraction, float, int]:
    """(a, its float, its units over D), memoised by the object's id (a level's candidates share
    the declared alphas' objects: no Fraction hash on the way, 512 classes a row on 1,024 kinds)."""
    x = memo.get(id(a))
    if x is None or x[0] is not a:
        x = memo[id(a)] = (a, float(a), alpha_units(a, D))
    return x


def _node_arrays(lv: _Level, node: int, cands: list[Candidate], coef: _Coefficients, groups=None):
    """A node's candidates as (type index [K], alpha units [K, G], compute seconds [K, G, 2], intra seconds [K, G]),
    over the level's groups or ``groups`` (an index array: only their classes' alphas are read)."""
    gsel = slice(None) if groups is None else groups
    cls = list(lv.group_class) if groups is None else [lv.group_class[g] for g in groups]
    tidx = np.array([_TYPE_INDEX[t] for t, _ in cands])
    memos, Ds, dens = coef.level(lv.h, lv.group_class)
    cols = range(len(Ds)) if groups is None else sorted(set(cls))
    at = cls if groups is None else [cols.index(c) for c in cls]  # [group] -> its class's column
    vals = [[_alpha_of(memos[c], Ds[c], row[c]) for c in cols] for _, row in cands]  # [K][class]
    aval = np.array([[x[1] for x in r] for r in vals]).reshape(len(cands), -1)[:, at]  # [K, G]
    units = np.array([[x[2] for x in r] for r in vals], dtype=object).reshape(len(cands), -1)[:, at]
    units = units.astype(np.int64) if np.max(dens) < ARRAY_MAX_D else units
    comp = np.stack([aval, 1 - aval], axis=-1) * lv.flops[node][None, gsel, None] * lv.inv_peak[None, gsel, :]
    G = len(cls)
    intra = np.array([lv.intra[node][t][gsel] if lv.intra[node] else np.zeros(G) for t, _ in cands])
    return tidx, units, comp, intra


def _node_cost(network: Network, lv: _Level, i: int, axes: list[int], arrays, in_edges, coef: _Coefficients,
               deadline: float | None = None, groups=None) -> np.ndarray:
    """Node i's cost per group, the max over its sides (``step_time`` of compute and exchange), over
    the candidates of the nodes ``axes`` (ascending, its producers among them, i last): [K per axis...,
    group], for the level's groups or ``groups`` (``arrays``: ``_node_arrays`` over the same)."""
    nd, pos = len(axes), {n: j for j, n in enumerate(axes)}
    ti, ai, comp, intra = arrays[i]
    Ki, G = len(ti), comp.shape[1]
    head = [1] * (nd - 1)
    comp_t = comp.reshape(head + [Ki, G, 2])
    comm = intra.reshape(head + [Ki, G, 1])
    dens = coef.level(lv.h, lv.group_class)[2]
    if groups is not None and not isinstance(dens, int):
        dens = dens[groups]
    relayout = lv.relayout[i] if groups is None else lv.relayout[i][groups]
    for u, share in in_edges:
        tu, au, _, _ = arrays[u]
        e = coef.pairs(network.layers[u], network.layers[i], tu, au, ti, ai, deadline, dens)  # [Ku, Ki, G, 2]
        e = e * (relayout * float(share))[None, None, :, None]
        shape = [1] * nd + [G, 2]
        shape[pos[u]], shape[-3] = len(tu), Ki
        comm = comm + e.reshape(shape)
    t = np.maximum(comp_t, comm) if lv.overlap else comp_t + comm
    return np.maximum(t[..., 0], t[..., 1])


def _index(sig) -> dict:
    """(type, id of its alpha) -> the candidate's position, for a node's candidates' signature."""
    return {(t, id(a)): j for j, (t, a) in enumerate(sig)}


class _TypeCosts:
    """Per node its cost per group (``_node_cost``) over its own and its producers' allowed types,
    each group's alphas as the current candidates have them. A block over class c moves class c's
    alphas alone: every other group's cost depends on the types alone there, so the block scores its
    class's groups (``block_cost``; kept per class and node for the next round while its candidates'
    (type, alpha) stay) and reads the others' max here (the same floats: a max is exact); after the
    block, ``update(current, c)`` takes class c's groups from what the block scored."""

    def __init__(self, network: Network, lv: _Level, types, coef: _Coefficients, current, deadline=None):
        self.network, self.lv, self.types, self.coef = network, lv, types, coef
        self.in_edges = _graph(network)[0]
        N = len(network.layers)
        self.axes = [sorted({u for u, _ in self.in_edges[i]}) + [i] for i in range(N)]
        self.at = []  # [node] -> [type index] -> its position in the node's types
        for n in range(N):
            at = np.full(len(_TYPES), -1)
            at[[_TYPE_INDEX[t] for t in types[n]]] = np.arange(len(types[n]))
            self.at.append(at)
        classes = np.array(lv.group_class)
        self.members = [np.flatnonzero(classes == c) for c in range(int(classes.max()) + 1)]
        self.others = [classes != c for c in range(len(self.members))]
        self.arrays: dict = {}  # (c, node) -> (its candidates' (type, class c alpha), their index, _node_arrays)
        self.own: dict = {}  # (c, node) -> (its axes' signatures, class c's groups' costs [K per axis..., group])
        self.kept = 0  # their bytes (at most KEPT_BYTES)
        self.stale: list[int] = []  # classes whose groups hold the types ``fresh`` alone
        self.fresh: list = []
        self.cost: list[np.ndarray] = self._costs(current, None, deadline)

    def _costs(self, current, groups, deadline) -> list[np.ndarray]:
        cands = [[(t, row) for t in self.types[n]] for n, (_, row) in enumerate(current)]
        arrays = [_node_arrays(self.lv, n, cands[n], self.coef, groups) for n in range(len(cands))]
        return [_node_cost(self.network, self.lv, i, self.axes[i], arrays, self.in_edges[i], self.coef, deadline,
                           groups) for i in range(len(cands))]

    def _arrays(self, c: int, n: int, cands):
        sig = tuple((t, row[c]) for t, row in cands)
        hit = self.arrays.get((c, n))
        if hit is None or hit[0] != sig:
            hit = self.arrays[(c, n)] = (sig, _index(sig), _node_arrays(self.lv, n, cands, self.coef, self.members[c]))
        elif any(a is not b for (_, a), (_, b) in zip(sig, hit[0])):  # equal alphas, other objects: the index is by id
            hit = self.arrays[(c, n)] = (sig, _index(sig), hit[2])
        return hit

    def block_cost(self, i: int, c: int, full: list[int], cands, tidx, deadline=None) -> np.ndarray:
        """Node i's cost over the block's candidates (class c's alphas moving), shaped for the frontier
        ``full``: the max of its class's groups (scored) and the others' (``outside``)."""
        axes = self.axes[i]
        got = {n: self._arrays(c, n, cands[n]) for n in axes}
        sig = tuple(got[n][0] for n in axes)
        hit = self.own.get((c, i))
        if hit is None or hit[0] != sig:
            if hit is not None:
                self.kept -= self.own.pop((c, i))[1].nbytes
            arrays = {n: got[n][2] for n in axes}
            hit = (sig, _node_cost(self.network, self.lv, i, axes, arrays, self.in_edges[i], self.coef, deadline,
                                   self.members[c]))
            if self.kept + hit[1].nbytes <= KEPT_BYTES:  # (else not kept: ``update`` recomputes the class)
                self.own[(c, i)] = hit
                self.kept += hit[1].nbytes
        shape = [1] * len(full)
        for n in axes:
            shape[full.index(n)] = len(cands[n])
        cost = hit[1].max(axis=-1).reshape(shape)
        rest = self.outside(i, c, full, tidx)
        return cost if rest is None else np.maximum(cost, rest)

    def update(self, current, c: int, deadline=None) -> None:
        """Class c's groups from the current candidates (its alphas moved), read from the block's
        scores: every allowed type's where each was a candidate at the chosen alpha, else (a block of
        alphas alone) the current types' alone, the class stale at the others until ``ready``."""
        groups, picks = self.members[c], []
        if any((c, i) not in self.own for i in range(len(self.axes))):
            self.stale.append(c)
            self.fresh = [None] * len(self.axes)  # (no type is current: recomputed before the next block)
            return
        for i, axes in enumerate(self.axes):
            at = [self.arrays[(c, n)][1] for n in axes]
            idx = [[x.get((t, id(current[n][1][c]))) for t in self.types[n]] for x, n in zip(at, axes)]
            picks.append(None if any(j is None for row in idx for j in row) else self.own[(c, i)][1][np.ix_(*idx)])
        if all(p is not None for p in picks):
            for table, x in zip(self.cost, picks):
                table[..., groups] = x
            return
        now = [t for t, _ in current]
        if self.stale and self.fresh != now:  # (a class not kept is stale at every type)
            self.stale.append(c)
            return
        self.stale.append(c)
        self.fresh = now
        for i, axes in enumerate(self.axes):
            at = [self.arrays[(c, n)][1] for n in axes]
            idx = [[at[j].get((now[n], id(current[n][1][c])))] for j, n in enumerate(axes)]
            if any(j == [None] for j in idx):  # (a current alpha not a candidate's object: stale at every type)
                self.fresh = [None] * len(self.axes)
                return
            pos = [[self.types[n].index(now[n])] for n in axes]
            self.cost[i][np.ix_(*pos, groups)] = self.own[(c, i)][1][np.ix_(*idx, np.arange(len(groups)))]

    def ready(self, current, cands, deadline=None) -> None:
        """Before a block over ``cands``: the stale classes recomputed together where a candidate
        takes a type other than the current one."""
        if self.stale and any(t is not self.fresh[n] for n, cs in enumerate(cands) for t, _ in cs):
            groups = np.concatenate([self.members[c] for c in self.stale])
            for table, x in zip(self.cost, self._costs(current, groups, deadline)):
                table[..., groups] = x
            self.stale = []

    def outside(self, i: int, c: int, full: list[int], tidx) -> np.ndarray | None:
        """Node i's max over the groups outside class c for the block's candidates (``tidx``: [node] ->
        their type indices), shaped for the frontier ``full``; None where class c holds every group."""
        table, members = self.cost[i], self.members[c]
        lo, hi = int(members[0]), int(members[-1]) + 1
        if hi - lo == len(members):  # (a run of groups: the max of what lies either side, no copy)
            parts = [table[..., :lo], table[..., hi:]]
            parts = [x.max(axis=-1) for x in parts if x.shape[-1]]
            if not parts:
                return None
            worst = parts[0] if len(parts) == 1 else np.maximum(parts[0], parts[1])
        else:
            worst = table[..., self.others[c]].max(axis=-1)
        picked = worst[np.ix_(*(self.at[n][tidx[n]] for n in self.axes[i]))]
        shape = [1] * len(full)
        for n in self.axes[i]:
            shape[full.index(n)] = len(tidx[n])
        return picked.reshape(shape)


# ---- one level: frontier elimination over candidates -----------------------------------------


def _graph(network: Network):
    """Per node its in-edges (producer, share), and each node's last consumer (itself if none)."""
    N = len(network.layers)
    in_edges: list[list[tuple[int, Fraction]]] = [[] for _ in range(N)]
    last_use = list(range(N))
    for (u, v), share in zip(network.edges, network.edge_shares):
        in_edges[v].append((u, share))
        last_use[u] = max(last_use[u], v)
    return in_edges, last_use


def _fits(network: Network, sizes: list[int], groups: int, limit: int | None = None) -> bool:
    """Whether frontier elimination over ``sizes[n]`` candidates per node keeps every tensor
    (frontier states times a node's candidates; a node's cost by its producers' candidates,
    groups and sides) within ``limit`` cells, MAX_CELLS by default (``_widest``)."""
    limit = MAX_CELLS if limit is None else limit
    return max(_widest(network, sizes, groups)) <= limit


def block_bytes(network: Network, sizes: list[int], groups: int) -> int:
    """The memory ``_solve_block`` holds over ``sizes[n]`` candidates per node, by its estimate (``MAX_BYTES``)."""
    states, edge = _widest(network, sizes, groups)
    return STATE_BYTES * states + EDGE_BYTES * edge


def _widest(network: Network, sizes: list[int], groups: int) -> tuple[int, int]:
    """The most cells of frontier elimination over ``sizes[n]`` candidates per node (the loop of
    ``_solve_block``, sizes only): (frontier states times a node's candidates, a node's cost by its
    producers' candidates, groups and sides)."""
    in_edges, last_use = _graph(network)
    frontier: list[int] = []
    states = edge = 0
    for i in range(len(sizes)):
        full = frontier + [i]
        producers = {u for u, _ in in_edges[i]}
        states = max(states, math.prod(sizes[n] for n in full))
        edge = max(edge, math.prod(sizes[u] for u in producers) * sizes[i] * groups * 2)
        frontier = [n for n in full if last_use[n] > i]
    return states, edge


def _solve_block(network: Network, lv: _Level, cands: list[list[Candidate]], coef: _Coefficients,
                 deadline: float | None = None, by: tuple[_TypeCosts, int] | None = None):
    """The candidate of every node minimising the level cost, that cost and the cells computed
    (frontier elimination; the caller checks ``_fits`` first); ``_Late`` past ``deadline``. ``by``:
    (the type costs, c) where every node's candidates differ in their type and class c's alpha alone:
    class c's groups are scored, the others read (``_TypeCosts``)."""
    N = len(network.layers)
    if not all(cands):
        n = next(n for n in range(N) if not cands[n])
        raise Refused(f"levels (uneven splits): node {network.layers[n].name!r} has no candidate at level {lv.h} "
                      "(its allowed types split its groups or heads into fractions at every declared alpha)")
    arrays = [_node_arrays(lv, n, cands[n], coef) for n in range(N)] if by is None else None
    tidx = [np.array([_TYPE_INDEX[t] for t, _ in cands[n]]) for n in range(N)]
    in_edges, last_use = _graph(network)
    frontier: list[int] = []
    states = np.zeros(())
    back = []
    cells = 0
    for i in range(N):
        check_deadline(deadline, _Late)
        full = frontier + [i]
        nd = len(full)
        K = [len(cands[n]) for n in full]
        cells += int(np.prod(K))
        if by is None:  # (the max over groups and sides, in two steps: faster)
            cost = _node_cost(network, lv, i, full, arrays, in_edges[i], coef, deadline).max(axis=-1)
        else:
            cost = by[0].block_cost(i, by[1], full, cands, tidx, deadline)
        T = states[..., None] + cost
        T = np.broadcast_to(T, K)
        keep = [j for j, n in enumerate(full) if last_use[n] > i]
        drop = [j for j in range(nd) if j not in keep]
        kshape, dshape = [K[j] for j in keep], [K[j] for j in drop]
        flat = np.transpose(T, keep + drop).reshape(int(np.prod(kshape)), int(np.prod(dshape)))
        arg = flat.argmin(axis=1)  # the first minimum: candidate order breaks ties
        states = flat[np.arange(flat.shape[0]), arg].reshape(kshape)
        back.append((full, keep, drop, arg.reshape(kshape), dshape))
        frontier = [full[j] for j in keep]
    choice = [0] * N
    for i in range(N - 1, -1, -1):
        full, keep, drop, arg, dshape = back[i]
        key = tuple(choice[full[j]] for j in keep)
        for j, v in zip(drop, np.unravel_index(int(arg[key]), dshape)):
            choice[full[j]] = int(v)
    return [cands[n][choice[n]] for n in range(N)], float(states), cells


# ---- one level: blocks --------------------------------------------------------------------


def _start_row(array: ArraySpec, aspace: AlphaSpace, h: int) -> tuple[Fraction, ...]:
    """Per class: the declared value nearest the proportional alpha (the alpha itself unless ``--grid-only``;
    the smaller on a tie), 1/2 where fixed."""
    prop = proportional_alphas(array)[h]
    classes = aspace.group_class[h]
    row = []
    for c in range(len(aspace.class_free[h])):
        p = prop[classes.index(c)]
        row.append(min(aspace.choices(h, c), key=lambda a: (abs(a - p), a)))
    return tuple(row)


def _solve_level(network: Network, space: Space, aspace: AlphaSpace, lv: _Level, start: tuple[Fraction, ...],
                 coef: _Coefficients, rules: SplitRules = TIME_ONLY, deadline: float | None = None):
    """The level's candidates per node (the types ``rules`` allow: offered, pins, forbids), the
    level cost, DP cells used and the strategy ("joint" or "blocks"); ``_Late`` past ``deadline``."""
    h, N = lv.h, len(network.layers)
    types = [rules.types(network, space, h, n) for n in range(N)]
    if not all(types):
        raise Refused(f"levels (uneven splits): node {network.layers[types.index(())].name!r} has no allowed type "
                      f"at level {h}")
    G = len(lv.group_class)
    n_rows = aspace.row_count(h)  # (not built unless they fit)
    if _fits(network, [len(types[n]) * n_rows for n in range(N)], G):
        rows = [tuple(r) for r in product(*(aspace.choices(h, c) for c in range(len(start))))]
        cands = [[c for c in ((t, r) for t in types[n] for r in rows) if _whole_units(network, lv, n, c)] for n in range(N)]
        best, cost, cells = _solve_block(network, lv, cands, coef, deadline)
        return best, cost, cells, "joint"
    current: list[Candidate] = [(types[n][0], start) for n in range(N)]
    cost, cells = float("inf"), 0
    free = [c for c in range(len(start)) if aspace.class_free[h][c]]
    blocks = _blocks(network, lv, types, free, aspace)
    table = _TypeCosts(network, lv, types, coef, current, deadline) if BY_CLASS else None
    for _ in range(MAX_ROUNDS):
        before = cost
        for c, block in blocks:
            cands = block(current)
            if table is not None:
                table.ready(current, cands, deadline)
            current, cost, used = _solve_block(network, lv, cands, coef, deadline, None if table is None else (table, c))
            current = [(t, row.whole() if isinstance(row, _Swap) else row) for t, row in current]
            cells += used
            if table is not None:
                table.update(current, c, deadline)
        if cost >= before * (1 - 1e-12):
            break
    return current, cost, cells, "blocks"


class _Swap:
    """A block's candidate row: ``row`` with class c's alpha replaced by ``a``, read by index (on 1,024
    kinds a row holds 512 alphas: only the chosen candidates' are built whole, ``whole``)."""

    __slots__ = ("row", "c", "a")

    def __init__(self, row: tuple, c: int, a: Fraction):
        self.row, self.c, self.a = row, c, a

    def __getitem__(self, k: int) -> Fraction:
        return self.a if k == self.c else self.row[k]

    def __len__(self) -> int:
        return len(self.row)

    def whole(self) -> tuple[Fraction, ...]:
        return self.row[:self.c] + (self.a,) + self.row[self.c + 1:]


def _blocks(network: Network, lv: _Level, types, free: list[int], aspace: AlphaSpace):
    """The blocks of one round: (type, class c's alpha) for each free class if that fits, else
    types alone then each class's alpha alone. Each is (c, a function of the current candidates):
    only class c's alpha differs between a node's candidates; a block too wide even alone is refused (Refused)."""
    h = lv.h

    def with_class(c, alphas_too=True, types_too=True):
        def make(cur):
            out = []
            for n, (t0, row) in enumerate(cur):
                ts = types[n] if types_too else (t0,)
                avs = aspace.choices(h, c) if alphas_too else (row[c],)
                rows = [_Swap(row, c, a) for a in avs]  # (one row per alpha, for every type; built whole once chosen)
                both = [(t, r) for t in ts for r in rows]
                out.append(both if lv.units[n] is None else [x for x in both if _whole_units(network, lv, n, x)])
            return out
        return make

    G, N = len(lv.group_class), len(types)
    grid = max(len(aspace.choices(h, c)) for c in free) if free else 1
    if _fits(network, [len(types[n]) * grid for n in range(N)], G):
        return [(c, with_class(c)) for c in free]
    for sizes in ([len(t) for t in types], [grid] * N):
        if not _fits(network, sizes, G, MAX_CELLS_ALONE):
            raise Refused(f"levels (uneven splits): level {lv.h}: the graph's frontier is too wide for the DP")
        if (need := block_bytes(network, sizes, G)) > MAX_BYTES:
            raise Refused(f"levels (uneven splits): level {lv.h}: a block of the DP needs ~{need / 2**20:,.0f} MiB "
                          f"by its estimate, beyond its limit of {MAX_BYTES / 2**20:,.0f} MiB (a coarser "
                          f"{given_as('--alpha-grid')} gives each node fewer candidates)")
    return [(0, with_class(0, alphas_too=False))] + [(c, with_class(c, types_too=False)) for c in free]


# ---- the solver ---------------------------------------------------------------------------


def levels_uneven(network: Network, array: ArraySpec, space: Space, alphas,
                  free: FreeAlphas = FreeAlphas.UNLIKE, rules: SplitRules = TIME_ONLY, name: str = "levels",
                  moves: bool = True, deadline: float | None = None) -> Solution:
    """The level-by-level DP (docs/derivations.md; ``level_dp_plan``), then the better of its plan
    and the equal split, after block moves unless ``moves`` is False (``_or_equal``): a plan in the declared alpha space,
    scored by the evaluator. ``alphas``: a grid or an AlphaSpace. ``rules``: the objective (time:
    AccPar's level cost; traffic: each layer's busiest side, no compute) and the types pins and
    forbids allow (caps and memory are the caller's to check). On an array of one kind the plan is
    the even DP's bit for bit (no free class: no move). Status LEVEL_OPTIMAL when every level was
    HyPar's (as the even DP), else FEASIBLE (no bound). Past ``deadline`` (a ``time.perf_counter()``
    value; None: none) the DP stops and the equal split stands in for its plan, no move is scored,
    and ``info["cut"]`` says so (``deadline.Cut``): status FEASIBLE (UNKNOWN, no plan, when the equal split is outside
    the declared space and the DP was cut)."""
    t0 = time.perf_counter()
    check_array(array)
    check_network(network)
    aspace = alphas if isinstance(alphas, AlphaSpace) else alpha_space(array, alphas, free)
    if any(not rules.types(network, space, h, n) for h in range(array.levels) for n in range(len(network.layers))):
        return split_solution(name, Status.INFEASIBLE, None, None, None, time.perf_counter() - t0, 0,
                              objective=rules.objective)  # pins and forbids leave a layer no type: no plan at all
    try:
        plan, exact, cells = level_dp_plan(network, array, space, aspace, rules, deadline)
    except _Late:
        plan, exact, cells = None, -1, 0
    late: list[bool] = []
    why: list[str] = []
    plan = _or_equal(network, array, space, aspace, rules, plan, moves, deadline, late, why)
    if plan is None:
        sol = split_solution(name, Status.UNKNOWN, None, None, None, time.perf_counter() - t0, cells,
                             objective=rules.objective)
        if exact < 0:  # what took the time, what to change
            sol.info["reason"] = (f"the level DP was cut at the time limit before its plan ({why[0]}): a coarser "
                                  f"{given_as('--alpha-grid')} gives it fewer candidates")
    else:
        ev = evaluate_split(network, array, plan, rules.weight_copies)
        status = Status.LEVEL_OPTIMAL if exact == array.levels else Status.FEASIBLE
        sol = split_solution(name, status, plan, rules.value(ev), None, time.perf_counter() - t0, cells,
                             objective=rules.objective)
    if exact < 0 or late:
        sol.info["cut"] = Cut.LEVEL_DP if exact < 0 else Cut.BLOCK_MOVES
    return sol


def level_dp_plan(network: Network, array: ArraySpec, space: Space, aspace: AlphaSpace,
                  rules: SplitRules = TIME_ONLY, deadline: float | None = None) -> tuple[Plan, int, int]:
    """The level DP's own plan (each level optimal for its level cost, the levels above fixed), how
    many levels were HyPar's (a level whose declared alphas are all 1/2, below levels that split 1/2
    everywhere: ``solvers.dp.dp_level``, the even split's integer tables and tie-breaking, where the
    level DP's cost equals c_h: traffic, or time without overlap) and the DP cells used; ``_Late``
    past ``deadline``."""
    costs = SplitCosts(network, array.levels, aspace.values(), VectorLayout(array.levels))
    coef = _Coefficients(costs, aspace)
    traffic = rules.objective is Objective.TRAFFIC
    even = _EvenLevels(network, array, space, rules) if traffic or not array.overlap else None
    types, group_alphas = [], []
    cells, exact = 0, 0
    for h in range(array.levels):
        check_deadline(deadline, _Late)
        row = even.level(h, aspace, group_alphas) if even is not None else None
        if row is not None:
            exact += 1
            types.append(row)
            group_alphas.append(tuple((HALF,) * len(row) for _ in aspace.group_class[h]))
            continue
        lv = _level_inputs(network, array, costs, types, group_alphas, h, aspace, traffic)
        chosen, _, used, _ = _solve_level(network, space, aspace, lv, _start_row(array, aspace, h), coef, rules,
                                          deadline)
        cells += used
        types.append(tuple(t for t, _ in chosen))
        group_alphas.append(tuple(tuple(row[c] for _, row in chosen) for c in aspace.group_class[h]))
    return Plan(tuple(types), tuple(group_alphas)), exact, cells


def equal_types(network: Network, array: ArraySpec, space: Space, rules: SplitRules = TIME_ONLY):
    """The even DP's plan (its types) for ``rules``' objective under its pins and forbids (caps and
    memory aside); None when they leave a layer no type at some level; InstanceTooLarge from the DP."""
    from explorer.core.constraints import Constraints
    from explorer.core.problem import Problem
    from explorer.core.solution import SolveOptions

    from .dp import solve as even_dp

    c = rules.constraints
    problem = Problem(network, array, space, rules.objective, Constraints(pins=c.pins, forbids=c.forbids))
    return even_dp(problem, SolveOptions()).plan


def _or_equal(network: Network, array: ArraySpec, space: Space, aspace: AlphaSpace, rules: SplitRules,
              plan: Plan | None, moves: bool = True, deadline: float | None = None,
              late: list | None = None, why: list | None = None) -> Plan | None:
    """The better (``SplitRules.rank``; ties: ``plan``) of the level DP's plan and the even DP's equal
    split, where that lies in the declared space, each after block moves with ``moves``
    (``uneven_blocks.refine_blocks``: its types kept, its alphas moved in the declared space while
    the rank drops; the worse of the two takes the start rows alone). Level by level the DP may leave 1/2 for a ratio whose cost the levels below do
    not repay, so alone it can lose to the equal split it contains (12.7% more traffic on alexnet /
    tpu-mix-16), and it may give a layer a ratio its level pays for and the step time does not
    (lenet-c on 12 v2 + 4 v3 at grid 1/2: the DP's plan is 8% slower than the equal split; with
    ip1 moved back to 1/2 it is the proven optimum). ``plan`` None (the DP cut at its deadline): the
    equal split alone (None when outside the space); no move is scored past ``deadline`` (then
    True is appended to ``late``); where the equal split is not a candidate, why is appended to ``why``."""
    plans = [] if plan is None else [plan]
    try:
        even = equal_types(network, array, space, rules)
    except Refused as e:  # a level too wide for the even DP: the level DP's plan alone
        even, because = None, f"the even DP refuses the equal split: {e}"
    else:
        because = "the even DP finds no equal split" if even is None else "the equal split is not in the declared space"
    if even is not None and aspace.contains(equal := Plan.even(even)):
        plans.append(equal)
    elif why is not None:
        why.append(because)

    def rank(p):
        return rules.rank(evaluate_split(network, array, p, rules.weight_copies), array, p)

    def moved(p):  # no move scored past the deadline (the descent then ends, nothing kept)
        if past(deadline):
            if late is not None and not late:
                late.append(True)
            return LATE
        return rank(p)

    if not plans:
        return None
    ranked = sorted(((p, rank(p)) for p in plans), key=lambda pr: pr[1])  # stable: ties to the DP's plan
    if moves:  # the better one with every move, the other with the start rows alone (half the cost)
        ranked = sorted((refine_blocks(network, array, aspace, p, moved, r, scan=i == 0)[:2]
                         for i, (p, r) in enumerate(ranked)), key=lambda pr: pr[1])
    return ranked[0][0]


class _EvenLevels:
    """The even DP's levels (``solvers.dp.dp_level``) inside the level-by-level DP: its problem (the
    run's pins and forbids), the counts of the levels above, and which levels are too wide for it."""

    def __init__(self, network: Network, array: ArraySpec, space: Space, rules: SplitRules):
        from explorer.core.constraints import Constraints
        from explorer.core.comm import zero_counts
        from explorer.core.problem import Problem

        from .dp import wide_levels

        c = rules.constraints
        self.problem = Problem(network, array, space, rules.objective, Constraints(pins=c.pins, forbids=c.forbids))
        self.chain = network.is_chain
        self.wide = set() if self.chain else set(wide_levels(self.problem))
        self.counts = zero_counts(len(network.layers))

    def level(self, h: int, aspace: AlphaSpace, above) -> tuple | None:
        """Level h by the even DP, or None where it does not apply (a split above that is not 1/2,
        a declared alpha that is not 1/2 at this level, a frontier too wide)."""
        from explorer.core.comm import advance

        from .dp import NoPlan, dp_level

        halves = all(a == HALF for level in above for row in level for a in row)
        if not halves or h in self.wide or any(aspace.choices(h, c) != (HALF,) for c in range(len(aspace.class_free[h]))):
            return None
        try:
            row, _ = dp_level(self.problem, h, self.counts, self.chain, checked=True)  # (not in self.wide)
        except NoPlan as err:
            raise Refused(f"levels (uneven splits): {err}") from None
        self.counts = advance(self.counts, row)
        return tuple(row)
