"""A transformer network cut into its parts: the nodes before the first block (embedding), the
L identical blocks, the nodes after the last (LM head); per part its training FLOPs and its
tensor-level exchanges (``fanout.level_amounts``, sibling consumers sharing theirs: ``core.siblings``) at
fan-out t. Used by ``core.llm_step``.

The derivation: docs/derivations.md, "`explorer.core.llm_block`".
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from .network import Layer, LayerKind, Network
from .network_memo import NetworkMemo
from .comm import WHOLE, divided_sizes, edge_parts, exchange_amount
from .partition import Layout, PartitionType, Size

I, II, III = PartitionType.I, PartitionType.II, PartitionType.III


@dataclass(frozen=True, slots=True)
class BlockParts:
    """Node positions: ``pre`` (before block 0), ``blocks[i]`` (block i), ``post`` (after the last)."""

    pre: tuple[int, ...]
    blocks: tuple[tuple[int, ...], ...]
    post: tuple[int, ...]

    @property
    def block_len(self) -> int:
        return len(self.blocks[0])


_FACTS: NetworkMemo[dict] = NetworkMemo(16)  # per network: block_parts by layer count, producers, gated


def _facts(network: Network) -> dict:
    """The memo of ``network``'s derived facts (a search asks for them once per layout it scores)."""
    facts = _FACTS.get(network)
    return facts if facts is not None else _FACTS.put(network, {})


def block_parts(network: Network, layers: int) -> BlockParts:
    """Cut ``network`` into its pre part, ``layers`` blocks and post part (ValueError if it is not
    a stack of ``layers`` identical blocks); memoised per network and layer count."""
    facts = _facts(network)
    key = ("parts", layers)
    if key not in facts:
        facts[key] = _block_parts(network, layers)
    return facts[key]


def _block_parts(network: Network, layers: int) -> BlockParts:
    kinds = [n.kind for n in network.layers]
    fcs = [k for k, kd in enumerate(kinds) if kd is LayerKind.FC]
    adds = [k for k, kd in enumerate(kinds) if kd is LayerKind.ADD]
    if not fcs or not adds:
        raise ValueError(f"network {network.name}: not a transformer (no fc or add nodes)")
    first, last = fcs[0], adds[-1]
    body = last + 1 - first
    if layers < 1 or body % layers:
        raise ValueError(f"network {network.name}: {body} block nodes do not split into {layers} layers")
    n = body // layers
    blocks = tuple(tuple(range(first + i * n, first + (i + 1) * n)) for i in range(layers))
    shape = [(network.layers[k].kind, network.layers[k].in_channels, network.layers[k].out_channels) for k in blocks[0]]
    for blk in blocks[1:]:
        if [(network.layers[k].kind, network.layers[k].in_channels, network.layers[k].out_channels)
                for k in blk] != shape:
            raise ValueError(f"network {network.name}: its {layers} blocks are not identical")
    return BlockParts(tuple(range(first)), blocks, tuple(range(last + 1, len(kinds))))


def _producers(network: Network) -> tuple[tuple[int, ...], ...]:
    facts = _facts(network)
    if "producers" not in facts:
        preds: list[list[int]] = [[] for _ in network.layers]
        for u, v in network.edges:
            preds[v].append(u)
        facts["producers"] = tuple(tuple(p) for p in preds)
    return facts["producers"]


def megatron_types(network: Network, layers: int) -> tuple[PartitionType, ...]:
    """Megatron's pattern (module docstring) for the nodes of one block, in block order (memoised)."""
    facts = _facts(network)
    key = ("megatron", layers)
    if key not in facts:
        parts = block_parts(network, layers)
        facts[key] = tuple(_megatron_types(network, parts.blocks[min(1, layers - 1)]))
    return facts[key]


def _megatron_types(network: Network, nodes) -> list[PartitionType]:
    preds = _producers(network)
    chosen: dict[int, PartitionType] = {}
    for k in nodes:
        node = network.layers[k]
        src = [network.layers[u] for u in preds[k]]
        if node.kind is LayerKind.ATTENTION:
            t = II
        elif node.kind is LayerKind.ADD:  # a product of two column-parallel matmuls (SwiGLU) or a residual
            t = II if src and all(s.kind is LayerKind.FC for s in src) else I
        elif node.kind is LayerKind.FC:  # row-parallel after an attention/product or a column-parallel fc
            before = [chosen.get(u) for u in preds[k]]
            t = II if any((s.is_join and b is II) or (s.kind is LayerKind.FC and b is III)
                          for s, b in zip(src, before)) else III
        else:
            t = III
        chosen[k] = t
    return [chosen[k] for k in nodes]


