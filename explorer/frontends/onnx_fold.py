"""Fold the constant subgraphs that compute shapes, so shape inference can finish: ``fold_shapes``
evaluates them with numpy (one small handler per op below, opset-aware where the op changed),
replaces the folded nodes by initializers and re-runs shape inference while anything new folds.
Described in the manual: docs/specs.md, "ONNX" ("Shape subgraphs folded": what never folds).
"""

from __future__ import annotations

import numpy as np

MAX_ELEMENTS = 1 << 16
MAX_ROUNDS = 100
FLOAT_TYPES = {1, 10, 11, 16}
QUANTISED_TYPES = {2, 3, 21, 22}  # uint8 int8 uint4 int4


def _int_list(a) -> list[int]:
    return [int(v) for v in np.asarray(a).reshape(-1)]


def _axes(node, ins, attrs, k: int, opset: int, since: int):
    """An axes operand: an input from opset ``since`` on, an attribute before."""
    if opset >= since:
        return _int_list(ins[k]) if len(ins) > k and ins[k] is not None else None
    return list(attrs["axes"]) if "axes" in attrs else None


def _slice(node, ins, attrs, opset):
    x = ins[0]
    if opset >= 10:
        starts, ends = _int_list(ins[1]), _int_list(ins[2])
        axes = _int_list(ins[3]) if len(ins) > 3 and ins[3] is not None else list(range(len(starts)))
        steps = _int_list(ins[4]) if len(ins) > 4 and ins[4] is not None else [1] * len(starts)
    else:
        starts, ends = list(attrs["starts"]), list(attrs["ends"])
        axes, steps = list(attrs.get("axes", range(len(starts)))), [1] * len(starts)
    index = [slice(None)] * x.ndim
    for s, e, a, st in zip(starts, ends, axes, steps):
        index[a] = slice(s, e, st)
    return [x[tuple(index)]]


def _squeeze(node, ins, attrs, opset):
    axes = _axes(node, ins, attrs, 1, opset, 13)
    x = ins[0]
    return [np.squeeze(x, axis=tuple(axes)) if axes else np.squeeze(x)]


def _unsqueeze(node, ins, attrs, opset):
    axes = _axes(node, ins, attrs, 1, opset, 13)
    x = ins[0]
    rank = x.ndim + len(axes)
    for a in sorted(a % rank for a in axes):
        x = np.expand_dims(x, a)
    return [x]


def _reshape(node, ins, attrs, opset):
    x, shape = ins[0], _int_list(ins[1])
    if not attrs.get("allowzero", 0):
        shape = [x.shape[i] if d == 0 else d for i, d in enumerate(shape)]
    return [x.reshape(shape)]


def _reduce(fn):
    def run(node, ins, attrs, opset):
        since = 13 if node.op_type == "ReduceSum" else 18
        axes = _axes(node, ins, attrs, 1, opset, since)
        keep = bool(attrs.get("keepdims", 1))
        if not axes and attrs.get("noop_with_empty_axes", 0):
            return [ins[0]]
        return [fn(ins[0], axis=tuple(axes) if axes else None, keepdims=keep)]
    return run


def _div(node, ins, attrs, opset):
    a, b = ins
    if np.issubdtype(a.dtype, np.integer):
        q = np.abs(a) // np.abs(b)
        return [(q * np.sign(a) * np.sign(b)).astype(a.dtype)]  # ONNX integer Div truncates
    return [(a / b).astype(a.dtype)]


def _cast(node, ins, attrs, opset):
    from onnx import helper

    return [ins[0].astype(helper.tensor_dtype_to_np_dtype(attrs["to"]))]


def _constant_of_shape(node, ins, attrs, opset):
    from onnx import numpy_helper

    value = numpy_helper.to_array(attrs["value"]) if "value" in attrs else np.zeros(1, np.float32)
    shape = _small(_int_list(ins[0])) if len(ins) else ()
    return [np.full(shape, value.reshape(-1)[0], dtype=value.dtype)]


