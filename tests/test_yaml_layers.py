"""The fast reader of long ``layers:`` lists (frontends/yaml_layers.py) gives exactly the data and
the errors of the strict loader, and is taken for the specs it is meant for."""

from __future__ import annotations

import sys
from unittest import mock
from pathlib import Path

import pytest

from explorer.core.errors import SpecError
from explorer.frontends import yamlio
from explorer.frontends.yaml_layers import MIN_ITEMS

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from bench_whole_runs import chain_spec  # noqa: E402

ITEM = "  - {name: l%d, kind: fc, in_features: 8, out_features: 4}"


def spec(items: list[str], head: str = "version: 1\nname: t\nbatch: 4\n", tail: str = "") -> str:
    return head + "layers:\n" + "\n".join(items) + "\n" + tail


def plain(n: int = MIN_ITEMS) -> list[str]:
    return [ITEM % i for i in range(n)]


def ordinary(text: str):
    """The strict loader without the fast reader (libyaml where PyYAML has it)."""
    with mock.patch.object(yamlio, "_fast_layers", lambda _text: None):
        return yamlio.load_yaml_text(text, "f.yaml")


def same_as_strict(text: str) -> None:
    """The loader with and without the fast reader agree: the same data, or the same one-line error."""
    try:
        fast = yamlio.load_yaml_text(text, "f.yaml")
    except SpecError as err:
        with pytest.raises(SpecError) as ref:
            ordinary(text)
        assert str(err) == str(ref.value)
        return
    assert fast == ordinary(text)


@pytest.mark.parametrize("seed,layers", [(1, 200), (2, 1000), (3, 64)])
def test_generated_chains_take_the_fast_path_and_give_the_same_data(seed, layers):
    text = chain_spec(seed, layers)
    assert yamlio._fast_layers(text) is not None
    same_as_strict(text)


SCALARS = ["yes", "No", "off", "null", "017", "0x1F", "0o17", "1_000", "2001-1-2", "1.5", "1e3", "true", "NaN",
           "a-b", "0", "00", "1.", "x.y", "_"]


def test_every_scalar_means_what_yaml_says():
    items = [f"  - {{name: l{i}, kind: fc, v: {SCALARS[i % len(SCALARS)]}, w: [{SCALARS[-1 - i % len(SCALARS)]}, "
             f"b], e: []}}" for i in range(2 * len(SCALARS) + MIN_ITEMS)]
    text = spec(items)
    data = yamlio._fast_layers(text)
    assert data is not None and data["layers"][4]["v"] == 15 and data["layers"][2]["v"] is False
    same_as_strict(text)


SHAPES = {
    "comments and blank lines among the items": spec(plain()[:3] + ["", "  # note", "# col 0"] + plain()[3:]),
    "a trailing comment": spec([x + "  # c" for x in plain()]),
    "items at column 0": spec([x.lstrip() for x in plain()]),
    "keys after the list": spec(plain(), tail="description: after\n"),
    "a comment header": spec(plain(), head="# a net\n# of fc layers\nversion: 1\n"),
}


@pytest.mark.parametrize("text", SHAPES.values(), ids=SHAPES.keys())
def test_shapes_read_fast(text):
    assert yamlio._fast_layers(text) is not None
    same_as_strict(text)


DEFER = {
    "a duplicate key in an item": spec(plain() + ["  - {name: x, kind: fc, name: y}"]),
    "a key after the items, indented": spec(plain(), tail="  extra: 1\n"),
    "a block item after the flow items": spec(plain(), tail="  - name: x\n    kind: fc\n"),
    "two indentations": spec(plain()[:5] + ["    " + x.strip() for x in plain()[5:]]),
    "layers twice": spec(plain(), tail="layers:\n  - {name: z, kind: fc}\n"),
    "a quoted scalar swallowing layers": spec(plain(), head='version: 1\nname: "t\n', tail='"\n'),
    "a flow list swallowing layers": spec(plain(), head="version: 1\nname: [t,\n", tail="]\n"),
    "a quoted value in an item": spec(plain() + ['  - {name: "x y", kind: fc}']),
    "a nested mapping in an item": spec(plain() + ["  - {name: x, kind: {a: 1}}"]),
    "a two-word scalar": spec(plain() + ["  - {name: x y, kind: fc}"]),
    "CRLF line ends": spec(plain()).replace("\n", "\r\n"),
    "a tab": spec(plain() + ["  - {name: x,\tkind: fc}"]),
    "an anchor on layers": spec(plain()).replace("layers:", "layers: &a"),
    "too few items": spec(plain(MIN_ITEMS - 1)),
    "a second document": spec(plain(), tail="---\nx: 1\n"),
    "a top level that is not a mapping": "- " + spec(plain()),
}


@pytest.mark.parametrize("text", DEFER.values(), ids=DEFER.keys())
def test_other_shapes_defer_to_the_strict_loader(text):
    assert yamlio._fast_layers(text) is None
    same_as_strict(text)


def test_the_fast_path_reports_no_error_of_its_own():
    text = spec(plain() + ["  - {name: x, kind: fc, name: y}"])
    with pytest.raises(SpecError, match=r"duplicate key 'name' \(line 69\)"):
        yamlio.load_yaml_text(text, "f.yaml")


@pytest.mark.parametrize("odd", ["\x85", "\u2028", "\u2029", "\x00", "\x07", "\x1b", "\x7f", "\ufffe"])
def test_line_breaks_and_characters_pyyaml_treats_its_own_way_take_the_strict_loader(odd):
    """PyYAML breaks lines at NEL/LS/PS and rejects non-printable characters; the fast reader saw
    neither (a comment's NEL hid a layer behind it; a bell in a comment loaded): such a text takes
    the strict loader, its data or its error (trial 9)."""
    items = plain(70)
    items[20] += f" # note{odd}  - {{name: extra, kind: fc, in_features: 4, out_features: 4}}"
    text = spec(items)
    assert yamlio._fast_layers(text) is None
    same_as_strict(text)
    quoted = spec(plain(70), head=f"version: 1\n# c{odd}description: \"abc\nbatch: 4\n", tail=f"# d{odd}  tail\"\n")
    same_as_strict(quoted)


def test_the_least_document_of_the_shape_reads_fast():
    # "layers:" and MIN_ITEMS item lines, nothing else: the line count that split_layers' early
    # exit (fewer lines than that) lets through
    text = "layers:\n" + "\n".join(plain())
    assert text.count("\n") == MIN_ITEMS
    assert yamlio._fast_layers(text) is not None
    same_as_strict(text)


def test_a_short_document_compiles_none_of_the_fast_readers_patterns():
    # a shipped spec or cluster (a few dozen lines) never builds the patterns (their Unicode class
    # costs milliseconds of every run): the early exit on the line count comes first
    import subprocess

    probe = ("from explorer.frontends import load_cluster\nfrom explorer.frontends.yaml_layers import _patterns\n"
             "load_cluster('dgx-a100')\nprint(_patterns.cache_info().misses)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["0"]
