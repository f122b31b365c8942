"""HyPar's hierarchical layer-wise dynamic program (model.md section 6, the paper's Algorithm 1-2).

The full derivation is in the manual: docs/derivations.md, "The hierarchical DP".
"""

from __future__ import annotations

import math
import time
from operator import itemgetter

from explorer.core import thresholds
from explorer.core.comm import Counts, advance, zero_counts
from explorer.core.costs import CHAIN_SIZES_BELOW, ChainSizes, chain_sizes
from explorer.core.errors import InstanceTooLarge
from explorer.core.names import given_as
from explorer.core.units import format_count
from explorer.core.plan import Plan
from explorer.core.problem import Problem

from explorer.core.solution import Solution, SolveOptions, Status, plan_solution

from .dp_graph import eliminate, elimination_order
from .dp_wide import level_by_cpsat

# Cost of a disallowed choice: larger than any real cost (those stay far below 2^100 units).
BLOCKED = 1 << 200


class NoPlan(ValueError):
    """Pins and forbids leave some layer at some level without a type."""


# States one step of ``graph_level`` may hold (a time guard: the step's work is its states times
# the node's types). Measured on DenseNet-like blocks (accpar, one level): 3^11 = 177,147 states
# take 3.6 s, 3^13 = 1.6 M take 19 s, so the limit sits just above the first.
MAX_FRONTIER_STATES = 200_000
# Bytes ``graph_level`` may hold at once (``frontier_bytes``: the back-pointers of every step so
# far, the states and the step's new ones), the memory guard: the count alone bounds one step,
# never the sum over the steps (3^11 states at the 11th concat of a DenseNet-like block: 469 MiB
# held). Measured / estimated: see ``bench/bench_memory_guard.py`` (dp cases).
MAX_FRONTIER_BYTES = 2**30
DICT_ENTRY = 48  # bytes of one dict entry (its slot and index at the dict's average fill)
INT_BYTES = 32  # a cost (a Python int below 2^60)


def _tuple_bytes(k: int) -> int:
    return 40 + 8 * k


def frontier_bytes(steps: list[tuple[int, int, int]]) -> int:
    """The most bytes ``graph_level`` holds at once over its steps (states, kept width, full
    width): per step its back-pointers (a dict entry, the key tuple and the full assignment's
    tuple per state) are kept to the end; the states before the step (a dict entry and a cost
    per state) and the new ones (a cost each; their keys are the back-pointers') live with them.
    A step that keeps every node (kept = full: ``dp_graph``'s fresh step) keeps its new states
    themselves as its record (a dict entry, the key tuple and a cost per state): they are then
    held to the end, and the next step's states are among them."""
    held, peak, before = 0, 0, DICT_ENTRY + INT_BYTES
    for states, kept, full in steps:
        if kept == full:
            back = states * (DICT_ENTRY + _tuple_bytes(full) + INT_BYTES)
            peak = max(peak, held + before + back)
            held, before = held + back, 0
            continue
        back = states * (DICT_ENTRY + _tuple_bytes(kept) + _tuple_bytes(full))
        peak = max(peak, held + before + back + states * (DICT_ENTRY + INT_BYTES))
        held, before = held + back, states * (DICT_ENTRY + INT_BYTES)
    return peak


def wide_levels(problem: Problem) -> dict[int, str]:
    """The levels whose frontier ``graph_level`` could not hold, each with why (``too_wide``);
    levels whose nodes allow as many types as an earlier level's share its answer."""
    out: dict[int, str] = {}
    seen: dict[tuple[int, ...], str | None] = {}
    for h in range(problem.levels):
        sizes = tuple(_level_sizes(problem, h))
        why = seen[sizes] = seen[sizes] if sizes in seen else _too_wide(problem, sizes)
        if why is not None:
            out[h] = why
    return out


def too_wide(problem: Problem, h: int) -> str | None:
    """Why ``graph_level`` could not hold level h, or None: after placing node i its states are the
    type combinations of the placed nodes still read later (their allowed types' product), at
    most ``MAX_FRONTIER_STATES`` a step and ``MAX_FRONTIER_BYTES`` held (``frontier_bytes``)."""
    return _too_wide(problem, _level_sizes(problem, h))


