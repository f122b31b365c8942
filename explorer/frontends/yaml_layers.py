"""A fast reader for the common shape of a long network spec: a top-level ``layers:`` block
sequence whose items are one-line flow mappings of plain scalars (``  - {name: c1, kind: conv,
kernel: 3, inputs: [a, b]}``), the form ``bench/make_graph_zoo.py`` and generated chains write.

libyaml builds a Python node and two marks per scalar before PyYAML's constructors run: most of
the time of loading a 10,000-layer spec. Here those lines are read with two regular expressions,
and every distinct scalar is resolved and constructed once by PyYAML itself (the same resolver
and constructors, so ``yes``, ``017``, ``1_000`` or ``2001-1-2`` mean what YAML says). The rest
of the document (the item lines blanked, so line numbers are kept) is parsed by the strict
loader. ``split_layers`` returns None whenever the shape is not exactly this one, and the caller
then parses the whole text the ordinary way; so does any error here (messages come from there).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, Callable

_TOKEN = r"[A-Za-z0-9_][A-Za-z0-9_.\-]*"
_SEQ = rf"\[ *(?:{_TOKEN}(?: *, *{_TOKEN})*)? *\]"
_PAIR = rf"({_TOKEN}) *: +({_TOKEN}|{_SEQ})"


@lru_cache(maxsize=None)
def _patterns() -> tuple[re.Pattern, re.Pattern, re.Pattern, re.Pattern, re.Pattern]:
    """(item, pairs, tokens, skip, unusual), compiled on first use: a short document (every shipped
    spec, a GPU cluster) never needs them, and the last one's Unicode class takes milliseconds to build."""
    return (re.compile(rf"( *)- +\{{ *({_PAIR}(?: *, *{_PAIR})*) *\}} *(?: #.*)?"), re.compile(_PAIR),
            re.compile(_TOKEN), re.compile(r" *(?:#.*)?"),  # skip: a blank or comment line
            # unusual: what PyYAML's reader breaks lines at besides "\n" (NEL, LS, PS: "." above would
            # swallow them) or rejects (its NON_PRINTABLE): such a document takes the strict loader
            re.compile("[\x85\u2028\u2029]|[^\x09\x0A\x0D\x20-\x7E\x85\xA0-\uD7FF\uE000-\uFFFD\U00010000-\U0010FFFF]"))


# characters that may open a construct spanning lines (a quoted scalar, a flow collection): in the
# rest of the document they could swallow the ``layers:`` line; such documents take the slow path
_MULTILINE_OPENERS = ("'", '"', "[", "{")
MIN_ITEMS = 64  # below, the ordinary loader is as fast


def split_layers(text: str, parse_rest: Callable[[str], Any], scalar: Callable[[str], Any]) -> dict | None:
    """The document's data, or None when it is not of the shape above. ``parse_rest`` parses YAML
    text strictly; ``scalar`` is a plain scalar's value as the strict loader would construct it."""
    if text.count("\n") < MIN_ITEMS or "\r" in text or "\t" in text or _patterns()[4].search(text):
        return None  # fewer lines than MIN_ITEMS items and their ``layers:`` line: not this shape
    lines = text.split("\n")
    found = _item_run(lines)
    if found is None:
        return None
    start, stop, items = found
    rest = lines[:start] + [""] * (stop - start) + lines[stop:]
    skip = _patterns()[3].fullmatch
    if any(c in line for line in rest if not skip(line) for c in _MULTILINE_OPENERS):
        return None
    data = parse_rest("\n".join(rest))
    if not isinstance(data, dict) or "layers" not in data or data["layers"] is not None:
        return None
    layers = _layers(items, scalar)
    if layers is None:
        return None
    data["layers"] = layers
    return data


def _item_run(lines: list[str]) -> tuple[int, int, list[str]] | None:
    """(first, end) line numbers of the item lines after the first ``layers:`` line, and the item
    texts (comments and blank lines between them skipped); None if there are fewer than MIN_ITEMS
    or their indentation differs."""
    try:
        head = lines.index("layers:")
    except ValueError:
        return None
    items, indent, end = [], None, head + 1
    item_rx, skip_rx = _patterns()[0], _patterns()[3]
    for n in range(head + 1, len(lines)):
        line = lines[n]
        m = item_rx.fullmatch(line)
        if m is None:
            if skip_rx.fullmatch(line):
                continue
            break
        if indent is None:
            indent = m.group(1)
        elif m.group(1) != indent:
            return None
        items.append(m.group(2))
        end = n + 1
    if len(items) < MIN_ITEMS:
        return None
    return head + 1, end, items


class _Values(dict):
    """Token -> its value, constructed on first use (a lookup in C after that)."""

    def __init__(self, scalar: Callable[[str], Any]):
        super().__init__()
        self.scalar = scalar

    def __missing__(self, token: str) -> Any:
        value = self[token] = self.scalar(token)
        return value


def _layers(items: list[str], scalar: Callable[[str], Any]) -> list[dict] | None:
    """The items as mappings; None on a key written twice (the strict loader's error)."""
    value = _Values(scalar).__getitem__
    pairs_rx, tokens_rx = _patterns()[1:3]
    out = []
    for inner in items:
        pairs = pairs_rx.findall(inner)
        item = {value(k): [value(t) for t in tokens_rx.findall(v)] if v[0] == "[" else value(v) for k, v in pairs}
        if len(item) != len(pairs):
            return None
        out.append(item)
    return out
