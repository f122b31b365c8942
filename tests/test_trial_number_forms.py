"""A new-user trial's number forms: traffic in PB and EB (decimal, as GB/s) in tables and messages,
the comparison table's columns as wide as their widest cell, the time objective's status lines in
the tables' time units, and a suggested cap written so that it reads back as exactly the value it
names (a time budget when the conflicting cap was given as one)."""

from __future__ import annotations

import random
import re
from dataclasses import replace
from fractions import Fraction as F

import pytest

from explorer.app.render import fmt_bytes, render_table
from explorer.app.run import run
from explorer.core.constraints import Cap, format_bytes, limit_suggestion
from explorer.core.names import Frontend, named_for
from explorer.core.solution import SolveOptions, Status
from explorer.core.units import TIME_UNITS, TRAFFIC_UNITS, exact_amount, parse_amount

from .conftest import run_cli
from .test_time_objective import two_layer_problem

ARR64 = """version: 1
name: my-64
levels: 6
dtype_bytes: 4
link_bandwidth_GBps: [25, 25, 50, 50, 100, 100]
peak_TFLOPS: 8
memory_GiB: 16
"""


@pytest.mark.parametrize("v, table, message", [
    (13343.501e12, "13.344 PB", "13.34 PB"),  # the trial's all-II row on llama3-8b: was '13343.501 TB'
    (F(999 * 10**15), "999.000 PB", "999 PB"),
    (2 * 10**18, "2.000 EB", "2 EB"),
    (F(999 * 10**18), "999.000 EB", "999 EB"),
    (10**21, "1.000e+21 B", "1.000e+21 B"),  # 1000 EB: beyond any plan, e-notation
    (2 * 10**12, "2.000 TB", "2 TB"),
])
def test_traffic_reaches_PB_and_EB(v, table, message):
    assert (fmt_bytes(v), format_bytes(v)) == (table, message)


def test_PB_and_EB_parse_as_amounts():
    assert parse_amount("2PB") == (2 * 10**15, "bytes") and parse_amount("1.5EB") == (15 * 10**17, "bytes")
    assert [u for u, _ in TRAFFIC_UNITS] == ["EB", "PB", "TB", "GB", "MB", "kB"]


def _right_edges(line: str) -> list[int]:
    """Where the heading's labels end ('vs all-I' and 'comm time' each one label)."""
    return [m.end() for m in re.finditer(r"\S+(?: \S+)?", line)][1:]


def test_comparison_columns_fit_their_widest_cell(tmp_path, capsys):
    """llama3-405b on the trial's 64-accelerator array: times of 234056.519 s, wider than their
    12-character column, moved every column after them one character right of its heading."""
    arr = tmp_path / "arr64.yaml"
    arr.write_text(ARR64)
    _, out, _ = run_cli(["--model", "llama3-405b", "--array", str(arr)], capsys)
    lines = out.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("plan "))
    table = lines[head:head + 5]
    assert any("234056.519 s" in row for row in table) and any(" PB " in row for row in table), out
    edges = _right_edges(table[0])
    for row in table[1:]:  # every cell right-aligned under its heading, a space after it
        assert all(row[e - 1] != " " and (e == len(row) or row[e] == " ") for e in edges), "\n".join(table)
        assert len(row.split()) == 1 + 2 * 4 + 2 + 1, row  # name, 4 figures with units, 2 ratios, ok


def test_the_usual_table_keeps_its_widths(capsys):
    """Figures that fit keep the usual widths (the docs' tables unchanged)."""
    _, out, _ = run_cli([], capsys)
    assert "plan            traffic  vs all-I   comm time   step time  speedup  memory/acc  ok" in out
    assert "dp             1.935 GB    0.121x     4.77 ms     2.858 s   1.011x   504.7 MiB  yes" in out


def test_time_objective_status_lines_in_time_units():
    """A bound and a no-plan lower bound under --objective time: '27 ns', as check writes times
    (seven significant digits, in the unit that suits them), not '2.7e-08 s'."""
    r = run(two_layer_problem(), "exact", SolveOptions(workers=1))
    assert r.status is Status.OPTIMAL and r.objective_value == F(272, 10**10)  # 16 ns + 11.2 ns
    cut = replace(r, status=Status.FEASIBLE, bound=F(27, 10**9), gap=float(1 - F(27, 10**9) / r.objective_value))
    text = render_table(cut)
    assert re.search(r"^bound 27 ns( \(communication [^)]*\))?, gap 0\.735%$", text, re.M), text
    assert "e-0" not in text
    none = replace(r, status=Status.UNKNOWN, plan=None, figures=None, bound=F(123456789, 10**16), gap=None)
    assert "no plan found; lower bound 12.34568 ns proven" in render_table(none)