def has_gated_mlp(network: Network, layers: int) -> bool:
    """Whether a block multiplies two matmuls' outputs (an add-kind join fed by two fc nodes:
    LLaMA's SwiGLU product), i.e. is a LLaMA-style block rather than a GPT one."""
    facts = _facts(network)
    key = ("gated", layers)
    if key not in facts:
        parts = block_parts(network, layers)
        preds = _producers(network)
        facts[key] = any(network.layers[k].kind is LayerKind.ADD and len(preds[k]) > 1
                         and all(network.layers[u].kind is LayerKind.FC for u in preds[k]) for k in parts.blocks[0])
    return facts[key]


def edge_types(network: Network, parts: BlockParts) -> tuple[tuple[PartitionType, ...], tuple[PartitionType, ...]]:
    """Megatron's types of the pre and post nodes: the token embedding (the widest) II, other
    embeddings III, joins I; the head fc III."""
    widest = max((network.layers[k].in_channels for k in parts.pre
                  if network.layers[k].kind is LayerKind.EMBEDDING), default=0)

    def pre_type(k: int) -> PartitionType:
        node = network.layers[k]
        if node.kind is LayerKind.EMBEDDING:
            return II if node.in_channels == widest else III
        return I if node.is_join else III
    pre = tuple(pre_type(k) for k in parts.pre)
    post = tuple(I if network.layers[k].is_join else III for k in parts.post)
    return pre, post


def tied_head(network: Network, hidden: int, vocab: int) -> Layer:
    """The logit layer of a head tied to the token embedding, as an fc node (the network leaves it out)."""
    seq = network.sequence or 1
    return Layer("lm_head (tied to the embedding)", LayerKind.FC, hidden, vocab, in_size=(seq, 1), out_size=(seq, 1))


def subnetwork(network: Network, nodes: tuple[int, ...], extra: tuple[Layer, ...] = (), lead: int | None = None,
               batch: int | None = None) -> Network:
    """The nodes ``nodes`` (with ``lead``, the producer feeding them, first; then ``extra`` nodes
    fed by the last one) and the edges among them, at ``batch``."""
    keep = ([lead] if lead is not None else []) + list(nodes)
    pos = {k: i for i, k in enumerate(keep)}
    edges, shares = [], []
    for e, (u, v) in enumerate(network.edges):
        if u in pos and v in pos:
            edges.append((pos[u], pos[v]))
            shares.append(network.edge_shares[e])
    layers = [network.layers[k] for k in keep] + list(extra)
    for j in range(max(len(keep), 1), len(layers)):
        edges.append((j - 1, j))
        shares.append(Fraction(1))
    order = sorted(range(len(edges)), key=lambda e: edges[e])
    return Network(f"{network.name}[part]", network.batch if batch is None else batch, tuple(layers),
                   tuple(edges[e] for e in order), network.source, tuple(shares[e] for e in order),
                   network.sequence)


def forward_flops(layers, batch: int) -> int:
    """Forward FLOPs of ``layers`` (2 per multiply-accumulate)."""
    return sum(2 * x.forward_macs(batch) for x in layers)


@dataclass(frozen=True, slots=True)
class TensorAmounts:
    """Elements one GPU sends at the tensor level (fan-out t): ``activations`` per micro-batch
    (they scale with it), ``weights`` per step (type I weight-gradient exchanges), and
    ``forward``, the part of ``activations`` the forward pass sends (what a recompute forward
    sends again)."""

    activations: Fraction
    weights: Fraction
    forward: Fraction = Fraction(0)


def node_term(sub: Network, n: int, ty: PartitionType, t: int, micro_batch: int,
              scatter: Layout | None = None, charged: bool = True) -> TensorAmounts:
    """Node ``n``'s own exchange at one tensor level of fan-out t (``comm.exchange_amount``, as
    ``fanout.level_terms``' intra term), reduce-scattered when ``scatter`` (its
    ``fanout.scatter_targets`` entry) is not None: activations (with their forward part, type II's
    output partial sums F_{l+1}) or weights (type I's weight gradient); none when not ``charged``
    (an earlier type III sibling exchanges the summed partial sums: ``siblings.sibling_charges``)."""
    node = sub.layers[n]
    i = node.node_types.exchanged[ty.index]
    if i is None or not charged:
        return TensorAmounts(Fraction(0), Fraction(0))
    x = exchange_amount(node, ty, divided_sizes(node, micro_batch, WHOLE), t, scatter=scatter is not None)
    if i == Size.WEIGHTS.index:
        return TensorAmounts(Fraction(0), x)
    return TensorAmounts(x, Fraction(0), x if i == Size.F_OUT.index else Fraction(0))


