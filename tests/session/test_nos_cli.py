"""``eqtune profile export|import|diff`` and the volatility of pushed codes, end to end on emulators.

Each refusal the NOS's staging would meet (value above the advertised maximum, unknown key, control not
advertised, lane beyond the port, vendor key not matching the PN) is one line, exit 2, and no file
written; export -> import gives the same codes; a merge into a real platform file changes only eqtune's
entries; a push says the codes are volatile; verify tells "reverted after reset" from "never applied".
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from eqtune.cli import main
from eqtune.drivers.cmis import CmisDriver
from eqtune.drivers.transport import PagedRegisters, parse_resource
from eqtune.emulate.link import EmulatedLink
from eqtune.emulate.module import EmulatedModule, VirtualClock
from eqtune.emulate.registry import emulator_for
from eqtune.emulate.transport import EmulatorTransport
from eqtune.serdes.knobs import RX_AMP, RX_POST, RX_PRE, TX_EQ
from eqtune.session.nos import SONIC_SI, NosOptions, export_to_file
from eqtune.session.nos_common import NosFormatError, facts_from_module, structural_diff
from eqtune.session.profile import Profile

DATA = Path(__file__).resolve().parents[1] / "data" / "nos"
EMU = "emu:c2m-10in?fast=1&settle_ms=0&noise=0&name={}"


def run(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def profile_for(res: str, path: Path, codes=None, lanes: int = 8) -> Path:
    ident = emulator_for(parse_resource(res)).identity
    codes = codes or {ln: {RX_PRE: 1 + ln % 3, RX_POST: 2, RX_AMP: ln % 4, TX_EQ: 3 + ln % 5} for ln in range(1, lanes + 1)}
    Profile.from_identity(ident, codes).save(path)
    return path


def one_line_error(r) -> str:
    assert r.exit_code == 2, r.output
    err = r.stderr if hasattr(r, "stderr") else r.output
    lines = [ln for ln in err.splitlines() if ln.startswith("eqtune: error:")]
    assert len(lines) == 1, err
    return lines[0]


# ----------------------------------------------------------------------------------- refusals
def test_value_above_advertised_maximum_refused_before_writing(tmp_path):
    res = EMU.format("nos-max")
    p = profile_for(res, tmp_path / "p.json", {ln: {RX_PRE: 9} for ln in range(1, 9)})  # emulator advertises 0..7
    out = tmp_path / "o.json"
    line = one_line_error(run("profile", "export", str(p), "--format", "sonic-optics-si", "--port", "5",
                              "--lane-speed", "100", "--module", res, "--out", str(out)))
    assert "rx_pre=9" in line and "above the module's advertised maximum 7" in line
    assert not out.exists()


def test_lane_beyond_the_port_refused(tmp_path):
    res = "emu:c2m-10in?fast=1&settle_ms=0&image=qsfp4-regular&name=nos-lanes"
    p = profile_for(res, tmp_path / "p.json")  # lanes 1-8 for a 4-lane module
    out = tmp_path / "o.json"
    line = one_line_error(run("profile", "export", str(p), "--format", "sonic-optics-si", "--port", "5",
                              "--lane-speed", "100", "--module", res, "--out", str(out)))
    assert "lane 5" in line and "beyond the port" in line
    assert not out.exists()


def test_vendor_key_not_matching_the_pn_refused(tmp_path):
    res = EMU.format("nos-key")
    p = profile_for(res, tmp_path / "p.json")
    out = tmp_path / "o.json"
    line = one_line_error(run("profile", "export", str(p), "--format", "sonic-optics-si", "--port", "5",
                              "--lane-speed", "100", "--vendor-key", "EQTUNE EMULATOR-EMU-400G.*", "--out", str(out)))
    assert "does not match the module" in line and "EMU-800G-OSFP" in line
    assert not out.exists()


def test_unknown_key_in_an_imported_file_refused(tmp_path):
    res = EMU.format("nos-unknown")
    p = profile_for(res, tmp_path / "p.json")
    good = tmp_path / "o.json"
    assert run("profile", "export", str(p), "--format", "sonic-optics-si", "--port", "5", "--lane-speed", "100",
               "--out", str(good)).exit_code == 0
    doc = json.loads(good.read_text())
    entry = doc["PORT_MEDIA_SETTINGS"]["5"]["100G_SPEED"]["EQTUNE EMULATOR-EMU-800G-OSFP"]
    entry["OutputEqPreCursorTargetRX"] = entry.pop("OutputEqPreCursorTargetRx")  # a typo SONiC would reject
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    out = tmp_path / "imported.json"
    line = one_line_error(run("profile", "import", str(bad), "--format", "sonic-optics-si", "--port", "5",
                              "--lane-speed", "100", "--module", res, "--out", str(out)))
    assert "unknown key 'OutputEqPreCursorTargetRX'" in line
    assert not out.exists()


def test_non_advertised_control_refused(tmp_path):
    link = EmulatedLink("c2m-10in", lanes=8, seed=1, noise=False)
    emu = EmulatedModule(link, settle_s=0.0, clock=VirtualClock(), rx_amp_codes=())  # no Rx amplitude control
    drv = CmisDriver(PagedRegisters(EmulatorTransport(emu, "emu:noamp")), resource="emu:noamp")
    facts = facts_from_module(drv, "emu:noamp")
    prof = Profile.from_identity(drv.identity(), {ln: {RX_PRE: 1, RX_AMP: 2} for ln in range(1, 9)})
    out = tmp_path / "o.json"
    with pytest.raises(NosFormatError) as ei:
        export_to_file(SONIC_SI, prof, facts, NosOptions(ports=[5], lane_speed_g=100), out=str(out))
    assert "rx_amp on lane 1 is a control this module does not advertise" in str(ei.value)
    assert "\n" not in str(ei.value) and not out.exists()


# ----------------------------------------------------------------------------------- round trips
@pytest.mark.parametrize("fmt,extra", [
    ("sonic-optics-si", ["--port", "7", "--lane-speed", "100"]),
    ("sonic-optics-si", ["--port", "1-4,9", "--lane-speed", "200", "--scope", "global"]),
])
def test_export_import_round_trip_gives_the_same_profile(tmp_path, fmt, extra):
    res = EMU.format("nos-rt")
    p = profile_for(res, tmp_path / "p.json")
    nos = tmp_path / "nos.json"
    assert run("profile", "export", str(p), "--format", fmt, *extra, "--module", res, "--out", str(nos)).exit_code == 0
    back = tmp_path / "back.json"
    port = extra[1].split(",")[-1].split("-")[0]
    imp = extra[:1] + [port] + extra[2:4]
    r = run("profile", "import", str(nos), "--format", fmt, *imp, "--module", res, "--out", str(back))
    assert r.exit_code == 0, r.output
    a, b = Profile.load(p), Profile.load(back)
    assert a.codes() == b.codes()
    assert (a.module["vendor"], a.module["pn"]) == (b.module["vendor"], b.module["pn"])


def test_fboss_round_trip_and_per_port_refusal(tmp_path):
    res = EMU.format("nos-fboss")
    same = {ln: {RX_PRE: 2, RX_POST: 3, RX_AMP: 1} for ln in range(1, 9)}
    p = profile_for(res, tmp_path / "p.json", same)
    nos = tmp_path / "qsfp.json"
    r = run("profile", "export", str(p), "--format", "fboss", "--application-code", "DR4_800G", "--module", res,
            "--out", str(nos))
    assert r.exit_code == 0, r.output
    assert "every CMIS module of application 0x77" in r.output
    ov = json.loads(nos.read_text())["transceiverConfigOverrides"][0]
    assert ov == {"factor": {"applicationCode": 0x77},
                  "config": {"cmis": {"rxEqualizerSettings": {"preCursor": 2, "postCursor": 3, "mainAmplitude": 1}}}}
    back = tmp_path / "back.json"
    assert run("profile", "import", str(nos), "--format", "fboss", "--application-code", "0x77", "--module", res,
               "--out", str(back)).exit_code == 0
    assert Profile.load(back).codes() == Profile.load(p).codes()
    differ = profile_for(res, tmp_path / "d.json", {ln: {RX_PRE: ln % 2, RX_POST: 3, RX_AMP: 1} for ln in range(1, 9)})
    line = one_line_error(run("profile", "export", str(differ), "--format", "fboss", "--out", str(tmp_path / "x.json")))
    assert "one Rx EQ setting for all lanes of a port" in line


def test_media_settings_round_trip_of_codes(tmp_path):
    taps = tmp_path / "taps.json"
    taps.write_text(json.dumps({"schema": "eqtune.tuned-codes", "version": 1,
                                "codes": {"tx_cm1": -0.155, "tx_c1": -0.066, "tx_cm2": 0.035}}))
    nos = tmp_path / "m.json"
    common = ["--format", "sonic-media-settings", "--port", "3", "--tap-scale", "168", "--vendor", "Acme", "--pn", "X1"]
    r = run("profile", "export", str(taps), *common, "--out", str(nos))
    assert r.exit_code == 0, r.output
    entry = json.loads(nos.read_text())["PORT_MEDIA_SETTINGS"]["3"]["ACME-X1$"]
    assert entry["pre1"]["lane0"] == "0xffffffe6"  # round(-0.155 * 168) = -26, as the Arista file writes it
    assert entry["main"]["lane7"] == f"0x{round((1 - 0.256) * 168):08x}"
    back = tmp_path / "back.json"
    assert run("profile", "import", str(nos), *common, "--out", str(back)).exit_code == 0
    again = tmp_path / "m2.json"
    assert run("profile", "export", str(back), *common, "--out", str(again)).exit_code == 0
    assert json.loads(again.read_text()) == json.loads(nos.read_text())
    line = one_line_error(run("profile", "export", str(taps), *common[:-6], "--vendor", "A", "--pn", "B",
                              "--out", str(tmp_path / "n.json")))
    assert "--tap-scale" in line


# ----------------------------------------------------------------------------------- merges
def test_merge_into_real_platform_file_changes_only_eqtunes_entries(tmp_path):
    res = "emu:c2m-10in?fast=1&settle_ms=0&name=nos-merge"
    emu = emulator_for(parse_resource(res))
    emu.identity.update(vendor="EOPTOLINK", pn="EO138HGPCT01SL1")  # the module the Arista file keys
    emu.reset()
    p = profile_for(res, tmp_path / "p.json")
    target = tmp_path / "optics_si_settings.json"
    shutil.copy(DATA / "arista-7060x6-64pe-b.optics_si_settings.json", target)
    original_bytes = target.read_bytes()
    args = ["profile", "export", str(p), "--format", "sonic-optics-si", "--port", "5,6", "--lane-speed", "100",
            "--module", res, "--merge", str(target)]
    # a PORT entry would be shadowed by the file's GLOBAL 1-12 entry for this module: refused, untouched
    line = one_line_error(run(*args))
    assert "GLOBAL_MEDIA_SETTINGS / 1-12 / 100G_SPEED" in line and "--scope global" in line
    assert target.read_bytes() == original_bytes
    r = run(*args, "--scope", "global")
    assert r.exit_code == 0, r.output
    before, after = json.loads(original_bytes), json.loads(target.read_text())
    changes = structural_diff(before, after).changes
    ours = ("GLOBAL_MEDIA_SETTINGS", "5-6", "100G_SPEED", "EOPTOLINK-EO138HGPCT01SL1")
    assert changes and all(c.path[:4] == ours and c.old is None for c in changes)
    assert {k: v for k, v in after["GLOBAL_MEDIA_SETTINGS"].items() if k != "5-6"} == before["GLOBAL_MEDIA_SETTINGS"]
    assert list(after["GLOBAL_MEDIA_SETTINGS"])[0] == "5-6"  # before the broader 1-12 range: SONiC reads it first
    # the same export again: nothing to do; other codes: a conflict, shown, nothing written
    assert "same" in run(*args, "--scope", "global").output
    other = profile_for(res, tmp_path / "q.json", {ln: {RX_PRE: 0, RX_POST: 0, RX_AMP: 0, TX_EQ: 0} for ln in range(1, 9)})
    merged_bytes = target.read_bytes()
    r = run(*[str(other) if a == str(p) else a for a in args], "--scope", "global")
    assert r.exit_code == 2 and "CONFLICT" in r.output and "OutputEqPreCursorTargetRx1" in r.output
    assert target.read_bytes() == merged_bytes
    r = run(*[str(other) if a == str(p) else a for a in args], "--scope", "global", "--replace")
    assert r.exit_code == 0 and "replaced" in r.output
    entry = json.loads(target.read_text())["GLOBAL_MEDIA_SETTINGS"]["5-6"]["100G_SPEED"]["EOPTOLINK-EO138HGPCT01SL1"]
    assert entry["OutputEqPreCursorTargetRx"]["OutputEqPreCursorTargetRx3"] == 0


# ----------------------------------------------------------------------------------- persistence
def test_push_says_volatile_and_verify_tells_reset_from_never_applied(tmp_path):
    res = EMU.format("nos-reset")
    fresh = EMU.format("nos-fresh")
    p = profile_for(res, tmp_path / "p.json")
    report = tmp_path / "push.json"
    r = run("profile", "push", str(p), "--module", res, "--report", str(report))
    assert r.exit_code == 0, r.output
    assert "module codes are volatile" in r.output and "eqtune profile export" in r.output
    r = run("profile", "verify", str(p), "--module", res, "--push-report", str(report))
    assert r.exit_code == 0 and "holds the profile codes" in r.output
    emulator_for(parse_resource(res)).reset_to_defaults()
    r = run("profile", "verify", str(p), "--module", res, "--push-report", str(report), "--json")
    out = json.loads(r.output)
    assert out["state"] == "reverted after reset" and not out["holds_profile"]
    r = run("profile", "verify", str(p), "--module", fresh, "--push-report", str(report))
    assert "NEVER APPLIED" in r.output
    r = run("profile", "verify", str(p), "--module", res)
    assert "give --push-report" in r.output


def test_diff_names_the_drifted_modules_per_lane(tmp_path):
    a, b = EMU.format("nos-diff-a"), EMU.format("nos-diff-b")
    p = profile_for(a, tmp_path / "p.json")
    report = tmp_path / "push.json"
    assert run("profile", "push", str(p), "--module", a, "--module", b, "--report", str(report)).exit_code == 0
    r = run("profile", "diff", str(p), "--from-push", str(report))
    assert r.exit_code == 0 and "2 of 2 module(s) hold the codes" in r.output
    emulator_for(parse_resource(b)).reset_to_defaults()
    r = run("profile", "diff", str(p), "--from-push", str(report), "--json")
    assert r.exit_code == 1
    doc = json.loads(r.output)
    states = {m["resource"]: m for m in doc["modules"]}
    assert states[a]["state"] == "holds" and states[b]["state"] == "drifted"
    assert sorted(int(k) for k in states[b]["lanes"]) == list(range(1, 9))
    # the same from an exported NOS file: what SONiC would apply on the module's port
    nos = tmp_path / "o.json"
    assert run("profile", "export", str(p), "--format", "sonic-optics-si", "--port", "5", "--lane-speed", "100",
               "--out", str(nos)).exit_code == 0
    r = run("profile", "diff", str(nos), a, b, "--format", "sonic-optics-si", "--port", "5", "--lane-speed", "100")
    assert r.exit_code == 1 and "1 of 2 module(s) hold the codes; 1 drifted: " + b in r.output


def test_diff_reads_ports_from_a_fleet_csv(tmp_path):
    a, b = EMU.format("nos-fleet-a"), EMU.format("nos-fleet-b")
    p = profile_for(a, tmp_path / "p.json")
    nos = tmp_path / "o.json"
    assert run("profile", "export", str(p), "--format", "sonic-optics-si", "--port", "5", "--lane-speed", "100",
               "--out", str(nos)).exit_code == 0
    assert run("profile", "push", str(p), "--module", a).exit_code == 0
    fleet = tmp_path / "fleet.csv"
    fleet.write_text(f"resource,server,port\n{a},rack1,osfp5\n{b},rack1,osfp6\n")
    r = run("profile", "diff", str(nos), "--fleet", str(fleet), "--format", "sonic-optics-si", "--lane-speed", "100",
            "--json")
    rows = {m["resource"]: m for m in json.loads(r.output)["modules"]}
    assert rows[a]["port"] == 5 and rows[a]["state"] == "holds"
    # port 6 has no entry in the file: SONiC applies nothing there (the module runs its defaults)
    assert rows[b]["port"] == 6 and rows[b]["state"] == "no-entry" and "no entry applies to port 6" in rows[b]["message"]
    assert r.exit_code == 1
