"""Hostile input, round 5 (the trial on main at 02251a2): each input gets one line naming the
file or argument, the field and the problem, exit status 2 (the API: SpecError), no traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from explorer import api
from explorer.core.errors import SpecError

from .conftest import run_cli

CLUSTERS = Path(__file__).parents[1] / "spaces" / "clusters"


def test_plot_where_without_a_column_is_refused(tmp_path, capsys):
    """`--where =x` read column '' and crashed with KeyError ''."""
    (tmp_path / "results.csv").write_text("solver,step_time_s\ndp,1.0\nexact,2.0\n", encoding="utf-8")
    for where in ("=x", "="):
        code, out, err = run_cli(["plot", str(tmp_path), "--x", "solver", "--y", "step_time_s", "--where", where], capsys)
        assert code == 2 and "Traceback" not in err, err
        assert err.count("\n") == 1 and "--where" in err and "is not COLUMN=VALUE" in err, err


@pytest.mark.parametrize("solver", [["dp"], {"dp"}, ("dp",)])
def test_solve_refuses_a_solver_that_is_not_one_name(solver):
    """A list or set raised TypeError: unhashable type."""
    with pytest.raises(SpecError) as e:
        api.solve("lenet-c", solver=solver)
    assert e.value.source == "solver" and "unknown solver" in str(e.value)


def test_plan_llm_takes_paths():
    """A pathlib.Path for the model and the array, as solve takes them."""
    config = Path(__file__).parent / "hf_configs" / "gpt2.json"
    by_text = api.plan_llm(str(config), str(CLUSTERS / "dgx-a100.yaml"), gpus=8, batch=64, time_limit=30)
    by_path = api.plan_llm(config, CLUSTERS / "dgx-a100.yaml", gpus=8, batch=64, time_limit=30)
    assert by_path.ok and by_path.result.best is not None
    assert (by_path.model, by_path.gpus, by_path.result.status, by_path.result.best) == \
        (by_text.model, by_text.gpus, by_text.result.status, by_text.result.best)


@pytest.mark.parametrize("key", ["tensor=1,pipeline", "tensor=1", "ten,sor", "", "Tensor"])
def test_plan_llm_degrees_keys_are_names(key):
    """{"tensor=1,pipeline": 2} was joined into 'tensor=1,pipeline=2' and accepted."""
    with pytest.raises(SpecError) as e:
        api.plan_llm("gpt3-1.7b", gpus=8, degrees={key: 2})
    assert e.value.source == "degrees" and "degree's name" in str(e.value)


def test_unused_kinds_are_listed_short(tmp_path, capsys):
    """1,000 declared kinds, 4 used: the error listed all 996 others (5,943 characters)."""
    kinds = {f"k{i}": {"peak_TFLOPS": 10, "memory_GiB": 16} for i in range(1000)}
    path = tmp_path / "many.yaml"
    path.write_text(yaml.safe_dump({"version": 1, "name": "many", "levels": 2, "dtype_bytes": 2,
                                    "link_bandwidth_GBps": 70, "kinds": kinds,
                                    "accelerators": ["k1", "k2", "k3", "k4"]}), encoding="utf-8")
    code, out, err = run_cli(["--array", str(path), "--model", "lenet-c"], capsys)
    assert code == 2 and err.count("\n") == 1 and len(err) < 300, err
    assert "kinds: k0, k10, k100," in err and "and 988 more not used by any accelerator" in err


def test_cluster_gpus_capped_as_the_option(tmp_path, capsys):
    """`gpus: 10^12` loaded (--gpus caps at 10^9) and the run then blamed --batch, never given."""
    base = yaml.safe_load((CLUSTERS / "dgx-a100.yaml").read_text(encoding="utf-8"))
    path = tmp_path / "huge.yaml"
    path.write_text(yaml.safe_dump({**base, "gpus": 10**12}), encoding="utf-8")
    code, out, err = run_cli(["--model", "gpt3-1.7b", "--array", str(path)], capsys)
    assert code == 2 and err.count("\n") == 1, err
    assert f"{path}: gpus: must be at most 1,000,000,000" in err
    code, out, err = run_cli(["--model", "gpt3-1.7b", "--array", "dgx-a100", "--gpus", "1000000000"], capsys)
    assert code == 2 and "--batch" not in err.split(":")[1] and "batch (the model's, gpt3-1.7b" in err, err


def test_a_solver_named_twice_is_noted(capsys):
    """`--solvers brute,brute` ran once without a word: a note on stderr says so."""
    code, out, err = run_cli(["check", "--model", "lenet-c", "--solvers", "exact,brute,exact"], capsys)
    assert code == 0, err
    assert "explore: note: --solvers: exact named more than once; each solver runs once" in err
    assert sum(line.split()[:1] == ["exact"] for line in out.splitlines()) == 1, out


@pytest.mark.parametrize("cap", ["０=1GB", "1_0=1GB", "٠=1GB"])
def test_cap_level_takes_ascii_digits_only(cap, capsys):
    """`--cap ０=1GB` (a full-width digit) was read as level 0."""
    code, out, err = run_cli(["--model", "lenet-c", "--cap", cap], capsys)
    assert code == 2 and err.count("\n") == 1, err
    assert "--cap: " in err and "level must be an integer (digits 0-9)" in err, err


def test_split_summary_names_every_broken_limit(capsys):
    """Memory and a cap both broken: the stderr line named only the memory."""
    code, out, err = run_cli(["--model", "vgg-a", "--array", "tpu-mix-16", "--split", "equal", "--memory", "0.001",
                              "--cap", "0=100kB"], capsys)
    assert code == 1 and err.count("\n") == 1, err
    assert "plan does not fit in memory: v2 needs" in err and "and breaks cap level 0 <= 100 kB (--cap)" in err, err


def _config(tmp_path, name: str, change: dict, drop: tuple = ()) -> str:
    import json

    cfg = json.loads((Path(__file__).parent / "hf_configs" / name).read_text(encoding="utf-8"))
    cfg.update(change)
    for k in drop:
        del cfg[k]
    path = tmp_path / f"{len(drop)}-{len(change)}.json"
    path.write_text(json.dumps(cfg), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("base", ["Meta-Llama-3-8B.json", "gpt2.json", "Qwen2-7B.json"])
def test_dense_config_with_moe_keys_is_refused(base, tmp_path, capsys):
    """A llama config with num_local_experts was planned dense with no word of the keys."""
    path = _config(tmp_path, base, {"num_local_experts": 8, "num_experts_per_tok": 2})
    code, out, err = run_cli(["--array", "dgx-a100", "--gpus", "8", "--model", path, "--batch", "8"], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert f"{path}: num_local_experts: a mixture of experts' key, but model_type" in err and "is dense" in err


def test_mixtral_config_takes_hugging_faces_defaults(tmp_path):
    """Without num_local_experts and num_experts_per_tok: 8 and 2, as MixtralConfig (was 'missing')."""
    from explorer.frontends.hf_config import read_hf_shape

    given = read_hf_shape(_config(tmp_path, "Mixtral-8x7B-v0.1.json", {"num_local_experts": 8,
                                                                       "num_experts_per_tok": 2}))[0]
    left_out = read_hf_shape(_config(tmp_path, "Mixtral-8x7B-v0.1.json", {},
                                     ("num_local_experts", "num_experts_per_tok")))[0]
    assert (left_out.experts, left_out.top_k) == (8, 2) and left_out == given
    four = read_hf_shape(_config(tmp_path, "Mixtral-8x7B-v0.1.json", {"num_local_experts": 4},
                                 ("num_experts_per_tok",)))[0]
    assert (four.experts, four.top_k) == (4, 2)


def test_optimal_on_too_many_classes_names_the_option(tmp_path, capsys):
    """1,024 kinds, one accelerator each: `--split optimal` said 'search moves one class ...',
    naming no option and speaking of search."""
    kinds = {f"k{i}": {"peak_TFLOPS": 10 + i, "memory_GiB": 16} for i in range(1024)}
    path = tmp_path / "k1024.yaml"
    path.write_text(yaml.safe_dump({"version": 1, "name": "k1024", "levels": 10, "dtype_bytes": 2,
                                    "link_bandwidth_GBps": 70, "kinds": kinds,
                                    "accelerators": [f"k{i}" for i in range(1024)]}), encoding="utf-8")
    code, out, err = run_cli(["--array", str(path), "--model", "lenet-c", "--split", "optimal"], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert err.startswith("explore: error: --split: optimal: array 'k1024' has 1023 free classes of groups, more "
                          "than 64") and "use --split proportional or equal" in err, err


def test_a_missing_version_is_called_missing(tmp_path, capsys):
    """Trial: a sweep file without `version:` said `version: must be 1, got None`."""
    from .conftest import run_cli

    f = tmp_path / "s.yaml"
    f.write_text("name: s\ngrid: {model: [lenet-c]}\n")
    code, _, err = run_cli(["sweep", str(f), "--out", str(tmp_path / "o")], capsys)
    assert code == 2 and "version: missing (must be 1)" in err and "None" not in err, err
    c = tmp_path / "c.yaml"
    c.write_text("caps: {0: 1GB}\n")
    code, _, err = run_cli(["--model", "lenet-c", "--constraints", str(c)], capsys)
    assert code == 2 and "version: missing (must be 1)" in err, err
