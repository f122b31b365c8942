"""AccPar's uneven split against HyPar's plan with the PROPORTIONAL split (not the equal one).

spaces/accpar-mix.yaml reports speedup_over_hypar_equal: AccPar (split=search) over HyPar's plan
with an equal split, whose step waits for the slowest chips; most of that speedup is the equal
split's penalty, not AccPar's partitioning. This script divides the step times of HyPar's plan
with the proportional split (spaces/accpar-mix/hypar-proportional.yaml) by AccPar's, per network
and mix, prints the table and draws the figure.

Run:
  explore sweep spaces/accpar-mix.yaml --out runs/accpar-mix
  explore sweep spaces/accpar-mix/hypar-proportional.yaml --out runs/accpar-mix-hypar-proportional
  python bench/plot_accpar_mix_fair.py runs/accpar-mix runs/accpar-mix-hypar-proportional docs/sweeps/accpar-mix-vs-hypar-proportional.png
"""

from __future__ import annotations

import csv
import sys
from fractions import Fraction
from pathlib import Path


def rows(folder: str, **where) -> dict[tuple[str, int], dict]:
    with open(Path(folder) / "results.csv") as f:
        return {(r["model"], int(r["accelerators_v3"])): r for r in csv.DictReader(f)
                if all(r[k] == v for k, v in where.items())}


def main(accpar_dir: str, hypar_dir: str, out: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    acc, hyp = rows(accpar_dir, split="search"), rows(hypar_dir)
    models = sorted({m for m, _ in acc}, key=lambda m: list(dict.fromkeys(m for m, _ in acc)).index(m))
    fig, ax = plt.subplots(figsize=(8, 4.5))
    print(f"{'model':<10}{'v3':>4}{'over HyPar equal':>18}{'over HyPar proportional':>25}")
    for m in models:
        ks = sorted(k for k in acc if k[0] == m)
        fair = [float(Fraction(hyp[k]["step_time_s"]) / Fraction(acc[k]["step_time_s"])) for k in ks]
        equal = [float(acc[k]["speedup_over_hypar_equal"]) for k in ks]
        line, = ax.plot([k[1] for k in ks], fair, marker="o", label=f"{m}: over HyPar, proportional split")
        ax.plot([k[1] for k in ks], equal, ls=":", color=line.get_color(), label=f"{m}: over HyPar, equal split")
        for k, e, r in zip(ks, equal, fair):
            print(f"{m:<10}{k[1]:>4}{e:>18.3f}{r:>25.3f}")
    ax.set_xlabel("TPU-v3 chips of 16 (the rest TPU-v2)")
    ax.set_ylabel("speedup of AccPar (uneven split, search)")
    ax.set_title("AccPar's speedup over HyPar's plan: with an equal split (dotted) the baseline waits for\n"
                 "the slowest chips; with the proportional split (solid) that penalty is gone", fontsize=9)
    ax.axhline(1, color="black", lw=0.8)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=6, ncol=2)
    from explorer.app.sweep import layout

    layout.finish(fig)  # a legend over the lines moves beside the axes
    fig.savefig(out, dpi=90)


if __name__ == "__main__":
    main(*sys.argv[1:4])
