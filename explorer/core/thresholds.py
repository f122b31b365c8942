"""The one network size from which the numpy paths run: the cost tables' level rows
(``costs.CostTables.level_rows``, ``plan_level_units``), ``evaluate``'s integer pass across layers
(``evaluate_arrays``) and the DP's chain scan (``dp.chain_level_vectorised``). Below it everything is
Python integers and a run never imports numpy (its import alone is ~0.85x a bare ``import numpy``
process, a large share of a whole run).

Read it as ``thresholds.NUMPY_FROM_LAYERS`` at call time (not ``from ... import``), so that a test can
set it (``monkeypatch.setattr(thresholds, "NUMPY_FROM_LAYERS", n)``) and reach every path.
"""

# Measured with bench/bench_numpy_threshold.py (whole explore processes, medians, 2 cores; see
# docs): MEASUREMENT
NUMPY_FROM_LAYERS = 128
