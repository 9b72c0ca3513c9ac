"""Every implementation meets the contracts of eqtune/drivers/protocols.py, member by member.

For each Protocol member: the implementation has it (methods on the class, attributes on an
instance), and its signature accepts every call the Protocol allows (same parameter names for
keyword use, positions for positional use, defaults where the Protocol has them, no extra required
parameter). The static counterpart is tests/typecheck/protocol_conformance.py (mypy).

Implementations: the CMIS driver (what ``emu:`` opens, over the emulator transport), the test fake
(tests/session/fakes.py), SCPI instruments bound to the SCPI emulator on 127.0.0.1 through pyvisa-py,
the SCPI and register transports, and the CMIS module emulator with its clocks.
"""

from __future__ import annotations

import inspect
from typing import Any, Protocol

import pytest

from eqtune.drivers import protocols as P
from eqtune.drivers.cmis import CmisDriver, open_module
from eqtune.drivers.instrument import Instrument, ReplayTransport, open_instrument
from eqtune.drivers.netbridge import NetTransport
from eqtune.drivers.transport import FtdiTransport, OptoeTransport, PagedRegisters, SMBusTransport
from eqtune.drivers.visa import VisaTransport
from eqtune.emulate.faults import FaultyTransport
from eqtune.emulate.link import EmulatedLink, surrogate_quality
from eqtune.emulate.module import EmulatedModule, RealClock, VirtualClock
from eqtune.emulate.registry import reset_emulators
from eqtune.emulate.scpi import ScpiEmulator
from eqtune.emulate.transport import EmulatorTransport
from tests.session.fakes import FakeModule

_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
_SPECIAL = {"__enter__", "__exit__", "__call__"}  # dunders that are part of a contract


def protocol_members(proto: type) -> dict[str, object]:
    """name -> Protocol attribute (function, property, or None for a bare annotation)."""
    out: dict[str, object] = {}
    for klass in reversed(proto.__mro__):
        if klass in (object, Protocol) or not getattr(klass, "_is_protocol", False):
            continue
        for name in getattr(klass, "__annotations__", {}):
            out.setdefault(name, None)
        for name, value in vars(klass).items():
            if (name.startswith("_") and name not in _SPECIAL) or not (callable(value) or isinstance(value, property)):
                continue
            out[name] = value
    return out


