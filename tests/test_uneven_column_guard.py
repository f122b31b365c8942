"""Columns counted before they are built: ``--free all`` on a 4-level array of kinds has billions of
columns a layer (lenet-c on tpu-mix-16 at grid 16: 2.9 G); the uneven exact and brute force built
them first and were killed for their memory (234 s, signal 9). Now both refuse at once."""

from __future__ import annotations

import random

import pytest

from explorer.core.errors import InstanceTooLarge, Refused
from explorer.core.partition import Space
from explorer.core.split_rules import TIME_ONLY
from explorer.core.uneven import FreeAlphas, alpha_grid, alpha_space
from explorer.frontends import load_array, load_model
from explorer.solvers import uneven
from explorer.solvers.brute import solve_split as brute_split

from .conftest import run_cli
from .test_uneven_model import mix


@pytest.fixture
def no_columns_built(monkeypatch):
    def built(*a, **k):
        raise AssertionError("the columns were built")
    monkeypatch.setattr(uneven, "_columns", built)


def test_exact_and_brute_refuse_billions_of_columns_before_building_them(no_columns_built):
    net, arr = load_model("lenet-c"), load_array("tpu-mix-16")
    aspace = alpha_space(arr, alpha_grid(16), FreeAlphas.ALL)
    with pytest.raises(Refused, match=r"exact \(uneven splits\): 11,664,000,000 columns, at least .* MiB before any table"):
        uneven.exact_uneven(net, arr, Space.HYPAR, aspace)
    with pytest.raises(InstanceTooLarge, match=r"brute: .* plans \(4 layers, up to 2,916,000,000 columns each\)"):
        brute_split(net, arr, Space.HYPAR, aspace)


def test_the_cli_refuses_in_one_line(capsys):
    code, out, err = run_cli(["--model", "lenet-c", "--array", "tpu-mix-16", "--split", "optimal", "--free", "all",
                              "--solver", "exact"], capsys)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and "11,664,000,000 columns" in err


def test_the_least_counts_are_the_columns_counts_where_no_layer_needs_whole_units():
    rng = random.Random(7)
    net = load_model("lenet-c")
    for _ in range(6):
        levels = rng.choice((2, 3))
        arr = mix(levels, [rng.choice((45, 123)) for _ in range(2**levels)])
        aspace = alpha_space(arr, alpha_grid(rng.choice((2, 4))), rng.choice(list(FreeAlphas)))
        built = [len(c) for c in uneven._columns(net, Space.ACCPAR, aspace, levels, TIME_ONLY)]
        assert uneven.least_column_counts(net, Space.ACCPAR, aspace, levels, TIME_ONLY) == built


def test_cpsat_refuses_on_the_least_counts_before_enumerating_any_layer(monkeypatch):
    """CP-SAT's size check counts a whole-units layer (attention with heads) by enumerating its
    columns: billions under --free all; the least counts refuse first."""
    from explorer.solvers import uneven_cpsat

    def enumerated(*a, **k):
        raise AssertionError("the columns were enumerated")
    monkeypatch.setattr(uneven_cpsat, "_column_counts", enumerated)
    net, arr = load_model("lenet-c"), load_array("tpu-mix-16")
    with pytest.raises(Refused, match=r"cpsat \(uneven splits\): 11,664,000,000 columns, more than 2,000"):
        uneven_cpsat.cpsat_size_check(net, arr, Space.HYPAR, alpha_space(arr, alpha_grid(16), FreeAlphas.ALL),
                                      FreeAlphas.ALL, TIME_ONLY, 2_000, 20_000)
