"""Per-node types of one transformer block at the tensor level: an exact DP over the block's nodes.

For a fixed layout (fan-out ``t``, micro-batch ``b``, ``m`` micro-batches, ``p`` stages) the types
of a block change only its tensor-level exchanges: per micro-batch the activations (partial sums
of types II/III, re-layouts on edges; charged in every stage slot, ``m + p - 1`` of them with the
bubble) and per step the weights (type I's weight-gradient all-reduce). Every block has the same
types, so the block's share of the step is

    cost(types) = (m + p - 1) * activations(types, b) + weights(types)

elements at the tensor level's bandwidth (one factor for both). The exchanges are a sum of one
term per node (``comm.exchange_amount``) and one per edge (``comm.edge_amount``, forward and
backward re-layout), with the k-way sizes of ``fanout.level_amounts`` at a single level; the edge
from the previous block's last node (whose type is this block's last node's: the same types
repeat) closes the cycle. The DP takes the nodes in order and keeps, per assignment of the nodes
an edge still needs (the residual stream, at most two or three nodes), the cheapest prefix: exact,
3 x 3^(frontier + 1) states a node instead of 3^nodes (7 nodes for a GPT block, 11 for LLaMA).
Ties go to Megatron's pattern (``llm_block.megatron_types``), then to the first in type order.

The model here is the all-reduce form (``fanout.level_amounts`` with ``reduce_scatter=False``).
The step model, under sequence parallelism, reduce-scatters partial sums into the token-split
stream where every consumer takes one split layout (``fanout.scatter_targets``: a choice that
depends on a node's type and all its consumers'), and under full recomputation sends the
forward's exchanges again; neither is in this objective. So the search
(``llm_search._score``) scores the DP's pick and Megatron's pattern with the step model and keeps
the faster: the block's types are then the better of two, not a proven optimum.

Types a node cannot take are left out: those its kind does not offer, type II at fan-out t when
t does not divide the node's heads (``fanout.check_rows``' rule), and type I for a node with
weights (a matmul): type I splits the batch and keeps the whole weight matrix on each of the t
GPUs, while the step model's memory (``llm_memory.stage_memory``) divides every parameter by t;
offering it would buy the cheap weight-only exchange of data parallelism without paying its
memory. Joins (attention, residual adds, the SwiGLU product) hold no weights and take all three,
except that the attention node takes type I only when t divides the micro-batch: with fewer
samples than GPUs a batch split cuts a sample's sequence, and attention across the cut needs the
keys and values of the other part, an exchange the model does not have (the residual adds, which
work token by token, may split it: Megatron's sequence parallelism does). tests/test_llm_search.py checks
the DP against enumerating every assignment through ``llm_block.tensor_amounts``.
"""

from __future__ import annotations

from fractions import Fraction

from ..core.comm import WHOLE, divided_sizes, edge_amount, exchange_amount
from ..core.llm_block import block_parts, edge_types, megatron_types
from ..core.network import LayerKind
from ..core.partition import PartitionType, Size

TYPES = tuple(PartitionType)
_W = Size.WEIGHTS.index


def allowed_types(layer, t: int, micro_batch: int) -> tuple[PartitionType, ...]:
    out = []
    for ty in TYPES:
        if layer.node_types.specs[ty.index] is None:
            continue
        if ty is PartitionType.I and layer.weight_elements() > 0:
            continue  # would hold the whole matrix on each of the t GPUs; the memory model splits it t ways
        if ty is PartitionType.I and layer.kind is LayerKind.ATTENTION and micro_batch % t:
            continue  # fewer samples than GPUs: a split inside a sample's sequence, whose K/V exchange is not modelled
        units = layer.split_units
        if ty is PartitionType.II and units is not None and units % t:
            continue
        out.append(ty)
    return tuple(out)


