"""Tests for single-line bugs that survived issue 24's mutation audit: a sweep cache key that
drops an option (a rerun would reuse another point's answer), and an inverted
``comm_speedup_over_all_I``. (The limits' ``<`` vs ``<=``: tests/test_on_the_limit.py.)"""

from __future__ import annotations

from fractions import Fraction

import pytest

from explorer import api
from explorer.app.sweep.cache import point_key
from explorer.app.sweep.spec import KEYS, resolve_paths

# two values of every sweep key (both valid); ``constraints`` names two files written below
TWO_VALUES = {
    "model": ("lenet-c", "sfc"),
    "array": ("hypar-16", "accpar-128"),
    "levels": (2, 3),
    "batch": (8, 16),
    "space": ("hypar", "accpar"),
    "solver": ("dp", "exact"),
    "objective": ("traffic", "time"),
    "time_limit": (1.0, 2.0),
    "seed": (0, 1),
    "memory_GiB": (4, 8),
    "weight_copies": (0, 1),
    "caps": (["0=1GB"], ["0=2GB"]),
    "pins": (["conv1@*=I"], ["conv1@*=II"]),
    "forbids": (["conv1=I"], ["conv1=II"]),
    "constraints": ("c1.yaml", "c2.yaml"),
    "link_bandwidth_GBps": (10, 20),
    "peak_TFLOPS": (1, 2),
    "mix": ("8 v2 + 8 v3", "4 v2 + 12 v3"),
    "split": ("equal", "search"),
    "alpha_grid": (8, 16),
    "free": ("unlike", "all"),
    "seq": (64, 128),
    "grid_only": (False, True),
    "accelerators_v3": (4, 8),  # accelerators_<kind>
}


def test_every_sweep_key_changes_the_cache_key(tmp_path):
    (tmp_path / "c1.yaml").write_text("version: 1\nweight_copies: 1\n")
    (tmp_path / "c2.yaml").write_text("version: 1\nweight_copies: 2\n")
    assert set(TWO_VALUES) - {"accelerators_v3"} == set(KEYS), "a new sweep key needs two values here"
    base = resolve_paths({"model": "lenet-c", "array": "hypar-16"}, str(tmp_path), {})
    for key, (a, b) in TWO_VALUES.items():
        ka = point_key({**base, **resolve_paths({key: a}, str(tmp_path), {})})
        kb = point_key({**base, **resolve_paths({key: b}, str(tmp_path), {})})
        assert ka != kb, f"{key}: {a!r} and {b!r} share a cache entry"
        assert ka != point_key(base) or key in ("model", "array"), f"{key}: setting it does not change the key"


def test_a_rerun_changing_only_the_memory_limit_recomputes(tmp_path):
    def run(memory):
        spec = {"version": 1, "name": "m", "grid": {"model": ["lenet-c"], "levels": [2], "solver": ["exact"],
                                                    "memory_GiB": [memory]}}
        return list(api.sweep(spec, out=tmp_path / "o", workers=1))[0]

    roomy = run(4)
    assert roomy["status"] == "optimal" and roomy["cached"] is False
    limit = Fraction(roomy["memory_bytes_per_accelerator"]) * Fraction(999, 1000)  # the optimum no longer fits
    tight = run(float(limit / 2**30))
    assert tight["cached"] is False, "a rerun changing only memory_GiB reused the old answer"
    assert tight["status"] == "infeasible" or Fraction(tight["memory_bytes_per_accelerator"]) <= limit
    again = run(4)
    assert again["cached"] is True and again["traffic_elements"] == roomy["traffic_elements"]


def _exact(v) -> Fraction:
    return Fraction(str(v))


@pytest.mark.parametrize("model, solver", [("vgg-a", "dp"), ("lenet-c", "exact")])
def test_comm_speedup_over_all_I_is_all_Is_time_over_the_plans(model, solver):
    r = api.solve(model, solver=solver).to_json()
    plan, all_i = _exact(r["comm_time_s"]), _exact(r["baselines"]["all-I"]["comm_time_s"])
    assert plan < all_i, "the optimum communicates less than data parallelism on these"
    assert r["comm_speedup_over_all_I"] == pytest.approx(float(all_i / plan), rel=1e-12)
    assert r["comm_speedup_over_all_I"] > 1
    step, all_i_step = _exact(r["step_time_s"]), _exact(r["baselines"]["all-I"]["step_time_s"])
    assert r["speedup_over_all_I"] == pytest.approx(float(all_i_step / step), rel=1e-12)
    traffic, all_i_traffic = _exact(r["traffic_elements"]), _exact(r["baselines"]["all-I"]["traffic_elements"])
    assert r["traffic_ratio_to_all_I"] == pytest.approx(float(traffic / all_i_traffic), rel=1e-12)
