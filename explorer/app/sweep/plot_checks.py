"""What ``explore plot`` refuses before it draws (one line each, ``SpecError``): cells a plot would
misread (``check_numbers``), more series than colours (``check_series``), more categories than a
figure can label (``check_categories``)."""

from __future__ import annotations

import math
import sys
from fractions import Fraction
from pathlib import Path
from typing import Any

from ...core.errors import SpecError, shown
from .table import number

FLOAT_MAX = Fraction(sys.float_info.max)
MAX_SERIES = 20  # tab20's colours: one each, and a legend that fits beside the axes
MAX_CATEGORIES = 40  # columns (and rows) of a heatmap, places on a bar chart's or a text x axis: each needs its label


def check_numbers(rows: list[dict[str, str]], col: str, measured: bool, path: Path | str = "results.csv") -> None:
    """Refuse a cell a plot would misread (naming ``path``, the row and the column): beyond the
    float range; inf or nan (not a finite number: explore writes none); in a figure column (--y,
    --z, ``measured``) any other text than a number or empty; on --x, text among numbers (a hand
    edit would turn the axis into categories). A number is written as explore writes it (``number``:
    no '_' between digits, no spaces around). A list of values (a;b, e.g. a bandwidth per level) is
    a category, not an error."""
    numeric = any(number(r[col]) is not None for r in rows)
    for n, r in enumerate(rows, 1):
        where = f"{path}, row {n} of the plotted rows, column {col}"
        cell = r[col]
        if (measured or numeric) and not _finite(cell):
            raise SpecError(where, f"{shown(cell)} is not a finite number")
        if to_float(cell, where) is None and cell.strip() and numeric and (measured or ";" not in cell):
            raise SpecError(where, f"{shown(cell)} is not a number")


def _finite(cell: str) -> bool:
    """False for a cell Python reads as an infinite float or nan ('inf', '-Infinity', 'nan'); a
    number written out (1e400) is a number, beyond the float range (``to_float``'s refusal)."""
    if number(cell) is not None:
        return True
    try:
        return math.isfinite(float(cell))
    except (ValueError, OverflowError):
        return True  # not a float at all: another check's business


def to_float(value: Any, where: str) -> float | None:
    """A cell as a float to draw (None when not a number); a number beyond the float range
    (a cell of 1e400) is bad input, not an OverflowError."""
    v = number(value)
    if v is None:
        return None
    if abs(v) > FLOAT_MAX:
        raise SpecError(where, f"{shown(value)} is beyond the range a plot can draw (about 1.8e308)")
    return float(v)


def check_series(n: int, chart) -> None:
    """More series than distinct colours (and legend rows) is refused, naming how to keep fewer."""
    if n > MAX_SERIES:
        raise SpecError("--hue", f"{n} series ({' x '.join(chart.hue)}), more than the {MAX_SERIES} a plot can tell "
                                 "apart by colour: keep fewer with --where COL=VALUE, or fewer --hue columns")


def check_categories(option: str, column: str, values: list[str], chart) -> None:
    """More categories than a figure can label is refused in one line (a heatmap of 2,500 columns
    was a 206,525 px wide image after minutes; trial hostile, finding 3), naming how to keep fewer."""
    if len(values) <= MAX_CATEGORIES:
        return
    if chart.kind == "heatmap":
        what = "a heatmap can show as " + ("columns" if option == "--x" else "rows")
    else:
        what = f"a {chart.kind} chart can label on its x axis"
    numeric = all(number(v) is not None for v in values)
    other = " or --kind line (a numeric axis)" if numeric and chart.kind in ("bar", "heatmap") else ""
    raise SpecError(option, f"{len(values):,} values of {column}, more than the {MAX_CATEGORIES} {what}: keep fewer "
                            f"with --where COL=VALUE{other}")
