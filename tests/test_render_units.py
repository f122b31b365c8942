"""fmt_seconds and fmt_joules share one milli/micro ladder (render._milli_micro): each keeps its
own forms below a microunit (nanoseconds; e-notation) and its own micro digits, and both switch to
e-notation from a million units up. Memory has one binary form (core.units.memory_text) in every
report, traffic and caps their decimal one."""

from __future__ import annotations

import re
from fractions import Fraction as F

import pytest

from explorer.app.render import fmt_joules, fmt_seconds

from .conftest import run_cli


@pytest.mark.parametrize("v, seconds, joules", [
    (0, "0 us", "0.0 uJ"),
    (1e-12, "1e-12 s", "1.000e-12 J"),
    (5e-9, "5 ns", "5.000e-09 J"),
    (F(7, 10**8), "70 ns", "7.000e-08 J"),
    (1e-6, "1 us", "1.0 uJ"),
    (2.5e-6, "2 us", "2.5 uJ"),
    (1e-3, "1.00 ms", "1.00 mJ"),
    (F(1, 3), "333.33 ms", "333.33 mJ"),
    (1, "1.000 s", "1.000 J"),
    (999.9, "999.900 s", "999.900 J"),
    (999999.5, "999999.500 s", "999999.500 J"),
    (1e6, "1.000e+06 s", "1.000e+06 J"),  # from a million up both switch to e-notation
    (F(10**30), "1.000e+30 s", "1.000e+30 J"),
    (F(10**400), "1.000e+400 s", "1.000e+400 J"),  # beyond a double: no OverflowError
    (-2.0, "-2 s", "-2.000e+00 J"),
])
def test_seconds_and_joules_on_one_ladder(v, seconds, joules):
    assert (fmt_seconds(v), fmt_joules(v)) == (seconds, joules)


@pytest.mark.parametrize("v, shown", [
    (4 * 2**30, "4 GiB"),  # 4,294,967,296 B: the array's memory_GiB 4, as the constraints line says it
    (529_184_000, "504.7 MiB"),  # 529,184,000 / 2^20 = 504.669... (the worked example's dp, was 529.184 MB)
    (1_446_000_000, "1.347 GiB"),  # 1,446,000,000 / 2^30 = 1.3467...
    (80 * 2**30, "80 GiB"),
    (F(2**30, 20), "51.2 MiB"),  # --memory 0.05: 53,687,091.2 B / 2^20 = 51.2
    (F(10239, 10) * 2**10, "1023.9 KiB"),  # from 1000 of a unit up one decimal: not '1024 KiB'
    (2**20 - 52, "1023.9 KiB"),  # 1,048,524 B = 1023.949... KiB
    (2**20 - 51, "1 MiB"),  # 1023.950... KiB rounds to 1024.0: the next unit's 1
    (2**20, "1 MiB"),
    (1000 * 2**10, "1000 KiB"),
    (1023, "1023 B"), (F(102399, 100), "1 KiB"),  # bytes too: 1023.99 B is not '1024 B'
    (48, "48 B"), (0, "0 B"), (F(3, 50), "0.06 B"),  # a fraction of a byte is never '0 B'
    (3 * 2**40, "3 TiB"), (2**50, "1,024 TiB"),
    (2**50 - 1, "1,024 TiB"), (F(20005, 20) * 2**40, "1,000.2 TiB"), (-(2**51), "-2,048 TiB"),  # one form either side of 2^50 (review)
    (10**400, "9.095e+387 TiB"),  # no OverflowError
    (-(2**31), "-2 GiB"), (None, "-"),
])
def test_memory_text_is_the_one_binary_form_of_the_reports(v, shown):
    """core.units.memory_text: memory limits, capacities and footprints (explore's table, check,
    explore split, warnings, suggestions), exact Fractions and huge values alike."""
    from explorer.core.units import memory_text

    assert memory_text(v) == shown


def test_gpu_memory_bytes_are_exact():
    from explorer.core.cluster import GpuKind
    from explorer.core.units import GiB

    mem = GpuKind("g", F(1), 80).memory_bytes  # an int memory_GiB still gives exact Fraction bytes
    assert mem == 80 * GiB and isinstance(mem, F)


