"""A Dask preload (``DaskEngine``'s LocalCluster workers import it as they start): the worker
ignores Ctrl-C. A terminal's Ctrl-C reaches every process of its group; the parent stops the
sweep and closes the cluster, which ends the workers (their KeyboardInterrupt tracebacks were
noise before the one-line message; trial 14, finding 4)."""

from __future__ import annotations

import signal
import threading


def dask_setup(worker) -> None:
    """Called by Dask in the worker process as its Worker starts."""
    if threading.current_thread() is threading.main_thread():  # signal handlers: the main thread only
        signal.signal(signal.SIGINT, signal.SIG_IGN)
