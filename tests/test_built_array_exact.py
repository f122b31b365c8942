"""A built ArraySpec given through the API with floats is checked and returned exact, as a file's
numbers are (Fractions of their decimal spelling), kinds and tuples too."""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction as F

import pytest

from explorer.core.array import AcceleratorKind, ArraySpec
from explorer.core.errors import SpecError
from explorer.frontends.array_yaml import check_built_array


def test_floats_given_through_the_api_come_back_as_fractions():
    arr = ArraySpec("api", 2, 2, (0.1, 0.3), 0.3, 16.5, energy_pJ_per_FLOP=0.2, link_energy_pJ_per_byte=1.1)
    out = check_built_array(arr)
    assert out.bandwidth_GBps == (F(1, 10), F(3, 10)) and out.peak_TFLOPS == F(3, 10) and out.memory_GiB == F(33, 2)
    assert out.energy_pJ_per_FLOP == F(1, 5) and out.link_energy_pJ_per_byte == F(11, 10)
    assert all(type(x) is F for x in out.bandwidth_GBps + (out.peak_TFLOPS, out.memory_GiB, out.energy_pJ_per_FLOP))
    assert out.bandwidth_Bps(0) == 100_000_000  # exact: 0.1 GB/s, not 0.1000000000000000055...e9


def test_kinds_given_with_floats_come_back_exact_and_one_leaf_object_per_kind():
    a, b = AcceleratorKind("a", 0.3, 16.0), AcceleratorKind("b", 0.7, 32.0)
    arr = ArraySpec("mix", 1, 2, (0.1,), 0.3, 16.0, leaves=(a, b))
    out = check_built_array(arr)
    assert [k.peak_TFLOPS for k in out.leaves] == [F(3, 10), F(7, 10)] and type(out.leaves[0].memory_GiB) is F
    assert out.kinds == tuple(out.leaves) and out.peak_TFLOPS == F(3, 10)


def test_a_bad_number_is_still_named():
    arr = ArraySpec("api", 1, 2, (F(1),), F(1), F(16))
    with pytest.raises(SpecError, match=r"bandwidth_GBps\[0\]: must be > 0"):
        check_built_array(replace(arr, bandwidth_GBps=(-1.0,)))
