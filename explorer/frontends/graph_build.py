"""The graph builder every network frontend shares: node mappings (as the YAML parser, the ONNX
importer and the transformer builder give them) -> inputs resolved, topological order, layers with
their channels checked, edges -> a ``Network``."""

from __future__ import annotations

import heapq
from dataclasses import replace
from fractions import Fraction

from ..core.errors import SpecError, shown
from ..core.network import NETWORK_INPUT, WHOLE, Layer, LayerKind, Network
from ..core.network_check import check_network

def build_graph(name: str, batch: int, nodes: list[tuple[int, dict]], source: str, sequence: int | None = None,
                approximations: tuple[str, ...] = (), input_shapes: tuple = ()) -> Network:
    """Resolve inputs, sort topologically, derive join sizes, check channels; SpecError on problems."""
    names = [n["name"] for _, n in nodes]
    preds = _resolve_inputs(nodes, names, source)
    order = _topological_order(preds, names, source)
    layers = _build_layers(nodes, preds, order, source)
    edges, shares = _edges(order, preds, layers, nodes)
    net = Network(name, batch, tuple(layers[k] for k in order), edges, source, shares, sequence, approximations,
                  input_shapes)
    reads = [[_part(layers[p], nodes[k][1]) for p in preds[k]] for k in order]
    return check_network(net, [nodes[k][1]["path"] for k in order], reads)


def _resolve_inputs(nodes: list[tuple[int, dict]], names: list[str], source: str) -> list[list[int]]:
    """Each node's predecessors (node positions); a node without ``inputs`` reads the previous node."""
    errors: list[str] = []
    index = {nm: k for k, nm in enumerate(names)}
    preds: list[list[int]] = []
    for k, (_, n) in enumerate(nodes):
        inputs = n["inputs"]
        if inputs is None:
            inputs = [] if k == 0 else [names[k - 1]]
        ps = []
        for x in inputs:
            if x == NETWORK_INPUT:
                continue  # the network input: no edge
            if x not in index:
                errors.append(f"{n['path']}.inputs: names no node {shown(x)} (a dangling input)")
            elif x == n["name"]:
                errors.append(f"{n['path']}.inputs: a node cannot read itself")
            else:
                ps.append(index[x])
        preds.append(ps)
    if errors:
        raise SpecError(source, errors)
    return preds


