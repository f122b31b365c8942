"""The cost of checking an ONNX file's declared shapes (value_info, graph outputs) against shape
inference run without them (explorer.frontends.onnx_checks.declared_shape_problem): the import
of an exporter-style 12-layer BERT (every value_info written) with the check and with it
replaced by a no-op, interleaved in one process, medians.

    python bench/bench_onnx_declared.py [--rounds 7]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import onnx  # noqa: E402
from onnx import shape_inference  # noqa: E402

from explorer.frontends import onnx as frontend  # noqa: E402
from tests.onnx_nets import hf_bert  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=7)
    rounds = ap.parse_args().rounds
    model = shape_inference.infer_shapes(hf_bert(layers=12, hidden=256, heads=4, ffn=1024, vocab=1000, max_pos=128))
    path = Path(tempfile.mkdtemp()) / "bert12.onnx"
    onnx.save(model, path)
    real = frontend.declared_shape_problem
    times: dict[bool, list[float]] = {True: [], False: []}
    for _ in range(rounds):
        for check in (True, False):
            frontend.declared_shape_problem = real if check else (lambda m: None)
            t = time.perf_counter()
            frontend.load_onnx(path, batch=8, sequence=128)
            times[check].append(time.perf_counter() - t)
    frontend.declared_shape_problem = real
    on, off = statistics.median(times[True]), statistics.median(times[False])
    print(f"12-layer BERT, {len(model.graph.value_info)} value_info, {rounds} rounds interleaved")
    print("| import | without the check | with it | ratio |")
    print("|---|---|---|---|")
    print(f"| medians | {off * 1e3:.1f} ms | {on * 1e3:.1f} ms | {on / off:.3f}x |")


if __name__ == "__main__":
    main()
