"""``emu:`` reaches the emulators through the declarative scheme registry
(eqtune/drivers/schemes.py), imported on first use; the hardware room imports no emulator."""

from __future__ import annotations

import subprocess
import sys

import pytest

from eqtune.drivers import schemes
from eqtune.drivers.transport import parse_resource
from eqtune.errors import InputError


def test_emulators_are_imported_only_when_an_emu_resource_is_used():
    code = ("import sys; from eqtune.drivers.transport import parse_resource; "
            "parse_resource('i2c:1@0x50'); parse_resource('net:127.0.0.1:7700'); "
            "print('before', 'eqtune.emulate' in sys.modules); "
            "s = parse_resource('emu:c2m-10in?seed=3'); "
            "print('after', 'eqtune.emulate.transport' in sys.modules, 'eqtune.emulate.module' in sys.modules, "
            "s.kind, s.target, s.options)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split("\n")
    assert out[0] == "before False"
    # parsing checks the options and the channel name; the emulator itself loads on open
    assert out[1] == "after True False emu c2m-10in {'seed': '3'}"


def test_a_registered_scheme_is_parsed_and_opened_through_its_strings(monkeypatch):
    monkeypatch.setitem(schemes.SCHEMES, "lab", schemes.SCHEMES["emu"])
    spec = parse_resource("lab:c2m-10in?fast=1&settle_ms=0")
    assert (spec.kind, spec.target, spec.options) == ("emu", "c2m-10in", {"fast": "1", "settle_ms": "0"})
    with pytest.raises(InputError, match="unknown emulator option"):
        parse_resource("lab:c2m-10in?bogus=1")


def test_unknown_schemes_and_bad_registrations_are_refused():
    with pytest.raises(InputError, match="emu:CHANNEL"):
        parse_resource("lab:c2m-10in")
    with pytest.raises(ValueError, match="module:function"):
        schemes.register_scheme("lab", parse="eqtune.emulate.transport", open="x:y")
    with pytest.raises(ValueError, match="lower-case"):
        schemes.register_scheme("Lab", parse="a:b", open="a:c")
    assert "lab" not in schemes.SCHEMES
