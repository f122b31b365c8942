import random
import re
import sys

import pytest

from explorer.core.array import ArraySpec, synthetic_array
from explorer.core.names import OPTION_ARGUMENTS
from explorer.core.network import Layer, LayerKind, Network
from explorer.core.partition import Space
from explorer.core.problem import Problem
from explorer.frontends.zoo import zoo_files


@pytest.fixture(autouse=True)
def _close_figures():
    """Figures a test builds in process (``plot.chart_figure`` and the like) are closed after it, so
    that pyplot does not keep them across the suite (its more-than-20-figures warning)."""
    yield
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is not None:
        plt.close("all")

# The numpy paths' threshold these tests were written against: modules whose mid-sized networks (a few
# hundred layers) are meant to take the numpy paths set it explicitly (``numpy_from``), so that they test
# them whatever the shipped default (``thresholds.NUMPY_FROM_LAYERS``) is.
TEST_NUMPY_FROM = 128

# The LLM zoo (specs with a ``transformer:`` block, tests/test_llm_zoo.py) and the rest: the
# suite's every-network sweeps run the rest (an exact solve of llama3-405b takes minutes).
LLM_ZOO = sorted(n for n, p in zoo_files().items() if "\ntransformer:" in p.read_text())
CLASSIC_ZOO = sorted(set(zoo_files()) - set(LLM_ZOO))


def make_array(levels: int, bw=None, dtype: int = 4) -> ArraySpec:
    return synthetic_array(levels, bw, dtype)


def fc(name, din, dout):
    return Layer(name, LayerKind.FC, din, dout)


def conv(name, din, dout, k, s_in, s_out):
    return Layer(name, LayerKind.CONV, din, dout, (k, k), (s_in, s_in), (s_out, s_out))


def problem_of(net: Network, levels: int, space: Space = Space.HYPAR, **kw) -> Problem:
    return Problem(net, make_array(levels), space, **kw)


def random_attention_spec(seed: int, fan_in: bool = False) -> dict:
    """A tiny transformer-like network spec (a dict as the YAML would give), S tokens per sample:
    a first node (an embedding of token ids, or an fc), then Q, K and V (one fused fc, or with
    ``fan_in`` three fc nodes reading the first), an attention node (``heads`` random: none, or
    1 to 8 heads of 1 or 2 channels), and on a chain an fc after it."""
    rng = random.Random(seed)
    heads = rng.choice([0, 1, 2, 3, 4, 4, 6, 8])
    d = max(heads, 1) * rng.choice([1, 2]) if heads else rng.choice([2, 3, 4])
    width = rng.choice([2, 4, 6])
    if rng.random() < 0.5:
        first = {"name": "tok", "kind": "embedding", "vocab": rng.randint(2, 12), "hidden": width, "inputs": []}
    else:
        first = {"name": "x", "kind": "fc", "in_features": rng.randint(1, 8), "out_features": width, "inputs": []}
    att = {"name": "att", "kind": "attention", **({"heads": heads} if heads else {})}
    if fan_in:
        qkv = [{"name": n, "kind": "fc", "in_features": width, "out_features": d, "inputs": [first["name"]]} for n in "qkv"]
        layers = [first, *qkv, {**att, "inputs": ["q", "k", "v"]}]
    else:
        layers = [first, {"name": "qkv", "kind": "fc", "in_features": width, "out_features": 3 * d, "inputs": [first["name"]]},
                  {**att, "inputs": ["qkv"]},
                  {"name": "o", "kind": "fc", "in_features": d, "out_features": rng.choice([1, 2, 4]), "inputs": ["att"]}]
    return {"version": 1, "name": f"att-{seed}", "batch": rng.choice([1, 2, 4]), "sequence": rng.choice([1, 2, 3, 8]),
            "layers": layers}


