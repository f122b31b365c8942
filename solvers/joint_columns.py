"""The joint uneven-split solver's columns and terms (``solvers.uneven_joint``): a layer's column
is its top cell (type t_0, alpha) and its types below; ``_Model`` gives each column's and each
edge's exact terms (S_0, S_1, V_0, V_1 in seconds, Fractions) and ``_Tables`` their integer
floors at scale 2^k (every DP value a proven lower bound), with the level-at-a-time reductions.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from explorer.core.array import ArraySpec
from explorer.core.comm import edge_split, training_flops
from explorer.core.uneven import AlphaSpace, side_share, size_share, spec_of, split_units, whole_units
from explorer.core.network import Network
from explorer.core.partition import Dim, PartitionType, Size, Space
from explorer.core.plan import Plan




INF = 2**60  # an impossible column (a join's type III) or an unreachable state


COMPONENTS = ("S0", "S1", "V0", "V1")


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
        out = []
        for _ in range(self.H - 1):
            out.append(self.types[tau % self.K])
            tau //= self.K
        return tuple(reversed(out))

    def split(self, col: int) -> tuple[PartitionType, Fraction, tuple[PartitionType, ...]]:
        t0, a = self.top(col // self.n_tau)
        return t0, a, self.lower(col % self.n_tau)


HALF = Fraction(1, 2)


def _shares(node, t0: PartitionType, a: Fraction, side: int, lower: tuple[PartitionType, ...]) -> dict:
    """A side-s group's share of each dimension below levels 0 .. len(lower) (``node``'s specs:
    a grouped conv's II halves G)."""
    s = {Dim.B: Fraction(1), Dim.D_I: Fraction(1), Dim.D_O: Fraction(1), Dim.G: Fraction(1)}
    s[spec_of(node, t0).halves] *= side_share(a, side)
    for t in lower:
        s[spec_of(node, t).halves] /= 2
    return s


def _exchanged(node, t: PartitionType):
    """The size of the node's intra exchange under t, None when it has none (a join, attention
    included; a grouped conv's group split; an embedding's III, whose input has no error)."""
    if node.is_join:
        return None
    tensor = spec_of(node, t).exchanges
    return None if tensor is None else tensor.size


def _halves(node, t: PartitionType) -> Dim:
    return spec_of(node, t).halves