def _too_wide(problem: Problem, sizes) -> str | None:
    steps = _steps_of(problem, sizes)
    for states, kept, _, i in steps:
        if states > MAX_FRONTIER_STATES:
            return (f"dp: after node {problem.network.layers[i].name!r} the graph keeps {kept} outputs alive, "
                    f"{format_count(states)} type combinations (limit {MAX_FRONTIER_STATES:,}): too wide for the DP")
    need = frontier_bytes([s[:3] for s in steps])
    if need > MAX_FRONTIER_BYTES:
        return (f"dp: its states over the graph would hold about {need / 2**20:,.0f} MiB "
                f"(limit {MAX_FRONTIER_BYTES / 2**20:,.0f} MiB): too wide for the DP")
    return None


def _frontier_steps(problem: Problem, h: int) -> list[tuple[int, int, int, int]]:
    """Per node in ``graph_level``'s order: (states after placing it, kept width, full width, node)."""
    return _steps_of(problem, _level_sizes(problem, h))


def _steps_of(problem: Problem, sizes) -> list[tuple[int, int, int, int]]:
    out = []
    for i, (full_nodes, _, keep, *_) in enumerate(elimination_order(problem.num_layers, problem.tables.edges)):
        states = math.prod(sizes[full_nodes[j]] for j in keep)
        out.append((states, len(keep), len(full_nodes), i))
    return out


def _level_sizes(problem: Problem, h: int) -> list[int]:
    """Per node the number of types it may take at level h (1 for none: ``graph_level`` refuses those)."""
    return [len(a) or 1 for a in _allowed_lists(problem, h)]


def graph_level(problem: Problem, h: int, counts: list[Counts], checked: bool = False) -> tuple[list, int]:
    """Exact minimum of c_h over one level's choices on a graph (frontier elimination).
    ``checked``: the caller has asked ``too_wide`` (``wide_levels``) of this level already."""
    types = problem.tables.types
    intra, inter = problem.tables.level_tuples(counts)
    allowed = _allowed_indices(problem, h)
    if not checked:
        why = too_wide(problem, h)  # (before anything is held)
        if why is not None:
            raise NotImplementedError(f"level {h}: {why}")
    choice, cost = eliminate(problem.num_layers, problem.tables.edges, allowed, intra, inter)
    return [types[k] for k in choice], cost


def _allowed_indices(problem: Problem, h: int) -> list[list[int]]:
    """Per node, the indices of the types it may take at level h (NoPlan when it may take none)."""
    allowed = _allowed_lists(problem, h)
    for n, a in enumerate(allowed):
        if not a:
            raise NoPlan(f"layer {problem.network.layers[n].name} has no allowed type at level {h}")
    return allowed


def _allowed_lists(problem: Problem, h: int) -> list[list[int]]:
    """Per node, the indices of the types it may take at level h (possibly none), one list per
    distinct tuple of allowed types (shared: callers do not change them). With no pins or forbids
    they are ``level_types``' tuples, shared by the problem's nodes: looked up by identity."""
    types = problem.tables.types
    if not problem.constraints.empty:
        allowed = [problem.allowed(h, n) for n in range(problem.num_layers)]
    else:
        allowed = [row[h] for row in problem.types_by_layer]
    lists: dict[int, tuple[tuple, list[int]]] = {}  # id -> (the tuple, held while its id is a key; its indices)
    out = []
    for a in allowed:
        found = lists.get(id(a))
        if found is None:
            found = lists[id(a)] = (a, [k for k, t in enumerate(types) if t in a])
        out.append(found[1])
    return out


def dp_level(problem: Problem, h: int, counts: list[Counts], chain: bool | None = None,
             checked: bool = False) -> tuple[list, int]:
    """Optimal choices of level h given each layer's counts; returns (types per layer, c_h units).
    ``chain``: whether the network is a chain, if the caller knows (it costs a pass over the network);
    ``checked``: the caller has asked ``too_wide`` of this level (``graph_level``)."""
    if not (problem.network.is_chain if chain is None else chain):
        return graph_level(problem, h, counts, checked)
    fast = chain_level_vectorised(problem, h, counts) if problem.num_layers >= thresholds.NUMPY_FROM_LAYERS else None
    return fast if fast is not None else chain_level(problem, h, counts)


