"""Shipped accelerator arrays and how names resolve to files."""

from __future__ import annotations

from importlib import resources
from pathlib import Path


def arrays_dir() -> Path:
    return Path(str(resources.files(__name__)))


def array_files() -> dict[str, Path]:
    return {p.stem: p for p in sorted(arrays_dir().glob("*.yaml"))}


def resolve(name: str) -> Path | None:
    key = name.lower()
    return array_files().get(key)
