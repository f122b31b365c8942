"""Does ``--time-limit`` bound the whole process of ``explore check`` and the LLM planner? (trial 10,
items 1 and 5; issue 23, item 2: within 10%, start-up included.)

Each case runs as a process ``--repeat`` times; printed: the limit, the whole process's wall time
(median and range), its ratio to the limit, and the statuses seen (the planner's JSON ``status``;
check: ``agree`` and each level's method). ``--before DIR`` also runs ``python -m explorer.app.cli``
with ``PYTHONPATH=DIR`` (a tree whose ``explorer`` package holds an older commit, its ``solvers``,
``models`` and ``spaces`` linked inside it) in the same rounds, one run after the other.

    python bench/bench_check_limits.py --repeat 3
    python bench/bench_check_limits.py --groups llm --repeat 5 --before /tmp/old-tree
    python bench/bench_check_limits.py --groups default --repeat 3 --before /tmp/old-tree

The ``default`` group (trial finding 1) runs ``check`` on exporter-style ONNX transformers
(tests/onnx_nets.hf_bert, 2 and 12 layers, BERT-base sizes, written to a temporary folder) at
``--levels 10`` on array-1024 with no ``--time-limit`` (limit shown ``-``, its ratio to the default's
60 s) and with ``--time-limit 60``: a default must never be slower than the same limit given.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from timing import add_before_options, explore_runs

H10 = ["--array", "array-1024", "--space", "accpar"]
LLAMA = ["--model", "llama3-405b", "--array", "dgx-h100", "--gpus", "16384", "--batch", "2048", "--seq", "8192"]
GPT3 = ["--model", "gpt3-175b", "--array", "dgx-h100", "--gpus", "1024", "--batch", "1536"]
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TX = ["--levels", "10", "--array", "array-1024", "--batch", "1024", "--seq", "512"]
DEFAULT_LIMIT = 60.0  # explorer.core.kinds.SOLVE_TIME_LIMIT (a --before tree's may differ)
GROUPS = {
    "check": [("check resnet50 H10", 2.0, ["check", "--model", "resnet50"] + H10),
              ("check resnet50 H10", 5.0, ["check", "--model", "resnet50"] + H10)],
    "llm": [("llama3-405b 16384", 1.0, LLAMA), ("llama3-405b 16384", 3.0, LLAMA),
            ("gpt3-175b 1024", 0.5, GPT3), ("check gpt3-175b 1024", 2.0, ["check"] + GPT3)],
    "default": [(f"check tx{n} H10", limit, ["check", "--model", f"{{tmp}}/tx{n}.onnx"] + TX)
                for n in (2, 12) for limit in (None, 60.0)],
}


def transformers(folder: str) -> None:
    """tx2.onnx and tx12.onnx in ``folder``: BertModel as the TorchScript exporter writes it."""
    sys.path.insert(0, ROOT)
    import onnx

    from tests.onnx_nets import hf_bert

    for n in (2, 12):
        onnx.save(hf_bert(layers=n, hidden=768, heads=12, ffn=3072, vocab=30522, max_pos=512), f"{folder}/tx{n}.onnx")


def status_of(out: dict) -> str:
    if "agree" in out and "levels" in out:
        methods = sorted({lv["method"] for lv in out["levels"]})
        joint = " ".join(f"{n}:{s['status']}" for n, s in out.get("solvers", {}).items())
        return f"agree={out['agree']} levels:{'/'.join(methods)} {joint}"
    if "agree" in out:
        return f"agree={out['agree']}"
    return str(out.get("status", "?"))


def run_once(cmd: list[str], env: dict | None, args: list[str], limit: float | None) -> tuple[float, str]:
    full = cmd + args + ([] if limit is None else ["--time-limit", str(limit)]) + ["--format", "json"]
    t0 = time.perf_counter()
    # from a temporary folder: run from a checkout, ``-m`` would put its ``explorer`` before PYTHONPATH's
    proc = subprocess.run(full, capture_output=True, text=True, env=env, cwd=tempfile.gettempdir())
    wall = time.perf_counter() - t0
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(full)} exited {proc.returncode}: {proc.stderr.strip()[-400:]}")
    return wall, status_of(json.loads(proc.stdout))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--groups", nargs="+", choices=sorted(GROUPS), default=sorted(GROUPS))
    add_before_options(ap)
    args = ap.parse_args()
    runs = explore_runs(args.before)
    tmp = tempfile.mkdtemp(prefix="bench-check-limits-")
    if "default" in args.groups:
        transformers(tmp)
    print(f"load before: {os.getloadavg()[0]:.1f}")
    print(f"{'case':<24}{'limit':>6}  {'run':<7}{'median':>8}{'range':>16}{'ratio':>7}  statuses")
    for group in args.groups:
        for label, limit, case in GROUPS[group]:
            seen: dict[str, tuple[list[float], set[str]]] = {name: ([], set()) for name, _, _ in runs}
            for _ in range(args.repeat):
                for name, cmd, env in runs:
                    wall, status = run_once(cmd, env, [a.format(tmp=tmp) for a in case], limit)
                    seen[name][0].append(wall)
                    seen[name][1].add(status)
            for name, (walls, statuses) in seen.items():
                med = statistics.median(walls)
                shown = "-" if limit is None else f"{limit:g}"
                print(f"{label:<24}{shown:>6}  {name:<7}{med:>7.2f}s  {min(walls):>6.2f}-{max(walls):<6.2f}s"
                      f"{med / (limit or DEFAULT_LIMIT):>6.2f}x  {'; '.join(sorted(statuses))}")
    print(f"load after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
