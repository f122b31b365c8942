"""The frontier elimination of one DP level on a graph (``dp.graph_level``), on the level's rows.

The method, its tie-breaking and the reuse of repeated segments: docs/derivations.md, "The
hierarchical DP".
"""

from __future__ import annotations

from functools import lru_cache
from operator import itemgetter

# One step of the order: (frontier with the node appended, in-edges as (edge, position of the
# producer), positions kept after the node, whether the node itself is kept, the projection of a
# state onto the kept positions before the node (None: all of them), the step's shape (hashable))
Step = tuple


@lru_cache(maxsize=8)
def elimination_order(N: int, edges: tuple[tuple[int, int], ...]) -> tuple[Step, ...]:
    """The steps of the elimination (see ``Step``), the same at every level."""
    in_edges: list[list[tuple[int, int]]] = [[] for _ in range(N)]  # (edge, producer)
    last_use = list(range(N))
    for e, (u, v) in enumerate(edges):
        in_edges[v].append((e, u))
        last_use[u] = max(last_use[u], v)
    frontier: list[int] = []
    out = []
    for i in range(N):
        full_nodes = frontier + [i]
        pos = {n: j for j, n in enumerate(full_nodes)}
        keep = [j for j, n in enumerate(full_nodes) if last_use[n] > i]
        kept = last_use[i] > i
        ins = [(e, pos[u]) for e, u in in_edges[i]]
        proj = _project(keep[:-1] if kept else keep, len(frontier))
        shape = (len(frontier), tuple(j for _, j in ins), tuple(keep), kept)
        out.append((full_nodes, ins, keep, kept, proj, shape))
        frontier = [full_nodes[j] for j in keep]
    return tuple(out)


@lru_cache(maxsize=8)
def segments(N: int, edges: tuple[tuple[int, int], ...]) -> tuple[tuple[int, int], ...]:
    """The order cut after every step that leaves at most one node live: [start, end) per segment."""
    out, start = [], 0
    for i, step in enumerate(elimination_order(N, edges)):
        if len(step[2]) <= 1:
            out.append((start, i + 1))
            start = i + 1
    if start < N:
        out.append((start, N))
    return tuple(out)


def _project(keep: list[int], width: int):
    """A function taking a state (a tuple of ``width`` type indices) to its entries at ``keep``."""
    if len(keep) == width:
        return None  # every entry: the state itself
    if len(keep) > 1:
        return itemgetter(*keep)
    if keep:
        j = keep[0]
        return lambda st: (st[j],)
    return lambda st: ()


def eliminate(N: int, edges, allowed: list[list[int]], intra, inter) -> tuple[list[int], int]:
    """The level's least cost and a plan of it: every node's type index (``allowed`` per node, not
    empty; ``intra`` per node and ``inter`` per edge: the level's rows)."""
    order = elimination_order(N, edges)
    sigs = _step_signatures(order, allowed, intra, inter)
    states: dict[tuple, int] = {(): 0}
    back: list[tuple[bool, dict]] = []  # per node: (fresh, new state -> full assignment)
    seen: dict[tuple, tuple[list, dict, int]] = {}  # a segment met before -> (its records, new states, entry cost)
    for lo, hi in segments(N, edges):
        ref = next(iter(states.values()))
        key = (tuple(sigs[lo:hi]), tuple(states), tuple([c - ref for c in states.values()]))
        found = seen.get(key)
        if found is not None:
            records, out, ref0 = found
            back.extend(records)
            states = {k: c - ref0 + ref for k, c in out.items()}
            continue
        start = len(back)
        states = _run(order, lo, hi, states, allowed, intra, inter, back)
        seen[key] = (back[start:], states, ref)
    (final_cost,) = states.values()
    return _backtrack(back), final_cost


