"""The hierarchical DP in process against the authors' C++ ``h_partition`` (AccPar), same nets, same answers.

The C++ is the published AccPar program (github.com/linghaosong/AccPar, MIT licence); it is not
part of this repository. Give a checkout with ``--accpar DIR``: its ``src/accpar.cpp`` and
``src/helper.cpp`` are compiled (g++ -O3, as its Makefile) with a small timing harness written
here, which reads a network in the program's own text format, runs ``h_partition`` R times and
prints the median and best time per call with the partitions and per-level costs of the last call.

Nets: the program's AlexNet and VGG-11 (its ``networks/`` files, batch 512, 7 levels, as
``tests/test_reference_program.py``) and seeded random conv/fc chains of 1,000 and 10,000 layers
at 10 levels, written in both formats. Per net and space (HyPar: 2 types, AccPar: 3), the
median of R calls (R = ``--repeat`` on AlexNet/VGG-11, fewer on the long chains), by wall clock
or, with ``--clock cpu``, by each process's CPU time (``CLOCK_PROCESS_CPUTIME_ID`` in the C++,
``time.process_time`` here: on a machine shared with other jobs, what each call itself used):

- ``c++``: one ``h_partition`` call (it copies the layers and runs the per-level DP);
- ``ours whole``: ``Problem(...)`` from a built ``Network`` and ``hierarchical_dp`` (the cost
  tables built inside, as a fresh problem does; chains under 4,096 layers build none (``costs.CHAIN_SIZES_BELOW``): the DP
  computes each level's amounts as it goes, ``costs.chain_sizes``);
- ``ratio``: ours whole / c++ (medians), ``best``: the same of the best calls;
- ``ours dp``: ``hierarchical_dp`` again on the same problem (tables already built where used);
- ``same``: every level's partition equal and every c_h equal (the C++ sums doubles: equal
  within 1e-12 relative; ``exact`` when every double is an integer equal to ours).

    python bench/bench_hpartition.py --accpar ~/src/AccPar            # median of 200
    python bench/bench_hpartition.py --accpar ~/src/AccPar --quick    # no 10,000-layer chain
    python bench/bench_hpartition.py --accpar ~/src/AccPar --clock cpu  # CPU time on both sides

Without a checkout the script says so and times our side alone.
"""

from __future__ import annotations

import argparse
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from explorer.core.array import synthetic_array
from explorer.core.network import Layer, LayerKind, Network
from explorer.core.partition import Space
from explorer.core.problem import Problem
from explorer.solvers.dp import hierarchical_dp

HARNESS = r"""
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <vector>
#include "accpar.h"
#include "helper.h"

static double now(bool cpu) {  // seconds: the process's CPU time, or a steady wall clock
    if (cpu) {
        timespec ts;
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
        return ts.tv_sec + 1e-9 * ts.tv_nsec;
    }
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

int main(int argc, char ** argv) {
    // file, batch, levels, types, repeats, [cpu]
    Layer * layers = NULL; int n = 0;
    parser(argv[1], atoi(argv[2]), layers, n);
    int H = atoi(argv[3]), K = atoi(argv[4]), R = atoi(argv[5]);
    bool cpu = argc > 6 && argv[6][0] == 'c';
    int ** parts = new int*[H];
    for (int h = 0; h < H; ++h) parts[h] = new int[n];
    double * cost = new double[H];
    std::vector<double> times;
    for (int r = 0; r < R; ++r) {
        double t0 = now(cpu);
        h_partition(H, n, layers, parts, cost, K);
        times.push_back(now(cpu) - t0);
    }
    std::sort(times.begin(), times.end());
    printf("%.9f %.9f\n", times[R / 2], times[0]);
    for (int h = 0; h < H; ++h) {
        printf("%.17g ", cost[h]);
        for (int l = 0; l < n; ++l) printf("%d", parts[h][l]);
        printf("\n");
    }
    return 0;
}
"""

