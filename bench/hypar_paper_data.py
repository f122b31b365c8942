"""HyPar's published figures (Song et al., HPCA 2019, arXiv 1901.02067), read from the paper.

One place for the paper's numbers: the calibration (bench/calibrate_hypar.py), the
reproduction (bench/reproduce_hypar.py) and the sweep files' ``reference:`` data agree on them.
"""

# the paper's ten networks -> the models we run for them
NETWORKS = {
    "SFC": "sfc", "SCONV": "sconv-paper", "Lenet-c": "lenet-c", "Cifar-c": "cifar-c", "AlexNet": "alexnet-paper",
    "VGG-A": "vgg-a", "VGG-B": "vgg-b", "VGG-C": "vgg-c", "VGG-D": "vgg-d", "VGG-E": "vgg-e",
}
BATCH = 256

# Fig. 6: performance of HyPar normalised to data parallelism (gmean 3.39; model parallelism 0.241)
FIG6 = {"SFC": 23.48, "SCONV": 1.00, "Lenet-c": 3.05, "Cifar-c": 1.23, "AlexNet": 3.27, "VGG-A": 4.97,
        "VGG-B": 4.06, "VGG-C": 3.92, "VGG-D": 3.21, "VGG-E": 2.73}
FIG6_GMEAN, FIG6_MP_GMEAN = 3.39, 0.241

# Fig. 7: energy efficiency normalised to data parallelism (only the geometric means are used)
FIG7_GMEAN, FIG7_MP_GMEAN = 1.51, 0.474

# Fig. 8: total communication per step, GB: (model parallel, data parallel, HyPar)
FIG8 = {"SFC": (0.723, 16.9, 0.681), "SCONV": (0.480, 0.0121, 0.0121), "Lenet-c": (0.112, 0.0517, 0.0161),
        "Cifar-c": (0.206, 0.0174, 0.0135), "AlexNet": (13.0, 2.00, 0.289), "VGG-A": (50.1, 15.9, 1.47),
        "VGG-B": (134, 16.0, 1.47), "VGG-C": (157, 16.6, 1.58), "VGG-D": (157, 16.6, 2.13),
        "VGG-E": (180, 17.2, 2.76)}

# Fig. 11: VGG-E speedup over one accelerator, 1..64 accelerators
FIG11_ACCELERATORS = (1, 2, 4, 8, 16, 32, 64)
FIG11_HYPAR = (1.0, 2.0, 3.9, 7.2, 10.8, 11.2, 8.3)
FIG11_DP = (1.0, 1.95, 3.45, 4.45, 3.95, 2.4, 1.2)

# Fig. 12: HyPar on a 2-D torus vs on the H-tree, gmean performance over data parallelism
FIG12_GMEAN = {"htree": 3.39, "torus": 2.2}

# Fig. 13: HyPar vs the "one weird trick" (conv I, fc II): gmean performance and energy efficiency
FIG13_GMEAN = {"performance": 1.62, "energy": 1.22}
