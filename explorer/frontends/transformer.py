"""Decoder-only transformers from their shape: one builder for the LLM zoo and ``--model config.json``.

Described in the manual: docs/specs.md, "Transformer specs".
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from ..core.network import MOE_NOTE, LayerKind, Network
from .fields import MAX_INT, Fields


MAX_LAYERS = 4096  # a bound on the nodes a short spec or config may ask for (about 11 per layer)


class Family(enum.Enum):
    GPT = "gpt"
    LLAMA = "llama"


@dataclass(frozen=True, slots=True)
class TransformerShape:
    """A decoder-only transformer's shape (``kv_heads`` 0: as many as ``heads``; ``head_dim`` 0:
    hidden / heads; ``positions``: learned position rows, gpt family only)."""

    family: Family
    layers: int
    hidden: int
    heads: int
    ffn: int
    vocab: int
    kv_heads: int = 0
    head_dim: int = 0
    positions: int = 0
    tied_head: bool = False
    experts: int = 0  # mixture of experts (llama family): experts a layer holds (0: a dense MLP)
    top_k: int = 0  # experts each token is routed to (with experts)

    @property
    def moe(self) -> bool:
        return self.experts > 0

    @property
    def active_ffn(self) -> int:
        """The MLP width a token's FLOPs see: ``ffn``, or the ``top_k`` routed experts' ``top_k x ffn``."""
        return self.ffn * (self.top_k if self.moe else 1)

    @property
    def d_head(self) -> int:
        return self.head_dim or self.hidden // self.heads

    @property
    def kv(self) -> int:
        return self.kv_heads or self.heads

    def problems(self) -> list[tuple[str, str]]:
        """(field, problem) for every inconsistency among the fields (all positive already)."""
        out = []
        if self.layers > MAX_LAYERS:
            out.append(("layers", f"at most {MAX_LAYERS:,} (the largest published models have ~160), got {self.layers:,}"))
        if not self.head_dim and self.hidden % self.heads:
            out.append(("heads", f"{self.heads} heads do not divide hidden {self.hidden}"))
        if self.heads % self.kv:
            out.append(("kv_heads", f"{self.kv} KV heads do not divide {self.heads} heads"))
        if self.family is Family.GPT:
            if self.kv != self.heads or self.head_dim not in (0, self.hidden // self.heads):
                out.append(("kv_heads", "the gpt family has a fused QKV of 3 x hidden (no grouped-query attention, "
                                        "no head_dim of its own)"))
            if not self.positions:
                out.append(("positions", "the gpt family learns its positions: give their number"))
        elif self.positions:
            out.append(("positions", "the llama family has rotary positions (no weights): leave it out"))
        return out + self._moe_problems() + self._width_problems()

    def _width_problems(self) -> list[tuple[str, str]]:
        """The widths the builder derives (the attention's q, k and v input; the routed experts'
        MLP) within a layer's 2^40 bound, named by the field that makes them, not by a built
        layer the user never wrote."""
        if self.heads % self.kv or (not self.head_dim and self.hidden % self.heads):
            return []  # reported above
        out = []
        attention = (self.heads + 2 * self.kv) * self.d_head
        if attention > MAX_INT:
            if self.family is Family.GPT:
                how = f"the fused QKV, 3 x hidden {self.hidden:,}"
            else:
                how = f"(heads {self.heads} + 2 x KV heads {self.kv}) x head width {self.d_head:,}"
            out.append(("head_dim" if self.head_dim else "hidden",
                        f"the attention's input, {how} = {attention:,}, is more than 2^40 = {MAX_INT:,}"))
        if self.moe and self.active_ffn > MAX_INT:
            out.append(("top_k", f"the routed experts' width, top_k {self.top_k} x ffn {self.ffn:,} = "
                                 f"{self.active_ffn:,}, is more than 2^40 = {MAX_INT:,}"))
        return out

    def _moe_problems(self) -> list[tuple[str, str]]:
        if not self.experts and not self.top_k:
            return []
        if not self.experts:
            return [("experts", f"top_k {self.top_k} given without experts (a mixture of experts needs both)")]
        if self.experts < 2:
            return [("experts", f"must be at least 2, got {self.experts} (a single expert is a dense FFN with "
                                "a router: describe a dense model instead)")]
        if not self.top_k:
            return [("top_k", f"missing: experts each token is routed to (1 to {self.experts})")]
        if self.top_k > self.experts:
            return [("top_k", f"{self.top_k} experts a token is more than the {self.experts} experts")]
        if self.family is not Family.LLAMA:
            return [("experts", "mixture of experts is built for the llama family (Mixtral's SwiGLU experts)")]
        return []

    def weights(self) -> int:
        """Weight elements of the built network (hand count; tests compare it with the nodes')."""
        h, d = self.hidden, self.d_head
        q, kv = self.heads * d, self.kv * d
        if self.family is Family.GPT:
            per_layer = h * 3 * h + h * h + 2 * h * self.ffn
            emb = (self.vocab + self.positions) * h
        else:
            per_layer = h * q + 2 * h * kv + q * h + 3 * h * self.active_ffn
            emb = self.vocab * h
        return self.layers * per_layer + emb + (0 if self.tied_head else h * self.vocab)


def position_problem(shape: TransformerShape, sequence: int, table: str) -> str | None:
    """Why ``sequence`` tokens a sample cannot run through ``shape`` (None when they can): learned
    positions (the gpt family) are a table with one row a position and none beyond its size (rotary
    positions have no table). ``table`` names the field giving its size, for the message."""
    if shape.family is not Family.GPT or not shape.positions or sequence <= shape.positions:
        return None
    return (f"{sequence:,} tokens is more than the {shape.positions:,} learned positions ({table}): a learned "
            f"position table has no row beyond its size (at most {shape.positions:,})")


TRANSFORMER_KEYS = {"family", "layers", "hidden", "heads", "kv_heads", "head_dim", "ffn", "vocab", "positions",
                    "tied_head", "experts", "top_k"}
_REQUIRED = {"family", "layers", "hidden", "heads", "ffn", "vocab"}


def parse_shape(data, path: str, errors: list[str]) -> TransformerShape | None:
    """A ``transformer:`` mapping -> its shape (None, with ``errors`` appended, on a problem)."""
    if not isinstance(data, dict):
        errors.append(f"{path}: must be a mapping of {', '.join(sorted(_REQUIRED))}")
        return None
    n0 = len(errors)
    f = Fields(data, path, errors, TRANSFORMER_KEYS, _REQUIRED)
    family = None
    if "family" in data:
        try:
            family = Family(data["family"])
        except ValueError:
            f.error("family", f"must be one of {', '.join(x.value for x in Family)}, got {data['family']!r}"[:160])
    ints = {k: f.pos_int(k, 0) for k in TRANSFORMER_KEYS - {"family", "tied_head"}}
    tied = data.get("tied_head", False)
    if not isinstance(tied, bool):
        f.error("tied_head", f"must be true or false, got {tied!r}"[:160])
    if len(errors) > n0 or family is None:
        return None
    shape = TransformerShape(family, tied_head=tied, **ints)
    for field, problem in shape.problems():
        f.error(field, problem)
    return None if len(errors) > n0 else shape


def build_transformer(shape: TransformerShape, name: str, batch: int, sequence: int, source: str) -> Network:
    """The network of ``shape`` at ``sequence`` tokens per sample (SpecError if its nodes do not chain).
    Memoised on its arguments (a Network is immutable): a planner run builds the same one twice, when
    the spec is checked (``transformer_source``) and for the problem (``transformer_problem``)."""
    key = (shape, name, batch, sequence, source)
    hit = _BUILT.get(key)
    if hit is None:
        if len(_BUILT) >= _BUILT_SIZE:
            _BUILT.clear()
        hit = _BUILT[key] = _build_transformer(shape, name, batch, sequence, source)
    return hit


_BUILT: dict = {}  # (shape, name, batch, sequence, source) -> Network
_BUILT_SIZE = 16


def _build_transformer(shape: TransformerShape, name: str, batch: int, sequence: int, source: str) -> Network:
    from .graph_build import build_graph

    b = _Nodes(sequence)
    x = _gpt_body(b, shape) if shape.family is Family.GPT else _llama_body(b, shape)
    notes: tuple[str, ...] = ()
    if shape.moe:
        notes += (f"{MOE_NOTE} each layer's moe_gate/moe_up/moe_down nodes are the {shape.top_k} routed "
                  f"experts' work ({shape.top_k} x {shape.ffn} wide); the {shape.experts} experts' weights and the "
                  f"router (h x {shape.experts}) are in the parameter count, not in these nodes",)
    if shape.tied_head:
        notes += (f"LM head tied to the token embedding: its {shape.hidden} x {shape.vocab} product "
                 f"(B*S*{shape.hidden}*{shape.vocab} forward MACs) is not modelled",)
    else:
        b.fc("lm_head", shape.hidden, shape.vocab, x)
    return build_graph(name, batch, list(enumerate(b.nodes)), source, sequence=sequence, approximations=notes)


class _Nodes:
    """Node mappings in the form ``network_yaml.build_graph`` takes (as the YAML parser gives them)."""

    def __init__(self, sequence: int):
        self.tok = (sequence, 1)
        self.nodes: list[dict] = []

    def _add(self, **node) -> str:
        node["path"] = f"layers[{len(self.nodes)}]"
        self.nodes.append(node)
        return node["name"]

    def fc(self, name: str, din: int, dout: int, src: str) -> str:
        return self._add(kind=LayerKind.FC, name=name, din=din, dout=dout, kernel=(1, 1), s_in=self.tok,
                         s_out=self.tok, inputs=[src])

    def emb(self, name: str, vocab: int, hidden: int) -> str:
        return self._add(kind=LayerKind.EMBEDDING, name=name, din=vocab, dout=hidden, kernel=(1, 1), s_in=self.tok,
                         s_out=self.tok, inputs=[])

    def join(self, name: str, kind: LayerKind, inputs: list[str], heads: int = 0, kv_heads: int = 0,
             channels: int | None = None) -> str:
        return self._add(kind=kind, name=name, inputs=inputs, size=None, heads=heads, kv_heads=kv_heads,
                         channels=channels)


def _gpt_body(b: _Nodes, s: TransformerShape) -> str:
    """GPT-2 / Megatron GPT nodes (names as in gpt2-small.yaml); returns the last node's name."""
    h = s.hidden
    x = b.join("emb", LayerKind.ADD, [b.emb("wte", s.vocab, h), b.emb("wpe", s.positions, h)])
    for i in range(s.layers):
        qkv = b.fc(f"h{i}_c_attn", h, 3 * h, x)
        att = b.join(f"h{i}_attn", LayerKind.ATTENTION, [qkv], heads=s.heads)
        res1 = b.join(f"h{i}_res1", LayerKind.ADD, [x, b.fc(f"h{i}_attn_proj", h, h, att)])
        mlp = b.fc(f"h{i}_mlp_proj", s.ffn, h, b.fc(f"h{i}_mlp_fc", h, s.ffn, res1))
        x = b.join(f"h{i}_res2", LayerKind.ADD, [res1, mlp])
    return x


def _llama_body(b: _Nodes, s: TransformerShape) -> str:
    """LLaMA-style nodes (names as in llama-7b.yaml); returns the last node's name."""
    h, q, kv = s.hidden, s.heads * s.d_head, s.kv * s.d_head
    x = b.emb("embed", s.vocab, h)
    gqa = s.kv if s.kv != s.heads else 0
    for i in range(s.layers):
        qkv = [b.fc(f"l{i}_q", h, q, x), b.fc(f"l{i}_k", h, kv, x), b.fc(f"l{i}_v", h, kv, x)]
        att = b.join(f"l{i}_att", LayerKind.ATTENTION, qkv, heads=s.heads, kv_heads=gqa, channels=q if gqa else None)
        add1 = b.join(f"l{i}_add1", LayerKind.ADD, [x, b.fc(f"l{i}_o", q, h, att)])
        m, f = (f"l{i}_moe_", s.active_ffn) if s.moe else (f"l{i}_", s.ffn)
        mul = b.join(f"{m}mul", LayerKind.ADD, [b.fc(f"{m}gate", h, f, add1), b.fc(f"{m}up", h, f, add1)])
        x = b.join(f"l{i}_add2", LayerKind.ADD, [add1, b.fc(f"{m}down", f, h, mul)])
    return x
