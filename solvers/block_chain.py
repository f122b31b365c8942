"""Exact joint optimum over given type-vector domains for graphs that are a chain of blocks
(issue 23, item 3: LLaMA-7B at H = 10), each block's table built once per identical block.

The method and its proof: docs/solvers.md, "Chains of identical blocks (`pruned`'s first step)".
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass

import numpy as np

from .deadline import check_deadline
from .vectors import VectorCosts

MAX_TABLE = 40_000_000  # entries of one table with its transpose (int64: 320 MB); all tables at most twice that
ROW_BLOCK = 1 << 22  # entries of one block of spoke rows spread over the spoke's vectors
CANDIDATES = 64  # end nodes tried for a chain end without a cut vertex
SAMPLE = 61  # every SAMPLE-th entry of a node's costs goes into a piece's digest


@dataclass(frozen=True)
class Spoke:
    n: int
    hub_edge: int
    side_edge: int
    side: int  # 0: on the entry a, 1: on the exit b


@dataclass(frozen=True)
class Piece:
    nodes: tuple[int, ...]
    edges: tuple[int, ...]
    a: int
    b: int
    hub: int | None
    spokes: tuple[Spoke, ...]


@dataclass(frozen=True)
class ChainResult:
    value: int  # the optimum over the domains (``vc.big`` when they hold no plan)
    vectors: list[int] | None  # a plan of that cost, None when there is none
    pieces: int
    tables: int  # distinct tables built
    table_entries: int  # entries of all tables


class _Deadline(Exception):
    pass


# structure ---------------------------------------------------------------------------------
def biconnected(vc: VectorCosts) -> list[set[int]]:
    """The biconnected components as sets of edge ids (Hopcroft-Tarjan with an edge stack,
    iterative); parallel edges stay in one component."""
    adj = vc.around
    disc, low, comps, stack, time_ = [-1] * vc.N, [0] * vc.N, [], [], 0
    for root in range(vc.N):
        if disc[root] >= 0:
            continue
        disc[root] = low[root] = time_
        time_ += 1
        work = [(root, -1, iter(adj[root]))]
        while work:
            n, via, it = work[-1]
            step = next(it, None)
            if step is None:
                work.pop()
                if work:
                    p = work[-1][0]
                    low[p] = min(low[p], low[n])
                    if low[n] >= disc[p]:
                        comp = set()
                        while True:
                            e = stack.pop()
                            comp.add(e)
                            if e == via:
                                break
                        comps.append(comp)
                continue
            e, m = step
            if e == via:
                continue
            if disc[m] < 0:
                stack.append(e)
                disc[m] = low[m] = time_
                time_ += 1
                work.append((m, e, iter(adj[m])))
            elif disc[m] < disc[n]:
                stack.append(e)
                low[n] = min(low[n], disc[m])
    return comps


def _nodes(vc: VectorCosts, comp: set[int]) -> set[int]:
    return {n for e in comp for n in vc.edges[e]}


def _order(vc: VectorCosts, comps: list[set[int]]):
    """The components as a path [(nodes, edges, entry cut vertex or None, exit or None)], or None
    when the block-cut tree is not a path (or the graph not connected)."""
    if not comps:
        return None
    nodes = [_nodes(vc, c) for c in comps]
    if set().union(*nodes) != set(range(vc.N)):
        return None
    where: dict[int, list[int]] = {}
    for i, ns in enumerate(nodes):
        for n in ns:
            where.setdefault(n, []).append(i)
    cuts = {n: ci for n, ci in where.items() if len(ci) > 1}
    if any(len(ci) != 2 for ci in cuts.values()):
        return None
    links: list[list[tuple[int, int]]] = [[] for _ in comps]
    for n, (i, j) in cuts.items():
        links[i].append((j, n))
        links[j].append((i, n))
    if any(len(li) > 2 for li in links):
        return None
    ends = sorted((i for i, li in enumerate(links) if len(li) <= 1), key=lambda i: min(nodes[i]))  # in the layers' order
    path, prev, cur, entry = [], None, ends[0] if ends else None, None
    while cur is not None:
        nxt = [(j, n) for j, n in links[cur] if j != prev]
        exit_ = nxt[0][1] if nxt else None
        path.append((nodes[cur], comps[cur], entry, exit_))
        prev, cur, entry = cur, (nxt[0][0] if nxt else None), exit_
    return path if len(path) == len(comps) else None


def _hub_spokes(vc: VectorCosts, nodes: set[int], edges: set[int], a: int, b: int, sizes: list[int]):
    """(hub, spokes) of the piece with ends a, b: the hub with the fewest domain vectors among
    those that fit; None when none does."""
    inner = sorted(nodes - {a, b})
    if not inner:
        return None, ()
    touching = {n: [e for e in edges if n in vc.edges[e]] for n in inner}
    best = None
    for c in sorted(inner, key=lambda n: (sizes[n], n)):
        spokes = []
        for n in inner:
            if n == c:
                continue
            ends = [(e, vc.edges[e][1] if vc.edges[e][0] == n else vc.edges[e][0]) for e in touching[n]]
            to_hub = [e for e, m in ends if m == c]
            to_side = [(e, 0 if m == a else 1) for e, m in ends if m in (a, b)]
            if len(ends) != 2 or len(to_hub) != 1 or len(to_side) != 1:
                break
            spokes.append(Spoke(n, to_hub[0], to_side[0][0], to_side[0][1]))
        else:
            best = (c, tuple(spokes))
            break
    return best


def pieces(vc: VectorCosts, sizes: list[int]) -> list[Piece] | None:
    """The graph as a chain of pieces, or None when it is not one (``sizes``: domain sizes, for
    choosing hubs and the chain's free ends)."""
    path = _order(vc, biconnected(vc))
    if path is None or vc.N < 2:
        return None
    out = []
    for nodes, edges, entry, exit_ in path:
        found = _ends(vc, nodes, edges, entry, exit_, sizes)
        if found is None:
            return None
        a, b, (hub, spokes) = found
        out.append(Piece(tuple(sorted(nodes)), tuple(sorted(edges)), a, b, hub, spokes))
    return out


def _ends(vc: VectorCosts, nodes: set[int], edges: set[int], entry, exit_, sizes):
    """(a, b, (hub, spokes)) with a = entry and b = exit where given, else the first candidates
    (fewest vectors first) that fit."""
    by_size = sorted(nodes, key=lambda n: (sizes[n], n))[:CANDIDATES]
    for a in ([entry] if entry is not None else by_size):
        for b in ([exit_] if exit_ is not None else by_size):
            if a == b:
                continue
            found = _hub_spokes(vc, nodes, edges, a, b, sizes)
            if found is not None:
                return a, b, found
    return None


# identical pieces -------------------------------------------------------------------------
def _edge_arrays(vc: VectorCosts, e: int) -> list[np.ndarray]:
    return [vc.raw_inter(e, h) for h in range(vc.H) if vc.weights[h]]


def _signature(vc: VectorCosts, p: Piece) -> tuple:
    """A digest of the piece's structure and costs (its ends' own costs excluded: the chain adds
    them; node costs sampled); equal digests are then compared element by element (``_same``)."""
    pos = {n: i for i, n in enumerate(p.nodes)}
    h = hashlib.blake2b(digest_size=16)
    for n in p.nodes:
        h.update(repr(vc.dom[n].types).encode())
        if n not in (p.a, p.b):  # a sample of the costs: the digest only sorts pieces into candidates
            h.update(vc.intra_vec(n)[::SAMPLE].tobytes())
    for e in p.edges:
        u, x = vc.edges[e]
        h.update(repr((pos[u], pos[x])).encode())
        for arr in _edge_arrays(vc, e):
            h.update(arr.tobytes())
    return (h.digest(), pos[p.a], pos[p.b], None if p.hub is None else pos[p.hub], len(p.nodes), len(p.edges))


def _same(vc: VectorCosts, p: Piece, q: Piece) -> bool:
    """Exact: same positions of every node and edge, the same domains, the same weighted costs of
    every node but the ends and the same per-level costs of every edge."""
    if len(p.nodes) != len(q.nodes) or len(p.edges) != len(q.edges):
        return False
    mp, mq = {n: i for i, n in enumerate(p.nodes)}, {n: i for i, n in enumerate(q.nodes)}
    if (mp[p.a], mp[p.b]) != (mq[q.a], mq[q.b]) or (p.hub is None) != (q.hub is None):
        return False
    if p.hub is not None and mp[p.hub] != mq[q.hub]:
        return False
    for n, m in zip(p.nodes, q.nodes):
        if vc.dom[n].types != vc.dom[m].types:
            return False
        if n not in (p.a, p.b) and not np.array_equal(vc.intra_vec(n), vc.intra_vec(m)):
            return False
    for e, f in zip(p.edges, q.edges):
        (u, x), (w, y) = vc.edges[e], vc.edges[f]
        if (mp[u], mp[x]) != (mq[w], mq[y]):
            return False
        if not all(np.array_equal(s, t) for s, t in zip(_edge_arrays(vc, e), _edge_arrays(vc, f))):
            return False
    return True


def shape_groups(vc: VectorCosts, ps: list[Piece]) -> list[int]:
    """Per piece, the first piece of the same shape (positions and domains, costs not read): a
    first work estimate before ``groups`` reads the costs."""
    first: dict[tuple, int] = {}
    out = []
    for i, p in enumerate(ps):
        pos = {n: k for k, n in enumerate(p.nodes)}
        key = (tuple(vc.dom[n].types for n in p.nodes), tuple((pos[vc.edges[e][0]], pos[vc.edges[e][1]]) for e in p.edges),
               pos[p.a], pos[p.b], None if p.hub is None else pos[p.hub])
        out.append(first.setdefault(key, i))
    return out


def groups(vc: VectorCosts, ps: list[Piece]) -> list[int]:
    """Per piece, the index of the first identical piece (its table's owner)."""
    owner, seen = [], {}
    for i, p in enumerate(ps):
        key = _signature(vc, p)
        for j in seen.get(key, []):
            if _same(vc, ps[j], p):
                owner.append(j)
                break
        else:
            seen.setdefault(key, []).append(i)
            owner.append(i)
    return owner


# tables ------------------------------------------------------------------------------------
def _pairs(vc: VectorCosts, e: int, n: int, Dn: np.ndarray, Dm: np.ndarray) -> np.ndarray:
    """Edge e's weighted cost over (n's vectors Dn, the other end's vectors Dm), n's as rows: one
    gather per level, or rows over one side's domain against all the other's vectors
    (``_hub_rows``), whichever moves fewer elements."""
    u, x = vc.edges[e]
    m = x if u == n else u
    over_m, over_n = len(Dn) * vc.dom[m].V, len(Dm) * vc.dom[n].V
    if 2 * min(over_m, over_n) < vc.H * len(Dn) * len(Dm):
        if over_m <= over_n:
            return _rows_against(vc, e, Dn, m, Dm)
        return np.ascontiguousarray(_rows_against(vc, e, Dm, n, Dn).T)
    return _gathered(vc, e, n, Dn, Dm)


def _rows_against(vc: VectorCosts, e: int, rows: np.ndarray, m: int, Dm: np.ndarray) -> np.ndarray:
    out = np.empty((len(rows), len(Dm)), dtype=np.int64)
    block = max(1, ROW_BLOCK // vc.dom[m].V)
    for lo in range(0, len(rows), block):
        out[lo:lo + block] = _hub_rows(vc, e, rows[lo:lo + block], m)[:, Dm]
    return out


def _gathered(vc: VectorCosts, e: int, n: int, Dn: np.ndarray, Dm: np.ndarray) -> np.ndarray:
    u, x = vc.edges[e]
    du, dx = vc.dom[u], vc.dom[x]
    su, sx = (Dn, Dm) if u == n else (Dm, Dn)
    out = np.zeros((len(su), len(sx)), dtype=np.int64)
    for h in range(vc.H):
        if vc.weights[h]:
            by_type = vc.weights[h] * vc.raw_inter(e, h)[dx.pstate[h][sx][:, None], du.tix[None, :], dx.type_index[h][sx][:, None]]
            out += by_type.T[du.digit[h][su]]
    return out if u == n else np.ascontiguousarray(out.T)


def _spoke_rows(vc: VectorCosts, s: Spoke, c: int, Dc: np.ndarray, Dside: np.ndarray, side_node: int,
                deadline: float | None) -> np.ndarray:
    """[hub vector, side vector] -> min over the spoke's vectors of its cost and its two edges'."""
    Vn = vc.dom[s.n].V
    block = max(1, ROW_BLOCK // (Vn * vc.dom[s.n].K))
    reduce = vc.reduce_producer if vc.edges[s.side_edge][0] == s.n else vc.reduce_consumer
    out = np.empty((len(Dc), len(Dside)), dtype=np.int64)
    intra = vc.intra_vec(s.n)
    for lo in range(0, len(Dc), block):
        check_deadline(deadline, _Deadline)
        rows = vc.clamp(_hub_rows(vc, s.hub_edge, Dc[lo:lo + block], s.n) + intra[None, :])
        out[lo:lo + block] = reduce(rows, s.side_edge)[:, Dside]
    return out


def _hub_rows(vc: VectorCosts, e: int, hubs: np.ndarray, n: int) -> np.ndarray:
    """[hub vector, every vector of n] -> edge e's weighted cost (e joins the hub and n), built
    one level at a time: level h's term depends on n's digits up to h only (its own digit when n
    produces, its prefix state and digit when it consumes), so the rows grow by a factor K per
    level (about 1.5 K^H work a row, not H K^H)."""
    u, x = vc.edges[e]
    du, dx = vc.dom[u], vc.dom[x]
    acc = np.zeros((len(hubs), 1), dtype=np.int64)
    for h in range(vc.H):
        raw = vc.weights[h] * vc.raw_inter(e, h)
        if u == n:  # [hub, 1, n's digit]: the hub's prefix state and type at h, n's type
            term = raw[dx.pstate[h][hubs][:, None], du.tix[None, :], dx.type_index[h][hubs][:, None]][:, None, :]
        else:  # [hub, n's prefix, n's digit]
            term = raw[dx.prefix_state[h]][:, du.type_index[h][hubs]][:, :, dx.tix].transpose(1, 0, 2)
        acc = (acc[:, :, None] + term).reshape(len(hubs), -1)
    return acc


def _between(vc: VectorCosts, p: Piece, n: int, m: int, Dn: np.ndarray, Dm: np.ndarray) -> np.ndarray:
    """The piece's direct edges between n and m over (Dn, Dm)."""
    out = np.zeros((len(Dn), len(Dm)), dtype=np.int64)
    for e in p.edges:
        if set(vc.edges[e]) == {n, m}:
            out = vc.clamp(out + _pairs(vc, e, n, Dn, Dm))
    return out


@dataclass
class Table:
    """A piece's exact cost given both ends, T[a, b] over (Da, Db) (built once per identical piece)."""
    Da: np.ndarray
    Db: np.ndarray
    T: np.ndarray
    Dc: np.ndarray | None = None
    A: np.ndarray | None = None  # [hub, a]: hub cost + c-a edges + a-spokes
    B: np.ndarray | None = None  # [hub, b]
    TT: np.ndarray | None = None  # T transposed, made by the chain's first use


def _sides(vc: VectorCosts, p: Piece, Dc: np.ndarray, Da: np.ndarray, Db: np.ndarray,
           deadline: float | None) -> tuple[np.ndarray, np.ndarray]:
    """(A [hub, a], B [hub, b]): the hub's cost, its edges to that end and that end's spokes'
    minima (spokes of equal costs and roles computed once)."""
    c = p.hub
    A = vc.clamp(_between(vc, p, c, p.a, Dc, Da) + vc.intra_vec(c)[Dc][:, None])
    B = _between(vc, p, c, p.b, Dc, Db)
    done: dict[tuple, np.ndarray] = {}
    for s in p.spokes:
        side_node, D = (p.a, Da) if s.side == 0 else (p.b, Db)
        key = _spoke_key(vc, s, side_node)
        if key not in done:
            done[key] = _spoke_rows(vc, s, c, Dc, D, side_node, deadline)
        if s.side == 0:
            A = vc.clamp(A + done[key])
        else:
            B = vc.clamp(B + done[key])
    return A, B


def table(vc: VectorCosts, p: Piece, Da: np.ndarray, Db: np.ndarray, Dc: np.ndarray | None,
          deadline: float | None = None) -> Table:
    """The piece's exact cost given both ends, over (Da, Db), the hub within Dc."""
    E = _between(vc, p, p.a, p.b, Da, Db)
    if p.hub is None:
        return Table(Da, Db, E)
    A, B = _sides(vc, p, Dc, Da, Db, deadline)
    return Table(Da, Db, vc.clamp(E + _min_plus(A, B, deadline)), Dc, A, B)


def _spoke_key(vc: VectorCosts, s: Spoke, side_node: int):
    """Spokes with the same costs and edge roles share their rows (q, k, v; gate, up): compared
    exactly (the node's weighted costs and both edges' per-level arrays, as bytes)."""
    parts = [s.side, vc.edges[s.hub_edge][0] == s.n, vc.edges[s.side_edge][0] == s.n, vc.dom[s.n].types,
             vc.intra_vec(s.n).tobytes()]
    for e in (s.hub_edge, s.side_edge):
        parts += [arr.tobytes() for arr in _edge_arrays(vc, e)]
    return tuple(parts)


def _min_plus(A: np.ndarray, B: np.ndarray, deadline: float | None) -> np.ndarray:
    """out[a, b] = min over k of A[k, a] + B[k, b] (every entry at most big: no overflow)."""
    out = np.full((A.shape[1], B.shape[1]), np.iinfo(np.int64).max // 2, dtype=np.int64)
    tmp = np.empty_like(out)
    for k in range(A.shape[0]):
        if k % 64 == 0:
            check_deadline(deadline, _Deadline)
        np.add(A[k][:, None], B[k][None, :], out=tmp)
        np.minimum(out, tmp, out=out)
    return out


# pieces met once: the chain's message carried through them, no table ------------------------
def _ab_edges(vc: VectorCosts, p: Piece) -> list[int]:
    return [e for e in p.edges if set(vc.edges[e]) == {p.a, p.b}]


def direct(vc: VectorCosts, p: Piece) -> bool:
    """Whether the chain's message can cross the piece without its table: at most one a-b edge
    (and a hub, or that edge)."""
    ab = len(_ab_edges(vc, p))
    return ab <= 1 and (p.hub is not None or ab == 1)


def _across(vc: VectorCosts, p: Piece, rows: np.ndarray) -> np.ndarray:
    """rows [r, a] -> [r, b]: min over a of rows + the a-b edge (one level at a time), or the
    row minima (every b) without one."""
    ab = _ab_edges(vc, p)
    if not ab:
        return np.repeat(rows.min(axis=1)[:, None], vc.dom[p.b].V, axis=1)
    reduce = vc.reduce_producer if vc.edges[ab[0]][0] == p.a else vc.reduce_consumer
    return reduce(rows, ab[0])


def _direct_forward(vc: VectorCosts, p: Piece, f: np.ndarray, Dc: np.ndarray | None, Db: np.ndarray,
                    deadline: float | None) -> tuple[np.ndarray, np.ndarray | None]:
    """(g over Db: min over a, hub and spokes of f[a] + the piece's cost, the best hub's index
    in Dc for each b (None without a hub)), in blocks of hub vectors."""
    if p.hub is None:
        return _across(vc, p, f[None, :])[0][Db], None
    Va = np.arange(vc.dom[p.a].V)
    best, arg = np.full(len(Db), vc.big, dtype=np.int64), np.zeros(len(Db), dtype=np.int64)
    block = max(1, ROW_BLOCK // (len(Va) * vc.dom[p.a].K))
    for lo in range(0, len(Dc), block):
        check_deadline(deadline, _Deadline)
        A, B = _sides(vc, p, Dc[lo:lo + block], Va, Db, deadline)
        G = vc.clamp(_across(vc, p, vc.clamp(A + f[None, :]))[:, Db] + B)
        k = np.argmin(G, axis=0)
        val = G[k, np.arange(len(Db))]
        better = val < best
        best[better], arg[better] = val[better], lo + k[better]
    return best, arg


def _direct_back(vc: VectorCosts, p: Piece, f: np.ndarray, hub: int | None, vb: int) -> int:
    """The entry's best vector given the exit's vb (and the hub's, with one)."""
    cost = f.copy()
    for e in _ab_edges(vc, p):
        cost = cost + _given(vc, e, vb, p.a)
    if hub is not None:
        A, _ = _sides(vc, p, np.array([hub]), np.arange(vc.dom[p.a].V), np.array([vb]), None)
        cost = cost + A[0]
    return int(np.argmin(cost))


# the chain ---------------------------------------------------------------------------------
def _domains_of(ps: list[Piece], owner: list[int], domains: list[np.ndarray], tabled: list[bool]):
    """Per table owner, the union of its pieces' (Da, Db, Dc) domains."""
    out: dict[int, list] = {}
    for p, o, t in zip(ps, owner, tabled):
        if not t:
            continue
        doms = [domains[p.a], domains[p.b], None if p.hub is None else domains[p.hub]]
        if o not in out:
            out[o] = doms
        else:
            out[o] = [d if d is None or d is e or np.array_equal(d, e) else np.union1d(d, e) for d, e in zip(out[o], doms)]
    return out


def _tabled(vc: VectorCosts, ps: list[Piece], owner: list[int]) -> list[bool]:
    """Which pieces go by a table: those sharing one, and those the message cannot cross directly."""
    count = [0] * len(ps)
    for o in owner:
        count[o] += 1
    return [count[o] > 1 or not direct(vc, p) for p, o in zip(ps, owner)]


def solve(vc: VectorCosts, domains: list[np.ndarray], deadline: float | None = None,
          max_table: int = MAX_TABLE) -> ChainResult | None:
    """The optimum over a set of plans holding every plan whose chain ends and hubs take vectors
    in ``domains`` (the module's docstring says which more it may hold), or None when the graph
    is not a chain of pieces, a table would exceed ``max_table`` entries, or at the deadline."""
    ps = pieces(vc, [len(d) for d in domains])
    return None if ps is None else _solve(vc, domains, ps, groups(vc, ps), deadline, max_table)


def _covers(t: Table, Da: np.ndarray, Db: np.ndarray, Dc: np.ndarray | None) -> bool:
    """Whether a table built over wider domains serves these: every entry is the piece's exact
    cost given its ends (the hub over a wider domain: the set of plans only grows)."""
    return bool(np.isin(Da, t.Da).all() and np.isin(Db, t.Db).all()
                and (Dc is None or np.isin(Dc, t.Dc).all()))


def _reusable(kept: dict | None, doms: dict) -> dict:
    """The kept tables (``Kept.tables``) that serve these domains, by owner."""
    kept = kept or {}
    return {o: kept[o] for o, d in doms.items() if o in kept and _covers(kept[o], *d)}


def _held(doms: dict, have: dict) -> list[tuple[int, int]]:
    """Per table, (entries of it with its transpose, those and its hub rows); a kept one at its own size."""
    out = []
    for o, (Da, Db, Dc) in doms.items():
        if o in have:
            Da, Db, Dc = have[o].Da, have[o].Db, have[o].Dc
        pair = 2 * len(Da) * len(Db)
        out.append((pair, pair + (0 if Dc is None else len(Dc) * (len(Da) + len(Db)))))
    return out


def _solve(vc: VectorCosts, domains: list[np.ndarray], ps: list[Piece], owner: list[int], deadline: float | None,
           max_table: int, kept: dict | None = None) -> ChainResult | None:
    """As ``solve``; ``kept``: tables by owner, read where they serve these domains (never rebuilt)
    and added to as each new one is finished (so a run cut at the deadline leaves them)."""
    if not vc.use_int64:
        return None
    if any(len(domains[n]) == 0 for p in ps for n in (p.a, p.b, p.hub) if n is not None):
        return ChainResult(vc.big, None, len(ps), 0, 0)
    tabled = _tabled(vc, ps, owner)
    doms = _domains_of(ps, owner, domains, tabled)
    tables = _reusable(kept, doms)
    held = _held(doms, tables)
    if sum(h for _, h in held) > 2 * max_table or any(pair > max_table for pair, _ in held):
        return None  # every table is kept with its transpose and hub rows until the plan is read back
    try:
        for o in doms:
            if o not in tables:
                tables[o] = table(vc, ps[o], *doms[o], deadline=deadline)
                if kept is not None:
                    kept[o] = tables[o]
        tabs = [tables[o] if t else None for o, t in zip(owner, tabled)]
        value, ends, hubs = _forward(vc, ps, tabs, domains, deadline)
    except _Deadline:
        return None
    entries = sum(t.T.size for t in tables.values())
    if value >= vc.big:
        return ChainResult(vc.big, None, len(ps), len(tables), entries)
    vectors = _decode(vc, ps, tabs, ends, hubs)
    from .tree_dual import plan_cost

    if plan_cost(vc, vectors) != value:
        raise AssertionError(f"block_chain: chain value {value} != table re-score {plan_cost(vc, vectors)}")
    return ChainResult(value, vectors, len(ps), len(tables), entries)


def _forward(vc: VectorCosts, ps: list[Piece], tabs: list[Table | None], domains: list[np.ndarray], deadline):
    """(optimum, each piece's (a, b) vectors, each direct piece's hub or None): f over the first
    piece's entry, then per piece g[b] = min_a f[a] + T[a, b] (or carried directly), plus b's
    own cost, every end within its own domain."""
    big = vc.big
    f = np.full(vc.dom[ps[0].a].V, big, dtype=np.int64)
    d0 = domains[ps[0].a]
    f[d0] = vc.intra_vec(ps[0].a)[d0]
    back = []
    for p, t in zip(ps, tabs):
        check_deadline(deadline, _Deadline)
        Db = domains[p.b]
        if t is None:
            gb, arg = _direct_forward(vc, p, f, None if p.hub is None else domains[p.hub], Db, deadline)
            back.append((f, arg))
        else:
            if t.TT is None:  # [b, a]: the minimum over a along rows (shared by a table's pieces)
                t.TT = np.ascontiguousarray(t.T.T)
            rows = np.searchsorted(t.Db, Db)
            total = t.TT[rows] + f[t.Da][None, :]  # f <= big, T <= big: no overflow
            arg = np.argmin(total, axis=1)
            gb = total[np.arange(len(Db)), arg]
            back.append((None, arg))
        f = np.full(vc.dom[p.b].V, big, dtype=np.int64)
        f[Db] = vc.clamp(gb + vc.intra_vec(p.b)[Db])
    vb = int(np.argmin(f))
    value = int(f[vb])
    ends, hubs = [], []
    for p, t, (fa, arg) in zip(reversed(ps), reversed(tabs), reversed(back)):
        ib = int(np.searchsorted(domains[p.b], vb))
        if t is None:
            hub = None if p.hub is None else int(domains[p.hub][arg[ib]])
            va = _direct_back(vc, p, fa, hub, vb)
        else:
            hub, va = None, int(t.Da[arg[ib]])
        ends.append((va, vb))
        hubs.append(hub)
        vb = va
    return value, ends[::-1], hubs[::-1]


def _decode(vc: VectorCosts, ps: list[Piece], tabs: list[Table | None], ends, hubs) -> list[int]:
    """Every node's vector: the ends from the chain, each hub the best given both ends (or the
    direct pass's), each spoke the best given its hub and end."""
    vectors = [-1] * vc.N
    for p, t, (va, vb), hub in zip(ps, tabs, ends, hubs):
        vectors[p.a], vectors[p.b] = va, vb
        if p.hub is None:
            continue
        if hub is None:
            ia, ib = int(np.searchsorted(t.Da, va)), int(np.searchsorted(t.Db, vb))
            hub = int(t.Dc[int(np.argmin(t.A[:, ia] + t.B[:, ib]))])
        vectors[p.hub] = hub
        for s in p.spokes:
            side = p.a if s.side == 0 else p.b
            cost = vc.intra_vec(s.n) + _given(vc, s.hub_edge, hub, s.n) + _given(vc, s.side_edge, vectors[side], s.n)
            vectors[s.n] = int(np.argmin(cost))
    return vectors


def _given(vc: VectorCosts, e: int, v: int, n: int) -> np.ndarray:
    """Edge e's cost over n's vectors, its other end fixed to vector v."""
    return _hub_rows(vc, e, np.array([v]), n)[0]


# bound and prune's use ---------------------------------------------------------------------
RATE = 1e9  # element operations a second the estimate counts on (measured on LLaMA-7B at H = 10: 1.1e9 a CPU second)


class Kept:
    """What the chain before the dual (``solve_whole``) leaves the one after it (``settle``): the
    pieces and their owners (``groups`` reads every cost: 2.6 s on LLaMA-7B at H = 10, loaded),
    the tables it finished (over every allowed vector: they serve any narrower domains), and
    why it did not end: ``estimate_s`` (wall seconds at ``share`` of a core) when skipped for
    time, with ``cut_s`` when cut at the deadline."""

    def __init__(self) -> None:
        self.ps: list[Piece] | None = None
        self.owner: list[int] | None = None
        self.tables: dict[int, Table] = {}
        self.estimate_s: float | None = None
        self.cut_s: float | None = None
        self.spent_s: float | None = None  # the solve's seconds when the chain was skipped
        self.share = 1.0  # of a core the process got while the owners were found (``_cpu_share``)


def _row(vc: VectorCosts, z: int, b: int) -> float:
    """Element operations of one row eliminating z's vectors onto b's, one level at a time."""
    Kz, Kb, H = vc.dom[z].K, vc.dom[b].K, vc.H
    return 2.0 * sum(Kz * Kb ** (j + 1) * Kz ** (H - j - 1) for j in range(H))


def _spokes_work(vc: VectorCosts, p: Piece, rows: int, by_shape: bool) -> float:
    """The spokes' rows, each distinct spoke once (``by_shape``: spokes of the same roles and
    domain count as equal, costs not read: a lower estimate)."""
    seen, total = set(), 0.0
    for s in p.spokes:
        side = p.a if s.side == 0 else p.b
        key = (s.side, vc.edges[s.hub_edge][0] == s.n, vc.edges[s.side_edge][0] == s.n, vc.dom[s.n].types) \
            if by_shape else _spoke_key(vc, s, side)
        if key not in seen:
            seen.add(key)
            total += rows * (3.0 * vc.dom[s.n].V + _row(vc, s.n, side))
    return total


def work(vc: VectorCosts, ps: list[Piece], owner: list[int], domains: list[np.ndarray], by_shape: bool = False,
         kept: dict | None = None) -> float:
    """Estimated element operations of the tables and the chain (``by_shape``: before the
    costs are read, owners from ``shape_groups``; ``kept``: tables not to build again)."""
    tabled = _tabled(vc, ps, owner)
    doms = _domains_of(ps, owner, domains, tabled)
    have = _reusable(kept, doms)
    total = 0.0
    for o, (Da, Db, Dc) in doms.items():
        total += (vc.H + 2) * len(Da) * len(Db)
        if Dc is not None and o not in have:
            total += 2.0 * len(Dc) * len(Da) * len(Db) + _spokes_work(vc, ps[o], len(Dc), by_shape)
    for p, t in zip(ps, tabled):
        if not t:
            rows = 1 if p.hub is None else len(domains[p.hub])
            total += rows * (3.0 * vc.dom[p.a].V + _row(vc, p.a, p.b)) + (_spokes_work(vc, p, rows, by_shape) if p.hub is not None else 0)
    return total


def _fits(estimate: float, deadline: float, share: float = 1.0) -> bool:
    """Whether ``estimate`` operations end by the deadline at ``RATE`` a CPU second, the process
    getting ``share`` of a core."""
    return estimate <= RATE * share * (deadline - time.perf_counter())


MEASURED_S = 0.3  # wall seconds of a sample long enough to measure the process's share of a core


def _cpu_share(w0: float, c0: float) -> float:
    """The share of a core the process got since (``perf_counter``, ``process_time``) = (w0, c0),
    single-threaded work (a machine shared with other jobs: 0.5-0.6 measured under a load of 5 on
    2 cores); 1 when too short to tell."""
    wall = time.perf_counter() - w0
    return 1.0 if wall < MEASURED_S else min(1.0, (time.process_time() - c0) / wall)


def _whole_plan(vc: VectorCosts, domains: list[np.ndarray], deadline: float, kept: Kept, t0: float):
    """(pieces, owners, estimate) when the chain over ``domains`` is estimated to end by the
    deadline (the shape-only estimate first: cheap; then the exact one, at the share of a core
    measured while the owners were found); else None, the estimate and the seconds spent left in
    ``kept``. The pieces and owners go into ``kept`` (``settle`` needs them too)."""
    ps = pieces(vc, [len(d) for d in domains])
    if ps is None:
        return None
    estimate = work(vc, ps, shape_groups(vc, ps), domains, by_shape=True)
    if _fits(estimate, deadline):
        w0, c0 = time.perf_counter(), time.process_time()
        kept.ps, kept.owner = ps, groups(vc, ps)
        estimate, kept.share = work(vc, ps, kept.owner, domains), _cpu_share(w0, c0)
        if _fits(estimate, deadline, kept.share):
            return ps, kept.owner, estimate
    kept.estimate_s, kept.spent_s = estimate / (RATE * kept.share), time.perf_counter() - t0
    return None


def solve_whole(problem, vc: VectorCosts, t0: float, deadline: float, kept: Kept | None = None):
    """Bound and prune's first try (``solvers.pruned``): when the graph is a chain of pieces and
    the chain over every allowed vector is estimated to end before the deadline (the whole time
    left: it is exact, nothing else would use the time better), its exact optimum as an optimal
    Solution (no bound needed); else None (also at the deadline: ``kept.cut_s`` then says when)."""
    from explorer.core.solution import Status, plan_solution

    from .elimination import vectors_plan

    kept = kept if kept is not None else Kept()
    domains = [np.flatnonzero(~vc.blocked(n)) for n in range(vc.N)]
    planned = _whole_plan(vc, domains, deadline, kept, t0)
    if planned is None:
        return None
    ps, owner, estimate = planned
    w0 = time.perf_counter()
    found = _solve(vc, domains, ps, owner, deadline, MAX_TABLE, kept.tables)
    if found is None or found.vectors is None:
        if time.perf_counter() >= deadline:
            kept.estimate_s, kept.cut_s = estimate / (RATE * kept.share), time.perf_counter() - w0
        return None
    info = {"method": "block-chain", "block_chain": {"pieces": found.pieces, "tables": found.tables,
                                                     "table_entries": found.table_entries, "estimate": estimate}}
    return plan_solution("pruned", problem, vectors_plan(vc, found.vectors), Status.OPTIMAL,
                         time.perf_counter() - t0, found.value, info)


def _structure(vc: VectorCosts, sizes: list[int], kept: Kept | None):
    """(pieces, owners) for domains of these sizes: the kept ones when the pieces are the same
    (their owners then need not be found again), else found anew; None when not a chain."""
    ps = pieces(vc, sizes)
    if ps is None:
        return None
    if kept is not None and kept.ps == ps:
        return ps, kept.owner
    if kept is not None:
        kept.tables = {}  # (owned by other pieces)
    return ps, groups(vc, ps)


def settle(search, deadline: float, kept: Kept | None = None) -> dict:
    """Try to settle bound and prune's question at once (``solvers.pruned._Search``): the chain
    over the vectors whose marginal is at most U = incumbent - 1. A result <= U is the optimum
    (search's incumbent and bound set to it), a result > U proves the incumbent optimal (bound
    set to it). Nothing changes when the graph is not a chain of pieces, or the estimated work
    does not fit the time left, or at the deadline. What ``solve_whole`` kept is used, not
    rebuilt. Returns what to add to the run's info."""
    vc, U = search.vc, search.incumbent - 1
    if search.lo > U:
        return {}
    domains = [np.flatnonzero((m <= U) & ~vc.blocked(n)) for n, m in enumerate(search.res.marginals)]
    sizes = [len(d) for d in domains]
    found = _structure(vc, sizes, kept)
    if found is None:
        return {}
    ps, owner = found
    tables = {} if kept is None else kept.tables
    estimate = work(vc, ps, owner, domains, kept=tables)
    if not _fits(estimate, deadline):
        return {"block_chain": f"skipped: {estimate:.3g} operations estimated"}
    if kept is not None:
        kept.tables = _reusable(tables, _domains_of(ps, owner, domains, _tabled(vc, ps, owner)))  # the others freed
    found = _solve(vc, domains, ps, owner, deadline, MAX_TABLE, None if kept is None else kept.tables)
    if found is None:
        return {"block_chain": "not finished"}
    if found.value <= U:
        search.incumbent, search.vectors, search.lo = found.value, found.vectors, found.value
    else:
        search.lo = search.incumbent
    return {"method": "tree-dual+block-chain", "block_chain": {
        "pieces": found.pieces, "tables": found.tables, "table_entries": found.table_entries,
        "survivors_max_end": max(sizes[p.b] for p in ps), "estimate": estimate}}
