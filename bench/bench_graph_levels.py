"""The DP's graph levels in process on the LLM zoo nets: the elimination against its plain form.

Per network (the zoo's default array, ``hypar-16``, the HyPar space, the run's own counts: level
h's rows follow the DP's plan of the levels above) and per level, the CPU time (median of R
calls, ``time.process_time``) of:

- ``plain``: the elimination as it was before issue 23's last item (every state times every type,
  a full assignment each; ``tests/test_dp_graph_fast.reference_eliminate``, the tests' reference);
- ``now``: ``dp_graph.eliminate`` (three step forms, repeated segments reused), its order built;
- ``order``: building that order (``elimination_order``, ``segments``: once per graph, not per level);
- ``dp.solve``: the whole DP on a fresh problem (every level's rows from the tables, ``wide_levels``,
  the order, the plan; the problem's network loaded and its ``tables`` object made beforehand).

``same``: every level's plan and cost equal to the plain form's (the script stops otherwise).

    python bench/bench_graph_levels.py              # median of 7
    python bench/bench_graph_levels.py --repeat 21 gpt3-1t llama3-405b
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from explorer.app.request import build_problem
from explorer.core.comm import advance, zero_counts
from explorer.solvers import dp
from explorer.solvers.dp_graph import eliminate, elimination_order, segments

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.test_dp_graph_fast import reference_eliminate  # noqa: E402

NETS = ("gpt3-1t", "llama3-70b", "llama3-405b", "llama-7b", "gpt2-small")


def median_cpu(fn, repeat: int, setup=lambda: None) -> float:
    """The median CPU time of ``fn(setup())`` (``setup`` untimed)."""
    times = []
    for _ in range(repeat):
        arg = setup()
        t = time.process_time()
        fn(arg)
        times.append(time.process_time() - t)
    return statistics.median(times)


def cleared():
    elimination_order.cache_clear()
    segments.cache_clear()


def level_rows(problem):
    """Per level: (allowed indices, intra, inter) at the counts the DP's plan gives."""
    counts, out = zero_counts(problem.num_layers), []
    for h in range(problem.levels):
        intra, inter = problem.tables.level_tuples(counts)
        allowed = dp._allowed_indices(problem, h)
        out.append((allowed, intra, inter))
        choice, _ = eliminate(problem.num_layers, problem.tables.edges, allowed, intra, inter)
        counts = advance(counts, [problem.tables.types[k] for k in choice])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("nets", nargs="*", default=list(NETS))
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    print(f"{'network':14s} {'nodes':>5s} {'plain ms/level':>15s} {'now ms/level':>13s} {'speedup':>8s} "
          f"{'order ms':>9s} {'dp.solve ms':>12s}  same")
    for name in args.nets:
        p = build_problem(name)
        N, edges = p.num_layers, p.tables.edges
        plain, now = [], []
        for allowed, intra, inter in level_rows(p):
            want = reference_eliminate(N, edges, allowed, intra, inter)
            if eliminate(N, edges, allowed, intra, inter) != want:
                sys.exit(f"{name}: the elimination differs from the plain form")
            plain.append(median_cpu(lambda _: reference_eliminate(N, edges, allowed, intra, inter), args.repeat))
            now.append(median_cpu(lambda _: eliminate(N, edges, allowed, intra, inter), args.repeat))
        order = median_cpu(lambda _: segments(N, edges), args.repeat, cleared)

        def fresh():
            cleared()
            problem = build_problem(name)
            problem.tables  # noqa: B018 - made, as build_problem's caller has it
            return problem

        whole = median_cpu(dp.solve, args.repeat, fresh)
        a, b = 1e3 * statistics.mean(plain), 1e3 * statistics.mean(now)
        print(f"{name:14s} {N:5d} {a:15.2f} {b:13.2f} {a / b:7.1f}x {1e3 * order:9.2f} {1e3 * whole:12.1f}  yes")


if __name__ == "__main__":
    main()
