"""Levels of any fan-out: a level splits each group into k parts (HyPar's levels: k = 2).

Described in the manual: docs/model-implemented.md, "Levels of any fan-out".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

from .comm import WHOLE, Divisors, divide, divided_sizes, edge_amount, edge_parts, exchange_amount
from .network_memo import NetworkMemo
from .network import Network
from .siblings import sibling_charges
from .partition import (  # noqa: F401 - the primitives are re-exported: this module is the k-way interface
    Layout,
    NodeTypes,
    PartitionType,
    Size,
    allreduce_fraction,
    inter_fractions,
    node_inter_fraction,
    reduce_scatter_fraction,
    relayout_fraction,
    scattered_layouts,
)

_W = Size.WEIGHTS.index

__all__ = ["LevelAmounts", "LevelTerms", "allreduce_fraction", "check_rows", "level_amounts",
           "level_amounts_rational", "level_terms", "node_inter_fraction", "reduce_scatter_fraction",
           "relayout_fraction", "scatter_target", "scatter_targets", "scattered_layouts"]


@dataclass(frozen=True, slots=True)
class LevelAmounts:
    """Elements one group sends to the others of its level per step (one way, per group)."""

    activations: Fraction  # what scales with the batch: II/III partial sums, re-layouts on edges
    weights: Fraction  # what does not: type I weight-gradient all-reduces

    @property
    def total(self) -> Fraction:
        return self.activations + self.weights


@dataclass(frozen=True, slots=True)
class _Facts:
    """What every call needs of a network whatever the batch, fan-outs and types."""

    kinds: tuple[NodeTypes, ...]  # per node: its kind's behaviour (``Layer.node_types``)
    units: tuple[int | None, ...]  # per node: what type II must split whole (``Layer.split_units``)
    edges: tuple[tuple[int, int, int, int], ...]  # per edge: producer, consumer, its share's numerator, denominator
    consumers: tuple[tuple[int, ...], ...]  # per node: the nodes its output feeds (one per edge)
    producers: tuple[tuple[int, ...], ...]  # per node: the nodes feeding its input (one per edge)


# id(network) -> (network, facts) for the last few networks (as the evaluator's cache: the entry
# holds the network, so its id cannot be reused while it is cached).
_FACTS: NetworkMemo[_Facts] = NetworkMemo(8)


def _facts(network: Network) -> _Facts:
    hit = _FACTS.get(network)
    if hit is not None:
        return hit
    outs: list[list[int]] = [[] for _ in network.layers]
    ins: list[list[int]] = [[] for _ in network.layers]
    for u, v in network.edges:
        outs[u].append(v)
        ins[v].append(u)
    facts = _Facts(tuple(x.node_types for x in network.layers), tuple(x.split_units for x in network.layers),
                   tuple((u, v, s.numerator, s.denominator) for (u, v), s in zip(network.edges, network.edge_shares)),
                   tuple(map(tuple, outs)), tuple(map(tuple, ins)))
    return _FACTS.put(network, facts)


def check_rows(network: Network, fanouts: Sequence[int], rows: Sequence[Sequence[PartitionType]]) -> None:
    """ValueError naming the level and node unless ``rows`` has one row per fan-out, one type per
    node, every type one the node's kind takes, and type II splits whole groups/heads: the
    product of the fan-outs of the node's II levels (this one included) divides its
    ``Layer.split_units`` (under binary levels: ``Layer.split_levels``, which is stricter)."""
    if len(rows) != len(fanouts):
        raise ValueError(f"{len(rows)} rows of types for {len(fanouts)} levels")
    for k in fanouts:
        allreduce_fraction(k)  # the fan-out's own check
    facts, layers = _facts(network), network.layers
    limited = [n for n, u in enumerate(facts.units) if u is not None]
    split = dict.fromkeys(limited, 1)
    for h, (k, row) in enumerate(zip(fanouts, rows)):
        if len(row) != len(layers):
            raise ValueError(f"level {h}: {len(row)} types for {len(layers)} nodes")
        for n, (nt, t) in enumerate(zip(facts.kinds, row)):
            if t.__class__ is not PartitionType or nt.specs[t.index] is None:
                x = layers[n]
                raise ValueError(f"level {h}, node {x.name}: type {t} is not offered to {x.kind.value} nodes")
        for n in limited:
            if row[n] is PartitionType.II:
                split[n] *= k
                if facts.units[n] % split[n]:
                    x = layers[n]
                    raise ValueError(f"level {h}, node {x.name}: type II at fan-out {k} splits its {facts.units[n]} "
                                     f"{'groups' if x.groups > 1 else 'heads'} into {split[n]} parts (not whole)")


def scatter_targets(network: Network, row: Sequence[PartitionType]) -> tuple[Layout | None, ...]:
    """Per node, under one level's types ``row``: the split layout (ROW or COL) its partial-sum
    exchange may reduce-scatter into, or None (it keeps the all-reduce, or exchanges no
    activations). Type II's output F_{l+1} (forward): when every node it feeds needs its input
    F in one and the same split layout. Type III's input error E_l (backward): when every node
    feeding it needs its output error E in one and the same split layout. A node with no
    consumers (forward) or no producers (backward), a consumer needing the tensor duplicated, or
    consumers needing different layouts: None. Type I's weight gradient is never scattered."""
    facts = _facts(network)
    return tuple(_target(facts, row, n) for n in range(len(facts.kinds)))


