"""Integer cost tables: the one place solvers get costs from.

Every amount of model.md is an integer multiple of 1/(4*2^H) element (section 7), so the
tables hold integers in that unit ("units"). They are built once per problem from the
layer sizes and the derived inter-layer coefficients of ``explorer.core.partition``; lookups are
shifts, so solvers can afford them in inner loops. ``tests/test_costs.py`` checks every
lookup against the rational model of ``explorer.core.comm``. ``chain_sizes`` gives the DP on a
chain the same amounts computed level by level instead (cheaper than the tables there).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from itertools import chain, product
from operator import itemgetter

from . import thresholds
from .cached import cached_property
from .comm import whole_sizes
from .network import Network, chain_edges
from .partition import (  # noqa: F401 - compositions is re-exported
    NUM_TYPES,
    ZERO_COUNTS,
    Counts,
    PartitionType,
    Size,
    Space,
    advance,
    allreduce_fraction,
    compositions,
    node_inter_coeff,
    zero_counts,
)

_F_IN, _W = Size.F_IN.index, Size.WEIGHTS.index
# The tables are the binary (k = 2) levels of the one k-way formula set (partition, "k-way levels"):
# the intra amount's all-reduce multiplier at k = 2 is 1 (``intra`` is the shifted size itself) and
# the edge quarters come from ``node_inter_coeff``, which is ``inter_fractions`` at k = 2.
assert allreduce_fraction(2) == 1, "intra = the exchanged size times the k = 2 all-reduce fraction"



@dataclass(frozen=True)
class CostTables:
    """Integer intra/inter costs of a network on H levels, in units of 1/(4*2^H) element.

    - ``intra(l, t, counts)``: layer l's own exchange at a level where it has ``counts``.
    - ``inter(e, prev, nxt, counts)``: edge e = (u, v), u of type prev, v of type nxt,
      ``counts`` being the consumer v's counts at that level.

    Each node's kind says how it behaves under each type (``Layer.node_types``): join nodes have
    no intra cost and only the types with join layouts, a grouped conv's II splits whole groups
    without partial sums, an embedding's III exchanges nothing. Entries for types a node does
    not take are 0 and never chosen (``Problem.allowed`` excludes them).
    """

    network: Network
    levels: int
    space: Space

    @cached_property
    def unit_per_element(self) -> int:
        return 4 * 2**self.levels

    @cached_property
    def types(self) -> tuple[PartitionType, ...]:
        return self.space.types

    @cached_property
    def edges(self) -> tuple[tuple[int, int], ...]:
        return self.network.edges

    @cached_property
    def _base(self) -> list[tuple[int, int, int]]:
        """Per layer: (A(F_l), A(W_l), A(F_{l+1})) in units, unscaled (in ``Size`` order)."""
        u = self.unit_per_element
        return [(f * u, w * u, o * u) for f, w, o in whole_sizes(self.network)]

    @cached_property
    def _edge_base(self) -> list[int]:
        """Per edge: the tensor it carries, in units (the consumer's A(F) times the edge's share)."""
        out, base = [], self._base
        for (_, v), share in zip(self.edges, self.network.edge_shares):
            if share == 1:  # (an int or a Fraction) every edge but those into a concat
                out.append(base[v][0])
                continue
            x, rest = divmod(base[v][0] * share.numerator, share.denominator)
            assert rest == 0, "edge tensors are whole elements"
            out.append(x)
        return out

    @cached_property
    def _joins(self) -> list[bool]:
        return [L.is_join for L in self.network.layers]

    @cached_property
    def _node_types(self):
        """Per layer: its ``NodeTypes`` (halvings, exchanged size and layouts of each type)."""
        return [L.node_types for L in self.network.layers]

    @cached_property
    def edge_quarters(self) -> list[dict[tuple[PartitionType, PartitionType], int]]:
        """Per edge, 4 * (f + e) of the derived inter-layer coefficient: amounts in quarters of
        the edge's tensor. Depends on the producer's and consumer's ``NodeTypes`` (and the space):
        one dict per such pair, shared by every edge and every problem (``_quarters``)."""
        types, nts = self.types, self._node_types
        pairs: dict = {}  # (producer kind, consumer kind) -> its dict, looked up in _QUARTERS once
        out = []
        for u, v in self.edges:
            key = (nts[u], nts[v])
            q = pairs.get(key)
            if q is None:
                q = pairs[key] = _quarters(key[0], key[1], types)
            out.append(q)
        return out

    def intra(self, layer: int, t: PartitionType, counts: Counts) -> int:
        """``comm.intra_amount`` in units: the exchanged size shifted by its halvings."""
        nt = self._node_types[layer]
        i = nt.exchanged[t.index]  # the spec's exchanged tensor, as a position in _base and in halvings
        if i is None:
            return 0
        return self._base[layer][i] >> nt.halvings(counts)[i]

    def inter(self, edge: int, prev: PartitionType, nxt: PartitionType, counts: Counts) -> int:
        fin = self._edge_base[edge] >> self._node_types[self.edges[edge][1]].halvings(counts)[_F_IN]
        return (self.edge_quarters[edge][(prev, nxt)] * fin) >> 2

    def intra_row(self, layer: int, counts: Counts) -> list[int]:
        """intra(layer, t, counts) for every t of the space, in space order."""
        return [self.intra(layer, t, counts) for t in self.types]

    def inter_matrix(self, edge: int, counts: Counts) -> list[list[int]]:
        """inter(edge, prev, nxt, counts) as [prev][nxt] over the space's types, in space order."""
        fin = self._edge_base[edge] >> self._node_types[self.edges[edge][1]].halvings(counts)[_F_IN]
        q = self.edge_quarters[edge]
        return [[(q[(a, b)] * fin) >> 2 for b in self.types] for a in self.types]

    @cached_property
    def _base_arrays(self):
        """(A(F), A(W), A(Fout)) per layer as an int64 array [layer, size], or None when int64 could overflow."""
        if not self._base or max(max(b) for b in self._base) >= 2**60:
            return None
        import numpy as np

        base = np.array(self._base, dtype=np.int64).reshape(len(self._base), len(Size))
        edge_base = np.array(self._edge_base, dtype=np.int64)
        # edge_quarters shares one dict per (producer kind, consumer kind): build each matrix once
        K, rows, index = len(self.types), {}, []
        for qe in self.edge_quarters:
            if id(qe) not in rows:
                rows[id(qe)] = (len(rows), [[qe[(a, b)] for b in self.types] for a in self.types])
            index.append(rows[id(qe)][0])
        q = np.array([m for _, m in rows.values()], dtype=np.int64).reshape(len(rows), K, K)[np.array(index, dtype=np.int64)]
        # per node kind (then indexed per layer): the exchanged size's position per space type, or -1
        # for none (joins, group splits); [type position, size position] = 1 where each choice of the
        # type halves the size
        kinds: dict = {}
        kind_of = np.array([kinds.setdefault(nt, len(kinds)) for nt in self._node_types], dtype=np.int64)
        ex = [[-1 if nt.exchanged[t.index] is None else nt.exchanged[t.index] for t in self.types] for nt in kinds]
        hv = [[[int(k in hb) for hb in nt.halved_by] for k in range(NUM_TYPES)] for nt in kinds]
        exchanged = np.array(ex, dtype=np.int64).reshape(len(kinds), K)[kind_of]
        halves = np.array(hv, dtype=np.int64).reshape(len(kinds), NUM_TYPES, len(Size))[kind_of]
        return base, exchanged, halves, edge_base, q.reshape(len(self.edges), K, K)

    @cached_property
    def _consumers(self):
        return self._producers_consumers[1]

    @cached_property
    def _producers_consumers(self):
        """Edge endpoints as two int64 arrays."""
        import numpy as np

        return (np.array([u for u, _ in self.edges], dtype=np.int64), np.array([v for _, v in self.edges], dtype=np.int64))

    def level_rows(self, counts: list[Counts]) -> tuple[list[list[int]], list[list[list[int]]]]:
        """A whole level at once: intra[l][k] and inter[e][k_prev][k_next] over the space's types,
        given every layer's counts. The same numbers as ``intra``/``inter``, vectorised."""
        if len(counts) < thresholds.NUMPY_FROM_LAYERS:  # Python integers, no numpy import
            return self._level_rows_python(counts)
        arrays = self.level_arrays(counts)
        if arrays is None:
            return ([self.intra_row(l, c) for l, c in enumerate(counts)],  # noqa: E741
                    [self.inter_matrix(e, counts[v]) for e, (_, v) in enumerate(self.edges)])
        intra, inter = arrays
        return intra.tolist(), inter.tolist()

    @cached_property
    def _python_rows_data(self):
        """Per layer (its sizes, its ``NodeTypes``, the exchanged size's position per space type);
        per edge (its tensor, its consumer's ``NodeTypes`` and index, its quarters as [prev][next])."""
        types = self.types
        layers = [(b, nt, [nt.exchanged[t.index] for t in types]) for b, nt in zip(self._base, self._node_types)]
        edges = [(eb, self._node_types[v], v, [[q[(a, b)] for b in types] for a in types])
                 for eb, (_, v), q in zip(self._edge_base, self.edges, self.edge_quarters)]
        return layers, edges

    def _level_rows_python(self, counts: list[Counts]) -> tuple[list[list[int]], list[list[list[int]]]]:
        """``level_rows`` in Python integers from per-layer data prepared once (small networks,
        where a dozen numpy calls per level cost more than the arithmetic)."""
        layers, edges = self._python_rows_data
        intra = []
        for (base, nt, ex), c in zip(layers, counts):
            hv = nt.halvings(c)
            intra.append([0 if i is None else base[i] >> hv[i] for i in ex])
        inter = []
        for eb, nt, v, q in edges:
            fin = eb >> nt.halvings(counts[v])[_F_IN]
            inter.append([[(x * fin) >> 2 for x in row] for row in q])
        return intra, inter

    @cached_property
    def _shift_tables(self):
        """Every level's amounts at once (small networks), indexed by halvings: a layer's sizes at
        any level depend only on how many times each was halved above it (0 to levels - 1), so one
        table per layer and per edge serves every level.

        Per layer: the tuple ``tab[k * H + s]``, type k's exchanged size halved s times (0 where
        the type exchanges nothing), and its ``_LevelKeys``; per edge e: (a list of matrices, an
        offset o) with the matrix at o + s the edge's inter matrix [prev][next] (nested tuples)
        at its consumer's A(F) halved s times. The same shifts and products as ``intra`` and
        ``inter``, computed along whole columns: each (producer kind, consumer kind) pair's
        edges together, each distinct quarters value once."""
        H, types = self.levels, self.types
        kinds: dict = {}  # NodeTypes -> its _LevelKeys
        for nt in self._node_types:
            if nt not in kinds:
                kinds[nt] = _level_keys(nt, types, H)
        keys = [kinds[nt] for nt in self._node_types]
        sizes = [0 if i is None else base[i] for base, d in zip(self._base, keys) for i in d.exchanged]
        rH = range(H)
        flat = [x >> s for x in sizes for s in rH]
        intra_tabs = list(zip(*[iter(flat)] * (len(types) * H)))
        return intra_tabs, keys, self._inter_by_halvings()

    def _inter_by_halvings(self) -> list[tuple[list, int]]:
        """``_shift_tables``' edge part: per edge (matrices, offset)."""
        H, types, edge_base = self.levels, self.types, self._edge_base
        K = len(types)
        groups: dict[int, tuple[dict, list[int]]] = {}  # edge_quarters' dicts are shared per kind pair
        for e, q in enumerate(self.edge_quarters):
            groups.setdefault(id(q), (q, []))[1].append(e)
        out: list = [None] * len(self.edges)
        for q, es in groups.values():
            fins = [edge_base[e] >> s for e in es for s in range(H)]
            qs = _quarters_flat(q, types)
            columns = {x: [(x * f) >> 2 for f in fins] for x in set(qs)}  # each value's entries over (edge, s)
            cols = [columns[x] for x in qs]
            mats = list(zip(*[zip(*cols[a * K:(a + 1) * K]) for a in range(K)]))
            for j, e in enumerate(es):
                out[e] = (mats, j * H)
        return out

    def level_tuples(self, counts: list[Counts]) -> tuple[list, list]:
        """``level_rows`` for readers: the same numbers, intra[l] a tuple over the space's types and
        inter[e] nested tuples [prev][next], shared with the tables (small networks: looked up in
        ``_shift_tables``; large ones: ``level_rows``' lists)."""
        if len(counts) >= thresholds.NUMPY_FROM_LAYERS or not self.levels:
            return self.level_rows(counts)
        tabs, keys, inter = self._shift_tables
        found = [d[c] for d, c in zip(keys, counts)]
        if None in found:  # more halvings than the tables hold (counts past the last level)
            return self._level_rows_python(counts)
        return ([get(tab) for (get, _), tab in zip(found, tabs)],
                [mats[o + found[v][1]] for (mats, o), (_, v) in zip(inter, self.edges)])

    def level_arrays(self, counts: list[Counts]):
        """``level_rows`` as int64 numpy arrays, intra [layer, k] and inter [edge, k_prev, k_next]
        (every entry below 2^62), or None when int64 could overflow."""
        arrays = self._base_arrays
        if arrays is None:
            return None

        import numpy as np

        base, exchanged, halves, edge_base, q = arrays
        n = np.fromiter(chain.from_iterable(counts), dtype=np.int64, count=NUM_TYPES * len(counts))
        shifts = np.einsum("lk,lks->ls", n.reshape(len(counts), NUM_TYPES), halves)  # [layer, size]
        intra = np.take_along_axis(base >> shifts, np.maximum(exchanged, 0), axis=1)
        intra[exchanged < 0] = 0
        if not self.edges:
            return intra, np.zeros((0, len(self.types), len(self.types)), dtype=np.int64)
        fin = edge_base >> shifts[self._consumers, _F_IN]
        inter = (fin[:, None, None] * q) >> 2
        return intra, inter

    def footprint_units(self, layer: int, final_counts: Counts, weight_copies: int) -> int:
        """Per-accelerator memory of a layer after all levels (``comm.footprint_elements``), in units."""
        if self._joins[layer]:
            return 0
        base, shifts = self._base[layer], self._node_types[layer].halvings(final_counts)
        return (2 + weight_copies) * (base[_W] >> shifts[_W]) + (base[_F_IN] >> shifts[_F_IN])

    def states(self, h: int) -> list[Counts]:
        """Count tuples a layer can have at level h (after h choices) in this space."""
        return compositions(h, self.space)

    def to_elements(self, units: int) -> Fraction:
        return Fraction(units, self.unit_per_element)

    def max_level_cost(self) -> int:
        """An upper bound on any c_h in units (every layer's largest intra + inter at level 0)."""
        total = 0
        for layer in range(len(self.network.layers)):
            total += max(self.intra(layer, t, ZERO_COUNTS) for t in self.types)
        for e in range(len(self.edges)):
            total += max(self.inter(e, a, b, ZERO_COUNTS) for a, b in product(self.types, self.types))
        return total