class _Model:
    """The exact terms of the four components, per layer column and per edge."""

    def __init__(self, network: Network, array: ArraySpec, space: Space, aspace: AlphaSpace, types_allowed=None):
        """``types_allowed(level, layer)``: the types pins and forbids leave a layer of the
        original network (None: every type its node offers)."""
        self.net, self.array = network, array
        self.types_allowed = types_allowed
        H = array.levels
        self.H = H
        peaks = array.leaf_peaks_TFLOPS()
        self.peak = (peaks[0] * 10**12, peaks[-1] * 10**12)
        self.rate = tuple(Fraction(array.dtype_bytes) / array.bandwidth_Bps(h) for h in range(H))
        self.cols = _Columns(space.types, aspace.choices(0, 0), H)
        b = network.batch
        self.whole = [(L.input_elements(b), L.weight_elements(), L.output_elements(b)) for L in network.layers]
        self.flops = [training_flops(L, b) for L in network.layers]
        self._memo_own: dict = {}
        self._memo_edge: dict = {}
        self.virtual = isinstance(network, _VirtualSource)  # node 0 and the first edges cost nothing
        if self.virtual:
            self.whole[0], self.flops[0] = (0, 0, 0), 0

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

    def own(self, l: int, t0, a, lower) -> tuple[Fraction, Fraction, Fraction, Fraction]:  # noqa: E741
        """(S0, S1, V0, V1) of layer l's own terms: intra exchanges and compute."""
        if self.virtual and l == 0:
            return (Fraction(0),) * 4
        layer = self.net.layers[l]
        size0 = _exchanged(layer, t0)
        S = Fraction(0) if size0 is None else self.whole[l][size0.index] * self.rate[0]
        V = []
        for side in (0, 1):
            v = self.flops[l] * side_share(a, side) / 2 ** (self.H - 1) / self.peak[side]
            for h in range(1, self.H):
                size = _exchanged(layer, lower[h - 1])
                if size is not None:
                    v += (self.whole[l][size.index] * size_share(_shares(layer, t0, a, side, lower[: h - 1]), size)
                          * self.rate[h])
            V.append(v)
        return S, S, V[0], V[1]

    def edge_top(self, e: int, tu, au, tv, av) -> tuple[Fraction, Fraction]:
        if self.virtual and self.net.edges[e][0] == 0:
            return Fraction(0), Fraction(0)
        u, v = self.net.edges[e]
        x = self.whole[v][0] * self.net.edge_shares[e] * self.rate[0]
        c0, c1 = edge_split(self.net.layers[u], tu, au, self.net.layers[v], tv, av)
        return c0 * x, c1 * x

    def edge_level(self, e: int, h: int, tu: PartitionType, t0v, av, lower_v) -> tuple[Fraction, Fraction]:
        """(V0, V1) terms of edge e at level h >= 1: the consumer's lower types t_1 .. t_h."""
        if self.virtual and self.net.edges[e][0] == 0:
            return Fraction(0), Fraction(0)
        u, v = self.net.edges[e]
        c, _ = edge_split(self.net.layers[u], tu, HALF, self.net.layers[v], lower_v[h - 1], HALF)
        if c == 0:
            return Fraction(0), Fraction(0)
        x = self.whole[v][0] * self.net.edge_shares[e] * c * self.rate[h]
        V = self.net.layers[v]
        return tuple(x * size_share(_shares(V, t0v, av, side, lower_v[: h - 1]), Size.F_IN) for side in (0, 1))

    # a whole plan, exactly
    def components(self, cols: list[int]) -> tuple[Fraction, Fraction, Fraction, Fraction]:
        tot = [Fraction(0)] * 4
        for l, c in enumerate(cols):  # noqa: E741
            for k, x in enumerate(self._own_col(l, c)):
                tot[k] += x
        for e, (u, v) in enumerate(self.net.edges):
            for k, x in enumerate(self._edge_cols(e, cols[u], cols[v])):
                tot[k] += x
        return tuple(tot)

    def _own_col(self, l: int, c: int) -> tuple[Fraction, ...]:  # noqa: E741
        """``own`` of layer l at column c (memo: plans scored share most columns)."""
        memo = self._memo_own
        got = memo.get((l, c))
        if got is None:
            got = memo[(l, c)] = self.own(l, *self.cols.split(c))
        return got

    def _edge_cols(self, e: int, cu: int, cv: int) -> tuple[Fraction, ...]:
        """Edge e's (S0, S1, V0, V1) terms at producer column cu and consumer column cv (memo)."""
        memo = self._memo_edge
        got = memo.get((e, cu, cv))
        if got is None:
            tu, au, lu = self.cols.split(cu)
            tv, av, lv = self.cols.split(cv)
            s0, s1 = self.edge_top(e, tu, au, tv, av)
            v0 = v1 = Fraction(0)
            for h in range(1, self.H):
                a, b = self.edge_level(e, h, lu[h - 1], tv, av, lv)
                v0 += a
                v1 += b
            got = memo[(e, cu, cv)] = (s0, s1, v0, v1)
        return got

    def plan(self, cols: list[int]) -> Plan:
        sp = [self.cols.split(c) for c in cols]
        H, L = self.H, len(cols)
        types = tuple(tuple(sp[l][0] if h == 0 else sp[l][2][h - 1] for l in range(L)) for h in range(H))  # noqa: E741
        alphas = tuple(tuple(tuple(sp[l][1] if h == 0 else Fraction(1, 2) for l in range(L)) for _ in range(2**h))  # noqa: E741
                       for h in range(H))
        return Plan(types, alphas)


def step_of(comp) -> Fraction:
    return max(comp[0], comp[1]) + max(comp[2], comp[3])