def scatter_target(network: Network, row: Sequence[PartitionType], n: int) -> Layout | None:
    """``scatter_targets(network, row)[n]`` alone: it reads the types of node n, of its consumers
    (an output partial sum) or of its producers (an input error) only."""
    return _target(_facts(network), row, n)


_F_OUT, _F_IN = Size.F_OUT.index, Size.F_IN.index


def _target(facts: _Facts, row: Sequence[PartitionType], n: int) -> Layout | None:
    i = facts.kinds[n].exchanged[row[n].index]
    if i == _F_OUT:
        needs = {facts.kinds[v].layouts(row[v]).f_in_needed for v in facts.consumers[n]}
    elif i == _F_IN:
        needs = {facts.kinds[u].layouts(row[u]).e_out_needed for u in facts.producers[n]}
    else:
        return None
    if len(needs) != 1:
        return None
    (layout,) = needs
    return None if layout is Layout.DUP else layout


def level_amounts(network: Network, batch: int, fanouts: tuple[int, ...],
                  rows: Sequence[Sequence[PartitionType]], reduce_scatter: bool = False,
                  fused: bool = False) -> tuple[LevelAmounts, ...]:
    """Per level (top first), the elements one group sends to the others of its level per step
    (per group, one way), at batch ``batch`` (the network's own batch is not read): the sizes at
    level h divided by the fan-outs of the levels above whose type (``rows[j][node]``, as Plan
    rows) splits them. ValueError on rows that do not fit (``check_rows``).

    Exact, summed in integers: at fan-out k every amount of a level is (k-1)/k^2 times an integer
    multiple m of a size over its divisor, m from the formulas themselves (``_multiplier``: 2k for
    an all-reduce, k for an all-gather, 1 for an all-to-all), so a level is a handful of Fractions
    whatever the number of nodes. ``level_amounts_rational`` is the same sum term by term in
    Fractions, straight from ``comm`` (the reference the tests compare it with).

    ``reduce_scatter`` (default False: HyPar's model, every number as before): at every level,
    a type II node's output partial sums (forward, F_{l+1}) and a type III node's input-error
    partial sums (backward, E_l) are reduce-scattered ((k-1)/k of the tensor, not the
    all-reduce's 2(k-1)/k) into the split layout every node on the other end of that tensor
    needs (``scatter_targets``), and that tensor's re-layout on those edges starts from the
    split layout instead of duplicated (0, as the layouts agree); elsewhere the all-reduce as
    before. Megatron's sequence parallelism (Korthikanti et al. 2022): the reduce-scatter of a
    row-parallel matmul's output into the token-split residual stream, and of a
    column-parallel matmul's input error. Never more than without it (the exchange halves, the
    re-layouts it touches stay 0); equal when no II/III node has such consumers/producers.

    ``fused`` (default False: HyPar's model): sibling consumers of one tensor share its
    exchanges (``siblings.sibling_charges``: one re-layout per layout needed, one exchange of
    the summed partial sums of type III siblings; Megatron's fused QKV and gate/up). Summed term
    by term (``level_amounts_rational``)."""
    if fused:
        return level_amounts_rational(network, batch, fanouts, rows, reduce_scatter, fused)
    check_rows(network, fanouts, rows)
    facts = _facts(network)
    sizes = [(x.input_elements(batch), x.weight_elements(), x.output_elements(batch)) for x in network.layers]
    divisors: list[Divisors] = [WHOLE] * len(facts.kinds)
    out = []
    for k, row in zip(fanouts, rows):
        if k == 1:  # one part: nothing to exchange, nothing divided
            out.append(LevelAmounts(Fraction(0), Fraction(0)))
            continue
        scat = scatter_targets(network, row) if reduce_scatter else None
        out.append(_level_amount(facts, sizes, divisors, row, k, scat))
        divisors = [_divide(nt, d, t, k) for nt, d, t in zip(facts.kinds, divisors, row)]
    return tuple(out)


