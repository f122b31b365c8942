"""``--model`` for the LLM planner: a transformer's shape, from the zoo, a YAML spec with a
``transformer:`` block, or a Hugging Face ``config.json``.

The planner needs the shape (layers, hidden, heads, ...), not only the network: anything else
(a CNN, a spec of hand-written ``layers:``, an ONNX graph) is refused in one line naming
``--model``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..core.errors import SpecError, shown
from . import zoo
from .transformer import TransformerShape

NOT_A_TRANSFORMER = ("the LLM planner takes the transformer zoo models (gpt3-*, llama3-*, mixtral-*: marked in "
                     "explore list) and specs with a transformer: block, or a Hugging Face config.json")


@dataclass(frozen=True, slots=True)
class TransformerSource:
    shape: TransformerShape
    name: str
    batch: int | None  # the spec's global batch (None: a config.json, which gives none)
    sequence: int
    source: str
    approximations: tuple[str, ...] = ()  # what the file asks for that the model does not follow (stderr, notes)


def load_transformer(ref: str, sequence: int | None = None) -> TransformerSource:
    """The transformer ``ref`` names (SpecError naming ``--model`` or the file)."""
    from . import _looks_like_path

    if _looks_like_path(ref):
        path = Path(ref)
    else:
        found = zoo.resolve_model(ref)
        if found is None:
            raise SpecError("--model", f"unknown model {shown(ref)} ({NOT_A_TRANSFORMER})")
        path = found
    if path.suffix.lower() == ".json":
        from .hf_config import read_hf_shape

        shape, seq, name, notes = read_hf_shape(path, sequence)
        return TransformerSource(shape, name, None, seq, str(path), notes)
    if path.suffix.lower() not in (".yaml", ".yml"):
        raise SpecError("--model", f"{shown(ref)} is not a transformer shape: {NOT_A_TRANSFORMER}")
    return _from_yaml(ref, path, sequence)


def _from_yaml(ref: str, path: Path, sequence: int | None) -> TransformerSource:
    from .network_yaml import parse_network
    from .transformer import parse_shape
    from .yamlio import load_yaml_file

    data = load_yaml_file(path)  # read once: the checks below and the shape take the same data
    if not isinstance(data, dict) or "transformer" not in data:
        raise SpecError("--model", f"{shown(ref)} is not given as a transformer shape (no transformer: block; a layers: list is not planned on a cluster): {NOT_A_TRANSFORMER}")
    net = parse_network(data, str(path), sequence)  # every check of the spec, with its file and field
    errors: list[str] = []
    shape = parse_shape(data["transformer"], "transformer", errors)
    if shape is None:
        raise SpecError(str(path), errors)
    return TransformerSource(shape, net.name, net.batch, net.sequence, str(path))
