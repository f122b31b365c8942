"""What a new user of the LLM planner found on main (each test fails without its fix): the
approximation notes of a model file on a GPU cluster, learned positions shorter than --seq, the
option an error names, duplicate keys in a config.json, sweeps given a GPU cluster, the JSON's
float companions, the header and the notes of the table; and on a mixture of experts: Mixtral's
sliding window, approx and notes in its JSON, parameter counts, check's array options on a
cluster, the degrees' short names, a single expert, where explore list says a model is planned."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest

from .conftest import run_cli

# a Mistral-shaped config small enough to plan in a fraction of a second
MISTRAL = {"model_type": "mistral", "num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
           "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 1000, "max_position_embeddings": 64,
           "sliding_window": 16}
FAST = ["--recompute", "none", "--zero", "0"]
SMALL = ["--model", "gpt3-1.7b", "--array", "dgx-a100", "--gpus", "8", "--batch", "32", "--seq", "512"]
WINDOW_NOTE = "sliding_window 16 < sequence 32: attention is counted over all 32 tokens"


def _write(tmp_path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


# ---- 1. a config's approximations are reported on a GPU cluster as on an array ---------------


def test_sliding_window_is_reported_on_a_cluster_as_on_an_array(tmp_path, capsys):
    cfg = _write(tmp_path, "config.json", json.dumps(MISTRAL))
    code, out, err = run_cli(["--model", cfg, "--seq", "32", "--batch", "8", "--levels", "1", "--format", "json"],
                             capsys)
    assert code == 0 and f"explore: approximation: {WINDOW_NOTE}\n" in err
    assert json.loads(out)["approximations"] == [WINDOW_NOTE]
    cluster = ["--model", cfg, "--array", "dgx-a100", "--gpus", "8", "--batch", "8", "--seq", "32", *FAST]
    code, out, err = run_cli(cluster + ["--format", "json"], capsys)
    assert code == 0 and f"explore: approximation: {WINDOW_NOTE}\n" in err
    assert WINDOW_NOTE in json.loads(out)["notes"]
    code, out, err = run_cli(cluster, capsys)
    assert code == 0 and f"note: {WINDOW_NOTE}\n" in out and WINDOW_NOTE in err
    code, out, err = run_cli(["check", *cluster], capsys)
    assert code == 0 and WINDOW_NOTE in err
    code, out, err = run_cli(cluster[:-4] + ["--seq", "16", *FAST], capsys)  # the window covers the sequence
    assert code == 0 and "sliding_window 16" not in out + err


# ---- 2. learned positions: no sequence longer than the table ------------------------------------

GPT_SPEC = ("version: 1\nname: g\nbatch: 8\nsequence: {seq}\ntransformer: {{family: gpt, layers: 2, hidden: 64, "
            "heads: 4, ffn: 256, vocab: 1000, positions: 1024, tied_head: true}}\n")


@pytest.mark.parametrize("cluster", [False, True], ids=["array", "cluster"])
def test_a_sequence_beyond_the_learned_positions_is_refused(cluster, tmp_path, capsys):
    on = ["--array", "dgx-a100", "--gpus", "8", "--batch", "32"] if cluster else []
    gpt2 = "tests/hf_configs/gpt2.json"
    cases = [
        (["--model", "gpt3-1.7b", "--seq", "8192"],
         "gpt3-1.7b.yaml: --seq: 8,192 tokens is more than the 2,048 learned positions (transformer.positions)"),
        (["--model", gpt2, "--seq", "4096"], "gpt2.json: --seq: 4,096 tokens is more than the 1,024 learned positions "
                                             "(n_positions)"),
        (["--model", _write(tmp_path, "g.yaml", GPT_SPEC.format(seq=2048))],
         "g.yaml: sequence: 2,048 tokens is more than the 1,024 learned positions (transformer.positions)"),
        (["--model", _write(tmp_path, "g2.yaml", GPT_SPEC.format(seq=512)), "--seq", "1025"],
         "g2.yaml: --seq: 1,025 tokens is more than the 1,024 learned positions"),
    ]
    for args, line in cases:
        code, out, err = run_cli(args + on, capsys)
        assert code == 2 and out == "" and err.count("\n") == 1 and line in err, (args, err)
        assert "a learned position table has no row beyond its size" in err and "Traceback" not in err


def test_a_sequence_up_to_the_learned_positions_is_planned(tmp_path, capsys):
    spec = _write(tmp_path, "g.yaml", GPT_SPEC.format(seq=1024))
    code, out, err = run_cli(["--model", spec, "--array", "dgx-a100", "--gpus", "8", *FAST], capsys)
    assert code == 0 and "sequence 1,024" in out
    code, out, err = run_cli(["--model", "tests/hf_configs/gpt2.json", "--seq", "1024", "--batch", "8",
                              "--levels", "1"], capsys)
    assert code == 0
    # rotary positions have no table: a llama-family sequence beyond max_position_embeddings is planned
    cfg = _write(tmp_path, "config.json", json.dumps({**MISTRAL, "sliding_window": None}))
    code, out, err = run_cli(["--model", cfg, "--array", "dgx-a100", "--gpus", "8", "--batch", "8", "--seq", "128",
                              *FAST], capsys)
    assert code == 0 and "sequence 128" in out


CONTEXT_NOTE = ("sequence 128 is beyond max_position_embeddings 64, the context the model was trained for: planned "
                "as given (rotary positions have no table), its quality there not modelled")


@pytest.mark.parametrize("model_type", ["llama", "mistral", "qwen2"])
def test_a_sequence_beyond_the_trained_context_is_planned_with_a_note(model_type, tmp_path, capsys):
    """Trial 12: a llama config (max_position_embeddings 4096) with --seq 16384 ran with no note."""
    cfg = _write(tmp_path, "config.json", json.dumps({**MISTRAL, "model_type": model_type, "sliding_window": None}))
    array = ["--model", cfg, "--batch", "8", "--levels", "1", "--format", "json"]
    cluster = ["--model", cfg, "--array", "dgx-a100", "--gpus", "8", "--batch", "8", *FAST, "--format", "json"]
    for args, key in ((array, "approximations"), (cluster, "notes")):
        code, out, err = run_cli([*args, "--seq", "128"], capsys)
        assert code == 0 and f"explore: approximation: {CONTEXT_NOTE}\n" in err
        assert CONTEXT_NOTE in json.loads(out)[key]
        code, out, err = run_cli([*args, "--seq", "64"], capsys)  # the trained context itself: no note
        assert code == 0 and "max_position_embeddings" not in out + err


# ---- 3. the option an error names ------------------------------------------------------------


@pytest.mark.parametrize("args, line", [
    (["--model", "gpt3-1.7b", "--array", "dgx-b200", "--layout", "megatron"], "--array: unknown array 'dgx-b200'"),
    (["--model", "gpt3-1.7b", "--array", "dgx-b200", "--gpus", "8"], "--array: unknown array 'dgx-b200'"),
    (["--model", "gpt3-1.7b", "--array", "", "--gpus", "8"], "--array: must not be empty"),
    (["--model", "gpt3-175b", "--array", "dgx-a100", "--gpus", "1024", "--batch", "7"],
     "--batch: 7 is a multiple of no data degree of the layouts of 1,024 GPUs (2, 4, 8, 16, ..., 1,024; "),
    (["--model", "gpt3-175b", "--array", "dgx-a100", "--gpus", "1024", "--batch", "1"],
     "--batch: 1 is smaller than every data degree of the layouts of 1,024 GPUs"),
    (["--model", "gpt3-175b", "--array", "dgx-a100", "--gpus", "1024", "--batch", "7", "--degrees", "tensor=8"],
     "--batch: 7 is a multiple of no data degree of the layouts of 1,024 GPUs with tensor=8 (2, 4, 8, 16, ..., 128; "),
    (["--model", "gpt3-175b", "--array", "dgx-a100", "--gpus", "1024", "--batch", "1536", "--layout", "zero3"],
     "--batch: 1,536 is not a multiple of the 1,024 GPUs (--gpus): --layout zero3 is pure data parallelism"),
    # given degrees are still what is named
    (["--model", "gpt3-175b", "--array", "dgx-a100", "--gpus", "1024", "--batch", "1536", "--layout", "zero3",
      "--degrees", "data=1024"], "--degrees: data=1024 does not divide the batch 1536"),
])
def test_errors_name_the_option_at_fault(args, line, capsys):
    code, out, err = run_cli(args, capsys)
    assert code == 2 and out == "" and err.count("\n") == 1 and line in err, err


def test_an_accelerator_array_still_refuses_the_llm_options(capsys):
    code, out, err = run_cli(["--model", "gpt3-1.7b", "--array", "hypar-16", "--layout", "megatron"], capsys)
    assert code == 2 and "--layout: needs a GPU cluster --array" in err


# ---- 4. a config.json with a key twice -------------------------------------------------------


@pytest.mark.parametrize("cluster", [False, True], ids=["array", "cluster"])
def test_duplicate_keys_in_a_config_json_are_refused(cluster, tmp_path, capsys):
    text = json.dumps(MISTRAL)[:-1] + ', "num_hidden_layers": 3}'
    cfg = _write(tmp_path, "config.json", text)
    nested = _write(tmp_path, "nested.json", json.dumps(MISTRAL)[:-1] + ', "rope_scaling": {"type": 1, "type": 2}}')
    on = ["--array", "dgx-a100", "--gpus", "8", "--batch", "8"] if cluster else []
    for path, key in ((cfg, "num_hidden_layers"), (nested, "type")):
        code, out, err = run_cli(["--model", path, *on], capsys)
        assert code == 2 and out == "" and err.count("\n") == 1
        assert f"{path}: duplicate key '{key}'" in err


# ---- 5. a sweep given a GPU cluster ----------------------------------------------------------


@pytest.mark.parametrize("where, array", [("fixed", "dgx-a100"), ("grid", "dgx-h100"), ("grid", "FILE")])
def test_a_sweep_refuses_a_gpu_cluster_saying_where_it_is_planned(where, array, tmp_path, capsys):
    from pathlib import Path

    if array == "FILE":
        array = "mine.yaml"
        (tmp_path / array).write_text(Path("spaces/clusters/dgx-a100.yaml").read_text())
    value = f"[{array}]" if where == "grid" else array
    spec = _write(tmp_path, "s.yaml", f"version: 1\nname: s\ngrid:\n  model: [gpt3-1.7b]\n{where}:\n  array: {value}\n"
                  if where == "fixed" else f"version: 1\nname: s\ngrid:\n  model: [gpt3-1.7b]\n  array: {value}\n")
    code, out, err = run_cli(["sweep", spec, "--out", str(tmp_path / "runs")], capsys)
    place = "fixed.array" if where == "fixed" else "grid.array[0]"
    assert code == 2 and out == "" and err.count("\n") == 1 and not (tmp_path / "runs").exists()
    assert f"{place}: '{array}' is a GPU cluster: sweeps take accelerator arrays (" in err
    assert f"a GPU cluster is planned by explore --array {array} --model ..." in err


# ---- 6. the JSON's float companions ----------------------------------------------------------


def test_json_approx_holds_a_float_beside_each_exact_value(capsys):
    code, out, err = run_cli(SMALL + FAST + ["--format", "json"], capsys)
    doc = json.loads(out)
    assert code == 0 and isinstance(doc["step_time_s"], str) and "/" in doc["step_time_s"]  # the exact string stays
    keys = {"step_time_s", "tflops_per_gpu", "model_tflops_per_gpu", "mfu", "bubble_fraction", "memory_bytes_per_accelerator", "gap", "bound",
            "memory_capacity_bytes", "compute_s", "tensor_comm_s", "data_comm_s", "pipeline_comm_s",
            "smallest_memory_bytes", "memory_bound_bytes"}  # the first null with a plan (the JSON's keys are stable)
    assert set(doc["approx"]) == keys and doc["smallest_memory_bytes"] is None
    for row in [doc] + doc["runners_up"]:
        assert set(row["approx"]) <= keys and "step_time_s" in row["approx"]
        for key, value in row["approx"].items():
            if row[key] is None:
                assert value is None, key
                continue
            assert isinstance(value, float) and value == float(Fraction(row[key])), key


def test_json_approx_when_nothing_fits(capsys):
    code, out, err = run_cli(SMALL + FAST + ["--memory", "0.01", "--format", "json"], capsys)
    doc = json.loads(out)
    assert code == 1 and doc["memory_capacity_bytes"] == "10737418.24"
    assert doc["approx"]["memory_capacity_bytes"] == 10737418.24 and doc["approx"]["gap"] is None
    assert doc["approx"]["memory_bound_bytes"] == float(doc["memory_bound_bytes"])


# ---- 7. help and the table's words -----------------------------------------------------------


def test_help_says_what_memory_and_seq_do_on_a_cluster(capsys):
    code, out, _ = run_cli(["--help"], capsys)
    text = " ".join(out.split())
    assert code == 0
    assert "On a GPU cluster: each GPU's usable memory, at most the GPU's own (a headroom setting" in text
    assert "the zoo's transformers" in text and "Hugging Face config.json's context length" in text


def test_header_says_the_given_micro_batch(capsys):
    args = ["--model", "gpt3-1.7b", "--array", "dgx-a100", "--gpus", "8", "--batch", "192", "--seq", "512",
            "--degrees", "data=2", "--recompute", "full", "--zero", "1"]
    code, out, _ = run_cli(args + ["--micro-batch", "96"], capsys)
    assert code == 0 and "; micro-batch 96 (given)\n" in out and "up to 64" not in out
    assert "micro-batch size 96, 1 micro-batch per pipeline per step" in out
    code, out, _ = run_cli(args + ["--micro-batch", "96", "--format", "json"], capsys)
    assert json.loads(out)["inputs"]["micro_batch"] == 96
    code, out, _ = run_cli(SMALL + FAST, capsys)
    assert code == 0 and "; micro-batches up to 64\n" in out


def test_large_memory_figures_have_thousands_separators(capsys):
    from explorer.core.units import memory_text

    assert memory_text(Fraction(13969885262_94, 100) * 2**30) == "13,642,466 TiB"  # from 1024 TiB: whole TiB, grouped
    code, out, _ = run_cli(["--model", "gpt3-1t", "--array", "dgx-a100", "--gpus", "8", "--batch", "8", "--seq", "512",
                            "--recompute", "full", "--zero", "0"], capsys)
    assert code == 1 and "every layout needs at least 1.834 TiB" in out


def test_a_plan_with_little_headroom_says_no_framework_reserve_is_taken(capsys):
    code, out, _ = run_cli(SMALL + ["--memory", "4"], capsys)
    used = Fraction(out.split("memory per GPU ")[1].split(" GiB")[0])
    assert code == 0 and 4 - used < 2
    note = [line for line in out.splitlines() if "no framework reserve" in line]
    assert len(note) == 1 and note[0] == (  # 4 GiB less 3.977 GiB, in binary units
        "note: 23.33 MiB to spare: the memory model takes no framework reserve (CUDA context, NCCL buffers, allocator "
        "fragmentation) out of the usable memory (--memory GiB sets it); to keep headroom give less, e.g. --memory "
        "3.8 (5% kept), and the search picks the fastest plan that fits it")
    code, out, _ = run_cli(SMALL + ["--memory", "40"], capsys)  # plenty to spare: no note
    assert code == 0 and "framework reserve" not in out


# ---- 8. the docs' figures are the code's -----------------------------------------------------


def test_the_python_example_of_llm_training_prints_its_comments():
    """docs/llm-training.md's Python example (GPT-3 175B, Megatron's layout): each ``print`` is
    followed by a ``# ...`` comment saying what it prints (it said 22.0 GiB where 22.2 is printed)."""
    import contextlib
    import io
    import re
    from pathlib import Path

    text = Path(__file__).resolve().parent.parent.joinpath("docs", "llm-training.md").read_text()
    block = next(b for b in re.findall(r"```python\n(.*?)```", text, re.S) if "evaluate_llm(problem, layout)" in b)
    said = [line[2:] for line in block.splitlines() if line.startswith("# ")]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block, "llm-training.md", "exec"), {})
    assert said and out.getvalue().splitlines() == said


