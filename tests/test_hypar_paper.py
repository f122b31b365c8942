"""The calibrated paper array and networks: results pinned from computed values (the paper's
values in comments for context; nothing here is fitted per case), and the figure sweep files."""

import math
from fractions import Fraction
from pathlib import Path

import pytest

from explorer.api import solve
from explorer.frontends import load_model
from explorer.frontends.yamlio import load_yaml_file

SWEEPS = Path(__file__).resolve().parent.parent / "spaces" / "hypar-2019"


def test_vgg_a_on_the_paper_array():
    r = solve("vgg-a", "hypar-paper", batch=256)
    vs = r.versus(r.figures)
    assert vs.speedup_over_all_I == pytest.approx(4.8819, abs=1e-4)  # paper Fig. 6: 4.97
    assert float(r.figures.traffic_bytes) == 1_524_820_480  # paper Fig. 8: 1.47 GB
    assert float(r.figures.energy_J) == pytest.approx(28.6077, abs=1e-4)
    assert vs.energy_efficiency_over_all_I == pytest.approx(1.2461, abs=1e-4)
    # step = compute + traffic / B (shared medium 1.5344 GB/s, no overlap)
    assert r.figures.step_time_s == r.figures.compute_s + r.figures.traffic_bytes / (Fraction("1.5344") * 10**9)


# ours from the calibrated array (paper Fig. 6 in the last column, for context)
FIG6 = {"sfc": (20.805, 23.48), "sconv-paper": (1.000, 1.00), "lenet-c": (2.865, 3.05), "cifar-c": (1.213, 1.23),
        "alexnet-paper": (3.214, 3.27), "vgg-a": (4.882, 4.97), "vgg-b": (4.003, 4.06), "vgg-c": (3.881, 3.92),
        "vgg-d": (3.173, 3.21), "vgg-e": (2.702, 2.73)}


def gmean(xs):
    xs = list(xs)
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def test_fig6_and_fig7_on_the_ten_networks():
    speed, energy = {}, {}
    for model in FIG6:
        r = solve(model, "hypar-paper", batch=256, memory_GiB=1000)
        vs = r.versus(r.figures)
        speed[model], energy[model] = vs.speedup_over_all_I, vs.energy_efficiency_over_all_I
    for model, (ours, _paper) in FIG6.items():
        assert speed[model] == pytest.approx(ours, abs=1e-3), model
    assert gmean(speed.values()) == pytest.approx(3.296, abs=1e-3)  # paper 3.39
    assert gmean(energy.values()) == pytest.approx(1.488, abs=1e-3)  # paper 1.51


def load_bench(name):
    import importlib.util
    import sys

    bench = Path(__file__).resolve().parent.parent / "bench"
    sys.path.insert(0, str(bench))
    try:
        spec = importlib.util.spec_from_file_location(name, bench / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(bench))


def test_the_array_file_holds_what_the_calibration_computes():
    from explorer.frontends import load_array

    cal = load_bench("calibrate_hypar")
    R, per = cal.fit_R()
    assert "SCONV" not in per and len(per) == 9
    arr = load_array("hypar-paper")
    assert float(arr.peak_TFLOPS) * 1e12 == cal.PEAK_FLOPS
    assert float(arr.shared_bandwidth_GBps) == pytest.approx(cal.PEAK_FLOPS / R / 1e9, abs=1e-4)
    assert float(arr.static_power_W) == pytest.approx(cal.fit_static(R), abs=1e-3)
    assert float(arr.energy_pJ_per_FLOP) == cal.E_FLOP_pJ and float(arr.link_energy_pJ_per_byte) == cal.E_BYTE_pJ


def test_fig11_vgg_e_on_64_accelerators():
    r = solve("vgg-e", "hypar-paper", batch=256, levels=6, memory_GiB=1000)
    t1 = r.figures.compute_s * 64
    assert float(t1 / r.figures.step_time_s) == pytest.approx(7.83, abs=0.01)  # paper 8.3
    assert float(t1 / r.baseline("all-I").step_time_s) == pytest.approx(1.22, abs=0.01)  # paper 1.2


