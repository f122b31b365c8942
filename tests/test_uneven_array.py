"""Arrays of accelerator kinds (issue 13, part 1): the spec, and an array of one kind written with
``kinds:`` and ``accelerators:`` giving bit-identical plans, traffic and times to the same array
written the old way, over the whole zoo."""

from fractions import Fraction

import pytest

from explorer.api import solve
from explorer.core.errors import SpecError
from explorer.frontends import load_array
from explorer.frontends.array_yaml import parse_array
from explorer.frontends.yamlio import load_yaml_file
from explorer.frontends.zoo import array_files

from .conftest import CLASSIC_ZOO


def as_kinds(name: str) -> tuple[dict, dict]:
    """The old-style shipped array ``name`` and the same array written with one kind."""
    old = load_yaml_file(array_files()[name])
    new = {k: v for k, v in old.items() if k not in ("peak_TFLOPS", "memory_GiB")}
    new["kinds"] = {"chip": {"peak_TFLOPS": old["peak_TFLOPS"], "memory_GiB": old["memory_GiB"]}}
    new["accelerators"] = ["chip"] * 2 ** old["levels"]
    return old, new


def test_tpu_mix_is_read_as_written():
    a = load_array("tpu-mix-16")
    assert a.accelerators == 16 and a.is_heterogeneous and a.dtype_bytes == 2
    assert [k.name for k in a.kinds] == ["v2", "v3"]
    assert [k.name for k in a.leaves] == ["v2"] * 8 + ["v3"] * 8
    assert a.leaf_peaks_TFLOPS() == (45,) * 8 + (123,) * 8
    # Under an equal split the slowest kind sets the compute time and the smallest memory the limit.
    assert a.peak_TFLOPS == 45 and a.memory_GiB == 16
    assert a.bandwidth_GBps == (70, 70, 70, 70)


def test_one_kind_is_the_old_array():
    for name in ("hypar-16", "hypar-paper", "accpar-128"):
        old, new = as_kinds(name)
        a, b = parse_array(old, "x"), parse_array(new, "x")
        assert not b.is_heterogeneous and len(b.leaves) == a.accelerators
        assert (b.peak_TFLOPS, b.memory_GiB) == (a.peak_TFLOPS, a.memory_GiB)
        from dataclasses import replace
        assert replace(b, leaves=()) == a  # nothing else differs


def test_levels_override_of_one_kind_repeats_it_and_of_a_mix_is_refused():
    _, new = as_kinds("hypar-16")
    b = parse_array(new, "x").with_levels(2)
    assert len(b.leaves) == 4 and b.peak_TFLOPS == Fraction(str(new["kinds"]["chip"]["peak_TFLOPS"]))
    with pytest.raises(SpecError, match="--levels: .*lists its 16 accelerators by kind"):
        load_array("tpu-mix-16").with_levels(2)


def _outcome(model, arr, solver, objective, space):
    try:
        return solve(model, arr, solver=solver, objective=objective, space=space)
    except ValueError as err:  # a refusal (e.g. exact cannot enforce the memory limit) must be the same too
        return f"{type(err).__name__}: {err}"


def _same_run(model, old, new, solver, objective, space):
    r1 = _outcome(model, parse_array(old, "x"), solver, objective, space)
    r2 = _outcome(model, parse_array(new, "x"), solver, objective, space)
    if isinstance(r1, str) or isinstance(r2, str):
        assert r1 == r2
        return None
    assert r1.status is r2.status
    assert r1.plan == r2.plan
    assert r1.level_cost_units == r2.level_cost_units
    assert r1.objective_value == r2.objective_value and r1.bound == r2.bound
    f1, f2 = r1.figures, r2.figures
    assert f1 == f2  # traffic, level times, compute, step time, energy, memory: exact Fractions
    assert r1.baselines == r2.baselines
    return r1


@pytest.mark.parametrize("model", CLASSIC_ZOO)  # the LLM zoo: tests/test_llm_zoo.py
def test_zoo_bit_identical_with_one_kind(model):
    old, new = as_kinds("hypar-16")
    for solver in ("dp", "exact"):
        for objective in ("traffic", "time"):
            r = _same_run(model, old, new, solver, objective, "accpar" if solver == "dp" else "hypar")
            # (the exact solver proves some nets cannot fit the array's memory at all: no plan, no figures)
            assert r is None or (r.plan is None and r.status.value == "infeasible") or r.figures.step_time_s > 0


@pytest.mark.parametrize("model", ["alexnet", "vgg-a", "resnet18"])
def test_paper_array_and_128_bit_identical_with_one_kind(model):
    for name in ("hypar-paper", "accpar-128"):
        old, new = as_kinds(name)
        _same_run(model, old, new, "dp", "time", "accpar")
