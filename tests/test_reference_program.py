"""The hierarchical DP against the published AccPar program (github.com/linghaosong/AccPar).

The program's own network files (networks/Alexnet.txt, networks/Vgg11.txt: note their sizes
include pooling, e.g. AlexNet conv2 reads 55x55) at its defaults, batch 512 and 7 levels,
run once through its dp_on_one_hierarchy/h_partition with 2 types (HyPar) and 3 types
(AccPar). Expected rows below are its partitions (0 = I, 1 = II, 2 = III) and per-level
costs c_h in elements, as it printed them; model.md says an implementation that follows the
model reproduces them bit for bit.
"""

import pytest

from explorer.core.array import synthetic_array
from explorer.core.network import Layer, LayerKind, Network
from explorer.core.partition import Space
from explorer.core.problem import Problem
from explorer.solvers.dp import hierarchical_dp

# name, kind, in_ch, in_h, in_w, kernel, out_ch, out_h, out_w
ALEXNET = [
    ("conv1", "CONV", 3, 224, 224, 11, 96, 55, 55), ("conv2", "CONV", 96, 55, 55, 5, 256, 27, 27),
    ("conv3", "CONV", 256, 27, 27, 3, 384, 13, 13), ("conv4", "CONV", 384, 13, 13, 3, 384, 13, 13),
    ("conv5", "CONV", 384, 13, 13, 3, 256, 6, 6), ("fc1", "FC", 9216, 1, 1, 1, 4096, 1, 1),
    ("fc2", "FC", 4096, 1, 1, 1, 4096, 1, 1), ("fc3", "FC", 4096, 1, 1, 1, 1000, 1, 1),
]
VGG11 = [
    ("conv1", "CONV", 3, 224, 224, 3, 64, 112, 112), ("conv2", "CONV", 64, 112, 112, 3, 128, 56, 56),
    ("conv31", "CONV", 128, 56, 56, 3, 256, 56, 56), ("conv32", "CONV", 256, 56, 56, 3, 256, 28, 28),
    ("conv41", "CONV", 256, 28, 28, 3, 512, 28, 28), ("conv42", "CONV", 512, 28, 28, 3, 512, 14, 14),
    ("conv51", "CONV", 512, 14, 14, 3, 512, 14, 14), ("conv52", "CONV", 512, 14, 14, 3, 512, 7, 7),
    ("fc1", "FC", 25088, 1, 1, 1, 4096, 1, 1), ("fc2", "FC", 4096, 1, 1, 1, 4096, 1, 1),
    ("fc3", "FC", 4096, 1, 1, 1, 1000, 1, 1),
]

# level: (c_h elements, partitions)
REFERENCE = {
    ("alexnet", Space.HYPAR): [
        (12908576, "00000111"), (10680352, "00000111"), (9566240, "00000111"), (8878112, "00000100"),
        (7426080, "00000111"), (6085664, "00001000"), (4490272, "00011111"),
    ],
    ("alexnet", Space.ACCPAR): [
        (10811424, "00000121"), (9369632, "00000211"), (7534624, "00000121"), (6301728, "00000212"),
        (5640224, "00000121"), (4221984, "00021212"), (3551776, "00001121"),
    ],
    ("vgg11", Space.HYPAR): [
        (22443712, "00000000111"), (18183872, "00000000111"), (16053952, "00000000111"), (14857920, "00000000100"),
        (13151936, "00000000111"), (11697856, "00000001100"), (8897216, "00000011011"),
    ],
    ("vgg11", Space.ACCPAR): [
        (20346560, "00000000121"), (17135296, "00000000121"), (15017664, "00000000112"), (12668608, "00000000211"),
        (11658944, "00000001212"), (9427648, "00000021121"), (7494336, "00002112121"),
    ],
}


def network(rows) -> Network:
    layers = [
        Layer(n, LayerKind.FC if k == "FC" else LayerKind.CONV, ci, co, (ks, ks), (hi, wi), (ho, wo))
        for n, k, ci, hi, wi, ks, co, ho, wo in rows
    ]
    return Network.chain("ref", 512, layers)


@pytest.mark.parametrize("key", list(REFERENCE), ids=lambda k: f"{k[0]}-{k[1].value}" if isinstance(k, tuple) else str(k))
def test_dp_reproduces_the_reference_program(key):
    name, space = key
    net = network(ALEXNET if name == "alexnet" else VGG11)
    problem = Problem(net, synthetic_array(7), space)
    plan, level_units = hierarchical_dp(problem)
    unit = problem.tables.unit_per_element
    for h, (cost, parts) in enumerate(REFERENCE[key]):
        assert "".join(str(t.index) for t in plan.types[h]) == parts, f"level {h}"
        assert level_units[h] == cost * unit, f"level {h}"
