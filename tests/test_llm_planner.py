"""The LLM planner through the step model: the search equals exhaustive scoring, its bounds are
bounds, it beats or ties Megatron's layouts, the statuses, and ``explore`` on a GPU cluster
(the report, its JSON keys, bad input)."""

from __future__ import annotations

import itertools
import json
import random

import pytest

from explorer.core.llm_memory import Parallelism, Recompute, ZeroStage
from explorer.core.llm_step import LlmLayout, evaluate_llm
from explorer.core.solution import Status
from explorer.frontends import load_cluster
from explorer.frontends.transformer_problem import llm_problem
from explorer.frontends.transformer_source import load_transformer
from explorer.app.llm_check import check_llm
from explorer.solvers.llm_bounds import memory_floor_bytes, time_bound_s
from explorer.solvers.llm_search import search
from explorer.solvers.llm_space import LlmSpace, virtual_stages

from .conftest import run_cli


def problem(model: str, gpus: int, batch: int | None = None, seq: int | None = None, cluster: str = "dgx-a100"):
    src = load_transformer(model, seq)
    return llm_problem(src.shape, load_cluster(cluster, gpus), batch or src.batch, src.sequence, src.name)


def seeded_instances(n: int, seed: int = 21):
    rng = random.Random(seed)
    for _ in range(n):
        model = rng.choice(["gpt3-1.7b", "llama3-8b"])
        gpus = rng.choice([8, 16])
        batch = rng.choice([16, 24, 32, 48])
        seq = rng.choice([256, 512, 1024])
        space = LlmSpace(max_micro_batch=rng.choice([4, 8]),
                         recomputes=tuple(rng.sample(list(Recompute), rng.randint(1, 3))),
                         zeros=tuple(rng.sample(list(ZeroStage), rng.randint(1, 3))))
        yield pytest.param(model, gpus, batch, seq, space, id=f"{model}-{gpus}gpu-B{batch}-s{seq}")


@pytest.mark.parametrize("model, gpus, batch, seq, space", list(seeded_instances(4)))
def test_search_equals_exhaustive_and_bounds_hold(model, gpus, batch, seq, space):
    p = problem(model, gpus, batch, seq)
    fast = search(p, space)
    full = search(p, space, prune=False)
    assert full.scored == full.candidates and fast.scored <= full.scored
    assert fast.status is full.status
    if full.best is None:
        assert fast.best is None
    else:
        assert fast.status is Status.OPTIMAL and fast.best.step_time_s == full.best.step_time_s == fast.bound_s
        assert fast.best.fits and min(s.step_time_s for s in full.evaluated if s.fits) == full.best.step_time_s
    for s in full.evaluated:  # every bound at most what the evaluator says
        assert time_bound_s(p, s.candidate, full.floor_s) <= s.step_time_s
        assert memory_floor_bytes(s.candidate, p.params.total) <= s.evaluation.memory_bytes_per_accelerator


def test_every_plan_is_rescored_by_the_evaluator():
    p = problem("gpt3-1.7b", 16, 64, 512)
    r = search(p, LlmSpace(max_micro_batch=8))
    assert evaluate_llm(p, r.best.layout) == r.best.evaluation
    for s in r.runners_up:
        assert evaluate_llm(p, s.layout) == s.evaluation


