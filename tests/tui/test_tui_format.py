"""What the on-site screen prints for BER, margins and lanes (eqtune.tui.format), checked against
independent computations."""

from __future__ import annotations

import math

import numpy as np
import pytest

from eqtune.errors import InputError
from eqtune.tui.format import ber_upper95_zero_errors, eta_s, fmt_ber, fmt_duration, fmt_margin, parse_lanes


def test_zero_errors_show_the_95_percent_upper_bound_with_the_bits() -> None:
    bits = 1.0625e12
    text = fmt_ber({"bits": bits, "errors": 0})
    assert text == "< 2.8e-12 (0 errors in 1.1e+12 bits)"
    # independent: the exact binomial bound solves (1 - p)^N = 0.05 (one-sided 95 %); for large N the
    # rule of three -ln(0.05)/N agrees to < 1e-9 relative (Hanley & Lippman-Hand 1983)
    exact = -np.expm1(np.log(0.05) / bits)
    assert ber_upper95_zero_errors(bits) == pytest.approx(exact, rel=1e-9)
    # a reading that carries its own bound is shown with it, not recomputed
    assert fmt_ber({"bits": bits, "errors": 0, "ber_upper95": 3.1e-12}).startswith("< 3.1e-12")


def test_errors_show_the_estimate_and_the_counts() -> None:
    assert fmt_ber({"bits": 2.0e10, "errors": 34}) == "1.7e-09 (34 errors in 2.0e+10 bits)"
    assert fmt_ber({"bits": 2.0e10, "errors": 34}, short=True) == "1.7e-09 (34/2.0e+10)"
    assert fmt_ber({"ber": 3e-7}) == "3.0e-07"  # an instrument with a bare BER
    assert fmt_ber(None) == "-"


def test_margins_carry_their_unit() -> None:
    assert fmt_margin(10.0723, "ber") == "10.07 (-log10(BER))"
    assert fmt_margin(31.5, "eye_height") == "31.50 (mV)"
    assert fmt_margin(None, "ber") == "-"


@pytest.mark.parametrize("text, lanes", [("1", [1]), ("1,3", [1, 3]), ("1-8", list(range(1, 9))),
                                         (" 1-4, 7 ", [1, 2, 3, 4, 7]), ("all", list(range(1, 9))),
                                         ("2,2,1", [1, 2])])
def test_lanes_as_the_cli_takes_them(text: str, lanes: list[int]) -> None:
    assert parse_lanes(text) == lanes


@pytest.mark.parametrize("text", ["x", "8-1", "1-", "one"])
def test_bad_lanes_say_what_to_type(text: str) -> None:
    with pytest.raises(InputError, match="1-8"):
        parse_lanes(text)


def test_eta_and_durations() -> None:
    assert eta_s(0, 30, 5.0) is None
    assert eta_s(10, 30, 20.0) == pytest.approx(40.0)
    assert fmt_duration(42.4) == "42 s"
    assert fmt_duration(185) == "3 min 05 s"
    assert fmt_duration(3720) == "1 h 02 min"
    assert fmt_duration(math.inf) == "-"