# ---- 9. a mixture of experts, as a new user met it ----------------------------------------------

# a Mixtral-shaped config small enough to plan in a fraction of a second
MIXTRAL_TINY = dict(MISTRAL, model_type="mixtral", num_local_experts=4, num_experts_per_tok=2)
MIXTRAL_RUN = ["--array", "dgx-a100", "--gpus", "8", "--batch", "8", "--seq", "32", *FAST]


@pytest.mark.parametrize("window, noted", [(16, True), (None, False), (32, False)])
def test_a_mixtral_sliding_window_is_noted_as_a_mistral_one(window, noted, tmp_path, capsys):
    cfg = _write(tmp_path, "config.json", json.dumps(dict(MIXTRAL_TINY, sliding_window=window)))
    code, out, err = run_cli(["--model", cfg, *MIXTRAL_RUN, "--format", "json"], capsys)
    assert code == 0, err
    assert (f"explore: approximation: {WINDOW_NOTE}\n" in err) is noted
    assert (WINDOW_NOTE in json.loads(out)["notes"]) is noted


def _exact_valued(doc: dict) -> set[str]:
    """The keys of a JSON object holding an exact figure: a non-integer number or an exact string
    (a decimal or "p/q"); integer counts (micro_batch, zero, ...) are not figures."""
    def figure(v) -> bool:
        if isinstance(v, str):
            try:
                Fraction(v)
            except ValueError:
                return False
            return True
        return isinstance(v, float)
    return {k for k, v in doc.items() if figure(v)}


