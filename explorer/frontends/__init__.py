"""Spec loading: every importer behind one registry.

``load_model`` and ``load_array`` resolve ``--model`` and ``--array`` (a shipped name or a
path) to the core's typed specs. A network file is read by the frontend registered for its
suffix (``NETWORK_FORMATS``); a new importer registers here and nowhere else. The core never
imports a frontend.
"""

from __future__ import annotations

from importlib import import_module
from pathlib import Path

from ..core.array import ArraySpec
from ..core.errors import SpecError, shown
from ..core.network import Network
from . import zoo
from .array_yaml import load_array_file

# file suffix -> "module:function" taking (path, batch, sequence) and returning a Network;
# imported on use, so that a YAML run never imports onnx.
NETWORK_FORMATS: dict[str, str] = {
    ".yaml": "explorer.frontends.network_yaml:load_network_file",
    ".yml": "explorer.frontends.network_yaml:load_network_file",
    ".onnx": "explorer.frontends.onnx:load_onnx",
    ".json": "explorer.frontends.hf_config:load_hf_config",  # a Hugging Face transformer config.json
}


def _looks_like_path(text: str) -> bool:
    return "/" in text or "\\" in text or text.endswith(tuple(NETWORK_FORMATS)) or Path(text).exists()


def network_loader(path: str | Path):
    """The registered loader for a network file, by suffix (YAML when the suffix is unknown)."""
    target = NETWORK_FORMATS.get(Path(str(path)).suffix.lower(), NETWORK_FORMATS[".yaml"])
    module, func = target.split(":")
    return getattr(import_module(module), func)


def load_network_path(path: str | Path, batch: int | None = None, sequence: int | None = None) -> Network:
    """A network file in any registered format; ``batch`` fills a symbolic batch (ONNX),
    ``sequence`` a symbolic sequence (ONNX) or a YAML spec's ``sequence``."""
    return network_loader(path)(path, batch, sequence)


def load_model(ref: str, batch: int | None = None, sequence: int | None = None) -> Network:
    """A zoo name or a path (YAML, ONNX or a Hugging Face config.json); ``batch`` fills an ONNX model's symbolic batch,
    ``sequence`` its symbolic sequence (or overrides a YAML spec's ``sequence``)."""
    if _looks_like_path(ref):
        return load_network_path(ref, batch, sequence)
    path = zoo.resolve_model(ref)
    if path is None:
        known = ", ".join(zoo.zoo_files())
        raise SpecError("--model", f"unknown model {shown(ref)} (known: {known}, vgg16, vgg19; or a path to a .yaml file)")
    return load_network_path(path, None, sequence)


def load_array(ref: str) -> ArraySpec:
    if _looks_like_path(ref):
        return load_array_file(ref)
    path = zoo.resolve_array(ref)
    if path is None:
        known = ", ".join(zoo.array_files())
        raise SpecError("--array", f"unknown array {shown(ref)} (known: {known}; or a path to a .yaml file)")
    return load_array_file(path)
