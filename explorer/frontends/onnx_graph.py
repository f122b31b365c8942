"""Checks of an ONNX graph's structure before the importer walks it: printable names, every
node input defined (no dangling input), the nodes in an order where each reads only what came
before (sorted when a file lists them out of order; a cycle refused), and the data inputs'
symbolic axes filled from ``--batch`` / ``--seq`` (a feature or spatial axis is never taken for
a sequence; a zero or negative dimension is refused, not called symbolic)."""

from __future__ import annotations

import re

from ..core.errors import SpecError
from ..core.names import given_as, how_to_set
from ..core.network import InputShape
from .graph_build import kahn_order

BATCH_NAMES = re.compile(r"^(n|b|bs|batch.*|.*_batch|.*batch_size)$", re.IGNORECASE)
SEQ_NAMES = re.compile(r"(seq|sequence|len|length|tokens?|time|frames?|steps?|positions?)", re.IGNORECASE)
FEATURE_NAMES = re.compile(r"^(c|channels?|features?|hidden.*|height|width|h|w|dim|embed.*|d_model)$", re.IGNORECASE)
INT_TYPES = {2, 3, 4, 5, 6, 7, 9, 12, 13}  # uint8 int8 uint16 int16 int32 int64 bool uint32 uint64
MAX_NODES = 1 << 20  # nodes once model-local functions are inlined (docs/specs.md, "ONNX", "Limits")


def printable(name: str, limit: int = 120) -> str:
    """A name fit for one line of a table: control characters escaped, long names cut."""
    out = name if name.isprintable() else "".join(c if c.isprintable() else repr(c)[1:-1] for c in name)
    return out if len(out) <= limit else out[: limit - 3] + "..."


def node_label(node, i: int) -> str:
    return f"node {printable(node.name) if node.name else i!r} ({printable(node.op_type)})"


def _reads(node) -> list[str]:
    """The tensors ``node`` reads: its inputs and, for an If, Loop or Scan, every name its bodies'
    nodes read (outer-scope tensors are read implicitly)."""
    out = [x for x in node.input if x]
    for a in node.attribute:
        for body in ([a.g] if a.HasField("g") else []) + list(a.graphs):
            for n in body.node:
                out.extend(_reads(n))
    return out


def live_nodes(graph, nodes: list) -> tuple[list, list]:
    """(the nodes some graph output depends on, the others: dead code, whose outputs reach no
    graph output and which therefore are not layers). A graph declaring no output keeps every
    node (nothing says what is dead)."""
    if not graph.output:
        return list(nodes), []
    producer = {o: n for n in nodes for o in n.output if o}
    live: set[int] = set()
    todo = [producer[o.name] for o in graph.output if o.name in producer]
    while todo:
        n = todo.pop()
        if id(n) not in live:
            live.add(id(n))
            todo.extend(producer[x] for x in _reads(n) if x in producer)
    return [n for n in nodes if id(n) in live], [n for n in nodes if id(n) not in live]


def dead_note(graph, dead: list) -> str:
    """The note for nodes left out as dead code (their outputs reach no graph output), each
    named as the graph lists it."""
    index = {id(n): k for k, n in enumerate(graph.node)}
    names = ", ".join(node_label(n, index[id(n)]) for n in dead[:3])
    more = f" and {len(dead) - 3} more" if len(dead) > 3 else ""
    return (f"{len(dead)} node{'s' if len(dead) > 1 else ''} whose outputs reach no graph output (dead code) left "
            f"out, not layers: {names}{more}")


def _unique_names(graph, src: str) -> None:
    """SpecError naming a graph input or an initializer given twice (which one counts is unsaid)."""
    for what, tensors in (("initializer", graph.initializer), ("graph input", graph.input)):
        seen: set[str] = set()
        for t in tensors:
            if t.name in seen:
                raise SpecError(src, f"{what} {printable(t.name)!r} is given twice (each tensor has one definition)")
            seen.add(t.name)