def test_moe_json_approx_covers_every_exact_value_and_the_headroom_note(tmp_path, capsys):
    cfg = _write(tmp_path, "config.json", json.dumps(MIXTRAL_TINY))
    code, out, err = run_cli(["--model", cfg, *MIXTRAL_RUN, "--format", "json"], capsys)
    doc = json.loads(out)
    assert code == 0 and Fraction(doc["expert_comm_s"]) > 0
    assert doc["approx"]["expert_comm_s"] == float(Fraction(doc["expert_comm_s"]))
    for row in [doc] + doc["runners_up"]:
        assert _exact_valued(row) <= set(row["approx"]), _exact_valued(row) - set(row["approx"])
        for key, value in row["approx"].items():
            assert value is None if row[key] is None else value == float(Fraction(row[key])), key
    used = Fraction(doc["memory_bytes_per_accelerator"]) / 2**30
    memory = str(float(used) + 0.5)  # half a GiB to spare: the note
    code, table, _ = run_cli(["--model", cfg, *MIXTRAL_RUN, "--memory", memory], capsys)
    code2, out, _ = run_cli(["--model", cfg, *MIXTRAL_RUN, "--memory", memory, "--format", "json"], capsys)
    note = [line for line in table.splitlines() if "no framework reserve" in line]
    assert code == code2 == 0 and len(note) == 1 and note[0].startswith("note: 512 MiB to spare")  # half a GiB
    assert note[0].removeprefix("note: ") in json.loads(out)["notes"]  # one source: the table's words
    for line in table.splitlines():  # and every table note is among the JSON's
        if line.startswith("note: "):
            assert line.removeprefix("note: ") in json.loads(out)["notes"]


