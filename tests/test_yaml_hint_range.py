"""The YAML exponent hint is given only for a value then taken (trial 8, item 11: ``1e400`` got
"write 1.0e+400", which was then refused as infinite)."""

from __future__ import annotations

import pytest

from explorer.frontends.fields import pos_number_problem


@pytest.mark.parametrize("text", ["1e400", "1e101", "1e-40", "-2e3"])
def test_out_of_range_text_gets_the_range_not_a_spelling(text):
    got = pos_number_problem(text)
    assert got == (f"must be a positive number, got '{text}' (a number between 1e-30 and 1e100, written as YAML "
                   f"reads a float, such as 2.0e+3)")
    assert "write" not in got


@pytest.mark.parametrize("text,spelled", [("2e3", "2.0e+3"), ("1e100", "1.0e+100"), ("1e-30", "1.0e-30")])
def test_in_range_text_gets_the_spelling_that_is_then_taken(text, spelled):
    assert pos_number_problem(text).endswith(f"(YAML reads a bare {text} as text: write {spelled})")
    import yaml

    assert pos_number_problem(yaml.safe_load(spelled)) is None


def test_sweep_grid_1e400_names_the_range(tmp_path, capsys):
    from .conftest import run_cli

    spec = tmp_path / "s.yaml"
    spec.write_text("version: 1\nname: s\ngrid: {model: [alexnet], link_bandwidth_GBps: [1e400]}\n")
    code, out, err = run_cli(["sweep", str(spec), "--out", str(tmp_path / "o")], capsys)
    assert code == 2 and "1e400" in err and "between 1e-30 and 1e100" in err and "1.0e+400" not in err