@pytest.mark.parametrize("need, option", [
    (81386240, "0=81.38624MB"),
    (89774848, "0=89.774848MB"),
    (F(1, 3), "0=1B"),  # a fraction of a byte: rounded up to a whole byte
    (999, "0=999B"),
    (2 * 10**15 + 1, "0=2.000000000000001PB"),
])
def test_a_byte_cap_is_suggested_in_a_unit_that_reads_back_exactly(need, option):
    text = limit_suggestion(0, F(need))
    assert text.endswith(f"try --cap {option}"), text
    assert parse_amount(option[2:])[0] == -(-F(need) // 1)  # exactly the least whole byte count


def test_a_time_cap_is_suggested_as_a_time():
    """Given as 1 ms at 60 GB/s: the least time whose bytes admit the plan, 6 digits rounded up
    (89,774,848 bytes = 1.4962474666... ms), or exact where it terminates (90 MB = 1.5 ms)."""
    cap = Cap(0, F(60 * 10**6), "--cap", seconds=F(1, 1000))
    text = limit_suggestion(0, F(89774848), cap=cap)
    assert text.endswith("(89774848 bytes; 1.49625 ms at 60 GB/s, rounded up): try --cap 0=1.49625ms"), text
    text = limit_suggestion(0, F(90 * 10**6), cap=cap)
    assert text.endswith("(90000000 bytes; 1.5 ms at 60 GB/s): try --cap 0=1.5ms"), text
    with named_for(Frontend.API):
        assert limit_suggestion(0, F(90 * 10**6), cap=cap).endswith('try caps=["0=1.5ms"]')


def test_suggested_amounts_read_back_as_the_value_shown():
    """Seeded random needs and bandwidths: bytes exact; a time at least the need's, by less than
    one unit of its sixth significant digit."""
    rng = random.Random(7)
    times = tuple(TIME_UNITS.items())
    for _ in range(300):
        need = F(rng.randrange(1, 10**rng.randrange(1, 30)), rng.choice((1, 3, 7, 1024)))
        number, unit = exact_amount(-(-need // 1), TRAFFIC_UNITS + (("B", 1),))
        assert parse_amount(number + unit)[0] == -(-need // 1)
        seconds = need / (rng.randrange(1, 10**4) * 10**rng.randrange(6, 12))
        number, unit = exact_amount(seconds, times, digits=6)
        back = parse_amount(number + unit)[0]
        assert back == F(number) * TIME_UNITS[unit] and seconds <= back
        assert back - seconds < F(1, 10**5) * back


@pytest.mark.parametrize("given", ["0=1ms", "0=50MB"])
def test_the_suggested_cap_admits_a_plan(given, capsys):
    """explore --cap 0=1ms (or 50MB) --solver exact on vgg-a: no plan; the option it suggests
    gives the proven optimum."""
    code, _, err = run_cli(["--cap", given, "--solver", "exact"], capsys)
    assert code == 1 and "no plan satisfies the constraints" in err, err
    suggested = re.search(r"try --cap (\S+)\)$", err.strip()).group(1)
    assert suggested == ("0=1.49625ms" if given.endswith("ms") else "0=89.774848MB")
    code, out, _ = run_cli(["--cap", suggested, "--solver", "exact"], capsys)
    assert code == 0 and "solver exact: optimal" in out, out


def test_an_uneven_run_suggests_a_time_cap_as_a_time(tmp_path, capsys):
    """The split's suggestion as the even run's: sfc on the v2 + v3 pair (70 GB/s) capped at
    0.25 ms (17.5 MB; 18,879,488 bytes needed = 0.26970697... ms): the time rounded up, which
    admits the optimum."""
    from .test_split_rules import _mix2, _run

    base = ["--model", "sfc", "--array", _mix2(tmp_path), "--space", "hypar", "--alpha-grid", "2",
            "--split", "optimal", "--solver", "exact", "--cap"]
    code, d, err = _run(base + ["0=0.25ms"], capsys)
    assert code == 1 and d["suggestion"].endswith(
        "(18879488 bytes; 269.707 us at 70 GB/s, rounded up): try --cap 0=269.707us"), d["suggestion"]
    assert _run(base + ["0=269.707us"], capsys)[1]["status"] == "optimal"
    assert _run(base + ["0=269.706us"], capsys)[1]["status"] == "infeasible"