# name, kind, in_ch, in_h, in_w, kernel, out_ch, out_h, out_w (the reference test's rows)
ALEXNET = [
    ("conv1", "CONV", 3, 224, 224, 11, 96, 55, 55), ("conv2", "CONV", 96, 55, 55, 5, 256, 27, 27),
    ("conv3", "CONV", 256, 27, 27, 3, 384, 13, 13), ("conv4", "CONV", 384, 13, 13, 3, 384, 13, 13),
    ("conv5", "CONV", 384, 13, 13, 3, 256, 6, 6), ("fc1", "FC", 9216, 1, 1, 1, 4096, 1, 1),
    ("fc2", "FC", 4096, 1, 1, 1, 4096, 1, 1), ("fc3", "FC", 4096, 1, 1, 1, 1000, 1, 1),
]
VGG11 = [
    ("conv1", "CONV", 3, 224, 224, 3, 64, 112, 112), ("conv2", "CONV", 64, 112, 112, 3, 128, 56, 56),
    ("conv31", "CONV", 128, 56, 56, 3, 256, 56, 56), ("conv32", "CONV", 256, 56, 56, 3, 256, 28, 28),
    ("conv41", "CONV", 256, 28, 28, 3, 512, 28, 28), ("conv42", "CONV", 512, 28, 28, 3, 512, 14, 14),
    ("conv51", "CONV", 512, 14, 14, 3, 512, 14, 14), ("conv52", "CONV", 512, 14, 14, 3, 512, 7, 7),
    ("fc1", "FC", 25088, 1, 1, 1, 4096, 1, 1), ("fc2", "FC", 4096, 1, 1, 1, 4096, 1, 1),
    ("fc3", "FC", 4096, 1, 1, 1, 1000, 1, 1),
]


def random_chain(seed: int, layers: int) -> list[tuple]:
    """A chain with consistent shapes (``bench_whole_runs.chain_spec``'s recipe): convolutions keep
    or halve the spatial size; at size 1, fc layers may follow. Never 18, 34 or 50 layers (the
    C++ treats those counts as ResNets)."""
    assert layers not in (18, 34, 50)
    rng = random.Random(seed)
    rows, ch, size = [], rng.randint(1, 16), 16
    for i in range(layers):
        dout = rng.randint(1, 64)
        if size == 1 and rng.random() < 0.5:
            rows.append((f"fc{i}", "FC", ch, 1, 1, 1, 4 * dout, 1, 1))
            ch = 4 * dout
            continue
        out = size // 2 if size > 1 and rng.random() < 0.1 else size
        k = rng.choice([1, 3, 5]) if size > 1 else 1
        rows.append((f"conv{i}", "CONV", ch, size, size, k, dout, out, out))
        ch, size = dout, out
    return rows


def network(name: str, rows, batch: int) -> Network:
    layers = [Layer(n, LayerKind.FC if k == "FC" else LayerKind.CONV, ci, co, (ks, ks), (hi, wi), (ho, wo))
              for n, k, ci, hi, wi, ks, co, ho, wo in rows]
    return Network.chain(name, batch, layers)


def program_text(rows) -> str:
    """The network in the C++ program's own format (``networks/Alexnet.txt``)."""
    out = [f"num_layers {len(rows)}"]
    for n, k, ci, hi, wi, ks, co, ho, wo in rows:
        out.append(f"{n} {k}")
        if k == "FC":
            out += [f"in_ch {ci}", f"out_ch {co}"]
        else:
            out += [f"in_ch {ci}", f"in_fmap_h {hi}", f"in_fmap_w {wi}", f"kernel {ks}", f"out_ch {co}",
                    f"out_fmap_h {ho}", f"out_fmap_w {wo}", "pool 1"]
    return "\n".join(out) + "\n"


def build_harness(accpar: Path, work: Path) -> Path | None:
    src = accpar / "src"
    if not (src / "accpar.cpp").exists():
        return None
    (work / "harness.cpp").write_text(HARNESS, encoding="utf-8")
    exe = work / "hpartition"
    subprocess.run(["g++", "-w", "-O3", "-I", str(accpar / "include"), str(src / "accpar.cpp"), str(src / "helper.cpp"),
                    str(work / "harness.cpp"), "-o", str(exe)], check=True)
    return exe


