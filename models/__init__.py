"""The network zoo (one YAML file per network) and how names resolve to files."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

ALIASES = {"vgg16": "vgg-d", "vgg19": "vgg-e"}


def _key(name: str) -> str:
    return name.lower().replace("-", "").replace("_", "")


def zoo_dir() -> Path:
    return Path(str(resources.files(__name__)))


def zoo_files() -> dict[str, Path]:
    """Zoo name -> YAML path, sorted by name."""
    return {p.stem: p for p in sorted(zoo_dir().glob("*.yaml"))}


def resolve(name: str) -> Path | None:
    """A zoo name (case, '-' and '_' ignored; aliases vgg16/vgg19) -> its file, or None."""
    files = {_key(k): v for k, v in zoo_files().items()}
    key = _key(name)
    key = _key(ALIASES.get(key, key))
    return files.get(key)
