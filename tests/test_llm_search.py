"""The LLM planner (issue 21 item 7): the search space, the block-type DP, the bounds, the
search against exhaustive scoring, and the report's helpers."""

from __future__ import annotations

import pytest

from explorer.core.errors import SpecError
from explorer.core.llm_memory import Recompute, ZeroStage
from explorer.frontends import load_cluster
from explorer.frontends.transformer_problem import llm_problem
from explorer.frontends.transformer_source import load_transformer
from explorer.app.llm_options import parse_degrees, parse_request
from explorer.app.llm_report import stage_lines
from explorer.solvers.llm_space import Degrees, LlmSpace, candidates, degree_triples, micro_batches, virtual_stages


def problem(model: str, gpus: int, batch: int | None = None, seq: int | None = None, cluster: str = "dgx-a100"):
    src = load_transformer(model, seq)
    return llm_problem(src.shape, load_cluster(cluster, gpus), batch or src.batch, src.sequence, src.name)


# ---- the space -------------------------------------------------------------------------------

def test_degree_triples_every_factorisation():
    # 16 GPUs, t <= 8, p <= 24 layers, d | 512: t in {1,2,4,8}, p | 16/t, d the rest
    got = {(x.tensor, x.pipeline, x.data) for x in degree_triples(16, 8, 24, 512)}
    want = {(t, p, 16 // (t * p)) for t in (1, 2, 4, 8) for p in (1, 2, 4, 8, 16) if (16 // t) % p == 0}
    assert got == want and len(got) == 5 + 4 + 3 + 2


def test_degree_triples_non_power_of_two():
    # 1,536 = 8 x 192: factorisations with a factor 3 are there; p <= layers and d | batch filter
    triples = degree_triples(1536, 8, 96, 1536)
    assert Degrees(8, 64, 3) in triples and Degrees(8, 96, 2) in triples and Degrees(8, 192, 1) not in triples
    assert all(x.gpus == 1536 and x.tensor <= 8 and x.pipeline <= 96 and 1536 % x.data == 0 for x in triples)


def test_virtual_stages_need_even_chunks_and_microbatches_a_multiple_of_p():
    assert virtual_stages(1, 24, 8) == [1]
    assert virtual_stages(4, 24, 8) == [1, 2, 3, 6]
    assert virtual_stages(4, 24, 6) == [1]  # m = 6 not a multiple of p = 4 (Megatron-LM's rule)
    assert virtual_stages(5, 24, 10) == [1]  # 24 layers do not split into 5 even stages


def test_micro_batches_are_divisors_up_to_the_cap():
    assert micro_batches(1536, 16, 64) == [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48]  # of 96, not 96 itself
    assert micro_batches(12, 4, 64) == [1, 3]


def test_candidates_fixed_degrees_and_modes():
    space = LlmSpace(tensor=2, pipeline=2, micro_batch=2, recomputes=(Recompute.FULL,), zeros=(ZeroStage.ZERO1,),
                     interleave=False)
    got = candidates(space, 16, 8, 24, 512)
    assert [(c.degrees, c.micro_batch, c.recompute, c.zero, c.virtual) for c in got] == [
        (Degrees(2, 2, 4), 2, Recompute.FULL, ZeroStage.ZERO1, 1)]
    # interleaved: v chunks of 24 / (2 v) layers a stage, every v dividing 12 (m = 64 is a multiple of p = 2)
    got = candidates(LlmSpace(tensor=2, pipeline=2, micro_batch=2, recomputes=(Recompute.FULL,),
                              zeros=(ZeroStage.ZERO1,)), 16, 8, 24, 512)
    assert [c.virtual for c in got] == [1, 2, 3, 4, 6, 12]
    # a fixed tensor degree above the GPUs per node is allowed when asked for
    assert {c.degrees.tensor for c in candidates(LlmSpace(tensor=16), 32, 8, 24, 512)} == {16}


# ---- options ---------------------------------------------------------------------------------

def test_parse_degrees():
    assert parse_degrees("tensor=8,pipeline=8,data=16") == {"tensor": 8, "pipeline": 8, "data": 16}
    assert parse_degrees("t=2, d=4") == {"tensor": 2, "data": 4}


@pytest.mark.parametrize("text, needle", [
    ("tensor=8,pipeline", "'pipeline' is not NAME=N"),
    ("tensor=8,tensor=2", "tensor given twice"),
    ("width=2", "unknown degree 'width'"),
    ("tensor=0", "tensor=0: must be between 1"),
    ("", "empty"),
])
def test_parse_degrees_errors(text, needle):
    with pytest.raises(SpecError) as e:
        parse_degrees(text)
    assert str(e.value).startswith("--degrees: ") and needle in str(e.value)


def test_zero3_layout_refuses_tensor_and_pipeline():
    with pytest.raises(SpecError, match=r"--degrees: tensor=8 with --layout zero3"):
        parse_request("gpt3-1.7b", "dgx-a100", None, None, None, "zero3", "tensor=8,data=2", None, None, None, None)
    req = parse_request("gpt3-1.7b", "dgx-a100", None, None, None, "zero3", None, None, None, None, None)
    assert (req.tensor, req.pipeline, req.data, req.zero) == (1, 1, None, ZeroStage.ZERO3)


# ---- report helpers --------------------------------------------------------------------------

def test_stage_lines_short_and_long():
    assert stage_lines((12, 12)) == ["stage 0: embedding + layers 0-11", "stage 1: layers 12-23 + final norm + head"]
    assert stage_lines((24,)) == ["stage 0: embedding + layers 0-23 + final norm + head"]
    long = stage_lines((1,) + (2,) * 10 + (1,))
    assert long == ["stage 0: embedding + layer 0", "stages 1-10: 2 layers each (layers 1-20)",
                    "stage 11: layer 21 + final norm + head"]


def test_interleaved_stages_say_their_chunks():
    from explorer.app.llm_report import interleaved_lines, stages_json

    assert interleaved_lines(24, 2, 3) == ["stage 0: embedding + layers 0-3, 8-11, 16-19",
                                           "stage 1: layers 4-7, 12-15, 20-23 + final norm + head"]
    got = stages_json((12, 12), 3)
    assert got[1] == {"stage": 1, "layers": 12, "chunks": [{"first_layer": 4, "layers": 4},
                                                           {"first_layer": 12, "layers": 4},
                                                           {"first_layer": 20, "layers": 4}]}
    assert stages_json((13, 11), 1) == [{"stage": 0, "first_layer": 0, "layers": 13},
                                        {"stage": 1, "first_layer": 13, "layers": 11}]
