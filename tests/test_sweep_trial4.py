"""Trial 4's sweep and plot findings: ONNX exports with a symbolic batch are swept with the point's
batch, plans that break a limit are marked in plots, a failed merge writes nothing, duplicate points
are refused, ``--out ''`` is refused, many series and non-Latin names are drawn legibly."""

from __future__ import annotations

from pathlib import Path

import pytest

from explorer.api import sweep
from explorer.core.errors import SpecError

from .conftest import run_cli

onnx = pytest.importorskip("onnx")


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


@pytest.fixture
def exports(tmp_path):
    """A CNN and a BERT exported as torch does: symbolic batch (and sequence) axes."""
    from .onnx_nets import hf_bert, residual_net

    onnx.save(residual_net("batch_size"), tmp_path / "cnn.onnx")
    onnx.save(hf_bert(), tmp_path / "bert.onnx")
    return tmp_path


@pytest.mark.parametrize("body", [
    "grid: {model: [cnn.onnx], levels: [1, 2]}\nfixed: {batch: 8}\n",
    "grid: {model: [cnn.onnx], levels: [1], batch: [8, 16]}\n",
    "grid: {model: [bert.onnx], levels: [1], seq: [8, 16]}\nfixed: {batch: 4}\n",
    "grid: {model: [lenet-c], levels: [1]}\npoints: [{model: bert.onnx, batch: 2, seq: 8}]\n",
])
def test_a_symbolic_batch_is_filled_by_the_sweeps_batch(exports, body, capsys):
    f = write(exports / "s.yaml", "version: 1\n" + body)
    code, out, err = run_cli(["sweep", str(f), "--out", str(exports / "o"), "--workers", "1"], capsys)
    assert code == 0, err
    rows = (exports / "o" / "results.csv").read_text().splitlines()[1:]
    assert rows and all(",level-optimal," in r for r in rows)
    assert all(r["status"] == "level-optimal" for r in sweep(f))  # the API as the CLI


@pytest.mark.parametrize("body,message", [
    ("grid: {model: [cnn.onnx], levels: [1]}\n",
     "grid.model[0]: {d}/cnn.onnx: input 'x' has a symbolic batch dimension 'batch_size': set batch in fixed or grid"),
    ("grid: {model: [cnn.onnx], levels: [1]}\npoints: [{model: cnn.onnx, batch: 4}]\n",
     "grid.model[0]: {d}/cnn.onnx: input 'x' has a symbolic batch dimension 'batch_size': set batch in fixed or grid"),
    ("grid: {model: [bert.onnx], levels: [1], seq: [8, 16]}\n",
     "grid.model[0] with grid.seq[0]: {d}/bert.onnx: input 'input_ids' has a symbolic batch dimension 'batch': "
     "set batch in fixed or grid"),
    ("grid: {model: [bert.onnx], levels: [1]}\nfixed: {batch: 2}\n", "symbolic sequence dimension 'sequence' (axis 1): "
                                                                     "set seq in fixed or grid"),
])
def test_a_sweep_without_batch_names_its_keys_not_explores_flags(exports, body, message, capsys):
    f = write(exports / "s.yaml", "version: 1\n" + body)
    code, _, err = run_cli(["sweep", str(f), "--out", str(exports / "o")], capsys)
    assert code == 2 and err.count("\n") == 1 and message.format(d=exports) in err, err
    assert "--batch" not in err and "--seq" not in err
    with pytest.raises(SpecError, match="set (batch|seq) in fixed or grid"):
        sweep(f)
