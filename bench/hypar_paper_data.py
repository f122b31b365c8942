"""HyPar's published figures (Song et al., HPCA 2019, arXiv 1901.02067), as the bench scripts use them.

The numbers live in ONE file, spaces/hypar-2019/paper-values.yaml (with how each was read);
this module only gives the calibration (bench/calibrate_hypar.py) and the reproduction
(bench/reproduce_hypar.py) their old names for them.
"""

from pathlib import Path

from explorer.frontends.yamlio import load_yaml_file

_VALUES = load_yaml_file(Path(__file__).resolve().parent.parent / "spaces" / "hypar-2019" / "paper-values.yaml")
_FIG = _VALUES["figures"]

# the paper's ten networks -> the models we run for them
NETWORKS = dict(_VALUES["networks"])
BATCH = _VALUES["batch"]


def _per_network(figure: int, series: str) -> dict:
    return {n: _FIG[figure]["series"][series][n] for n in NETWORKS}


# Fig. 6: performance of HyPar normalised to data parallelism (gmean 3.39; model parallelism 0.241)
FIG6 = _per_network(6, "hypar")
FIG6_GMEAN, FIG6_MP_GMEAN = _FIG[6]["series"]["hypar"]["gmean"], _FIG[6]["series"]["model-parallel"]["gmean"]

# Fig. 7: energy efficiency normalised to data parallelism
FIG7_GMEAN, FIG7_MP_GMEAN = _FIG[7]["series"]["hypar"]["gmean"], _FIG[7]["series"]["model-parallel"]["gmean"]

# Fig. 8: total communication per step, GB: (model parallel, data parallel, HyPar)
FIG8 = {n: tuple(_FIG[8]["series"][s][n] for s in ("model-parallel", "data-parallel", "hypar")) for n in NETWORKS}

# Fig. 11: VGG-E speedup over one accelerator, 1..64 accelerators
FIG11_ACCELERATORS = tuple(_FIG[11]["series"]["hypar"])
FIG11_HYPAR = tuple(_FIG[11]["series"]["hypar"].values())
FIG11_DP = tuple(_FIG[11]["series"]["data-parallel"].values())

# Fig. 12: HyPar on a 2-D torus vs on the H-tree, gmean performance over data parallelism
FIG12_GMEAN = {"htree": _FIG[12]["series"]["h-tree"]["gmean"], "torus": _FIG[12]["series"]["torus"]["gmean"]}

# Fig. 13: HyPar vs the "one weird trick" (conv I, fc II): gmean performance and energy efficiency
FIG13_GMEAN = {"performance": _FIG[13]["series"]["hypar"]["gmean"], "energy": _FIG[13]["series"]["hypar-energy"]["gmean"]}
