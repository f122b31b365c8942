"""The time and energy model (explorer.core.timing): shared medium, torus link load, overlap,
bandwidth beyond the listed levels, static power, and the time objective's consistency with
the evaluator on every communication model."""

from dataclasses import replace
from fractions import Fraction

import pytest

from explorer.api import build_problem, solve
from explorer.core.array import synthetic_array
from explorer.core.errors import SpecError
from explorer.core.evaluate import evaluate
from explorer.core.partition import PartitionType as T
from explorer.core.partition import Space
from explorer.core.plan import Plan
from explorer.core.timing import (BandwidthBeyond, Communication, Topology, extend_bandwidths, ring_load,
                                  shared_level_bandwidths, torus_ring)
from explorer.frontends.array_yaml import load_array_file

from .conftest import fc

BASE = "version: 1\nname: t\nlevels: 2\npeak_TFLOPS: 1\nmemory_GiB: 8\n"


def write(tmp_path, text):
    p = tmp_path / "a.yaml"
    p.write_text(text)
    return p


def shared_array(levels: int, B: int = 10) -> object:
    a = synthetic_array(levels)
    return replace(a, communication=Communication.SHARED, shared_bandwidth_GBps=Fraction(B),
                   bandwidth_GBps=shared_level_bandwidths(Fraction(B), levels))


def test_shared_medium_time_is_traffic_over_bandwidth(two_layer):
    # two_layer at 2 levels, plan all-I: c_h = A(W_A) + A(W_B) = 32 + 16 = 48 at both levels;
    # traffic = 48 + 2*48 = 144 elements, 2*4*144 = 1152 bytes both ways; B = 10 GB/s -> 115.2 ns
    arr = shared_array(2)
    ev = evaluate(two_layer, arr, Space.HYPAR, Plan.uniform(2, [T.I, T.I]))
    assert ev.traffic_bytes == 1152
    assert ev.comm_time_s == Fraction(1152, 10 * 10**9)
    # level by level: c_h * 4 / (B / 2^(h+1)): 48*4*2/1e10 and 48*4*4/1e10
    assert ev.level_time_s == (Fraction(384, 10**10), Fraction(768, 10**10))


def test_ring_load_matches_enumeration():
    def enumerate_load(n, d):
        load = {}
        for i in range(n):
            j = i ^ d
            fwd = (j - i) % n
            ways = [(+1, fwd, Fraction(1))] if fwd < n - fwd else [(-1, n - fwd, Fraction(1))]
            if fwd == n - fwd:
                ways = [(+1, fwd, Fraction(1, 2)), (-1, fwd, Fraction(1, 2))]
            for step, hops, share in ways:
                k = i
                for _ in range(hops):
                    link = (k, step)
                    load[link] = load.get(link, 0) + share
                    k = (k + step) % n
        return max(load.values())

    for n in (2, 4, 8, 16, 32):
        d = n // 2
        while d >= 1:
            assert ring_load(n, d) == enumerate_load(n, d), (n, d)
            d //= 2


def test_torus_4x4_levels_and_bandwidths():
    # levels alternate x, y top bit first: (ring 4, distance 2), (4, 2), (4, 1), (4, 1)
    assert [torus_ring(4, h) for h in range(4)] == [(4, 2), (4, 2), (4, 1), (4, 1)]
    # b_h = link * 2^(H-h-1) / ring_load: loads 1, 1, 1, 1 -> 8, 4, 2, 1 links' worth
    arr = replace(synthetic_array(4, [1, 1, 1, 1]), topology=Topology.TORUS)
    assert [arr.bandwidth_Bps(h) / 10**9 for h in range(4)] == [8, 4, 2, 1]
    # equal-bisection torus (link B/16) times exactly like the shared medium B
    sh = shared_array(4, 16)
    assert [sh.bandwidth_Bps(h) / 10**9 for h in range(4)] == [8, 4, 2, 1]


def test_overlap_and_static_energy(two_layer):
    arr = replace(synthetic_array(1, [10]), energy_pJ_per_FLOP=Fraction(1), link_energy_pJ_per_byte=Fraction(10),
                  static_power_W=Fraction(2))
    plan = Plan.uniform(1, [T.I, T.I])
    ev = evaluate(two_layer, arr, Space.HYPAR, plan)
    assert ev.step_time_s == ev.compute_s + ev.comm_time_s
    # FLOPs = 6 * (2*4*8 + 2*8*2) = 576; traffic 2*4*48 = 384 B; static 2 W * 2 accelerators * step
    assert ev.energy_J == Fraction(576 + 3840, 10**12) + 4 * ev.step_time_s
    ov = evaluate(two_layer, replace(arr, overlap=True), Space.HYPAR, plan)
    assert ov.step_time_s == max(ev.compute_s, ev.comm_time_s) < ev.step_time_s