def kahn_order(preds) -> list[int]:
    """Kahn's algorithm, smallest position first (keeps file order where possible); the nodes on
    or behind a cycle are left out of the order."""
    indeg = [len(p) for p in preds]
    succs: list[list[int]] = [[] for _ in preds]
    for k, ps in enumerate(preds):
        for p in ps:
            succs[p].append(k)
    ready = [k for k in range(len(preds)) if indeg[k] == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        k = heapq.heappop(ready)
        order.append(k)
        for s in succs[k]:
            indeg[s] -= 1
            if indeg[s] == 0:
                heapq.heappush(ready, s)
    return order


def _topological_order(preds: list[list[int]], names: list[str], source: str) -> list[int]:
    order = kahn_order(preds)
    if len(order) != len(preds):
        placed = set(order)
        cyc = [names[k] for k in range(len(preds)) if k not in placed]
        raise SpecError(source, f"layers: the inputs form a cycle through {', '.join(cyc[:8])}")
    return order


def _build_layers(nodes: list[tuple[int, dict]], preds: list[list[int]], order: list[int], source: str) -> dict[int, Layer]:
    """The Layer of each node (by position), built in topological order; SpecError on problems."""
    errors: list[str] = []
    layers: dict[int, Layer] = {}
    for k in order:
        n = nodes[k][1]
        if any(p not in layers for p in preds[k]):
            continue  # an input already failed; its error is reported
        if n["kind"].is_join:
            layer = _join_layer(n, [_part(layers[p], n) for p in preds[k]], errors)
        else:
            layer = _plain_layer(n)
        if layer is not None:
            layers[k] = layer
    if errors:
        raise SpecError(source, errors)
    return layers


def _part(p: Layer, n: dict) -> Layer:
    """Producer ``p`` as node ``n`` reads it: only some of its channels when ``n`` says so in
    ``input_channels`` (an importer's key, never in YAML: a channel Split of p's output)."""
    c = n.get("input_channels", {}).get(p.name)
    return p if c is None or c == p.out_channels else replace(p, out_channels=c)


def _join_layer(n: dict, ins: list[Layer], errors: list[str]) -> Layer | None:
    """A join node's Layer, its size and channels derived from its inputs ``ins`` (None on a problem)."""
    kind = n["kind"]
    if not ins:
        errors.append(f"{n['path']}.inputs: {article(kind.value)} {kind.value} node needs at least one input that is a node")
        return None
    chans = [L.out_channels for L in ins]
    sizes = {L.out_size for L in ins} if n["size"] is None else {n["size"]}
    if len(sizes) > 1:
        errors.append(f"{n['path']}: inputs of {shown(n['name'])} have different spatial sizes {sorted(sizes)} "
                      "(give the join's size: when pooling sits between)")
        return None
    heads = n.get("heads", 0)
    channels = _join_channels(n, chans, heads, errors)
    if channels is None:
        return None
    c, out = channels
    kv = _kv_heads(n, heads, c, out, errors)
    if kv is None:
        return None
    size = sizes.pop()
    return Layer(n["name"], kind, c, out, (1, 1), size, size, heads=heads, kv_heads=kv)


def _kv_heads(n: dict, heads: int, c: int, out: int, errors: list[str]) -> int | None:
    """An attention node's ``kv_heads`` (grouped-query attention), checked: it needs ``heads``,
    divides them, and the input is Q (``out``) plus K and V of ``kv_heads`` heads each; 0 when
    not given or equal to ``heads`` (plain multi-head attention). None on a problem."""
    kv = n.get("kv_heads") or 0
    if not kv or kv == heads:
        return 0
    if not heads or heads % kv:
        errors.append(f"{n['path']}.kv_heads: {kv} must divide the node's heads ({heads or 'not given'})")
        return None
    if c != out + 2 * (out // heads) * kv:
        errors.append(f"{n['path']}.kv_heads: {kv} KV heads of {out // heads} channels need {out} + 2 x "
                      f"{(out // heads) * kv} input channels (Q, K, V), got {c}")
        return None
    return kv


def _join_channels(n: dict, chans: list[int], heads: int, errors: list[str]) -> tuple[int, int] | None:
    """A join's (input, output) channels from its inputs' channels ``chans`` (None on a problem)."""
    kind = n["kind"]
    if kind is LayerKind.CONCAT:
        return sum(chans), sum(chans)
    if kind is LayerKind.ATTENTION:
        # input: Q, K and V together (edges carry their share, as into a concat); output:
        # the context, V's channels (the last input; a third of one fused QKV input)
        c = sum(chans)
        out = n.get("channels") or _context_channels(chans, heads, n.get("kv_heads") or 0)
        if not out or out > c or (heads and out % heads):
            errors.append(f"{n['path']}.channels: give the context's channels of attention node {shown(n['name'])} "
                          f"(at most its {c} input channels{', a multiple of its heads' if heads else ''})")
            return None
        return c, out
    if len(set(chans)) > 1:
        errors.append(f"{n['path']}: inputs of {kind.value} node {shown(n['name'])} have different channels {chans}")
        return None
    return chans[0], chans[0]


def _context_channels(chans: list[int], heads: int, kv: int) -> int:
    """An attention node's default context channels: V's (the last input), a third of one fused
    QKV input; under grouped-query attention (``kv`` KV heads) Q's, heads / (heads + 2 kv) of
    the input (0: cannot tell)."""
    c = sum(chans)
    if kv and heads and kv != heads:
        return chans[0] if len(chans) > 1 else (c * heads // (heads + 2 * kv) if c * heads % (heads + 2 * kv) == 0 else 0)
    return chans[-1] if len(chans) > 1 else (c // 3 if c % 3 == 0 else 0)


def _plain_layer(n: dict) -> Layer:
    """A conv, fc or embedding node's Layer (``check_network`` checks it and its input width)."""
    return Layer(n["name"], n["kind"], n["din"], n["dout"], n["kernel"], n["s_in"], n["s_out"], groups=n.get("groups", 1))


def _edges(order: list[int], preds: list[list[int]], layers: dict[int, Layer], nodes: list[tuple[int, dict]]
           ) -> tuple[tuple[tuple[int, int], ...], tuple[Fraction, ...]]:
    """The edges between topological positions, sorted, and the share of its consumer's input each carries."""
    position = {k: pos for pos, k in enumerate(order)}
    edges, shares = [], []
    for k in order:
        for p in preds[k]:
            edges.append((position[p], position[k]))
            consumer = layers[k]
            share = (Fraction(_part(layers[p], nodes[k][1]).out_channels, consumer.in_channels)
                     if consumer.kind in (LayerKind.CONCAT, LayerKind.ATTENTION) else WHOLE)
            shares.append(share)
    pairs = sorted(zip(edges, shares))
    return tuple(e for e, _ in pairs), tuple(s for _, s in pairs)


def article(word: str) -> str:
    """'a' or 'an' before ``word``: by its first vowel for a word ('an add', 'a concat'), by how the
    letter is said for a name starting with a capital before a digit or capital ('an A100', 'an
    H100', 'an MI250X', 'a V100', 'a T4')."""
    if len(word) > 1 and word[0].isupper() and (word[1].isdigit() or word[1].isupper()):
        return "an" if word[0] in "AEFHILMNORSX" else "a"
    return "an" if word[:1].lower() in ("a", "e", "i", "o", "u") else "a"
