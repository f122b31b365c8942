"""The joint uneven-split solver reading the one integer cost table (``core.split_costs``) against
the same solver at a baseline commit that built its own Fraction terms (issue 20, item 1), in the
same process.

For each network on ``tpu-mix-16`` (accpar space, alpha grid 1/16 plus the proportional ratio,
10 s limit): ``split_run(..., Split.OPTIMAL)`` as ``explore split --split optimal`` runs it, once
with today's ``solvers.uneven_joint`` and once with the baseline's (``--baseline``, default
b6421a3: the solver's modules loaded from git into a package of this process and patched in);
the joint solver's own wall seconds of each (best of ``--repeat``), its phases (tables, starts,
bound, plans, beam, labels), the ratio, and whether the answers are the same (status, step time,
bound, plan).

    python bench/bench_joint_table.py
    python bench/bench_joint_table.py --networks alexnet,vgg-e,resnet50 --repeat 3
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import subprocess
import sys
import tempfile
from pathlib import Path

from explorer.app.split import Split, split_run
from explorer.core.partition import Space
from explorer.frontends import load_array, load_model
import explorer.solvers.uneven_joint as current
import explorer.solvers.uneven_constrained as route  # split_run reaches the joint solver through it

ROOT = Path(__file__).resolve().parent.parent
MODULES = ("uneven_sp", "joint_columns", "joint_blocks", "joint_labels", "joint_close_graph", "uneven_joint")
NETWORKS = ("lenet-c", "alexnet", "vgg-a", "resnet18", "vgg-e", "resnet50")


def baseline(rev: str):
    """The joint solver's modules at ``rev`` as package ``baseline_joint`` (they import explorer.core
    and each other only); its ``uneven_joint`` module."""
    tmp = Path(tempfile.mkdtemp(prefix="bench_joint_"))
    pkg = tmp / "baseline_joint"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    for name in MODULES:
        src = _source(rev, name)
        if src is None and name == "joint_labels":  # before its rename
            src = _source(rev, "joint_close_chain")
        (pkg / f"{name}.py").write_text(src.replace(".joint_close_chain import", ".joint_labels import"))
    sys.path.insert(0, str(tmp))
    return importlib.import_module("baseline_joint.uneven_joint")


def _source(rev: str, name: str) -> str | None:
    r = subprocess.run(["git", "show", f"{rev}:solvers/{name}.py"], cwd=ROOT, capture_output=True, text=True)
    return r.stdout if r.returncode == 0 else None


def run(mod, net, arr, repeat: int):
    """The best of ``repeat`` runs of ``split_run`` with ``mod.joint_uneven`` patched in: (report,
    the joint solver's wall seconds, its phases)."""
    saved = route.joint_uneven
    got = []
    try:
        route.joint_uneven = _recording(mod.joint_uneven, got)
        best = None
        for _ in range(repeat):
            rep = split_run(net, arr, Space.ACCPAR, Split.OPTIMAL)
            if best is None or rep.solver_wall_s < best[1]:
                best = (rep, rep.solver_wall_s, got[-1].phases)
        return best
    finally:
        route.joint_uneven = saved


def _recording(f, got: list):
    """``f`` recording its answers; a baseline without ``rules`` (before the joint solver took caps and
    memory) is called without them (these runs have no limit that binds)."""
    takes_rules = "rules" in inspect.signature(f).parameters

    def wrapped(*args, **kw):
        sol = f(*args, **(kw if takes_rules else {k: v for k, v in kw.items() if k != "rules"}))
        got.append(sol)
        return sol
    return wrapped


def same(a, b) -> bool:
    return (a.status, a.step_time_s, a.bound_s, a.plan) == (b.status, b.step_time_s, b.bound_s, b.plan)


def phases(ph) -> str:
    return " ".join(f"{k} {v:.2f}" for k, v in ph)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", default="b6421a3")
    ap.add_argument("--networks", default=",".join(NETWORKS))
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    old = baseline(args.baseline)
    arr = load_array("tpu-mix-16")
    print(f"tpu-mix-16, accpar, alpha grid 1/16, 10 s limit; baseline {args.baseline} vs this tree; "
          f"joint solver wall seconds (best of {args.repeat})")
    print("| network | status | step time ms | baseline s | table s | table/baseline | same answer | baseline phases "
          "| table phases |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in args.networks.split(","):
        net = load_model(name)
        rb, tb, pb = run(old, net, arr, args.repeat)
        rn, tn, pn = run(current, net, arr, args.repeat)
        print(f"| {name} | {rn.status.value} | {float(rn.step_time_s) * 1e3:.6g} | {tb:.2f} | {tn:.2f} | {tn / tb:.2f} | "
              f"{'yes' if same(rb, rn) else 'NO'} | {phases(pb)} | {phases(pn)} |", flush=True)


if __name__ == "__main__":
    main()