def chain_level(problem: Problem, h: int, counts: list[Counts]) -> tuple[list, int]:
    """Algorithm 1 on a chain, layer by layer in Python integers (the reference tie-breaking)."""
    tables = problem.tables
    types = tables.types
    intra, inter = tables.level_tuples(counts)
    if not problem.constraints.empty or not problem.every_type_everywhere:
        intra = [[c if k in a else BLOCKED for k, c in enumerate(row)] for row, a in zip(intra, _allowed_indices(problem, h))]
    scan = _SCANS.get(len(types), _chain_scan)
    choice, best = scan(intra, inter)
    if best >= BLOCKED:
        raise NoPlan(f"no allowed plan at level {h}")
    return [types[k] for k in choice], best


def _chain_scan(intra, inter) -> tuple[list[int], int]:
    """Algorithm 1's scan: cost[l][k] = intra[l][k] + min over k' of cost[l-1][k'] + inter[l-1][k'][k],
    keeping the first strict minimum in the global type order (I, II, III); then the backtrack.
    Returns (type index per layer, the least cost)."""
    K = len(intra[0])
    rng = range(K)
    cost = intra[0]
    back: list[list[int]] = []
    for row, m in zip(intra[1:], inter):
        new, bp = [0] * K, [0] * K
        for k in rng:
            best, arg = cost[0] + m[0][k], 0
            for kp in range(1, K):
                c = cost[kp] + m[kp][k]
                if c < best:
                    best, arg = c, kp
            new[k] = best + row[k]
            bp[k] = arg
        cost = new
        back.append(bp)
    return _backtrack_chain(back, cost)


def _chain_scan_2(intra, inter) -> tuple[list[int], int]:
    """``_chain_scan`` for two types, unrolled (the same sums and comparisons)."""
    c0, c1 = intra[0]
    back = []
    for (r0, r1), ((m00, m01), (m10, m11)) in zip(intra[1:], inter):
        a, b = c0 + m00, c1 + m10
        p0 = b < a
        n0 = (b if p0 else a) + r0
        a, b = c0 + m01, c1 + m11
        p1 = b < a
        c1 = (b if p1 else a) + r1
        c0 = n0
        back.append((int(p0), int(p1)))
    return _backtrack_chain(back, [c0, c1])


def _chain_scan_3(intra, inter) -> tuple[list[int], int]:
    """``_chain_scan`` for three types, unrolled (the same sums and comparisons: per next type k,
    the first least of cost[0] + m[0][k], cost[1] + m[1][k], cost[2] + m[2][k])."""
    c0, c1, c2 = intra[0]
    back = []
    for (r0, r1, r2), ((a0, a1, a2), (b0, b1, b2), (d0, d1, d2)) in zip(intra[1:], inter):
        x, y, z = c0 + a0, c1 + b0, c2 + d0
        if y < x:
            n0, p0 = (z, 2) if z < y else (y, 1)
        else:
            n0, p0 = (z, 2) if z < x else (x, 0)
        x, y, z = c0 + a1, c1 + b1, c2 + d1
        if y < x:
            n1, p1 = (z, 2) if z < y else (y, 1)
        else:
            n1, p1 = (z, 2) if z < x else (x, 0)
        x, y, z = c0 + a2, c1 + b2, c2 + d2
        if y < x:
            c2, p2 = (z, 2) if z < y else (y, 1)
        else:
            c2, p2 = (z, 2) if z < x else (x, 0)
        c0, c1, c2 = n0 + r0, n1 + r1, c2 + r2
        back.append((p0, p1, p2))
    return _backtrack_chain(back, [c0, c1, c2])


_SCANS = {2: _chain_scan_2, 3: _chain_scan_3}


def _backtrack_chain(back, cost) -> tuple[list[int], int]:
    """The last layer's first least type, then each back pointer in turn."""
    best = min(cost)
    k = cost.index(best)
    choice = [k]
    for bp in reversed(back):
        k = bp[k]
        choice.append(k)
    choice.reverse()
    return choice, best


# Headroom of the int64 scan: real path costs stay below 2^60, a blocked choice (and any sum
# through one) saturates at 2^61, so no sum of two entries reaches 2^63.
REAL_LIMIT = 1 << 60
SATURATED = 1 << 61


