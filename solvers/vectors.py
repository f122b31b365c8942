"""Costs over whole type vectors (a node's type at every level), read from the shared cost tables,
and the one-level-at-a-time elimination of a node across an edge.

A node's vectors are mixed-radix numbers over the types it can take at all (``Problem.node_types``:
a join has only I and II), level 0 most significant. Costs are weighted by per-level integer
weights ``W`` (the objective's, or Lagrangian ones); a vector that pins or forbids exclude costs
``big``. The inter cost of edge u -> v at level h depends on u's type at h and v's whole prefix
up to h (its count state), so eliminating u (or v) across the edge goes one level at a time:
K^(H+1) work per level instead of K^(2H) (see ``reduce_producer`` / ``reduce_consumer``).
"""

from __future__ import annotations

from functools import cached_property

import numpy as np

from explorer.core.comm import ZERO_COUNTS
from explorer.core.problem import Problem

from .deadline import check_deadline


class Domain:
    """The type vectors of nodes that may take ``types`` at every level."""

    def __init__(self, problem: Problem, types: tuple):
        tables, H = problem.tables, problem.levels
        self.types, self.K, self.H = types, len(types), H
        K = self.K
        self.V = K**H
        self.tix = np.array([tables.types.index(t) for t in types], dtype=np.int64)
        # vector v's digit at level h is (v // K^(H-1-h)) % K: runs of K^(H-1-h) equal digits
        self.digit = [np.tile(np.repeat(np.arange(K, dtype=np.int64), K ** (H - 1 - h)), K**h) for h in range(H)]
        self.type_index = [self.tix[d] for d in self.digit]
        # each prefix's counts, one key per prefix (the count of types[j] in base H + 1, digit j);
        # the prefixes of h + 1 levels are each prefix of h levels followed by each type
        place = (H + 1) ** np.arange(K, dtype=np.int64)
        keys = np.zeros(1, dtype=np.int64)
        self.prefix_state = []  # level h: count-state index of each prefix (K^h of them)
        for h in range(H):
            index = {s: i for i, s in enumerate(tables.states(h))}
            self.prefix_state.append(self._states(keys, index, None))
            keys = (keys[:, None] + place[None, :]).ravel()
        self.final_states: list = []
        self.final_state = self._states(keys, None, self.final_states)
        self.pstate = [np.repeat(self.prefix_state[h], K ** (H - h)) for h in range(H)]

    def _states(self, keys: np.ndarray, index: dict | None, first_seen: list | None) -> np.ndarray:
        """Each key's count state: its index in ``index`` (a level's ``tables.states``), or (final
        states) in the order the keys first appear, the states appended to ``first_seen``."""
        unique, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
        counts = [self._counts(int(k)) for k in unique]
        if index is not None:
            return np.array([index[c] for c in counts], dtype=np.int64)[inverse.ravel()]
        order = np.argsort(first, kind="stable")
        rank = np.empty(len(unique), dtype=np.int64)
        rank[order] = np.arange(len(unique), dtype=np.int64)
        first_seen.extend(counts[i] for i in order)
        return rank[inverse.ravel()]

    def _counts(self, key: int) -> tuple[int, ...]:
        """The count tuple (global type order, as ``add_type`` makes it) of a prefix's key."""
        counts = list(ZERO_COUNTS)
        for t in self.types:
            key, counts[t.index] = divmod(key, self.H + 1)
        return tuple(counts)

    def digits(self, v: int) -> list[int]:
        return [int(self.digit[h][v]) for h in range(self.H)]


