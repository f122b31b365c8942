"""A sweep's parent imports its points' solver modules before the pool forks (trial 10, item 10):
each pool worker imported them itself, so two workers used 0.05-0.2 s more CPU than one on 18
cheap points and were slower on a loaded machine (``bench/bench_sweep_batches.py --whole``)."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import sys
from explorer.app.sweep import engine
assert "explorer.solvers.exact" not in sys.modules
seen = []
real = engine.ProcessPoolExecutor
def pool(*a, **k):
    seen.append(("explorer.solvers.exact" in sys.modules, "explorer.solvers.cpsat" in sys.modules))
    return real(*a, **k)
engine.ProcessPoolExecutor = pool
e = engine.LocalEngine(2)
tasks = [(0, {"model": "lenet-c", "array": "hypar-16", "space": "accpar", "levels": 2, "solver": "exact"}),
         (1, {"model": "lenet-c", "array": "hypar-16", "space": "accpar", "levels": 2, "solver": "cpsat"})]
try:
    outs = list(e.run(tasks))
finally:
    e.close()
print(seen, sorted(o.status for o in outs))
"""


def test_the_parent_imports_the_solvers_before_the_pool_forks():
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("[(True, False)]"), done.stdout  # exact imported; OR-Tools not (before a fork)
    assert "optimal" in done.stdout
