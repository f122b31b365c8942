"""``explore split --split search`` stays in the declared alpha space: it starts from the equal or
the proportional split moved onto the grid (``search_start``), so its plan is never faster than
the space's proven optimum (``--split optimal``, brute force), while ``proportional`` keeps its
off-grid alphas (15/56 on tpu-mix-16)."""

import random
from fractions import Fraction as F

import pytest

from explorer.app.check_hetero import check_hetero
from explorer.app.split import Split, nearest_choice, on_grid, search_start, split_run
from explorer.core.hetero import FreeAlphas, alpha_grid, alpha_space, evaluate_hetero, proportional_alphas
from explorer.core.objective import Objective
from explorer.core.partition import Space
from explorer.core.problem import Problem
from explorer.core.solution import SolveOptions, Status
from explorer.frontends import load_array, load_model
from explorer.solvers import get_solver
from explorer.solvers.hetero import brute_hetero

from .test_hetero_joint import _instance


def test_nearest_choice_by_hand():
    grid = alpha_grid(16)
    assert nearest_choice(grid, F(15, 56)) == F(1, 4)  # |15/56 - 14/56| = 1/56 < |15/56 - 17.5/56|
    assert nearest_choice(grid, F(28, 69)) == F(6, 16)  # 28/69 = 0.4058: 6/16 = 0.375 (0.031), 7/16 = 0.4375 (0.032)
    assert nearest_choice(alpha_grid(3), F(1, 2)) == F(1, 3)  # a tie: both 1/6 from 1/2, the lower first
    assert nearest_choice((F(1, 4), F(3, 4)), F(1, 2)) == F(1, 4)


def test_search_start_is_on_the_grid_of_the_tpu_mix():
    net, arr = load_model("alexnet"), load_array("tpu-mix-16")
    aspace = alpha_space(arr, alpha_grid(16))
    types = get_solver("dp")(Problem(net, arr, Space.ACCPAR, Objective.TIME), SolveOptions()).plan
    prop = on_grid(net, types, aspace, proportional_alphas(arr))
    assert [groups[0][0] for groups in prop.alphas] == [F(1, 4), F(1, 2), F(1, 2), F(1, 2)]  # 15/56 -> 1/4
    start = search_start(net, arr, types, aspace)
    assert aspace.contains(start) and start == prop  # 1/4 beats 1/2 on this mix
    search = split_run(net, arr, Space.ACCPAR, Split.SEARCH)
    assert aspace.contains(search.plan) and search.step_time_s <= evaluate_hetero(net, arr, start).step_time_s


@pytest.mark.parametrize("model", ["alexnet", "lenet-c"])
def test_search_is_never_faster_than_the_proven_optimum_on_the_tpu_mix(model):
    """The invariant: optimal <= search (a heuristic in the space) on every network. On AlexNet
    the proportional split (15/56, off the grid) is faster than the search: the grid's price."""
    net, arr = load_model(model), load_array("tpu-mix-16")
    opt = split_run(net, arr, Space.ACCPAR, Split.OPTIMAL)
    search = split_run(net, arr, Space.ACCPAR, Split.SEARCH)
    assert opt.status is Status.OPTIMAL and opt.bound_s == opt.step_time_s
    assert opt.step_time_s <= search.step_time_s and opt.alpha_space.contains(search.plan)
    if model == "alexnet":
        prop = split_run(net, arr, Space.ACCPAR, Split.PROPORTIONAL)
        assert not opt.alpha_space.contains(prop.plan) and prop.step_time_s < search.step_time_s


def test_search_is_never_faster_than_brute_force_on_random_tiny_instances():
    """Random mixes, spaces, grids (odd ones too) and alpha spaces: the search's plan lies in the
    declared space and is no faster than brute force's optimum over it; ``check --uneven`` agrees."""
    rng = random.Random(1316)
    off_grid_faster = checked = 0
    for _ in range(120):
        net, arr, space, aspace = _instance(rng)
        grid = len(aspace.grid) + 1
        try:
            search = split_run(net, arr, space, Split.SEARCH, grid=grid, free=aspace.free)
        except Exception as err:  # noqa: BLE001 -- only the DP's refusals of a wide graph are expected
            assert "hierarchical DP" in str(err), err
            continue
        best = brute_hetero(net, arr, space, aspace).step_time_s
        assert aspace.contains(search.plan), search.plan
        assert best <= search.step_time_s
        prop = split_run(net, arr, space, Split.PROPORTIONAL, grid=grid, free=aspace.free)
        off_grid_faster += prop.step_time_s < best  # what the old start could keep
        checked += 1
        if checked % 10 == 0:
            r = check_hetero(net, arr, space, grid, aspace.free, ("brute", "search"))
            assert r.agree, r.problems
            assert dict((row.solver, row.step_time_s) for row in r.rows)["search"] == search.step_time_s
    assert checked >= 80 and off_grid_faster >= 5, (checked, off_grid_faster)
