"""The one network size from which the numpy paths run: the cost tables' level rows
(``costs.CostTables.level_rows``, ``plan_level_units``), ``evaluate``'s integer pass across layers
(``evaluate_arrays``) and the DP's chain scan (``dp.chain_level_vectorised``). Below it everything is
Python integers and a run never imports numpy (its import alone is ~0.85x a bare ``import numpy``
process, a large share of a whole run).

Read it as ``thresholds.NUMPY_FROM_LAYERS`` at call time (not ``from ... import``), so that a test can
set it (``monkeypatch.setattr(thresholds, "NUMPY_FROM_LAYERS", n)``) and reach every path.
"""

# Measured with bench/bench_numpy_threshold.py (whole explore processes, all paths Python vs all numpy,
# wall medians of 3, 2 shared cores, 2026-12-03): Python/numpy time 0.49-0.65 up to 1,000 layers,
# 0.65-0.78 at 2,000, 0.69-0.82 at 3,000, 0.74 (H=4) and 0.84 (H=10 accpar) at 4,000; at 5,000 layers
# 0.82-0.90 at H=4 but 1.07-1.11 at H=10 (numpy ahead). The zoo's largest net (llama3-405b, 1,388
# layers) is 0.76 (H=4) / 0.92 (H=10). One threshold for all three paths: numpy's import, their main
# fixed cost, is paid once whichever path imports it first. Was 128.
NUMPY_FROM_LAYERS = 4096
