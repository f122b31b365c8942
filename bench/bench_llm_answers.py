"""The LLM planner's answers, before and after a change: every LLM zoo model on each GPU cluster
(and a few --gpus / --batch variants), ``explore ... --format json`` with no time limit in reach,
compared field by field apart from the timings (``search.wall_s``).

    python bench/bench_llm_answers.py --save /tmp/answers-main --explore /tmp/base/.venv/bin/explore
    python bench/bench_llm_answers.py --against /tmp/answers-main        # this checkout's explore
    python bench/bench_llm_answers.py --quick --against DIR              # the smaller cases only

Prints one line per case (same / DIFFERS with the first differing fields, and both wall times)
and exits 1 when any case differs. Cases that a model's size makes slow (minutes) are skipped
by ``--quick``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ARRAYS = ("dgx-a100", "dgx-h100")
VARIANTS = (  # (model, array, extra options): sizes and batches other than the defaults
    ("gpt3-1.7b", "dgx-a100", ("--gpus", "64")),
    ("gpt3-1.7b", "dgx-h100", ("--gpus", "256", "--batch", "1024")),
    ("llama3-8b", "dgx-a100", ("--gpus", "128", "--batch", "512")),
    ("gpt3-175b", "dgx-a100", ("--gpus", "1024", "--batch", "1536")),
    ("mixtral-8x7b", "dgx-h100", ("--gpus", "256", "--batch", "512")),
    ("gpt3-18.4b", "dgx-h100", ("--gpus", "512", "--memory", "40")),
    ("llama3-8b", "dgx-h100", ("--degrees", "t=8,p=2")),  # part of the space fixed
    ("gpt3-1.7b", "dgx-a100", ("--recompute", "full", "--zero", "1")),
    ("gpt3-1.7b", "dgx-a100", ("--layout", "megatron", "--degrees", "t=8,p=2")),  # a given layout's variants
)
TIMINGS = {("search", "wall_s"), ("search", "total_wall_s")}
TIME_LIMIT = "3600"


def llm_models() -> list[str]:
    """The zoo's models the planner takes (``explore list`` marks them 'GPU clusters')."""
    out = subprocess.run([sys.executable, "-m", "explorer.app.cli", "list"], capture_output=True, text=True,
                         check=True).stdout
    return sorted(line.split()[0] for line in out.splitlines() if "GPU clusters" in line)


def cases(quick: bool) -> list[tuple[str, tuple[str, ...]]]:
    """(name, explore arguments) of every case."""
    out = []
    for model in llm_models():
        for array in ARRAYS:
            out.append((model, array, ()))
    out += list(VARIANTS)
    named = [(f"{m}@{a}" + "".join(x if x.startswith("--") else f"={x}" for x in extra).replace(",", "+"),
              ("--model", m, "--array", a, *extra)) for m, a, extra in out]
    return [c for c in named if not quick or not _slow(c[0])]


def _slow(name: str) -> bool:
    return any(big in name for big in ("gpt3-1t", "gpt3-529", "gpt3-310", "llama3-405b", "mixtral-8x22b"))


def run(explore: list[str], args: tuple[str, ...]) -> tuple[dict, float]:
    t = time.perf_counter()
    p = subprocess.run([*explore, *args, "--format", "json", "--time-limit", TIME_LIMIT], capture_output=True,
                       text=True)
    wall = time.perf_counter() - t
    if p.returncode not in (0, 1):
        return {"exit": p.returncode, "stderr": p.stderr.strip()[-300:]}, wall
    return json.loads(p.stdout), wall


def strip_timings(doc: dict) -> dict:
    doc = json.loads(json.dumps(doc))
    for path in TIMINGS:
        node = doc
        for key in path[:-1]:
            node = node.get(key, {}) if isinstance(node, dict) else {}
        if isinstance(node, dict):
            node.pop(path[-1], None)
    return doc


def differences(a, b, path: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b)):
            out += differences(a.get(k, "<missing>"), b.get(k, "<missing>"), f"{path}.{k}")
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in differences(x, y, f"{path}[{i}]")]
    return [] if a == b else [f"{path}: {a!r} -> {b!r}"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--explore", default=None, help="the explore script to run (default: this checkout's)")
    ap.add_argument("--save", type=Path, help="write each case's JSON into this directory")
    ap.add_argument("--against", type=Path, help="compare with the JSON saved in this directory")
    ap.add_argument("--quick", action="store_true", help="skip the largest models")
    args = ap.parse_args()
    explore = [args.explore] if args.explore else [sys.executable, "-m", "explorer.app.cli"]
    if args.save:
        args.save.mkdir(parents=True, exist_ok=True)
    differ = 0
    for name, argv in cases(args.quick):
        doc, wall = run(explore, argv)
        line = f"{name:45s} {wall:7.2f} s  status {doc.get('status', doc.get('exit'))}"
        if args.save:
            (args.save / f"{name}.json").write_text(json.dumps({"doc": doc, "wall": wall}), encoding="utf-8")
        if args.against:
            ref_path = args.against / f"{name}.json"
            if not ref_path.exists():
                line += "  (no reference)"
            else:
                ref = json.loads(ref_path.read_text(encoding="utf-8"))
                diffs = differences(strip_timings(ref["doc"]), strip_timings(doc))
                line += f"  before {ref['wall']:7.2f} s  " + ("same" if not diffs else "DIFFERS " + "; ".join(diffs[:4]))
                differ += bool(diffs)
        print(line, flush=True)
    if args.against:
        print(f"{differ} case(s) differ")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