@pytest.fixture
def two_layer() -> Network:
    # A: fc 4 -> 8, B: fc 8 -> 2, batch 2.
    # A(F_A) = 2*4 = 8, A(W_A) = 4*8 = 32, A(F_out A) = 2*8 = 16
    # A(F_B) = 2*8 = 16, A(W_B) = 8*2 = 16, A(F_out B) = 2*2 = 4
    return Network.chain("two", 2, [fc("A", 4, 8), fc("B", 8, 2)])


@pytest.fixture
def three_layer() -> Network:
    # batch 4
    # L0 conv 2->4, k3, 4x4 -> 4x4: A(F)=4*2*16=128, A(W)=2*4*9=72, A(Fout)=4*4*16=256
    # L1 conv 4->8, k1, 2x2 -> 2x2: A(F)=4*4*4=64,   A(W)=4*8=32,   A(Fout)=4*8*4=128
    # L2 fc 32->10:                 A(F)=4*32=128,   A(W)=320,      A(Fout)=4*10=40
    return Network.chain("three", 4, [conv("L0", 2, 4, 3, 4, 4), conv("L1", 4, 8, 1, 2, 2), fc("L2", 32, 10)])


def run_cli(args, capsys):
    """Run ``explore`` in-process; returns (exit status, stdout, stderr)."""
    from explorer.app.cli import main

    with pytest.raises(SystemExit) as ex:
        main(args)
    out, err = capsys.readouterr()
    return ex.value.code, out, err


def sweep_process(spec, out, *more: str):
    """``explore sweep SPEC --out OUT MORE`` in a process of its own, in its own process group with
    SIGINT at its default (as a terminal's Ctrl-C finds it), stderr piped as text: the sweep the
    Ctrl-C tests interrupt (``os.killpg(p.pid, signal.SIGINT)``)."""
    import signal
    import subprocess
    import sys

    cmd = [sys.executable, "-c", "from explorer.app.cli import main; main()", "sweep", str(spec), "--out", str(out), *more]
    return subprocess.Popen(cmd, start_new_session=True, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def assert_group_ends(p, seconds: float, what: str) -> None:
    """The process group of ``p`` (a ``sweep_process``) is gone within ``seconds``: no worker left behind
    after ``what``; else it is killed and the test fails."""
    import os
    import signal
    import time

    for _ in range(int(seconds * 10)):
        try:
            os.killpg(p.pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    os.killpg(p.pid, signal.SIGKILL)
    raise AssertionError(f"workers still running after {what}")


def numpy_from(monkeypatch, layers: int = TEST_NUMPY_FROM) -> None:
    """Networks of ``layers`` layers or more take the numpy paths (tables, evaluate, the DP's chain scan);
    the evaluator's per-network memo is fresh, so no network keeps facts computed at another threshold."""
    import explorer.core.evaluate as E
    from explorer.core import thresholds
    from explorer.core.network_memo import NetworkMemo

    monkeypatch.setattr(thresholds, "NUMPY_FROM_LAYERS", layers)
    monkeypatch.setattr(E, "_FACTS", NetworkMemo(E._FACTS.size))


def arguments_for_options(text: str) -> str:
    """``text`` with explore's option names replaced by the API's arguments ('--split search' ->
    'split search'): the CLI's output as the API's, to compare the two (the library names its
    inputs for the running front end when it makes a message, ``core.names``)."""
    for option, key in OPTION_ARGUMENTS.items():
        text = re.sub(rf"(?<![\w-]){re.escape(option)}(?![\w-])", key, text)
    return text


# A two-level array of kinds (one v2, three v3), the trials' mix-4.yaml: its halves are not one kind each
MIX4 = """version: 1
name: mix-4
levels: 2
dtype_bytes: 2
kinds:
  v2: {peak_TFLOPS: 45, memory_GiB: 16}
  v3: {peak_TFLOPS: 123, memory_GiB: 32}
accelerators: [v2, v3, v3, v3]
link_bandwidth_GBps: [70, 50]
"""


@pytest.fixture
def mix4(tmp_path):
    path = tmp_path / "mix-4.yaml"
    path.write_text(MIX4)
    return str(path)
