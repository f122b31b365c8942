"""The joint uneven-split solver's columns and terms (``solvers.uneven_joint``): a layer's column
is its top cell (type t_0, alpha) and its types below. Every amount comes from the one integer
cost table (``core.split_costs.SplitCosts``): ``_Model`` sums a plan's table vectors into its
exact components (S_0, S_1, V_0, V_1 in seconds, Fractions) and ``_Tables`` floors each term's
seconds at scale 2^k (every DP value a proven lower bound), with the level-at-a-time reductions.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import product
from fractions import Fraction
from operator import add

import numpy as np

from explorer.core.array import ArraySpec
from explorer.core.network import Network
from explorer.core.partition import PartitionType, Space
from explorer.core.plan import Plan
from explorer.core.split_costs import ONE, ZERO, SplitCosts, VectorLayout
from explorer.core.uneven import AlphaSpace, alpha_units, split_units, whole_units

from .deadline import check_deadline

INF = 2**60  # an impossible column (a join's type III) or an unreachable state
# the joint solver's memory limit: its tables by their estimate before they are built (``table_bytes``), and
# its label passes' live labels (``joint_labels.check_labels``); past it, the plan in hand (issue 23, item 5)
MAX_BYTES = 2 * 2**30


@dataclass(frozen=True)
class JointOptions:
    weight_scale: int = 1024  # Q: the Lagrangian weights are integers in [0, Q]
    dual_rounds: int = 14  # Kelley iterations at most
    enum_budget: int = 200_000  # labels kept at most when closing the gap (chains)
    time_limit_s: float = 10.0  # then the best plan and the proven bound (FEASIBLE)
    graph_beams: tuple[int, ...] = (2,)  # graphs: labels kept per column in the heuristic passes
    graph_dual_tol: float = 0.003  # graphs: Kelley stops when its estimate is within this of the bound


class _Columns:
    """Column c = top * K^(H-1) + tau, top = t0 * A + alpha index, tau = t1 t2 .. t_{H-1} in base K."""

    def __init__(self, types: tuple[PartitionType, ...], alphas: tuple[Fraction, ...], H: int):
        self.types, self.alphas, self.H = types, alphas, H
        self.K, self.A = len(types), len(alphas)
        self.n_top = self.K * self.A
        self.n_tau = self.K ** (H - 1)
        self.n = self.n_top * self.n_tau

    def top(self, top: int) -> tuple[PartitionType, Fraction]:
        return self.types[top // self.A], self.alphas[top % self.A]

    def lower(self, tau: int) -> tuple[PartitionType, ...]:
        return tuple(self.types[k] for k in _digits(tau, self.K, self.H - 1))

    def split(self, col: int) -> tuple[PartitionType, Fraction, tuple[PartitionType, ...]]:
        t0, a = self.top(col // self.n_tau)
        return t0, a, self.lower(col % self.n_tau)


HALF = Fraction(1, 2)


class _Model:
    """The joint solver's view of the one integer cost table (``core.split_costs.SplitCosts``):
    which columns a layer may take, and a plan's four components exactly. The table's amounts are
    integers in ``costs.unit`` units per element (per FLOP for compute); a level-h amount takes
    ``per_unit[h]`` seconds per unit on the link, a side-s leaf's FLOPs ``per_flop[s]``."""

    def __init__(self, network: Network, array: ArraySpec, space: Space, aspace: AlphaSpace, types_allowed=None,
                 weight_copies: int = 0):
        """``types_allowed(level, layer)``: the types pins and forbids leave a layer of the
        original network (None: every type its node offers)."""
        self.net, self.array = network, array
        self.types_allowed = types_allowed
        H = array.levels
        self.H = H
        peaks = array.leaf_peaks_TFLOPS()
        self.peak = (peaks[0] * 10**12, peaks[-1] * 10**12)
        self.cols = _Columns(space.types, aspace.choices(0, 0), H)
        self.costs = SplitCosts(network, H, aspace.values(), VectorLayout(H), weight_copies)
        U = self.costs.unit
        self.per_unit = tuple(Fraction(array.dtype_bytes) / (array.bandwidth_Bps(h) * U) for h in range(H))
        self.per_flop = tuple(1 / (p * U) for p in self.peak)
        lay = self.costs.layout
        # side 0's first leaf and its groups; side 1's last leaf and its groups (every leaf of a side alike)
        self._at = tuple((leaf, tuple(lay.pos[(h, g(h))] for h in range(H)))
                         for leaf, g in ((0, lambda h: 0), (lay.leaves - 1, lambda h: 2**h - 1)))
        self._memo: dict = {}
        self.virtual = isinstance(network, _VirtualSource)  # node 0 and the first edges cost nothing
        self.keeps = None  # columns -> whether that plan keeps the limits (exactly); None: no limits
        self.groups: dict = {}  # ``allowed_columns``' memo of the whole-groups rule

    def pinned(self, l: int, h: int, t: PartitionType) -> bool:  # noqa: E741
        """Whether pins and forbids let layer l (of this model's network) take t at level h."""
        if self.types_allowed is None or (self.virtual and l == 0):
            return True
        return t in self.types_allowed(h, l - 1 if self.virtual else l)

    def allowed(self, l: int, col: int) -> bool:  # noqa: E741
        """Whether layer l can take the column: the types its node offers at each level
        (``Layer.offers``) and, for a grouped conv (an attention node with heads), whole groups
        (heads) on every side (``whole_units``)."""
        if self.virtual and l == 0:
            return True
        node = self.net.layers[l]
        t0, a, lower = self.cols.split(col)
        types = (t0,) + lower
        if not all(node.offers(t, h) and self.pinned(l, h, t) for h, t in enumerate(types)):
            return False
        return split_units(node) is None or whole_units(node, types, [[a]] + [[HALF] * 2**h for h in range(1, self.H)])

    def column(self, c: int) -> tuple:
        """Column c as the table's column: (type, alphas of the level's groups) per level."""
        t0, a, lower = self.cols.split(c)
        return ((t0, (a,)),) + tuple((t, (HALF,) * 2**h) for h, t in enumerate(lower, 1))

    def upper_units(self) -> int:
        """Above any plan's sum of one amount or footprint in table units (sizes ``with_limits``' floors)."""
        costs = self.costs
        ub = sum((3 + costs.weight_copies) * max(costs.whole_units(l)[:3]) for l in range(len(self.net.layers)))  # noqa: E741
        return ub + sum(2 * costs.relayout_share(e, ONE, ZERO) * costs.D ** 2 for e in range(len(self.net.edges)))

    def upper_s(self) -> float:
        """Seconds above any plan's S_0 + S_1 + V_0 + V_1 (a float: it only sizes the tables' scale)."""
        rate, per_flop = sum(float(f) for f in self.per_unit), float(max(self.per_flop))
        ub = 0.0
        for l in range(1 if self.virtual else 0, len(self.net.layers)):  # noqa: E741
            *whole, flops = self.costs.whole_units(l)
            ub += max(whole) * rate + flops * per_flop
        whole_edge = lambda e: self.costs.relayout_share(e, ONE, ZERO) * self.costs.D ** 2  # noqa: E731
        return ub + sum(2 * whole_edge(e) * rate for e in range(len(self.net.edges)))

    # a whole plan, exactly
    def components(self, cols: list[int]) -> tuple[Fraction, Fraction, Fraction, Fraction]:
        """(S_0, S_1, V_0, V_1) of a plan: its table vectors summed, in seconds (``seconds``); the
        virtual source and its edges cost nothing."""
        tot, v0 = [0] * self.costs.layout.size, 1 if self.virtual else 0
        for l in range(v0, len(cols)):  # noqa: E741
            tot = list(map(add, tot, self._vector((l, cols[l]), lambda: self.costs.layer(l, self.column(cols[l])))))
        for e, (u, v) in enumerate(self.net.edges):
            if u >= v0:
                key = (e, cols[u], cols[v])
                tot = list(map(add, tot, self._vector(key, lambda: self.costs.edge(e, *map(self.column, key[1:])))))
        return self.seconds(tot)

    def _vector(self, key, make) -> tuple[int, ...]:
        """A layer's (key (l, c)) or an edge's (key (e, c_u, c_v)) table vector (memo: the plans
        scored share most columns)."""
        got = self._memo.get(key)
        if got is None:
            got = self._memo[key] = make()
        return got

    def seconds(self, vec) -> tuple[Fraction, Fraction, Fraction, Fraction]:
        """A sum vector's (S_0, S_1, V_0, V_1): what each side sends at the top, and a side's leaf
        compute plus its groups' exchanges below (each the busier of the group's two sides)."""
        top = self._at[0][1][0]
        S = tuple(vec[top + s] * self.per_unit[0] for s in (0, 1))
        V = tuple(vec[leaf] * self.per_flop[s] + sum(max(vec[p], vec[p + 1]) * self.per_unit[h]
                                                     for h, p in enumerate(pos) if h)
                  for s, (leaf, pos) in enumerate(self._at))
        return S + V

    def plan(self, cols: list[int]) -> Plan:
        sp = [self.cols.split(c) for c in cols]
        H, L = self.H, len(cols)
        types = tuple(tuple(sp[l][0] if h == 0 else sp[l][2][h - 1] for l in range(L)) for h in range(H))  # noqa: E741
        alphas = tuple(tuple(tuple(sp[l][1] if h == 0 else Fraction(1, 2) for l in range(L)) for _ in range(2**h))  # noqa: E741
                       for h in range(H))
        return Plan(types, alphas)


