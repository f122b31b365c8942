"""The strict YAML loader gives the same data and the same error messages on libyaml and on
the pure-Python parser."""

from __future__ import annotations

import pytest
import yaml

from explorer.core.errors import SpecError
from explorer.frontends import yamlio, zoo

BAD = [
    "a: 1\na: 2\n",  # duplicate key, block mapping
    "x: {a: 1, a: 2}\n",  # duplicate key, flow mapping
    "top:\n  inner: 1\n  inner: 2\n",  # duplicate key, nested, line 3
    "name: [unclosed\n",
    "a: b: c\n",
    "a:\n  - 1\n - 2\n",
    "\tx: 1\n",
    "a: &x 1\nb: *y\n",
    "a: !!python/object:os.system x\n",
    "- just\n- a list\n",
    "",
    "? [1, 2]\n: x\n",  # a key that is not a plain value
    "a: " + "[" * 3000 + "]" * 3000 + "\n",  # nested too deeply
    "a: " + "9" * 5000 + "\n",  # an integer too long to convert
    "a: \x00\n",  # a control character
    "a: 'unterminated\n",
]


def messages(text: str, fast: bool) -> str:
    with pytest.raises(SpecError) as err:
        yamlio.load_yaml_text(text, "f.yaml", fast=fast)
    return str(err.value)


@pytest.mark.parametrize("text", BAD)
def test_fast_and_pure_python_parsers_report_the_same_error(text):
    assert messages(text, True) == messages(text, False)


def test_duplicate_key_message_names_the_line():
    assert messages("top:\n  inner: 1\n  inner: 2\n", True) == "f.yaml: invalid YAML: duplicate key 'inner' (line 3)"
    assert messages("name: [unclosed\n", True).startswith("f.yaml: invalid YAML at line 2, column 1: ")


def test_libyaml_is_used_when_available():
    if not hasattr(yaml, "CSafeLoader"):
        pytest.skip("PyYAML built without libyaml")
    assert yamlio.HAVE_LIBYAML
    assert issubclass(yamlio._FastStrictLoader, yaml.CSafeLoader)


@pytest.mark.parametrize("path", list(zoo.zoo_files().values()) + list(zoo.array_files().values()), ids=lambda p: p.stem)
def test_shipped_files_parse_to_the_same_data(path):
    text = path.read_text(encoding="utf-8")
    assert yamlio.load_yaml_text(text, str(path), fast=True) == yamlio.load_yaml_text(text, str(path), fast=False)


def test_a_network_yaml_given_as_a_model_is_parsed_once(tmp_path, monkeypatch):
    # (the check that it is not an array or cluster file used to parse it a second time: 0.3 s of
    # a 10,000-layer chain's 1.5 s whole run)
    from explorer.frontends import load_model, yamlio

    path = tmp_path / "net.yaml"
    path.write_text("version: 1\nname: tiny\nbatch: 4\nlayers:\n  - {name: fc1, kind: fc, in_features: 8, out_features: 4}\n")
    calls = []
    real = yamlio._parse
    monkeypatch.setattr(yamlio, "_parse", lambda *a, **k: calls.append(1) or real(*a, **k))
    net = load_model(str(path))
    assert net.name == "tiny" and len(net.layers) == 1 and len(calls) == 1
