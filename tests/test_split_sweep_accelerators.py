"""A split sweep's rows have the `accelerators` column plain rows have (a sweep over array sizes
plots against it), and a mix point is reproduced on the command line by the array file
docs/sweeps.md shows (new-user trial 7)."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

from explorer.api import sweep

from .conftest import run_cli

DOC = Path(__file__).resolve().parent.parent / "docs" / "sweeps.md"


def test_split_rows_name_their_accelerators_and_the_documented_array_file_reproduces_one(tmp_path, capsys):
    spec = {"version": 1, "name": "m", "grid": {"model": ["alexnet"], "split": ["search"]},
            "fixed": {"array": "tpu-mix-16", "levels": 5, "accelerators_v3": 4, "space": "accpar"}}
    list(sweep(spec, out=tmp_path / "o", workers=1))
    with open(tmp_path / "o" / "results.csv", newline="") as f:
        reader = csv.DictReader(f)
        cols, rows = reader.fieldnames, list(reader)
    assert cols.index("accelerators") == cols.index("status") + 1
    assert rows[0]["accelerators"] == "32"
    text = DOC.read_text()
    yaml_text = re.search(r"```yaml\n(version: 1\nname: tpu-mix-32-v3x4\n.*?)```", text, re.S).group(1)
    (tmp_path / "mix.yaml").write_text(yaml_text)
    code, out, _ = run_cli(["--model", "alexnet", "--array", str(tmp_path / "mix.yaml"), "--split", "search",
                            "--space", "accpar", "--format", "json"], capsys)
    assert code == 0
    assert json.loads(out)["step_time_s"] == float(rows[0]["step_time_s"]) == 0.0031960639310152643
    assert "(the same step time as the row's, 0.0031960639310152643 s, checked)" in text
