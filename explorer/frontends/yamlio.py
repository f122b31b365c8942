"""Strict YAML loading: duplicate keys are errors, every document is a mapping.

Parsing runs on libyaml (``yaml.CSafeLoader``, several times faster) when PyYAML was built with
it, else on the pure-Python ``SafeLoader``; both get the same duplicate-key hook and the same
(Python) resolver and constructors, so they build the same data. When the fast parser fails, the
text is parsed again with the pure-Python loader and its error is reported: messages (line,
column, problem) do not depend on which parser PyYAML has.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from ..core.errors import SpecError
from .bounded import Refused, read_bounded
from .yaml_layers import split_layers


MAX_SPEC_BYTES = 64 * 2**20


class _MemoResolve:
    """The resolver's tag for an implicit scalar, memoised per text (the same regexes, once per
    distinct value instead of once per occurrence)."""

    def resolve(self, kind, value, implicit):
        if kind is not yaml.ScalarNode or self.yaml_path_resolvers:
            return super().resolve(kind, value, implicit)
        memo = self.__dict__.setdefault("_resolve_memo", {})
        key = (value, implicit)
        if key not in memo:
            memo[key] = super().resolve(kind, value, implicit)
        return memo[key]


class _StrictLoader(_MemoResolve, yaml.SafeLoader):
    """SafeLoader that refuses duplicate mapping keys (PyYAML silently keeps the last)."""


_FastBase = getattr(yaml, "CSafeLoader", None)


class _FastStrictLoader(_MemoResolve, _FastBase or yaml.SafeLoader):  # type: ignore[misc]
    """The same strict loader on libyaml's parser (``SafeLoader`` again without libyaml)."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    """A mapping; a key written twice is an error. Keys brought in by a merge (``<<: *anchor``)
    come first after ``flatten_mapping`` and may be overridden, as YAML's merge says (``b: {<<:
    *a, peak_TFLOPS: 3}``): only the keys written in this mapping itself must be distinct."""
    explicit = sum(1 for k, _ in node.value if k.tag != "tag:yaml.org,2002:merge")
    loader.flatten_mapping(node)
    merged = len(node.value) - explicit
    mapping: dict[Any, Any] = {}
    written: set[Any] = set()
    for i, (key_node, value_node) in enumerate(node.value):
        key = loader.construct_object(key_node, deep=deep)
        try:
            hash(key)
        except TypeError:
            raise yaml.constructor.ConstructorError(
                None, None, f"a key must be a plain value, not a {type(key).__name__} (line {key_node.start_mark.line + 1})",
                key_node.start_mark) from None
        if i >= merged:
            if key in written:
                line = key_node.start_mark.line + 1
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r} (line {line})", key_node.start_mark
                )
            written.add(key)
        mapping[key] = _construct_value(loader, value_node, deep)
    return mapping


def _construct_value(loader, node: yaml.Node, deep: bool) -> Any:
    """``construct_object``, with plain scalars memoised per (tag, text) for the document: a
    10,000-layer spec repeats a few hundred distinct values, and scalars are immutable."""
    if type(node) is not yaml.ScalarNode:
        return loader.construct_object(node, deep=deep)
    memo = loader.__dict__.setdefault("_scalar_memo", {})
    key = (node.tag, node.value)
    if key not in memo:
        memo[key] = loader.construct_object(node, deep=deep)
    return memo[key]


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
_FastStrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
HAVE_LIBYAML = _FastBase is not None


def _plain_scalars():
    """A plain scalar's value as the strict loader constructs it (its resolver and constructors)."""
    loader = _StrictLoader("")

    def value(text: str) -> Any:
        tag = loader.resolve(yaml.ScalarNode, text, (True, False))
        return loader.construct_object(yaml.ScalarNode(tag, text))

    return value


def _fast_layers(text: str) -> dict | None:
    """``yaml_layers.split_layers`` (a long ``layers:`` list of one-line flow mappings), else None:
    the whole text is then parsed the ordinary way, which also reports any error."""
    try:
        return split_layers(text, lambda rest: yaml.load(rest, Loader=_FastStrictLoader),  # noqa: S506
                            _plain_scalars())
    except Exception:  # noqa: BLE001 - an optimisation only: the ordinary parse decides and reports
        return None


def _parse(text: str, fast: bool = True) -> Any:
    """The document's data; on a YAML error, the pure-Python loader's error (same on every install)."""
    if not (fast and HAVE_LIBYAML):
        return yaml.load(text, Loader=_StrictLoader)  # noqa: S506 - SafeLoader subclass
    data = _fast_layers(text)
    if data is not None:
        return data
    try:
        return yaml.load(text, Loader=_FastStrictLoader)  # noqa: S506 - CSafeLoader subclass
    except yaml.YAMLError as fast_err:
        yaml.load(text, Loader=_StrictLoader)  # noqa: S506 - raises the reference message
        raise fast_err  # the two parsers disagree on validity: keep libyaml's verdict


def load_yaml_text(text: str, source: str, fast: bool = True) -> dict:
    """Parse YAML text strictly; ``source`` names the file in error messages.
    ``fast=False`` forces the pure-Python parser (tests compare the two)."""
    try:
        data = _parse(text, fast)
    except yaml.constructor.ConstructorError as err:
        raise SpecError(source, f"invalid YAML: {err.problem}") from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise SpecError(source, f"invalid YAML{where}: {problem}") from None
    except RecursionError:
        raise SpecError(source, "invalid YAML: nested too deeply") from None
    except ValueError as err:  # e.g. an integer of more than 4,300 digits
        raise SpecError(source, f"invalid YAML: {str(err).split(';')[0]}") from None
    if not isinstance(data, dict):
        raise SpecError(source, "top level must be a mapping")
    return data


def load_yaml_file(path: str | Path) -> dict:
    """Read and strictly parse a YAML file; a missing file is a SpecError."""
    p = Path(path)
    try:
        text = read_bounded(p, MAX_SPEC_BYTES, regular=False).decode("utf-8")  # '--model /dev/zero': bounded
    except Refused as err:
        raise SpecError(str(path), f"{err}: not a spec file") from None
    except FileNotFoundError:
        raise SpecError(str(path), "no such file") from None
    except IsADirectoryError:
        raise SpecError(str(path), "is a directory, not a file") from None
    except (OSError, UnicodeDecodeError) as err:
        raise SpecError(str(path), f"cannot read: {err}") from None
    return load_yaml_text(text, str(path))