def chain_level_vectorised(problem: Problem, h: int, counts: list[Counts], min_layers: int | None = None) -> tuple[list, int] | None:
    """``chain_level`` as a min-plus scan over numpy int64 arrays; None on short chains (below
    ``min_layers``, by default ``thresholds.NUMPY_FROM_LAYERS``) and where int64 could overflow.

    The same plan and cost, bit for bit: every prefix cost cost[l][k] is computed exactly (a
    parallel prefix of min-plus matrix products, saturating at SATURATED for blocked choices),
    then each back pointer is the first predecessor type reaching the minimum (``argmin``
    keeps the first, as the reference's strict ``<`` does), the last layer's type likewise,
    and the backtrack is the reference's.
    """
    if problem.num_layers < (thresholds.NUMPY_FROM_LAYERS if min_layers is None else min_layers):
        return None
    tables = problem.tables
    arrays = tables.level_arrays(counts)
    if arrays is None:
        return None
    import numpy as np

    intra, inter = arrays
    types = tables.types
    L, K = intra.shape
    # no plan of this level costs more than the sum of all entries (float64: off by < 1e-12 relative)
    bound = float(intra.sum(dtype=np.float64)) + float(inter.sum(dtype=np.float64))
    if bound >= REAL_LIMIT:
        return None
    if not problem.constraints.empty or not problem.every_type_everywhere:
        blocked = np.ones((L, K), dtype=bool)
        for n, a in enumerate(_allowed_indices(problem, h)):
            blocked[n, a] = False
        intra = np.where(blocked, SATURATED, intra)
    cost = min_plus_prefix(intra, inter)
    arg = int(np.argmin(cost[-1]))
    best = int(cost[-1, arg])
    if best >= SATURATED:
        raise NoPlan(f"no allowed plan at level {h}")
    back = np.argmin(cost[:-1, :, None] + inter, axis=1).ravel().tolist()  # [(l - 1) * K + k]: type of layer l - 1
    choice = [0] * L
    choice[L - 1] = arg
    for l in range(L - 1, 0, -1):  # noqa: E741
        choice[l - 1] = back[(l - 1) * K + choice[l]]
    return [types[k] for k in choice], best


def min_plus_prefix(intra, inter):
    """cost[l][k] = intra[l][k] + min over k' of (cost[l-1][k'] + inter[l-1][k'][k]) for every l
    (int64 arrays), saturating at SATURATED: exact below it, since (min, saturating +) is
    associative. With M_l[k'][k] = inter[l-1][k'][k] + intra[l][k], cost[l] = cost[0] (x) M_1
    (x) ... (x) M_l in the (min, +) semiring, computed as a work-efficient parallel prefix.
    The matrices are laid out [k'][k][l] so that every array step runs along the layers."""
    import numpy as np

    cost = np.empty_like(intra)
    cost[0] = np.minimum(intra[0], SATURATED)
    if len(intra) > 1:
        M = np.minimum(inter + intra[1:, None, :], SATURATED)
        cost[1:] = _prefix_vectors(cost[0], np.ascontiguousarray(M.transpose(1, 2, 0))).T
    return cost