def test_parameter_counts_in_the_header_and_the_json(capsys):
    from explorer.app.llm_report import count_words
    from explorer.frontends.transformer_params import active_parameter_count, parameter_count
    from explorer.frontends.transformer_source import load_transformer

    assert [count_words(n) for n in (12_345, 125_000_000, 46_702_792_704, 10**12)] == [
        "12,345", "125.0M", "46.7B", "1,000.0B"]
    code, out, _ = run_cli(SMALL + FAST, capsys)
    assert code == 0 and out.splitlines()[0].endswith(", 24 layers, 1.7B parameters")
    code, out, _ = run_cli(SMALL + FAST + ["--format", "json"], capsys)
    shape = load_transformer("gpt3-1.7b").shape
    total = parameter_count(shape).total
    assert json.loads(out)["inputs"]["parameters"] == json.loads(out)["inputs"]["active_parameters"] == total
    moe = ["--model", "mixtral-8x7b", "--array", "dgx-h100", "--gpus", "16", "--batch", "64", "--seq", "1024",
           "--layout", "megatron", "--degrees", "tensor=2,pipeline=4,data=2,expert=2", "--micro-batch", "1",
           "--recompute", "selective", "--zero", "1"]
    code, out, _ = run_cli(moe, capsys)
    assert code == 0 and ", 32 layers, 46.7B parameters, 12.9B active, 8 experts (top-2" in out.splitlines()[0]
    code, out, _ = run_cli(moe + ["--format", "json"], capsys)
    inputs = json.loads(out)["inputs"]
    shape = load_transformer("mixtral-8x7b").shape  # Mistral AI's published 46.7B total, 12.9B active
    assert inputs["parameters"] == parameter_count(shape).total and round(inputs["parameters"] / 1e8) == 467
    assert inputs["active_parameters"] == active_parameter_count(shape) and round(inputs["active_parameters"] / 1e8) == 129