class _Tables:
    """The terms floored at scale ``s`` (integers: seconds * s), in the factored layout. Each
    distinct exact value is floored once (the same share recurs across columns)."""

    def __init__(self, m: _Model, scale: int):
        self.m, self.s = m, scale
        C = m.cols
        L = len(m.net.layers)
        self._sides = [[side_share(a, side) for a in C.alphas] for side in (0, 1)]
        self._groups: dict = {}
        self.node = np.zeros((L, 4, C.n), dtype=np.int64)
        for l in range(L):  # noqa: E741
            self._node(l)
        self._pairs: dict = {}
        self.top = [self._edge_top(e) for e in range(len(m.net.edges))]  # [e] (2, n_top_u, n_top_v)
        self.lev = [[self._edge_level(e, h) for h in range(1, m.H)] for e in range(len(m.net.edges))]
        if m.virtual:  # the virtual source: every column, no terms, nor on its edges
            self.node[0] = 0
            for e, (u, _) in enumerate(m.net.edges):
                if u == 0:
                    self.top[e][:] = 0
                    for a in self.lev[e]:
                        a[:] = 0

    def _fl(self, x: Fraction, f: Fraction) -> int:
        """floor(x * f * s), in integers."""
        return (x.numerator * f.numerator * self.s) // (x.denominator * f.denominator)

    def _fl_alphas(self, x: Fraction, j: int) -> np.ndarray:
        """(2, A): floor(x * (alpha's side) / 2^j * s) per side and alpha of the grid, in integers."""
        xn, xd = x.numerator * self.s, x.denominator << j
        return np.array([[(xn * f.numerator) // (xd * f.denominator) for f in row] for row in self._sides])

    def _node(self, l: int) -> None:  # noqa: E741
        """Layer l's own floored terms per column (the exact terms of ``_Model.own``, factor by
        factor): per top type and lower types, vectorised over the alphas."""
        m, C = self.m, self.m.cols
        layer = m.net.layers[l]
        xs = [Fraction(w) for w in m.whole[l]]
        unit = Fraction(m.flops[l]) / 2 ** (m.H - 1)
        comp = np.stack([self._fl_alphas(unit / m.peak[side], 0)[side] for side in (0, 1)])
        out = np.zeros((4, C.K, C.A, C.n_tau), dtype=np.int64)
        memo: dict = {}
        has = lambda t: layer.node_types.specs[t.index] is not None  # noqa: E731
        for it0, t0 in enumerate(C.types):
            if not has(t0):
                continue  # INF below
            size0 = _exchanged(layer, t0)
            out[:2, it0] = 0 if size0 is None else self._fl(xs[size0.index], m.rate[0])
            for tau in range(C.n_tau):
                lower = C.lower(tau)
                if not all(has(t) for t in lower):
                    continue
                V = comp.copy()
                for h in range(1, m.H):
                    size = _exchanged(layer, lower[h - 1])
                    if size is not None:
                        j = sum(1 for t in lower[: h - 1] if _halves(layer, t) in size.dims)
                        top_in = _halves(layer, t0) in size.dims
                        V += self._level_terms(memo, xs[size.index], h, size.index, j, top_in)
                out[2:, it0, :, tau] = V
        node = out.reshape(4, C.n)
        node[:, ~self._allowed(l)] = INF
        self.node[l] = node

    def _level_terms(self, memo: dict, x: Fraction, h: int, idx: int, j: int, top_in: bool) -> np.ndarray:
        """(2, A): a level-h exchange of size x (index idx) with j lower halvings of it: per side and
        alpha, floor(x * rate_h * (alpha's side if the top type halves it) / 2^j * s)."""
        key = (h, idx, j, top_in)
        got = memo.get(key)
        if got is None:
            C, xr = self.m.cols, x * self.m.rate[h]
            if top_in:
                got = self._fl_alphas(xr, j)
            else:
                got = np.full((2, C.A), self._fl(xr, Fraction(1, 2**j)), dtype=np.int64)
            memo[key] = got
        return got

    def _allowed(self, l: int) -> np.ndarray:  # noqa: E741
        """Layer l's allowed columns (``_Model.allowed``): the offered types level by level,
        vectorised; a grouped conv's whole-groups rule column by column."""
        m, C = self.m, self.m.cols
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
                if key not in self._groups:
                    self._groups[key] = m.allowed(l, int(col))
                ok[col] = self._groups[key]
        return ok

    def _edge_top(self, e: int) -> np.ndarray:
        """(2, n_top, n_top): floor(x * c * s) for each side's coefficient c of ``edge_split`` on the
        two top cells; the coefficients per pair of node behaviours are computed once."""
        m = self.m
        u, v = m.net.edges[e]
        x = m.whole[v][0] * m.net.edge_shares[e] * m.rate[0]
        vals, index = self._pair_top(m.net.layers[u], m.net.layers[v])
        return np.array([self._fl(x, c) if c else 0 for c in vals], dtype=np.int64)[index]

    def _pair_top(self, U, V):
        """The distinct ``edge_split`` coefficients of two nodes' top cells and (2, n_top, n_top)
        indices into them (0 where a node does not offer the type: its node cost is INF)."""
        C = self.m.cols
        offers = lambda node: tuple(node.offers(t, 0) for t in C.types)  # noqa: E731
        key = (U.node_types.name, V.node_types.name, offers(U), offers(V))
        got = self._pairs.get(key)
        if got is None:
            uniq: dict = {Fraction(0): 0}
            index = np.zeros((2, C.n_top, C.n_top), dtype=np.int64)
            for iu in range(C.n_top):
                tu, au = C.top(iu)
                for iv in range(C.n_top):
                    tv, av = C.top(iv)
                    if U.offers(tu, 0) and V.offers(tv, 0):
                        pair = edge_split(U, tu, au, V, tv, av)
                        for k in (0, 1):
                            index[k, iu, iv] = uniq.setdefault(pair[k], len(uniq))
            got = self._pairs[key] = (list(uniq), index)
        return got

    def _edge_level(self, e: int, h: int) -> np.ndarray:
        """(2, K, n_top * K^h): [side][t_hu][top_v, t_1v .. t_hv] = floor(base * c(t_hu, t_hv) *
        share of F_in), the share being (alpha's side if the top type splits B or D_i) / 2^j."""
        m, C = self.m, self.m.cols
        u, v = m.net.edges[e]
        U, V = m.net.layers[u], m.net.layers[v]
        half = Fraction(1, 2)
        ok = lambda node, t: node.node_types.specs[t.index] is not None  # noqa: E731
        coef = [[edge_split(U, tu, half, V, tv, half)[0] if ok(U, tu) and ok(V, tv) else Fraction(0)
                 for tv in C.types] for tu in C.types]
        base = m.whole[v][0] * m.net.edge_shares[e] * m.rate[h]
        dims = Size.F_IN.dims
        Kp = C.K ** (h - 1)
        arr = np.zeros((2, C.K, C.K, C.A, Kp, C.K), dtype=np.int64)  # side, t_hu, top type, alpha, p, t_hv
        # F_in spans B, D_i and G: a grouped conv's group split (G) counts as its II (D_i) would;
        # a join's (attention's) and an embedding's types halve what the global types halve
        js = np.array([sum(1 for t in _digits(p, C.K, h - 1, C.types) if t.spec.halves in dims) for p in range(Kp)])
        top_in = [t.spec.halves in dims for t in C.types]
        for ku in range(C.K):
            for kv in range(C.K):
                c = coef[ku][kv]
                if not c:
                    continue
                for j in np.unique(js):
                    flat = self._fl(base * c, Fraction(1, 2 ** int(j)))
                    by_a = self._fl_alphas(base * c, int(j)) if any(top_in) else None
                    for p in np.flatnonzero(js == j):
                        for it, tin in enumerate(top_in):
                            arr[:, ku, it, :, p, kv] = by_a if tin else flat
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


def _digits(p: int, K: int, h: int, types) -> tuple[PartitionType, ...]:
    out = []
    for _ in range(h):
        out.append(types[p % K])
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