@pytest.mark.parametrize("v, shown", [
    (F(233741, 10**10), "23.3741 us"),  # lenet-c's uneven optimum on tpu-mix-16 (check --uneven's docs example)
    (F(805411, 10**6), "805.411 ms"),
    (F(4522572, 5615234375), "805.411 us"),  # trial 13's seed plan, 0.000805411... s
    (2.858123, "2.85812 s"),
    (0, "0 us"),
    (1.5e-9, "1.5 ns"),
    (5e-10, "5e-10 s"),
    (10**7, "1.000e+07 s"),
])
def test_a_check_tables_times_are_the_split_reports_units_to_six_digits(v, shown):
    # check --uneven printed "step ms" columns (0.0233741), the split report fmt_seconds (23 us): one formatter
    assert fmt_seconds(v, 6) == shown


BINARY = r"\d[\d.,e+]* (?:B|KiB|MiB|GiB|TiB)"  # memory_text's forms
DECIMAL = re.compile(r"\d (?:kB|MB|GB|TB)\b")


def decimal_memory(text: str) -> list[str]:
    """The phrases about memory (a line's parts between ';' and ', ') that give an amount in
    decimal units: none, once memory is binary everywhere."""
    parts = [x for line in text.splitlines() for x in re.split(r"; |, ", line) if "memory" in x]
    return [x for x in parts if DECIMAL.search(x)]


def _memory_cells(out: str) -> list[str]:
    """The memory/acc column of explore's comparison table."""
    lines = out.splitlines()
    head = next(k for k, line in enumerate(lines) if line.startswith("plan ") and "memory/acc" in line)
    rows = [x for x in lines[head + 1:] if x.strip()][:4]
    return [re.search(r"(\S+ \S+)\s+(?:yes|no)$", r).group(1) for r in rows]


def test_explore_writes_its_limit_and_footprints_in_one_binary_family(capsys):
    """The worked example: 'memory 4 GiB/accelerator' above a memory/acc column that was decimal
    (529.184 MB, 1.446 GB) and is now binary (504.7 MiB, 1.347 GiB): comparable at a glance."""
    code, out, err = run_cli([], capsys)
    assert code == 0
    assert "constraints: memory 4 GiB/accelerator (weight copies 0)" in out
    cells = _memory_cells(out)
    assert cells == ["504.7 MiB", "1.347 GiB", "428.8 MiB", "494.7 MiB"]  # dp, all-I, all-II, trick
    # a limit every plan breaks: the constraints line, the column, the warning and the suggestion, one family
    code, out, err = run_cli(["--memory", "0.3", "--solver", "cpsat"], capsys)
    assert code == 1 and "constraints: memory 307.2 MiB/accelerator" in out  # 0.3 x 2^30 B / 2^20 = 307.2
    assert "these conflict: memory <= 307.2 MiB per accelerator (--memory)" in out
    assert "the smallest feasible memory is 428.8 MiB per accelerator: try --memory 0.4188" in out
    code, out, err = run_cli(["--memory", "0.3"], capsys)  # the DP's plan breaks it: the warning names it
    assert all(re.fullmatch(BINARY, c) for c in _memory_cells(out))
    assert "explore: the dp plan breaks memory <= 307.2 MiB per accelerator" in err
    for text in (out, err):
        assert decimal_memory(text) == [], text


def test_explore_split_writes_footprint_limit_and_excess_in_binary(capsys):
    code, out, err = run_cli(["split", "--model", "vgg-e", "--batch", "16384", "--space", "hypar", "--split", "equal"],
                             capsys)
    assert code == 1 and "  v2       x8        20.08 GiB of 16 GiB  OVER by 4.083 GiB" in out
    assert "PLAN BREAKS: memory of v2 <= 16 GiB per accelerator by 4.083 GiB" in out
    assert "v2 needs 20.08 GiB per accelerator, has 16 GiB" in err
    for text in (out, err):
        assert decimal_memory(text) == [], text


def test_a_cap_stays_decimal_beside_a_binary_memory_limit(capsys):
    """Traffic and caps are bytes over links, decimal as GB/s is: 'cap level 3 <= 55 MB ... by 4.432 MB'."""
    code, out, err = run_cli(["--cap", "3=55MB"], capsys)
    assert code == 1 and "constraints: cap level 3 <= 55 MB (--cap), memory 4 GiB/accelerator" in out
    assert "PLAN BREAKS: cap level 3 <= 55 MB (--cap) by 4.432 MB" in out
    assert decimal_memory("constraints: cap level 3 <= 55 MB (--cap), memory 4 GiB/accelerator") == []
    assert decimal_memory("constraints: memory 0.05 GiB (53.69 MB)/accelerator") != []  # as it was: caught
