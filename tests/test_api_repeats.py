"""Trial hostile, findings 8 and 9: an empty model or array given to the API is named as the CLI
names it (``model: must not be empty``, never ``: is a directory, not a file``); a problem repeated
(100,000 identical bad pins, forbids or caps) is said once with its count, in the API and the CLI."""

from __future__ import annotations

import subprocess
import sys

import pytest

from explorer import api
from explorer.core.errors import SpecError, counted, first_problems


@pytest.mark.parametrize("fn, kwargs, want", [
    ("solve", {"model": ""}, "model: must not be empty"),
    ("solve", {"model": "   "}, "model: must not be empty"),
    ("solve", {"model": "alexnet", "array": ""}, "array: must not be empty"),
    ("solve", {"model": "", "split": "optimal"}, "model: must not be empty"),
    ("check", {"model": ""}, "model: must not be empty"),
    ("check", {"model": "alexnet", "array": " "}, "array: must not be empty"),
    ("plan_llm", {"model": ""}, "model: must not be empty"),
    ("plan_llm", {"model": "llama3-8b", "array": ""}, "array: must not be empty"),
])
def test_an_empty_model_or_array_is_named(fn, kwargs, want):
    with pytest.raises(SpecError) as err:
        getattr(api, fn)(**kwargs)
    assert str(err.value) == want


@pytest.mark.parametrize("kwargs, want", [
    ({"pins": ["conv1=I"] * 100_000}, "pins: 'conv1=I': 'conv1=I' is not LAYER@LEVEL=TYPE (e.g. fc6@*=II) (x100,000)"),
    ({"forbids": ["conv1@0=I"] * 1000}, "forbids: 'conv1@0=I': 'conv1@0=I' is not LAYER=TYPE (a forbid has no level: it "
                                        "holds at every level; LAYER@LEVEL=TYPE is a pin's form) (x1,000)"),
    ({"caps": ["x=1"] * 1000}, "caps: 'x=1': level must be an integer (digits 0-9), got 'x' (x1,000)"),
    ({"pins": ["conv1=I", "fc9@0=I"] * 3}, "pins: 'conv1=I': 'conv1=I' is not LAYER@LEVEL=TYPE (e.g. fc6@*=II) (x3); "
                                           "'fc9@0=I': unknown layer 'fc9' (layers: conv1, conv2, conv3, conv4, conv5, "
                                           "fc6, fc7, fc8) (x3)"),
])
def test_a_repeated_problem_is_said_once_with_its_count(kwargs, want):
    with pytest.raises(SpecError) as err:
        api.solve("alexnet", **kwargs)
    assert str(err.value) == want


def test_the_cli_counts_repeats_too():
    r = subprocess.run([sys.executable, "-m", "explorer.app.cli", "--model", "alexnet", *["--forbid", "x=I"] * 50],
                       capture_output=True, text=True)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr == ("explore: error: --forbid: 'x=I': unknown layer 'x' (layers: conv1, conv2, conv3, conv4, conv5, "
                        "fc6, fc7, fc8) (x50)\n"), r.stderr


def test_counted_and_first_problems():
    assert counted(["a", "b", "a", "a"]) == ["a (x3)", "b"]
    many = [f"p{i}" for i in range(12)] + ["p0"] * 5 + ["p11"] * 2
    assert first_problems(many, 10) == ["p0 (x6)", *[f"p{i}" for i in range(1, 10)], "and 4 more problems"]
    assert str(SpecError("f", ["x"] * 3)) == "f: x (x3)" and SpecError("f", ["x"] * 3).problems == ["x"] * 3