def _prefix_vectors(c0, M):
    """out[:, i] = c0 (x) M[:, :, 0] (x) ... (x) M[:, :, i] for every i (M is [k'][k][i], out [k][i]):
    multiply neighbouring pairs of matrices, recurse on the half as long list of pair products
    (which gives every odd position), then one vector-matrix step gives the even positions.
    O(n K^3) work in O(log n) array steps."""
    import numpy as np

    n = M.shape[2]
    if n <= SEQUENTIAL_BELOW:  # short: array steps cost more than they save
        return _sequential_vectors(c0, M)
    m = n // 2
    pairs = _mat_mat(M[:, :, 0:2 * m:2], M[:, :, 1:2 * m:2])
    odd = _prefix_vectors(c0, pairs)  # odd[:, j] = c0 (x) M[0] (x) ... (x) M[2j + 1]
    out = np.empty((M.shape[1], n), dtype=M.dtype)
    out[:, 1:2 * m:2] = odd
    # even positions: out[:, 0] = c0 (x) M[0], out[:, 2j] = odd[:, j - 1] (x) M[2j]
    out[:, 0:n:2] = _vec_mat(np.concatenate((c0[:, None], odd[:, :(n - 1) // 2]), axis=1), M[:, :, 0:n:2])
    return out


SEQUENTIAL_BELOW = 16


def _sequential_vectors(c0, M):
    """``_prefix_vectors`` one step at a time, in Python integers."""
    import numpy as np

    K = M.shape[1]
    v, out = c0.tolist(), []
    for m in M.transpose(2, 0, 1).tolist():
        v = [min(min([v[a] + m[a][k] for a in range(K)]), SATURATED) for k in range(K)]
        out.append(v)
    return np.array(out, dtype=np.int64).reshape(len(out), K).T


def _vec_mat(v, M):
    """Min-plus vector-matrix products along the last axis: out[k][i] = min over k' of
    v[k'][i] + M[k'][k][i], saturating."""
    import numpy as np

    out = v[0, None, :] + M[0]
    for j in range(1, M.shape[0]):  # a loop over the few types; each step runs along the layers
        np.minimum(out, v[j, None, :] + M[j], out=out)
    return np.minimum(out, SATURATED, out=out)


def _mat_mat(A, B):
    """Min-plus matrix products along the last axis: out[a][c][i] = min over b of A[a][b][i] + B[b][c][i], saturating."""
    import numpy as np

    out = A[:, 0, None, :] + B[None, 0, :, :]
    for j in range(1, A.shape[1]):
        np.minimum(out, A[:, j, None, :] + B[None, j, :, :], out=out)
    return np.minimum(out, SATURATED, out=out)


def small_chain_levels(problem: Problem) -> tuple[list[list[int]], list[int]] | None:
    """Every level of a small chain's DP (below ``CHAIN_SIZES_BELOW`` layers, no pins or forbids,
    every type everywhere) in one pass over ``chain_sizes``, without cost tables: per level the
    unrolled scan of ``chain_level`` (the same sums, comparisons and tie-breaking), then the
    sizes halved by its choices. (type index per layer per level, c_h per level), or None where
    it does not apply (then ``dp_level`` per level)."""
    L = problem.num_layers
    if L >= CHAIN_SIZES_BELOW or not problem.levels or not problem.constraints.empty:
        return None
    scan = _SIZED_SCANS.get(len(problem.space.types))
    data = chain_sizes(problem.network, problem.levels, problem.space) if scan else None
    if data is None:
        return None
    scan = _UNIFORM_SCANS.get(data.pattern, scan)
    choices, units = [], []
    for h in range(problem.levels):
        if h:
            data.halve(choices[-1])  # the sizes at level h (none needed after the last level)
        choice, best = scan(data)
        choices.append(choice)
        units.append(best)
    return choices, units


def _sized_scan_2(data: ChainSizes) -> tuple[list[int], int]:
    """``_chain_scan_2`` on one level of ``data`` (its rows and matrices read as the scan goes):
    per next type, the first least of the two sums in type order."""
    s, (e0, e1) = data.first
    c0 = s[e0]
    c1 = s[e1]
    back = []
    append = back.append
    for s, e0, e1, get, q in data.steps:
        m00, m01, m10, m11 = get((0, (q * s[0]) >> 2))
        n0 = c0 + m00
        p0 = 0
        y = c1 + m10
        if y < n0:
            n0 = y
            p0 = 1
        n1 = c0 + m01
        p1 = 0
        y = c1 + m11
        if y < n1:
            n1 = y
            p1 = 1
        c0 = n0 + s[e0]
        c1 = n1 + s[e1]
        append((p0, p1))
    return _backtrack_chain(back, [c0, c1])


def _sized_scan_3(data: ChainSizes) -> tuple[list[int], int]:
    """``_chain_scan_3`` on one level of ``data`` (its rows and matrices read as the scan goes):
    per next type, the first least of the three sums in type order (plain statements: the
    fastest form measured)."""
    s, (e0, e1, e2) = data.first
    c0 = s[e0]
    c1 = s[e1]
    c2 = s[e2]
    back = []
    append = back.append
    for s, e0, e1, e2, get, q in data.steps:
        a0, a1, a2, b0, b1, b2, d0, d1, d2 = get((0, (q * s[0]) >> 2))
        n0 = c0 + a0
        p0 = 0
        y = c1 + b0
        z = c2 + d0
        if y < n0:
            n0 = y
            p0 = 1
        if z < n0:
            n0 = z
            p0 = 2
        n1 = c0 + a1
        p1 = 0
        y = c1 + b1
        z = c2 + d1
        if y < n1:
            n1 = y
            p1 = 1
        if z < n1:
            n1 = z
            p1 = 2
        n2 = c0 + a2
        p2 = 0
        y = c1 + b2
        z = c2 + d2
        if y < n2:
            n2 = y
            p2 = 1
        if z < n2:
            n2 = z
            p2 = 2
        c0 = n0 + s[e0]
        c1 = n1 + s[e1]
        c2 = n2 + s[e2]
        append((p0, p1, p2))
    return _backtrack_chain(back, [c0, c1, c2])


_SIZED_SCANS = {2: _sized_scan_2, 3: _sized_scan_3}


def _uniform_scan_2(data: ChainSizes) -> tuple[list[int], int]:
    """``_sized_scan_2`` where every edge's matrix is [[0, v], [v, v]] (conv, fc and embedding
    layers under HyPar's types): the same sums less the zero entries, the same comparisons."""
    s, (e0, e1) = data.first
    c0 = s[e0]
    c1 = s[e1]
    back = []
    append = back.append
    for s, e0, e1, _, q in data.steps:
        v = (q * s[0]) >> 2
        n0 = c0
        p0 = 0
        y = c1 + v
        if y < n0:
            n0 = y
            p0 = 1
        n1 = c0 + v
        p1 = 0
        if y < n1:
            n1 = y
            p1 = 1
        c0 = n0 + s[e0]
        c1 = n1 + s[e1]
        append((p0, p1))
    return _backtrack_chain(back, [c0, c1])


def _uniform_scan_3(data: ChainSizes) -> tuple[list[int], int]:
    """``_sized_scan_3`` where every edge's matrix is [[0, v, v], [v, v, 0], [v, 0, v]] (conv, fc
    and embedding layers under AccPar's types): the same sums less the zero entries (each sum
    with v computed once), the same comparisons."""
    s, (e0, e1, e2) = data.first
    c0 = s[e0]
    c1 = s[e1]
    c2 = s[e2]
    back = []
    append = back.append
    for s, e0, e1, e2, _, q in data.steps:
        v = (q * s[0]) >> 2
        n0 = c0  # next type 0: c0, c1 + v, c2 + v
        p0 = 0
        y = c1 + v
        z = c2 + v
        if y < n0:
            n0 = y
            p0 = 1
        if z < n0:
            n0 = z
            p0 = 2
        n1 = c0 + v  # next type 1: c0 + v, c1 + v, c2
        p1 = 0
        if y < n1:
            n1 = y
            p1 = 1
        if c2 < n1:
            n1 = c2
            p1 = 2
        n2 = c0 + v  # next type 2: c0 + v, c1, c2 + v
        p2 = 0
        if c1 < n2:
            n2 = c1
            p2 = 1
        if z < n2:
            n2 = z
            p2 = 2
        c0 = n0 + s[e0]
        c1 = n1 + s[e1]
        c2 = n2 + s[e2]
        append((p0, p1, p2))
    return _backtrack_chain(back, [c0, c1, c2])


# Edge patterns (``ChainSizes.pattern``) with a scan of their own
_UNIFORM_SCANS = {(0, 1, 1, 1): _uniform_scan_2, (0, 1, 1, 1, 1, 0, 1, 0, 1): _uniform_scan_3}


def hierarchical_dp(problem: Problem) -> tuple[Plan, list[int]]:
    """The DP's plan and its per-level costs (units)."""
    plan, level_units, _ = _hierarchical(problem, set())
    return plan, level_units


def _hierarchical(problem: Problem, wide, time_limit_s: float | None = None, seed: int = 0,
                  checked: bool = False) -> tuple[Plan, list[int], list[int]]:
    """``hierarchical_dp`` with the levels in ``wide`` solved by CP-SAT (``dp_wide``); also the
    levels CP-SAT did not prove optimal within its time. ``checked``: ``wide`` is ``wide_levels``
    (every other level was asked ``too_wide``)."""
    L = problem.num_layers
    fast = None if wide else small_chain_levels(problem)
    if fast is not None:
        types = problem.space.types
        if L == 1:
            return Plan(tuple([(types[choice[0]],) for choice in fast[0]])), fast[1], []
        return Plan(tuple([itemgetter(*choice)(types) for choice in fast[0]])), fast[1], []
    counts = zero_counts(L)
    rows, level_units, unproven = [], [], []
    chain = problem.network.is_chain
    for h in range(problem.levels):
        if h in wide:
            share = WIDE_LEVEL_LIMIT_S if time_limit_s is None else time_limit_s / len(wide)
            row, c, proven = _level_by_cpsat(problem, h, counts, share, seed)
            if not proven:
                unproven.append(h)
        else:
            row, c = dp_level(problem, h, counts, chain, checked)
        rows.append(tuple(row))
        level_units.append(c)
        counts = advance(counts, row)
    return Plan(tuple(rows)), level_units, unproven


# CP-SAT's time per level too wide for the elimination, without --time-limit (a DenseNet-like
# block of 30 concats at H = 10 proves most levels in 1-15 s; a level not proven in time makes
# the DP's answer ``feasible``, and says which)
WIDE_LEVEL_LIMIT_S = 10.0


def _level_by_cpsat(problem: Problem, h: int, counts: list[Counts], time_limit_s, seed: int) -> tuple[list, int, bool]:
    types = problem.tables.types
    intra, inter = problem.tables.level_tuples(counts)
    found = level_by_cpsat(intra, inter, problem.tables.edges, _allowed_indices(problem, h), time_limit_s, seed)
    if found is None:
        raise InstanceTooLarge(f"dp: level {h} is too wide for the DP and its costs exceed CP-SAT's int64 range "
                               f"(or CP-SAT found no plan in its time); use {given_as('--solver')} cpsat")
    choice, cost, proven = found
    return [types[k] for k in choice], cost, proven


def _wide_note(wide: dict[int, str], unproven: list[int]) -> str:
    levels = ", ".join(str(h) for h in sorted(wide))
    note = (f"levels {levels} solved by CP-SAT instead of the DP's elimination ("
            + next(iter(wide.values())).removeprefix("dp: ") + ")")
    if unproven:
        s = "s" if len(unproven) > 1 else ""
        return note + f"; level{s} {', '.join(map(str, unproven))} not proven optimal in CP-SAT's time (its best plan)"
    return note + "; each proven optimal"


def solve(problem: Problem, options: SolveOptions | None = None) -> Solution:
    """The DP's plan. Levels whose frontier is too wide for the elimination (``wide_levels``) are
    solved exactly by CP-SAT instead, and the solution says so (``info['levels_by_cpsat']``, the
    reason); a level CP-SAT does not prove optimal within ``--time-limit`` makes it ``feasible``."""
    options = options or SolveOptions()
    t0 = time.perf_counter()
    wide = {} if problem.network.is_chain else wide_levels(problem)
    try:
        plan, level_units, unproven = _hierarchical(problem, wide, options.time_limit_s, options.seed, checked=True)
    except NoPlan as err:
        return Solution("dp", Status.INFEASIBLE, None, None, None, None, time.perf_counter() - t0, {"reason": str(err)})
    wall = time.perf_counter() - t0
    broken = problem.plan_violations_units(level_units, plan.types)
    # a heuristic plan that breaks a cap or the memory limit keeps its status (it proves no
    # infeasibility); ``info['violations']`` names what it breaks (``Solution.violations``)
    status = Status.FEASIBLE if unproven else Status.LEVEL_OPTIMAL
    info = {"violations": broken, "reason": "the DP does not enforce caps or memory; its plan breaks: " + "; ".join(broken)} if broken else {}
    if wide:
        note = _wide_note(wide, unproven)
        info["levels_by_cpsat"] = sorted(wide)
        info["levels_note"] = note  # (the reason without what the plan breaks: for a solver that starts from it)
        info["reason"] = note + ("; " + info["reason"] if "reason" in info else "")
    # the levels' costs as the DP summed them (not summed again from the tables): the evaluator's
    # re-score of the plan (``app.run.rescore``) checks them
    return plan_solution("dp", problem, plan, status, wall, info=info, level_units=level_units)