def _level_amount(facts, sizes, divisors: list[Divisors], row: Sequence[PartitionType], k: int,
                  scat) -> LevelAmounts:
    """One level of ``level_amounts`` at fan-out ``k`` > 1: its sizes over their ``divisors`` summed
    per divisor in integers, then times the all-to-all block (k-1)/k^2."""
    kinds = facts.kinds
    intra_w: dict[int, int] = {}  # divisor -> sum of the sizes exchanged with it (weights)
    intra_a: dict[int, int] = {}  # the same, activations
    intra_s: dict[int, int] = {}  # the same, activations reduce-scattered
    inter: dict[int, int] = {}  # divisor -> sum of m * edge tensor (times the share's numerator)
    for n, (nt, t, size, d) in enumerate(zip(kinds, row, sizes, divisors)):
        i = nt.exchanged[t.index]
        if i is not None:
            acc = intra_w if i == _W else intra_s if scat and scat[n] is not None else intra_a
            acc[d[i]] = acc.get(d[i], 0) + size[i]
    multipliers = _MULTIPLIERS
    for u, v, num, den in facts.edges:
        if scat and (scat[u] is not None or scat[v] is not None):
            m = _scattered_multiplier(kinds[u], row[u], scat[u], kinds[v], row[v], scat[v], k)
        else:
            key = (id(kinds[u]), row[u].index, id(kinds[v]), row[v].index, k)
            m = multipliers.get(key)
            if m is None:
                m = _multiplier(kinds[u], row[u], kinds[v], row[v], k)
        if m:
            den *= divisors[v][0]
            inter[den] = inter.get(den, 0) + m * sizes[v][0] * num
    unit = Fraction(k - 1, k * k)  # the all-to-all block: every amount is a whole number of them
    m_ar = allreduce_fraction(k) / unit  # 2k
    m_rs = reduce_scatter_fraction(k) / unit  # k
    return LevelAmounts(activations=unit * (m_ar * _sum(intra_a) + m_rs * _sum(intra_s) + _sum(inter)),
                        weights=unit * m_ar * _sum(intra_w))


_DIVIDED: dict[tuple, Divisors] = {}


def _divide(nt: NodeTypes, d: Divisors, t: PartitionType, k: int) -> Divisors:
    """``comm.divide``, memoised (a network has few distinct divisors)."""
    key = (id(nt), d, t.index, k)
    x = _DIVIDED.get(key)
    if x is None:
        if len(_DIVIDED) > 100_000:
            _DIVIDED.clear()
        x = _DIVIDED[key] = divide(nt, d, t, k)
    return x


def _sum(acc: dict[int, int]) -> Fraction:
    return sum((Fraction(n, d) for d, n in acc.items()), Fraction(0))


_MULTIPLIERS: dict[tuple, int] = {}


def _multiplier(producer: NodeTypes, prev: PartitionType, consumer: NodeTypes, nxt: PartitionType, k: int) -> int:
    """``node_inter_fraction`` in units of (k-1)/k^2 (an integer: 0, 1, 2, k, k+1 or 2k), memoised."""
    key = (id(producer), prev.index, id(consumer), nxt.index, k)
    m = _MULTIPLIERS.get(key)
    if m is None:
        x = node_inter_fraction(prev, nxt, producer, consumer, k) * k * k / (k - 1)
        assert x.denominator == 1, "every re-layout is a whole number of all-to-all blocks"
        m = _MULTIPLIERS[key] = int(x)  # NodeTypes are module-level singletons: their ids are stable
    return m


def _scattered_multiplier(producer: NodeTypes, prev: PartitionType, p_to: Layout | None, consumer: NodeTypes,
                          nxt: PartitionType, c_to: Layout | None, k: int) -> int:
    """``_multiplier`` with the producer's output / the consumer's input error reduce-scattered
    into ``p_to`` / ``c_to`` (``partition.scattered_layouts``), memoised."""
    key = (id(producer), prev.index, p_to, id(consumer), nxt.index, c_to, k)
    m = _MULTIPLIERS.get(key)
    if m is None:
        c = inter_fractions(scattered_layouts(producer, prev, p_to), scattered_layouts(consumer, nxt, c_to), k)
        x = c.total * k * k / (k - 1)
        assert x.denominator == 1, "every re-layout is a whole number of all-to-all blocks"
        m = _MULTIPLIERS[key] = int(x)
    return m


