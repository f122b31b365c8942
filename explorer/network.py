"""Networks: weighted layers and the edges between them, parsed from the YAML network spec.

Spec (version 1), one file per network::

    version: 1
    name: alexnet
    batch: 512                 # default, overridable on the command line
    layers:
      - {name: conv1, kind: conv, in_channels: 3, out_channels: 96, kernel: 11, in_size: 224, out_size: 55}
      - {name: fc1, kind: fc, in_features: 9216, out_features: 4096}

``in_size``/``out_size`` are square spatial sizes or ``[h, w]``; ``kernel`` an int or
``[kh, kw]``; all three are required for conv layers. They are given, not derived
(model.md section 2). ``description`` is an optional top-level key. Layers form a chain
in file order; internally a network is layers plus edges (producer -> consumer).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from pathlib import Path

from .errors import SpecError
from .fields import Fields, check_pos_int
from .yamlio import load_yaml_file, load_yaml_text

SPEC_VERSION = 1


class LayerKind(enum.Enum):
    CONV = "conv"
    FC = "fc"


@dataclass(frozen=True, slots=True)
class Layer:
    """A weighted layer as a matrix product with spatial extents folded in (model.md section 2)."""

    name: str
    kind: LayerKind
    in_channels: int  # D_i (fc: input features)
    out_channels: int  # D_o (fc: output features)
    kernel: tuple[int, int] = (1, 1)
    in_size: tuple[int, int] = (1, 1)
    out_size: tuple[int, int] = (1, 1)

    @property
    def kernel_area(self) -> int:
        return self.kernel[0] * self.kernel[1]

    @property
    def s_in(self) -> int:
        return self.in_size[0] * self.in_size[1]

    @property
    def s_out(self) -> int:
        return self.out_size[0] * self.out_size[1]

    def input_elements(self, batch: int) -> int:
        """A(F_l) = A(E_l) = B * D_i * S_in."""
        return batch * self.in_channels * self.s_in

    def weight_elements(self) -> int:
        """A(W_l) = A(dW_l) = D_i * D_o * k^2."""
        return self.in_channels * self.out_channels * self.kernel_area

    def output_elements(self, batch: int) -> int:
        """A(F_{l+1}) = A(E_{l+1}) = B * D_o * S_out."""
        return batch * self.out_channels * self.s_out

    def forward_macs(self, batch: int) -> int:
        """Multiply-accumulates of the forward product: B * S_out * D_o * D_i * k^2."""
        return batch * self.s_out * self.out_channels * self.in_channels * self.kernel_area


@dataclass(frozen=True, slots=True)
class Network:
    """Weighted layers plus edges (producer index -> consumer index); a chain today."""

    name: str
    batch: int
    layers: tuple[Layer, ...]
    edges: tuple[tuple[int, int], ...]
    source: str = ""

    def __post_init__(self) -> None:
        n = len(self.layers)
        if n == 0:
            raise ValueError("a network needs at least one layer")
        for u, v in self.edges:
            if not (0 <= u < n and 0 <= v < n and u != v):
                raise ValueError(f"bad edge {u}->{v}")

    @property
    def is_chain(self) -> bool:
        return self.edges == tuple((i - 1, i) for i in range(1, len(self.layers)))

    @property
    def layer_names(self) -> list[str]:
        return [layer.name for layer in self.layers]

    def with_batch(self, batch: int) -> "Network":
        return Network(self.name, batch, self.layers, self.edges, self.source)

    @staticmethod
    def chain(name: str, batch: int, layers: list[Layer] | tuple[Layer, ...], source: str = "") -> "Network":
        return Network(name, batch, tuple(layers), tuple((i - 1, i) for i in range(1, len(layers))), source)


_TOP_KEYS = {"version", "name", "batch", "layers", "description"}
_CONV_KEYS = {"name", "kind", "in_channels", "out_channels", "kernel", "in_size", "out_size"}
_FC_KEYS = {"name", "kind", "in_features", "out_features"}


def parse_network(data: dict, source: str) -> Network:
    """Validate a raw network spec mapping and build a Network; SpecError lists every problem."""
    errors: list[str] = []
    top = Fields(data, "", errors, _TOP_KEYS, {"version", "name", "layers"})
    if "version" in data and data["version"] != SPEC_VERSION:
        errors.append(f"version: unsupported version {data['version']!r} (this explorer reads version {SPEC_VERSION})")
    name = top.string("name", "?")
    top.string("description")
    batch = top.pos_int("batch", 1)
    raw_layers = data.get("layers")
    layers: list[Layer] = []
    if "layers" in data and (not isinstance(raw_layers, list) or not raw_layers):
        errors.append("layers: must be a non-empty list")
        raw_layers = []
    seen: dict[str, int] = {}
    for i, raw in enumerate(raw_layers or []):
        path = f"layers[{i}]"
        if not isinstance(raw, dict):
            errors.append(f"{path}: must be a mapping")
            continue
        kind_text = raw.get("kind")
        try:
            kind = LayerKind(kind_text)
        except ValueError:
            errors.append(f"{path}.kind: must be one of conv, fc, got {kind_text!r}")
            continue
        n0 = len(errors)
        if kind is LayerKind.CONV:
            f = Fields(raw, path, errors, _CONV_KEYS, _CONV_KEYS)
            lname = f.string("name")
            din, dout = f.pos_int("in_channels"), f.pos_int("out_channels")
            kernel, s_in, s_out = f.pair("kernel"), f.pair("in_size"), f.pair("out_size")
        else:
            f = Fields(raw, path, errors, _FC_KEYS, _FC_KEYS)
            lname = f.string("name")
            din, dout = f.pos_int("in_features"), f.pos_int("out_features")
            kernel = s_in = s_out = (1, 1)
        if lname is not None:
            if lname in seen:
                errors.append(f"{path}.name: duplicate layer name {lname!r} (also layers[{seen[lname]}])")
            seen.setdefault(lname, i)
        if len(errors) == n0:
            layers.append(Layer(lname, kind, din, dout, kernel, s_in, s_out))
    if errors:
        raise SpecError(source, errors)
    return Network.chain(name, batch, layers, source)


def load_network_file(path: str | Path) -> Network:
    return parse_network(load_yaml_file(path), str(path))


def load_network_text(text: str, source: str = "<string>") -> Network:
    return parse_network(load_yaml_text(text, source), source)


def check_batch(batch: int, source: str = "--batch") -> int:
    errors: list[str] = []
    b = check_pos_int(batch, source, errors)
    if errors:
        raise SpecError(source, errors[0].split(": ", 1)[1])
    return b