class _LevelKeys(dict):
    """counts -> (a function picking the intra row at those counts out of a layer's
    ``_shift_tables`` entry, the halvings of A(F)), or None past the tables; one per (node kind,
    space types, levels), filled as counts are met."""

    def __init__(self, nt, types: tuple[PartitionType, ...], levels: int):
        super().__init__()
        self.nt, self.exchanged, self.levels = nt, [nt.exchanged[t.index] for t in types], levels

    def __missing__(self, counts: Counts):
        hv, H = self.nt.halvings(counts), self.levels
        key = None
        if max(hv) < H:
            pos = [k * H + (0 if i is None else hv[i]) for k, i in enumerate(self.exchanged)]
            key = (itemgetter(*pos) if len(pos) > 1 else (lambda tab, p=pos[0]: (tab[p],)), hv[_F_IN])
        self[counts] = key
        return key


_LEVEL_KEYS: dict[tuple, _LevelKeys] = {}


def _level_keys(nt, types: tuple[PartitionType, ...], levels: int) -> _LevelKeys:
    key = (nt, types, levels)
    keys = _LEVEL_KEYS.get(key)
    if keys is None:
        keys = _LEVEL_KEYS[key] = _LevelKeys(nt, types, levels)
    return keys


# Below this many layers a chain's DP reads ``chain_sizes`` (amounts computed as the levels go, in
# Python integers) instead of the tables: building them costs more than the levels read. Measured
# at 10 levels (whole DP, CPU time): 200 layers 1.6-1.9 ms vs 3.3-4.5 ms with tables (numpy rows and
# scan), 1,000 layers 4.3-5.5 vs 9-10 ms, 4,000 layers 19-26 vs 23-35 ms, 10,000 layers 79-82 vs 60-90 ms.
CHAIN_SIZES_BELOW = 4096