def test_bandwidth_beyond():
    bw = (Fraction(40), Fraction(20))
    assert extend_bandwidths(bw, 4, BandwidthBeyond.REPEAT) == (40, 20, 20, 20)
    assert extend_bandwidths(bw, 4, BandwidthBeyond.HALVE) == (40, 20, 10, 5)
    assert extend_bandwidths(bw, 3, BandwidthBeyond.DOUBLE) == (40, 20, 40)
    assert extend_bandwidths(bw, 1, BandwidthBeyond.HALVE) == (40,)


def test_spec_keys(tmp_path):
    arr = load_array_file(write(tmp_path, BASE + "link_bandwidth_GBps: [40, 20]\nbandwidth_beyond: halve\noverlap: true\n"))
    assert arr.overlap and [float(b) for b in arr.with_levels(4).bandwidth_GBps] == [40, 20, 10, 5]
    arr = load_array_file(write(tmp_path, BASE + "communication: shared\nshared_bandwidth_GBps: 8\n"))
    assert arr.communication is Communication.SHARED and [float(b) for b in arr.bandwidth_GBps] == [4, 2]
    # a shared medium keeps its bandwidth when --levels changes
    assert [float(b) for b in arr.with_levels(3).bandwidth_GBps] == [4, 2, 1]


@pytest.mark.parametrize("extra,message", [
    ("communication: shared\nshared_bandwidth_GBps: 8\nlink_bandwidth_GBps: 1\n", "link_bandwidth_GBps: not used with communication: shared"),
    ("communication: shared\n", "shared_bandwidth_GBps: missing"),
    ("link_bandwidth_GBps: 1\nshared_bandwidth_GBps: 8\n", "shared_bandwidth_GBps: only with communication: shared"),
    ("link_bandwidth_GBps: 1\ncommunication: bus\n", "communication: must be one of per-level, shared, got 'bus'"),
    ("link_bandwidth_GBps: 1\noverlap: yes-please\n", "overlap: must be true or false"),
    ("link_bandwidth_GBps: 1\nbandwidth_beyond: triple\n", "bandwidth_beyond: must be one of repeat, halve, double"),
    ("communication: shared\nshared_bandwidth_GBps: 8\ntopology: torus\n", "topology: a shared medium has no topology"),
])
def test_bad_time_model_specs(tmp_path, extra, message):
    p = write(tmp_path, BASE + extra)
    with pytest.raises(SpecError) as err:
        load_array_file(p)
    assert str(err.value).startswith(str(p) + ": ") and message in str(err.value)


@pytest.mark.parametrize("array", ["hypar-paper", "hypar-paper-torus", "hypar-16"])
def test_time_objective_is_the_evaluators_step_time(array):
    # the exact solver minimises sum_h w_h c_h; run() re-scores it (step_time(compute, scale *
    # objective) == the evaluator's step time, else EvaluatorMismatch); the communication term
    # is the comm time, on the shared medium also traffic_bytes / B
    r = solve("lenet-c", array, objective="time", solver="exact", batch=256)
    assert r.objective_value == r.figures.step_time_s == r.figures.compute_s + r.figures.comm_time_s
    assert r.time_terms.communication_s == r.figures.comm_time_s and r.time_terms.compute_s == r.figures.compute_s
    p = build_problem("lenet-c", array, objective="time", batch=256)
    if p.array.communication is Communication.SHARED:
        assert r.figures.comm_time_s == r.figures.traffic_bytes / (p.array.shared_bandwidth_GBps * 10**9)
        # minimising time on a shared medium is minimising traffic
        t = solve("lenet-c", array, objective="traffic", solver="exact", batch=256)
        assert t.figures.traffic_bytes == r.figures.traffic_bytes


def test_time_objective_weights_shared_are_traffic_weights():
    p = build_problem("lenet-c", "hypar-paper", objective="time", batch=256)
    assert p.weights.weights == (1, 2, 4, 8)


def test_time_caps_use_the_effective_level_bandwidth():
    # hypar-paper: B = 1.5344 GB/s shared, b_0 = B/2 -> a 1 s budget at level 0 is 0.7672 GB;
    # on the torus (0.0959 GB/s links, 8 links' worth at level 0) the same
    from fractions import Fraction as F

    for array in ("hypar-paper", "hypar-paper-torus"):
        p = build_problem("lenet-c", array, caps=["0=1s"])
        assert [c.bytes for c in p.constraints.caps] == [F("1.5344") / 2 * 10**9], array


def test_results_show_the_time_model():
    from explorer.app.render import render_table

    r = solve("lenet-c", "hypar-paper", batch=256)
    assert r.to_json()["time_model"] == {
        "communication": "shared", "topology": "htree", "overlap": False, "bandwidth_beyond": "repeat",
        "shared_bandwidth_GBps": 1.5344, "level_bandwidth_GBps": [0.7672, 0.3836, 0.1918, 0.0959]}
    assert "time model: one shared medium of 1.5344 GB/s" in render_table(r)
    # the default model (per-level links on an H-tree, no overlap) adds no line to the table
    d = solve("lenet-c", "hypar-16", batch=256)
    assert d.to_json()["time_model"]["level_bandwidth_GBps"] == [60, 60, 60, 60]
    assert "time model" not in render_table(d)
