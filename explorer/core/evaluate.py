"""The solver-independent evaluator: scores any plan exactly from the model, even or uneven.

The full derivation is in the manual: docs/derivations.md, "The evaluator".
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

from . import thresholds
from .array import ArraySpec
from .comm import (ZERO_COUNTS, Counts, add_type, advance, footprint_elements, inter_amount, intra_amount, network_flops,
                   whole_sizes)
from .constraints import Constraints
from .uneven import check_array as check_split_array
from .uneven import check_network as check_split_network
from .uneven import check_plan as check_split_plan
from .uneven import leaf_footprint_elements, level_shares, pair_amounts, shares_flops
from .identity_memo import once
from .network_memo import NetworkMemo
from .network import Network
from .objective import Objective
from .partition import ALL_TYPES, HALF, JOIN_NODE_TYPES, JOIN_TYPES, LAYER_TYPES, NodeTypes, Space
from .plan import Plan
from .timing import Topology, compute_time_s, energy_J, level_times, step_time


class PlanError(ValueError):
    """The plan does not fit the problem (shape, or a type outside the space)."""


@dataclass(frozen=True, slots=True)
class Evaluation:
    """A plan's exact figures. Per-layer amounts are held in integer units of 1/``unit``
    element and read as Fractions of an element (``intra``, ``inter``, ``footprint_bytes``)."""

    unit: int  # units per element: 4 * 2^H
    intra_units: tuple[tuple[int, ...], ...]  # [level][layer]
    inter_units: tuple[tuple[int, ...], ...]  # [level][edge]
    footprint_units: tuple[int, ...]  # per layer, elements in units (bytes = units * dtype / unit)
    dtype_bytes: int
    level_cost: tuple[Fraction, ...]  # c_h elements, one way, per sibling group
    traffic_elements: Fraction  # sum_h 2^h c_h
    traffic_bytes: Fraction  # 2 * dtype_bytes * traffic_elements (both directions)
    comm_time_s: Fraction  # sum_h c_h * dtype_bytes / b_h (effective level bandwidths, core.timing)
    level_time_s: tuple[Fraction, ...]
    final_counts: tuple[Counts, ...]  # per layer, after all levels
    memory_bytes: Fraction  # per accelerator: sum of footprint_bytes
    compute_s: Fraction  # training FLOPs / 2^H at the slowest accelerator's peak (timing.compute_time_s)
    step_time_s: Fraction  # compute_s + comm_time_s, or their max when the array overlaps them
    energy_J: Fraction | None  # FLOPs * pJ/FLOP + traffic bytes * pJ/byte + static power * step (core.timing)
    leaf_compute_s: tuple[Fraction, ...]  # per accelerator, tree order
    leaf_comm_s: tuple[Fraction, ...]  # per accelerator: its groups' exchange times summed
    leaf_time_s: tuple[Fraction, ...]  # per accelerator: step_time(compute, comm)
    group_amounts: tuple[tuple[tuple[Fraction, Fraction], ...], ...]  # [level][group]: elements each side sends
    group_comm_s: tuple[tuple[Fraction, ...], ...]  # [level][group]
    leaf_memory_bytes: tuple[Fraction, ...]  # per accelerator: its footprint times dtype

    @property
    def intra(self) -> tuple[tuple[Fraction, ...], ...]:
        """[level][layer] intra-layer amounts, elements."""
        return tuple(tuple(Fraction(x, self.unit) for x in row) for row in self.intra_units)

    @property
    def inter(self) -> tuple[tuple[Fraction, ...], ...]:
        """[level][edge] inter-layer amounts, elements."""
        return tuple(tuple(Fraction(x, self.unit) for x in row) for row in self.inter_units)

    @property
    def footprint_bytes(self) -> tuple[Fraction, ...]:
        """Per layer, per accelerator."""
        return tuple(Fraction(x * self.dtype_bytes, self.unit) for x in self.footprint_units)

    def objective_value(self, objective: Objective) -> Fraction:
        """Traffic in elements, or the step time in seconds (the ``time`` objective: compute + comm)."""
        return self.traffic_elements if objective is Objective.TRAFFIC else self.step_time_s

    def subtree_time_s(self, level: int, group: int) -> Fraction:
        """The slowest leaf of a group (its step time, including the exchanges above it)."""
        n = len(self.leaf_time_s) >> level
        return max(self.leaf_time_s[group * n : (group + 1) * n])

    def top_groups(self) -> tuple[Fraction, Fraction, Fraction]:
        """(time of subgroup 0, time of subgroup 1, idle time of the faster) at the top level."""
        t0, t1 = self.subtree_time_s(1, 0), self.subtree_time_s(1, 1)
        return t0, t1, abs(t0 - t1)


def check_plan(network: Network, array: ArraySpec, space: Space, plan: Plan) -> None:
    """PlanError unless the plan has the problem's shape and only types the space (and joins) allow."""
    H, L = array.levels, len(network.layers)
    if plan.levels != H or any(len(row) != L for row in plan.types):
        raise PlanError(f"plan has shape {plan.levels}x{plan.layers}, problem needs {H} levels x {L} layers")
    types = space.types
    facts = _network_facts(network)
    joins, limited = facts.join_layers, facts.limited
    for h, row in enumerate(plan.types):
        if not all(map(types.__contains__, row)):
            l = next(l for l, t in enumerate(row) if t not in types)  # noqa: E741
            raise PlanError(f"level {h}, layer {network.layers[l].name}: type {row[l]} is not in the {space} space")
        for l in joins:  # noqa: E741
            if row[l] not in JOIN_TYPES:
                raise PlanError(f"level {h}, join {network.layers[l].name}: type {row[l]} is not offered to joins")
        for l in limited:  # noqa: E741
            if not network.layers[l].offers(row[l], h):
                raise PlanError(f"level {h}, layer {network.layers[l].name}: type {row[l]} is not offered to a "
                                f"{network.layers[l].kind.value} node at this level")