# The zero slot: ``ChainSizes.sizes[l][ZERO]`` is 0 (the "size" of a type that exchanges nothing).
ZERO = len(Size)


class ChainSizes:
    """A chain's level amounts computed as the levels go, without tables (``chain_sizes``): the
    same shifts and products as ``CostTables.intra`` and ``inter``, each entry computed once at
    the level that reads it (a small chain's tables hold every level's entries, and building
    them costs more than the DP's reads).

    - ``sizes[l]``: layer l's [A(F_l), A(W_l), A(F_{l+1}), 0] in units at the current level
      (each halved once per earlier choice of a type that halves it; ``halve`` after a level).
    - ``first``: (sizes[0], layer 0's positions in it of the exchanged size per space type,
      ``ZERO`` where the type exchanges nothing): its intra row is sizes[0][e] per position e.
    - ``steps[l - 1]`` for layer l >= 1: (sizes[l], its K exchanged positions, getter, q):
      the inter matrix of edge (l - 1, l) at the current level, flattened [prev * K + next],
      is ``getter((0, (q * sizes[l][0]) >> 2))`` (every entry of its quarters is 0 or q).
    - ``halves[l][k]``: the positions in sizes[l] that type k (space order) halves.
    - ``pattern``: where every edge's matrix has its q entries: the tuple of 0/1 (flattened
      [prev * K + next], 1 for q) that all edges share, or None where edges differ (or there are none).
    """

    __slots__ = ("sizes", "first", "steps", "halves", "pattern")

    def __init__(self, sizes, first, steps, halves, pattern):
        self.sizes, self.first, self.steps, self.halves, self.pattern = sizes, first, steps, halves, pattern

    def halve(self, choice: list[int]) -> None:
        """Advance to the next level: every layer's sizes after it took type ``choice[l]``."""
        for s, hv, k in zip(self.sizes, self.halves, choice):
            for i in hv[k]:
                s[i] >>= 1


