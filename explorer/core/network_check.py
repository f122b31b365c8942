"""The one validation of a built ``Network``: what every front end (the YAML spec, the ONNX
importer, the transformer builder, a ``Network`` handed to the Python API) must satisfy.

Each problem is a line ``layers[k].FIELD: problem`` (``k`` the node's position, or the path a
front end gives); ``check_network`` raises them together as one ``SpecError``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Sequence

from .errors import SpecError, is_int, shown
from .network import Layer, LayerKind, Network
from .units import format_count

MAX_INT = 2**40  # a size, count or batch: every derived figure stays a finite float

# the spec's names for a node's in/out widths, by kind (Layer calls them in_channels/out_channels)
_WIDTH_NAMES = {LayerKind.FC: ("in_features", "out_features"), LayerKind.EMBEDDING: ("vocab", "hidden")}


def check_pos_int(v: Any, path: str, errors: list[str]) -> int | None:
    """``v`` if it is an integer in [1, 2^40]; otherwise None and a problem for ``path``."""
    if not is_int(v) or v <= 0:  # one wording for the rule (solve(batch=0) and batch=2.5 alike)
        errors.append(f"{path}: must be a positive integer, got {shown(v)}")
        return None
    if v > MAX_INT:
        errors.append(f"{path}: must be at most 2^40 = {MAX_INT:,}, got {format_count(v)}")
        return None
    return v


def check_network(net: Network, paths: Sequence[str] | None = None,
                  reads: Sequence[list[Layer]] | None = None) -> Network:
    """``net`` if it is valid, else a ``SpecError`` (source: its file, or ``network 'NAME'``)
    listing every problem. ``paths[k]`` names node k in messages (default ``layers[k]``);
    ``reads`` as in ``network_problems``."""
    problems = network_problems(net, paths, reads)
    if problems:
        raise SpecError(net.source or f"network {shown(net.name)}", problems)
    return net


def network_problems(net: Network, paths: Sequence[str] | None = None,
                     reads: Sequence[list[Layer]] | None = None) -> list[str]:
    """Every problem of ``net``: its batch, each node's sizes and conv geometry, and each node's
    input width against what its producers output. ``reads[k]``: node k's producers as it reads
    them (an importer's channel split reads part of one; default: the producers, a concat or
    attention node reading its edge's share)."""
    errors: list[str] = []
    check_pos_int(net.batch, "batch", errors)
    if net.sequence is not None:
        check_pos_int(net.sequence, "sequence", errors)
    paths = list(paths) if paths is not None else [f"layers[{k}]" for k in range(len(net.layers))]
    sound = [_layer_sound(L, paths[k], errors) for k, L in enumerate(net.layers)]
    if reads is None:
        reads = _reads(net)
    preds: list[list[int]] = [[] for _ in net.layers]
    for u, v in net.edges:
        preds[v].append(u)
    for k, L in enumerate(net.layers):
        if sound[k] and all(sound[p] for p in preds[k]):
            errors.extend(f"{paths[k]}{p}" for p in input_problems(L, reads[k]))
    return errors


def _reads(net: Network) -> list[list[Layer]]:
    """Each node's producers as it reads them: all of a producer's channels, except where an edge
    into a concat or attention node carries a share below 1 (that share of the node's input)."""
    reads: list[list[Layer]] = [[] for _ in net.layers]
    for (u, v), share in zip(net.edges, net.edge_shares):
        p, L = net.layers[u], net.layers[v]
        if share != 1 and L.kind in (LayerKind.CONCAT, LayerKind.ATTENTION):
            c = share * L.in_channels
            p = replace(p, out_channels=int(c) if c.denominator == 1 else -1)
        reads[v].append(p)
    return reads


def _layer_sound(L: Layer, path: str, errors: list[str]) -> bool:
    """Whether node ``L``'s own fields are valid (problems appended to ``errors``)."""
    n0 = len(errors)
    din, dout = _WIDTH_NAMES.get(L.kind, ("in_channels", "out_channels"))
    if not _plainly_sound(L):  # the common case at once (35-50 ms for 10,000 layers); else each field
        _field_problems(L, path, din, dout, errors)
        if len(errors) > n0:
            return False
    if L.groups > 1 and (L.in_channels % L.groups or L.out_channels % L.groups):
        errors.append(f"{path}.groups: {L.groups} groups must divide {din} {L.in_channels} and {dout} {L.out_channels}")
        return False
    if L.kind is LayerKind.CONV:
        _conv_geometry(L, path, errors)
    return len(errors) == n0


def _plainly_sound(L: Layer) -> bool:
    """Every size an int in [1, 2^40], heads and kv_heads in [0, 2^40] (a quick test of the usual case)."""
    try:
        sizes = (L.in_channels, L.out_channels, *L.kernel, *L.in_size, *L.out_size, L.groups)
    except TypeError:
        return False
    return (len(sizes) == 9 and all(type(v) is int and 0 < v <= MAX_INT for v in sizes)
            and all(type(v) is int and 0 <= v <= MAX_INT for v in (L.heads, L.kv_heads)))


def _field_problems(L: Layer, path: str, din: str, dout: str, errors: list[str]) -> None:
    check_pos_int(L.in_channels, f"{path}.{din}", errors)
    check_pos_int(L.out_channels, f"{path}.{dout}", errors)
    for field in ("kernel", "in_size", "out_size"):
        pair = getattr(L, field)
        if not (isinstance(pair, tuple) and len(pair) == 2):
            errors.append(f"{path}.{field}: must be a pair (h, w) of positive integers, got {shown(pair)}")
            continue
        check_pos_int(pair[0], f"{path}.{field}[0]", errors)
        check_pos_int(pair[1], f"{path}.{field}[1]", errors)
    check_pos_int(L.groups, f"{path}.groups", errors)
    for field in ("heads", "kv_heads"):
        v = getattr(L, field)
        if v != 0:
            check_pos_int(v, f"{path}.{field}", errors)


def _conv_geometry(L: Layer, path: str, errors: list[str]) -> None:
    """A conv's out_size must be one some stride and padding give: at most in_size + kernel - 1
    (stride 1 with kernel - 1 padding on each side; more padding only adds outputs that read
    nothing but padding)."""
    for axis in (0, 1):
        most = L.in_size[axis] + L.kernel[axis] - 1
        if L.out_size[axis] > most:
            errors.append(f"{path}.out_size: {L.out_size[0]}x{L.out_size[1]} cannot come out of a "
                          f"{L.kernel[0]}x{L.kernel[1]} conv on {L.in_size[0]}x{L.in_size[1]} (at most "
                          f"in_size + kernel - 1 = {most} along each axis; sizes are given, not derived)")
            return


def input_problems(L: Layer, ins: list[Layer]) -> list[str]:
    """Why node ``L`` cannot read the outputs of ``ins`` (its producers), each as '.FIELD: problem'."""
    if not ins:
        return []
    if L.is_join:
        return _join_problems(L, ins)
    p = ins[0]
    if len(ins) > 1:
        return [f".inputs: a {L.kind.value} layer takes one input, got {len(ins)} (join them with an add or concat node)"]
    if L.kind is LayerKind.CONV and p.kind is not LayerKind.FC and p.out_channels != L.in_channels:
        return [f".in_channels: {L.in_channels} does not match the {p.out_channels} channels of its input {shown(p.name)}"]
    if L.kind is LayerKind.FC:
        problem = fc_input_mismatch(L, p)
        return [f".in_features: {problem}"] if problem else []
    return []


def _join_problems(L: Layer, ins: list[Layer]) -> list[str]:
    """An add's inputs all have its channels; a concat's and an attention node's add up to them."""
    chans = [p.out_channels for p in ins]
    if L.kind is LayerKind.ADD and any(c != L.in_channels for c in chans):
        return [f".channels: add node {shown(L.name)} of {L.in_channels} channels reads inputs of {chans} channels"]
    if L.kind is not LayerKind.ADD and sum(chans) != L.in_channels:
        return [f".channels: {L.kind.value} node {shown(L.name)} of {L.in_channels} input channels reads "
                f"{' + '.join(map(str, chans))} = {sum(chans)}"]
    return []


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
