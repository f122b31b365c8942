"""The shipped data: the network zoo (``models/*.yaml``), the arrays (``spaces/arrays/*.yaml``) and
the GPU clusters (``spaces/clusters/*.yaml``).

Both folders install as data inside the explorer package (``explorer.models``,
``explorer.spaces``) and are read through package resources, so they are found the same
way from a source checkout, an editable install or a wheel.
"""

from __future__ import annotations

import importlib
from pathlib import Path

ALIASES = {"vgg16": "vgg-d", "vgg19": "vgg-e"}
DEFAULT_MODEL, DEFAULT_ARRAY = "vgg-a", "hypar-16"  # a run that names neither (explore, the API, a sweep point)


def _data_dir(package: str) -> Path:
    """The package's folder: next to its ``__init__.py`` (what ``importlib.resources.files`` gives
    for a package on disk, without importing ``importlib.resources``: tempfile, zipfile, ...,
    ~8 ms of every run); through resources for a package that has no file of its own."""
    origin = getattr(importlib.import_module(package), "__file__", None)
    if origin is not None:
        return Path(origin).parent
    from importlib import resources

    return Path(str(resources.files(package)))


def _key(name: str) -> str:
    return name.lower().replace("-", "").replace("_", "")


def _files(package: str, folder: str = "") -> dict[str, Path]:
    """Name -> YAML path of a data folder, sorted by name."""
    return {p.stem: p for p in sorted((_data_dir(package) / folder).glob("*.yaml"))}


def zoo_files() -> dict[str, Path]:
    return _files("explorer.models")


def resolve_model(name: str) -> Path | None:
    """A zoo name (case, '-' and '_' ignored; aliases vgg16/vgg19) -> its file, or None."""
    files = {_key(k): v for k, v in zoo_files().items()}
    key = _key(name)
    key = _key(ALIASES.get(key, key))
    return files.get(key)


def array_files() -> dict[str, Path]:
    return _files("explorer.spaces", "arrays")


def resolve_array(name: str) -> Path | None:
    return array_files().get(name.lower())


def cluster_files() -> dict[str, Path]:
    return _files("explorer.spaces", "clusters")


def resolve_cluster(name: str) -> Path | None:
    """A shipped GPU cluster name (case ignored) -> its file, or None."""
    return cluster_files().get(name.lower())
