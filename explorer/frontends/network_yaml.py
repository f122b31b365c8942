"""The YAML network spec (version 1) and the graph builder shared with the ONNX importer.

The spec's format and graph semantics are documented in ``explorer.core.network``.
"""

from __future__ import annotations

import heapq
from dataclasses import replace
from fractions import Fraction
from pathlib import Path

from ..core.errors import SpecError, shown
from ..core.network import NETWORK_INPUT, Layer, LayerKind, Network
from .fields import Fields, check_pos_int
from .yamlio import load_yaml_file, load_yaml_text

SPEC_VERSION = 1

_TOP_KEYS = {"version", "name", "batch", "layers", "description", "sequence", "transformer"}
_CONV_KEYS = {"name", "kind", "in_channels", "out_channels", "kernel", "in_size", "out_size"}
_FC_KEYS = {"name", "kind", "in_features", "out_features"}
_EMB_KEYS = {"name", "kind", "vocab", "hidden"}
_JOIN_KEYS = {"name", "kind", "inputs"}


def parse_network(data: dict, source: str, sequence: int | None = None) -> Network:
    """Validate a raw network spec mapping and build a Network; SpecError lists every problem.
    ``sequence`` overrides the spec's ``sequence`` (``--seq``)."""
    errors: list[str] = []
    name, batch, seq = _parse_top(data, sequence, errors)
    if "transformer" in data:  # a decoder-only transformer given by its shape (frontends/transformer.py)
        return _parse_transformer(data, name, batch, seq, source, errors)
    raw_layers = _raw_layers(data, errors)
    nodes: list[tuple[int, dict]] = []  # (file index, parsed) for nodes that parsed
    seen: dict[str, int] = {}  # layer name -> file index of its first node
    for i, raw in enumerate(raw_layers):
        n0 = len(errors)
        node = _parse_node(i, raw, seq, seen, errors)
        if node is not None and len(errors) == n0:
            nodes.append((i, node))
    if errors:
        raise SpecError(source, errors)
    return build_graph(name, batch, nodes, source, sequence=seq)


def _parse_transformer(data: dict, name: str | None, batch: int | None, seq: int | None, source: str,
                       errors: list[str]) -> Network:
    """A spec whose ``transformer:`` block gives the shape instead of ``layers:``."""
    from .transformer import build_transformer, parse_shape

    errors[:] = [e for e in errors if e != "layers: missing"]
    if "layers" in data:
        errors.append("layers: give either layers or transformer, not both")
    if "sequence" not in data:
        errors.append("sequence: missing (a transformer needs its tokens per sample)")
    shape = parse_shape(data["transformer"], "transformer", errors)
    if errors or shape is None:
        raise SpecError(source, errors)
    return build_transformer(shape, name, batch, seq, source)


def _parse_top(data: dict, sequence: int | None, errors: list[str]) -> tuple[str | None, int | None, int | None]:
    """The spec's top-level fields: its name, batch and sequence (``sequence`` overrides the spec's)."""
    top = Fields(data, "", errors, _TOP_KEYS, {"version", "name", "layers"})
    if "version" in data and data["version"] != SPEC_VERSION:
        errors.append(f"version: unsupported version {shown(data['version'])} (this explorer reads version {SPEC_VERSION})")
    name = top.name("name", "?")
    top.string("description")
    batch = top.pos_int("batch", 1)
    spec_seq = top.pos_int("sequence")
    if sequence is not None and "sequence" not in data:  # a CNN's fc layers would read S tokens per sample
        errors.append(f"--seq: the spec declares no sequence (no top-level sequence: for --seq to override), "
                      f"got --seq {sequence}")
    return name, batch, (sequence if sequence is not None else spec_seq)


def _raw_layers(data: dict, errors: list[str]) -> list:
    """The raw ``layers`` list ([] if it is missing or not a non-empty list)."""
    raw_layers = data.get("layers")
    if "layers" in data and (not isinstance(raw_layers, list) or not raw_layers):
        errors.append("layers: must be a non-empty list")
        return []
    return raw_layers or []