def test_torus_with_equal_bisection_times_like_the_shared_medium():
    a = solve("lenet-c", "hypar-paper", batch=256)
    b = solve("lenet-c", "hypar-paper-torus", batch=256)
    assert a.plan == b.plan
    # 0.0959 * 16 = 1.5344: the same effective level bandwidths
    assert b.figures.comm_time_s == a.figures.comm_time_s


@pytest.mark.parametrize("model,weights,fig8_dp_GB", [("alexnet-paper", 17_124_032, 2.00), ("sconv-paper", 100_500, 0.0121)])
def test_paper_networks_match_fig8_data_parallel_traffic(model, weights, fig8_dp_GB):
    net = load_model(model)
    assert net.batch == 256
    assert sum(layer.weight_elements() for layer in net.layers) == weights
    # all-I traffic on 16 accelerators = 2 directions * 4 bytes * (1+2+4+8) * W
    assert math.isclose(120 * weights / 1e9, fig8_dp_GB, rel_tol=0.03)


@pytest.mark.parametrize("path", sorted(SWEEPS.glob("fig*.yaml")), ids=lambda p: p.stem)
def test_figure_sweep_files(path):
    data = load_yaml_file(path)
    assert data["version"] == 1 and "reference" in data and data["reference"]["figure"]
    models = data["grid"].get("model") or [data["fixed"]["model"]]
    for m in models:
        load_model(m)
    fixed = data["fixed"]
    assert fixed.get("batch") == 256 and fixed.get("solver") == "dp"


def test_sweep_references_are_the_papers_numbers():
    data = load_bench("hypar_paper_data")
    model_of = data.NETWORKS
    ref6 = load_yaml_file(SWEEPS / "fig6-performance.yaml")["reference"]
    assert ref6["series"]["HyPar"] == {model_of[n]: v for n, v in data.FIG6.items()}
    assert ref6["gmean"] == {"HyPar": data.FIG6_GMEAN, "model parallel": data.FIG6_MP_GMEAN}
    ref8 = load_yaml_file(SWEEPS / "fig8-communication.yaml")["reference"]["series"]
    for i, series in enumerate(("model parallel", "data parallel", "HyPar")):
        assert ref8[series] == {model_of[n]: v[i] for n, v in data.FIG8.items()}
    ref11 = load_yaml_file(SWEEPS / "fig11-scalability.yaml")["reference"]["series"]
    ratio = {n: h / d for n, h, d in zip(data.FIG11_ACCELERATORS, data.FIG11_HYPAR, data.FIG11_DP) if n > 1}
    assert ref11["HyPar / data parallel"] == {n: round(r, 3) for n, r in ratio.items()}
    assert ref11["data parallel"] == {n: d / d for n, d in zip(data.FIG11_ACCELERATORS, data.FIG11_DP) if n > 1}
    ref7 = load_yaml_file(SWEEPS / "fig7-energy.yaml")["reference"]
    assert ref7["gmean"] == {"HyPar": data.FIG7_GMEAN, "model parallel": data.FIG7_MP_GMEAN}
    assert ref7["series"]["HyPar"] == {model_of[n]: v for n, v in data._per_network(7, "hypar").items()}


def test_the_paper_array_sets_the_papers_batch_unless_told_otherwise():
    """`explore --model vgg-a --array hypar-paper` runs at the paper's batch 256 (4.88x);
    --batch overrides the array's default, and other arrays keep the network's own batch."""
    default = solve("vgg-a", "hypar-paper")
    explicit = solve("vgg-a", "hypar-paper", batch=256)
    assert default.inputs.batch == 256
    assert default.to_json()["speedup_over_all_I"] == explicit.to_json()["speedup_over_all_I"]
    assert round(default.to_json()["speedup_over_all_I"], 3) == 4.882
    assert solve("vgg-a", "hypar-paper", batch=512).inputs.batch == 512
    assert solve("vgg-a", "hypar-16").inputs.batch == 512
