"""Import an ONNX model as a network: ``--model path/to/net.onnx``.

Described in the manual: docs/specs.md, "ONNX".
"""

from __future__ import annotations

from math import prod
from pathlib import Path

from ..core.errors import SpecError
from ..core.names import given_as
from ..core.network import NETWORK_INPUT, LayerKind, Network
from .graph_build import build_graph
from .onnx_bounds import shape_problem
from .onnx_checks import declared_shape_problem, empty_weight_problem, initializer_problem, opset_problem, perm_problem
from .onnx_graph import (INT_TYPES, dead_note, fill_dynamic_axes, inline_local_functions, live_nodes, node_label,
                         ordered_nodes, printable)
from .onnx_shared import record_use, shared_notes

JOIN_OPS = {
    "Add": LayerKind.ADD, "Sum": LayerKind.ADD, "Sub": LayerKind.ADD, "Mul": LayerKind.ADD, "Div": LayerKind.ADD,
    "Max": LayerKind.ADD, "Min": LayerKind.ADD, "Mean": LayerKind.ADD, "Concat": LayerKind.CONCAT,
}
ACT_PRODUCTS = {"MatMul", "Einsum"}  # a product of two activations: attention
FUSED_ATTENTION = {"Attention", "MultiHeadAttention"}  # opset 23 / com.microsoft
SHAPE_OPS = {"Shape", "Size", "Constant", "ConstantOfShape", "Range", "NonZero"}
FLOAT_TYPES = {1, 10, 11, 16}  # float float16 double bfloat16
QUANTISED_OPS = {"ConvInteger", "MatMulInteger", "QLinearConv", "QLinearMatMul"}  # the QOperator format
WEIGHTED_UNSUPPORTED = {"ConvTranspose", "LSTM", "GRU", "RNN", "DeformConv"} | QUANTISED_OPS  # holding a weight not read
CONTROL_FLOW = {"If", "Loop", "Scan"}  # their bodies (subgraphs) are not walked
PRODUCTS = {"Conv", "Gemm", "MatMul", "Einsum", "Attention"} | WEIGHTED_UNSUPPORTED
QUANTISED_TYPES = {2, 3, 21, 22}  # uint8 int8 uint4 int4: a custom operator's packed weights
KNOWN_DOMAINS = {"", "ai.onnx"}
MS_PASS_THROUGH = {"Gelu", "FastGelu", "BiasGelu", "QuickGelu", "LayerNormalization", "SimplifiedLayerNormalization",
                   "SkipLayerNormalization", "SkipSimplifiedLayerNormalization", "RotaryEmbedding", "BiasAdd",
                   "BiasSoftmax"}  # com.microsoft operators on activations without weights


def load_onnx(path: str | Path, batch: int | None = None, sequence: int | None = None) -> Network:
    return _Importer(str(path), batch, sequence).run()