def signature_problems(name: str, want: inspect.Signature, got: inspect.Signature) -> list[str]:
    """Why a method with signature ``got`` cannot take every call ``want`` allows (empty: it can)."""
    wp = [p for p in want.parameters.values() if p.name != "self"]
    gp = [p for p in got.parameters.values() if p.name != "self"]
    g_varpos = any(p.kind is p.VAR_POSITIONAL for p in gp)
    g_varkw = any(p.kind is p.VAR_KEYWORD for p in gp)
    g_pos = [p for p in gp if p.kind in _POSITIONAL]
    g_by_name = {p.name: p for p in gp if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    used: set[str] = set()
    problems = []
    for i, p in enumerate(q for q in wp if q.kind in _POSITIONAL):
        if i < len(g_pos):
            g = g_pos[i]
            if p.kind is p.POSITIONAL_OR_KEYWORD and g.name != p.name:
                problems.append(f"{name}: parameter {i + 1} is {g.name!r}, the Protocol calls it {p.name!r}")
            if p.default is not p.empty and g.default is g.empty:
                problems.append(f"{name}: {g.name!r} needs a default ({p.name}={p.default!r} in the Protocol)")
            used.add(g.name)
        elif not g_varpos:
            problems.append(f"{name}: takes no positional parameter {p.name!r}")
    for p in wp:
        if p.kind is p.KEYWORD_ONLY:
            g = g_by_name.get(p.name)
            if g is None and not g_varkw:
                problems.append(f"{name}: has no keyword parameter {p.name!r}")
            elif g is not None:
                used.add(g.name)
                if p.default is not p.empty and g.default is g.empty:
                    problems.append(f"{name}: {p.name!r} needs a default")
        elif p.kind is p.VAR_KEYWORD and not g_varkw:
            problems.append(f"{name}: does not take **{p.name}")
        elif p.kind is p.VAR_POSITIONAL and not g_varpos:
            problems.append(f"{name}: does not take *{p.name}")
    for g in gp:
        if g.name not in used and g.kind in (*_POSITIONAL, g.KEYWORD_ONLY) and g.default is g.empty:
            problems.append(f"{name}: extra required parameter {g.name!r}")
    return problems


def conformance_problems(proto: type, impl: type, instance: object | None = None) -> list[str]:
    """Every way ``impl`` (and, for data attributes, ``instance``) falls short of ``proto``."""
    problems = []
    for name, want in protocol_members(proto).items():
        holder: Any = instance if instance is not None else impl
        if not hasattr(impl, name) and not hasattr(holder, name):
            problems.append(f"{impl.__name__}: missing {name!r}")
            continue
        if isinstance(want, property) or want is None:
            continue
        got = inspect.getattr_static(impl, name, None)
        if got is None:
            problems.append(f"{impl.__name__}: {name!r} is not a method of the class")
            continue
        if isinstance(got, (staticmethod, classmethod)):
            got = got.__func__
        if not callable(got):
            problems.append(f"{impl.__name__}: {name!r} is not callable")
            continue
        problems += signature_problems(f"{impl.__name__}.{name}", inspect.signature(want),  # type: ignore[arg-type]
                                       inspect.signature(got))
    return problems


def test_protocols_list_what_their_users_call():
    """The CmisModule contract covers every call session/, tune/live, watch/, tui/ and cli/ make."""
    members = set(protocol_members(P.CmisModule))
    called = {"resource", "notify", "close", "__enter__", "__exit__", "module_state", "identity", "capabilities",
              "dp_states", "apply_method", "active_eq", "active_eq_all", "tx_adaptive_enabled", "validate_eq",
              "plan_eq", "apply_eq", "enable_tx_adaptive", "set_tx_adaptive", "module_ber", "vdm", "temperature_c"}
    assert called <= members
    assert {"measure_ber", "resource", "kind", "identity", "close"} <= set(protocol_members(P.Bert))
    assert {"measure_eye", "resource", "kind", "identity", "close"} <= set(protocol_members(P.Scope))


# ---------------------------------------------------------------------------------------------- modules
@pytest.fixture
def emulated():
    link = EmulatedLink("c2m-10in", seed=1, quality=surrogate_quality(16.0))
    return EmulatedModule(link, settle_s=0.0, clock=VirtualClock())


def test_the_driver_meets_cmis_module(emulated):
    drv = CmisDriver(PagedRegisters(EmulatorTransport(emulated, "emu:proto")), resource="emu:proto")
    assert conformance_problems(P.CmisModule, CmisDriver, drv) == []
    assert isinstance(drv, P.CmisModule)


def test_what_an_emu_resource_opens_meets_cmis_module():
    reset_emulators()
    try:
        with open_module("emu:c2m-10in?fast=1&settle_ms=0&name=protocols") as mod:
            assert conformance_problems(P.CmisModule, type(mod), mod) == []
            assert mod.identity().vendor  # the contract's dataclass, read from the emulator's registers
    finally:
        reset_emulators()


def test_the_test_fake_meets_cmis_module_and_returns_the_real_dataclasses():
    from eqtune.drivers.cmis_types import EqCapabilities, ModuleIdentity

    fake = FakeModule()
    assert conformance_problems(P.CmisModule, FakeModule, fake) == []
    assert type(fake.identity()) is ModuleIdentity and type(fake.capabilities()) is EqCapabilities


def test_the_emulator_meets_two_wire_target_and_its_clocks_clock(emulated):
    assert conformance_problems(P.TwoWireTarget, EmulatedModule, emulated) == []
    for clock in (RealClock, VirtualClock):
        assert conformance_problems(P.Clock, clock, clock()) == []


@pytest.mark.parametrize("cls", [SMBusTransport, OptoeTransport, FtdiTransport, NetTransport, EmulatorTransport,
                                 FaultyTransport])
def test_register_transports(cls):
    assert conformance_problems(P.RegisterTransport, cls) == []


# ---------------------------------------------------------------------------------------------- instruments
def test_instruments_on_the_scpi_emulator_meet_bert_and_scope():
    link = EmulatedLink("c2m-10in", seed=2, quality=surrogate_quality(16.0))
    servers = [ScpiEmulator("keysight-m8040a", link, seed=1).start(), ScpiEmulator("keysight-flexdca", link, seed=1).start()]
    try:
        bert = open_instrument(servers[0].resource, timeout_ms=3000)
        scope = open_instrument(servers[1].resource, timeout_ms=3000)
        try:
            assert (bert.kind, scope.kind) == ("bert", "scope")
            assert conformance_problems(P.Bert, Instrument, bert) == []
            assert conformance_problems(P.Scope, Instrument, scope) == []
            assert conformance_problems(P.ScpiTransport, VisaTransport, bert.transport) == []
            assert isinstance(bert, P.Bert) and isinstance(scope, P.Scope)
            count = bert.measure_ber(1, 0.01)  # the contract's return types, through pyvisa-py
            eye = scope.measure_eye(1)
            assert count.bits > 0 and eye["lane"] == 1
        finally:
            bert.close()
            scope.close()
    finally:
        for s in servers:
            s.stop()


def test_replay_transport_meets_scpi_transport():
    rt = ReplayTransport([])
    assert conformance_problems(P.ScpiTransport, ReplayTransport, rt) == []


# ---------------------------------------------------------------------------------------------- the checker itself
def _copy_without(cls: type, name: str, **replace: object) -> type:
    body = {k: v for k, v in vars(cls).items() if k != name and k not in ("__dict__", "__weakref__")}
    body.update(replace)
    return type("Broken" + cls.__name__, (), body)


def test_a_missing_member_is_caught():
    broken = _copy_without(FakeModule, "temperature_c")
    assert conformance_problems(P.CmisModule, broken, broken()) == ["BrokenFakeModule: missing 'temperature_c'"]


def test_a_renamed_or_narrowed_parameter_is_caught():
    def apply_eq(self, codes, *, how="auto"):  # keyword renamed: apply_eq(codes, method=...) would fail
        return None

    def module_ber(self, lane_list, dwell_s):  # positional renamed: module_ber(lanes=..., ...) would fail
        return {}

    def active_eq(self, lane, verbose):  # extra required parameter
        return {}

    def capabilities(self, refresh):  # default dropped
        return None

    for fn, expect in ((apply_eq, "no keyword parameter 'method'"), (module_ber, "parameter 1 is 'lane_list'"),
                       (active_eq, "extra required parameter 'verbose'"), (capabilities, "needs a default")):
        broken = _copy_without(FakeModule, fn.__name__, **{fn.__name__: fn})
        problems = conformance_problems(P.CmisModule, broken, broken())
        assert len(problems) == 1 and expect in problems[0], problems