def _range(node, ins, attrs, opset):
    start, limit, delta = (np.asarray(v).reshape(()) for v in ins)
    if delta == 0 or abs((limit - start) / delta) > MAX_ELEMENTS:
        raise ValueError("too large to fold")
    return [np.arange(start, limit, delta, dtype=np.asarray(ins[0]).dtype)]


def _gather(node, ins, attrs, opset):
    return [np.take(ins[0], ins[1].astype(np.int64), axis=attrs.get("axis", 0))]


def _small(shape) -> tuple:
    if _numel(shape) > MAX_ELEMENTS:
        raise ValueError("too large to fold")
    return tuple(shape)


def _binary(fn):
    def run(node, ins, attrs, opset):
        _small(np.broadcast_shapes(ins[0].shape, ins[1].shape))
        return [np.asarray(fn(ins[0], ins[1]))]
    return run


def _where(node, ins, attrs, opset):
    _small(np.broadcast_shapes(*(x.shape for x in ins)))
    return [np.where(ins[0], ins[1], ins[2])]


def _expand(node, ins, attrs, opset):
    shape = _small(np.broadcast_shapes(ins[0].shape, tuple(_int_list(ins[1]))))
    return [np.broadcast_to(ins[0], shape).copy()]


def _tile(node, ins, attrs, opset):
    reps = _int_list(ins[1])
    _small([_numel(ins[0].shape), _numel(reps)])
    return [np.tile(ins[0], reps)]


def _variadic(fn):
    def run(node, ins, attrs, opset):
        out = ins[0]
        for x in ins[1:]:
            out = fn(out, x)
        return [out]
    return run


HANDLERS = {
    "Identity": lambda n, i, a, o: [i[0]],
    "Gather": _gather,
    "Concat": lambda n, i, a, o: [np.concatenate([np.atleast_1d(x) for x in i], axis=a.get("axis", 0))],
    "Unsqueeze": _unsqueeze,
    "Squeeze": _squeeze,
    "Slice": _slice,
    "Reshape": _reshape,
    "Cast": _cast,
    "Add": _binary(np.add), "Sub": _binary(np.subtract), "Mul": _binary(np.multiply), "Div": _div,
    "Mod": lambda n, i, a, o: [np.fmod(i[0], i[1]) if a.get("fmod", 0) else np.mod(i[0], i[1])],
    "Pow": lambda n, i, a, o: [np.power(i[0], i[1]).astype(i[0].dtype)],
    "Equal": _binary(np.equal), "Less": _binary(np.less), "Greater": _binary(np.greater),
    "LessOrEqual": _binary(np.less_equal), "GreaterOrEqual": _binary(np.greater_equal),
    "And": _binary(np.logical_and), "Or": _binary(np.logical_or), "Xor": _binary(np.logical_xor),
    "Not": lambda n, i, a, o: [np.logical_not(i[0])],
    "Where": _where,
    "Expand": _expand,
    "Tile": _tile,
    "Range": _range,
    "ConstantOfShape": _constant_of_shape,
    "Neg": lambda n, i, a, o: [np.negative(i[0])], "Abs": lambda n, i, a, o: [np.abs(i[0])],
    "Sign": lambda n, i, a, o: [np.sign(i[0])],
    "Floor": lambda n, i, a, o: [np.floor(i[0])], "Ceil": lambda n, i, a, o: [np.ceil(i[0])],
    "Sqrt": lambda n, i, a, o: [np.sqrt(i[0])], "Log": lambda n, i, a, o: [np.log(i[0])],
    "Min": _variadic(np.minimum), "Max": _variadic(np.maximum), "Sum": _variadic(np.add),
    "Transpose": lambda n, i, a, o: [np.transpose(i[0], a.get("perm"))],
    "ReduceProd": _reduce(np.prod), "ReduceSum": _reduce(np.sum), "ReduceMax": _reduce(np.max),
    "ReduceMin": _reduce(np.min),
}
FOLDABLE = frozenset(HANDLERS) | {"Shape", "Size"}  # the ops ``_Folder.evaluate`` may fold