@pytest.mark.parametrize("option", [["--uneven"], ["--solvers", "exact"], ["--split", "optimal"], ["--grid-only"]])
def test_check_refuses_the_array_options_on_a_gpu_cluster(option, capsys):
    code, out, err = run_cli(["check", *option, "--model", "mixtral-8x7b", "--array", "dgx-h100", "--gpus", "8"],
                             capsys)
    assert code == 2 and out == "" and err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"explore: error: {option[0]}: not with a GPU cluster --array (dgx-h100)")


def test_degree_aliases_tp_pp_dp_ep_are_the_long_names():
    from explorer.app.llm_options import parse_degrees

    long = {"tensor": 2, "pipeline": 4, "data": 2, "expert": 2}
    assert parse_degrees("tp=2,pp=4,dp=2,ep=2") == parse_degrees("t=2,p=4,d=2,e=2") == long
    assert parse_degrees("tensor=2,pipeline=4,data=2,expert=2") == long
    with pytest.raises(Exception, match="tensor given twice"):
        parse_degrees("tp=2,tensor=2")
    with pytest.raises(Exception, match="unknown degree 'sp'"):
        parse_degrees("sp=2")


def test_degree_aliases_are_documented():
    from pathlib import Path

    text = (Path(__file__).resolve().parent.parent / "docs" / "commands.md").read_text()
    assert "`tp`" in text and "`pp`" in text and "`dp`" in text and "`ep`" in text