def ordered_nodes(graph, src: str) -> list:
    """The graph's nodes, each after the producers of its inputs (file order kept where it
    allows). SpecError naming the node for an input nobody defines, or for a cycle, and naming
    a duplicated initializer or graph input."""
    _unique_names(graph, src)
    defined = {t.name for t in graph.initializer} | {t.name for t in graph.input}
    producer: dict[str, int] = {}
    for k, node in enumerate(graph.node):
        for out in node.output:
            if out in producer or out in defined:
                first = node_label(graph.node[producer[out]], producer[out]) if out in producer else "a graph input"
                raise SpecError(src, f"{node_label(node, k)}: output {printable(out)!r} is also written by {first} "
                                     "(each tensor has one producer)")
            if out:
                producer[out] = k
    preds: list[set[int]] = []
    for k, node in enumerate(graph.node):
        ps = set()
        for x in node.input:
            if not x or x in defined:
                continue
            if x not in producer:
                raise SpecError(src, f"{node_label(node, k)}: input {printable(x)!r} is no graph input, initializer or "
                                     "node output (a dangling input)")
            if producer[x] == k:
                raise SpecError(src, f"{node_label(node, k)}: reads its own output {printable(x)!r} (a cycle)")
            ps.add(producer[x])
        preds.append(ps)
    order = kahn_order(preds)
    if len(order) < len(preds):
        stuck = [node_label(graph.node[k], k) for k in _on_cycles(preds, set(order))]
        raise SpecError(src, f"the nodes form a cycle through {', '.join(stuck[:4])}"
                             f"{f' and {len(stuck) - 4} more' if len(stuck) > 4 else ''}")
    return [graph.node[k] for k in order]


def _on_cycles(preds: list[set[int]], ordered: set[int]) -> list[int]:
    """The nodes Kahn's algorithm left, less those merely downstream of a cycle (peeled off
    from the end: a node none of the remaining nodes reads)."""
    left = {k for k in range(len(preds)) if k not in ordered}
    while True:
        read = {p for k in left for p in preds[k]}
        tail = {k for k in left if k not in read}
        if not tail:
            return sorted(left)
        left -= tail


def _is_sequence_axis(name: str, axis: int, rank: int, integer: bool) -> bool:
    """Whether a symbolic non-batch axis is a sequence: named like one, or positioned like one
    (token ids [batch, seq]; [batch, seq, features] or [seq, batch, features] activations)."""
    if name and SEQ_NAMES.search(name):
        return True
    if name and FEATURE_NAMES.match(name):
        return False
    return integer or (rank == 3 and axis < 2)


def _read_shape(name: str, dims, named_batch: bool) -> InputShape:
    """An input's symbolic axes (axis, name) and its batch axis, before they are filled (no sizes yet)."""
    symbolic = tuple((axis, printable(d.dim_param) if d.dim_param else "?") for axis, d in enumerate(dims)
                     if not d.HasField("dim_value"))
    batch_axis = next((axis for axis, d in enumerate(dims) if (d.dim_param and BATCH_NAMES.match(d.dim_param))
                       or (axis == 0 and not named_batch)), None)
    return InputShape(printable(name), (), symbolic, batch_axis)


def fill_dynamic_axes(graph, src: str, batch_arg: int | None,
                      seq_arg: int | None) -> tuple[int, int | None, tuple[InputShape, ...]]:
    """Set symbolic axes of the data inputs: a batch-named axis (or axis 0) from --batch, a
    sequence axis from --seq. Returns (batch, sequence or None, the inputs' shapes as filled).
    SpecError for a zero or negative dimension, a symbolic feature or spatial axis, and a --seq
    nothing takes."""
    inits = {t.name for t in graph.initializer}
    batch = seq = None
    filled = False
    shapes = []
    missing: dict[str, str] = {}  # option -> the first axis it would fill: all named in one line
    for inp in graph.input:
        if inp.name in inits:
            continue
        label = f"input {printable(inp.name)!r}"
        ttype = inp.type.tensor_type
        dims = ttype.shape.dim
        integer = ttype.elem_type in INT_TYPES
        named_batch = any(x.dim_param and BATCH_NAMES.match(x.dim_param) for x in dims)
        read = _read_shape(inp.name, dims, named_batch)
        for axis, d in enumerate(dims):
            is_batch = bool(d.dim_param and BATCH_NAMES.match(d.dim_param)) or (axis == 0 and not named_batch)
            if d.HasField("dim_value"):
                if d.dim_value <= 0:
                    raise SpecError(src, f"{label}: dimension {axis} is {d.dim_value} (a dimension must be positive)")
                if is_batch and batch is None:
                    batch = d.dim_value
                elif not is_batch and axis == 1 and seq is None and integer:
                    seq = d.dim_value  # token ids [batch, sequence]
                continue
            sym = printable(d.dim_param) if d.dim_param else "?"
            if is_batch:
                if batch_arg is None:
                    missing.setdefault("--batch", f"{label} has a symbolic batch dimension {sym!r}")
                    continue
                d.dim_value = batch = batch_arg
            elif _is_sequence_axis(d.dim_param, axis, len(dims), integer):
                if seq_arg is None:
                    missing.setdefault("--seq", f"{label} has a symbolic sequence dimension {sym!r} (axis {axis})")
                    continue
                d.dim_value = seq = seq_arg
                filled = True
            else:
                raise SpecError(src, f"{label}: axis {axis} of {len(dims)} is symbolic ({sym!r}) and is a feature or "
                                     "spatial axis, not a batch or sequence: export the model with that axis fixed")
        shapes.append(InputShape(read.name, tuple(d.dim_value for d in dims), read.symbolic, read.batch_axis))
    if missing:
        raise SpecError(src, _missing_axes(missing))
    if batch is None:
        raise SpecError(src, "no data input with a batch dimension")
    if seq_arg is not None and not filled:  # said, not ignored
        fixed = f" (its sequence is fixed at {seq})" if seq is not None else ""
        option = given_as("--seq")
        raise SpecError(src, f"{option}: no input has a symbolic sequence axis for {option} {seq_arg} to fill{fixed}")
    return batch, seq, tuple(shapes)