def _const_value(t):
    """A stored tensor's value, or None when its data was left out (a weight) or is external."""
    from onnx import numpy_helper

    if t.data_location == 1 or _numel(t.dims) > MAX_ELEMENTS:
        return None
    try:
        a = numpy_helper.to_array(t)
    except Exception:  # noqa: BLE001 - data stripped or malformed: not a constant we can use
        return None
    return a if a.size == _numel(t.dims) else None


def _numel(dims) -> int:
    n = 1
    for d in dims:
        n *= int(d)
    return n


def _constant_node_value(node):
    from onnx import helper, numpy_helper

    for a in node.attribute:
        v = helper.get_attribute_value(a)
        if a.name == "value":
            return numpy_helper.to_array(v) if _numel(v.dims) <= MAX_ELEMENTS else None
        if a.name in ("value_int", "value_ints"):
            return np.array(v, dtype=np.int64)
        if a.name in ("value_float", "value_floats"):
            return np.array(v, dtype=np.float32)
    return None


class _Folder:
    def __init__(self, model, opset: int):
        from onnx import helper

        self.helper = helper
        self.opset = opset
        graph = model.graph
        self.values: dict[str, np.ndarray] = {}
        self.weights: set[str] = set()  # stored float tensors of rank >= 2: never folded through
        self.flat: set[str] = set()  # stored rank-1 float/int8 tensors: not folded into a rank >= 2 one (a weight)
        for t in graph.initializer:
            if t.data_type in FLOAT_TYPES and len(t.dims) >= 2:
                self.weights.add(t.name)
                continue
            if t.data_type in FLOAT_TYPES | QUANTISED_TYPES and len(t.dims) == 1:
                self.flat.add(t.name)
            v = _const_value(t)
            if v is not None:
                self.values[t.name] = v
        for node in graph.node:
            if node.op_type == "Constant" and node.output:
                value = next((a.t for a in node.attribute if a.name == "value" and a.HasField("t")), None)
                if value is not None and value.data_type in FLOAT_TYPES and len(value.dims) >= 2:
                    self.weights.add(node.output[0])  # a weight from a Constant node
                    continue
                v = _constant_node_value(node)
                if v is not None:
                    self.values[node.output[0]] = v

    def round(self, graph, shapes: dict[str, list]) -> dict[str, np.ndarray]:
        """Fold every node whose inputs are known (all its outputs, none a graph output);
        returns the newly folded tensors."""
        new: dict[str, np.ndarray] = {}
        outputs = {o.name for o in graph.output}
        values = self.values
        with np.errstate(all="ignore"):
            for node in graph.node:
                op = node.op_type
                if op not in FOLDABLE or not self.ready(node, op):
                    continue
                outs = [o for o in node.output if o]
                if not outs or any(o in values or o in outputs for o in outs) or node.domain not in ("", "ai.onnx"):
                    continue
                try:
                    vals = self.evaluate(node, shapes)
                except Exception:  # noqa: BLE001 - an op we cannot evaluate stays for shape inference
                    vals = None
                if vals is None or len(vals) < len(node.output):
                    continue
                vals = [np.asarray(v) for v in vals]
                if any(v.size > MAX_ELEMENTS for v in vals) or self.weight_from_flat(node, vals):
                    continue
                for o, v in zip(node.output, vals):
                    if o:
                        values[o] = new[o] = v
        return new

    def ready(self, node, op: str) -> bool:
        """Whether ``evaluate`` can fold ``node`` (of a foldable op): a Shape or Size always
        asks the shapes; any other op needs every input a known value and none a weight."""
        if op in ("Shape", "Size"):
            return True
        values, weights = self.values, self.weights
        return all(x in values and x not in weights for x in node.input if x)

    def weight_from_flat(self, node, vals) -> bool:
        """A float or 8/4-bit matrix (or higher) made from a stored flat tensor (a weight stored as
        a vector and Reshaped, before or after its DequantizeLinear): left to the importer, which
        reads it as a stored weight."""
        return bool(self.flat.intersection(node.input)) and any(
            (v.dtype.kind == "f" or (v.dtype.kind in "iu" and v.dtype.itemsize == 1)) and v.ndim >= 2 for v in vals)

    def evaluate(self, node, shapes):
        op = node.op_type
        if op in ("Shape", "Size"):
            s = shapes.get(node.input[0])
            if s is None or any(d is None for d in s):
                return None
            if op == "Size":
                return [np.array(_numel(s), dtype=np.int64)]
            attrs = {a.name: self.helper.get_attribute_value(a) for a in node.attribute}
            return [np.array(s[attrs.get("start", 0):attrs.get("end", len(s))], dtype=np.int64)]
        fn = HANDLERS.get(op)
        if fn is None or any(x in self.weights for x in node.input if x):
            return None
        ins = [self.values.get(x) if x else None for x in node.input]
        if any(v is None for x, v in zip(node.input, ins) if x):
            return None
        attrs = {a.name: self.helper.get_attribute_value(a) for a in node.attribute}
        return fn(node, ins, attrs, self.opset)


