"""ConfigStatus is polled until it leaves ConfigInProgress / ConfigUndefined, within the module's
advertised MaxDuration (page 01h byte 144) and the host cap; a late answer is waited for, a real
rejection named as one, no answer named as that. Virtual clock at real-host timing (500 ms after the
trigger, 500 ms polls): nothing sleeps for real."""

from __future__ import annotations

import pytest

from eqtune.drivers.cmis import CmisDriver
from eqtune.drivers.transport import PagedRegisters
from eqtune.emulate.link import EmulatedLink, surrogate_quality
from eqtune.emulate.module import EmulatedModule, VirtualClock
from eqtune.emulate.transport import EmulatorTransport
from eqtune.errors import ModuleError


def make(image: str, **kw) -> tuple[EmulatedModule, CmisDriver, VirtualClock]:
    clock = VirtualClock()
    lanes = 4 if image == "qsfp4-regular" else 8
    link = EmulatedLink("c2m-10in", lanes=lanes, seed=3, noise=False, quality=surrogate_quality(16.0))
    emu = EmulatedModule(link, settle_s=0.05, clock=clock, image=image, **kw)
    mod = CmisDriver(PagedRegisters(EmulatorTransport(emu, f"emu:{image}")), resource=f"emu:{image}")
    assert mod.timing.after_trigger_s == 0.5 and mod.timing.dp_poll_s == 0.5  # real-host waits
    return emu, mod, clock


@pytest.mark.parametrize("image", ["osfp8-both", "qsfpdd8-stepped"])
@pytest.mark.parametrize("hold_s", [0.1, 0.6, 2.0, 5.0])
def test_module_set_survives_config_in_progress(image, hold_s):
    """ConfigInProgress held 0.1-5 s, shown only 0.6 s after the trigger (ConfigUndefined until then,
    as the module powered up): the apply waits for the answer and verifies the codes."""
    emu, mod, clock = make(image, config_s=hold_s, status_latency_s=0.6)
    t0 = clock()
    mod.apply_eq({1: {"tx_eq": 4}})
    assert mod.active_eq(1)["tx_eq"] == 4
    took = clock() - t0
    assert hold_s <= took <= hold_s + 3.0  # answered within a few polls of the module's own time


def test_a_module_that_never_answers_is_not_called_a_rejection():
    emu, mod, clock = make("osfp8-both", config_s=30.0)  # advertises 0.1 s + 0.1 s: limit 10 s
    t0 = clock()
    with pytest.raises(ModuleError) as err:
        mod.apply_eq({1: {"tx_eq": 4}})
    msg = str(err.value)
    assert "no configuration result after 10 s" in msg and "ConfigInProgress" in msg
    assert "did not reject" in msg and "rejected the configuration" not in msg
    assert 10.0 <= clock() - t0 <= 60.0  # gave up at the limit (plus restoring)


def test_the_limit_follows_the_advertised_duration_and_the_host_cap():
    emu, mod, _ = make("osfp8-both")
    emu.poke(1, 144, bytes([0x77]))  # 5 s + 5 s advertised
    mod.capabilities(refresh=True)
    assert mod._timeout() == 20.0
    emu.poke(1, 144, bytes([0xDD]))  # 6000 s each: the host cap
    mod.capabilities(refresh=True)
    assert mod._timeout() == mod.timing.host_cap_s == 120.0


def test_a_slow_module_within_its_advertised_time_is_waited_for():
    emu, mod, clock = make("osfp8-both", config_s=15.0)
    emu.poke(1, 144, bytes([0x77]))  # advertises 5 s + 5 s: limit 20 s > 15 s
    mod.capabilities(refresh=True)
    mod.apply_eq({1: {"tx_eq": 6}})
    assert mod.active_eq(1)["tx_eq"] == 6


def test_a_real_rejection_is_named_with_its_code():
    emu, mod, _ = make("qsfpdd8-stepped", config_s=1.0)
    emu.inject("reject", code=5)
    with pytest.raises(ModuleError, match=r"rejected the configuration \(lane 1 ConfigRejectedInvalidSI"):
        mod.apply_eq({1: {"tx_eq": 4}})