def _parse_node(i: int, raw, seq: int | None, seen: dict[str, int], errors: list[str]) -> dict | None:
    """Node ``layers[i]`` as a dict of its fields (None if it is not a mapping or has no known kind)."""
    path = f"layers[{i}]"
    if not isinstance(raw, dict):
        errors.append(f"{path}: must be a mapping")
        return None
    kind_text = raw.get("kind")
    try:
        kind = LayerKind(kind_text)
    except ValueError:
        errors.append(f"{path}.kind: must be one of {', '.join(k.value for k in LayerKind)}, got {shown(kind_text)}")
        return None
    node: dict = {"kind": kind, "path": path}
    f, raw = _kind_fields(kind, raw, path, seq, node, errors)
    node["name"] = _layer_name(f, path, i, seen, errors)
    if "inputs" in raw:
        node["inputs"] = _checked_inputs(raw["inputs"], kind, path, errors)
    elif "inputs" not in node:
        node["inputs"] = None  # default: the previous node
    return node


def _kind_fields(kind: LayerKind, raw: dict, path: str, seq: int | None, node: dict,
                 errors: list[str]) -> tuple[Fields, dict]:
    """Read the fields of ``kind`` into ``node``; returns its Fields and the raw mapping whose
    ``inputs`` remain to read (an embedding's are settled here)."""
    if kind is LayerKind.CONV:
        return _conv_fields(raw, path, node, errors), raw
    if kind is LayerKind.FC:
        f = Fields(raw, path, errors, _FC_KEYS | {"inputs", "tokens"}, _FC_KEYS)
        tok = f.pos_int("tokens", seq or 1)
        node.update(din=f.pos_int("in_features"), dout=f.pos_int("out_features"),
                    kernel=(1, 1), s_in=(tok, 1), s_out=(tok, 1))
        return f, raw
    if kind is LayerKind.EMBEDDING:
        return _embedding_fields(raw, path, seq, node, errors)
    extra = {"size", "heads", "kv_heads", "channels"} if kind is LayerKind.ATTENTION else {"size"}
    f = Fields(raw, path, errors, _JOIN_KEYS | extra, _JOIN_KEYS)
    node["size"] = f.pair("size")
    node["heads"] = f.pos_int("heads", 0)
    node["kv_heads"] = f.pos_int("kv_heads", 0)
    node["channels"] = f.pos_int("channels")
    return f, raw


def _conv_fields(raw: dict, path: str, node: dict, errors: list[str]) -> Fields:
    f = Fields(raw, path, errors, _CONV_KEYS | {"inputs", "groups"}, _CONV_KEYS)
    node.update(din=f.pos_int("in_channels"), dout=f.pos_int("out_channels"),
                kernel=f.pair("kernel"), s_in=f.pair("in_size"), s_out=f.pair("out_size"), groups=f.pos_int("groups", 1))
    g = node["groups"]
    if g and g > 1 and any(c and c % g for c in (node["din"], node["dout"])):
        f.error("groups", f"{g} groups must divide in_channels {node['din']} and out_channels {node['dout']}")
    return f


def _embedding_fields(raw: dict, path: str, seq: int | None, node: dict, errors: list[str]) -> tuple[Fields, dict]:
    f = Fields(raw, path, errors, _EMB_KEYS | {"inputs", "tokens"}, _EMB_KEYS)
    tok = f.pos_int("tokens", seq or 1)
    node.update(din=f.pos_int("vocab"), dout=f.pos_int("hidden"), kernel=(1, 1), s_in=(tok, 1), s_out=(tok, 1))
    if raw.get("inputs", []) not in ([], [NETWORK_INPUT]):
        f.error("inputs", "an embedding reads token ids: the network input ([] or [input])")
    node["inputs"] = []
    return f, {k: v for k, v in raw.items() if k != "inputs"}


def _layer_name(f: Fields, path: str, i: int, seen: dict[str, int], errors: list[str]) -> str | None:
    """The node's name, checked not reserved and not a duplicate (``seen`` records it)."""
    lname = f.name("name")
    if lname == NETWORK_INPUT:
        errors.append(f"{path}.name: {shown(NETWORK_INPUT)} is reserved for the network input")
    if lname is not None:
        if lname in seen:
            errors.append(f"{path}.name: duplicate layer name {shown(lname)} (also layers[{seen[lname]}])")
        seen.setdefault(lname, i)
    return lname


def _article(word: str) -> str:
    return "an" if word[0] in "aeiou" else "a"


def _checked_inputs(inputs, kind: LayerKind, path: str, errors: list[str]) -> list | None:
    """A node's ``inputs`` (None if it is not a list of names); an arity problem is reported."""
    if not isinstance(inputs, list) or not all(isinstance(x, str) for x in inputs):
        errors.append(f"{path}.inputs: must be a list of node names")
        return None
    if kind is LayerKind.ATTENTION and not inputs:
        errors.append(f"{path}.inputs: an attention node reads Q, K and V (one fused input or several)")
    elif kind.is_join and kind is not LayerKind.ATTENTION and len(inputs) < 2:
        errors.append(f"{path}.inputs: {_article(kind.value)} {kind.value} node joins two or more inputs, got {len(inputs)}")
    elif not kind.is_join and len(inputs) > 1:
        errors.append(f"{path}.inputs: a {kind.value} layer takes one input, got {len(inputs)} (join them with an add or concat node)")
    elif len(set(inputs)) != len(inputs):
        errors.append(f"{path}.inputs: names an input twice")
    return inputs


