"""Strict YAML loading: duplicate keys are errors, every document is a mapping."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from ..core.errors import SpecError


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate mapping keys (PyYAML silently keeps the last)."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    loader.flatten_mapping(node)
    mapping: dict[Any, Any] = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in mapping:
            line = key_node.start_mark.line + 1
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r} (line {line})", key_node.start_mark
            )
        mapping[key] = loader.construct_object(value_node, deep=deep)
    return mapping


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def load_yaml_text(text: str, source: str) -> dict:
    """Parse YAML text strictly; ``source`` names the file in error messages."""
    try:
        data = yaml.load(text, Loader=_StrictLoader)  # noqa: S506 - SafeLoader subclass
    except yaml.constructor.ConstructorError as err:
        raise SpecError(source, f"invalid YAML: {err.problem}") from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise SpecError(source, f"invalid YAML{where}: {problem}") from None
    if not isinstance(data, dict):
        raise SpecError(source, "top level must be a mapping")
    return data


def load_yaml_file(path: str | Path) -> dict:
    """Read and strictly parse a YAML file; a missing file is a SpecError."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecError(str(path), "no such file") from None
    except IsADirectoryError:
        raise SpecError(str(path), "is a directory, not a file") from None
    except (OSError, UnicodeDecodeError) as err:
        raise SpecError(str(path), f"cannot read: {err}") from None
    return load_yaml_text(text, str(path))