def _missing_axes(missing: dict[str, str]) -> str:
    """One line for every option a symbolic axis needs: "input 'x' has a symbolic batch dimension 'N'
    and input 'x' has a symbolic sequence dimension 'S' (axis 1): pass --batch and pass --seq"."""
    return f"{' and '.join(missing.values())}: {' and '.join(how_to_set(option) for option in missing)}"


def _key(node_or_function) -> tuple[str, str, str]:
    name = node_or_function.op_type if hasattr(node_or_function, "op_type") else node_or_function.name
    return node_or_function.domain, name, getattr(node_or_function, "overload", "")


def _all_nodes(nodes) -> list:
    """``nodes`` and, for an If, Loop or Scan, every node of its bodies, at any depth (the
    inliner expands calls there too); an explicit stack, so deep nesting is no Python recursion."""
    out, stack = [], list(nodes)[::-1]
    while stack:
        n = stack.pop()
        out.append(n)
        for a in reversed(n.attribute):
            for body in reversed(([a.g] if a.HasField("g") else []) + list(a.graphs)):
                stack.extend(reversed(body.node))
    return out


def _function_sizes(functions: dict) -> dict:
    """Function key -> how many nodes one call becomes once inlined, each function counted once
    from its callees' counts (40 nested functions each calling the one before twice count in 40
    steps, not 2^39; an explicit stack, so deep nesting is no Python recursion); a call back into
    a function being counted (recursion, which the inliner refuses) counts as one node."""
    sizes: dict = {}
    opened: set = set()
    for top in functions:
        stack = [(top, False)]
        while stack:
            key, ready = stack.pop()
            body = _all_nodes(functions[key].node)
            if ready:
                sizes[key] = sum(sizes.get(_key(n), 1) for n in body)
            elif key not in opened:
                opened.add(key)
                stack.append((key, True))
                stack.extend((_key(n), False) for n in body if _key(n) in functions and _key(n) not in opened)
    return sizes


def inline_local_functions(model, src: str):
    """The model with its model-local functions (``model.functions``: torch.onnx.dynamo_export's
    and onnxscript's ``pkg.torch.Linear`` ...) inlined, so their bodies (MatMul, Add, ...) are
    walked as standard operators. Each inlined node is named after the call it came from (``fc1``
    rather than ``MatMul_0``); the walk makes repeated names unique."""
    if not model.functions:
        return model
    from onnx.inliner import inline_local_functions as inline

    functions = {_key(f): f for f in model.functions}
    sizes = _function_sizes(functions)
    calls = [(n.name, sizes[_key(n)] if _key(n) in functions else 0) for n in model.graph.node]
    total = sum(sizes.get(_key(n), 1) or 1 for n in _all_nodes(model.graph.node))  # If/Loop/Scan bodies too
    if total > MAX_NODES:
        raise SpecError(src, f"its model-local functions inline to {total:,} nodes, more than the {MAX_NODES:,} "
                             "supported (functions calling functions many times over): not imported")
    try:
        flat = inline(model)
    except Exception as err:  # the inliner's own checks (a recursive function, a missing attribute)
        why = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise SpecError(src, f"cannot inline its model-local functions: {why}") from None
    if len(flat.graph.node) == total:  # the order is the calls' order: name them
        at = 0
        for name, k in calls:
            for node in flat.graph.node[at:at + k]:
                node.name = name
            at += k or 1
    return flat
