"""A proven joint optimum (types and alphas per layer) for arrays split by kind at the top.

Scope: the declared alpha space (``core.hetero.AlphaSpace``) frees only the top split (level 0):
each half of the tree is one kind (e.g. ``tpu-mix-16``: 8 v2 | 8 v3), every split below is 1/2.
No overlap of compute and communication. Then, for any plan of the space:

- every leaf of side s (s = 0, 1 at the top) has the same compute and the same exchanges below
  the top (levels >= 1 split 1/2, which sends the same amount each way), so with
  S_s = what side s sends at the top (times dtype / b_0) and V_s = a side-s leaf's compute plus
  its exchanges at levels >= 1 (seconds), the step time is

      T = max(S_0, S_1) + max(V_0, V_1);

- S_0, S_1, V_0, V_1 are sums of per-layer and per-edge terms over *columns*: a layer's column is
  its top cell (type t_0, alpha) and its types t_1 .. t_{H-1} below. An edge's top terms depend
  on the two top cells only; its level-h terms (h >= 1) on the producer's t_h and on the
  consumer's top cell and t_1 .. t_h. So a DP step eliminates the producer one level at a time
  (top cell first), never a full column x column table.

**Graphs.** Series-parallel graphs (``hetero_sp``): global cut nodes (no edge passes over them)
split the graph into top-level *links*; a link joins its entry and exit by parallel branches,
each an edge or a *series* of nodes joined by links that may again hold parallel branches
(ResNet blocks: a path beside a shortcut; EfficientNet's MBConv: a squeeze-excite link nested in
the residual path; a transformer block: a fan-out into one join nested at the path's start).
Several sources (BERT's and GPT-2's embeddings) get a virtual source before them
(``_VirtualSource``: no terms, zero-cost edges, every column; dropped from the plan).
Other graphs are refused in one line.

**Bound.** For integer weights 0 <= l, m <= Q, Q*T >= l*S_0 + (Q-l)*S_1 + m*V_0 + (Q-m)*V_1,
and the least right-hand side over all plans is an ordinary DP (chains; on graphs a DP over the
cut nodes, each block's table built by running its branches from every column of its entry, a
nested link through its own table, entry x exit columns, built once per weighting and crossed
by a min-plus product). Maximising over (l, m) is a 2-parameter concave problem: Kelley's
cutting planes (the LP in floats only chooses weights), from m at the kinds' peak balance.
Every DP works on integers: each term is floored at scale 2^k seconds^-1, so every DP value is a
proven lower bound (the floors only lower it).

**Plans.** Every DP's argmin plan, then a descent over single layers' alphas, scored exactly
(Fractions, the same terms): the incumbent, an upper bound.

**Closing the gap** (chains): every plan whose weighted lower bound is below the incumbent is
enumerated backwards (depth first, completion bounds: the weighted forward DP values and the
component-wise forward minima, both exact on floored integers); each complete plan scores
exactly. When the enumeration ends within its budget the incumbent is proven optimal (OPTIMAL,
bound = objective); otherwise FEASIBLE with the proven bound and the gap.

**Closing the gap** (graphs): the same label setting from cut node to cut node
(``_pareto_graph``): per entry column, each branch's labels to every exit column, summed over
the branches with the entry's labels; inside a branch, a nested link is crossed the same way per
column of its entry (``_cross_link``, recursively). Completion bounds: the weighted least rest
at the weights of the best Lagrangian step (``_cut_backward`` at the cut nodes; inside a block,
the other branches' least plus what follows), the component-wise prefix; a consumer column is
tried only when the least weighted label plus the edge plus that rest stays below the incumbent
(one factored min-plus row). Dominance: label A (same column) drops B when max(A_S0 - B_S0,
A_S1 - B_S1) + max(A_V0 - B_V0, A_V1 - B_V1) <= -2 * slack, since max(x + d, y + e) <=
max(x, y) + max(d, e) gives T(A + R) <= T(B + R) for every completion R (slack: one floor per
term). After every Lagrangian step, cut-node columns whose weighted min-marginal reaches the
incumbent are fixed out (no plan through them beats it); the first step's block tables already
skip the entry columns whose forward value plus a relaxed rest (the branches' exit column
decoupled) exceeds the incumbent. A beam version (a few labels per column, by weighted sum and
by step time) runs first for the incumbent.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from fractions import Fraction
from math import ceil, floor

import numpy as np

from explorer.core.array import ArraySpec
from explorer.core.comm import training_flops
from explorer.core.hetero import AlphaSpace, HeteroPlan, check_array, check_network, side_share, split_units, whole_units
from explorer.core.hetero import edge_split, spec_of
from explorer.core.network import Network
from explorer.core.partition import Dim, PartitionType, Size, Space
from explorer.core.solution import Status

from .hetero import HeteroRefused, HeteroSolution
from .hetero_sp import Link, Series, blocks

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


# ---- the columns --------------------------------------------------------------------------------


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


def _size_share(s: dict, size: Size) -> Fraction:
    out = Fraction(1)
    for d in size.dims:
        out *= s.get(d, Fraction(1))
    return out


# ---- exact terms (Fractions, seconds) -----------------------------------------------------------


class _Model:
    """The exact terms of the four components, per layer column and per edge."""

    def __init__(self, network: Network, array: ArraySpec, space: Space, aspace: AlphaSpace):
        self.net, self.array = network, array
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

    def allowed(self, l: int, col: int) -> bool:  # noqa: E741
        """Whether layer l can take the column: the types its node offers at each level
        (``Layer.offers``) and, for a grouped conv (an attention node with heads), whole groups
        (heads) on every side (``whole_units``)."""
        if self.virtual and l == 0:
            return True
        node = self.net.layers[l]
        t0, a, lower = self.cols.split(col)
        types = (t0,) + lower
        if not all(node.offers(t, h) for h, t in enumerate(types)):
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
                    v += (self.whole[l][size.index] * _size_share(_shares(layer, t0, a, side, lower[: h - 1]), size)
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
        return tuple(x * _size_share(_shares(V, t0v, av, side, lower_v[: h - 1]), Size.F_IN) for side in (0, 1))

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

    def plan(self, cols: list[int]) -> HeteroPlan:
        sp = [self.cols.split(c) for c in cols]
        H, L = self.H, len(cols)
        types = tuple(tuple(sp[l][0] if h == 0 else sp[l][2][h - 1] for l in range(L)) for h in range(H))  # noqa: E741
        alphas = tuple(tuple(tuple(sp[l][1] if h == 0 else Fraction(1, 2) for l in range(L)) for _ in range(2**h))  # noqa: E741
                       for h in range(H))
        return HeteroPlan(types, alphas)


def step_of(comp) -> Fraction:
    return max(comp[0], comp[1]) + max(comp[2], comp[3])


# ---- integer tables -------------------------------------------------------------------------------


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
        ok = np.array([layer.offers(t, 0) for t in C.types])[idx // C.n_tau // C.A]
        for h in range(1, C.H):
            ok &= np.array([layer.offers(t, h) for t in C.types])[(idx % C.n_tau) // C.K ** (C.H - 1 - h) % C.K]
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


# ---- the graph: a series-parallel decomposition (``hetero_sp``) -----------------------------------------


class _Weighted:
    """The weighted tables of one weight vector w = (w_S0, w_S1, w_V0, w_V1); ``mask``: columns
    allowed (all when None). ``links``: the nested links' tables at these weights (``_link_table``)."""

    def __init__(self, t: _Tables, w, mask=None):
        self.t, self.w, self.mask = t, tuple(int(x) for x in w), mask
        self.node = [t.weighted_node(l, self.w) for l in range(len(t.node))]  # noqa: E741
        if mask is not None:
            for n in self.node:
                n[~mask] = INF
        self.edge = [t.weighted_edge(e, self.w) for e in range(len(t.top))]
        self.links: dict = {}


class _PerTermMax:
    """AccPar's per-layer cost: every term's busier side (max(S_0, S_1) of each layer and edge at
    the top, max(V_0, V_1) of each layer's and each edge level's), summed. Its sum is at least
    max(S_0, S_1) + max(V_0, V_1) for every plan: a DP over it minimises an upper bound."""

    def __init__(self, t: _Tables):
        self.t, self.mask = t, None
        self.node = []
        for n in t.node:
            out = np.maximum(n[0], n[1]) + np.maximum(n[2], n[3])
            out[n[0] >= INF] = INF
            self.node.append(out)
        self.edge = [(np.maximum(t.top[e][0], t.top[e][1]), [np.maximum(a[0], a[1]) for a in t.lev[e]])
                     for e in range(len(t.top))]
        self.links: dict = {}


