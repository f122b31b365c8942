"""``explore --help`` and ``explore list`` start without the heavy libraries (issue 8, item 5)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from explorer.core.thresholds import NUMPY_FROM_LAYERS

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

HEAVY = ("numpy", "ortools", "onnx")

PROBE = """
import json, sys
from explorer.app.cli import cli
try:
    cli.main(args=sys.argv[1:], prog_name="explore", standalone_mode=False)
except SystemExit:
    pass
print(json.dumps(sorted(m for m in {heavy!r} if m in sys.modules)))
"""


@pytest.mark.parametrize("args", [["--help"], ["list"], ["list", "--format", "json"], ["check", "--help"]], ids=" ".join)
def test_no_heavy_imports(args):
    proc = subprocess.run([sys.executable, "-c", PROBE.format(heavy=HEAVY), *args], capture_output=True, text=True, check=True)
    loaded = json.loads(proc.stdout.strip().splitlines()[-1])
    assert loaded == [], f"explore {' '.join(args)} imported {loaded}"


def probe_numpy(*args: str) -> bool:
    """Whether ``explore ARGS`` imported numpy."""
    proc = subprocess.run([sys.executable, "-c", PROBE.format(heavy=("numpy",)), *args], capture_output=True, text=True, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1]) == ["numpy"]


def chain_file(tmp_path, layers: int) -> str:
    from bench_whole_runs import chain_spec

    path = tmp_path / f"chain-{layers}.yaml"
    path.write_text(chain_spec(1, layers), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("layers", [NUMPY_FROM_LAYERS, NUMPY_FROM_LAYERS - 1])
def test_numpy_is_imported_exactly_from_the_threshold(tmp_path, layers):
    # the probe is able to see an import: a DP run on a network of thresholds.NUMPY_FROM_LAYERS
    # layers or more builds the vectorised level rows with numpy; one layer fewer never imports it
    path = chain_file(tmp_path, layers)
    assert probe_numpy("--model", path, "--array", "array-1024", "--space", "accpar") == (layers >= NUMPY_FROM_LAYERS)


@pytest.mark.parametrize("args", [["--model", "vgg-a"], ["--model", "gpt3-1.7b"], ["--model", "llama-7b"],
                                  ["--model", "gpt3-1t", "--array", "array-1024", "--space", "accpar"],
                                  ["--model", "llama3-405b"]], ids=" ".join)
def test_networks_below_the_threshold_run_without_numpy(args):
    # below thresholds.NUMPY_FROM_LAYERS layers (every zoo net: the largest, llama3-405b, has 1,388)
    # the DP, its tables and the plan scoring are Python integers (issue 23: numpy's import was a third
    # of a small run, and more than the Python paths cost up to a few thousand layers)
    assert not probe_numpy(*args)


def test_a_run_skips_what_only_other_paths_need():
    # importlib.resources (the zoo's folders: found next to their __init__.py) and tempfile (only
    # --output writes through a temp file) pulled in tempfile, shutil, zipfile, random: ~8 ms a run;
    # the LLM planner's options (and its memory model) only on a GPU cluster: ~4 ms a run; nor the
    # checker (explorer.api's check imports it), a GPU cluster's loader or the transformer importer
    # (a zoo network's MoE test reads core.network.MOE_NOTE): 3-6 ms of the floor under --time-limit 0.1
    lazy = ("importlib.resources", "tempfile", "explorer.app.llm_options", "explorer.core.llm_memory",
            "explorer.app.check", "explorer.core.cluster", "explorer.frontends.cluster_yaml",
            "explorer.frontends.transformer", "importlib.metadata")
    proc = subprocess.run([sys.executable, "-c", PROBE.format(heavy=lazy), "--model", "vgg-a"],
                          capture_output=True, text=True, check=True)
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == []


def test_a_trivial_split_and_version_skip_the_heavy_libraries():
    # --split equal imported the alpha search's module for a constant, and with it numpy (0.07-0.1 s, a
    # third of the process that --time-limit 0.1 counts); --version read the package's metadata
    # (importlib.metadata, email, zipfile: ~10 ms) for what explorer.__version__ says
    split = ["--model", "lenet-c", "--array", "tpu-mix-16", "--space", "accpar", "--split", "equal", "--format", "json"]
    for args, lazy in ((split, (*HEAVY, "explorer.solvers.uneven", "explorer.app.check_uneven")),
                       (["--version"], (*HEAVY, "importlib.metadata", "explorer.api"))):
        proc = subprocess.run([sys.executable, "-c", PROBE.format(heavy=lazy), *args], capture_output=True, text=True,
                              check=True)
        assert json.loads(proc.stdout.strip().splitlines()[-1]) == [], args
    out = subprocess.run([sys.executable, "-c", "from explorer.app.cli import main; main()", "--version"],
                         capture_output=True, text=True, check=True).stdout
    import explorer

    assert out == f"explore, version {explorer.__version__}\n"


SPENT_PROBE = """
import json, sys, time
from explorer.app.split import Split, split_run
from explorer.core.partition import Space
from explorer.frontends import load_array, load_model
net, arr = load_model("lenet-c"), load_array("tpu-mix-16")
r = split_run(net, arr, Space.ACCPAR, Split.OPTIMAL, time_limit_s=0.1, started=time.perf_counter() - {spent})
lazy = ("numpy", "explorer.solvers.exact", "explorer.solvers.uneven_seed", "explorer.solvers.uneven_constrained")
print(json.dumps([r.status.value, r.note, all(a == 1 / 2 for lv in r.plan.alphas for row in lv for a in row),
                  [m for m in lazy if m in sys.modules]]))
