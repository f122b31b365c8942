"""Import an ONNX model as a network: ``--model path/to/net.onnx``.

Reads the graph and the initializers' SHAPES only (``onnx_read``: large weights are never
loaded, external data files never opened), fills symbolic batch and sequence axes from
``--batch`` and ``--seq``, runs shape inference with data propagation, then walks the nodes
(ONNX keeps them in topological order) tracking which network node each activation comes from:

- Conv, Gemm, and MatMul with a weight (an initializer or Constant as second input) become
  weighted layers (conv, fc); Conv keeps its ``group``. An fc layer's tokens per sample are its
  input's elements / (batch x input features): batch-first, sequence-first and folded layouts
  all give the same sizes.
- Gather on a float matrix initializer is an embedding (vocabulary x hidden) reading the
  network input. Indices that are constants (position ids) make a lookup shared by the batch:
  costed as a per-token lookup, and listed in ``approximations``.
- An operator reading one activation passes its producer through (activations, norms,
  pooling, reshapes, transposes, Split/Slice, softmax, masks, ...).
- Attention: a MatMul/Einsum of two activations opens an attention node over its producers
  (Q.K^T); a second MatMul that reads it with another producer (softmax.V) adds that producer
  and closes it; a fused ``Attention``/``MultiHeadAttention`` node does both. Fused QKV
  projections (Split or Slice of one MatMul) give one producer. The heads are the score
  tensor's elements / (batch x tokens^2).
- Any other operator combining two or more producers is a join: Add, Sum, Sub, Mul, Div,
  Max, Min, Mean -> add; Concat -> concat.
- Tensors from integer graph inputs (token ids, attention masks), from inputs named like a
  mask, and constants are not activations: ids feed embeddings, masks are side inputs.

The graph goes through the same builder as YAML networks (``build_graph``), so the same checks
apply. What is costed approximately is listed in ``Network.approximations``.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..core.errors import SpecError
from ..core.network import NETWORK_INPUT, LayerKind, Network
from .network_yaml import build_graph

JOIN_OPS = {
    "Add": LayerKind.ADD, "Sum": LayerKind.ADD, "Sub": LayerKind.ADD, "Mul": LayerKind.ADD, "Div": LayerKind.ADD,
    "Max": LayerKind.ADD, "Min": LayerKind.ADD, "Mean": LayerKind.ADD, "Concat": LayerKind.CONCAT,
}
ACT_PRODUCTS = {"MatMul", "Einsum"}  # a product of two activations: attention
FUSED_ATTENTION = {"Attention", "MultiHeadAttention"}  # opset 23 / com.microsoft
SHAPE_OPS = {"Shape", "Size", "Constant", "ConstantOfShape", "Range", "NonZero"}
BATCH_NAMES = re.compile(r"^(n|b|bs|batch.*|.*_batch|.*batch_size)$", re.IGNORECASE)
INT_TYPES = {2, 3, 4, 5, 6, 7, 9, 12, 13}  # uint8 int8 uint16 int16 int32 int64 bool uint32 uint64
FLOAT_TYPES = {1, 10, 11, 16}  # float float16 double bfloat16


def _prod(xs) -> int:
    out = 1
    for x in xs:
        out *= x
    return out


def load_onnx(path: str | Path, batch: int | None = None, sequence: int | None = None) -> Network:
    return _Importer(str(path), batch, sequence).run()


class _Importer:
    def __init__(self, src: str, batch: int | None, sequence: int | None):
        self.src, self.batch_arg, self.seq_arg = src, batch, sequence
        self.nodes: list[tuple[int, dict]] = []
        self.used_names: set[str] = {NETWORK_INPUT}
        self.source: dict[str, str] = {}  # activation tensor -> producing network node
        self.side: set[str] = set()  # tensors derived from integer inputs only (ids, masks)
        self.consts: dict = {}  # tensor name -> TensorProto (initializers, Constant values)
        self.attention: dict[str, dict] = {}  # open attention node name -> its spec
        self.approx: list[str] = []

    def fail(self, msg: str) -> SpecError:
        return SpecError(self.src, msg)

    # ---- reading --------------------------------------------------------------------------
    def read(self):
        from .onnx_read import WireError, read_model_shapes

        try:
            model = read_model_shapes(self.src)
        except FileNotFoundError:
            raise self.fail("no such file") from None
        except (WireError, ValueError, IndexError, OSError) as err:
            raise self.fail(f"cannot read as ONNX: {str(err).splitlines()[0] if str(err) else type(err).__name__}") from None
        except Exception as err:  # protobuf DecodeError and others
            raise self.fail(f"cannot read as ONNX: {str(err).splitlines()[0] if str(err) else type(err).__name__}") from None
        if not model.graph.node:
            raise self.fail("cannot read as ONNX: no graph nodes")
        return model

    def fill_dynamic_axes(self, graph) -> tuple[int, int | None]:
        """Set symbolic axes of the data inputs: a batch-named axis (or axis 0) from --batch, any
        other symbolic axis from --seq. Returns (batch, sequence or None)."""
        inits = {t.name for t in graph.initializer}
        batch = seq = None
        filled = False
        for inp in graph.input:
            if inp.name in inits:
                continue
            dims = inp.type.tensor_type.shape.dim
            for axis, d in enumerate(dims):
                is_batch = (d.dim_param and BATCH_NAMES.match(d.dim_param)) or (axis == 0 and not any(
                    x.dim_param and BATCH_NAMES.match(x.dim_param) for x in dims))
                if d.HasField("dim_value") and d.dim_value > 0:
                    if is_batch and batch is None:
                        batch = d.dim_value
                    elif not is_batch and axis == 1 and seq is None and inp.type.tensor_type.elem_type in INT_TYPES:
                        seq = d.dim_value  # token ids [batch, sequence]
                    continue
                sym = d.dim_param or "?"
                if is_batch:
                    if self.batch_arg is None:
                        raise self.fail(f"input {inp.name!r} has a symbolic batch dimension {sym!r}: pass --batch")
                    d.dim_value = batch = self.batch_arg
                else:
                    if self.seq_arg is None:
                        raise self.fail(f"input {inp.name!r} has a symbolic sequence dimension {sym!r} (axis {axis}): pass --seq")
                    d.dim_value = seq = self.seq_arg
                    filled = True
        if batch is None:
            raise self.fail("no data input with a batch dimension")
        if self.seq_arg is not None and not filled:  # said, not ignored
            fixed = f" (its sequence is fixed at {seq})" if seq is not None else ""
            raise self.fail(f"--seq: no input has a symbolic sequence axis for --seq {self.seq_arg} to fill{fixed}")
        return batch, seq

    # ---- naming and shapes ---------------------------------------------------------------
    def new_name(self, node, i: int) -> str:
        base = node.name or f"{node.op_type}_{i}"
        name, k = base, 1
        while name in self.used_names:
            k += 1
            name = f"{base}_{k}"
        self.used_names.add(name)
        return name

    def shape_of(self, tensor: str, desc: str) -> list[int]:
        s = self.shapes.get(tensor)
        if s is None and tensor in self.consts:
            s = list(self.consts[tensor].dims)
        if not s or any(d is None or d <= 0 for d in s):
            raise self.fail(f"{desc}: no inferred shape for tensor {tensor!r}")
        return s

    def per_sample(self, elements: int, per_token: int, desc: str, what: str) -> int:
        """Tokens (spatial positions) per sample: elements / (batch x per_token)."""
        if elements % (self.B * per_token):
            raise self.fail(f"{desc}: {what} has {elements} elements, not a multiple of batch {self.B} x {per_token}")
        return elements // (self.B * per_token)

    # ---- the walk ------------------------------------------------------------------------
    def run(self) -> Network:
        from onnx import helper, shape_inference

        model = self.read()
        graph = model.graph
        self.B, seq = self.fill_dynamic_axes(graph)
        self.seq = seq
        try:
            model = shape_inference.infer_shapes(model, data_prop=True)
        except Exception as err:
            raise self.fail(f"shape inference failed: {str(err).splitlines()[0]}") from None
        graph = model.graph
        self.consts = {t.name: t for t in graph.initializer}
        self.shapes: dict[str, list[int | None]] = {}
        for vi in list(graph.input) + list(graph.value_info) + list(graph.output):
            t = vi.type.tensor_type
            if t.HasField("shape"):
                self.shapes[vi.name] = [d.dim_value if d.HasField("dim_value") else None for d in t.shape.dim]
        for inp in graph.input:
            if inp.name not in self.consts:
                if inp.type.tensor_type.elem_type in INT_TYPES or "mask" in inp.name.lower():
                    self.side.add(inp.name)  # token ids, positions, attention masks (float masks by name)
                else:
                    self.source[inp.name] = NETWORK_INPUT
        self.helper = helper
        for i, node in enumerate(graph.node):
            self.visit(i, node)
        weighted = [n for _, n in self.nodes if not n["kind"].is_join]
        if not weighted:
            raise self.fail("no weighted layer (Conv, Gemm, MatMul with a weight, or Gather on a table) found")
        for name, att in self.attention.items():
            if att["open"]:
                self.approx.append(f"{name}: a product of two activations without a second product (softmax.V); "
                                   "costed as an attention node")
        tokens = [n["s_in"][0] for n in weighted if n["kind"] is LayerKind.EMBEDDING and not n.get("broadcast")]
        seq = seq or (tokens[0] if tokens else None)
        approx = tuple(dict.fromkeys(self.approx))
        return build_graph(graph.name or Path(self.src).stem, self.B, self.nodes, self.src, sequence=seq, approximations=approx)

    def attrs(self, node) -> dict:
        return {a.name: self.helper.get_attribute_value(a) for a in node.attribute}

    def visit(self, i: int, node) -> None:
        op = node.op_type
        desc = f"node {node.name or i!r} ({op})"
        if op == "Constant" and node.output:
            value = next((a.t for a in node.attribute if a.name == "value" and a.HasField("t")), None)
            if value is not None:
                self.consts[node.output[0]] = value  # a weight may come from a Constant node
            return
        if op == "Gather" and node.input and self.is_table(node.input[0]):
            self.embedding(i, node, desc)
            return
        acts = [x for x in node.input if x and x in self.source]
        producers = list(dict.fromkeys(self.source[x] for x in acts))
        if op in SHAPE_OPS or not producers:
            if op not in SHAPE_OPS and any(x in self.side for x in node.input if x):
                self.side.update(o for o in node.output if o)
            return  # constants, shape arithmetic, ids and masks are not activations
        if op in ("Conv", "Gemm", "MatMul") and len(node.input) > 1 and node.input[1] in self.consts:
            self.weighted(i, node, desc)
            return
        if op in ("Conv", "Gemm") or (op == "MatMul" and len(acts) == 1):
            raise self.fail(f"{desc}: its weight (second input) is not a constant tensor; only products of an "
                            "activation with a stored weight are weighted layers")
        if op in FUSED_ATTENTION:
            self.attention_node(i, node, desc, producers, closes=True)
            return
        if op in ACT_PRODUCTS and len(acts) >= 2:
            open_att = [p for p in producers if p in self.attention and self.attention[p]["open"]]
            if open_att:
                self.close_attention(open_att[0], node, desc, producers)
            else:
                self.attention_node(i, node, desc, producers, closes=False)
            return
        if len(producers) == 1:
            for out in node.output:
                if out:
                    self.source[out] = producers[0]
            return
        if op == "MatMul":
            raise self.fail(f"{desc}: its weight (second input) is not a constant tensor; only products of an "
                            "activation with a stored weight are weighted layers")
        kind = JOIN_OPS.get(op)
        if kind is None:
            raise self.fail(f"{desc}: combines activations of {', '.join(producers)} and is not a supported join "
                            f"({', '.join(sorted(JOIN_OPS))}, or MatMul/Einsum of two activations for attention)")
        self.join(i, node, desc, kind, producers, acts)

    def is_table(self, name: str) -> bool:
        t = self.consts.get(name)
        return t is not None and len(t.dims) == 2 and t.data_type in FLOAT_TYPES

    def add_node(self, spec: dict, out: str) -> None:
        self.nodes.append((len(self.nodes), spec))
        self.source[out] = spec["name"]

    def embedding(self, i: int, node, desc: str) -> None:
        vocab, hidden = (int(d) for d in self.consts[node.input[0]].dims)
        axis = self.attrs(node).get("axis", 0)
        if axis != 0:
            raise self.fail(f"{desc}: a Gather on a table along axis {axis} is not an embedding lookup")
        name = self.new_name(node, i)
        idx = node.input[1] if len(node.input) > 1 else ""
        broadcast = idx not in self.side and idx not in self.source
        known = self.shapes.get(node.output[0])
        if broadcast and (not known or any(not d for d in known)) and self.seq:
            known = [self.seq, hidden]  # positions 0..S-1 computed from the input's shape (Range, Slice)
        out = known if known and all(known) else self.shape_of(node.output[0], desc)
        self.shapes[node.output[0]] = list(out)
        if broadcast:  # constant indices (positions): one lookup for the whole batch, broadcast
            tokens = _prod(out) // hidden
            if len(out) >= 3 and out[0] == self.B and tokens % self.B == 0:
                tokens //= self.B  # constant ids already expanded to the batch (token types)
            self.approx.append(f"{name}: embedding looked up with constant indices (positions) and broadcast over "
                               "the batch; costed as a per-token lookup of every sample")
        else:
            tokens = self.per_sample(_prod(out), hidden, desc, "its output")
        spec = {"name": name, "path": desc, "kind": LayerKind.EMBEDDING, "inputs": [], "din": vocab, "dout": hidden,
                "kernel": (1, 1), "s_in": (tokens, 1), "s_out": (tokens, 1), "broadcast": broadcast}
        self.add_node(spec, node.output[0])

    def weighted(self, i: int, node, desc: str) -> None:
        name = self.new_name(node, i)
        x = node.input[0]
        if x not in self.source:
            raise self.fail(f"{desc}: its data input {x!r} is not an activation")
        w = [int(d) for d in self.consts[node.input[1]].dims]
        attrs = self.attrs(node)
        xs, ys = self.shape_of(x, desc), self.shape_of(node.output[0], desc)
        spec: dict = {"name": name, "path": desc, "inputs": [self.source[x]], "size": None}
        if node.op_type == "Conv":
            group = int(attrs.get("group", 1))
            if len(xs) != 4 or len(w) != 4:
                raise self.fail(f"{desc}: only 2-D convolutions are supported (input rank {len(xs)})")
            if xs[0] != self.B:
                raise self.fail(f"{desc}: batch {xs[0]} differs from the network's {self.B}")
            spec.update(kind=LayerKind.CONV, din=w[1] * group, dout=w[0], kernel=(w[2], w[3]),
                        s_in=(xs[2], xs[3]), s_out=(ys[2], ys[3]), groups=group)
        else:
            if len(w) != 2:
                raise self.fail(f"{desc}: the weight must be a matrix, got rank {len(w)}")
            if node.op_type == "Gemm":
                if attrs.get("transA", 0):
                    raise self.fail(f"{desc}: transA=1 is not supported")
                din, dout = (w[1], w[0]) if attrs.get("transB", 0) else (w[0], w[1])
            else:
                din, dout = w
            tokens = self.per_sample(_prod(xs), din, desc, f"its input {x!r}")
            spec.update(kind=LayerKind.FC, din=din, dout=dout, kernel=(1, 1), s_in=(tokens, 1), s_out=(tokens, 1))
        self.add_node(spec, node.output[0])

    def attention_node(self, i: int, node, desc: str, producers: list[str], closes: bool) -> None:
        name = self.new_name(node, i)
        heads = 0
        if closes:
            heads = int(self.attrs(node).get("num_heads", self.attrs(node).get("q_num_heads", 0)))
        spec = {"name": name, "path": desc, "kind": LayerKind.ATTENTION, "inputs": list(producers), "size": None,
                "heads": heads, "open": not closes, "scores": node.output[0]}
        self.attention[name] = spec
        if closes:
            self.finish_attention(spec, node.output[0], desc)
        self.add_node(spec, node.output[0])

    def close_attention(self, name: str, node, desc: str, producers: list[str]) -> None:
        spec = self.attention[name]
        for p in producers:
            if p != name and p not in spec["inputs"]:
                spec["inputs"].append(p)
        spec["open"] = False
        self.source[node.output[0]] = name
        self.finish_attention(spec, node.output[0], desc)

    def finish_attention(self, spec: dict, context: str, desc: str) -> None:
        """Context channels and heads from the shapes: tokens S from the first input's producer
        (its tokens per sample), channels = context elements / (B x S), heads = score elements
        / (B x S^2)."""
        by_name = {n["name"]: n for _, n in self.nodes}
        first = by_name.get(spec["inputs"][0])
        if first is None:
            raise self.fail(f"{desc}: attention reading the network input directly is not supported")
        tokens = _tokens(first)
        spec["tokens"] = tokens
        ctx = _prod(self.shape_of(context, desc))
        spec["channels"] = self.per_sample(ctx, tokens, desc, "its context")
        if not spec["heads"] and spec["scores"] != context and spec["scores"] in self.shapes:
            scores = _prod(self.shape_of(spec["scores"], desc))
            if scores % (self.B * tokens * tokens) == 0:
                spec["heads"] = scores // (self.B * tokens * tokens)
        if not spec["heads"]:
            self.approx.append(f"{spec['name']}: attention heads not recognised; type II is offered at every level")
        elif spec["channels"] % spec["heads"]:
            self.approx.append(f"{spec['name']}: {spec['heads']} heads do not divide {spec['channels']} channels; "
                               "heads ignored")
            spec["heads"] = 0

    def join(self, i: int, node, desc: str, kind: LayerKind, producers: list[str], acts: list[str]) -> None:
        name = self.new_name(node, i)
        by_name = {n["name"]: n for _, n in self.nodes}
        chans = [_channels(by_name[p]) for p in producers if p != NETWORK_INPUT]
        if NETWORK_INPUT in producers:
            first = next(x for x in acts if self.source[x] == NETWORK_INPUT)
            chans.append(self.shape_of(first, desc)[1] if len(self.shape_of(first, desc)) == 4 else self.shape_of(first, desc)[-1])
        c = sum(chans) if kind is LayerKind.CONCAT else max(chans)
        out = self.shapes.get(node.output[0])
        if kind is not LayerKind.CONCAT and (not out or not all(out)):  # broadcasting shape inference gave up
            out = max((self.shape_of(x, desc) for x in acts), key=_prod)
            self.shapes[node.output[0]] = out
        out = self.shape_of(node.output[0], desc)
        if len(out) == 4 and out[1] == c and out[0] == self.B:
            size = (out[2], out[3])
        else:
            size = (self.per_sample(_prod(out), c, desc, "its output"), 1)
        if kind is not LayerKind.CONCAT:
            broadcast_lookups = {n["name"] for _, n in self.nodes if n.get("broadcast")}  # already listed
            for x in acts:
                if self.source[x] not in broadcast_lookups and _prod(self.shape_of(x, desc)) < _prod(out):
                    self.approx.append(f"{name}: an input broadcast to the join's size; its edge is costed at the "
                                       "join's full tensor")
                    break
        self.add_node({"name": name, "path": desc, "kind": kind, "inputs": producers, "size": size, "c": c}, node.output[0])


def _channels(spec: dict) -> int:
    """Output channels of a node spec being built."""
    if spec["kind"] is LayerKind.ATTENTION:
        return spec["channels"]
    return spec["c"] if spec["kind"].is_join else spec["dout"]


def _tokens(spec: dict) -> int:
    """Output positions per sample of a node spec being built."""
    if spec["kind"] is LayerKind.ATTENTION:
        return spec["tokens"]
    size = spec["size"] if spec["kind"].is_join else spec["s_out"]
    return size[0] * size[1]
