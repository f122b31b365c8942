"""What a chart's title says of the points it draws (trial finding: titles named the axes only,
so a figure did not say which model, array or split it was of): the sweep keys that vary among
the rows drawn (swept: the axes and series, and any other) and those that do not (fixed, with
their values). Described in docs/sweeps.md, "Plots"."""

from __future__ import annotations

MAX_VALUE = 40  # characters of one fixed value shown (a long path: cut, "...")


def _shown(value: str) -> str:
    return value if len(value) <= MAX_VALUE else value[:MAX_VALUE - 3] + "..."


def scope(rows: list[dict[str, str]], params: list[str], drawn: tuple[str, ...]) -> str:
    """'swept: accelerators_v3 (5 values), model (3)' and 'fixed: split=search, array=tpu-mix-16, ...'
    on two lines (the figure wraps a line too wide for it, ``layout.fit_title``): ``params`` (the
    sweep's keys, in the file's order) that take several
    values among ``rows`` (those drawn), the ``drawn`` columns (axes, hue) first, then the
    ones with one value. A key empty in every row (not set, its default) is left out."""
    swept, fixed = [], []
    for col in [*(c for c in drawn if c in params), *(c for c in params if c not in drawn)]:
        values = list(dict.fromkeys(r.get(col) or "" for r in rows))
        if len(values) > 1:
            swept.append(f"{col} ({len(values)} values)" if not swept else f"{col} ({len(values)})")
        elif values and values[0]:
            fixed.append(f"{col}={_shown(values[0])}")
    parts = ([f"swept: {', '.join(swept)}"] if swept else []) + ([f"fixed: {', '.join(fixed)}"] if fixed else [])
    return "\n".join(parts)


def titled(title: str, rows: list[dict[str, str]], params: list[str], drawn: tuple[str, ...]) -> str:
    """The title, then the scope of the rows drawn (``scope``) on the lines under it."""
    said = scope(rows, params, drawn)
    return f"{title}\n{said}" if said else title