def edge_term(sub: Network, e: int, prev: PartitionType, nxt: PartitionType, t: int, micro_batch: int,
              producer_scatter: Layout | None = None, consumer_scatter: Layout | None = None,
              charged: tuple[bool, bool] = (True, True)) -> TensorAmounts:
    """Edge ``e``'s forward + backward re-layout (``comm.edge_parts``, as ``fanout.level_terms``'
    inter term) with its forward part, the producer of type ``prev``, the consumer of type
    ``nxt``, their reduce-scatters as given; ``charged``: (forward, backward), False where an
    earlier sibling edge moves the same tensor (``siblings.sibling_charges``)."""
    u, v = sub.edges[e]
    pu, pv = sub.layers[u].node_types, sub.layers[v].node_types
    f_in = divided_sizes(sub.layers[v], micro_batch, WHOLE).f_in
    f, b = edge_parts(pu, prev, pv, nxt, f_in, sub.edge_shares[e], t, producer_scatter, consumer_scatter)
    f, b = f if charged[0] else Fraction(0), b if charged[1] else Fraction(0)
    return TensorAmounts(f + b, Fraction(0), f)


def edge_tensors(sub: Network) -> list[Fraction]:
    """Per edge of ``sub``, the elements it carries at micro-batch 1 (they scale with it alike:
    what tells siblings, ``siblings.earlier_siblings``, is which are equal)."""
    return [divided_sizes(sub.layers[v], 1, WHOLE).f_in * share for (_u, v), share in zip(sub.edges, sub.edge_shares)]


def _amounts(sub: Network, row, t: int, micro_batch: int, reduce_scatter: bool = False) -> TensorAmounts:
    """``fanout.level_terms(..., fused=True)`` of ``sub`` at one level of fan-out t (sibling
    consumers sharing their exchanges: Megatron's fused QKV and gate/up), summed, with the
    forward part: the exchanges of output partial sums (type II's F_{l+1}) and the edges' forward
    re-layouts. ``reduce_scatter``: as ``fanout.level_amounts``. (``node_term`` and ``edge_term``
    are its terms one at a time, for the per-term minimiser ``solvers.llm_types``; equal, tested.)"""
    from .fanout import level_terms

    (terms,) = level_terms(sub, micro_batch, (t,), (tuple(row),), reduce_scatter, fused=True)
    whole = terms.amounts()
    return TensorAmounts(whole.activations, whole.weights, terms.forward)


def tensor_amounts(network: Network, nodes: tuple[int, ...], types: tuple[PartitionType, ...], t: int,
                   micro_batch: int, lead: int | None = None, lead_type: PartitionType | None = None,
                   extra: tuple[Layer, ...] = (), extra_types: tuple[PartitionType, ...] = (),
                   reduce_scatter: bool = False) -> TensorAmounts:
    """What one GPU sends at one tensor level of fan-out ``t`` for ``nodes`` (and ``extra``) at
    ``micro_batch``: ``fanout.level_amounts(..., fused=True)`` of the part with its producer ``lead`` in front (so
    the edges into the part are charged), less the lead's own exchange. The group below a
    tensor-level group is one GPU, so the group's amount is the GPU's. ``reduce_scatter``
    (Megatron's sequence parallelism): as ``fanout.level_amounts``, decided within the part (a
    node whose consumers lie outside the part keeps its all-reduce). The lead is a residual add
    wherever ``llm_stage`` passes one (a join: it exchanges nothing), so subtracting it alone
    removes no exchange whichever way it would be decided (ValueError for a lead that exchanges)."""
    if reduce_scatter and lead is not None and network.layers[lead].node_types.exchanged[lead_type.index] is not None:
        raise ValueError(f"tensor_amounts: the lead {network.layers[lead].name} exchanges partial sums; "
                         "its reduce-scatter would be decided differently alone")
    if t == 1:
        return TensorAmounts(Fraction(0), Fraction(0))
    row = ((lead_type,) if lead is not None else ()) + tuple(types) + tuple(extra_types)
    whole = _amounts(subnetwork(network, nodes, extra, lead, micro_batch), row, t, micro_batch, reduce_scatter)
    if lead is None:
        return whole
    facts, key = _facts(network), ("alone", lead, lead_type, t, micro_batch, reduce_scatter)
    if key not in facts:  # the lead's own exchange: the same for every type of the part's nodes
        facts[key] = _amounts(subnetwork(network, (), (), lead, micro_batch), (lead_type,), t, micro_batch,
                              reduce_scatter)
    alone = facts[key]
    return TensorAmounts(whole.activations - alone.activations, whole.weights - alone.weights,
                         whole.forward - alone.forward)