def _step_signatures(order, allowed, intra, inter) -> list[int]:
    """Per step a number, equal for two steps exactly when their shapes, allowed types, intra rows
    and in-edges' inter rows are equal (rows by value, as tuples; allowed lists by identity: equal
    lists that are distinct objects only lose a reuse)."""
    if intra and type(intra[0]) is not tuple:  # the large networks' form: lists
        intra, inter = [_frozen(r) for r in intra], [_frozen(m) for m in inter]
    rows: dict[tuple, int] = {}
    ri = [rows.setdefault(r, len(rows)) for r in intra]
    mi = [rows.setdefault(m, len(rows)) for m in inter]
    lists: dict[int, int] = {}
    ai = [lists.setdefault(id(a), len(lists)) for a in allowed]  # (each list held by ``allowed``)
    ids: dict[tuple, int] = {}
    return [ids.setdefault((step[5], ai[i], ri[i], tuple([mi[e] for e, _ in step[1]])), len(ids))
            for i, step in enumerate(order)]


def _frozen(row):
    """A row (a list of ints or of lists) as nested tuples."""
    return tuple([_frozen(x) if type(x) is list else x for x in row])


def _run(order, lo: int, hi: int, states: dict, allowed, intra, inter, back: list) -> dict:
    """Steps lo to hi - 1, appending their records to ``back``; the new states."""
    for i in range(lo, hi):
        _, in_edges, _, kept, proj, _ = order[i]
        terms = [(j, inter[e]) for e, j in in_edges]
        if kept and proj is None:  # fresh: a new state is its full assignment (its record: the states)
            states = _eliminate_fresh(states, allowed[i], intra[i], terms)
            back.append((True, states))
        else:
            states, arg = (_eliminate_kept if kept else _eliminate_dropped)(states, allowed[i], intra[i], terms, proj)
            back.append((False, arg))
    return states


def _eliminate_fresh(states: dict[tuple, int], allowed: list[int], intra, terms) -> dict[tuple, int]:
    """The node is read later and the frontier loses no node: every (state, k) is a new state of
    its own, the state then k (no comparisons: no two candidates share a key)."""
    best: dict[tuple, int] = {}
    for st, c0 in states.items():
        rows = [m[st[j]] for j, m in terms]
        for k in allowed:
            c = c0 + intra[k]
            for r in rows:
                c += r[k]
            best[st + (k,)] = c
    return best


def _eliminate_kept(states: dict[tuple, int], allowed: list[int], intra, terms, proj) -> tuple[dict, dict]:
    """The node is read later and the frontier loses a node: the new state is the state's kept
    entries (``proj``), then k."""
    best: dict[tuple, int] = {}
    arg: dict[tuple, tuple] = {}
    for st, c0 in states.items():
        rows = [m[st[j]] for j, m in terms]
        base = proj(st)
        for k in allowed:
            c = c0 + intra[k]
            for r in rows:
                c += r[k]
            key = base + (k,)
            old = best.get(key)
            if old is None or c < old:
                best[key] = c
                arg[key] = st + (k,)
    return best, arg


def _eliminate_dropped(states: dict[tuple, int], allowed: list[int], intra, terms, proj) -> tuple[dict, dict]:
    """The node is read no more: each state's least cost over k (the first on ties) competes for
    its projection."""
    best: dict[tuple, int] = {}
    arg: dict[tuple, tuple] = {}
    for st, c0 in states.items():
        rows = [m[st[j]] for j, m in terms]
        bc = bk = None
        for k in allowed:
            c = c0 + intra[k]
            for r in rows:
                c += r[k]
            if bk is None or c < bc:
                bc, bk = c, k
        key = st if proj is None else proj(st)
        old = best.get(key)
        if old is None or bc < old:
            best[key] = bc
            arg[key] = st + (bk,)
    return best, arg


def _backtrack(back: list[tuple[bool, dict]]) -> list[int]:
    """Every node's type index, read back from the last node's record to the first: node i's type
    is the last entry of its record's full assignment (a fresh record's: the key itself), the rest
    is the previous record's key."""
    choice = [0] * len(back)
    key: tuple = ()
    for i in range(len(back) - 1, -1, -1):
        fresh, record = back[i]
        full = key if fresh else record[key]
        choice[i] = full[-1]
        key = full[:-1]
    return choice
