"""HyPar explorer: hybrid parallelism on arrays of deep-learning accelerators.

Pipeline: spec -> network -> cost tables -> solver -> plan -> evaluate -> report.
The library never prints or configures logging; the CLI (``explorer.app.cli``) does.
"""

__version__ = "0.2.0"  # keep equal to pyproject.toml (a test checks)