def evaluate(network: Network, array: ArraySpec, space: Space, plan: Plan, weight_copies: int = 0) -> Evaluation:
    """The exact evaluation of any plan: in integer units when every split is 1/2, else
    ``evaluate_split`` (docs/derivations.md, "The evaluator")."""
    if plan.alphas:
        check_plan(network, array, space, plan)
        check_split_plan(network, array, plan)  # the alphas' shape and range, whole groups
        if not plan.is_even:
            return evaluate_split(network, array, plan, weight_copies)
    facts = _network_facts(network)
    check_plan(network, array, space, plan)
    if facts.edge_f is None:  # an edge tensor that is not a whole number of elements
        return evaluate_rational(network, array, space, plan, weight_copies)
    H = array.levels
    unit = 4 * 2**H
    coeff = _coefficients(unit, network.batch, H)
    amounts = _amounts_arrays(facts, plan, coeff, weight_copies) if facts.arrays is not None else None
    if amounts is None:
        amounts = _amounts(network, facts, plan, coeff, weight_copies)
    intra, inter, footprint, final = amounts
    level_units = [sum(a) + sum(b) for a, b in zip(intra, inter)]
    return _finish(network, array, unit, intra, inter, footprint, level_units, final, facts.flops)


def _amounts(network: Network, facts: "_Facts", plan: Plan, coeff: "_Coefficients", weight_copies: int):
    """(intra [level][layer], inter [level][edge], footprint [layer], final counts [layer]) in units.
    A layer's amounts depend on its column of types (one per level) and whether it is a join;
    the coefficients are memoised per column, per (type, counts) and per edge's pair of columns."""
    columns = _columns(plan)
    joins = facts.joins
    intra_cols, footprint, final = [], [], []
    for (f, w, o), col, j in zip(facts.sizes, columns, joins):
        c = coeff.column(col, j)
        intra_cols.append([f * kf + w * kw + o * ko for kf, kw, ko in c.intra])
        kf, kw, ko = coeff.footprint(c, weight_copies)
        footprint.append(f * kf + w * kw + o * ko)
        final.append(c.final_counts)
    inter_cols = [[e * k for k in coeff.edge(columns[u], columns[v], joins[u], joins[v])]
                  for (u, v), e in zip(network.edges, facts.edge_f)]
    H = plan.levels
    intra = tuple(zip(*intra_cols)) if intra_cols else ((),) * H
    inter = tuple(zip(*inter_cols)) if inter_cols else ((),) * H
    return intra, inter, tuple(footprint), final


