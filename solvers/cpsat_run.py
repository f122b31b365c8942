"""Running CP-SAT, one way for the even split's model (``solvers.cpsat``) and the uneven split's
(``solvers.uneven_cpsat``): the solver's parameters, a search a Ctrl-C stops gracefully, the time
the model's build leaves the search, the hint written in batches, the proven bound read as an
exact integer, and when a plan is proven optimal.

Callers run a search through ``cpsat.run_solver`` (this module's, imported there): the one name
tests replace to simulate a Ctrl-C in every CP-SAT search.
"""

from __future__ import annotations

import threading

from ortools.sat.python import cp_model

# CP-SAT's share of the limit when the build left (almost) nothing: enough to load the model and
# return the hint (its first solution with presolve off), small enough to stay within 10%.
MIN_SEARCH_SHARE = 0.02
# kept back from the search for what follows its limit: CP-SAT stops up to ~7% of a 5 s limit past
# its max_time on a loaded machine (alexnet at 12 levels, accpar: 4.60 s on 4.29 s), then the plan's
# extraction and re-scoring
SEARCH_MARGIN, SEARCH_MARGIN_MAX_S = 0.08, 1.0


def new_solver(workers: int = 1, seed: int | None = None, time_limit_s: float | None = None,
               deterministic_limit: float | None = None, presolve: bool = True,
               probing: int | None = None) -> cp_model.CpSolver:
    """A CP-SAT solver with these workers, seed (None: CP-SAT's own), limits, presolve and probing
    level (None: CP-SAT's own); gaps 0: it stops at a proof (every objective here is integer)."""
    solver = cp_model.CpSolver()
    p = solver.parameters
    p.num_workers = workers
    if seed is not None:
        p.random_seed = seed
    p.cp_model_presolve = presolve
    if probing is not None:
        p.cp_model_probing_level = probing
    p.relative_gap_limit = 0.0
    p.absolute_gap_limit = 0.0
    if time_limit_s is not None:
        p.max_time_in_seconds = float(time_limit_s)
    if deterministic_limit is not None:
        p.max_deterministic_time = float(deterministic_limit)
    return solver


def search_seconds(limit_s: float, left_s: float, margin: bool = True) -> float:
    """The search's share of a time limit ``limit_s`` of which ``left_s`` is left after the build:
    what is left, less (``margin``) what CP-SAT overruns its own limit by, at least
    ``MIN_SEARCH_SHARE`` of the limit."""
    return max(left_s - (search_margin(limit_s) if margin else 0.0), MIN_SEARCH_SHARE * limit_s)


def search_margin(limit_s: float) -> float:
    """What a search under a time limit ``limit_s`` keeps back for CP-SAT's overrun of its own
    limit and the plan's extraction and re-scoring (``cpsat.solve``'s search, the constrained
    solve's CP-SAT rounds)."""
    return min(SEARCH_MARGIN * limit_s, SEARCH_MARGIN_MAX_S)


def run_solver(solver: cp_model.CpSolver, model: cp_model.CpModel, callback=None) -> tuple[int, bool]:
    """``solver.solve`` that a Ctrl-C stops gracefully: returns (status, interrupted).

    CP-SAT's own SIGINT handler is turned off (it would stop the search as if a time limit
    were reached, leaving no trace that the user asked); the search runs in a helper thread
    while this one waits in short steps, so the KeyboardInterrupt lands here, whichever thread
    the signal hit, and becomes ``stop_search``: CP-SAT returns the best plan and bound so far.
    """
    solver.parameters.catch_sigint_signal = False
    out: dict = {}

    done = threading.Event()

    def work() -> None:
        try:
            out["status"] = solver.solve(model, callback)
        except BaseException as err:  # noqa: BLE001 - re-raised in the caller's thread
            out["error"] = err
        finally:
            done.set()

    # an Event, not Thread.join: a join interrupted by KeyboardInterrupt can leave the thread
    # marked as stopped while it still runs (CPython 3.11)
    interrupted = False
    threading.Thread(target=work, name="cpsat-solve", daemon=True).start()
    while not done.is_set():
        try:
            done.wait(0.05)
        except KeyboardInterrupt:
            interrupted = True
            solver.stop_search()
    if "error" in out:
        raise out["error"]
    return out["status"], interrupted


def proven_bound(solver: cp_model.CpSolver, g: int = 1) -> int:
    """CP-SAT's proven lower bound on the objective, exact: its integer (inner) bound times ``g``,
    the divisor the objective's coefficients were divided by (the objective has no offset)."""
    return solver.response_proto.inner_objective_lower_bound * g


def proven(status: int, value: int, bound: int) -> bool:
    """OPTIMAL only when CP-SAT says so and the plan's value equals the proven bound."""
    return status == cp_model.OPTIMAL and value == bound


def hint(model: cp_model.CpModel, xs, values) -> None:
    """``add_hint(x, value)`` for every pair (values 0 or 1, ints), written to the proto in two
    batches (the same hint, 8x faster)."""
    if not xs:  # (no empty hint field in the proto)
        return
    try:
        h = model.proto.solution_hint
        h.vars.extend([x.index for x in xs])
        h.values.extend(values)
    except AttributeError:  # an OR-Tools whose proto has no batch append
        for var, val in zip(xs, values):
            model.add_hint(var, val)
