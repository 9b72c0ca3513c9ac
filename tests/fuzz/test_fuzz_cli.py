"""Fuzz the CLI's numeric options: any text for --dwell, --budget, --target-ber, --time-budget,
--target, --verify-dwell, --settle, --patience, --remeasure of a live tune, the emulator resource's
options, and numeric options of other commands. In-process (click's CliRunner). The tune stops right
after its configuration is accepted (before any I/O) and the accepted configuration must be sane."""

from __future__ import annotations

import math

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from eqtune.cli import main
from eqtune.errors import InputError
from tests.fuzz.fuzzlib import cli_contract, fuzz, time_limit

NUMBERS = st.one_of(
    st.sampled_from(["nan", "NaN", "inf", "-inf", "+inf", "1e400", "-1e400", "0", "-0", "-1", "1e-320", "2", "0.5",
                     "1e-12", "3", "30", "1e9", "", " ", "x", "1,2", "0x10", "1_000", "١", "1e5", "-5", "4-1"]),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(-10**12, 10**12).map(str),
    st.text(max_size=6),
)
LIVE_OPTIONS = ["--dwell", "--budget", "--target-ber", "--time-budget", "--target", "--verify-dwell", "--settle",
                "--patience", "--remeasure", "--seed", "--lane"]


class _Accepted(InputError):
    """Raised instead of creating the session: the options were accepted."""


@pytest.fixture
def accepted(monkeypatch):
    from eqtune.session.live import LiveTuner

    got: list = []

    def create(cfg, **kw):
        cfg.check()  # as LiveTuner.create does first
        got.append(cfg)
        raise _Accepted("accepted")

    monkeypatch.setattr(LiveTuner, "create", classmethod(lambda cls, cfg, **kw: create(cfg, **kw)))
    return got


@fuzz(300)
@given(opts=st.lists(st.tuples(st.sampled_from(LIVE_OPTIONS), NUMBERS), min_size=1, max_size=3))
def test_live_tune_numeric_options(accepted, opts):
    args = ["tune", "c2m-10in", "--live", "--module", "emu:c2m-10in?fast=1&settle_ms=0", "--module-ber"]
    for name, value in opts:
        args += [name, value]
    accepted.clear()
    with time_limit():
        r = CliRunner().invoke(main, args)
    cli_contract(r)
    if accepted:  # the configuration that passed: every number finite and in range
        cfg = accepted[0]
        cfg.check()
        assert cfg.budget >= 1 and cfg.dwell_s > 0 and math.isfinite(cfg.dwell_s)
        assert all(1 <= ln <= 8 for ln in cfg.lanes)
        assert cfg.time_budget_s is None or (cfg.time_budget_s > 0 and math.isfinite(cfg.time_budget_s))
        assert cfg.target_ber is None or 0 < cfg.target_ber <= 0.5


@fuzz(100)
@given(key=st.sampled_from(["settle_ms", "seed", "lanes", "fast", "adaptive", "noise"]), value=NUMBERS,
       channel=st.sampled_from(["c2m-10in", "nonexistent", "", "c2m-10in.toml", "../x"]))
def test_emulator_resource_options(key, value, channel):
    from eqtune.emulate.registry import reset_emulators

    reset_emulators()
    res = f"emu:{channel}?{key}={value}"
    with time_limit():
        r = CliRunner().invoke(main, ["module", "show", res])
    cli_contract(r)
    if r.exit_code == 0 and key == "settle_ms":
        assert 0 <= float(value) <= 60000