def _amounts_arrays(facts: "_Facts", plan: Plan, coeff: "_Coefficients", weight_copies: int):
    """``_amounts`` with numpy across layers (``evaluate_arrays``); None where int64 might overflow."""
    from .evaluate_arrays import layer_amounts, plan_codes

    sizes, node_ids, node_types, edges, edge_f = facts.arrays
    return layer_amounts(sizes, node_ids, node_types, edges, edge_f, plan_codes(plan.types, _CODE), coeff, weight_copies)


@dataclass(frozen=True, slots=True)
class _Facts:
    """What the integer pass needs of a network whatever the plan."""

    sizes: list[tuple[int, int, int]]  # per node: A(F_l), A(W_l), A(F_{l+1}) in elements
    joins: list[NodeTypes]  # per node: its kind's behaviour (join, layer, grouped conv, embedding)
    join_layers: list[int]
    limited: list[int]  # nodes whose kind limits their types beyond joins (grouped conv, heads, embedding)
    edge_f: list[int] | None  # per edge: its tensor in elements; None when one is not whole
    flops: int  # training FLOPs of one step
    arrays: tuple | None  # the same as numpy arrays (``_amounts_arrays``), for large networks


# id(network) -> (network, facts) for the last few networks: a run scores four plans of one
# network. The entry holds the network, so its id cannot be reused while it is cached.
_FACTS: NetworkMemo[_Facts] = NetworkMemo(4)