@pytest.mark.parametrize("t, pp, d", [(8, 1, 2), (4, 2, 2), (2, 2, 4), (1, 4, 4)])
def test_optimum_beats_or_ties_megatron(t, pp, d):
    """Megatron's layouts (its block types, the min-max cut, 1F1B or interleaved) at every
    micro-batch, recompute and ZeRO stage: none that fits is faster than the search's optimum."""
    p = problem("gpt3-1.7b", 16, 64, 512)
    best = search(p, LlmSpace(max_micro_batch=8)).best
    for b in (1, 2, 4):
        for r in Recompute:
            for z in ZeroStage:
                for v in virtual_stages(pp, 24, 64 // (d * b)):  # and Megatron's interleaved schedule
                    ev = evaluate_llm(p, LlmLayout(Parallelism(t, pp, d), b, r, z, virtual_stages=v))
                    assert not ev.fits or best.step_time_s <= ev.step_time_s


def test_infeasible_says_the_smallest_memory():
    p = problem("gpt3-175b", 8)
    r = search(p, LlmSpace())
    assert r.status is Status.INFEASIBLE and r.best is None
    assert r.memory_bound_bytes > r.capacity_bytes  # no cut of any layout fits: 175B's states alone
    assert r.smallest_memory_bytes is None or r.smallest_memory_bytes > r.capacity_bytes


def test_cli_infeasible_exit_1(capsys):
    code, out, err = run_cli(["--model", "gpt3-175b", "--array", "dgx-a100", "--gpus", "8"], capsys)
    assert code == 1 and "status: infeasible, no layout fits in 80 GiB per GPU" in out
    assert "every layout needs at least" in out and err.startswith("explore: infeasible")


def test_time_limit_gives_feasible_with_a_valid_bound():
    p = problem("gpt3-1.7b", 16, 64, 512)
    space = LlmSpace(max_micro_batch=8)
    cut = search(p, space, time_limit_s=0.0)
    opt = search(p, space)
    assert cut.status is Status.FEASIBLE and cut.unresolved > 0
    assert cut.bound_s <= opt.best.step_time_s <= cut.best.step_time_s
    assert cut.gap == (cut.best.step_time_s - cut.bound_s) / cut.best.step_time_s


def test_check_agrees_on_a_small_instance():
    c = check_llm(problem("gpt3-1.7b", 8, 32, 512), LlmSpace(max_micro_batch=4))
    assert c.agree and c.bound_violations == 0 and c.same_optimum


def test_check_summary_names_the_interleaving_depth():
    """An interleaved best layout reads "p=4 v=2" in the check's summary (it omitted v before)."""
    from dataclasses import replace

    from explorer.app.llm_check import render_llm_check

    c = check_llm(problem("gpt3-1.7b", 8, 32, 512), LlmSpace(max_micro_batch=2))
    b = c.search.best
    one = render_llm_check(c)
    two = replace(b, candidate=replace(b.candidate, virtual=2))
    text = render_llm_check(replace(c, search=replace(c.search, best=two)))
    p = b.candidate.degrees.pipeline
    assert f"p={p} v=" not in one and f"p={p} v=2 d=" in text


# ---- the command line --------------------------------------------------------------------

SMALL = ["--model", "gpt3-1.7b", "--array", "dgx-a100", "--gpus", "8", "--batch", "32", "--seq", "512"]


def test_cli_table_says_the_plan_in_practitioners_words(capsys):
    code, out, err = run_cli(SMALL, capsys)
    assert code == 0, err
    for needle in ("status: optimal", "plan: t=", "micro-batch", "recompute", "ZeRO stage", "sequence parallel",
                   "TFLOP/s per GPU", "MFU", "pipeline bubble", "memory per GPU", "stage 0: embedding",
                   "tensor-level types of every block", "why not the others"):
        assert needle in out


def test_cli_json_keys(capsys):
    code, out, _ = run_cli(SMALL + ["--format", "json"], capsys)
    data = json.loads(out)
    assert code == 0
    for key in ("tflops_per_gpu", "mfu", "step_time_s", "bubble_fraction", "degrees", "micro_batch", "recompute",
                "zero", "memory_bytes_per_accelerator", "status", "gap", "bound", "stages", "tensor_types",
                "runners_up"):
        assert key in data
    assert set(data["degrees"]) == {"tensor", "pipeline", "data"} and data["status"] == "optimal" and data["gap"] == 0
    assert sum(s["layers"] for s in data["stages"]) == 24 and all("why_not" in r for r in data["runners_up"])


def test_cli_megatron_layout(capsys):
    code, out, err = run_cli(SMALL + ["--layout", "megatron", "--degrees", "tensor=2,pipeline=2,data=2",
                                      "--micro-batch", "1", "--recompute", "selective", "--zero", "1"], capsys)
    assert code == 0, err
    assert "plan: t=2 (tensor), p=2 (pipeline, 1F1B), d=2 (data), micro-batch size 1," in out and "(Megatron's)" in out


def test_cli_check(capsys):
    code, out, err = run_cli(["check", *SMALL, "--recompute", "selective", "--zero", "1"], capsys)
    assert code == 0, err
    assert "agree: yes" in out


@pytest.mark.parametrize("args, line", [
    (["--degrees", "tensor=2,pipeline=2,data=4"], "--degrees: tensor=2 x pipeline=2 x data=4 = 16 GPUs, but the cluster has 8"),
    (["--degrees", "pipeline=32"], "--degrees: pipeline=32 does not divide the cluster's 8 GPUs"),
    (["--degrees", "tensor=1,pipeline=8,data=1", "--micro-batch", "5"], "--micro-batch: 5 does not divide batch / data = 32 / 1"),
    (["--degrees", "tensor=8,pipeline"], "--degrees: 'pipeline' is not NAME=N"),
    (["--degrees", "tensor=3"], "--degrees: tensor=3 does not divide the cluster's 8 GPUs"),
    (["--layout", "zero3", "--degrees", "tensor=2,data=4"], "--degrees: tensor=2 with --layout zero3"),
    (["--layout", "megatron"], "--layout: megatron needs --degrees"),
    (["--gpus", "12"], "--gpus: 12 is not a whole number of 8-GPU nodes"),
    (["--solver", "cpsat"], "--solver: not with a GPU cluster --array"),
])
def test_cli_bad_input(args, line, capsys, tmp_path):
    out_file = tmp_path / "out.json"
    code, out, err = run_cli(SMALL + args + ["--output", str(out_file)], capsys)
    assert code == 2 and out == "" and not out_file.exists()
    assert err.count("\n") == 1 and line in err and "Traceback" not in err


def test_cli_pipeline_deeper_than_the_layers(capsys):
    code, _, err = run_cli(["--model", "gpt3-1.7b", "--array", "dgx-a100", "--gpus", "32", "--degrees", "pipeline=32"], capsys)
    assert code == 2 and "--degrees: pipeline=32 is deeper than the model's 24 transformer layers" in err


@pytest.mark.parametrize("args, line", [
    (["--model", "vgg-a", "--array", "dgx-a100"], "--model: 'vgg-a' is not given as a transformer shape"),
    (["--model", "gpt3-1.7b", "--array", "dgx-z100"], "--array: unknown array 'dgx-z100'"),
    (["--array", "hypar-16", "--gpus", "8"], "--gpus: needs a GPU cluster --array"),
    (["--array", "hypar-16", "--layout", "megatron"], "--layout: needs a GPU cluster --array"),
    (["--array", "hypar-16", "--micro-batch", "2"], "--micro-batch: needs a GPU cluster --array"),
    (["--array", "hypar-16", "--recompute", "full"], "--recompute: needs a GPU cluster --array"),
    (["--array", "hypar-16", "--zero", "3"], "--zero: needs a GPU cluster --array"),
    (["--array", "hypar-16", "--degrees", "tensor=2"], "--degrees: needs a GPU cluster --array"),
])
def test_cli_bad_model_or_array(args, line, capsys):
    code, out, err = run_cli(args, capsys)
    assert code == 2 and out == "" and line in err and err.count("\n") == 1


SMALL_GPU = """version: 1
kind: gpu-cluster
name: small
gpu: {name: A100-SXM4-80GB, peak_TFLOPS: 312, memory_GiB: 30}
gpus_per_node: 6
gpus: 6
nvlink_GBps: 300
nic_GBps: 25
"""


@pytest.mark.parametrize("t, pp, d, b", [(1, 3, 2, 4), (2, 3, 1, 8), (1, 3, 2, 8)])
def test_memory_cut_is_the_fastest_cut_that_fits(t, pp, d, b, tmp_path):
    """A 30 GiB GPU: where the step model's min-max cut does not fit (the first case: 31.1 GiB), llm_cuts.memory_cut gives the
    cut with the least slowest-stage time among all 253 cuts of 24 layers into 3 stages that fit."""
    from explorer.solvers.llm_cuts import memory_cut

    path = tmp_path / "small.yaml"
    path.write_text(SMALL_GPU)
    src = load_transformer("gpt3-1.7b", 1024)
    p = llm_problem(src.shape, load_cluster(str(path)), 48, src.sequence, src.name)
    lay = LlmLayout(Parallelism(t, pp, d), b, Recompute.NONE, ZeroStage.ZERO0)
    ev = evaluate_llm(p, lay)
    cut = memory_cut(p, lay, ev.efficiency)
    if (t, b) == (1, 4):
        assert not ev.fits and cut is not None and cut != ev.stage_layers
    best = None
    for bars in itertools.combinations(range(1, 24), pp - 1):
        c = tuple(y - x for x, y in zip((0,) + bars, bars + (24,)))
        e = evaluate_llm(p, LlmLayout(lay.parallelism, b, lay.recompute, lay.zero, stage_layers=c))
        if e.fits and (best is None or max(e.stage_times_s) < best):
            best = max(e.stage_times_s)
    if best is None:
        assert cut is None
    else:
        e = evaluate_llm(p, LlmLayout(lay.parallelism, b, lay.recompute, lay.zero, stage_layers=cut))
        assert e.fits and max(e.stage_times_s) == best


def test_memory_cut_costs_no_stage_times_where_no_cut_fits(monkeypatch, tmp_path):
    """Where even a stage of one layer is over the GPU's memory (GPT-3 1.7B at micro-batch 8 on a
    1 GiB GPU) no cut fits: memory_cut says None before it asks the step model for any stage time
    (``explore check`` scores ~1,100 such layouts of GPT-3 175B; their stage costs took half its time)."""
    from explorer.solvers import llm_cuts

    path = tmp_path / "tiny.yaml"
    path.write_text(SMALL_GPU.replace("memory_GiB: 30", "memory_GiB: 1"))
    src = load_transformer("gpt3-1.7b", 1024)
    p = llm_problem(src.shape, load_cluster(str(path)), 48, src.sequence, src.name)
    lay = LlmLayout(Parallelism(1, 3, 2), 8, Recompute.NONE, ZeroStage.ZERO0)
    ev = evaluate_llm(p, lay)
    monkeypatch.setattr(llm_cuts, "stage_costs", lambda *a: pytest.fail("stage costs asked for"))
    assert not ev.fits and llm_cuts.memory_cut(p, lay, ev.efficiency) is None


def test_cli_hugging_face_config_needs_a_batch(capsys):
    cfg = "tests/hf_configs/Qwen2-7B.json"
    code, out, err = run_cli(["--model", cfg, "--array", "dgx-h100", "--gpus", "8", "--batch", "16", "--seq", "1024"],
                             capsys)
    assert code == 0 and "plan: t=" in out and "uncalibrated" in out  # 28 heads: t in 1, 2, 4
    code, out, err = run_cli(["--model", cfg, "--array", "dgx-h100", "--gpus", "8"], capsys)
    assert code == 2 and out == "" and "--batch: " in err and "gives no training batch" in err
    code, _, err = run_cli(["--model", cfg, "--array", "dgx-h100", "--gpus", "8", "--batch", "16",
                            "--degrees", "tensor=8"], capsys)
    assert code == 2 and "--degrees: tensor=8 does not divide 4, the gcd of the model's attention and key/value heads" in err


def test_cli_tensor_degree_must_divide_the_kv_heads(capsys, tmp_path):
    """Grouped-query attention: a tensor degree that divides the heads but not the KV heads is
    refused in one line when given, and never searched (it used to end in a traceback)."""
    spec = tmp_path / "gqa.yaml"
    spec.write_text("version: 1\nname: gqa\nbatch: 64\nsequence: 512\ntransformer: {family: llama, layers: 4, "
                    "hidden: 1536, heads: 12, kv_heads: 2, ffn: 4096, vocab: 32000, tied_head: false}\n")
    code, out, err = run_cli(["--model", str(spec), "--array", "dgx-h100", "--gpus", "8"], capsys)
    assert code == 0 and "plan: t=" in out
    t = int(out.split("plan: t=")[1].split(" ")[0])
    assert 2 % t == 0  # t divides gcd(12, 2) = 2
    code, out, err = run_cli(["--model", str(spec), "--array", "dgx-h100", "--gpus", "8", "--degrees", "tensor=4"], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1 and "does not divide 2, the gcd" in err


def test_full_recompute_counts_the_layer_being_recomputed():
    """Under full recomputation the layer rebuilt for its backward holds its whole activations while
    it runs: the memory exceeds the stored inputs by per_layer(none) - per_layer(full)."""
    from explorer.core.llm_memory import Parallelism, Tokens, activation_bytes_per_layer as per_layer
    from explorer.core.llm_problem import LlmLayout
    from explorer.core.llm_step import evaluate_llm
    from explorer.core.llm_memory import Recompute, ZeroStage
    from explorer.frontends import load_cluster
    from explorer.frontends.transformer_problem import llm_problem
    from explorer.frontends.transformer_source import load_transformer

    src = load_transformer("gpt3-175b", None)
    prob = llm_problem(src.shape, load_cluster("dgx-a100", 1024), 1536, 2048)
    par = Parallelism(8, 8, 16)
    full = evaluate_llm(prob, LlmLayout(par, 96, Recompute.FULL, ZeroStage.ZERO1))
    tok = Tokens(2048, 96, 12288, 96)
    transient = per_layer(tok, 8, True, Recompute.NONE) - per_layer(tok, 8, True, Recompute.FULL)
    assert transient > 30 * 2**30  # about 32 GiB at micro-batch 96
    stored = 12 * per_layer(tok, 8, True, Recompute.FULL)  # 12 layers a stage, 1 micro-batch in flight (m = 1)
    assert full.memory.activations >= stored + transient


def test_cli_memory_on_a_cluster_leaves_headroom(capsys):
    """--memory sets each GPU's usable memory: the plan fits under it (and the capacity printed is it);
    more than the data sheet's, or NaN, is refused in one line."""
    args = ["--model", "gpt3-1.7b", "--array", "dgx-a100", "--gpus", "8", "--batch", "32", "--seq", "512"]
    code, out, _ = run_cli(args + ["--memory", "4"], capsys)
    assert code == 0 and "of 4 GiB" in out
    used = float(out.split("memory per GPU ")[1].split(" GiB")[0])
    assert used <= 4
    code, free, _ = run_cli(args, capsys)
    assert float(free.split("memory per GPU ")[1].split(" GiB")[0]) > 4  # the limit changed the plan
    for bad in ("90", "nan", "0"):
        code, out, err = run_cli(args + ["--memory", bad], capsys)
        assert code == 2 and out == "" and err.startswith("explore: error: --memory: ") and err.count("\n") == 1


def test_json_sequence_parallel_is_what_the_table_says(capsys):
    """Sequence parallelism needs tensor parallelism: at t = 1 the JSON says false, as the table does."""
    import json
    code, out, _ = run_cli(["--model", "gpt3-1.7b", "--array", "dgx-a100", "--gpus", "8", "--batch", "32",
                            "--seq", "512", "--format", "json"], capsys)
    doc = json.loads(out)
    for row in [doc] + doc["runners_up"]:
        assert row["sequence_parallel"] == (row["degrees"]["tensor"] > 1)