class BlockTables:
    """Unary and pairwise exchange amounts (elements) of one block at fan-out t, micro-batch b."""

    def __init__(self, network, layers: int, t: int, micro_batch: int):
        parts = block_parts(network, layers)
        rep = 1 if layers > 1 else 0
        self.nodes = parts.blocks[rep]
        pos = {k: j for j, k in enumerate(self.nodes)}
        if layers > 1:
            self.lead, self.lead_fixed = parts.blocks[0][-1], None
        else:
            pre, _post = edge_types(network, parts)
            self.lead, self.lead_fixed = (parts.pre[-1], pre[-1]) if parts.pre else (None, None)
        L = network.layers
        self.allowed = [allowed_types(L[k], t, micro_batch) for k in self.nodes]
        self.unary: list[dict[PartitionType, tuple[Fraction, Fraction]]] = []
        for k, allowed in zip(self.nodes, self.allowed):
            sizes = divided_sizes(L[k], micro_batch, WHOLE)
            row = {}
            for ty in allowed:
                a = exchange_amount(L[k], ty, sizes, t)
                is_w = L[k].node_types.exchanged[ty.index] == _W
                row[ty] = (Fraction(0), a) if is_w else (a, Fraction(0))
            self.unary.append(row)
        # edges into the block's nodes: (producer position, -1 for the lead; consumer position; table)
        self.edges: list[tuple[int, int, dict]] = []
        for e, (u, v) in enumerate(network.edges):
            if v not in pos or (u not in pos and u != self.lead):
                continue
            pu = pos.get(u, -1)
            f_in = divided_sizes(L[v], micro_batch, WHOLE).f_in
            prod_types = self.allowed[pu] if pu >= 0 else (self._lead_types())
            table = {(a, b): edge_amount(L[u].node_types, a, L[v].node_types, b, f_in, network.edge_shares[e], t)
                     for a in prod_types for b in self.allowed[pos[v]]}
            self.edges.append((pu, pos[v], table))
        self.megatron = megatron_types(network, layers)

    def _lead_types(self) -> tuple[PartitionType, ...]:
        return (self.lead_fixed,) if self.lead_fixed is not None else self.allowed[-1]

    def amounts(self, types) -> tuple[Fraction, Fraction]:
        """(activations, weights) of ``types`` (the lead takes the last node's type, or its fixed one)."""
        lead_t = self.lead_fixed if self.lead_fixed is not None else types[-1]
        act = w = Fraction(0)
        for j, ty in enumerate(types):
            a, b = self.unary[j][ty]
            act, w = act + a, w + b
        for pu, pv, table in self.edges:
            act += table[(types[pu] if pu >= 0 else lead_t, types[pv])]
        return act, w


def best_types(tables: BlockTables, act_weight: int | Fraction, w_weight: int | Fraction = 1):
    """(types, cost) minimising act_weight * activations + w_weight * weights over every assignment."""
    n = len(tables.nodes)
    last_use = [-1] * n
    into: list[list[tuple[int, dict]]] = [[] for _ in range(n)]
    for pu, pv, table in tables.edges:
        into[pv].append((pu, table))
        if pu >= 0:
            last_use[pu] = max(last_use[pu], pv)
    best = None
    for lead_t in tables._lead_types():
        states = {(): (Fraction(0), ())}
        for j in range(n):
            nxt: dict = {}
            for cost, assign in states.values():
                for ty in tables.allowed[j]:
                    if tables.lead_fixed is None and j == n - 1 and ty is not lead_t:
                        continue
                    a, w = tables.unary[j][ty]
                    c = cost + act_weight * a + w_weight * w
                    for pu, table in into[j]:
                        c += act_weight * table[(assign[pu] if pu >= 0 else lead_t, ty)]
                    new = assign + (ty,)
                    key = tuple((i, new[i]) for i in range(j + 1) if last_use[i] > j)
                    if key not in nxt or (c, _order(new)) < (nxt[key][0], _order(nxt[key][1])):
                        nxt[key] = (c, new)
            states = nxt
        for cost, assign in states.values():
            if best is None or (cost, _order(assign)) < (best[1], _order(best[0])):
                best = (assign, cost)
    mega = tuple(tables.megatron)
    if all(ty in allowed for ty, allowed in zip(mega, tables.allowed)):
        a, w = tables.amounts(mega)
        if act_weight * a + w_weight * w <= best[1]:
            return mega, act_weight * a + w_weight * w
    return best


def _order(types) -> tuple[int, ...]:
    return tuple(ty.index for ty in types)


def best_block_types(problem, t: int, micro_batch: int, slots) -> tuple[PartitionType, ...]:
    """The block's cheapest types at fan-out ``t``, micro-batch ``micro_batch``, ``slots`` = m + (p - 1)/v."""
    tables = BlockTables(problem.network, problem.dims.layers, t, micro_batch)
    return best_types(tables, slots)[0]