class _Importer:
    def __init__(self, src: str, batch: int | None, sequence: int | None):
        self.src, self.batch_arg, self.seq_arg = src, batch, sequence
        self.nodes: list[tuple[int, dict]] = []
        self.by_name: dict[str, dict] = {}  # the same specs by node name
        self.used_names: set[str] = {NETWORK_INPUT}
        self.source: dict[str, str] = {}  # activation tensor -> producing network node
        self.side: set[str] = set()  # tensors derived from integer inputs only (ids, masks)
        self.consts: dict = {}  # tensor name -> TensorProto (initializers, Constant values)
        self.attention: dict[str, dict] = {}  # open attention node name -> its spec
        self.part: dict[str, int] = {}  # tensor -> channels, when a channel slice of its producer's output
        self.experts: dict[str, str] = {}  # tensor -> the stored weight a router's indices select from
        self.folded: set[str] = set()  # constants computed by folding shape subgraphs
        self.bases: dict[str, set[str]] = {}  # weight view (a Transpose of a stored weight) -> the stored weights
        self.gathered: set[str] = set()  # tables an embedding Gather reads (a tied LM head shares one)
        self.quantised: dict[str, str] = {}  # stored quantised weight -> its type name, read through DequantizeLinear
        self.dequantised: dict[str, str] = {}  # every stored integer tensor read through DequantizeLinear -> type name
        self.uses: dict[str, list[str]] = {}  # stored weight -> the layers reading it whole (onnx_shared.py)
        self.approx: list[str] = []
        self.first_out: dict[str, int] = {}  # a node's first output -> its number in the file
        self.plain = None  # the model the last shape inference without data propagation returned

    def fail(self, msg: str) -> SpecError:
        return SpecError(self.src, msg)

    # ---- reading --------------------------------------------------------------------------
    def read(self):
        from .onnx_read import read_model_shapes

        try:
            model = read_model_shapes(self.src)
        except FileNotFoundError:
            raise self.fail("no such file") from None
        except IsADirectoryError:
            raise self.fail("is a directory, not a file") from None
        except Exception as err:  # WireError, ValueError, IndexError, OSError, protobuf DecodeError and others
            raise self.fail(f"cannot read as ONNX: {str(err).splitlines()[0] if str(err) else type(err).__name__}") from None
        if not model.graph.node:
            raise self.fail("cannot read as ONNX: no graph nodes")
        problem = opset_problem(model) or initializer_problem(model.graph)
        if problem:
            raise self.fail(problem)
        return model

    # ---- naming and shapes ---------------------------------------------------------------
    def new_name(self, node, i: int) -> str:
        base = printable(node.name) if node.name else f"{printable(node.op_type)}_{i}"
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
            raise self.fail(f"{desc}: {shape_problem(self.model, tensor, s)}")
        return s

    def per_sample(self, elements: int, per_token: int, desc: str, what: str, unit: str = "features") -> int:
        """Tokens (spatial positions) per sample: elements / (batch x per_token), ``unit`` naming
        what per_token counts in the refusal."""
        whole = self.B * per_token
        if elements % whole:
            raise self.fail(f"{desc}: {what} has {elements:,} elements, not a multiple of batch x {unit} = "
                            f"{self.B} x {per_token} = {whole:,}")
        return elements // whole

    # ---- the walk ------------------------------------------------------------------------
    def run(self) -> Network:
        from onnx import helper

        from .onnx_fold import fold_shapes

        model = inline_local_functions(self.read(), self.src)
        graph = model.graph
        nodes, dead = live_nodes(graph, ordered_nodes(graph, self.src))  # dangling inputs and cycles refused here
        if dead:
            self.approx.append(dead_note(graph, dead))
        index = {id(n): k for k, n in enumerate(graph.node)}
        self.first_out = first_out = {n.output[0]: index[id(n)] for n in nodes if n.output}
        del graph.node[:]
        graph.node.extend(nodes)
        self.B, seq, input_shapes = fill_dynamic_axes(graph, self.src, self.batch_arg, self.seq_arg)
        self.seq = seq
        problem = declared_shape_problem(model)  # a lying value_info or output, named (not the node reading it)
        if problem:
            raise self.fail(problem)
        model, self.folded = fold_shapes(self.assume_custom_shapes(model), self.infer,
                                         lambda m: self.infer(m, data_prop=False))
        self.model = model  # for shape_problem's strict inference, on a refusal only
        graph = model.graph
        self.read_inputs(graph)
        self.helper = helper
        self.gathered = {n.input[0] for n in graph.node if n.op_type == "Gather" and n.input and self.is_table(n.input[0])}
        for k, node in enumerate(graph.node):
            self.visit(first_out.get(node.output[0], k) if node.output else k, node)
        if self.quantised:
            from .onnx_qdq import quantised_note

            self.approx.append(quantised_note(self.quantised))
        self.approx.extend(shared_notes(self.uses, self.consts))
        weighted = [n for _, n in self.nodes if not n["kind"].is_join]
        if not weighted:
            raise self.fail("no weighted layer (Conv, Gemm, MatMul or Einsum with a weight, or Gather on a table) found")
        for name, att in self.attention.items():
            if att["open"]:
                self.approx.append(f"{name}: a product of two activations without a second product (softmax.V); "
                                   "costed as an attention node")
        self.check_open_attention()
        tokens = [n["s_in"][0] for n in weighted if n["kind"] is LayerKind.EMBEDDING and not n.get("broadcast")]
        seq = seq or (tokens[0] if tokens else None)
        approx = tuple(dict.fromkeys(self.approx))
        return build_graph(printable(graph.name) or Path(self.src).stem, self.B, self.nodes, self.src, sequence=seq,
                           approximations=approx, input_shapes=input_shapes)

    def read_inputs(self, graph) -> None:
        """The stored tensors, every inferred shape, and the graph inputs as data or side inputs."""
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

    def check_open_attention(self) -> None:
        """A product of two activations never closed by a second one must still read as an
        attention (its context = the last input's channels, or a third of one fused input);
        otherwise it is refused here, not with a YAML field an ONNX user cannot give."""
        for name, att in self.attention.items():
            if not att["open"]:
                continue
            chans = [_channels(self.by_name[p]) for p in att["inputs"] if p in self.by_name]
            c = sum(chans)
            out = chans[-1] if len(chans) > 1 else (c // 3 if c % 3 == 0 else 0)
            if not out or out > c or (att["heads"] and out % att["heads"]):
                raise self.fail(f"{att['path']}: a product of two activations (inputs from {', '.join(att['inputs'])}) "
                                "is neither a weighted layer nor an attention (no softmax.V product follows and its "
                                f"inputs' channels {chans} give no context width): not supported")

    def assume_custom_shapes(self, model):
        """Operators of unknown domains have no shape function: take each one's output to have
        its first input's type (it is then walked as passing that input through, with a note)."""
        custom = [n for n in model.graph.node if n.domain not in KNOWN_DOMAINS and n.input and n.output]
        for _ in range(len(custom)):
            model = self.infer(model)
            known = {vi.name: vi for vi in list(model.graph.input) + list(model.graph.value_info)}
            new = [(n.output[0], known[n.input[0]]) for n in custom if n.output[0] not in known and n.input[0] in known]
            if not new:
                break
            for out, vi in new:
                copy = model.graph.value_info.add()
                copy.CopyFrom(vi)
                copy.name = out
        return model

    def infer(self, model, data_prop: bool = True):
        """Shape inference; with data propagation only once a pass without it found no 1-D
        integer tensor of known length too long to propagate, nor too many elements together
        (onnx_bounds.py; a length only propagation would know is not checked: shape folding
        makes most such lengths known first). That pass is skipped
        for the model the last pass without propagation returned (its shapes are that pass's);
        so is propagation itself when that pass knew every node output's shape (it could add
        none): the model is returned as it is."""
        from onnx import shape_inference

        from .onnx_bounds import check_propagation
        from .onnx_fold import every_shape_known

        if data_prop:
            check_propagation(model, self.src, lambda m: m if m is self.plain else self.infer(m, data_prop=False),
                              self.label)
            if model is self.plain and every_shape_known(model.graph):
                return model
        try:
            out = shape_inference.infer_shapes(model, data_prop=data_prop)
        except Exception as err:  # noqa: BLE001 - onnx raises several types
            raise self.fail(f"shape inference failed: {printable((str(err).splitlines() or [''])[0])}") from None
        self.plain = None if data_prop else out
        return out

    def label(self, node, k: int) -> str:
        """``node`` as messages name it: by its name, else by its number in the file (folding moves it)."""
        return node_label(node, self.first_out.get(node.output[0], k) if node.output else k)

    def attrs(self, node) -> dict:
        return {a.name: self.helper.get_attribute_value(a) for a in node.attribute}

    def visit(self, i: int, node) -> None:
        op = node.op_type
        desc = node_label(node, i)
        if op == "Constant" and node.output:
            value = next((a.t for a in node.attribute if a.name == "value" and a.HasField("t")), None)
            if value is not None:
                self.consts[node.output[0]] = value  # a weight may come from a Constant node
            return
        if node.domain not in KNOWN_DOMAINS and not self.custom_op(node, desc):
            return
        self.refuse_unread_weights(node, desc)
        self.refuse_malformed(node, desc)
        if op in ("DequantizeLinear", "DynamicQuantizeLinear") and self.quantised_weight(node, desc):
            return
        if op == "Gather" and node.input and self.is_table(node.input[0]):
            self.embedding(i, node, desc)
            return
        acts = [x for x in node.input if x and x in self.source]
        producers = list(dict.fromkeys(self.source[x] for x in acts))
        if self.expert_weights(node, desc, acts):
            return
        if op in SHAPE_OPS or not producers:
            if op not in SHAPE_OPS and any(x in self.side for x in node.input if x):
                self.side.update(o for o in node.output if o)
            elif any(self.is_stored(x) for x in node.input if x):
                self.weight_view(node)
            return  # constants, shape arithmetic, ids and masks are not activations
        if op in ("Conv", "Gemm", "MatMul") and len(node.input) > 1 and node.input[1] in self.consts:
            self.weighted(i, node, desc)
            return
        if op == "Einsum" and any(self.is_weight(x) for x in node.input if x):
            self.einsum(i, node, desc, acts)
            return
        if op in ("Conv", "Gemm") or (op == "MatMul" and len(acts) == 1):
            raise self.fail(f"{desc}: {self.weight_problem(node)}")
        if op in FUSED_ATTENTION:
            self.attention_node(i, node, desc, producers, closes=True)
            return
        self.combine(i, node, desc, producers, acts)

    def combine(self, i: int, node, desc: str, producers: list[str], acts: list[str]) -> None:
        """A node of activations alone: attention's products, a pass-through or a join."""
        op = node.op_type
        if op in ACT_PRODUCTS and len(acts) >= 2:
            open_att = [p for p in producers if p in self.attention and self.attention[p]["open"]]
            if open_att:
                self.close_attention(open_att[0], node, desc, producers)
            else:
                self.attention_node(i, node, desc, producers, closes=False)
            return
        if len(producers) == 1:
            self.pass_through(node, acts[0], producers[0])
            return
        kind = JOIN_OPS.get(op)
        if kind is None:
            raise self.fail(f"{desc}: combines activations of {', '.join(map(printable, producers))} and is not a "
                            f"supported join ({', '.join(sorted(JOIN_OPS))}, or MatMul/Einsum of two activations for "
                            "attention)")
        open_att = [p for p in producers if p in self.attention and self.attention[p]["open"]]
        if open_att:  # a bias added to attention scores (T5's position bias, ALiBi, a mask from a lookup)
            self.score_bias(open_att[0], node, producers)
            return
        self.join(i, node, desc, kind, producers, acts)

    def refuse_unread_weights(self, node, desc: str) -> None:
        """A standard operator holding a weight this importer does not read, or a control-flow
        node whose body (not walked) holds a product: refused, never dropped."""
        op = node.op_type
        if op in WEIGHTED_UNSUPPORTED:
            qdq = ("; quantised graphs are read in the QDQ format (DequantizeLinear of a stored weight before Conv, Gemm "
                   "or MatMul: onnxruntime's quantize_static with QuantFormat.QDQ)") if op in QUANTISED_OPS else ""
            raise self.fail(f"{desc}: {op} holds a weight and is not supported (supported weighted operators: Conv, "
                            f"Gemm, MatMul or Einsum with a stored weight, Gather on a table){qdq}")
        if op in CONTROL_FLOW and _body_products(node):
            raise self.fail(f"{desc}: its body graph holds {_body_products(node)}, and control-flow bodies are not "
                            "walked: export with the loop unrolled or the branch taken")

    def refuse_malformed(self, node, desc: str) -> None:
        """What lenient shape inference lets pass (onnx_checks.py): a Transpose's perm out of range,
        a product's stored weight or bias with a zero dimension."""
        op = node.op_type
        if op == "Transpose" and node.domain in KNOWN_DOMAINS and node.input:
            perm = self.attrs(node).get("perm")
            shape = self.shapes.get(node.input[0]) or (self.consts[node.input[0]].dims if node.input[0] in self.consts
                                                       else None)
            problem = None if perm is None else perm_problem(perm, None if shape is None else len(shape))
        elif op in PRODUCTS or (op == "Gather" and node.input and self.is_weight(node.input[0])):
            problem = empty_weight_problem(node, self.consts, self.is_weight)
        else:
            problem = None
        if problem:
            raise self.fail(f"{desc}: {problem}")

    def weight_problem(self, node) -> str:
        """Why a Conv/Gemm/MatMul is no weighted layer: a stored weight as its first input (W x),
        or no stored weight at all."""
        if node.input and node.input[0] in self.consts and len(node.input) > 1 and node.input[1] in self.source:
            return ("its stored weight is its first input (weight times activation); only products of an activation "
                    "with a stored weight as the second input are weighted layers")
        return ("its weight (second input) is not a constant tensor; only products of an activation with a stored "
                "weight are weighted layers")

    def custom_op(self, node, desc: str) -> bool:
        """An operator of another domain: True to walk it like a standard one (known fused
        attention and com.microsoft operators on activations), False to skip it (reads no
        activation); SpecError when it holds a weight; an approximation note otherwise."""
        op, domain = node.op_type, node.domain
        weights = [x for x in node.input if x in self.consts and len(self.consts[x].dims) >= 2
                   and self.consts[x].data_type in FLOAT_TYPES | QUANTISED_TYPES]
        if op == "Attention" and node.input[1:2] and node.input[1] in weights:
            weights = weights[weights.index(node.input[1]):]  # com.microsoft's Attention: input, QKV weight, ...
        elif op in FUSED_ATTENTION or (domain == "com.microsoft" and op in MS_PASS_THROUGH):
            return True
        if weights:
            raise self.fail(f"{desc}: custom operator {printable(domain)}.{printable(op)} holds a weight "
                            f"({printable(weights[0])!r}) and is not supported: export without custom operators "
                            "(no runtime-specific fusion)")
        if not any(x in self.source for x in node.input if x):
            return False
        self.approx.append(f"{desc}: unknown custom operator {printable(domain)}.{printable(op)}; taken to pass its "
                           "input through, with no weights and no cost")
        return True

    def pass_through(self, node, x: str, producer: str) -> None:
        """An operator reading one producer: its outputs come from that producer (a channel slice
        of it when the operator cuts the channel axis: a Split, Slice or chunk)."""
        full = self.part.get(x) or self.producer_channels(producer)
        xs = self.shapes.get(x)
        for out in node.output:
            if not out:
                continue
            self.source[out] = producer
            ys = self.shapes.get(out)
            if full is None or not xs or not ys or None in xs or None in ys:
                continue
            if node.op_type in ("Split", "Slice") and len(xs) == len(ys):
                cut = [a for a in range(len(xs)) if xs[a] != ys[a]]
                if len(cut) == 1 and cut[0] in (1, len(xs) - 1) and xs[cut[0]] == full:
                    self.part[out] = ys[cut[0]]
            elif x in self.part and ys == xs:
                self.part[out] = self.part[x]  # elementwise on a slice

    def producer_channels(self, producer: str) -> int | None:
        if producer == NETWORK_INPUT:
            return None
        spec = self.by_name[producer]
        return None if spec["kind"] is LayerKind.ATTENTION and "channels" not in spec else _channels(spec)

    def score_bias(self, name: str, node, producers: list[str]) -> None:
        """A join of open attention scores with another producer's tensor: the scores go on (the
        attention stays open); the bias's producer keeps its own node, its edge is not costed."""
        for out in node.output:
            if out:
                self.source[out] = name
        others = [printable(p) for p in producers if p != name]
        self.approx.append(f"{name}: a bias from {', '.join(others)} added to its attention scores (a position bias); "
                           "that edge is not costed")

    def is_weight(self, name: str) -> bool:
        t = self.consts.get(name)
        return t is not None and t.data_type in FLOAT_TYPES and len(t.dims) >= 2 and name not in self.folded

    def is_quantised(self, name: str) -> bool:
        """A stored 8/4-bit integer tensor of rank >= 2 (or a view of one): a QDQ graph's weight
        before its DequantizeLinear."""
        t = self.consts.get(name)
        return t is not None and t.data_type in QUANTISED_TYPES and len(t.dims) >= 2

    def is_stored(self, name: str) -> bool:
        """A stored weight, quantised weight or stored float or 8/4-bit vector (a weight stored
        flat, or a weight normalisation's gain): a view computed from such tensors only is a weight."""
        t = self.consts.get(name)
        return self.is_weight(name) or self.is_quantised(name) or (
            t is not None and t.data_type in FLOAT_TYPES | QUANTISED_TYPES and len(t.dims) == 1
            and name not in self.folded)

    def weight_view(self, node) -> None:
        """A tensor computed from stored weights only (a Transpose of a shared weight, expert i's
        slice, weight normalisation): still a weight (dims from the inferred shape), so a product
        reading it is a weighted layer. A view of a quantised weight keeps its integer type: a
        weight only once dequantised."""
        stored = [x for x in node.input if x and self.is_stored(x)]
        bases = set().union(*(self.bases.get(x, {x}) for x in stored))
        dtype = next((self.consts[x].data_type for x in stored if self.consts[x].data_type in QUANTISED_TYPES), None)
        for out in node.output:
            shape = self.shapes.get(out)
            if out and shape and all(shape) and len(shape) >= 2:
                self.stored_view(out, shape, bases, dtype)

    def stored_view(self, out: str, shape, bases: set[str], dtype: int | None = None) -> None:
        """Tensor ``out`` counts as stored: shape ``shape``, float unless ``dtype`` says otherwise."""
        from onnx import TensorProto

        self.bases[out] = bases
        t = TensorProto()
        t.name, t.data_type = out, TensorProto.FLOAT if dtype is None else dtype
        t.dims.extend(int(d) for d in shape)
        self.consts[out] = t

    def quantised_weight(self, node, desc: str) -> bool:
        """DequantizeLinear of stored tensors (a QDQ export's int8 weight, scale and zero point):
        a stored weight of the data's shape, as a Cast of a float weight is (True: handled); of an
        activation it is walked as any operator (it passes its input through). A weight quantised
        at run time (DynamicQuantizeLinear) is refused."""
        from onnx import TensorProto

        from .onnx_qdq import dequantize_problem

        ins = [x for x in node.input if x]
        if not ins or ins[0] in self.source or (node.op_type == "DynamicQuantizeLinear" and ins[0] not in self.consts):
            return False
        if node.op_type == "DynamicQuantizeLinear":
            raise self.fail(f"{desc}: DynamicQuantizeLinear of the stored weight {printable(ins[0])!r} (quantised at "
                            "run time) is not read; quantised weights are read stored in the QDQ format "
                            "(DequantizeLinear of an integer initializer: onnxruntime's quantize_static)")
        problem = dequantize_problem(self.attrs(node), ins, self.consts, self.side)
        if problem:
            raise self.fail(f"{desc}: {problem}")
        data = self.consts[ins[0]]
        if node.output and node.output[0]:
            self.stored_view(node.output[0], data.dims, self.bases.get(ins[0], {ins[0]}))
        if data.data_type not in FLOAT_TYPES:
            base = min(self.bases.get(ins[0], {ins[0]}))
            self.dequantised[base] = TensorProto.DataType.Name(data.data_type)
            if len(data.dims) >= 2:
                self.quantised[base] = self.dequantised[base]
        return True

    def expert_weights(self, node, desc: str, acts: list[str]) -> bool:
        """Mixture of experts: a stored weight of rank >= 3 gathered by indices a router computed
        (TopK of activations). Such tensors are tracked (True: handled); a product reading one
        is refused, naming the operator."""
        op = node.op_type
        if op in ("Gather", "GatherND", "GatherElements") and node.input and node.input[0] in self.consts and \
                node.input[1:2] and node.input[1] in self.source and len(self.consts[node.input[0]].dims) >= 3 and \
                self.consts[node.input[0]].data_type in FLOAT_TYPES:
            for out in node.output:
                self.experts[out] = node.input[0]
            return True
        picked = [x for x in node.input if x in self.experts]
        if not picked:
            return False
        if op in ACT_PRODUCTS or op in ("Gemm", "Conv"):
            w = self.consts[self.experts[picked[0]]]
            raise self.fail(f"{desc}: multiplies activations by expert weights a router selects ({op} with "
                            f"{printable(self.experts[picked[0]])!r} {list(w.dims)} gathered by router indices): "
                            "mixture-of-experts layers are not supported by the ONNX importer; describe the network "
                            "as a YAML network instead, each expert an fc layer over its share of the tokens")
        for out in node.output:
            if out:
                self.experts[out] = self.experts[picked[0]]
        return not acts or all(x in self.experts for x in acts)

    def is_table(self, name: str) -> bool:
        return self.is_weight(name) and len(self.consts[name].dims) == 2

    def add_node(self, spec: dict, out: str, weight: str | None = None) -> None:
        """Add a node spec; ``weight``: the (view of a) stored weight a layer reads, for onnx_shared.py."""
        self.check_sizes(spec)
        if weight is not None:
            bases = self.bases.get(weight, {weight})
            record_use(self.uses, spec["name"], self.consts[weight].dims, bases, self.consts)
            for base in sorted(bases & self.dequantised.keys()):  # a flat int8 weight dequantised, then Reshaped
                self.quantised.setdefault(base, self.dequantised[base])
        self.nodes.append((len(self.nodes), spec))
        self.by_name[spec["name"]] = spec
        self.source[out] = spec["name"]

    def check_sizes(self, spec: dict) -> None:
        """Every size at most 2^40, as a YAML network's (an exported dimension of 2^62 is no network)."""
        from .fields import MAX_INT

        sizes = {"input features": spec.get("din"), "output features": spec.get("dout"),
                 "positions": prod(spec.get("s_in") or (1,)), "output positions": prod(spec.get("s_out") or (1,)),
                 "kernel": prod(spec.get("kernel") or (1,))}
        for what, v in sizes.items():
            if v is not None and v > MAX_INT:
                raise self.fail(f"{spec['path']}: {what} {v:,} is beyond 2^40 = {MAX_INT:,}, the bound on a size")

    def embedding(self, i: int, node, desc: str) -> None:
        vocab, hidden = (int(d) for d in self.consts[node.input[0]].dims)
        self.gathered |= self.bases.get(node.input[0], {node.input[0]})  # a dequantised table: its stored tensor
        axis = self.attrs(node).get("axis", 0)
        if axis != 0:
            raise self.fail(f"{desc}: a Gather on a table along axis {axis} is not an embedding lookup")
        name = self.new_name(node, i)
        idx = node.input[1] if len(node.input) > 1 else ""
        self.check_rows(idx, node.input[0], vocab, desc)
        broadcast = idx not in self.side and idx not in self.source
        known = self.shapes.get(node.output[0])
        if broadcast and (not known or any(not d for d in known)) and self.seq:
            known = [self.seq, hidden]  # positions 0..S-1 computed from the input's shape (Range, Slice)
        out = known if known and all(known) else self.shape_of(node.output[0], desc)
        self.shapes[node.output[0]] = list(out)
        if broadcast:  # constant indices (positions): one lookup for the whole batch, broadcast
            tokens = prod(out) // hidden
            if len(out) >= 3 and out[0] == self.B and tokens % self.B == 0:
                tokens //= self.B  # constant ids already expanded to the batch (token types)
            self.approx.append(f"{name}: embedding looked up with constant indices (positions) and broadcast over "
                               "the batch; costed as a per-token lookup of every sample")
        else:
            tokens = self.per_sample(prod(out), hidden, desc, "its output")
        spec = {"name": name, "path": desc, "kind": LayerKind.EMBEDDING, "inputs": [], "din": vocab, "dout": hidden,
                "kernel": (1, 1), "s_in": (tokens, 1), "s_out": (tokens, 1), "broadcast": broadcast}
        self.add_node(spec, node.output[0], node.input[0])

    def check_rows(self, idx: str, table: str, rows: int, desc: str) -> None:
        """Constant indices (positions 0..S-1 once --seq is filled) must name rows of the table:
        a learned position table has no row beyond its size."""
        from onnx import numpy_helper

        t = self.consts.get(idx)
        try:
            ids = numpy_helper.to_array(t) if t is not None else None
        except (ValueError, TypeError, OSError):
            return
        if ids is None or not ids.size or ids.dtype.kind not in "iu" or -rows <= int(ids.min()) <= int(ids.max()) < rows:
            return
        seq = f" ({given_as('--seq')} {self.seq}: more than its {rows} learned positions)" if self.seq and int(ids.max()) == self.seq - 1 else ""
        raise self.fail(f"{desc}: looks up row {int(ids.max())} of table {printable(table)!r}, which has {rows} "
                        f"rows{seq}")

    def weighted(self, i: int, node, desc: str) -> None:
        name = self.new_name(node, i)
        x = node.input[0]
        if x not in self.source:
            raise self.fail(f"{desc}: its data input {x!r} is not an activation")
        w = [int(d) for d in self.consts[node.input[1]].dims]
        attrs = self.attrs(node)
        if node.op_type == "Gemm" and attrs.get("transA", 0):  # before its shapes, which may not agree then
            raise self.fail(f"{desc}: transA=1 is not supported (a Gemm reading its input transposed; export it as "
                            "a MatMul of the activation with the weight)")
        xs, ys = self.shape_of(x, desc), self.shape_of(node.output[0], desc)
        spec: dict = {"name": name, "path": desc, "inputs": [self.source[x]], "size": None}
        if x in self.part:
            spec["input_channels"] = {self.source[x]: self.part[x]}
        if node.op_type == "Conv":
            group = int(attrs.get("group", 1))
            if len(xs) not in (3, 4, 5) or len(w) != len(xs) or len(ys) != len(xs):
                raise self.fail(f"{desc}: only 1-D, 2-D and 3-D convolutions are supported (input rank {len(xs)}, "
                                f"weight rank {len(w)})")
            if xs[0] != self.B:
                raise self.fail(f"{desc}: batch {xs[0]} differs from the network's {self.B}")
            spec.update(kind=LayerKind.CONV, din=w[1] * group, dout=w[0], kernel=_plane(w[2:]),
                        s_in=_plane(xs[2:]), s_out=_plane(ys[2:]), groups=group)
        else:
            if len(w) != 2:
                raise self.fail(f"{desc}: the weight must be a matrix, got rank {len(w)}")
            if node.op_type == "Gemm":
                din, dout = (w[1], w[0]) if attrs.get("transB", 0) else (w[0], w[1])
            else:
                din, dout = w
            if self.tied_head(node, desc, din, dout, x, node.input[1]):
                return
            self.fc(spec, desc, x, din, dout)
        self.add_node(spec, node.output[0], node.input[1])

    def fc(self, spec: dict, desc: str, x: str, din: int, dout: int) -> None:
        tokens = self.per_sample(prod(self.shape_of(x, desc)), din, desc, f"its input {x!r}")
        spec.update(kind=LayerKind.FC, din=din, dout=dout, kernel=(1, 1), s_in=(tokens, 1), s_out=(tokens, 1))

    def einsum(self, i: int, node, desc: str, acts: list[str]) -> None:
        """An Einsum reading a stored weight: an fc layer when its equation is a plain contraction
        of one activation with the weight (onnx_einsum.py), else refused naming the equation."""
        from .onnx_einsum import einsum_fc

        equation = self.attrs(node).get("equation", b"")
        equation = equation.decode(errors="replace") if isinstance(equation, bytes) else str(equation)
        ins = [x for x in node.input if x]
        weights = [x for x in ins if self.is_weight(x)]
        why = "it reads more than one activation or weight" if len(ins) != 2 or len(acts) != 1 else \
            einsum_fc(equation, ins[0] in weights, [int(d) for d in self.consts[weights[0]].dims])
        if isinstance(why, str):
            raise self.fail(f"{desc}: Einsum {printable(equation)!r} with the stored weight {printable(weights[0])!r} is "
                            f"not a plain contraction of an activation with a weight ({why}); only those are read "
                            "(as fc layers)")
        din, dout = why
        x = acts[0]
        name = self.new_name(node, i)
        spec: dict = {"name": name, "path": desc, "inputs": [self.source[x]], "size": None}
        if x in self.part:
            spec["input_channels"] = {self.source[x]: self.part[x]}
        if self.tied_head(node, desc, din, dout, x, weights[0]):
            return
        self.fc(spec, desc, x, din, dout)
        self.add_node(spec, node.output[0], weights[0])

    def tied_head(self, node, desc: str, din: int, dout: int, x: str, weight: str) -> bool:
        """A product whose weight is (a view of) a table an embedding looks up: an LM head tied to
        the token embedding. Left out, as the transformer specs and config.json leave it out (a
        separate fc layer would count the shared weight's gradient and memory twice); its output
        is its input's producer's. True when it was one."""
        shared = sorted(self.bases.get(weight, {weight}) & self.gathered)
        if not shared:
            return False
        self.pass_through(node, x, self.source[x])
        self.approx.append(f"{desc}: LM head tied to the token embedding {printable(shared[0])!r}: its {din} x {dout} "
                           f"product (B*S*{din}*{dout} forward MACs) is not modelled")
        return True

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
        first = self.by_name.get(spec["inputs"][0])
        if first is None:
            raise self.fail(f"{desc}: attention reading the network input directly is not supported")
        tokens = _tokens(first)
        spec["tokens"] = tokens
        ctx = prod(self.shape_of(context, desc))
        spec["channels"] = self.per_sample(ctx, tokens, desc, "its context", "tokens")
        if not spec["heads"] and spec["scores"] != context and spec["scores"] in self.shapes:
            scores = prod(self.shape_of(spec["scores"], desc))
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
        parts = {p: sum(self.part.get(x, 0) for x in dict.fromkeys(acts) if self.source[x] == p) for p in producers}
        whole = {p for p in producers if any(self.source[x] == p and x not in self.part for x in acts)}
        cut = {p: c for p, c in parts.items() if p not in whole and p != NETWORK_INPUT and c}
        chans = [cut.get(p) or _channels(self.by_name[p]) for p in producers if p != NETWORK_INPUT]
        if NETWORK_INPUT in producers:
            first = next(x for x in acts if self.source[x] == NETWORK_INPUT)
            xs = self.shape_of(first, desc)
            chans.append(xs[1] if len(xs) in (4, 5) else xs[-1])
        c = sum(chans) if kind is LayerKind.CONCAT else max(chans)
        out = self.shapes.get(node.output[0])
        if kind is not LayerKind.CONCAT and (not out or not all(out)):  # broadcasting shape inference gave up
            out = max((self.shape_of(x, desc) for x in acts), key=prod)
            self.shapes[node.output[0]] = out
        out = self.shape_of(node.output[0], desc)
        if len(out) in (4, 5) and out[1] == c and out[0] == self.B:
            size = _plane(out[2:])
        else:
            size = (self.per_sample(prod(out), c, desc, "its output", "channels"), 1)
        if kind is not LayerKind.CONCAT:
            broadcast_lookups = {n["name"] for _, n in self.nodes if n.get("broadcast")}  # already listed
            for x in acts:
                if self.source[x] not in broadcast_lookups and prod(self.shape_of(x, desc)) < prod(out):
                    self.approx.append(f"{name}: an input broadcast to the join's size; its edge is costed at the "
                                       "join's full tensor")
                    break
        spec = {"name": name, "path": desc, "kind": kind, "inputs": producers, "size": size, "c": c}
        if cut:
            spec["input_channels"] = cut
        self.add_node(spec, node.output[0])


def _body_products(node) -> str:
    """The first product or weighted operator in a control-flow node's subgraphs (nested ones
    too), as 'Op 'name'', or '' when they hold none."""
    for attr in node.attribute:
        for graph in ([attr.g] if attr.HasField("g") else []) + list(attr.graphs):
            for k, inner in enumerate(graph.node):
                if inner.op_type in PRODUCTS:  # an unnamed node by its place in its body graph
                    return f"{printable(inner.op_type)} {printable(inner.name)!r}" if inner.name else \
                        f"{printable(inner.op_type)} (node #{k} of body graph {printable(graph.name)!r})"
                found = _body_products(inner)
                if found:
                    return found
    return ""


def _plane(dims) -> tuple[int, int]:
    """Spatial dims as the (height, width) plane of the cost model: a 1-D axis L is (L, 1), a
    3-D volume D x H x W is (D*H, W) (positions, weights and FLOPs are products, kept exact)."""
    dims = [int(d) for d in dims]
    if len(dims) == 1:
        return dims[0], 1
    return prod(dims[:-1]), dims[-1]


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