CHUNK = 24  # batch rows per reduction of a block's path tables (memory: CHUNK * n_top^2 * n_tau int64)
MINPLUS_CELLS = 4_000_000  # int64 cells per chunk of a min-plus product with a nested link's table


def _edge_rows_w(C: _Columns, top: np.ndarray, lev: list[np.ndarray], us: np.ndarray) -> np.ndarray:
    """(len(us), n): the weighted edge from each producer column in ``us`` to every consumer column."""
    out = np.repeat(top[us // C.n_tau], C.n_tau, axis=1)
    for h in range(1, C.H):
        t_hu = (us % C.n_tau) // C.K ** (C.H - 1 - h) % C.K
        out = out + np.repeat(lev[h - 1][t_hu], C.K ** (C.H - 1 - h), axis=1)
    return out


def _link_table(W, C: _Columns, link: Link, need=None):
    """A nested link's least weighted cost (its inner nodes included, its ends excluded) from the
    allowed columns of its entry (``rows``) to the allowed columns of its exit (``cols``): (rows,
    cols, table). Rows are computed when a forward pass first reaches them (``need``: entry
    columns); a row never reached is INF: no plan that can beat the incumbent passes there."""
    got = W.links.get(id(link))
    if got is None:
        rows = np.flatnonzero(W.node[link.entry] < INF)
        cols = np.flatnonzero(W.node[link.exit] < INF)
        got = W.links[id(link)] = (rows, cols, np.full((len(rows), len(cols)), INF, dtype=np.int64),
                                   np.zeros(len(rows), dtype=bool))
    rows, cols, tbl, done = got
    if need is not None:
        at = np.searchsorted(rows, need)
        at = at[(at < len(rows)) & (rows[np.minimum(at, len(rows) - 1)] == need)]
        todo = at[~done[at]]
        for i in range(0, len(todo), CHUNK):
            idx = todo[i : i + CHUNK]
            tbl[idx] = _link_rows(W, C, link, rows[idx], grow=True)[:, cols]
        done[todo] = True
    return rows, cols, tbl


def _table_rows(W, C: _Columns, link: Link, us: np.ndarray, grow: bool = False) -> np.ndarray:
    """(len(us), n): a link's least weighted cost from each entry column in ``us`` to every exit column."""
    if link.direct:
        return np.minimum(_edge_rows_w(C, *W.edge[link.edge], us), INF)
    rows, cols, tbl = _link_table(W, C, link, us if grow else None)
    at = np.searchsorted(rows, us)
    ok = (at < len(rows)) & (rows[np.minimum(at, len(rows) - 1)] == us)
    out = np.full((len(us), C.n), INF, dtype=np.int64)
    out[np.ix_(np.flatnonzero(ok), cols)] = tbl[at[ok]]
    return out


def _link_rows(W, C: _Columns, link: Link, us: np.ndarray, grow: bool = False, prune=None) -> np.ndarray:
    """(len(us), n): the sum over a link's branches of each branch's least weighted cost from each
    entry column in ``us`` to every exit column. ``grow``: a forward pass (nested tables gain the
    rows it reaches); ``prune``: (forward value of each row's entry, relaxed rests after inner
    nodes, cap): partial sums that cannot stay within the cap are dropped on the way."""
    acc = np.zeros((len(us), C.n), dtype=np.int64)
    for br in link.branches:
        acc = np.minimum(acc + _branch_rows(W, C, br, us, grow, prune), INF)
    return acc


def _branch_rows(W, C: _Columns, br, us: np.ndarray, grow: bool = False, prune=None) -> np.ndarray:
    """(len(us), n): one branch's least weighted cost from each entry column in ``us`` to every exit
    column (its first link read as rows, the rest run)."""
    if not isinstance(br, Series):
        return np.minimum(_edge_rows_w(C, *W.edge[br], us), INF)
    F = _table_rows(W, C, br.links[0], us, grow)
    F = _pruned(np.minimum(F + W.node[br.nodes[0]][None, :], INF), br.nodes[0], prune)
    return _run_series(W, C, F, br, 1, grow=grow, prune=prune)[0]


def _pruned(F: np.ndarray, node: int, prune) -> np.ndarray:
    """F with INF where the row's entry value plus F plus the relaxed rest after ``node`` exceeds the cap."""
    if prune is None or node not in prune[1]:
        return F
    g, inner, cap = prune
    return np.where(g[:, None] + F + inner[node][None, :] > cap, INF, F)


def _cross(W, C: _Columns, F: np.ndarray, link: Link, grow: bool = False) -> np.ndarray:
    """min over the link's entry column of F[..., col_u] + link(col_u, col_v): (batch, n) -> (batch, n)."""
    if link.direct:
        return _reduce(F, C, *W.edge[link.edge])
    reached = np.flatnonzero((F < INF).any(axis=0))
    rows, cols, tbl = _link_table(W, C, link, reached if grow else None)
    Fr = F[:, rows]
    live = np.flatnonzero((Fr < INF).any(axis=0))
    Fr, tbl = Fr[:, live], tbl[live]
    out = np.full(F.shape, INF, dtype=np.int64)
    step = max(1, MINPLUS_CELLS // max(1, tbl.size))
    for i in range(0, len(F), step):
        out[i : i + step, cols] = np.min(Fr[i : i + step, :, None] + tbl[None, :, :], axis=1, initial=INF)
    return np.minimum(out, INF)


def _run_series(W, C: _Columns, F: np.ndarray, series: Series, start: int = 0, keep: bool = False,
                grow: bool = False, prune=None):
    """F (batch, n) at the node before ``series.links[start]`` -> (batch, n) at the series' exit
    (exit node's own cost not added); ``keep``: F after each node too; ``grow``, ``prune``: as
    in ``_link_rows``."""
    trail = []
    for i in range(start, len(series.links)):
        F = _cross(W, C, F, series.links[i], grow)
        if i < len(series.nodes):
            F = _pruned(np.minimum(F + W.node[series.nodes[i]][None, :], INF), series.nodes[i], prune)
            if keep:
                trail.append(F)
    return F, trail


def _back(W, C: _Columns, link: Link, r: np.ndarray) -> np.ndarray:
    """min over the link's exit column of link(col_u, col_v) + r[col_v], for every col_u."""
    if link.direct:
        return _reduce_back(r[None, :], C, *W.edge[link.edge])[0]
    rows, cols, tbl = _link_table(W, C, link)
    out = np.full(C.n, INF, dtype=np.int64)
    out[rows] = np.min(tbl + r[cols][None, :], axis=1, initial=INF)
    return np.minimum(out, INF)


def _link_col(W, C: _Columns, link: Link, cv: int) -> np.ndarray:
    """link(col_u, cv) for every col_u."""
    if link.direct:
        return _edge_col(C, *W.edge[link.edge], cv)
    rows, cols, tbl = _link_table(W, C, link)
    out = np.full(C.n, INF, dtype=np.int64)
    j = np.searchsorted(cols, cv)
    if j < len(cols) and cols[j] == cv:
        out[rows] = tbl[:, j]
    return out


def _link_columns(W, C: _Columns, link: Link, cu: int, cv: int, cols: list[int]) -> None:
    """The columns of the link's inner nodes of least weighted cost given its two ends' columns."""
    for br in link.branches:
        if not isinstance(br, Series):
            continue
        F0 = np.full((1, C.n), INF, dtype=np.int64)
        F0[0, cu] = 0
        _, trail = _run_series(W, C, F0, br, keep=True)
        nxt = cv
        for i in range(len(br.nodes) - 1, -1, -1):
            c = int(np.argmin(trail[i][0] + _link_col(W, C, br.links[i + 1], nxt)))
            cols[br.nodes[i]] = c
            if not br.links[i + 1].direct:
                _link_columns(W, C, br.links[i + 1], c, nxt, cols)
            nxt = c
        if not br.links[0].direct:
            _link_columns(W, C, br.links[0], cu, nxt, cols)


def _relaxed_rests(W, C: _Columns, blocks: list[Link]):
    """(LB, inner): LB[n][c] a lower bound on the weighted least of everything after cut node n
    given its column (its own terms excluded): per link, its branch of most nodes runs backwards
    from what follows the exit, every other branch on its own (the exit column they share is
    relaxed), nested links alike; inner[n]: the same after an inner node of a block's main branch."""
    LB = {blocks[-1].exit: np.zeros(C.n, dtype=np.int64)}
    inner: dict = {}
    for blk in reversed(blocks):
        nxt = np.minimum(W.node[blk.exit] + LB[blk.exit], INF)
        LB[blk.entry] = _relaxed_back(W, C, blk, nxt, inner)
    return LB, inner


def _relaxed_back(W, C: _Columns, link: Link, r: np.ndarray, inner=None) -> np.ndarray:
    """A lower bound on min over the exit column of link(col_u, col_v) + r[col_v], for every col_u."""
    if link.direct:
        return _reduce_back(r[None, :], C, *W.edge[link.edge])[0]
    sizes = [len(br.inodes) if isinstance(br, Series) else 0 for br in link.branches]
    main = sizes.index(max(sizes))
    acc = np.zeros(C.n, dtype=np.int64)
    for i, br in enumerate(link.branches):
        acc = np.minimum(acc + _branch_back(W, C, br, r if i == main else np.zeros(C.n, dtype=np.int64),
                                            inner if i == main else None), INF)
    return acc


def _branch_back(W, C: _Columns, br, r: np.ndarray, inner=None) -> np.ndarray:
    """``_relaxed_back`` of one branch; ``inner``: records the rest after each of its nodes."""
    if not isinstance(br, Series):
        return _reduce_back(r[None, :], C, *W.edge[br])[0]
    for i in range(len(br.links) - 1, -1, -1):
        r = _relaxed_back(W, C, br.links[i], r)
        if i > 0:
            if inner is not None:
                inner[br.nodes[i - 1]] = r
            r = np.minimum(W.node[br.nodes[i - 1]] + r, INF)
    return r


class _Graph:
    def __init__(self, t: _Tables, blocks: list[Link]):
        self.t, self.blocks, self.C = t, blocks, t.m.cols
        L = len(t.node)
        self.allowed = [np.flatnonzero(t.node[l, 0] < INF) for l in range(L)]  # noqa: E741

    def forward(self, w, mask=None, W=None, alive=None, cap=None):
        """Weighted forward values at the cut nodes (and the block tables kept for backtracking);
        ``W``: tables weighted otherwise (``_PerTermMax``); ``alive``: cut node -> columns still
        allowed there (reduced-cost fixing; the others cost INF); ``cap``: a weighted value no
        better plan reaches (the incumbent's): a block's table skips the entry columns whose
        forward value plus ``_relaxed_rests`` exceeds it (their rows stay out of the tables, so
        ``_cut_backward`` fixes them out; the least plan, at most the incumbent, keeps its rows)."""
        W = W or _Weighted(self.t, w, mask)
        for n, ok in (alive or {}).items():
            W.node[n] = np.where(ok, W.node[n], INF)
        LB, inner = _relaxed_rests(W, self.C, self.blocks) if cap is not None else (None, None)
        G = {self.blocks[0].entry: W.node[self.blocks[0].entry]}
        tables = {}
        for k, blk in enumerate(self.blocks):
            g = G[blk.entry]
            if blk.direct:
                nxt = _reduce(g[None, :], self.C, *W.edge[blk.edge])[0]
            else:
                ent = np.flatnonzero(W.node[blk.entry] < INF)
                if LB is not None:
                    ent = ent[g[ent] + LB[blk.entry][ent] <= cap]
                tbl = np.zeros((len(ent), self.C.n), dtype=np.int64)
                for i in range(0, len(ent), CHUNK):
                    prune = None if LB is None else (g[ent[i : i + CHUNK]], inner, cap)
                    tbl[i : i + CHUNK] = _link_rows(W, self.C, blk, ent[i : i + CHUNK], True, prune)
                tables[k] = (ent, tbl)
                nxt = np.min(np.minimum(g[ent][:, None] + tbl, INF), axis=0, initial=INF)
            G[blk.exit] = np.minimum(nxt + W.node[blk.exit], INF)
        return W, G, tables

    def backtrack(self, W: _Weighted, G, tables) -> list[int]:
        L = len(self.t.node)
        cols = [0] * L
        last = self.blocks[-1].exit
        cols[last] = int(np.argmin(G[last]))
        for k in range(len(self.blocks) - 1, -1, -1):
            blk = self.blocks[k]
            cv = cols[blk.exit]
            if blk.direct:
                cols[blk.entry] = int(np.argmin(G[blk.entry] + _edge_col(self.C, *W.edge[blk.edge], cv)))
            else:
                ent, tbl = tables[k]
                cols[blk.entry] = int(ent[np.argmin(G[blk.entry][ent] + tbl[:, cv])])
                _link_columns(W, self.C, blk, cols[blk.entry], cv, cols)
        return cols


# ---- the solver -----------------------------------------------------------------------------------------


def check_scope(network: Network, array: ArraySpec, aspace: AlphaSpace) -> None:
    """HeteroRefused unless the declared space frees only the top split and compute does not overlap."""
    check_array(array)
    check_network(network)
    if array.overlap:
        raise HeteroRefused("joint (uneven splits): arrays that overlap compute and communication are not covered")
    if any(h > 0 for h, _ in aspace.free_classes()):
        raise HeteroRefused("joint (uneven splits): only arrays whose alpha space frees the top split alone "
                            "(each half of the tree one kind) are covered")
    peaks = array.leaf_peaks_TFLOPS()
    n = len(peaks) // 2
    if len(set(peaks[:n])) > 1 or len(set(peaks[n:])) > 1:
        raise HeteroRefused("joint (uneven splits): each half of the tree must be one kind")


def _scale(m: _Model, Q: int) -> int:
    """2^k seconds^-1 such that Q times any plan's components stays below 2^58 (floats only size it)."""
    ub = 0.0
    for l, layer in enumerate(m.net.layers):  # noqa: E741
        ub += max(m.whole[l]) * sum(float(r) for r in m.rate) + m.flops[l] / float(min(m.peak))
    for e, (u, v) in enumerate(m.net.edges):
        ub += 2 * m.whole[v][0] * float(m.net.edge_shares[e]) * sum(float(r) for r in m.rate)
    k = 0
    while 2 * Q * ub * 2.0 ** (k + 1) < 2.0**58:
        k += 1
    return 2**k


def _kelley(points: list, Q: int):
    """The (l, m) in [0, Q]^2 maximising min over the plans seen of l*S0 + (Q-l)*S1 + m*V0 + (Q-m)*V1
    (an LP in floats: it only picks the next weights)."""
    from ortools.linear_solver import pywraplp

    lp = pywraplp.Solver.CreateSolver("GLOP")
    lam, mu, z = lp.NumVar(0, 1, "l"), lp.NumVar(0, 1, "m"), lp.NumVar(-lp.infinity(), lp.infinity(), "z")
    for S0, S1, V0, V1 in points:
        lp.Add(z <= lam * (S0 - S1) + S1 + mu * (V0 - V1) + V1)
    lp.Maximize(z)
    lp.Solve()
    return round(lam.solution_value() * Q), round(mu.solution_value() * Q), z.solution_value()


def _weights(l: int, m: int, Q: int):
    return (l, Q - l, m, Q - m)


def joint_hetero(network: Network, array: ArraySpec, space: Space, aspace: AlphaSpace,
                 options: JointOptions | None = None, starts: tuple[HeteroPlan, ...] = ()) -> HeteroSolution:
    """The best plan found, a proven lower bound, OPTIMAL only when they meet (module docstring).
    ``starts``: plans to begin from (those outside the declared space are ignored)."""
    o = options or JointOptions()
    t_start = time.perf_counter()
    clock = _Clock(t_start)
    check_scope(network, array, aspace)
    net = _VirtualSource.of(network)
    blks = blocks(net)
    m = _Model(net, array, space, aspace)
    v0 = 1 if m.virtual else 0
    starts = tuple(_VirtualSource.plan(m.cols, p) if v0 else p for p in starts if aspace.contains(p))
    Q = o.weight_scale
    tables = _Tables(m, _scale(m, Q))
    graph = _Graph(tables, blks)
    clock.mark("tables")
    best = _equal_best(m, graph, Q)
    equal_s = best[0] if Fraction(1, 2) in m.cols.alphas else None
    for p in starts:
        cols = _plan_columns(m, p)
        if cols is not None:
            best = min(best, (step_of(m.components(cols)), cols), key=lambda b: b[0])
    type_sets = [best[1]] + [c for c in (_plan_columns(m, p, True) for p in starts) if c is not None]
    clock.mark("starts")
    best_bound, best_w, best, seen, fw = _dual(m, graph, Q, o, t_start, best)
    clock.mark("bound")
    chain = all(b.direct for b in blks)
    # on graphs the beam passes below find the plans; the descent from the incumbent's types only
    best = _descend(m, tables, best, type_sets + seen if chain or fw is None else [])
    clock.mark("plans")
    bound = Fraction(best_bound, Q * tables.s)
    proven = bound >= best[0]
    explored = 0
    if not proven and chain and time.perf_counter() - t_start < o.time_limit_s:
        w = np.array(_weights(*best_w, Q), dtype=np.int64)
        bounds = _chain_bounds(graph, w, len(m.net.layers))
        for beam in (4, 12):  # plans first (no proof), then the proof from the best of them
            best = _pareto_chain(m, tables, graph, best, best_w, Q, o, t_start, beam, bounds)[1]
        clock.mark("beam")
        proven, best, explored = _pareto_chain(m, tables, graph, best, best_w, Q, o, t_start, None, bounds)
        clock.mark("labels")
    elif not proven and fw is not None and time.perf_counter() - t_start < o.time_limit_s:
        for beam in o.graph_beams:  # plans first (no proof), then the proof from the best of them
            best = _pareto_graph(m, tables, graph, best, best_w, Q, o, t_start, fw, beam)[1]
        clock.mark("beam")
        proven, best, explored = _pareto_graph(m, tables, graph, best, best_w, Q, o, t_start, fw)
        clock.mark("labels")
    status = Status.OPTIMAL if proven else Status.FEASIBLE
    return HeteroSolution("joint", status, m.plan(best[1][v0:]), best[0], best[0] if proven else bound,
                          time.perf_counter() - t_start, explored, equal_s, tuple(clock.phases))


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
    def plan(C: _Columns, p: HeteroPlan) -> HeteroPlan:
        """A plan of the network with the virtual source's column (the first type, the grid's first alpha) prepended."""
        types = tuple((C.types[0], *row) for row in p.types)
        alphas = tuple(tuple((C.alphas[0] if h == 0 else HALF, *g) for g in row) for h, row in enumerate(p.alphas))
        return HeteroPlan(types, alphas)


class _Clock:
    def __init__(self, t0: float):
        self.t, self.phases = t0, []

    def mark(self, name: str) -> None:
        now = time.perf_counter()
        self.phases.append((name, round(now - self.t, 3)))
        self.t = now


def _plan_columns(m: _Model, plan: HeteroPlan, types_only: bool = False) -> list[int] | None:
    """The columns of a plan of the declared space (None if a type is not in the space);
    ``types_only``: the top alpha replaced by the grid's first."""
    C = m.cols
    out = []
    for l in range(len(m.net.layers)):  # noqa: E741
        try:
            a = 0 if types_only else C.alphas.index(plan.alphas[0][0][l])
            top = C.types.index(plan.types[0][l]) * C.A + a
            tau = 0
            for h in range(1, m.H):
                tau = tau * C.K + C.types.index(plan.types[h][l])
        except ValueError:
            return None
        out.append(top * C.n_tau + tau)
    return out


def _equal_best(m: _Model, graph: _Graph, Q: int):
    """The least step time with every alpha 1/2 (a linear objective then: S_0 = S_1 and V_0 - V_1 is
    the plan-independent compute difference); a floored DP, scored exactly. Without 1/2 on the grid:
    the least plan of that weighting over every alpha (a start only)."""
    C = m.cols
    half = Fraction(1, 2)
    idx = np.arange(C.n)
    mask = (idx // C.n_tau) % C.A == C.alphas.index(half) if half in C.alphas else None
    slow = 0 if m.peak[0] <= m.peak[1] else 1
    w = (Q // 2, Q - Q // 2, Q if slow == 0 else 0, Q if slow == 1 else 0)
    W, G, tb = graph.forward(w, mask)
    cols = graph.backtrack(W, G, tb)
    return step_of(m.components(cols)), cols


def _dual(m: _Model, graph: _Graph, Q: int, o: JointOptions, t_start: float, best):
    """Kelley's cutting planes on (l, m); (best bound in units Q*s, its (l, m), best plan seen)."""
    graph_ = not all(b.direct for b in graph.blocks)
    if graph_:  # a descended incumbent first: the first pass's tables skip what cannot beat it
        best = _descend(m, graph.t, best, [])
    # first weights: V's at the balance of the two kinds' peaks (mu * V0 + (1 - mu) * V1 flat in alpha)
    lam, mu = Q // 2, round(Q * m.peak[0] / (m.peak[0] + m.peak[1]))
    best_bound, best_w, fw = -1, (lam, mu), None
    seen = [tuple(float(x) for x in m.components(best[1]))]
    plans = []
    last = graph.blocks[-1].exit
    alive: dict = {}
    for k in range(o.dual_rounds):
        cap = Q * ceil(best[0] * graph.t.s) if graph_ else None
        W, G, tbls = graph.forward(_weights(lam, mu, Q), alive=alive, cap=cap)
        g = int(G[last].min())
        cols = graph.backtrack(W, G, tbls)
        plans.append(cols)
        comp = m.components(cols)
        if step_of(comp) < best[0]:
            best = (step_of(comp), cols)
        if graph_:  # reduced-cost fixing at the cut nodes (graphs), from a descended incumbent
            if k == 0:
                best = _descend(m, graph.t, best, [cols])
            Hc = _cut_backward(graph, W, tbls)
            thr = Q * ceil(best[0] * graph.t.s)
            for n in Hc:
                ok = G[n] + Hc[n] < thr
                alive[n] = ok if n not in alive else alive[n] & ok
        if g > best_bound:
            best_bound, best_w, fw = g, (lam, mu), (W, G, tbls, alive)
        seen.append(tuple(float(x) for x in comp))
        nl, nm, zhat = _kelley(seen, Q)
        # on graphs the label pass proves: stop once Kelley's estimate is within graph_dual_tol
        tol = 1 + (o.graph_dual_tol * best_bound if graph_ else 0)
        if (nl, nm) == (lam, mu) or zhat * Q * graph.t.s <= best_bound + tol or time.perf_counter() - t_start > o.time_limit_s:
            break
        lam, mu = nl, nm
    return best_bound, best_w, best, plans, fw


# ---- better plans and the closing enumeration --------------------------------------------------------


def _edge_terms(t: _Tables, e: int, cu, cv) -> np.ndarray:
    """(4, k): the edge's floored components for producer columns ``cu`` and consumer columns ``cv``
    (arrays of one length, or one of them a scalar)."""
    C = t.m.cols
    cu, cv = np.broadcast_arrays(np.asarray(cu), np.asarray(cv))
    out = np.zeros((4, cu.size), dtype=np.int64)
    out[:2] = t.top[e][:, cu.ravel() // C.n_tau, cv.ravel() // C.n_tau]
    for h in range(1, C.H):
        t_hu = (cu.ravel() % C.n_tau) // C.K ** (C.H - 1 - h) % C.K
        out[2:] += t.lev[e][h - 1][:, t_hu, cv.ravel() // C.K ** (C.H - 1 - h)]
    return out


def _comps_floor(t: _Tables, cols) -> np.ndarray:
    cols = np.asarray(cols)
    tot = t.node[np.arange(len(cols)), :, cols].sum(axis=0)
    for e, (u, v) in enumerate(t.m.net.edges):
        tot += _edge_terms(t, e, cols[u], cols[v])[:, 0]
    return tot


def _f(c) -> int:
    return max(c[0], c[1]) + max(c[2], c[3])


def _with_alpha(C: _Columns, cols: list[int], a: int) -> list[int]:
    return [((c // C.n_tau // C.A) * C.A + a) * C.n_tau + c % C.n_tau for c in cols]


def _descend(m: _Model, t: _Tables, best, type_sets=()):
    """For the incumbent's types and each of ``type_sets`` (plans' columns): the best uniform top
    alpha, then coordinate descent over single layers' top alphas, on the floored components;
    a result replaces the incumbent only if its exact step time is lower."""
    C = m.cols
    for base in [best[1], *type_sets]:
        ok = lambda cs: all(t.node[l][0, c] < INF for l, c in enumerate(cs))  # noqa: E731, E741
        starts = [cs for cs in (_with_alpha(C, base, a) for a in range(C.A)) if ok(cs)]
        if not starts:
            continue
        cols = min(starts, key=lambda cs: _f(_comps_floor(t, cs)))
        cols = _alpha_descent(t, list(cols))
        val = step_of(m.components(cols))
        if val < best[0]:
            best = (val, cols)
    return best


def _alpha_descent(t: _Tables, cols: list[int], rounds: int = 3) -> list[int]:
    """Coordinate descent over single layers' top alphas on the floored components: each layer in
    turn takes its best alpha (the first of the least step) when that lowers the step."""
    C = t.m.cols
    edges = t.m.net.edges
    touching = [[e for e, (u, v) in enumerate(edges) if l in (u, v)] for l in range(len(cols))]  # noqa: E741
    tot = _comps_floor(t, cols)
    for _ in range(rounds):
        changed = False
        for l in range(len(cols)):  # noqa: E741
            alt = np.array(_with_alpha(C, [cols[l]] * C.A, 0)) + np.arange(C.A) * C.n_tau
            new = t.node[l][:, alt] - t.node[l][:, [cols[l]]]
            if np.all(t.node[l][0, alt] >= INF):
                continue
            for e in touching[l]:
                u, v = edges[e]
                cu, cv = (alt, cols[v]) if u == l else (cols[u], alt)
                new += _edge_terms(t, e, cu, cv) - _edge_terms(t, e, cols[u], cols[v])
            cand = tot[:, None] + new
            f = np.maximum(cand[0], cand[1]) + np.maximum(cand[2], cand[3])
            f[t.node[l][0, alt] >= INF] = INF
            i = int(np.argmin(f))
            if f[i] < _f(tot):
                cols[l], tot, changed = int(alt[i]), cand[:, i], True
        if not changed:
            break
    return cols


def _edge_matrix(t: _Tables, e: int) -> np.ndarray:
    """(4, n_u, n_v): the edge's floored components for every pair of columns."""
    C = t.m.cols
    idx = np.arange(C.n)
    out = np.empty((4, C.n, C.n), dtype=np.int64)
    for k in (0, 1):
        out[k] = np.repeat(np.repeat(t.top[e][k], C.n_tau, axis=0), C.n_tau, axis=1)
    out[2:] = 0
    for h in range(1, C.H):
        t_hu = (idx % C.n_tau) // C.K ** (C.H - 1 - h) % C.K
        rep = C.K ** (C.H - 1 - h)
        for side in (0, 1):
            out[2 + side] += np.repeat(t.lev[e][h - 1][side], rep, axis=1)[t_hu]
    return out


def _pareto_filter(P: np.ndarray, slack: int) -> np.ndarray:
    """Indices of rows of P (k, 4) not dominated by another kept row. A dominates B when
    max(A0 - B0, A1 - B1) + max(A2 - B2, A3 - B3) <= -2 * slack: then for every completion R,
    step(A + R) <= step(B + R) (max(x + d, y + e) <= max(x, y) + max(d, e)), the exact sums
    being within ``slack`` of the floored ones. A dominator's component sum is smaller, so rows
    are scanned by increasing sum: a row is kept when no kept row before it dominates it; from
    ``PARETO_CHUNK`` rows on, a chunk of rows at a time (``_pareto_chunks``)."""
    order = np.argsort(P.sum(axis=1), kind="stable")
    if len(P) >= PARETO_CHUNK:
        return _pareto_chunks(P[order], slack, order)
    kept = np.zeros((len(P), 4), dtype=np.int64)
    idx: list[int] = []
    for i in order:
        p = P[i]
        if idx:
            K = kept[: len(idx)]
            g = np.maximum(K[:, 0] - p[0], K[:, 1] - p[1]) + np.maximum(K[:, 2] - p[2], K[:, 3] - p[3])
            if g.min() <= -2 * slack:
                continue
        kept[len(idx)] = p
        idx.append(int(i))
    return np.array(idx, dtype=np.int64)


PARETO_CHUNK = 64  # rows per step of the chunked scan


def _pareto_chunks(Q: np.ndarray, slack: int, order: np.ndarray) -> np.ndarray:
    """``_pareto_filter``'s scan on rows Q (already in scan order; ``order`` their indices), a chunk
    at a time: a chunk's rows dominated by a row kept before the chunk are dropped, the others
    decided among themselves in rounds as in ``_pareto_batch`` (row by row if rounds do not end)."""
    kept = np.zeros((len(Q), 4), dtype=np.int64)
    nk = 0
    out: list[np.ndarray] = []
    dom_of = lambda A, B: ((np.maximum(A[:, None, 0] - B[None, :, 0], A[:, None, 1] - B[None, :, 1])  # noqa: E731
                            + np.maximum(A[:, None, 2] - B[None, :, 2], A[:, None, 3] - B[None, :, 3]))
                           <= -2 * slack)  # [a, b]: a dominates b
    for c0 in range(0, len(Q), PARETO_CHUNK):
        X = Q[c0 : c0 + PARETO_CHUNK]
        m = len(X)
        dropped = dom_of(kept[:nk], X).any(axis=0) if nk else np.zeros(m, dtype=bool)
        dom = dom_of(X, X) & np.tri(m, k=-1, dtype=bool).T
        ok = np.zeros(m, dtype=bool)
        for _ in range(12):
            und = ~(ok | dropped)
            if not und.any():
                break
            dropped |= und & (dom & ok[:, None]).any(axis=0)
            ok |= und & ~(dom & ~dropped[:, None]).any(axis=0)
        for i in np.flatnonzero(~(ok | dropped)):  # rounds left undecided: the scan itself
            ok[i] = not (dom[:i, i] & ok[:i]).any()
        kept[nk : nk + int(ok.sum())] = X[ok]
        nk += int(ok.sum())
        out.append(order[c0 + np.flatnonzero(ok)])
    return np.concatenate(out)


PARETO_BATCH = (4, 8, 16, 32, 64, 128)  # group sizes that ``_filter_by_column`` filters together
PARETO_BATCH_CELLS = 2_000_000  # pairs of rows per batch


def _pareto_batch(cand, lo: np.ndarray, size: np.ndarray, m: int, slack: int, keep, rank) -> None:
    """``_pareto_filter`` on each group of rows ``cand[lo:lo + size]`` (sizes at most m), padded to
    m rows and decided together: a row all of whose dominators (before it) are dropped is kept,
    one with a kept dominator dropped, each round deciding at least each group's first undecided
    row; ``keep`` and ``rank`` (position among the kept, in scan order) set for their rows. Groups
    left undecided after 12 rounds go to ``_pareto_filter``."""
    G, pos = len(lo), np.arange(m)
    valid = pos[None, :] < size[:, None]
    X = cand[np.where(valid, lo[:, None] + pos[None, :], lo[:, None])]  # (G, m, 4)
    key = np.where(valid, X.sum(axis=2), np.iinfo(np.int64).max)
    order = np.argsort(key, axis=1, kind="stable")
    X = np.take_along_axis(X, order[:, :, None], axis=1)
    vs = np.take_along_axis(valid, order, axis=1)
    dom = ((np.maximum(X[:, :, None, 0] - X[:, None, :, 0], X[:, :, None, 1] - X[:, None, :, 1])
            + np.maximum(X[:, :, None, 2] - X[:, None, :, 2], X[:, :, None, 3] - X[:, None, :, 3])) <= -2 * slack)
    dom &= np.tri(m, k=-1, dtype=bool).T[None] & vs[:, :, None] & vs[:, None, :]  # [g, j, i]: j before i dominates i
    kept, dropped = np.zeros((G, m), dtype=bool), ~vs
    for _ in range(12):
        und = ~(kept | dropped)
        if not und.any():
            break
        dropped |= und & (dom & kept[:, :, None]).any(axis=1)
        kept |= und & ~(dom & ~dropped[:, :, None]).any(axis=1)
    done = ~(~(kept | dropped)).any(axis=1)
    r = np.cumsum(kept, axis=1) - 1
    g, p = np.nonzero(kept & done[:, None])
    rows = lo[g] + order[g, p]
    span = np.zeros(len(keep) + 1, dtype=np.int64)  # the decided groups' rows: dropped unless kept
    np.add.at(span, lo[done], 1)
    np.add.at(span, lo[done] + size[done], -1)
    keep[np.cumsum(span[:-1]) > 0] = False
    keep[rows] = True
    rank[rows] = r[g, p]
    for a, n in zip(lo[~done], size[~done]):
        sub = _pareto_filter(cand[a : a + n], slack)
        keep[a : a + n] = False
        keep[a + sub] = True
        rank[a + sub] = np.arange(len(sub))


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


def _chain_backward(graph: _Graph, w) -> list[np.ndarray]:
    """B[l][c]: the least weighted sum of everything after layer l given its column (a chain)."""
    W = _Weighted(graph.t, w)
    L = len(W.node)
    out = [np.zeros(graph.C.n, dtype=np.int64) for _ in range(L)]
    for l in range(L - 2, -1, -1):  # noqa: E741
        nxt = np.minimum(out[l + 1] + W.node[l + 1], INF)
        out[l] = _reduce_back(nxt[None, :], graph.C, *W.edge[l])[0]
    return out


def _pareto_chain(m: _Model, t: _Tables, graph: _Graph, best, w_lm, Q: int, o: JointOptions, t_start: float,
                  beam: int | None = None, bounds=None):
    """Label setting on a chain: per layer and column, the (S0, S1, V0, V1) prefix sums that can
    still beat the incumbent (completion bounds: the weighted and the component-wise least
    suffixes, backward DPs), Pareto-filtered (a label dominated with a margin of one floor per
    term is never better). Exhaustive up to dominance and bounds, hence a proof.
    (proven, best, labels kept)."""
    L, C = len(t.node), m.cols
    w = np.array(_weights(*w_lm, Q), dtype=np.int64)
    node = [np.where(t.node[l] >= INF, INF, t.node[l]) for l in range(L)]  # noqa: E741
    Bw, Bc = bounds or _chain_bounds(graph, w, L)
    slack = L + len(m.net.edges) * m.H + 4  # floors per component: one per term
    UB, cols_best = best
    thr = ceil(UB * t.s)
    cols = np.flatnonzero(node[0][0] < INF)
    P = node[0][:, cols].T.copy()
    ok = _lb(P, Bc[0][:, cols].T, Bw[0][cols], w, Q, thr)
    P, cols = P[ok], cols[ok]
    history = [(cols, np.full(len(cols), -1))]
    total = len(cols)
    for l in range(1, L):  # noqa: E741
        if time.perf_counter() - t_start > o.time_limit_s or total > o.enum_budget:
            return False, (UB, cols_best), total
        if len(P) == 0:
            return True, (UB, cols_best), total
        vv = np.flatnonzero(node[l][0] < INF)
        Ev = _edge_matrix(t, l - 1)
        if len(vv) < C.n:
            Ev = Ev[:, :, vv]
        lab, vs, cands = _extend(P, cols, Ev, node[l][:, vv], Bc[l][:, vv], Bw[l][vv], w, Q, thr)
        del Ev
        if time.perf_counter() - t_start > o.time_limit_s:
            return False, (UB, cols_best), total
        if len(lab) == 0:
            return True, (UB, cols_best), total
        if beam is not None:  # a heuristic: per next column, the labels of least weighted bound only
            lab, vs, cands = _beam(lab, vs, cands, Bw[l][vv], w, beam)
        P, cols, par = _filter_by_column(lab, vs, cands, vv, None if beam else slack, o, t_start)
        if P is None:
            return False, (UB, cols_best), total
        history.append((cols, par))
        total += len(cols)
    f = np.maximum(P[:, 0], P[:, 1]) + np.maximum(P[:, 2], P[:, 3])
    for i in np.argsort(f, kind="stable"):
        if f[i] >= ceil(UB * t.s):
            break
        plan_cols = _trace(history, int(i))
        val = step_of(m.components(plan_cols))
        if val < UB:
            UB, cols_best = val, plan_cols
    return True, (UB, cols_best), total


def _chain_bounds(graph: _Graph, w: np.ndarray, L: int):
    Bw = _chain_backward(graph, tuple(w))
    Bc_ = [_chain_backward(graph, tuple(int(i == c) for i in range(4))) for c in range(4)]
    return Bw, [np.stack([Bc_[c][l] for c in range(4)]) for l in range(L)]  # noqa: E741


def _beam(lab, vs, cands, bw, w, beam: int):
    key = np.tensordot(cands, w, axes=([1], [0])) + bw[vs]
    order = np.lexsort((key, vs))
    vs_sorted = vs[order]
    first = np.r_[0, np.flatnonzero(np.diff(vs_sorted)) + 1]
    rank = np.arange(len(order)) - np.repeat(first, np.diff(np.r_[first, len(order)]))
    keep = order[rank < beam]
    return lab[keep], vs[keep], cands[keep]


def _extend(P, cols, Ev, nodev, bc, bw, w, Q: int, thr: int):
    """Every label extended by every next column, kept where both completion bounds stay below
    the incumbent: (label index, next column position, sums)."""
    lab, vs, cands = [], [], []
    step = max(1, 4_000_000 // max(1, Ev.shape[2]))
    for i0 in range(0, len(P), step):
        ids = np.arange(i0, min(len(P), i0 + step))
        cand = P[ids][:, :, None] + Ev[:, cols[ids], :].transpose(1, 0, 2) + nodev[None]  # (chunk, 4, nv)
        comp = (np.maximum(cand[:, 0] + bc[0], cand[:, 1] + bc[1])
                + np.maximum(cand[:, 2] + bc[2], cand[:, 3] + bc[3]))
        weighted = np.tensordot(cand, w, axes=([1], [0])) + bw
        li, vi = np.nonzero((comp < thr) & (weighted < Q * thr))
        lab.append(ids[li])
        vs.append(vi)
        cands.append(cand[li, :, vi])
    return np.concatenate(lab), np.concatenate(vs), np.concatenate(cands)


def _filter_by_column(lab, vs, cand, vv, slack: int, o: JointOptions, t_start: float):
    """Per column (``vv[vs]``), the labels ``_pareto_filter`` keeps (all when ``slack`` is None), by
    column, then in the filter's order: (sums, columns, ``lab`` of each); (None, None, None) past
    the time limit. Columns of one label are kept without a filter."""
    order = np.argsort(vs, kind="stable")
    lab, vs, cand = lab[order], vs[order], cand[order]
    starts = np.r_[0, np.flatnonzero(np.diff(vs)) + 1]
    ends = np.r_[starts[1:], len(vs)]
    rank = np.zeros(len(vs), dtype=np.int64)
    keep = np.ones(len(vs), dtype=bool)
    if slack is not None:
        sizes = ends - starts
        big = sizes > PARETO_BATCH[-1]
        for lo, hi in zip(starts[big], ends[big]):
            if time.perf_counter() - t_start > o.time_limit_s:
                return None, None, None
            sub = _pareto_filter(cand[lo:hi], slack)
            keep[lo:hi] = False
            keep[lo + sub] = True
            rank[lo + sub] = np.arange(len(sub))
        lower = 1
        for m in PARETO_BATCH:  # the small groups, batched by size
            sel = np.flatnonzero((sizes > lower) & (sizes <= m))
            step = max(1, PARETO_BATCH_CELLS // (m * m))
            for i in range(0, len(sel), step):
                _pareto_batch(cand, starts[sel[i : i + step]], sizes[sel[i : i + step]], m, slack, keep, rank)
            lower = m
    else:
        rank = np.arange(len(vs)) - np.repeat(starts, ends - starts)
    idx = np.flatnonzero(keep)
    idx = idx[np.lexsort((rank[idx], vs[idx]))]
    return cand[idx], vv[vs[idx]], lab[idx]


def _lb(P: np.ndarray, Bc: np.ndarray, Bw, w: np.ndarray, Q: int, thr: int) -> np.ndarray:
    """Whether labels P (N, 4) with completion bounds may still beat the incumbent (thr = ceil(UB*s))."""
    comp = np.maximum(P[:, 0] + Bc[:, 0], P[:, 1] + Bc[:, 1]) + np.maximum(P[:, 2] + Bc[:, 2], P[:, 3] + Bc[:, 3])
    weighted = P @ w + Bw
    return (comp < thr) & (weighted < Q * thr)


def _trace(history, i: int) -> list[int]:
    out = []
    for cols, par in reversed(history):
        out.append(int(cols[i]))
        i = int(par[i])
    return out[::-1]


# ---- the closing label setting on graphs (series-parallel links between cut nodes) -----------------


def _fP(P: np.ndarray) -> np.ndarray:
    return np.maximum(P[:, 0], P[:, 1]) + np.maximum(P[:, 2], P[:, 3])


def _cut_backward(graph: _Graph, W: _Weighted, tables) -> dict:
    """Hc[n][c]: the least weighted cost of everything after cut node n (its own cost excluded) given
    its column, from the forward pass's block tables at the same weights."""
    C = graph.C
    last = graph.blocks[-1].exit
    Hc = {last: np.zeros(C.n, dtype=np.int64)}
    for k in range(len(graph.blocks) - 1, -1, -1):
        blk = graph.blocks[k]
        nxt = np.minimum(W.node[blk.exit] + Hc[blk.exit], INF)
        if blk.direct:
            Hc[blk.entry] = _reduce_back(nxt[None, :], C, *W.edge[blk.edge])[0]
        else:
            ent, tbl = tables[k]
            h = np.full(C.n, INF, dtype=np.int64)
            h[ent] = np.min(np.minimum(tbl + nxt[None, :], INF), axis=1)
            Hc[blk.entry] = h
    return Hc


class _Timeout(Exception):
    pass


def _pareto_graph(m: _Model, t: _Tables, graph: _Graph, best, w_lm, Q: int, o: JointOptions, t_start: float, fw,
                  beam: int | None = None):
    """Label setting on a graph of blocks (series-parallel links between cut nodes): at each cut
    node, per column, the (S0, S1, V0, V1) prefix sums that can still beat the incumbent; a block
    is crossed per entry column (each branch's labels to every exit column, nested links crossed
    the same way, then their sums with the entry's labels). Completion bounds: the Lagrangian's
    weighted least suffix at the weights of the best bound (``fw``: that forward pass) and the
    component-wise prefix; dominance as in ``_pareto_filter``. Exhaustive up to dominance and
    bounds, hence a proof. (proven, best, labels kept)."""
    W, _, tables, alive = fw
    C = m.cols
    w = np.array(_weights(*w_lm, Q), dtype=np.int64)
    Hc = _cut_backward(graph, W, tables)
    for n, ok in alive.items():  # the columns fixed out by every forward pass (reduced costs)
        Hc[n] = np.where(ok, Hc[n], INF)
    slack = len(m.net.layers) + len(m.net.edges) * m.H + 4
    UB, cols_best = best
    thr = ceil(UB * t.s)
    first = graph.blocks[0].entry
    cols = np.flatnonzero(t.node[first][0] < INF)
    P = t.node[first][:, cols].T.copy()
    ok = (_fP(P) < thr) & (P @ w + Hc[first][cols] < Q * thr)
    P, cols = P[ok], cols[ok]
    hist = [(first, cols, None, np.zeros((len(cols), 0), dtype=np.int64), ())]
    total = len(cols)
    try:
        for blk in graph.blocks:
            if len(P) == 0:
                return True, (UB, cols_best), total
            if time.perf_counter() - t_start > o.time_limit_s or total > o.enum_budget:
                return False, (UB, cols_best), total
            ctx = (m, t, W, w, Q, thr, slack, o, t_start, beam)
            P, cols, par, internal = _cross_block(ctx, blk, P, cols, Hc[blk.exit])
            if beam is not None and len(P):  # a heuristic: per column, the labels of least weighted bound only
                keep = np.union1d(_beam_keep(P @ w, cols, beam), _beam_keep(_fP(P), cols, beam))
                P, cols, par, internal = P[keep], cols[keep], par[keep], internal[keep]
            inodes = blk.inodes
            hist.append((blk.exit, cols, par, internal, inodes))
            total += len(cols)
    except _Timeout:
        return False, (UB, cols_best), total
    f = _fP(P)
    for i in np.argsort(f, kind="stable"):
        if f[i] >= ceil(UB * t.s):
            break
        plan_cols = _trace_graph(hist, int(i), len(m.net.layers))
        val = step_of(m.components(plan_cols))
        if val < UB:
            UB, cols_best = val, plan_cols
    return True, (UB, cols_best), total


def _beam_keep(key: np.ndarray, cols: np.ndarray, beam: int) -> np.ndarray:
    order = np.lexsort((key, cols))
    cs = cols[order]
    first = np.r_[0, np.flatnonzero(np.diff(cs)) + 1]
    rank = np.arange(len(order)) - np.repeat(first, np.diff(np.r_[first, len(order)]))
    return np.sort(order[rank < beam])


def _trace_graph(hist, i: int, L: int) -> list[int]:
    out = [0] * L
    for node, cols, par, internal, inodes in reversed(hist):
        out[node] = int(cols[i])
        for j, n in enumerate(inodes):
            out[n] = int(internal[i, j])
        if par is not None:
            i = int(par[i])
    return out


def _edge_sub(t: _Tables, e: int, us: np.ndarray, vv: np.ndarray) -> np.ndarray:
    """(4, len(us), len(vv)): ``_edge_matrix(t, e)[:, us][:, :, vv]`` without the whole matrix."""
    C = t.m.cols
    out = np.zeros((4, len(us), len(vv)), dtype=np.int64)
    tu, tv = (us // C.n_tau)[:, None], (vv // C.n_tau)[None, :]
    out[0], out[1] = t.top[e][0][tu, tv], t.top[e][1][tu, tv]
    for h in range(1, C.H):
        t_hu = ((us % C.n_tau) // C.K ** (C.H - 1 - h) % C.K)[:, None]
        p = (vv // C.K ** (C.H - 1 - h))[None, :]
        out[2] += t.lev[e][h - 1][0][t_hu, p]
        out[3] += t.lev[e][h - 1][1][t_hu, p]
    return out


def _cross_block(ctx, blk: Link, P, cols, Hc_exit):
    """The labels at the block's exit: (sums, exit columns, parent label, internal columns)."""
    m, t, W, w, Q, thr, slack, o, t_start, beam = ctx
    C = m.cols
    nb = t.node[blk.exit]
    exit_rest = np.minimum(W.node[blk.exit] + Hc_exit, INF)
    empty = (np.zeros((0, 4), dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64),
             np.zeros((0, len(blk.inodes)), dtype=np.int64))
    if not blk.direct:
        res = _cross_link(ctx, blk, P, cols, np.zeros(4, dtype=np.int64), 0, nb, Hc_exit, None)
        return empty if res is None else res
    vv = np.flatnonzero((nb[0] < INF) & (exit_rest < INF))
    vv, Ev, pos = _live_edge(ctx, blk.edge, P, cols, vv, exit_rest)
    zero_bc = np.zeros((4, len(vv)), dtype=np.int64)
    lab, vs, cand = _extend(P, pos, Ev, nb[:, vv], zero_bc, Hc_exit[vv], w, Q, thr)
    if len(lab) == 0:
        return empty
    nP, ncols, par = _filter_by_column(lab, vs, cand, vv, slack, o, t_start)
    if nP is None:
        raise _Timeout
    return nP, ncols, par, np.zeros((len(ncols), 0), dtype=np.int64)


def _cross_link(ctx, link: Link, X, xcols, pre_min, pre_minw: int, add, rest, bc_extra):
    """Labels X (partial sums from some start, columns ``xcols`` of the link's entry) extended
    across the link: per entry column, its branches' labels to every exit column, summed, added
    to X; ``add``: the exit node's own terms added too (None: not); bounds: ``pre_min`` and
    ``pre_minw`` below everything before X, ``rest`` the weighted least of everything after
    (the exit's own terms included when they are not added), ``bc_extra`` terms known to follow
    (the exit's own when not added). Pareto per exit column: (sums, exit columns, parent label,
    inner columns in ``link.inodes`` order), None when nothing survives."""
    m, t, W, w, Q, thr, slack, o, t_start, beam = ctx
    after = np.minimum(rest + W.node[link.exit], INF) if add is not None else rest
    coll: tuple[list, list, list, list] = ([], [], [], [])
    for c in np.unique(xcols):
        if time.perf_counter() - t_start > o.time_limit_s:
            raise _Timeout
        ids = np.flatnonzero(xcols == c)
        Xc = X[ids]
        R = _branches_labels(ctx, link, int(c), after, pre_min + Xc.min(axis=0), pre_minw + int((Xc @ w).min()))
        if R is None:
            continue
        Y, ycols, yint = R
        if add is not None:
            Y = Y + add[:, ycols].T
        cand = (Xc[:, None, :] + Y[None, :, :]).reshape(-1, 4)
        yc = np.tile(ycols, len(ids))
        known = cand + pre_min if bc_extra is None else cand + pre_min + bc_extra[:, yc].T
        keep = (_fP(known) < thr) & (pre_minw + cand @ w + rest[yc] < Q * thr)
        coll[0].append(cand[keep])
        coll[1].append(yc[keep])
        coll[2].append(np.repeat(ids, len(ycols))[keep])
        coll[3].append(yint[np.tile(np.arange(len(ycols)), len(ids))[keep]])
    if not coll[0]:
        return None
    cand, yc, par, yint = (np.concatenate(x) for x in coll)
    if len(cand) == 0:
        return None
    nP, ncols, sel = _filter_by_column(np.arange(len(cand)), yc, cand, np.arange(m.cols.n), slack, o, t_start)
    if nP is None:
        raise _Timeout
    return nP, ncols, par[sel], yint[sel]


def _branches_labels(ctx, link: Link, c: int, after, smin, sminw: int):
    """Every branch's labels from entry column c to every exit column, summed over the branches
    (every pair with the same exit column); None when nothing survives. ``after``: the weighted
    least of everything after the link (its exit's own terms included)."""
    m, t, W = ctx[0], ctx[1], ctx[2]
    pw = W.links.get(("pw", id(link), c))  # the label passes share W (its tables no longer grow)
    if pw is None:
        us = np.array([c])
        pw = W.links[("pw", id(link), c)] = [_branch_rows(W, m.cols, br, us)[0] for br in link.branches]
    sum_w = np.minimum(np.sum(pw, axis=0), INF)
    nb = t.node[link.exit]
    R = None
    for q, br in enumerate(link.branches):
        after_q = np.minimum(sum_w - pw[q] + after, INF)  # the other branches, then what follows
        if isinstance(br, Series):
            res = _series_labels(ctx, br, c, after_q, smin, sminw, nb)
        else:
            res = _edge_labels(ctx, br, c, after_q, smin, sminw, nb)
        if res is None:
            return None
        R = res if R is None else _combine(R, res)
        if len(R[0]) == 0:
            return None
    return R


def _edge_labels(ctx, e: int, c: int, after, smin, sminw: int, nb):
    """A branch of one edge: its terms from column c to every exit column that may still beat the
    incumbent (one label each)."""
    m, t, W, w, Q, thr = ctx[:6]
    vv = np.flatnonzero((nb[0] < INF) & (after < INF))
    E = _edge_sub(t, e, np.array([c]), vv)[:, 0, :].T
    keep = (_fP(E + smin + nb[:, vv].T) < thr) & (sminw + E @ w + after[vv] < Q * thr)
    if not keep.any():
        return None
    return E[keep], vv[keep], np.zeros((int(keep.sum()), 0), dtype=np.int64)


def _series_labels(ctx, S: Series, a: int, after, smin, sminw: int, nb):
    """A series' partial sums from entry column ``a`` to every exit column (exit's own terms not
    added), Pareto per exit column: (sums, exit columns, inner columns in ``S.inodes`` order);
    None when nothing survives. ``after``: the weighted least of everything after the series (its
    exit's own terms included); ``smin``, ``sminw``: below everything before it."""
    m, t, W, w, Q, thr, slack, o, t_start, beam = ctx
    key = ("rests", id(S), after.tobytes())  # the same in each label pass (W shared, its tables grown)
    rests = W.links.get(key)
    if rests is None:
        rests = W.links[key] = _series_rests(W, m.cols, S, after)
    X, xcols, xint = np.zeros((1, 4), dtype=np.int64), np.array([a]), np.zeros((1, 0), dtype=np.int64)
    for i, link in enumerate(S.links):
        inner = i < len(S.nodes)
        tgt, rest = (S.nodes[i], rests[i]) if inner else (S.exit, after)
        if link.direct:
            res = _edge_step(ctx, link.edge, X, xcols, tgt, inner, rest, smin, sminw)
        else:
            res = _cross_link(ctx, link, X, xcols, smin, sminw, t.node[tgt] if inner else None, rest,
                              None if inner else nb)
        if res is None:
            return None
        X, xcols, par, yint = res
        xint = np.column_stack([xint[par], yint] + ([xcols] if inner else []))
        if beam is not None:  # the heuristic passes: a few labels per column inside the branches too
            keep = np.union1d(_beam_keep(X @ w, xcols, beam), _beam_keep(_fP(X), xcols, beam))
            X, xcols, xint = X[keep], xcols[keep], xint[keep]
    return X, xcols, xint


def _edge_step(ctx, e: int, X, xcols, tgt: int, inner: bool, rest, smin, sminw: int):
    """Labels extended along one edge to node ``tgt`` (its terms added when ``inner``, else only
    bounding): (sums, columns, parent label, no inner columns), None when nothing survives."""
    m, t, W, w, Q, thr, slack, o, t_start, beam = ctx
    nd = t.node[tgt]
    vv = np.flatnonzero((nd[0] < INF) & (rest < INF))
    if len(vv) == 0:
        return None
    vv, Ev, pos = _live_edge(ctx, e, X, xcols, vv, (W.node[tgt] if inner else 0) + sminw + rest)
    if len(vv) == 0:
        return None
    if inner:
        nodev, bc = nd[:, vv], np.repeat(smin[:, None], len(vv), axis=1)
    else:
        nodev, bc = np.zeros((4, len(vv)), dtype=np.int64), smin[:, None] + nd[:, vv]
    lab, vs, cand = _extend(X, pos, Ev, nodev, bc, sminw + rest[vv], w, Q, thr)
    if len(lab) == 0:
        return None
    X, cols, par = _filter_by_column(lab, vs, cand, vv, slack, o, t_start)
    if X is None:
        raise _Timeout
    return X, cols, par, np.zeros((len(cols), 0), dtype=np.int64)


def _live_edge(ctx, e: int, X, xcols, vv, after_w):
    """``_live_targets``, then the edge's components to them (``_edge_sub``, per distinct column
    of ``xcols``): (live columns of ``vv``, components, each label's producer row). With few
    producer columns the components to every column of ``vv`` cost less than the min-plus
    reduction: the same test on them."""
    m, t, w, Q, thr = ctx[0], ctx[1], ctx[3], ctx[4], ctx[5]
    us, pos = np.unique(xcols, return_inverse=True)
    if len(vv) == 0 or 4 * len(us) * len(vv) > m.cols.n * m.cols.n_top:
        vv = _live_targets(ctx, e, X, xcols, vv, after_w)
        return vv, _edge_sub(t, e, us, vv), pos
    Ev = _edge_sub(t, e, us, vv)
    F = np.full(len(us), INF, dtype=np.int64)
    np.minimum.at(F, pos, X @ w)
    Ew = np.tensordot(w, Ev, axes=([0], [0]))  # (producer columns, len(vv)): the weighted edge
    live = np.min(F[:, None] + Ew, axis=0) + after_w[vv] < Q * thr
    return vv[live], Ev[:, :, live], pos


def _live_targets(ctx, e: int, X, xcols, vv, after_w) -> np.ndarray:
    """The columns of ``vv`` that some label may reach along edge e below the incumbent: the least
    weighted label per producer column plus the weighted edge plus ``after_w`` (per consumer
    column: its own weighted terms and the bound on what follows) below Q * thr; the same sums as
    ``_extend``'s weighted test, so nothing it would keep is lost."""
    m, t, W, w, Q, thr = ctx[:6]
    if len(vv) == 0:
        return vv
    F = np.full(m.cols.n, INF, dtype=np.int64)
    np.minimum.at(F, xcols, X @ w)
    lb = _reduce(F[None, :], m.cols, *W.edge[e])[0][vv] + after_w[vv]
    return vv[lb < Q * thr]


def _series_rests(W, C: _Columns, S: Series, after) -> list:
    """rests[i]: the weighted least of everything after the series' i-th node given its column (its
    own terms excluded), backwards from ``after``."""
    rests: list = [None] * len(S.nodes)
    r = after
    for i in range(len(S.nodes) - 1, -1, -1):
        r = _back(W, C, S.links[i + 1], r)
        rests[i] = r
        r = np.minimum(W.node[S.nodes[i]] + r, INF)
    return rests


def _combine(A, B):
    """Sums of two paths' labels with the same exit column (every pair)."""
    XA, bA, iA = A
    XB, bB, iB = B
    order = np.argsort(bB, kind="stable")
    XB, bB, iB = XB[order], bB[order], iB[order]
    starts = np.searchsorted(bB, bA, side="left")
    counts = np.searchsorted(bB, bA, side="right") - starts
    ia = np.repeat(np.arange(len(bA)), counts)
    offs = np.arange(len(ia)) - np.repeat(np.cumsum(counts) - counts, counts)
    ib = np.repeat(starts, counts) + offs
    return XA[ia] + XB[ib], bA[ia], np.column_stack([iA[ia], iB[ib]])


def accpar_hetero(network: Network, array: ArraySpec, space: Space, aspace: AlphaSpace) -> HeteroSolution:
    """AccPar-style heuristic (``check --uneven``'s "accpar"): one DP over the columns with each
    layer's and edge's cost its busier side (``_PerTermMax``), the plan scored exactly. No bound
    (FEASIBLE); same scope as ``joint_hetero``."""
    t0 = time.perf_counter()
    check_scope(network, array, aspace)
    net = _VirtualSource.of(network)  # several sources: as in joint_hetero
    m = _Model(net, array, space, aspace)
    tables = _Tables(m, _scale(m, 1))
    graph = _Graph(tables, blocks(net))
    W = _PerTermMax(tables)
    _, G, tbls = graph.forward(None, W=W)
    cols = graph.backtrack(W, G, tbls)
    value = step_of(m.components(cols))
    plan = m.plan(cols[1:] if m.virtual else cols)
    return HeteroSolution("accpar", Status.FEASIBLE, plan, value, None, time.perf_counter() - t0, 0)