def _shapes(model) -> dict[str, list]:
    """Tensor -> its dimensions (None where unknown), for the tensors a Shape or Size node reads
    (the only shapes folding asks)."""
    g = model.graph
    wanted = {n.input[0] for n in g.node if n.op_type in ("Shape", "Size") and n.input}
    out = {}
    for vi in (*g.input, *g.value_info, *g.output):
        if vi.name in wanted:
            t = vi.type.tensor_type
            if t.HasField("shape"):
                out[vi.name] = [d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else None
                                for d in t.shape.dim]
    for t in g.initializer:
        if t.name in wanted:
            out[t.name] = [int(d) for d in t.dims]
    return out


def fold_shapes(model, infer, infer_plain):
    """(model after folding and shape inference, names of folded tensors). ``infer(model)`` runs
    shape inference and returns the inferred model; ``infer_plain`` runs it without data
    propagation: its rounds come first, so the shape values propagation would compute are
    folded constants (and their sizes known, and bounded: onnx_bounds.py) before it runs.
    ``infer`` may return the model it was given (propagation could add no shape: the
    importer's ``every_shape_known``): the rounds, which found nothing new on it, end there."""
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 17)
    folder = _Folder(model, opset)
    folded: set[str] = set()
    converged = False
    for run in (infer_plain, infer):
        given, model = model, run(model)
        if model is given and converged:
            break
        for _ in range(MAX_ROUNDS):
            new = folder.round(model.graph, _shapes(model))
            if not new:
                converged = True
                break
            _replace(model.graph, new)
            folded.update(new)
            model = run(model)
    return model, folded


def every_shape_known(graph) -> bool:
    """Whether every node output is a tensor of known element type and known dimensions (data
    propagation, which only makes shapes known, could then add nothing)."""
    known = {t.name for t in graph.initializer}
    for vi in (*graph.input, *graph.value_info, *graph.output):
        t = vi.type.tensor_type
        if t.elem_type and t.HasField("shape") and all(d.HasField("dim_value") for d in t.shape.dim):
            known.add(vi.name)
    return all(o in known for n in graph.node for o in n.output if o)


def _replace(graph, new: dict) -> None:
    """The nodes computing ``new``'s tensors replaced by initializers holding their values."""
    from onnx import numpy_helper

    keep = [n for n in graph.node if not n.output or any(o not in new for o in n.output if o)]
    del graph.node[:]
    graph.node.extend(keep)
    for name, v in new.items():
        graph.initializer.append(numpy_helper.from_array(v, name))
    kept = [vi for vi in graph.value_info if vi.name not in new]
    del graph.value_info[:]
    graph.value_info.extend(kept)
