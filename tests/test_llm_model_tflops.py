"""The LLM report gives the model TFLOP/s (model FLOPs, no recompute: the validation tables'
figure, Meta's 430) beside the FLOPs executed (recompute included), each named so the two
cannot be confused, in text and JSON (new-user trial 5); the headroom note says how to keep
some (the default rule, the fastest plan that fits, unchanged)."""

from __future__ import annotations

import json
from fractions import Fraction

from explorer.core.llm_flops import GptIteration, hardware_flops, model_flops
from explorer.core.llm_memory import Recompute
from explorer.core.units import TERA

from .conftest import run_cli

# a Megatron layout with selective recompute, so executed != model FLOPs
GIVEN = ["--model", "gpt3-1.7b", "--array", "dgx-a100", "--gpus", "8", "--batch", "32", "--seq", "512",
         "--layout", "megatron", "--degrees", "tensor=8,pipeline=1,data=1", "--recompute", "selective", "--zero", "1"]
# gpt3-1.7b: 24 layers, hidden 2,304, vocab 51,200 (models/zoo); batch 32, sequence 512
IT = GptIteration(batch=32, sequence=512, layers=24, hidden=2304, vocab=51200)


def test_model_and_executed_tflops_are_both_given_and_named(capsys):
    code, out, _ = run_cli(GIVEN + ["--format", "json"], capsys)
    d = json.loads(out)
    step = Fraction(d["step_time_s"])
    assert code == 0 and d["recompute"] == "selective"
    assert Fraction(d["model_tflops_per_gpu"]) == Fraction(model_flops(IT)) / (step * 8 * TERA)
    assert Fraction(d["tflops_per_gpu"]) == Fraction(hardware_flops(IT, Recompute.SELECTIVE)) / (step * 8 * TERA)
    assert Fraction(d["model_tflops_per_gpu"]) < Fraction(d["tflops_per_gpu"])
    assert Fraction(d["mfu"]) == Fraction(d["model_tflops_per_gpu"]) / 312  # A100 peak 312 TFLOP/s: MFU on model FLOPs
    assert d["approx"]["model_tflops_per_gpu"] == float(Fraction(d["model_tflops_per_gpu"]))
    code, out, _ = run_cli(GIVEN, capsys)
    model = f"{float(Fraction(d['model_tflops_per_gpu'])):.1f}"
    assert f", {model} model TFLOP/s per GPU (no recompute), MFU 43.9% (model), " in out
    assert "138.4 TFLOP/s per GPU (FLOPs executed, recompute included)" in out


def test_no_plan_json_has_the_model_tflops_key_as_null(capsys):
    code, out, _ = run_cli(["--model", "gpt3-1.7b", "--array", "dgx-a100", "--gpus", "8", "--batch", "32",
                            "--seq", "512", "--memory", "0.01", "--format", "json"], capsys)
    d = json.loads(out)
    assert code == 1 and d["model_tflops_per_gpu"] is None and d["approx"]["model_tflops_per_gpu"] is None


def test_the_headroom_note_names_a_value_that_keeps_headroom_through_the_api():
    from explorer import api

    report = api.plan_llm("gpt3-1.7b", array="dgx-a100", gpus=8, batch=32, seq=512, memory_GiB=4)
    note = [n for n in report.all_notes if "to spare" in n]
    assert len(note) == 1 and note[0].endswith(
        "(memory_GiB sets it); to keep headroom give less, e.g. memory_GiB=3.8 (5% kept), and the search picks "
        "the fastest plan that fits it")
