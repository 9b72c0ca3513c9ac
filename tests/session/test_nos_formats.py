"""The NOS formats' rules that the end-to-end tests do not reach: partial lanes, adaptive EQ on import,
duplicate JSON keys, FBOSS override order and conflicts, GLOBAL single-port keys, hex scaling."""

from __future__ import annotations

import json

import pytest

from eqtune.errors import InputError
from eqtune.serdes.knobs import RX_AMP, RX_POST, RX_PRE, TX_EQ
from eqtune.session.nos_common import ModuleFacts, NosFormatError, port_ranges, read_nos_json
from eqtune.session.nos_fboss import export_fboss, import_fboss, merge_fboss, selected_override
from eqtune.session.nos_sonic import entry_codes, export_optics_si, resolve_optics_si
from eqtune.session.nos_sonic_media import HostTxScaling

FACTS = ModuleFacts("ACME", "PN1", 8, {RX_PRE: tuple(range(8)), RX_POST: tuple(range(8)), RX_AMP: (0, 1, 2, 3),
                                       TX_EQ: tuple(range(11))})
UNIFORM = {ln: {RX_PRE: 2, RX_POST: 3, RX_AMP: 1} for ln in range(1, 9)}


def test_a_knob_on_some_lanes_only_is_refused_for_sonic():
    codes = {ln: ({RX_PRE: 1} if ln <= 4 else {}) for ln in range(1, 9)}
    with pytest.raises(NosFormatError, match=r"not on lane\(s\) 5,6,7,8; SONiC stages every lane"):
        export_optics_si(codes, FACTS, ports=[1], lane_speed_g=100)


def test_import_refuses_adaptive_eq_on_and_cdr():
    with pytest.raises(NosFormatError, match="turns Tx input adaptive EQ on"):
        entry_codes({"FixedInputEqTargetTx": {"FixedInputEqTargetTx1": 3},
                     "AdaptiveInputEqEnableTx": {"AdaptiveInputEqEnableTx1": 1}}, FACTS, where="t")
    with pytest.raises(NosFormatError, match="CDREnableRx is a SONiC control an eqtune profile does not carry"):
        entry_codes({"CDREnableRx": {"CDREnableRx1": 1}}, FACTS, where="t")
    with pytest.raises(NosFormatError, match="unknown key 'OutputEqPreCursorTargetRx0'"):
        entry_codes({"OutputEqPreCursorTargetRx": {"OutputEqPreCursorTargetRx0": 1}}, FACTS, where="t")


def test_duplicate_keys_are_refused(tmp_path):
    p = tmp_path / "d.json"
    p.write_text('{"PORT_MEDIA_SETTINGS": {"5": {}, "5": {}}}')
    with pytest.raises(InputError, match="duplicate key '5'"):
        read_nos_json(p, what="optics_si_settings.json")


def test_global_single_port_is_written_as_a_range_sonic_reads():
    assert port_ranges([5]) == "5-5" and port_ranges([1, 2, 3, 9]) == "1-3,9"
    exp = export_optics_si(UNIFORM, FACTS, ports=[5], lane_speed_g=100, scope="global")
    assert list(exp.doc["GLOBAL_MEDIA_SETTINGS"]) == ["5-5"]
    entry, path = resolve_optics_si(exp.doc, 5, 100, "ACME-PN1", "ACME")
    assert path == ("GLOBAL_MEDIA_SETTINGS", "5-5", "100G_SPEED", "ACME-PN1") and entry
    # a bare "5" key under GLOBAL is never read by SONiC (optics_si_parser.py lines 64-77)
    bare = {"GLOBAL_MEDIA_SETTINGS": {"5": exp.doc["GLOBAL_MEDIA_SETTINGS"]["5-5"]}}
    assert resolve_optics_si(bare, 5, 100, "ACME-PN1", "ACME") == ({}, None)


def test_fboss_override_goes_first_and_conflicts_are_kept():
    exp = export_fboss(UNIFORM, FACTS, app_code=0x77)
    broad = {"factor": {}, "config": {"cmis": {"rxEqualizerSettings": {"preCursor": 0, "postCursor": 0,
                                                                       "mainAmplitude": 0}}}}
    existing = {"defaultCommandLineArgs": {"a": "1"}, "transceiverConfigOverrides": [broad]}
    m = merge_fboss(existing, exp, app_code=0x77)
    assert m.action == "added" and m.doc["transceiverConfigOverrides"] == [exp.override, broad]
    assert m.doc["defaultCommandLineArgs"] == {"a": "1"}
    assert selected_override(m.doc, 0x77) == (0, exp.override)
    assert selected_override(m.doc, 0x1C) == (1, broad)  # other applications keep the broad override
    assert import_fboss(m.doc, FACTS, app_code=0x77) == UNIFORM
    other = export_fboss({ln: {RX_PRE: 5, RX_POST: 3, RX_AMP: 1} for ln in range(1, 9)}, FACTS, app_code=0x77)
    c = merge_fboss(m.doc, other, app_code=0x77)
    assert c.action == "conflict" and c.doc == m.doc and c.conflict is not None
    assert any("preCursor" in ln and "2 -> 5" in ln for ln in c.conflict.lines())
    assert merge_fboss(m.doc, other, app_code=0x77, replace=True).action == "replaced"


def test_fboss_needs_all_three_rx_knobs():
    with pytest.raises(NosFormatError, match="does not set rx_amp"):
        export_fboss({ln: {RX_PRE: 2, RX_POST: 3} for ln in range(1, 9)}, FACTS, app_code=None)


def test_host_tx_hex_is_twos_complement_and_bounded():
    s = HostTxScaling(168)
    assert s.hex(-26) == "0xffffffe6" and s.parse("0xffffffe6", where="t") == -26 and s.parse("0x64", where="t") == 100
    assert HostTxScaling(100, 8).hex(-2) == "0xfe"
    with pytest.raises(NosFormatError, match="not a hex value"):
        s.parse("-26", where="t")
    with pytest.raises(InputError, match="--tap-scale"):
        HostTxScaling(0)


def test_exported_file_is_plain_json_sonic_can_load():
    exp = export_optics_si({ln: {**UNIFORM[ln], TX_EQ: 4} for ln in UNIFORM}, FACTS, ports=[1, 2], lane_speed_g=200)
    doc = json.loads(json.dumps(exp.doc))
    entry = doc["PORT_MEDIA_SETTINGS"]["2"]["200G_SPEED"]["ACME-PN1"]
    assert entry["AdaptiveInputEqEnableTx"] == {f"AdaptiveInputEqEnableTx{ln}": 0 for ln in range(1, 9)}
    assert entry["FixedInputEqTargetTx"]["FixedInputEqTargetTx8"] == 4
