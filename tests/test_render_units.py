"""fmt_seconds and fmt_joules share one milli/micro ladder (render._milli_micro): each keeps its
own forms below a microunit (nanoseconds; e-notation) and its own micro digits, and both switch to
e-notation from a million units up."""

from __future__ import annotations

from fractions import Fraction as F

import pytest

from explorer.app.render import fmt_joules, fmt_seconds


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


def test_gib_text_is_the_one_gib_form_of_the_reports():
    """core.units.gib_text: the memory limits explore writes in GiB (render, results, the split's
    refusal), exact Fractions and huge values alike."""
    from explorer.core.cluster import GpuKind
    from explorer.core.units import GiB, gib_text

    assert gib_text(80 * GiB) == "80 GiB"
    assert gib_text(F(GiB, 20)) == "0.05 GiB"
    assert gib_text(10**400) == "inf GiB"  # no OverflowError
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