"""


def test_split_optimal_past_its_limit_returns_the_equal_split_without_starting_a_solver():
    # --split optimal --time-limit 0.1 from the process's start: the start-up has spent the limit, so
    # the even split's exact optimum (a seed) and the joint solver are not started, nor imported
    # (numpy, the exact solver: 0.02-0.1 s past the limit), and the equal-split plan is the answer,
    # feasible, saying so; with the limit not spent the joint solver runs (the probe sees the imports)
    proc = subprocess.run([sys.executable, "-c", SPENT_PROBE.format(spent=0.2)], capture_output=True, text=True,
                          check=True)
    status, note, equal, imported = json.loads(proc.stdout.strip().splitlines()[-1])
    assert status == "feasible" and equal and imported == [], (status, imported)
    assert note.startswith("joint: not run: --time-limit 0.1 s was spent before it") and "the equal-split plan" in note
    proc = subprocess.run([sys.executable, "-c", SPENT_PROBE.format(spent=-60)], capture_output=True, text=True,
                          check=True)
    status, note, _, imported = json.loads(proc.stdout.strip().splitlines()[-1])
    assert "not run" not in note and "numpy" in imported and "explorer.solvers.uneven_constrained" in imported, note


GC_PROBE = """
import gc, sys
collections = []
gc.callbacks.append(lambda phase, info: phase == "stop" and collections.append(info["generation"]))
import explorer.app.cli as cli
print("GC", len(collections), gc.get_threshold() == cli.GC_THRESHOLDS, file=sys.stderr)
sys.argv = ["explore", "list"]
try:
    cli.main()
except SystemExit:
    pass
print("GC", gc.get_freeze_count() > 0, file=sys.stderr)
"""


def test_the_collector_is_set_before_the_imports_and_spares_them():
    # the CLI's imports ran ~15 collections at the default thresholds; a run of its own
    # (argv from the command line) freezes what they built: the collector does not rescan it
    proc = subprocess.run([sys.executable, "-c", GC_PROBE], capture_output=True, text=True, check=True)
    head, tail = [line.split()[1:] for line in proc.stderr.splitlines() if line.startswith("GC ")]
    (count, thresholds), (frozen,) = head, tail
    assert int(count) <= 3 and thresholds == "True" and frozen == "True"


def test_a_planner_run_skips_the_accelerator_array_results():
    # explore on a GPU cluster (the LLM planner) writes its own report (llm_report): the accelerator
    # arrays' typed results, their tables and the evaluator behind them (~20 dataclasses, ~2,000 lines),
    # nor their Problem (core.solution names it in annotations only), nor the modules behind explore's
    # other options (their choices are in core.kinds) or an array's loader are imported (issue 23, item 1: whole planner runs within 2x of ``import numpy``)
    lazy = ("explorer.app.results", "explorer.app.render", "explorer.core.evaluate", "explorer.core.split_costs",
            "explorer.core.problem", "explorer.core.costs", "explorer.core.constraints", "explorer.core.objective",
            "explorer.core.uneven", "explorer.core.paper_accounting", "explorer.core.array", "explorer.frontends.array_yaml")
    for args in (["--model", "gpt3-1.7b", "--array", "dgx-a100"], ["--model", "llama3-8b", "--array", "dgx-h100",
                                                                    "--format", "json"]):
        proc = subprocess.run([sys.executable, "-c", PROBE.format(heavy=lazy), *args], capture_output=True, text=True,
                              check=True)
        assert json.loads(proc.stdout.strip().splitlines()[-1]) == [], args
