"""Axis labels of results.csv's columns: the one mapping column -> (text, unit, factor) the plots
use, so an axis reads "step time (s)" and "traffic (GB)", not step_time_s and traffic_bytes; and a
log axis's tick labels as numbers are written ('20', '10\u2076': ``plain_log_labels``)."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction


@dataclass(frozen=True)
class Axis:
    """How a column is drawn: its values times ``factor``, labelled "text (unit)"."""

    text: str
    unit: str = ""  # "" for counts (accelerators, levels): the text says what is counted
    factor: Fraction = Fraction(1)

    @property
    def label(self) -> str:
        return f"{self.text} ({self.unit})" if self.unit else self.text


GB = Fraction(1, 10**9)  # the paper's unit of traffic (HyPar Fig. 8) and the plan figure's title
MIB = Fraction(1, 2**20)
TIMES = "×"  # ratios: "speedup over data parallelism (×)"

COLUMNS: dict[str, Axis] = {
    # the options of a point
    "levels": Axis("levels"),
    "batch": Axis("batch", "samples"),
    "link_bandwidth_GBps": Axis("link bandwidth", "GB/s"),
    "peak_TFLOPS": Axis("peak", "TFLOPS"),
    "memory_GiB": Axis("memory limit", "GiB"),
    "time_limit": Axis("time limit", "s"),
    "weight_copies": Axis("weight copies"),
    "seq": Axis("sequence length", "tokens"),
    "alpha_grid": Axis("alpha grid", "steps"),
    # the figures of an answer
    "accelerators": Axis("accelerators"),
    "traffic_elements": Axis("traffic", "M elements", Fraction(1, 10**6)),
    "traffic_bytes": Axis("traffic", "GB", GB),
    "comm_time_s": Axis("communication time", "s"),
    "compute_s": Axis("compute time", "s"),
    "step_time_s": Axis("step time", "s"),
    "memory_bytes_per_accelerator": Axis("memory per accelerator", "MiB", MIB),
    "speedup_over_all_I": Axis("speedup over data parallelism", TIMES),
    "traffic_ratio_to_all_I": Axis("traffic relative to data parallelism", TIMES),
    "energy_J": Axis("energy", "J"),
    "energy_efficiency_over_all_I": Axis("energy efficiency over data parallelism", TIMES),
    "objective_value": Axis("objective value"),  # elements or seconds, as the point's objective
    "bound": Axis("proven bound on the objective"),
    "gap": Axis("optimality gap", "%", Fraction(100)),
    "dp_gap": Axis("DP's excess over the proven optimum", "%", Fraction(100)),
    "wall_s": Axis("solve time", "s"),
    # a split point's figures
    "group0_time_s": Axis("top-level group 0's time", "s"),
    "group1_time_s": Axis("top-level group 1's time", "s"),
    "idle_s": Axis("idle time of the faster group", "ms", Fraction(1000)),  # well under a millisecond
    "speedup_over_all_I_equal": Axis("speedup over data parallelism, equal split", TIMES),
    "speedup_over_trick_equal": Axis("speedup over the trick, equal split", TIMES),
    "speedup_over_hypar_equal": Axis("speedup over HyPar's plan, equal split", TIMES),
}
# a column not named above: its unit from its name's suffix (a sweep's own keys, accelerators_<kind>)
SUFFIXES: dict[str, Axis] = {
    "_s": Axis("", "s"), "_bytes": Axis("", "GB", GB), "_GBps": Axis("", "GB/s"), "_GiB": Axis("", "GiB"),
    "_J": Axis("", "J"), "_TFLOPS": Axis("", "TFLOPS"),
}


# the result columns in seconds whose axis takes the unit that suits the values drawn (``time_unit``):
# a step of 19 ms is drawn as 19 (ms), not 0.019 (s); options such as time_limit stay as written
TIME_RESULTS = frozenset({"comm_time_s", "compute_s", "step_time_s", "group0_time_s", "group1_time_s", "idle_s", "wall_s"})
TIME_UNITS = (("s", Fraction(1)), ("ms", Fraction(10**3)), ("us", Fraction(10**6)), ("ns", Fraction(10**9)))


def time_unit(column: str, seconds: list[float]) -> str | None:
    """The unit for a time result column's axis (None for another column): the largest of s, ms,
    us, ns in which the largest value drawn is at least 1 (s when there is none), as the tables'
    figures (``fmt_seconds``) pick theirs."""
    if column not in TIME_RESULTS:
        return None
    top = max((abs(v) for v in seconds if v == v and abs(v) != float("inf")), default=0.0)
    for unit, scale in TIME_UNITS:
        if top * scale >= 1:
            return unit
    return "s" if top == 0 else TIME_UNITS[-1][0]


def axis(column: str, unit: str | None = None) -> Axis:
    """How ``column`` is drawn: from COLUMNS, else its name with the unit its suffix says; a time
    result in ``unit`` when given (``time_unit``)."""
    if unit is not None and column in TIME_RESULTS:
        return Axis(COLUMNS[column].text, unit, dict(TIME_UNITS)[unit])
    if column in COLUMNS:
        return COLUMNS[column]
    if column.startswith("accelerators_"):  # accelerators_v3: how many of that kind
        return Axis(f"{column.removeprefix('accelerators_')} accelerators")
    for suffix, unit in SUFFIXES.items():
        if column.endswith(suffix) and len(column) > len(suffix):
            return Axis(column.removesuffix(suffix).replace("_", " "), unit.unit, unit.factor)
    return Axis(column.replace("_", " "))


def label(column: str, unit: str | None = None) -> str:
    return axis(column, unit).label


def factor(column: str, unit: str | None = None) -> float:
    return float(axis(column, unit).factor)


_SUPERSCRIPT = str.maketrans("-0123456789", "\u207b\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079")


def plain_number(x: float) -> str:
    """A log axis's tick label as written: '6', '20', '0.001'; where '%g' turns to an exponent
    (from a million, under 1e-4) a power of ten in plain text: '10\u2076', '2\u00d710\u207b\u2077' (not '1e+06')."""
    text = f"{x:g}"
    if "e" not in text:
        return text.replace("-", "\u2212")
    mantissa, exponent = text.split("e")
    power = "10" + str(int(exponent)).translate(_SUPERSCRIPT)
    return power if mantissa == "1" else f"{mantissa}\u00d7{power}"


def plain_log_labels(axis) -> None:
    """A log axis labelled in plain numbers ('6', '20', '300', ``plain_number``), not '6 x 10^0'
    (matplotlib's default on an axis spanning less than a decade); minor labels only where they do not crowd."""
    from matplotlib.ticker import LogFormatter

    class Plain(LogFormatter):  # LogFormatter picks which ticks to label; the label is the number as written
        def __call__(self, x, pos=None):
            return plain_number(x) if super().__call__(x, pos) else ""

    axis.set_major_formatter(Plain(labelOnlyBase=False))
    axis.set_minor_formatter(Plain(labelOnlyBase=False, minor_thresholds=(2, 0.5)))