def chain_sizes(network: Network, levels: int, space: Space) -> ChainSizes | None:
    """``ChainSizes`` of a chain where every layer takes every type of the space at every level,
    or None where that does not hold: not a chain (``Network.is_chain``), a kind without some
    type, type II limited to the first ``split_levels`` levels, an edge carrying part of a
    tensor, quarters with two non-zero values."""
    layers = network.layers
    if network.edges != chain_edges(len(layers)) or not network.whole_edges:
        return None
    kinds, pairs = _chain_kinds(space)
    u, b = 4 << levels, network.batch
    sizes, steps, halves = [], [], []
    prev = first = pattern = None
    for layer in layers:
        nt = layer.node_types
        kind = kinds.get(nt)
        if kind is None:
            kind = kinds[nt] = _chain_kind(nt, space.types)
        split = layer.split_levels
        if not kind or (split is not None and split < levels):
            return None
        s = [layer.input_elements(b) * u, layer.weight_elements() * u, layer.output_elements(b) * u, 0]
        sizes.append(s)
        halves.append(kind[1])
        if prev is None:
            first = (s, kind[0])
        else:
            pair = pairs.get((prev, nt))
            if pair is None:
                pair = pairs[(prev, nt)] = _chain_pair(prev, nt, space.types)
            if not pair:
                return None
            steps.append((s, *kind[0], pair[0], pair[1]))
            pattern = pair[2] if len(steps) == 1 or pattern == pair[2] else None
        prev = nt
    return ChainSizes(sizes, first, steps, halves, pattern)