def build_graph(name: str, batch: int, nodes: list[tuple[int, dict]], source: str, sequence: int | None = None,
                approximations: tuple[str, ...] = ()) -> Network:
    """Resolve inputs, sort topologically, derive join sizes, check channels; SpecError on problems."""
    names = [n["name"] for _, n in nodes]
    preds = _resolve_inputs(nodes, names, source)
    order = _topological_order(preds, names, source)
    layers = _build_layers(nodes, preds, order, source)
    edges, shares = _edges(order, preds, layers, nodes)
    return Network(name, batch, tuple(layers[k] for k in order), edges, source, shares, sequence, approximations)


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


def _topological_order(preds: list[list[int]], names: list[str], source: str) -> list[int]:
    """Kahn's algorithm, smallest file position first (keeps file order where possible)."""
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
    if len(order) != len(preds):
        cyc = [names[k] for k in range(len(preds)) if indeg[k] > 0]
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
        ins = [_part(layers[p], n) for p in preds[k]]
        if n["kind"].is_join:
            layer = _join_layer(n, ins, errors)
        else:
            layer = _plain_layer(n, ins[0] if ins else None, errors)
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
        errors.append(f"{n['path']}.inputs: {_article(kind.value)} {kind.value} node needs at least one input that is a node")
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


def _plain_layer(n: dict, p: Layer | None, errors: list[str]) -> Layer:
    """A conv, fc or embedding node's Layer, its input width checked against its input ``p``'s output."""
    kind = n["kind"]
    layer = Layer(n["name"], kind, n["din"], n["dout"], n["kernel"], n["s_in"], n["s_out"], groups=n.get("groups", 1))
    if kind is LayerKind.CONV and p is not None:
        if p.kind is not LayerKind.FC and p.out_channels != layer.in_channels:
            errors.append(f"{n['path']}.in_channels: {layer.in_channels} does not match the {p.out_channels} "
                          f"channels of its input {shown(p.name)}")
    if kind is LayerKind.FC and p is not None:
        problem = fc_input_mismatch(layer, p)
        if problem:
            errors.append(f"{n['path']}.in_features: {problem}")
    return layer


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
                     if consumer.kind in (LayerKind.CONCAT, LayerKind.ATTENTION) else Fraction(1))
            shares.append(share)
    pairs = sorted(zip(edges, shares))
    return tuple(e for e, _ in pairs), tuple(s for _, s in pairs)


def fc_input_mismatch(layer: Layer, p: Layer) -> str | None:
    """Why an fc's in_features cannot be what its producer ``p`` outputs, or None.

    The fc reads the producer's output flattened: channels x spatial size. Pooling may sit
    between (sizes are given, not derived: AlexNet's conv5 is 256 x 13x13, its fc6 reads the
    pooled 256 x 6x6 = 9,216), so in_features must be the producer's channels times a
    spatial size from 1 (global pooling) up to the producer's own."""
    c, s = p.out_channels, p.s_out
    if layer.in_channels % c == 0 and 1 <= layer.in_channels // c <= s:
        return None
    if s == 1:
        return f"{layer.in_channels} does not match the {c} outputs of its input {shown(p.name)}"
    return (f"{layer.in_channels} does not match its input {shown(p.name)} ({c} channels x {p.out_size[0]}x{p.out_size[1]}): "
            f"it must be {c} x a spatial size of at most {s} (flattened, pooling allowed)")


def load_network_file(path: str | Path, batch: int | None = None, sequence: int | None = None) -> Network:
    """A YAML network spec (``sequence`` overrides its ``sequence``: the default tokens of its
    fc, embedding and attention nodes)."""
    return parse_network(load_yaml_file(path), str(path), sequence)


def load_network_text(text: str, source: str = "<string>") -> Network:
    return parse_network(load_yaml_text(text, source), source)


def check_batch(batch: int, source: str = "--batch") -> int:
    errors: list[str] = []
    b = check_pos_int(batch, source, errors)
    if errors:
        raise SpecError(source, errors[0].split(": ", 1)[1])
    return b