class VectorCosts:
    """Per-node domains, raw per-level cost arrays, weighted vectors and the edge eliminations."""

    def __init__(self, problem: Problem):
        self.problem, self.tables = problem, problem.tables
        self.H, self.N = problem.levels, problem.num_layers
        self.weights = tuple(problem.weights.weights)
        domains: dict[tuple, Domain] = {}
        self.dom = []
        for n in range(self.N):
            types = problem.node_types(n)
            if types not in domains:
                domains[types] = Domain(problem, types)
            self.dom.append(domains[types])
        self.edges = self.tables.edges
        self._feet: list[list[int]] | None = None  # per node, the footprint of each final count state
        if problem.constraints.memory_bytes is not None:
            wc = problem.constraints.weight_copies
            self._feet = [[self.tables.footprint_units(n, s, wc) for s in self.dom[n].final_states] for n in range(self.N)]
        worst_foot = sum(max(f) for f in self._feet) if self._feet else 0
        self.use_int64 = sum(self.weights) * self.tables.max_level_cost() < 2**60 and worst_foot < 2**56
        self.dtype = np.int64 if self.use_int64 else object
        self.big = 2**61 if self.use_int64 else 1 << 400
        self._raw: dict[tuple[int, int], np.ndarray] = {}
        self._intra_rows: dict[tuple[int, int], np.ndarray] = {}
        self._blocked: dict[int, np.ndarray] = {}
        self._intra_vec: dict[tuple, np.ndarray] = {}
        self.elimination_order: list[int] | None = None  # graphs: the first elimination's (it depends on sizes only)

    @cached_property
    def around(self) -> list[list[tuple[int, int]]]:
        """Per node its edges, each with the edge's other node: (edge, node), in edge order."""
        out: list[list[tuple[int, int]]] = [[] for _ in range(self.N)]
        for e, (u, x) in enumerate(self.edges):
            out[u].append((e, x))
            out[x].append((e, u))
        return out

    # raw (unweighted) per-level pieces -------------------------------------------------------
    def raw_inter(self, e: int, h: int) -> np.ndarray:
        """[count state at level h, producer space type, consumer space type] -> inter cost of edge e."""
        key = (e, h)
        if key not in self._raw:
            t = self.tables
            self._raw[key] = np.array([t.inter_matrix(e, s) for s in t.states(h)], dtype=self.dtype)
        return self._raw[key]

    def _intra_prefix(self, n: int, h: int) -> np.ndarray:
        """Node n's intra cost at level h for each prefix of h + 1 levels (it depends on no later
        digit: vector v's is its prefix's, v // K^(H-1-h)), one gather of K^(h+1) entries."""
        rows = self._intra_rows.get((n, h))
        if rows is None:  # [count state, space type]: small, always kept
            t = self.tables
            rows = self._intra_rows[(n, h)] = np.array([t.intra_row(n, s) for s in t.states(h)], dtype=self.dtype)
        d = self.dom[n]
        return rows[d.prefix_state[h][:, None], d.tix[None, :]].ravel()

    def blocked(self, n: int) -> np.ndarray:
        if n not in self._blocked:  # built prefix by prefix, as ``intra_vec``
            d = self.dom[n]
            out = np.zeros(1, dtype=bool)
            for h in range(self.H):
                allowed = self.problem.allowed(h, n)
                out = (out[:, None] | np.array([t not in allowed for t in d.types])[None, :]).ravel()
            self._blocked[n] = out
        return self._blocked[n]

    def footprint(self, n: int) -> np.ndarray:
        """Node n's memory footprint in units for each vector (depends on its final counts only)."""
        d, wc = self.dom[n], self.problem.constraints.weight_copies
        feet = self._feet[n] if self._feet is not None else [self.tables.footprint_units(n, s, wc) for s in d.final_states]
        return np.array(feet, dtype=self.dtype)[d.final_state]

    # weighted vectors ------------------------------------------------------------------------
    def intra_vec(self, n: int, W=None, extra: np.ndarray | None = None) -> np.ndarray:
        """sum_h W_h intra_h(n, vector) (+ ``extra``), ``big`` where pins or forbids exclude the vector."""
        W = self.weights if W is None else tuple(W)
        key = (n, W) if extra is None and (W == self.weights or max(W) <= 1) else None  # the objective's, a level's
        if key is not None and key in self._intra_vec:
            return self._intra_vec[key]
        # prefix by prefix: the sum over levels < h + 1 for each prefix of h + 1 levels, each prefix
        # of h levels followed by each type (12 levels: 1.5 K^H entries made, not 3 H K^H)
        K = self.dom[n].K
        vec = np.zeros(1, dtype=self.dtype)
        for h in range(self.H):
            vec = np.repeat(vec, K)
            if W[h]:
                vec = vec + W[h] * self._intra_prefix(n, h)
        if extra is not None:
            vec = vec + extra
        vec[self.blocked(n)] = self.big
        if key is not None:
            vec.flags.writeable = False  # shared: callers add to it, never into it
            self._intra_vec[key] = vec
        return vec

    def edge_pairs(self, e: int, us, xs, W=None) -> np.ndarray:
        """Weighted inter cost of edge e = (u, x), sum_h W_h inter_e(u's type at h, x's type and
        count state at h), for producer vectors ``us`` and consumer vectors ``xs`` (indices into
        the vectors, broadcast together: pairwise for two arrays of one length)."""
        W = self.weights if W is None else W
        u, x = self.edges[e]
        du, dx = self.dom[u], self.dom[x]
        out = None
        for h in range(self.H):
            if W[h]:
                term = W[h] * self.raw_inter(e, h)[dx.pstate[h][xs], du.type_index[h][us], dx.type_index[h][xs]]
                out = term if out is None else out + term
        if out is None:  # every weight 0
            out = np.zeros(np.broadcast_shapes(du.digit[0][us].shape, dx.digit[0][xs].shape), dtype=self.dtype)
        return out

    def edge_given(self, e: int, n: int, v: int, W=None) -> np.ndarray:
        """Weighted inter cost of edge e over its other node's vectors, its node n fixed to vector v
        (``edge_pairs`` without its index views: local searches call it thousands of times)."""
        W = self.weights if W is None else W
        u, x = self.edges[e]
        du, dx = self.dom[u], self.dom[x]
        out = None
        for h in range(self.H):
            if W[h]:
                raw = self.raw_inter(e, h)
                if n == u:
                    term = raw[dx.pstate[h], du.type_index[h][v], dx.type_index[h]]
                else:
                    term = raw[dx.pstate[h][v], du.type_index[h], dx.type_index[h][v]]
                out = W[h] * term if out is None else out + W[h] * term
        return np.zeros((dx if n == u else du).V, dtype=self.dtype) if out is None else out

    def edge_matrix(self, e: int, W=None) -> np.ndarray:
        """[producer vector, consumer vector] -> weighted inter cost of edge e over all levels."""
        return self.edge_pairs(e, (slice(None), None), (None, slice(None)), W)

    def clamp(self, a: np.ndarray) -> np.ndarray:
        if self.use_int64:
            np.minimum(a, self.big, out=a)
        return a

    # one-level-at-a-time eliminations --------------------------------------------------------
    def _level_terms(self, e: int, j: int, w) -> np.ndarray:
        """[consumer prefix (levels < j), producer type, consumer type] -> w * inter cost of edge e at
        level j: weighted on the few count states, then spread over the prefixes (one gather; a
        row of the dual's messages spent half its time here when the spread came first)."""
        u, x = self.edges[e]
        du, dx = self.dom[u], self.dom[x]
        small = w * self.raw_inter(e, j)[:, du.tix[:, None], dx.tix[None, :]]  # (count states, Ku, Kx)
        return small[dx.prefix_state[j]]

    def reduce_producer(self, T: np.ndarray, e: int, W=None, deadline: float | None = None) -> np.ndarray:
        """out[a, x] = min over u of T[a, u] + inter_e(u, x), for edge e = (u, x); T is (A, V_u).

        Level j's term depends on u only through u_j, so u's digits go one by one: after step j
        the table is indexed (a, x_0..x_j, u_{j+1}..u_{H-1})."""
        W = self.weights if W is None else W
        u, x = self.edges[e]
        du, dx = self.dom[u], self.dom[x]
        A, Ku, Kx, H = T.shape[0], du.K, dx.K, self.H
        cur = T.reshape(A, 1, Ku, du.V // Ku)
        for j in range(H):
            check_deadline(deadline, TimeUp)  # (one level of a large table: up to ~1 s, resnet50 at 7 levels)
            g = self._level_terms(e, j, W[j])  # (P, Ku, Kx)
            out = None
            for k in range(Ku):
                term = cur[:, :, k, None, :] + g[None, :, k, :, None]  # (A, P, Kx, rest)
                out = term if out is None else np.minimum(out, term)
            P, rest = out.shape[1] * Kx, out.shape[3]
            cur = out.reshape(A, P, Ku, rest // Ku) if j < H - 1 else out.reshape(A, -1)
        return self.clamp(np.ascontiguousarray(cur).reshape(A, dx.V))

    def reduce_consumer(self, T: np.ndarray, e: int, W=None, deadline: float | None = None) -> np.ndarray:
        """out[a, u] = min over x of T[a, x] + inter_e(u, x), for edge e = (u, x); T is (A, V_x).

        Level j's term depends on x_<=j and u_j, so x's digits go from the last: after step j
        the table is indexed (a, x_0..x_{j-1}, u_j..u_{H-1})."""
        W = self.weights if W is None else W
        u, x = self.edges[e]
        du, dx = self.dom[u], self.dom[x]
        A, Kx, H = T.shape[0], dx.K, self.H
        cur = T.reshape(A, dx.V // Kx, Kx, 1)
        for j in range(H - 1, -1, -1):
            check_deadline(deadline, TimeUp)
            g = self._level_terms(e, j, W[j])  # (P, Ku, Kx)
            out = None
            for k in range(Kx):
                term = cur[:, :, k, None, :] + g[None, :, :, k, None]  # (A, P, Ku, rest)
                out = term if out is None else np.minimum(out, term)
            P, rest = out.shape[1], out.shape[2] * out.shape[3]
            cur = out.reshape(A, P // Kx, Kx, rest) if j > 0 else out.reshape(A, -1)
        return self.clamp(np.ascontiguousarray(cur).reshape(A, du.V))


def reduce_peak(H: int, Ku: int, Kx: int, A: int, producer: bool) -> int:
    """The most entries ``reduce_producer`` (``producer``) or ``reduce_consumer`` holds at once
    beyond its input of A rows (its output included): per level a table of A x (digits so far),
    built from the previous one as a running minimum over one digit, with the previous table,
    its last term, the running minimum and a new term alive together."""
    if producer:
        sizes = [A * Kx ** (j + 1) * Ku ** (H - 1 - j) for j in range(H)]
    else:
        sizes = [A * Kx ** j * Ku ** (H - j) for j in range(H - 1, -1, -1)]
    K = Ku if producer else Kx
    peak, prev = 0, 0
    for t in sizes:  # first level: the previous table is the input (a view), held by the caller
        peak = max(peak, 2 * prev + t if K == 1 else max(2 * prev + t, prev + 3 * t))
        prev = t
    return peak


class TimeUp(TimeoutError):
    """The deadline passed between two elimination steps (or two levels of one)."""

