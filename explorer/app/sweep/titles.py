"""What a chart's title says of the points it draws (trial finding: titles named the axes only,
so a figure did not say which model, array or split it was of): the sweep keys that vary among
the rows drawn (swept: the axes and series, and any other) and those that do not (fixed, with
their values). A plan figure's title says its point's values the same way (``point_scope``), and
the Pareto legend what its proven points were proven optimal for (``proven_text``). Described
in docs/sweeps.md, "Plots"."""

from __future__ import annotations

MAX_VALUE = 40  # characters of one fixed value shown (a long path: cut, "...")


def _shown(value: str) -> str:
    return value if len(value) <= MAX_VALUE else value[:MAX_VALUE - 3] + "..."


def _values(rows: list[dict[str, str]], col: str) -> list[str]:
    """The distinct values of ``col`` among ``rows``, in order ('' for unset)."""
    return list(dict.fromkeys(r.get(col) or "" for r in rows))


def _lines(swept: list[str], fixed: list[str]) -> str:
    parts = ([f"swept: {', '.join(swept)}"] if swept else []) + ([f"fixed: {', '.join(fixed)}"] if fixed else [])
    return "\n".join(parts)


def scope(rows: list[dict[str, str]], params: list[str], drawn: tuple[str, ...]) -> str:
    """'swept: accelerators_v3 (5 values), model (3)' and 'fixed: split=search, array=tpu-mix-16, ...'
    on two lines (the figure wraps a line too wide for it, ``layout.fit_title``): ``params`` (the
    sweep's keys, in the file's order) that take several
    values among ``rows`` (those drawn), the ``drawn`` columns (axes, hue) first, then the
    ones with one value. A key empty in every row (not set, its default) is left out."""
    swept, fixed = [], []
    for col in [*(c for c in drawn if c in params), *(c for c in params if c not in drawn)]:
        values = _values(rows, col)
        if len(values) > 1:
            swept.append(f"{col} ({len(values)} values)" if not swept else f"{col} ({len(values)})")
        elif values and values[0]:
            fixed.append(f"{col}={_shown(values[0])}")
    return _lines(swept, fixed)


def titled(title: str, rows: list[dict[str, str]], params: list[str], drawn: tuple[str, ...]) -> str:
    """The title, then the scope of the rows drawn (``scope``) on the lines under it."""
    said = scope(rows, params, drawn)
    return f"{title}\n{said}" if said else title


def point_scope(point: dict[str, str], rows: list[dict[str, str]] | None, params: list[str],
                said: frozenset[str]) -> str:
    """A plan figure's lines of its point (trial finding: ``--plan`` of a point of a swept mix or
    link bandwidth named only the base array): 'swept: mix=4 v2 + 12 v3, split=search', the point's
    value of each key that varies among the sweep's ``rows`` (results.csv), and 'fixed:
    objective=traffic', the keys it sets that take one value, less those the title ``said``
    already. ``point`` holds the cells as results.csv writes them; without ``rows`` (no readable
    results.csv) every key the point sets is listed as 'point: ...'."""
    keys = [k for k in params if point.get(k)]
    if rows is None:
        return f"point: {', '.join(f'{k}={_shown(point[k])}' for k in keys)}" if keys else ""
    swept = [k for k in keys if len(_values(rows, k)) > 1]
    fixed = [k for k in keys if k not in swept and k not in said]
    return _lines([f"{k}={_shown(point[k])}" for k in swept], [f"{k}={_shown(point[k])}" for k in fixed])


def proven_text(rows: list[dict[str, str]]) -> str:
    """The Pareto legend's entry of the front's proven ``rows`` (trial finding: it said 'proven
    optimal' on axes such as step time and memory, but the proof is of each point's objective,
    the sweep's ``objective`` key or its default): 'Pareto-optimal (plan proven traffic-optimal)';
    rows of several objectives: '(plan proven traffic- or time-optimal)'."""
    from .spec import defaults_for

    found = dict.fromkeys(r.get("objective") or defaults_for({"split": r.get("split") or None})["objective"]
                          for r in rows)
    return f"Pareto-optimal (plan proven {'- or '.join(found)}-optimal)"
