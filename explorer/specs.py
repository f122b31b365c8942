"""Resolve ``--model`` and ``--array`` (a shipped name or a path) to typed specs."""

from __future__ import annotations

from pathlib import Path

import models
from spaces import arrays

from .array import ArraySpec, load_array_file
from .errors import SpecError
from .network import Network, load_network_file


def _looks_like_path(text: str) -> bool:
    return "/" in text or "\\" in text or text.endswith((".yaml", ".yml", ".onnx")) or Path(text).exists()


def load_model(ref: str, batch: int | None = None) -> Network:
    """A zoo name or a path (YAML or ONNX); ``batch`` fills an ONNX model's symbolic batch."""
    if _looks_like_path(ref):
        return load_network_file(ref, batch)
    path = models.resolve(ref)
    if path is None:
        known = ", ".join(models.zoo_files())
        raise SpecError("--model", f"unknown model {ref!r} (known: {known}, vgg16, vgg19; or a path to a .yaml file)")
    return load_network_file(path)


def load_array(ref: str) -> ArraySpec:
    if _looks_like_path(ref):
        return load_array_file(ref)
    path = arrays.resolve(ref)
    if path is None:
        known = ", ".join(arrays.array_files())
        raise SpecError("--array", f"unknown array {ref!r} (known: {known}; or a path to a .yaml file)")
    return load_array_file(path)