def step_of(comp) -> Fraction:
    return max(comp[0], comp[1]) + max(comp[2], comp[3])


def better(m: _Model, best, cols, value: Fraction | None = None):
    """``best`` (step time, columns), or the plan of ``cols`` where its step time (``value``) is less
    and it keeps the limits (``m.keeps``: an exact check; None without limits)."""
    value = step_of(m.components(cols)) if value is None else value
    return (value, cols) if value < best[0] and (m.keeps is None or m.keeps(cols)) else best


def with_limits(t: "_Tables", caps: dict[int, int], memory: tuple[int, int] | None,
                deadline: float | None = None) -> None:
    """The labels' terms of the limits after the four components (``t.lnode``; ``t.extra``: their
    edge tables, each (tables, its two rows); ``t.lim``): two per capped level (a top side's amount,
    or a side's group's below) and two for memory (a side's leaf footprint), each the exact amount
    floored over 2^k (every plan's sum below 2^56): a label over its floored limit is over the
    limit; dominance among them allows ``slack`` (``_pareto_filter``). ``caps``: level -> most units
    a side sends; ``memory``: most footprint units on a leaf of each side (left out where no plan
    can exceed it: each layer's largest footprint summed). TimeoutError once past ``deadline``."""
    m = t.m
    k = max(0, m.upper_units().bit_length() - 56)
    rows, lim = [t.node], []
    for h, most in sorted(caps.items()):
        x = _Tables(m, 1, ([Fraction(int(i == h), 2**k) for i in range(m.H)], (ZERO_F, ZERO_F)), deadline)
        sl = slice(0, 2) if h == 0 else slice(2, 4)
        t.extra.append((x, sl))
        rows.append(x.node[:, sl])
        lim += [min(most >> k, NO_LIMIT)] * 2
    foot = None if memory is None else t.footprints(deadline)
    if foot is not None and any(f > most for f, most in zip(foot.max(axis=2).sum(axis=0), memory)):  # it can bind
        rows.append((foot // 2**k).astype(np.int64))
        lim += [min(most >> k, NO_LIMIT) for most in memory]
    t.lnode, t.lim = np.concatenate(rows, axis=1), np.array(lim, dtype=np.int64)


ZERO_F = Fraction(0)
NO_LIMIT = 2**62  # a limit past every plan's sum (below 2^56 once shifted): held in int64, never binding


class _Tables:
    """The four components' terms floored at scale ``s`` (integers: seconds * s), in the factored
    layout, from the table's exact integer amounts: floor(amount * seconds per unit * s) in
    integers, so every DP value is a lower bound. The amounts are taken with the alpha axis as
    numpy object arrays (Python integers: side 0's alphas, then side 1's); a group's shares at a
    level are fixed by the top cell and the powers of D under them, so amounts are computed once
    per (top type, powers, type) and broadcast."""

    def __init__(self, m: _Model, scale: int, rates=None, deadline: float | None = None):
        """``rates``: (seconds per unit per level, per FLOP per side) other than the model's (a
        limit's exact amounts: 1 on its level, 0 elsewhere, at scale 1). ``deadline``: a
        ``time.perf_counter()`` value; TimeoutError once past it (checked per layer, per edge and per
        row of an edge's top coefficients: the build takes 0.4-0.7 s on ResNet-50 at 1/16, and at
        1/1024 one pair of node behaviours has 9.4 M top pairs, minutes)."""
        self._deadline = deadline
        self.m, self.s = m, scale
        per_unit, per_flop = rates or (m.per_unit, m.per_flop)
        C, D = m.cols, m.costs.D
        L = len(m.net.layers)
        ks = [alpha_units(a, D) for a in C.alphas]
        self._part = np.array(ks + [D - k for k in ks], dtype=object)  # the top split's side parts
        self._f = [(f.numerator * scale, f.denominator) for f in per_unit]
        self._fc = [(f.numerator * scale, f.denominator) for f in per_flop]
        self._shares: dict = {}
        self.node = np.zeros((L, 4, C.n), dtype=np.int64)
        for l in range(L):  # noqa: E741
            check_deadline(deadline, TimeoutError)
            self._node(l)
        self._pairs: dict = {}
        self.lnode, self.extra, self.lim = self.node, [], np.zeros(0, dtype=np.int64)  # the labels' terms: ``with_limits``
        self.top, self.lev = [], []  # [e] (2, n_top_u, n_top_v); [e][h - 1] ``_edge_level``
        for e in range(len(m.net.edges)):
            check_deadline(deadline, TimeoutError)
            self.top.append(self._edge_top(e))
            self.lev.append([self._edge_level(e, h) for h in range(1, m.H)])
        if m.virtual:  # the virtual source: every column, no terms, nor on its edges
            self.node[0] = 0
            for e, (u, _) in enumerate(m.net.edges):
                if u == 0:
                    self.top[e][:] = 0
                    for a in self.lev[e]:
                        a[:] = 0

    def footprints(self, deadline: float | None = None) -> np.ndarray:
        """(L, 2, n): a side-s leaf's footprint per column (``SplitCosts.footprint``, exact units;
        none for a join, the virtual source or a type its node does not offer). TimeoutError once
        past ``deadline`` (per layer)."""
        m, C = self.m, self.m.cols
        out = np.zeros((len(self.node), 2, C.K, C.A, C.n_tau), dtype=object)
        for l, layer in enumerate(m.net.layers):  # noqa: E741
            check_deadline(deadline, TimeoutError)
            has = [layer.node_types.specs[t.index] is not None for t in C.types]
            if layer.is_join or (m.virtual and l == 0):
                continue
            for it0, tau in product(range(C.K), range(C.n_tau)):
                prefix = (it0,) + _digits(tau, C.K, C.H - 1)
                if all(has[k] for k in prefix):
                    f = m.costs.footprint(l, *self._share(l, prefix))
                    out[l, :, it0, :, tau] = np.broadcast_to(np.asarray(f, dtype=object), (2 * C.A,)).reshape(2, C.A)
        return out.reshape(len(self.node), 2, C.n)

    def _floor(self, x, f) -> np.ndarray:
        """(2, A): floor(x * f) per side and alpha; x an amount per (side, alpha) or one for all."""
        num, den = f
        if isinstance(x, np.ndarray):
            return ((x * num) // den).astype(np.int64).reshape(2, -1)
        return np.full((2, self.m.cols.A), (x * num) // den, dtype=np.int64)

    def _share(self, l: int, prefix: tuple[int, ...]):  # noqa: E741
        """Layer l's group shares (numerators, powers of D) on both sides at level len(prefix),
        under the top type prefix[0] (its alphas' side parts) and the lower types prefix[1:] (1/2)."""
        key = (l, prefix)
        got = self._shares.get(key)
        if got is None:
            costs = self.m.costs
            parent = (ONE, ZERO, self._part) if len(prefix) == 1 else (*self._share(l, prefix[:-1]), costs.D // 2)
            got = self._shares[key] = costs.split_share(self.m.net.layers[l], self.m.cols.types[prefix[-1]], *parent)
        return got

    def _node(self, l: int) -> None:  # noqa: E741
        """Layer l's own floored terms per column: S_s its top exchange, V_s a side-s leaf's
        compute plus its exchanges below, per top type and lower types, vectorised over the alphas."""
        m, C, costs = self.m, self.m.cols, self.m.costs
        layer = m.net.layers[l]
        out = np.zeros((4, C.K, C.A, C.n_tau), dtype=np.int64)
        memo: dict = {}
        has = [layer.node_types.specs[t.index] is not None for t in C.types]
        for it0, t0 in enumerate(C.types):
            if not has[it0]:
                continue  # INF below
            out[:2, it0] = (costs.intra(l, t0, ONE, ZERO) * self._f[0][0]) // self._f[0][1]
            for tau in range(C.n_tau):
                lower = _digits(tau, C.K, C.H - 1)
                if not all(has[k] for k in lower):
                    continue
                prefix = (it0,) + lower
                V = self._terms(memo, l, prefix)
                for h in range(1, m.H):
                    V = V + self._terms(memo, l, prefix[:h], lower[h - 1])
                out[2:, it0, :, tau] = V
        node = out.reshape(4, C.n)
        node[:, ~allowed_columns(m, l)] = INF
        self.node[l] = node

    def _terms(self, memo: dict, l: int, prefix, k: int | None = None) -> np.ndarray:  # noqa: E741
        """(2, A): the floored seconds of a side's group under ``prefix`` at level len(prefix): its
        exchange under type index k, or (k None) a leaf's compute (its FLOPs per its kind's peak)."""
        nums, exps = self._share(l, prefix)
        got = memo.get((prefix[0], exps, k))
        if got is None:
            costs = self.m.costs
            if k is None:
                x = costs.leaf_flops(l, nums)
                got = np.stack([self._floor(x, f)[s] for s, f in enumerate(self._fc)])
            else:
                got = self._floor(costs.intra(l, self.m.cols.types[k], nums, exps), self._f[len(prefix)])
            memo[(prefix[0], exps, k)] = got
        return got

    def _edge_top(self, e: int) -> np.ndarray:
        """(2, n_top, n_top): floor(c * x * s) for each side's re-layout coefficient c
        (``SplitCosts.coefficients``) on the two top cells and x the edge's whole tensor; the
        coefficients per pair of node behaviours are computed once."""
        m = self.m
        u, v = m.net.edges[e]
        x = m.costs.relayout_share(e, ONE, ZERO)
        num, den = self._f[0]
        vals, index = self._pair_top(m.net.layers[u], m.net.layers[v])
        return np.array([(c * x * num) // den if c else 0 for c in vals], dtype=np.int64)[index]

    def _pair_top(self, U, V):
        """The distinct coefficients of two nodes' top cells and (2, n_top, n_top) indices into
        them (0 where a node does not offer the type: its node cost is INF)."""
        C, costs = self.m.cols, self.m.costs
        key = _pair_key(C, U, V)
        got = self._pairs.get(key)
        if got is None:
            uniq: dict = {0: 0}
            index = np.zeros((2, C.n_top, C.n_top), dtype=np.int64)
            for iu in range(C.n_top):
                check_deadline(self._deadline, TimeoutError)
                tu, au = C.top(iu)
                for iv in range(C.n_top):
                    tv, av = C.top(iv)
                    if U.offers(tu, 0) and V.offers(tv, 0):
                        pair = costs.coefficients(U, tu, au, V, tv, av)
                        for k in (0, 1):
                            index[k, iu, iv] = uniq.setdefault(pair[k], len(uniq))
            got = self._pairs[key] = (list(uniq), index)
        return got

    def _edge_level(self, e: int, h: int) -> np.ndarray:
        """(2, K, n_top * K^h): [side][t_hu][top_v, t_1v .. t_hv] = floor(c(t_hu, t_hv) * x * s),
        c the lesser of the two re-layout coefficients at alpha 1/2 (they are equal: a lower
        bound either way) and x the edge's tensor times the consumer's F_in share at a side's
        level-h group (``SplitCosts.relayout_share``)."""
        m, C, costs = self.m, self.m.cols, self.m.costs
        u, v = m.net.edges[e]
        U, V = m.net.layers[u], m.net.layers[v]
        ok = lambda node, t: node.node_types.specs[t.index] is not None  # noqa: E731
        coef = [[min(costs.coefficients(U, tu, HALF, V, tv, HALF)) if ok(U, tu) and ok(V, tv) else 0
                 for tv in C.types] for tu in C.types]
        Kp = C.K ** (h - 1)
        arr = np.zeros((2, C.K, C.K, C.A, Kp, C.K), dtype=np.int64)  # side, t_hu, top type, alpha, p, t_hv
        values = sorted({c for row in coef for c in row if c})
        if not values:
            return arr.reshape(2, C.K, C.n_top * Kp * C.K)
        G = np.zeros((len(values), 2, C.K, C.A, Kp), dtype=np.int64)  # per coefficient: side, top type, alpha, p
        memo: dict = {}
        num, den = self._f[h]
        for it0 in range(C.K):
            for p in range(Kp):
                prefix = (it0,) + _digits(p, C.K, h - 1)
                if not all(ok(V, C.types[k]) for k in prefix):
                    continue
                nums, exps = self._share(v, prefix)
                key = (it0, exps)
                if key not in memo:
                    x = costs.relayout_share(e, nums, exps)
                    memo[key] = [self._floor(c * x, (num, den)) for c in values]
                for i, f in enumerate(memo[key]):
                    G[i, :, it0, :, p] = f
        for ku in range(C.K):
            for kv in range(C.K):
                if coef[ku][kv]:
                    arr[:, ku, :, :, :, kv] = G[values.index(coef[ku][kv])]
        return arr.reshape(2, C.K, C.n_top * Kp * C.K)

    def weighted_node(self, l: int, w) -> np.ndarray:  # noqa: E741
        n = self.node[l]
        out = w[0] * n[0] + w[1] * n[1] + w[2] * n[2] + w[3] * n[3]
        out[n[0] >= INF] = INF
        return out

    def weighted_edge(self, e: int, w):
        top = w[0] * self.top[e][0] + w[1] * self.top[e][1]
        lev = [w[2] * a[0] + w[3] * a[1] for a in self.lev[e]]
        return top, lev


def allowed_columns(m: _Model, l: int) -> np.ndarray:  # noqa: E741
    """Layer l's allowed columns (``_Model.allowed``): the offered types level by level,
    vectorised; a grouped conv's whole-groups rule column by column (memo: ``m.groups``)."""
    C = m.cols
    layer = m.net.layers[l]
    idx = np.arange(C.n)
    ok = np.array([layer.offers(t, 0) and m.pinned(l, 0, t) for t in C.types])[idx // C.n_tau // C.A]
    for h in range(1, C.H):
        ok &= np.array([layer.offers(t, h) and m.pinned(l, h, t)
                        for t in C.types])[(idx % C.n_tau) // C.K ** (C.H - 1 - h) % C.K]
    units = split_units(layer)
    if units is not None:  # the same counts of groups (heads) recur (memo)
        for col in np.flatnonzero(ok):
            key = (units, layer.node_types.name, int(col))
            if key not in m.groups:
                m.groups[key] = m.allowed(l, int(col))
            ok[col] = m.groups[key]
    return ok


def _pair_key(C: _Columns, U, V) -> tuple:
    """Two nodes' top cells' kind (``_Tables._pair_top``: their coefficients are computed once per kind)."""
    offers = lambda node: tuple(node.offers(t, 0) for t in C.types)  # noqa: E731
    return U.node_types.name, V.node_types.name, offers(U), offers(V)


# Python objects per pair of top cells of a pair kind (``_Tables._pair_top``: its distinct coefficients and
# the process's coefficient caches, ``split_costs.edge_units``), measured with tracemalloc on AlexNet,
# tpu-mix-16, grids 1/16-1/256 (the int64 arrays subtracted): 974, 740, 691 bytes a pair at 2,304-36,864
# pairs; 72.6 MB at 147,456 and 96.7 MB at 589,824: the caches are bounded (about ``CACHED_PAIRS``
# entries), the distinct values are not (``UNIQ_PAIR_BYTES`` each past the caches)
PY_PAIR_BYTES = 700
CACHED_PAIRS = 100_000
UNIQ_PAIR_BYTES = 60


def table_bytes(m: _Model) -> int:
    """The joint solver's tables (``_Tables``, ``_Graph``) by their estimate, before they are built: int64
    entries (node terms, each edge's top and lower-level terms, each pair kind's top index) times 8, plus
    the Python objects each pair of top cells leaves (``PY_PAIR_BYTES``; ``bench/bench_memory_guard.py``),
    plus the first min-plus step of one row over an edge (``_reduce``: n_top x n_tau x n_top int64, held
    beside the tables; about 2 GB for alexnet at grid 1/1024, which the tables alone, 1.9 GB, hid)."""
    C, net = m.cols, m.net
    kinds = len({_pair_key(C, net.layers[u], net.layers[v]) for u, v in net.edges})
    n2 = C.n_top**2
    lev = sum(2 * C.K * C.n_top * C.K**h for h in range(1, C.H))
    ints = len(net.layers) * 4 * C.n + (len(net.edges) + kinds) * 2 * n2 + len(net.edges) * lev + n2 * C.n_tau
    pairs = kinds * n2
    return 8 * ints + PY_PAIR_BYTES * min(pairs, CACHED_PAIRS) + UNIQ_PAIR_BYTES * max(0, pairs - CACHED_PAIRS)


def _digits(p: int, K: int, h: int) -> tuple[int, ...]:
    """The h base-K digits of p, most significant first (type indices of levels 1 .. h)."""
    out = []
    for _ in range(h):
        out.append(p % K)
        p //= K
    return tuple(reversed(out))


def _reduce(F: np.ndarray, C: _Columns, top: np.ndarray, lev: list[np.ndarray]) -> np.ndarray:
    """min over the producer's column of F[..., col_u] + edge(col_u, col_v): (batch, n) -> (batch, n),
    one level at a time (top cell first)."""
    B = F.shape[0]
    K, H = C.K, C.H
    R = F.reshape(B, C.n_top, C.n_tau)  # (B, top_u, tau_u)
    # top: R2[b, tau_u, top_v] = min_top_u R[b, top_u, tau_u] + top[top_u, top_v]
    R = np.min(R[:, :, :, None] + top[None, :, None, :], axis=1)
    R = np.minimum(R, INF)
    # R: (B, t1u .. t_{H-1}u, P_v) with P_v = top_v (then top_v, t1v, ..)
    Pv = C.n_top
    for h in range(1, H):
        rest = K ** (H - 1 - h)
        R = R.reshape(B, K, rest, Pv)  # t_hu, rest_u, P_v
        E = lev[h - 1].reshape(K, Pv, K)  # t_hu, P_v, t_hv
        R = np.min(R[:, :, :, :, None] + E[None, :, None, :, :], axis=1)  # (B, rest, Pv, K)
        R = np.minimum(R, INF)
        Pv *= K
        R = R.reshape(B, rest, Pv)
    return R.reshape(B, C.n)


def _edge_col(C: _Columns, top: np.ndarray, lev: list[np.ndarray], col_v: int) -> np.ndarray:
    """edge(col_u, col_v) for every col_u (the weighted edge given the consumer)."""
    K, H = C.K, C.H
    top_v = col_v // C.n_tau
    out = np.repeat(top[:, top_v], C.n_tau)  # by top_u, broadcast over tau_u
    idx = np.arange(C.n)
    for h in range(1, H):
        t_hu = (idx % C.n_tau) // K ** (H - 1 - h) % K
        p = col_v // K ** (H - 1 - h)  # top_v, t1v .. t_hv
        out = out + lev[h - 1][t_hu, p]
    return out


def _weights(l: int, m: int, Q: int):
    return (l, Q - l, m, Q - m)


@dataclass(frozen=True)
class _VirtualSource:
    """A network of several sources seen with one virtual source before them (node 0, the real
    layers shifted by one): zero-cost edges from it to every real source, every column allowed
    and no terms of its own (``_Model.virtual``), so each plan of the network keeps its step time;
    its column is dropped from the returned plan."""

    layers: tuple
    edges: tuple
    edge_shares: tuple
    batch: int

    @staticmethod
    def of(network: Network):
        """The network itself with one source, else its virtual-source view."""
        has_in = {v for _, v in network.edges}
        srcs = [n for n in range(len(network.layers)) if n not in has_in]
        if len(srcs) <= 1:
            return network
        edges = tuple((0, s + 1) for s in srcs) + tuple((u + 1, v + 1) for u, v in network.edges)
        shares = (Fraction(0),) * len(srcs) + tuple(network.edge_shares)
        return _VirtualSource((network.layers[srcs[0]], *network.layers), edges, shares, network.batch)

    @staticmethod
    def plan(C: _Columns, p: Plan) -> Plan:
        """A plan of the network with the virtual source's column (the first type, the grid's first alpha) prepended."""
        types = tuple((C.types[0], *row) for row in p.types)
        alphas = tuple(tuple((C.alphas[0] if h == 0 else HALF, *g) for g in row) for h, row in enumerate(p.alphas))
        return Plan(types, alphas)


def _reduce_back(F: np.ndarray, C: _Columns, top: np.ndarray, lev: list[np.ndarray]) -> np.ndarray:
    """min over the consumer's column of edge(col_u, col_v) + F[..., col_v]: (batch, n) -> (batch, n),
    one level at a time (deepest type first, the top cell last)."""
    B, K, H = F.shape[0], C.K, C.H
    U = 1
    Pv = C.n_top * K ** (H - 2) if H >= 2 else C.n_top
    R = F.reshape(B, Pv, K, U) if H >= 2 else F.reshape(B, C.n_top, 1)
    for h in range(H - 1, 0, -1):
        E = lev[h - 1].reshape(K, Pv, K).transpose(1, 0, 2)  # (Pv, t_hu, t_hv)
        R = np.min(R[:, :, None, :, :] + E[None, :, :, :, None], axis=3)  # (B, Pv, t_hu, U)
        R = np.minimum(R, INF)
        U *= K
        if h > 1:
            Pv //= K
            R = R.reshape(B, Pv, K, U)
        else:
            R = R.reshape(B, C.n_top, U)
    R = np.min(R[:, None, :, :] + top[None, :, :, None], axis=2)  # (B, top_u, tau_u)
    return np.minimum(R, INF).reshape(B, C.n)