@pytest.mark.parametrize("experts, top_k", [(1, 1), (1, 2)])
def test_a_single_expert_is_refused_naming_the_field(experts, top_k, tmp_path, capsys):
    cfg = _write(tmp_path, "config.json", json.dumps(dict(MIXTRAL_TINY, num_local_experts=experts,
                                                          num_experts_per_tok=top_k)))
    code, out, err = run_cli(["--model", cfg, *MIXTRAL_RUN], capsys)
    assert code == 2 and out == "" and err.splitlines() == [
        f"explore: error: {cfg}: num_local_experts: must be at least 2, got 1 (a single expert is a dense FFN with "
        "a router: describe a dense model instead)"]
    spec = _write(tmp_path, "m.yaml", "version: 1\nname: m\nbatch: 8\nsequence: 32\ntransformer: {family: llama, "
                                      f"layers: 2, hidden: 64, heads: 4, ffn: 64, vocab: 100, experts: {experts}, "
                                      f"top_k: {top_k}}}\n")
    code, out, err = run_cli(["--model", spec, *MIXTRAL_RUN], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1 and "transformer.experts: must be at least 2, got 1" in err


def test_explore_list_says_where_each_model_is_planned(capsys):
    """Every zoo model's mark is what the planners do: "GPU clusters only" (a mixture of experts),
    "also on GPU clusters" (a transformer: block), none (accelerator arrays only)."""
    from explorer.core.errors import SpecError
    from explorer.frontends import dense_only, load_model
    from explorer.frontends.transformer_source import load_transformer

    code, out, _ = run_cli(["list"], capsys)
    assert code == 0
    rows = {line.split()[0]: line for line in out.split("arrays:")[0].splitlines()[1:] if "layers" in line}
    code, out, _ = run_cli(["list", "--format", "json"], capsys)
    planned = {m["name"]: m["planned_on"] for m in json.loads(out)["models"]}
    assert set(rows) == set(planned) and len(rows) > 30
    for name, where in planned.items():
        try:
            dense_only(load_model(name), name)
            on_array = True
        except SpecError:
            on_array = False
        try:
            load_transformer(name)
            on_cluster = True
        except SpecError:
            on_cluster = False
        assert where == ["accelerator-array"] * on_array + ["gpu-cluster"] * on_cluster, name
        mark = {(True, True): "also on GPU clusters", (False, True): "GPU clusters only"}.get((on_array, on_cluster))
        assert rows[name].endswith(mark) if mark else "GPU" not in rows[name], name
    assert planned["mixtral-8x7b"] == planned["mixtral-8x22b"] == ["gpu-cluster"]
    assert planned["gpt3-175b"] == planned["llama3-8b"] == ["accelerator-array", "gpu-cluster"]
    assert planned["resnet50"] == planned["gpt2-small"] == ["accelerator-array"]


def test_a_small_model_outside_the_calibration_is_counted_in_millions():
    from explorer.core.llm_calibration import range_notes

    note, = range_notes("A100-SXM4-80GB", 17_800_000)
    assert note.startswith("outside the calibrated range: 17.8M parameters, below the calibration rows' 22.1B")