_CHAIN_KINDS: dict = {}  # space -> ({NodeTypes: _chain_kind}, {(producer, consumer): _chain_pair})


def _chain_kinds(space: Space) -> tuple[dict, dict]:
    found = _CHAIN_KINDS.get(space)
    if found is None:
        found = _CHAIN_KINDS[space] = ({}, {})
    return found


def _chain_kind(nt, types: tuple[PartitionType, ...]) -> tuple:
    """(exchanged position per type, positions each type halves), or () when the kind lacks a type
    of the space or is a join."""
    if nt.join or any(nt.specs[t.index] is None for t in types):
        return ()
    exchanged = tuple(ZERO if (i := nt.exchanged[t.index]) is None else i for t in types)
    return exchanged, tuple(tuple(s for s, hb in enumerate(nt.halved_by) if t.index in hb) for t in types)


def _chain_pair(producer, consumer, types: tuple[PartitionType, ...]) -> tuple:
    """(getter, q, pattern) of an edge between two kinds (``ChainSizes``), or () when its quarters
    hold more than one non-zero value."""
    flat = _quarters_flat(_quarters(producer, consumer, types), types)
    values = sorted(set(flat) | {0})
    if len(values) > 2:
        return ()
    pattern = tuple(values.index(x) for x in flat)
    return itemgetter(*pattern), values[-1], pattern


