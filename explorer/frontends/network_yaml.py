"""The YAML network spec (version 1); the graph builder it shares with the other frontends is
``explorer.frontends.graph_build``.

The spec's format and graph semantics are documented in ``explorer.core.network``.
"""

from __future__ import annotations

from pathlib import Path

from ..core.errors import SpecError, shown
from ..core.names import given_as
from ..core.network import NETWORK_INPUT, LayerKind, Network
from .fields import Fields, check_pos_int
from .graph_build import article as _article, build_graph
from .yamlio import load_yaml_file, load_yaml_text

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
        return _parse_transformer(data, name, batch, seq, source, errors, sequence is not None)
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
    _check_sequence([n for _, n in nodes], name, data.get("sequence"), seq, sequence is not None, source)
    return build_graph(name, batch, nodes, source, sequence=seq)


def _check_sequence(nodes: list[dict], name: str, spec_seq, seq: int | None, seq_given: bool, source: str) -> None:
    """The sequence against what fixes it: a learned position table (an embedding with
    ``positions: true``) has no row beyond its ``vocab``; a network whose input a conv reads (an
    image or audio stem) has its tokens fixed by the input's size, so ``--seq`` cannot change them."""
    option = given_as("--seq") if seq_given else "sequence"
    for node in nodes:
        if node.get("positions") and seq and seq > node["din"]:
            raise SpecError(source, f"{option}: {seq:,} tokens is more than the {node['din']:,} learned positions "
                                    f"({node['path']}.vocab, {node['name']!r}: positions: true): a learned position "
                                    f"table has no row beyond its size (at most {node['din']:,})")
    stem = next((n for k, n in enumerate(nodes) if n["kind"] is LayerKind.CONV
                 and (n["inputs"] == [NETWORK_INPUT] or (k == 0 and n["inputs"] is None))), None)
    if seq_given and stem is not None and seq != spec_seq:
        h, w = stem["s_in"]
        raise SpecError(source, f"{option}: {name}'s {spec_seq} tokens are fixed by its input's size ({h} x {w} into "
                                f"the conv {stem['name']!r}: an image or signal, not token ids), so {option} does not "
                                f"apply; got {option} {seq}")


def _parse_transformer(data: dict, name: str | None, batch: int | None, seq: int | None, source: str,
                       errors: list[str], seq_given: bool = False) -> Network:
    """A spec whose ``transformer:`` block gives the shape instead of ``layers:`` (``seq_given``: the
    sequence is --seq's, not the spec's)."""
    from .transformer import build_transformer, parse_shape, position_problem

    errors[:] = [e for e in errors if e != "layers: missing"]
    if "layers" in data:
        errors.append("layers: give either layers or transformer, not both")
    if "sequence" not in data:
        errors.append("sequence: missing (a transformer needs its tokens per sample)")
    shape = parse_shape(data["transformer"], "transformer", errors)
    if errors or shape is None:
        raise SpecError(source, errors)
    too_long = position_problem(shape, seq, "transformer.positions")
    if too_long:
        raise SpecError(source, f"{given_as('--seq') if seq_given else 'sequence'}: {too_long}")
    return build_transformer(shape, name, batch, seq, source)


def _parse_top(data: dict, sequence: int | None, errors: list[str]) -> tuple[str | None, int | None, int | None]:
    """The spec's top-level fields: its name, batch and sequence (``sequence`` overrides the spec's)."""
    top = Fields(data, "", errors, _TOP_KEYS, {"version", "name", "layers"})
    top.version()
    name = top.name("name", "?")
    top.string("description")
    batch = top.pos_int("batch", 1)
    spec_seq = top.pos_int("sequence")
    if sequence is not None and "sequence" not in data:  # a CNN's fc layers would read S tokens per sample
        seq_option = given_as("--seq")
        errors.append(f"{seq_option}: the spec declares no sequence (no top-level sequence: for {seq_option} to "
                      f"override), got {seq_option} {sequence}")
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
    return f  # groups dividing the channels and the conv's geometry: core.network_check


def _embedding_fields(raw: dict, path: str, seq: int | None, node: dict, errors: list[str]) -> tuple[Fields, dict]:
    f = Fields(raw, path, errors, _EMB_KEYS | {"inputs", "tokens", "positions"}, _EMB_KEYS)
    tok = f.pos_int("tokens", seq or 1)
    node["positions"] = raw.get("positions", False)  # a learned position table: the sequence <= vocab
    if not isinstance(node["positions"], bool):
        f.error("positions", f"must be true or false, got {shown(node['positions'])}")
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
