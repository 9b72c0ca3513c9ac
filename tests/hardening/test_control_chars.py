"""Device text (vendor, PN, SN) with terminal escapes is shown escaped wherever eqtune
prints it: module show, live-tune events, session show, push results, one-line errors."""

from __future__ import annotations

from click.testing import CliRunner

from eqtune.cli import main
from eqtune.drivers import cmis_map as M
from eqtune.drivers.transport import parse_resource
from eqtune.emulate.registry import emulator_for
from eqtune.textsafe import printable

EVIL_VENDOR = b"EV\x1b]52;c;SGk=\x07L\x9b2J"  # OSC 52 (clipboard write) + C1 CSI "clear screen"
EVIL_SN = b"S\x1b[2J\xe2\x80\xaeN"  # CSI clear screen + U+202E right-to-left override (UTF-8 bytes)


def _evil(name: str, extra: str = "") -> str:
    res = f"emu:c2m-10in?settle_ms=0&fast=1&name={name}{extra}"
    emu = emulator_for(parse_resource(res))
    emu.poke(0x00, M.VENDOR_NAME.offset, EVIL_VENDOR.ljust(16, b" "))
    emu.poke(0x00, M.VENDOR_SN.offset, EVIL_SN.ljust(16, b" "))
    # page 00h byte 222: checksum of bytes 128..221 (CMIS 5.2 Table 8-28)
    emu.poke(0x00, 222, bytes([sum(emu.peek(0x00, 128, 94)) & 0xFF]))
    return res


def _clean(text: str) -> None:
    assert not any(c in text for c in ("\x1b", "\x07", "\x9b", "\u202e")), repr(text)


def test_printable():
    assert printable("ACME  800G") == "ACME  800G"
    assert printable("a\x1b[2Jb\u202ec\n") == "a\\x1b[2Jb\\u202ec\\x0a"


def test_module_show_escapes_device_text():
    res = _evil("evil-show")
    r = CliRunner().invoke(main, ["module", "show", res])
    assert r.exit_code == 0, r.output
    _clean(r.output)
    assert "\\x1b]52" in r.output


def test_live_events_session_show_and_push_escape_device_text(tmp_path):
    res = _evil("evil-live", "&adaptive=0")
    r = CliRunner().invoke(main, ["tune", "c2m-10in", "--live", "--module", res, "--lane", "1", "--module-ber",
                                  "--budget", "3", "--dwell", "0.01", "--sessions", str(tmp_path),
                                  "--session", "evil", "--save-profile", str(tmp_path / "p.json")])
    assert r.exit_code == 0, r.output
    _clean(r.output)
    assert "\\x1b" in r.output  # the device line of the tune shows the escapes
    r = CliRunner().invoke(main, ["session", "show", "evil", "--sessions", str(tmp_path)])
    assert r.exit_code == 0
    _clean(r.output)
    # a push to a module with another SN: the identity mismatch message quotes the device text
    other = "emu:c2m-10in?settle_ms=0&fast=1&name=evil-other"
    r = CliRunner().invoke(main, ["profile", "push", str(tmp_path / "p.json"), "--module", other])
    _clean(r.output)
    r = CliRunner().invoke(main, ["profile", "show", str(tmp_path / "p.json")])
    _clean(r.output)