_QUARTERS: dict[tuple, dict[tuple[PartitionType, PartitionType], int]] = {}
_QUARTERS_FLAT: dict[int, list[int]] = {}


def _quarters_flat(q: dict, types: tuple[PartitionType, ...]) -> list[int]:
    """One of ``_quarters``' dicts as a list [prev * K + next] over ``types`` (the types it was
    built for), once per process (the dicts live in ``_QUARTERS``, so their ids stay theirs)."""
    flat = _QUARTERS_FLAT.get(id(q))
    if flat is None:
        flat = _QUARTERS_FLAT[id(q)] = [q[(a, b)] for a in types for b in types]
    return flat


def _quarters(producer, consumer, types) -> dict[tuple[PartitionType, PartitionType], int]:
    """``edge_quarters``' dict for one (producer kind, consumer kind, space types), built once per process."""
    key = (producer, consumer, types)
    q = _QUARTERS.get(key)
    if q is None:
        q = {}
        for a in types:
            for b in types:
                if producer.specs[a.index] is None or consumer.specs[b.index] is None:
                    q[(a, b)] = 0  # never chosen
                    continue
                x = 4 * node_inter_coeff(a, b, producer, consumer).total
                assert x.denominator == 1
                q[(a, b)] = int(x)
        q = _QUARTERS[key] = q
    return q


def plan_level_units(tables: CostTables, plan_types: tuple[tuple[PartitionType, ...], ...]) -> list[int]:
    """c_h in units for a plan ([level][layer] types), summed from the tables."""
    L = len(tables.network.layers)
    counts = zero_counts(L)
    out = []
    vectorise = L >= thresholds.NUMPY_FROM_LAYERS  # small networks: Python integers, and no numpy import at all
    for row in plan_types:
        c = _row_units_vectorised(tables, row, counts) if vectorise else None
        if c is None:
            c = sum(tables.intra(l, row[l], counts[l]) for l in range(L))  # noqa: E741
            c += sum(tables.inter(e, row[u], row[v], counts[v]) for e, (u, v) in enumerate(tables.edges))
        out.append(c)
        counts = advance(counts, row)
    return out


def _row_units_vectorised(tables: CostTables, row, counts: list[Counts]) -> int | None:
    """One level's c_h from ``level_arrays`` (summed exactly in Python), or None without arrays."""
    arrays = tables.level_arrays(counts)
    position = {t.index: k for k, t in enumerate(tables.types)}
    if arrays is None or any(t.index not in position for t in row):
        return None
    import numpy as np

    intra, inter = arrays
    k = np.fromiter((position[t.index] for t in row), dtype=np.int64, count=len(row))
    c = sum(intra[np.arange(len(row)), k].tolist())
    if len(inter):
        u, v = tables._producers_consumers
        c += sum(inter[np.arange(len(inter)), k[u], k[v]].tolist())
    return c


def plan_final_counts(plan_types: tuple[tuple[PartitionType, ...], ...], layers: int) -> list[Counts]:
    """Each layer's counts (one entry per type) after all levels of a plan."""
    counts: list[Counts] = zero_counts(layers)
    for row in plan_types:
        counts = advance(counts, row)
    return counts