def run_cpp(exe: Path, rows, work: Path, batch: int, levels: int, types: int, repeat: int, clock: str = "wall"):
    """((median, best) seconds per h_partition call, [(c_h as float, partition string)] per level)."""
    path = work / "net.txt"
    path.write_text(program_text(rows), encoding="utf-8")
    out = subprocess.run([str(exe), str(path), str(batch), str(levels), str(types), str(repeat), clock],
                         check=True, capture_output=True, text=True).stdout.split("\n")
    levels_out = [line.split() for line in out[1:1 + levels]]
    median, best = map(float, out[0].split())
    return (median, best), [(float(c), p) for c, p in levels_out]


def time_ours(net: Network, levels: int, space: Space, repeat: int, clock: str = "wall"):
    """((median, best) whole seconds, median DP-alone seconds, plan, level units, unit per element)."""
    array = synthetic_array(levels)
    now = time.process_time if clock == "cpu" else time.perf_counter
    whole, dp = [], []
    for _ in range(repeat):
        t0 = now()
        problem = Problem(net, array, space)
        plan, units = hierarchical_dp(problem)
        t1 = now()
        hierarchical_dp(problem)
        t2 = now()
        whole.append(t1 - t0)
        dp.append(t2 - t1)
    return (statistics.median(whole), min(whole)), statistics.median(dp), plan, units, problem.tables.unit_per_element


def same_answer(cpp, plan, units, unit) -> str:
    ours = [(u / unit, "".join(str(t.index) for t in row)) for row, u in zip(plan.types, units)]
    if any(p != q for (_, p), (_, q) in zip(cpp, ours)):
        return "NO (plan)"
    if all(c.is_integer() and int(c) * unit == u for (c, _), u in zip(cpp, units)):
        return "exact"
    if all(abs(c - o) <= 1e-12 * max(abs(o), 1.0) for (c, _), (o, _) in zip(cpp, ours)):
        return "yes"
    return "NO (cost)"


def fmt(seconds: float) -> str:
    if seconds < 1e-4:
        return f"{seconds * 1e6:.1f} us"
    return f"{seconds * 1e6:,.0f} us" if seconds < 0.1 else f"{seconds:.3f} s"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--accpar", type=Path, help="a checkout of github.com/linghaosong/AccPar (the C++ program)")
    ap.add_argument("--repeat", type=int, default=200, help="calls per case on AlexNet/VGG-11 (the median is shown)")
    ap.add_argument("--quick", action="store_true", help="skip the 10,000-layer chain")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                    help="time both sides by wall clock or by the process's CPU time (steadier on a shared machine)")
    args = ap.parse_args()
    nets = [("AlexNet", ALEXNET, 512, 7), ("VGG-11", VGG11, 512, 7), ("chain 1,000", random_chain(1, 1000), 32, 10)]
    if not args.quick:
        nets.append(("chain 10,000", random_chain(2, 10000), 32, 10))
    with tempfile.TemporaryDirectory(prefix="bench-hpartition-") as tmp:
        work = Path(tmp)
        exe = build_harness(args.accpar, work) if args.accpar else None
        if exe is None:
            print("no AccPar checkout (--accpar DIR): timing our side alone", file=sys.stderr)
        print(f"{'net':<14}{'space':<8}{'H':>3}{'c++':>11}{'ours whole':>13}{'ratio':>8}{'best':>7}{'ours dp':>11}"
              f"{'ratio':>8}  same")
        for name, rows, batch, levels in nets:
            net = network(name, rows, batch)
            for space, k in ((Space.HYPAR, 2), (Space.ACCPAR, 3)):
                repeat = max(3, args.repeat // (1 + len(rows) // 100))
                (whole, whole_best), dp, plan, units, unit = time_ours(net, levels, space, repeat, args.clock)
                if exe is None:
                    print(f"{name:<14}{space.value:<8}{levels:>3}{'-':>11}{fmt(whole):>13}{'-':>8}{'-':>7}{fmt(dp):>11}"
                          f"{'-':>8}  -")
                    continue
                (cpp_s, cpp_best), cpp = run_cpp(exe, rows, work, batch, levels, k, repeat, args.clock)
                same = same_answer(cpp, plan, units, unit)
                print(f"{name:<14}{space.value:<8}{levels:>3}{fmt(cpp_s):>11}{fmt(whole):>13}{whole / cpp_s:>7.0f}x"
                      f"{whole_best / cpp_best:>6.0f}x{fmt(dp):>11}{dp / cpp_s:>7.0f}x  {same}")


if __name__ == "__main__":
    main()