@dataclass(frozen=True, slots=True)
class LevelTerms:
    """One level's amounts term by term (elements one group sends, one way): each node's own
    exchange and each edge's re-layout, in the network's node and edge order."""

    intra: tuple[Fraction, ...]  # per node: its all-reduce, or reduce-scatter (``comm.exchange_amount``)
    inter: tuple[Fraction, ...]  # per edge: forward + backward re-layout (``comm.edge_amount``)
    weight_nodes: tuple[int, ...]  # the nodes whose exchange is a weight gradient (type I)
    # fused only (None otherwise): the part of the activations the forward pass sends (type II's output
    # partial sums F_{l+1}, the edges' re-layouts of F), what a recompute forward sends again (``llm_block``)
    forward: Fraction | None = None

    def amounts(self) -> LevelAmounts:
        weights = sum((self.intra[n] for n in self.weight_nodes), Fraction(0))
        return LevelAmounts(sum(self.intra, Fraction(0)) - weights + sum(self.inter, Fraction(0)), weights)


def level_terms(network: Network, batch: int, fanouts: tuple[int, ...],
                rows: Sequence[Sequence[PartitionType]], reduce_scatter: bool = False,
                fused: bool = False) -> tuple[LevelTerms, ...]:
    """Per level (top first), ``level_amounts``' terms in Fractions, straight from ``comm``: the
    evaluator's per-level structure (``evaluate_rational``'s intra and inter rows) with divisions
    by the fan-outs where it halves. For a report that says which node costs what, or a solver
    that needs per-node amounts. ``reduce_scatter``, ``fused``: as ``level_amounts`` (a shared
    exchange is charged to the first sibling, 0 to the others)."""
    check_rows(network, fanouts, rows)
    layers, edges, shares = network.layers, network.edges, network.edge_shares
    kinds = [x.node_types for x in layers]
    divisors: list[Divisors] = [WHOLE] * len(layers)
    out = []
    for h, (k, row) in enumerate(zip(fanouts, rows)):
        sized = [divided_sizes(x, batch, d) for x, d in zip(layers, divisors)]
        scat = scatter_targets(network, row) if reduce_scatter else (None,) * len(layers)
        intra = tuple(exchange_amount(x, t, s, k, scatter=to is not None)
                      for x, t, s, to in zip(layers, row, sized, scat))
        if fused:
            above = [tuple(r[n] for r in rows[:h]) for n in range(len(layers))]
            ch = sibling_charges(network, row, scat, [sized[v].f_in * share for (_u, v), share in zip(edges, shares)],
                                 above)
            intra = tuple(x if c else Fraction(0) for x, c in zip(intra, ch.intra))
            parts = [edge_parts(kinds[u], row[u], kinds[v], row[v], sized[v].f_in, share, k, scat[u], scat[v])
                     for (u, v), share in zip(edges, shares)]
            inter = tuple(f * cf + b * cb for (f, b), cf, cb in zip(parts, ch.forward, ch.backward))
            forward = sum((x for x, nt, t in zip(intra, kinds, row) if nt.exchanged[t.index] == _F_OUT), Fraction(0)) \
                + sum((f * cf for (f, _b), cf in zip(parts, ch.forward)), Fraction(0))
        else:
            inter = tuple(edge_amount(kinds[u], row[u], kinds[v], row[v], sized[v].f_in, share, k, scat[u], scat[v])
                          for (u, v), share in zip(edges, shares))
            forward = None
        weight_nodes = tuple(n for n, (nt, t) in enumerate(zip(kinds, row)) if nt.exchanged[t.index] == _W)
        out.append(LevelTerms(intra, inter, weight_nodes, forward))
        divisors = [divide(nt, d, t, k) for nt, d, t in zip(kinds, divisors, row)]
    return tuple(out)


def level_amounts_rational(network: Network, batch: int, fanouts: tuple[int, ...],
                           rows: Sequence[Sequence[PartitionType]], reduce_scatter: bool = False,
                           fused: bool = False) -> tuple[LevelAmounts, ...]:
    """``level_amounts`` term by term in Fractions (``level_terms``, summed): the reference."""
    return tuple(t.amounts() for t in level_terms(network, batch, fanouts, rows, reduce_scatter, fused))
