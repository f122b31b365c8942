"""Reproduce HyPar's evaluation figures (HPCA 2019) with explorer.api.solve, and print for each
figure a table: paper, ours, ratio (ours / paper).

Every number comes from one solve per point (paper array, batch 256, --solver dp); no sweep
engine is involved. The sweep files under spaces/hypar-2019/ describe the same points.
Run: python bench/reproduce_hypar.py [--figure 6|7|8|11|12|13]

The faithful figures (the paper's axes, units, every series, Figs. 5-13, the paper's torus and
Fig. 13 workloads, a PNG each) are `explore reproduce hypar --figure N`; this script keeps the
tables the README quotes (its Fig. 12 is the equal-bisection torus, its Fig. 13 the ten networks).
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import hypar_paper_data as paper  # noqa: E402

from explorer.api import solve  # noqa: E402

ARRAY, TORUS = "hypar-paper", "hypar-paper-torus"
BIG_MEMORY_GiB = 1e6  # the paper does not model memory


def gmean(xs) -> float:
    xs = list(xs)
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def run(model: str, array: str = ARRAY, levels: int | None = None):
    return solve(model, array, batch=paper.BATCH, levels=levels, solver="dp", memory_GiB=BIG_MEMORY_GiB)


MARKDOWN = False  # --markdown: tables as markdown (docs/reproducing.md)


def table(title: str, rows: list[tuple[str, float, float]], fmt: str = "{:.3f}") -> list[str]:
    if MARKDOWN:
        out = [f"**{title}**", "", "| | paper | ours | ratio |", "|---|---:|---:|---:|"]
        out += [f"| {name} | {fmt.format(p)} | {fmt.format(o)} | {o / p:.3f} |" for name, p, o in rows]
        return out
    out = [title, f"  {'':<22}{'paper':>10}{'ours':>10}{'ratio':>8}"]
    for name, p, o in rows:
        out.append(f"  {name:<22}{fmt.format(p):>10}{fmt.format(o):>10}{o / p:>8.3f}")
    return out


def runs(array: str = ARRAY) -> dict:
    return {name: run(model, array) for name, model in paper.NETWORKS.items()}


def fig6(r: dict) -> list[str]:
    rows = [(n, paper.FIG6[n], r[n].versus(r[n].figures).speedup_over_all_I) for n in paper.NETWORKS]
    rows.append(("gmean", paper.FIG6_GMEAN, gmean(o for _, _, o in rows)))
    mp = gmean(r[n].versus(r[n].baseline("all-II")).speedup_over_all_I for n in paper.NETWORKS)
    rows.append(("model parallel gmean", paper.FIG6_MP_GMEAN, mp))
    return table("Fig. 6: performance over data parallelism (HyPar plan, --solver dp)", rows)


def fig7(r: dict) -> list[str]:
    hy = [r[n].versus(r[n].figures).energy_efficiency_over_all_I for n in paper.NETWORKS]
    mp = [r[n].versus(r[n].baseline("all-II")).energy_efficiency_over_all_I for n in paper.NETWORKS]
    lines = table("Fig. 7: energy efficiency over data parallelism (gmeans; per network: ours only)",
                  [("HyPar gmean", paper.FIG7_GMEAN, gmean(hy)), ("model parallel gmean", paper.FIG7_MP_GMEAN, gmean(mp))])
    lines += ["", "per network (ours): " + ", ".join(f"{n} {x:.2f}" for n, x in zip(paper.NETWORKS, hy))]
    return lines


def wide(title: str, key: str, groups: list[str], rows: list[tuple[str, list[tuple[float, float]]]], fmt: str) -> list[str]:
    """One row per key: paper, ours, ratio for each group."""
    if MARKDOWN:
        head = f"| {key} | " + " | ".join(f"{g} paper | ours | ratio" for g in groups) + " |"
        out = [f"**{title}**", "", head, "|---|" + "---:|---:|---:|" * len(groups)]
        for name, cells in rows:
            out.append(f"| {name} | " + " | ".join(f"{fmt.format(p)} | {fmt.format(o)} | {o / p:.3f}" for p, o in cells) + " |")
        return out
    out = [title, f"  {key:<10}" + "".join(f"{g + ' paper':>24}{'ours':>10}{'ratio':>7}" for g in groups)]
    for name, cells in rows:
        out.append(f"  {name:<10}" + "".join(f"{fmt.format(p):>24}{fmt.format(o):>10}{o / p:>7.3f}" for p, o in cells))
    return out


def post_pool_all_II_GB(model: str) -> float:
    """All-II sized on post-pooling tensors (a diagnostic for the paper's model parallelism):
    8 bytes x (15 x (every non-first layer's input + the last output) + 2 x those inputs)."""
    from explorer.frontends import load_model

    layers = load_model(model).layers
    fin = sum(layer.input_elements(paper.BATCH) for layer in layers[1:])
    return 8 * (15 * (fin + layers[-1].output_elements(paper.BATCH)) + 2 * fin) / 1e9


def fig8(r: dict) -> list[str]:
    rows = []
    for n, model in paper.NETWORKS.items():
        mp, dp, hy = paper.FIG8[n]
        rows.append((n, [(dp, float(r[n].baseline("all-I").traffic_bytes) / 1e9), (hy, float(r[n].figures.traffic_bytes) / 1e9),
                         (mp, float(r[n].baseline("all-II").traffic_bytes) / 1e9), (mp, post_pool_all_II_GB(model))]))
    return wide("Fig. 8: communication per step (GB, both directions); last: all-II on post-pooling sizes",
                "network", ["data parallel", "HyPar", "model parallel", "MP post-pool"], rows, "{:.4g}")


def fig11() -> list[str]:
    rows = []
    for H, n in enumerate(paper.FIG11_ACCELERATORS):
        if H == 0:
            hy = dp = 1.0  # one accelerator: no communication, the reference time
        else:
            r = run("vgg-e", levels=H)
            t1 = float(r.figures.compute_s) * n  # all the FLOPs on one accelerator
            hy, dp = t1 / float(r.figures.step_time_s), t1 / float(r.baseline("all-I").step_time_s)
        rows.append((str(n), [(paper.FIG11_HYPAR[H], hy), (paper.FIG11_DP[H], dp)]))
    return wide("Fig. 11: VGG-E speedup over one accelerator", "accelerators", ["HyPar", "data parallel"], rows, "{:.2f}")


def fig12(r: dict) -> list[str]:
    t = runs(TORUS)
    ht = gmean(r[n].versus(r[n].figures).speedup_over_all_I for n in paper.NETWORKS)
    # the torus's HyPar plan against data parallelism on the H-tree (the paper's normalisation)
    to = gmean(float(r[n].baseline("all-I").step_time_s) / float(t[n].figures.step_time_s) for n in paper.NETWORKS)
    return table("Fig. 12: gmean performance over data parallelism on the H-tree",
                 [("H-tree", paper.FIG12_GMEAN["htree"], ht), ("torus (equal bisection)", paper.FIG12_GMEAN["torus"], to)])


def fig13(r: dict) -> list[str]:
    perf = gmean(float(r[n].baseline("trick").step_time_s) / float(r[n].figures.step_time_s) for n in paper.NETWORKS)
    energy = gmean(float(r[n].baseline("trick").energy_J) / float(r[n].figures.energy_J) for n in paper.NETWORKS)
    return table("Fig. 13: HyPar over the 'one weird trick' (conv I, fc II), gmean over the ten networks",
                 [("performance", paper.FIG13_GMEAN["performance"], perf), ("energy efficiency", paper.FIG13_GMEAN["energy"], energy)])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--figure", choices=["6", "7", "8", "11", "12", "13"], action="append")
    ap.add_argument("--markdown", action="store_true", help="print the tables as markdown (docs/reproducing.md's)")
    args = ap.parse_args()
    global MARKDOWN
    MARKDOWN = args.markdown
    figs = args.figure or ["6", "7", "8", "11", "12", "13"]
    r = runs() if set(figs) - {"11"} else {}
    makers = {"6": lambda: fig6(r), "7": lambda: fig7(r), "8": lambda: fig8(r), "11": fig11,
              "12": lambda: fig12(r), "13": lambda: fig13(r)}
    for f in figs:
        print("\n".join(makers[f]()) + "\n")


if __name__ == "__main__":
    main()