def _network_facts(network: Network) -> _Facts:
    hit = _FACTS.get(network)
    if hit is not None:
        return hit
    sizes = whole_sizes(network)
    joins = [x.node_types for x in network.layers]  # the kind's behaviour keys the coefficients
    edge_f: list[int] | None = []
    for (_, v), share in zip(network.edges, network.edge_shares):
        x = sizes[v][0] * share.numerator
        if x % share.denominator:
            edge_f = None
            break
        edge_f.append(x // share.denominator)
    limited = [n for n, (x, nt) in enumerate(zip(network.layers, joins))
               if nt not in (LAYER_TYPES, JOIN_NODE_TYPES) or x.split_levels is not None]
    facts = _Facts(sizes, joins, [n for n, x in enumerate(network.layers) if x.is_join], limited, edge_f,
                   network_flops(network), _arrays(network, sizes, joins, edge_f))
    return _FACTS.put(network, facts)


def _arrays(network: Network, sizes: list, joins: list[NodeTypes], edge_f: list[int] | None) -> tuple | None:
    """(sizes, node ids, node types, edges, edge tensors) as arrays for ``_amounts_arrays``; None for
    small networks, or sizes int64 cannot hold."""
    if len(sizes) < thresholds.NUMPY_FROM_LAYERS or edge_f is None:
        return None
    from .evaluate_arrays import as_arrays  # numpy: only for networks this large

    return as_arrays(sizes, joins, network.edges, edge_f)


def evaluate_rational(network: Network, array: ArraySpec, space: Space, plan: Plan, weight_copies: int = 0) -> Evaluation:
    """The same evaluation in Fraction arithmetic, straight from ``comm`` layer by layer (the reference)."""
    check_plan(network, array, space, plan)
    H, L, B = array.levels, len(network.layers), network.batch
    unit = 4 * 2**H
    counts: list[Counts] = [ZERO_COUNTS] * L
    intra_rows, inter_rows = [], []
    for h in range(H):
        row = plan.types[h]
        intra = tuple(intra_amount(network.layers[l], B, row[l], counts[l]) for l in range(L))  # noqa: E741
        inter = tuple(
            inter_amount(network.layers[v], B, row[u], row[v], counts[v], share, producer=network.layers[u])
            for (u, v), share in zip(network.edges, network.edge_shares)
        )
        intra_rows.append(tuple(_to_units(x, unit) for x in intra))
        inter_rows.append(tuple(_to_units(x, unit) for x in inter))
        counts = advance(counts, row)
    footprint = tuple(_to_units(footprint_elements(network.layers[l], B, counts[l], weight_copies), unit) for l in range(L))  # noqa: E741
    level_units = [sum(a) + sum(b) for a, b in zip(intra_rows, inter_rows)]
    flops = network_flops(network)
    return _finish(network, array, unit, tuple(intra_rows), tuple(inter_rows), footprint, level_units, counts, flops)


def _to_units(x: Fraction, unit: int) -> int:
    u = x * unit
    assert u.denominator == 1, f"{x} elements is not a multiple of 1/{unit} (model.md section 7)"
    return int(u)


def _finish(network: Network, array: ArraySpec, unit: int, intra, inter, footprint, level_units, counts, flops: int) -> Evaluation:
    """The per-plan totals, from the per-layer amounts in units."""
    level_cost = tuple(Fraction(c, unit) for c in level_units)
    traffic = Fraction(sum(c << h for h, c in enumerate(level_units)), unit)
    dtype = array.dtype_bytes
    level_time = level_times(level_cost, array)
    compute = compute_time_s(flops, array)
    comm = sum(level_time, Fraction(0))
    step = step_time(compute, comm, array.overlap)
    n = array.accelerators
    leaf_compute, leaf_time = _leaf_times(flops, comm, array)
    memory = Fraction(sum(footprint) * dtype, unit)
    return _evaluation(array, flops, step, 2 * traffic, intra_units=intra, inter_units=inter, footprint_units=footprint,
                       level_cost=level_cost, comm_time_s=comm, level_time_s=level_time, final_counts=tuple(counts),
                       memory_bytes=memory, compute_s=compute, leaf_compute_s=leaf_compute, leaf_comm_s=(comm,) * n,
                       leaf_time_s=leaf_time, group_amounts=tuple(((c, c),) * 2**h for h, c in enumerate(level_cost)),
                       group_comm_s=tuple((t,) * 2**h for h, t in enumerate(level_time)), leaf_memory_bytes=(memory,) * n)


def _evaluation(array: ArraySpec, flops: int, step: Fraction, sent: Fraction, **fields) -> Evaluation:
    """An Evaluation, with what both passes derive alike from the elements ``sent`` (every side of
    every group) and the step time: traffic, its bytes, the energy."""
    dtype = array.dtype_bytes
    return Evaluation(unit=4 * 2**array.levels, dtype_bytes=dtype, traffic_elements=sent / 2, traffic_bytes=sent * dtype,
                      step_time_s=step, energy_J=energy_J(flops, sent * dtype, step, array), **fields)


def _leaf_times(flops: int, comm: Fraction, array: ArraySpec) -> tuple[tuple[Fraction, ...], tuple[Fraction, ...]]:
    """Per accelerator: its 1/2^H of the FLOPs at its own peak (``compute_time_s`` is the
    slowest's), and its step time with ``comm``; computed once per kind."""
    n = array.accelerators
    peaks = array.leaf_peaks_TFLOPS() if array.leaves else (array.peak_TFLOPS,)
    per_kind = dict(zip(map(id, peaks), peaks))  # id(peak) -> (compute, time): one entry per kind
    share = Fraction(flops, n * 10**12)  # one accelerator's FLOPs in tera (an array of 100,000 kinds: one division each)
    for k, p in per_kind.items():
        c = share / p
        per_kind[k] = (c, step_time(c, comm, array.overlap))
    if len(per_kind) == 1:
        c, t = next(iter(per_kind.values()))
        return (c,) * n, (t,) * n
    return tuple(per_kind[id(p)][0] for p in peaks), tuple(per_kind[id(p)][1] for p in peaks)


def evaluate_split(network: Network, array: ArraySpec, plan: Plan, weight_copies: int = 0) -> Evaluation:
    """The exact evaluation of a plan with split fractions (any alphas; none given: every split
    1/2), group by group, in integers (``core.split_amounts``; docs/derivations.md, "The evaluator"). Per-level links
    of an H-tree or a torus (link by link where a split below the top is uneven: ``torus_comm``)."""
    from .split_amounts import split_amounts  # uneven splits only: an even plan's run does not load them

    plan = _checked_split(network, array, plan)
    return split_evaluation(network, array, *split_amounts(network, array, plan, weight_copies),
                            comm=torus_comm(network, array, plan))


def torus_comm(network: Network, array: ArraySpec, plan: Plan, shares=None):
    """[level][group] -> the group's exchange seconds on a torus whose splits below the top are not
    all 1/2: its busiest directed link's, ``torus_links.link_seconds`` (Fractions; ``shares``: the
    plan's ``level_shares`` where the caller has them); None elsewhere (the pair formula
    max(side 0, side 1) * dtype / b_h, which those links equal there)."""
    if array.topology is not Topology.TORUS or all(a == HALF for level in plan.alphas[1:] for row in level for a in row):
        return None
    from .torus_links import link_seconds

    return link_seconds(network, array, plan, shares)


def _checked_split(network: Network, array: ArraySpec, plan: Plan) -> Plan:
    check_split_array(array)
    check_split_network(network)
    if not plan.alphas:
        plan = Plan.even(plan)
    check_split_plan(network, array, plan)
    return plan


def evaluate_split_rational(network: Network, array: ArraySpec, plan: Plan, weight_copies: int = 0) -> Evaluation:
    """``evaluate_split`` in Fractions, straight from ``core.uneven``'s shares and amounts (the reference)."""
    plan = _checked_split(network, array, plan)
    H = array.levels
    whole = whole_sizes(network)
    shares = level_shares(network, plan)
    amounts = []
    for h in range(H):
        memo: dict = {}  # (shares row, alphas) -> amounts: groups alike are scored once
        row = []
        for g in range(2**h):
            key = (id(shares[h][g]), plan.alphas[h][g])
            if key not in memo:
                memo[key] = pair_amounts(network, whole, plan.types[h], plan.alphas[h][g], shares[h][g])
            row.append(memo[key])
        amounts.append(tuple(row))
    peaks = array.leaf_peaks_TFLOPS()
    per_row: dict = {}  # id(leaf shares row) -> (FLOPs, footprint elements)
    for r in shares[H]:
        if id(r) not in per_row:
            per_row[id(r)] = (shares_flops(network, r), leaf_footprint_elements(network, r, weight_copies))
    compute = tuple(per_row[id(r)][0] / (peaks[i] * 10**12) for i, r in enumerate(shares[H]))
    memory = tuple(per_row[id(r)][1] * array.dtype_bytes for r in shares[H])
    return split_evaluation(network, array, tuple(amounts), compute, memory, comm=torus_comm(network, array, plan, shares))


def split_evaluation(network: Network, array: ArraySpec, amounts, compute, memory, comm=None) -> Evaluation:
    """The Evaluation of per-group amounts ([level][group] -> elements each side sends), per-leaf
    compute seconds and per-leaf memory bytes: a pair's exchange takes max(side 0, side 1) *
    dtype / b_h (or ``comm``'s [level][group] seconds: ``torus_comm``); a leaf's step time is
    ``step_time`` of its compute and its groups' exchanges."""
    H, dtype = array.levels, array.dtype_bytes
    if comm is None:  # groups alike share their amounts' object (``split_amounts``): each scored once
        comm = tuple(_each_once(lambda p, b=array.bandwidth_Bps(h): max(p) * dtype / b, row) for h, row in enumerate(amounts))
    above = [Fraction(0)]  # per group of a level: its ancestors' exchange times and its own, summed top down
    for h in range(H):
        memo: dict = {}
        above = [once(memo, Fraction.__add__, above[g >> 1], comm[h][g >> 1]) for g in range(2 ** (h + 1))]
    leaf_comm = tuple(above)
    memo = {}
    leaf_time = tuple(once(memo, lambda c, m: step_time(c, m, array.overlap), c, m) for c, m in zip(compute, leaf_comm))
    counts: dict = {}  # id(pair) -> (pair, how many groups hold it)
    for row in amounts:
        for p in row:
            counts[id(p)] = (p, counts.get(id(p), (p, 0))[1] + 1)
    sent = sum(((s0 + s1) * n for (s0, s1), n in counts.values()), Fraction(0))  # elements, every side, every group
    flops = network_flops(network)
    return _evaluation(array, flops, _max(leaf_time), sent, intra_units=(), inter_units=(), footprint_units=(),
                       level_cost=tuple(max(max(p) for p in _distinct(row)) for row in amounts), comm_time_s=_max(leaf_comm),
                       level_time_s=tuple(_max(row) for row in comm), final_counts=(), memory_bytes=_max(memory),
                       compute_s=_max(compute), leaf_compute_s=compute, leaf_comm_s=leaf_comm, leaf_time_s=leaf_time,
                       group_amounts=amounts, group_comm_s=comm, leaf_memory_bytes=memory)


def _each_once(f, xs) -> tuple:
    memo: dict = {}
    return tuple(once(memo, f, x) for x in xs)


def _distinct(xs):
    """The distinct objects of ``xs`` (by identity: equal values may repeat)."""
    return {id(x): x for x in xs}.values()


def _max(xs):
    return max(_distinct(xs))


@dataclass(frozen=True, slots=True)
class _Probe:
    """A node with given tensor sizes A(F_l), A(W_l), A(F_{l+1}) (elements, any batch): fed to
    ``comm``'s functions, it yields the coefficient of each size in an amount."""

    node_types: NodeTypes
    f_in: int
    weights: int
    f_out: int

    @property
    def is_join(self) -> bool:
        return self.node_types.join

    def input_elements(self, batch: int) -> int:
        return self.f_in

    def weight_elements(self) -> int:
        return self.weights

    def output_elements(self, batch: int) -> int:
        return self.f_out


_UNIT_VECTORS = ((1, 0, 0), (0, 1, 0), (0, 0, 1))


class _Probes(dict):
    """NodeTypes -> its three probes (one per tensor size), made on first use."""

    def __missing__(self, node_types: NodeTypes) -> tuple[_Probe, ...]:
        p = self[node_types] = tuple(_Probe(node_types, *v) for v in _UNIT_VECTORS)
        return p


# PartitionType members are singletons; keying by id() avoids Enum.__hash__ (slow, Python-level)
# in the per-layer loop.
_CODE = {id(t): k for k, t in enumerate(ALL_TYPES)}


def _columns(plan: Plan) -> list[tuple[int, ...]]:
    """Per layer, its types over the levels as positions in ``ALL_TYPES``."""
    code = _CODE
    return [tuple([code[id(t)] for t in col]) for col in zip(*plan.types)]


@dataclass(frozen=True, slots=True)
class _Column:
    """Coefficients (units per element of A(F_l), A(W_l), A(F_{l+1})) of a layer with a given
    column of types: its intra amount at each level, and the footprint after the last level."""

    intra: tuple[tuple[int, int, int], ...]  # [level]
    counts: tuple[Counts, ...]  # [level]: the counts before the level's choice
    final_counts: Counts
    footprints: dict  # weight_copies -> coefficients, filled on use
    join: bool


@lru_cache(maxsize=4)
def _coefficients(unit: int, batch: int, levels: int) -> "_Coefficients":
    """One memo per problem shape, shared by the plans a run scores (the solver's and the baselines)."""
    return _Coefficients(unit, batch, levels)


class _Coefficients:
    """Memoised coefficients of ``comm``'s amounts, in units per element of each tensor size."""

    def __init__(self, unit: int, batch: int, levels: int) -> None:
        self.unit, self.batch, self.levels = unit, batch, levels
        self._probes = _Probes()
        self._columns: dict = {}
        self._edges: dict = {}
        self._inter: dict = {}
        self._intra: dict = {}
        self._advance: dict = {}
        self._footprints: dict = {}

    def _units(self, x: Fraction) -> int:
        return _to_units(Fraction(x), self.unit)

    def column(self, col: tuple[int, ...], join: bool) -> _Column:
        key = (col, join)
        c = self._columns.get(key)
        if c is None:
            counts, intra, seen = ZERO_COUNTS, [], []
            for k in col:
                seen.append(counts)
                intra.append(self.intra_of(k, counts, join))
                counts = self._next_counts(counts, k)
            c = self._columns[key] = _Column(tuple(intra), tuple(seen), counts, {}, join)
        return c

    def intra_of(self, k: int, counts: Counts, join) -> tuple[int, int, int]:
        """Units per element of each tensor size in the intra amount of type ``ALL_TYPES[k]`` after
        ``counts``, for a node of kind ``join`` (its ``NodeTypes``)."""
        key = (k, counts, join)
        x = self._intra.get(key)
        if x is None:
            x = self._intra[key] = tuple(self._units(intra_amount(p, self.batch, ALL_TYPES[k], counts)) for p in self._probes[join])
        return x

    def _next_counts(self, counts: Counts, k: int) -> Counts:
        key = (counts, k)
        x = self._advance.get(key)
        if x is None:
            x = self._advance[key] = add_type(counts, ALL_TYPES[k])
        return x

    def footprint(self, c: _Column, weight_copies: int) -> tuple[int, int, int]:
        k = c.footprints.get(weight_copies)
        if k is None:  # it depends on the final counts alone: shared by every column that ends with them
            k = c.footprints[weight_copies] = self.footprint_of(c.final_counts, c.join, weight_copies)
        return k

    def footprint_of(self, final_counts: Counts, join, weight_copies: int) -> tuple[int, int, int]:
        """Units per element of each tensor size in the footprint of a node of kind ``join`` after ``final_counts``."""
        key = (final_counts, join, weight_copies)
        k = self._footprints.get(key)
        if k is None:
            k = self._footprints[key] = tuple(
                self._units(footprint_elements(p, self.batch, final_counts, weight_copies)) for p in self._probes[join])
        return k

    def edge(self, prev: tuple[int, ...], nxt: tuple[int, ...], prev_join: bool, next_join: bool) -> list[int]:
        """Per level, units per element of the edge's tensor (the consumer's input, times its share)."""
        key = (prev, nxt, prev_join, next_join)
        k = self._edges.get(key)
        if k is None:
            counts = self.column(nxt, next_join).counts
            k = self._edges[key] = [self.inter_of(a, b, c, prev_join, next_join) for a, b, c in zip(prev, nxt, counts)]
        return k

    def inter_of(self, a: int, b: int, counts: Counts, prev_join, next_join) -> int:
        """Units per element of an edge's tensor at a level where the producer (kind ``prev_join``)
        takes ``ALL_TYPES[a]`` and the consumer (kind ``next_join``, ``counts`` above) ``ALL_TYPES[b]``."""
        key = (a, b, counts, prev_join, next_join)
        k = self._inter.get(key)
        if k is None:
            probe = self._probes[next_join][0]
            k = self._inter[key] = self._units(inter_amount(probe, self.batch, ALL_TYPES[a], ALL_TYPES[b], counts, Fraction(1),
                                                            producer=self._probes[prev_join][0]))
        return k


@dataclass(frozen=True, slots=True)
class Violation:

    constraint: str
    limit_bytes: Fraction
    actual_bytes: Fraction
    memory: bool = False  # a memory limit (its bytes are memory, binary units), not a cap or a pin

    @property
    def excess_bytes(self) -> Fraction:
        return self.actual_bytes - self.limit_bytes


def violations(ev: Evaluation, constraints: Constraints, array: ArraySpec, plan: Plan) -> list[Violation]:
    """Every constraint the evaluated plan breaks, with by how much (pins/forbids as 0 vs 1)."""
    out = []
    for cap in constraints.caps:
        actual = ev.level_cost[cap.level] * array.dtype_bytes
        if actual > cap.bytes:
            out.append(Violation(cap.name, cap.bytes, actual))
    if constraints.memory_bytes is not None and ev.memory_bytes > constraints.memory_bytes:
        out.append(Violation(constraints.memory_name, constraints.memory_bytes, ev.memory_bytes, memory=True))
    named = sorted({p.layer for p in constraints.pins} | {f.layer for f in constraints.forbids})
    for h, row in enumerate(plan.types):
        for l in named:  # noqa: E741 - only layers a pin or forbid names can break one
            t = row[l]
            for p in constraints.pins:
                if p.layer == l and p.level in (None, h) and t is not p.type:
                    out.append(Violation(f"{p.name} (level {h} has {t})", Fraction(0), Fraction(1)))
            for f in constraints.forbids:
                if f.layer == l and t is f.type:
                    out.append(Violation(f"{f.name} (level {h})", Fraction(0), Fraction(1)))
    return out
