"""Per-level type data computed once (issue 23): the same answers as the per-call definitions."""

import pytest

from explorer.core.array import synthetic_array
from explorer.core.partition import Space
from explorer.core.problem import Problem
from explorer.frontends import load_model


def level_types_direct(problem: Problem, level: int, layer: int):
    """The definition: the space's types the node's kind offers, and ``Layer.offers`` at the level."""
    node = problem.network.layers[layer]
    return tuple(t for t in problem.space.types if t in node.node_types.offered and node.offers(t, level))


@pytest.mark.parametrize("model", ["mobilenet-v2", "efficientnet-b0", "gpt2-small", "resnet18", "vgg-a"])
@pytest.mark.parametrize("space", [Space.HYPAR, Space.ACCPAR])
def test_level_types_table_matches_the_definition(model, space):
    problem = Problem(load_model(model), synthetic_array(6), space)
    for layer in range(problem.num_layers):
        for level in range(problem.levels):
            assert problem.level_types(level, layer) == level_types_direct(problem, level, layer)
    everywhere = all(level_types_direct(problem, h, n) == space.types
                     for n in range(problem.num_layers) for h in range(problem.levels))
    assert problem.every_type_everywhere == everywhere


def test_every_type_everywhere_true_on_a_plain_chain():
    problem = Problem(load_model("vgg-a"), synthetic_array(4), Space.ACCPAR)
    assert problem.every_type_everywhere
    assert not Problem(load_model("resnet18"), synthetic_array(4), Space.ACCPAR).every_type_everywhere


def test_memoised_scalars_keep_their_types():
    """The loader memoises scalars per (tag, text): quoted and plain forms of one text stay apart."""
    import yaml

    from explorer.frontends.yamlio import load_yaml_text

    text = ("a: {x: 1, y: '1', z: 1.0, w: yes, v: 'yes', u: null, t: ~, s: 0x10, r: [1, '1', 1]}\n"
            "b: {x: 1, y: '1', z: 1.0, w: yes, v: 'yes', u: null, t: ~, s: 0x10, r: [1, '1', 1]}\n"
            "c: &k {q: 2}\nd: *k\n")
    want = yaml.safe_load(text)
    for fast in (True, False):
        got = load_yaml_text(text, "t.yaml", fast=fast)
        assert got == want
        assert [type(v) for v in got["b"].values()] == [type(v) for v in want["b"].values()]
        assert got["b"]["r"] == [1, "1", 1]


@pytest.mark.parametrize("model", ["resnet18", "mobilenet-v2", "gpt2-small", "efficientnet-b0"])
@pytest.mark.parametrize("space", [Space.HYPAR, Space.ACCPAR])
def test_python_rows_equal_the_numpy_rows(model, space):
    """Small networks get ``level_rows`` in Python integers: the same numbers as ``level_arrays``
    (and as the per-entry ``intra``/``inter``) at random count vectors."""
    import random

    from explorer.core.comm import advance, zero_counts
    from explorer.core.costs import CostTables

    net = load_model(model)
    tables = CostTables(net, 8, space)
    rng, counts = random.Random(7), zero_counts(len(net.layers))
    for _ in range(8):
        intra, inter = tables._level_rows_python(counts)
        a, b = tables.level_arrays(counts)
        assert (intra, inter) == (a.tolist(), b.tolist())
        assert intra[3] == tables.intra_row(3, counts[3])
        assert inter[2] == tables.inter_matrix(2, counts[tables.edges[2][1]])
        counts = advance(counts, [rng.choice(space.types) for _ in counts])
