"""eqtune's SONiC exports, read by SONiC's own parsers (sonic-platform-daemons, unmodified).

For every emulated module image, two real vendor identities from sonic-buildimage platform files, both
scopes (PORT / GLOBAL) and both lane-speed keys, SONiC's ``optics_si_parser.get_optics_si_settings_value``
must return exactly eqtune's code for every knob on every lane of every exported port, and nothing for a
module or speed the export is not for. ``media_settings_parser`` must publish eqtune's host TX FFE codes
lane by lane, also for a breakout subport. The same with the exports merged into real platform files
(tests/data/nos/), whose other entries SONiC must still resolve to their original values.
Skipped, with the reason, when the sonic-platform-daemons tree is absent (see tests/session/sonic_parsers.py).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from eqtune.drivers.cmis import CmisDriver
from eqtune.drivers.transport import PagedRegisters
from eqtune.emulate.cmis_table import image_names, load_table
from eqtune.emulate.link import EmulatedLink
from eqtune.emulate.module import EmulatedModule, VirtualClock
from eqtune.emulate.transport import EmulatorTransport
from eqtune.serdes.knobs import TX_EQ, TX_FFE_KNOBS
from eqtune.session.nos_common import facts_from_module, read_nos_json
from eqtune.session.nos_merge import merge_entries
from eqtune.session.nos_sonic import (
    ADAPTIVE_ENABLE,
    SI_PARAM,
    export_optics_si,
    module_key,
    resolve_optics_si,
)
from eqtune.session.nos_sonic_media import TAP_PARAM, HostTxScaling, export_media_settings
from tests.session.sonic_parsers import daemons_commit, daemons_root, sonic_parsers

ROOT = daemons_root()
pytestmark = pytest.mark.skipif(ROOT is None, reason="sonic-platform-daemons not found: set EQTUNE_SONIC_ROOT "
                                                     "to the folder holding it (default /work/ext or ../ext)")
DATA = Path(__file__).resolve().parents[1] / "data" / "nos"
T = load_table()
# real vendor strings as modules report them (16-byte space-padded EEPROM fields), taken from the
# vendor keys of the platform files in tests/data/nos (sonic-buildimage)
REAL_IDENTITIES = [{"vendor": "EOPTOLINK       ", "pn": "EO138HGPCT01SL1 "},
                   {"vendor": "EOPTOLINK       ", "pn": "EOLO138HG5HSDLC "}]


class _Api:
    def __init__(self, vendor: str, pn: str) -> None:
        self.vendor, self.pn = vendor, pn

    def get_manufacturer(self) -> str:
        return self.vendor

    def get_model(self) -> str:
        return self.pn


class _Sfp:
    def __init__(self, api: _Api) -> None:
        self.api = api

    def get_xcvr_api(self) -> _Api:
        return self.api


@pytest.fixture(scope="module")
def parsers():
    assert ROOT is not None
    print(f"SONiC parsers from {ROOT} at commit {daemons_commit(ROOT)}")
    with sonic_parsers(ROOT) as (si, media):
        yield si, media


def _module(image: str, identity: dict | None = None) -> tuple[EmulatedModule, CmisDriver]:
    lanes = int(T.images[image]["lanes"])
    emu = EmulatedModule(EmulatedLink("c2m-10in", lanes=lanes, seed=1, noise=False), settle_s=0.0,
                         clock=VirtualClock(), image=image, identity=identity)
    return emu, CmisDriver(PagedRegisters(EmulatorTransport(emu, f"emu:{image}")), resource=f"emu:{image}")


def _random_codes(facts, rng: random.Random) -> dict[int, dict[str, int]]:
    return {ln: {k: rng.choice(v) for k, v in facts.knob_values.items()} for ln in range(1, facts.lanes + 1)}


CASES = [(img, None) for img in image_names()] + [("osfp8-both", ident) for ident in REAL_IDENTITIES]


def _sonic_lookup(si, doc: dict, port: int, speed: int, vendor: str, pn: str) -> dict:
    si.g_optics_si_dict = doc
    key, name = si.get_module_vendor_key(port, _Sfp(_Api(vendor, pn)))  # SONiC's own key (line 177)
    return si.get_optics_si_settings_value(port, speed, key, name)


def _assert_sonic_codes(got: dict, codes: dict[int, dict[str, int]]) -> None:
    knobs = sorted({k for c in codes.values() for k in c})
    want_params = {SI_PARAM[k] for k in knobs} | ({ADAPTIVE_ENABLE} if TX_EQ in knobs else set())
    assert set(got) == want_params
    for ln, c in codes.items():
        for k, v in c.items():
            assert got[SI_PARAM[k]][f"{SI_PARAM[k]}{ln}"] == v, (ln, k)
        if TX_EQ in c:
            assert got[ADAPTIVE_ENABLE][f"{ADAPTIVE_ENABLE}{ln}"] == 0
    # nothing beyond the port's lanes (SONiC would write lanes that do not exist)
    assert all(len(v) == len(codes) for v in got.values())


@pytest.mark.parametrize("image,identity", CASES, ids=lambda x: x if isinstance(x, str) else (x or {}).get("pn", ""))
@pytest.mark.parametrize("scope", ["port", "global"])
def test_sonic_optics_si_parser_returns_eqtunes_codes_on_every_lane(parsers, image, identity, scope):
    si, _ = parsers
    emu, drv = _module(image, identity)
    facts = facts_from_module(drv, f"emu:{image}")
    ident = drv.identity()
    rng = random.Random(hash((image, scope)) & 0xFFFF)
    ports = [1, 2, 3, 9, 30] if scope == "global" else [5, 17]
    for speed in (100, 200):
        codes = _random_codes(facts, rng)
        exp = export_optics_si(codes, facts, ports=ports, lane_speed_g=speed, scope=scope)
        doc = json.loads(json.dumps(exp.doc))  # as xcvrd reads the file (json.load)
        for port in ports:
            got = _sonic_lookup(si, doc, port, speed, ident.vendor, ident.pn)
            _assert_sonic_codes(got, codes)
            # eqtune's own reading of the lookup agrees with SONiC's
            mine, path = resolve_optics_si(doc, port, speed, module_key(ident.vendor, ident.pn), ident.vendor.upper().strip())
            assert mine == got and path is not None
        # another port, another speed, another PN: SONiC applies nothing of eqtune's
        assert not _sonic_lookup(si, doc, 64, speed, ident.vendor, ident.pn)
        assert not _sonic_lookup(si, doc, ports[0], 50, ident.vendor, ident.pn)
        assert not _sonic_lookup(si, doc, ports[0], speed, ident.vendor, ident.pn + "X")


@pytest.mark.parametrize("name", ["nokia-ixr7220-h6-128.optics_si_settings.json",
                                  "arista-7060x6-64pe-b.optics_si_settings.json"])
def test_merge_into_real_platform_file_reads_back_through_sonic(parsers, name):
    """eqtune's entry for the EOPTOLINK module on two ports is what SONiC applies there; every other
    port keeps the platform's original values, read through SONiC's parser before and after."""
    si, _ = parsers
    original = read_nos_json(DATA / name, what="platform file")
    emu, drv = _module("osfp8-both", REAL_IDENTITIES[0])
    facts = facts_from_module(drv, "emu")
    ident = drv.identity()
    codes = _random_codes(facts, random.Random(7))
    ports = [5, 40]
    exp = export_optics_si(codes, facts, ports=ports, lane_speed_g=100, scope="global")
    # the platform file's GLOBAL vendor entry would shadow a PORT entry: a GLOBAL export, put first
    res = merge_entries(original, exp.doc, exp.entries)
    assert not res.conflicts
    merged = json.loads(json.dumps(res.doc))
    for port in ports:
        _assert_sonic_codes(_sonic_lookup(si, merged, port, 100, ident.vendor, ident.pn), codes)
    for port in (1, 12, 13, 24, 39, 41, 64):
        before = _sonic_lookup(si, original, port, 100, ident.vendor, ident.pn)
        after = _sonic_lookup(si, merged, port, 100, ident.vendor, ident.pn)
        assert after == before


def _media_key(vendor: str, pn: str, speed: str) -> dict:
    # what get_media_settings_key builds (media_settings_parser.py lines 359-417): vendor upper-cased, PN as read
    return {"vendor_key": vendor.upper() + "-" + pn, "media_key": "OSFP-8X-sm_media_interface",
            "lane_speed_key": "speed:" + speed, "medium_lane_speed_key": "OPTICAL100"}


@pytest.mark.parametrize("lanes,subports", [(8, [(8, 0)]), (8, [(4, 1), (4, 2)]), (4, [(4, 0), (2, 2)])])
def test_sonic_media_settings_parser_publishes_eqtunes_host_codes(parsers, lanes, subports):
    _, media = parsers
    rng = random.Random(lanes * 10 + len(subports))
    taps = {ln: {k: round(rng.uniform(-0.12, 0.12), 3) for k in TX_FFE_KNOBS} for ln in range(1, lanes + 1)}
    scaling = HostTxScaling(168)
    exp = export_media_settings(taps, vendor="Acme Corp", pn="AC-800.G+", ports=[3, 4], port_lanes=lanes,
                                scaling=scaling, speed="800GAUI-8")
    media.g_dict = json.loads(json.dumps(exp.doc))
    for port in (3, 4):
        got = media.get_media_settings_value(port, _media_key("Acme Corp", "AC-800.G+", "800GAUI-8"))
        for lane_count, sub in subports:
            fvs = dict(media.MediaSettingsParserBase.to_db_value(got, lane_count, sub))
            first = (sub - 1) * lane_count if sub else 0
            for k in TX_FFE_KNOBS:
                vals = [scaling.parse(v, where="test") for v in fvs[TAP_PARAM[k]].split(",")]
                assert vals == [round(taps[ln][k] * 168) for ln in range(first + 1, first + lane_count + 1)]
            mains = [scaling.parse(v, where="test") for v in fvs["main"].split(",")]
            assert mains == [round((1 - sum(abs(x) for x in taps[ln].values())) * 168)
                             for ln in range(first + 1, first + lane_count + 1)]
    # a PN that only starts like ours gets nothing (the key is anchored)
    assert media.get_media_settings_value(3, _media_key("Acme Corp", "AC-800.G+0", "800GAUI-8")) == {}
    # another host interface: nothing
    assert media.get_media_settings_value(3, _media_key("Acme Corp", "AC-800.G+", "400GAUI-4")) == {}


def _random_doc(rng: random.Random, entry: dict) -> dict:
    """A platform-like file: GLOBAL range/list keys, PORT keys, vendor regexes, Defaults, two speeds."""
    keys = ["ACME-PN1", "ACME", "ACME-PN.*", "OTHER-X", "Default", "ACME-(PN1|PN2)"]

    def speeds() -> dict:
        out = {}
        for sk in rng.sample(["100G_SPEED", "200G_SPEED"], rng.randint(1, 2)):
            out[sk] = {k: {"OutputAmplitudeTargetRx": {"OutputAmplitudeTargetRx1": rng.randint(0, 3)}}
                       for k in rng.sample(keys, rng.randint(1, 3))}
        return out

    glob = {}
    for _ in range(rng.randint(0, 3)):
        a = rng.randint(1, 20)
        b = rng.randint(a, 24)
        key = f"{a}-{b}" if rng.random() < 0.6 else f"{a}-{b},{rng.randint(1, 24)}"
        glob[key] = speeds()
    port = {str(p): speeds() for p in rng.sample(range(1, 25), rng.randint(0, 4))}
    doc = {}
    if glob:
        doc["GLOBAL_MEDIA_SETTINGS"] = glob
    if port:
        doc["PORT_MEDIA_SETTINGS"] = port
    return doc


def test_eqtunes_lookup_equals_sonics_on_random_files(parsers):
    """The lookup the merge check uses (resolve_optics_si) returns what SONiC's parser returns, on 300
    random files x 24 ports x 2 speeds x 3 modules (regex keys, Defaults, overlapping ranges)."""
    si, _ = parsers
    rng = random.Random(2029)
    n = 0
    for _ in range(300):
        doc = _random_doc(rng, {})
        for port in range(1, 25):
            for speed in (100, 200):
                for vendor, pn in (("ACME", "PN1"), ("ACME", "PN2"), ("ZETA", "Q")):
                    want = _sonic_lookup(si, doc, port, speed, vendor, pn)
                    got, _ = resolve_optics_si(doc, port, speed, module_key(vendor, pn), vendor)
                    assert got == want, (doc, port, speed, vendor, pn)
                    n += 1
    assert n == 300 * 24 * 2 * 3


def _lanes(values: list[str]) -> dict:
    return {f"lane{i}": v for i, v in enumerate(values)}


def _media_platform_file(global_key: str) -> dict:
    """A media_settings.json in the style of sonic-buildimage's Celestica DS4100 and Nokia IXR7220-H6-64
    files (GLOBAL port range with medium keys, PORT entries with medium keys; their hex values)."""
    tx = {"pre1": _lanes(["0xffffffdc"] * 8), "main": _lanes(["0x00000070"] * 8), "post1": _lanes(["0x0"] * 8)}
    return {"GLOBAL_MEDIA_SETTINGS": {"1-16": {global_key: tx}},
            "PORT_MEDIA_SETTINGS": {"1": {"OPTICAL-100": {**tx, "main": _lanes(["0x8C"] * 8)}},
                                    "2": {"OPTICAL100": {**tx, "pre1": _lanes(["0xFFFFFFE8"] * 8)}}}}


def test_media_merge_changes_only_eqtunes_module_and_refuses_a_shadowed_entry(parsers, tmp_path):
    from eqtune.session.nos import SONIC_MEDIA, NosOptions, export_to_file
    from eqtune.session.nos_common import ModuleFacts, NosFormatError

    _, media = parsers
    taps = {ln: {"tx_cm1": -0.12, "tx_c1": -0.05} for ln in range(1, 9)}
    facts = ModuleFacts("Acme", "X1", 8, {})
    opts = NosOptions(ports=[1, 3], tap_scale=168)
    target = tmp_path / "media_settings.json"
    original = _media_platform_file("COPPER-100")
    target.write_text(json.dumps(original))
    res = export_to_file(SONIC_MEDIA, taps, facts, opts, out=None, merge=str(target))
    assert res.written and not res.conflicts
    merged = json.loads(target.read_text())
    ours = _media_key("Acme", "X1", "800GAUI-8")
    other = {**_media_key("Zeta", "Q9", "800GAUI-8"), "medium_lane_speed_key": "OPTICAL100"}
    for port in (1, 3):
        media.g_dict = merged
        fvs = dict(media.MediaSettingsParserBase.to_db_value(media.get_media_settings_value(port, ours), 8, 0))
        assert fvs["pre1"] == ",".join(["0xffffffec"] * 8) and fvs["post1"] == ",".join(["0xfffffff8"] * 8)
    for port in (1, 2, 3, 17):  # another module: what SONiC publishes is unchanged by the merge
        media.g_dict = original
        before = media.get_media_settings_value(port, other)
        media.g_dict = merged
        assert media.get_media_settings_value(port, other) == before
    # a GLOBAL medium entry covering the ports beats eqtune's PORT entry in SONiC: refused, file untouched
    shadowing = _media_platform_file("OPTICAL100")
    target.write_text(json.dumps(shadowing))
    with pytest.raises(NosFormatError, match="GLOBAL_MEDIA_SETTINGS / 1-16 / OPTICAL100"):
        export_to_file(SONIC_MEDIA, taps, facts, opts, out=None, merge=str(target))
    assert json.loads(target.read_text()) == shadowing
    from eqtune.session.nos_merge import merge_entries
    from eqtune.session.nos_sonic_media import HostTxScaling, export_media_settings

    exp = export_media_settings(taps, vendor="Acme", pn="X1", ports=[1, 3], port_lanes=8, scaling=HostTxScaling(168))
    media.g_dict = merge_entries(shadowing, exp.doc, exp.entries).doc  # what SONiC would do with it anyway
    got = media.get_media_settings_value(1, {**ours, "medium_lane_speed_key": "OPTICAL100"})
    assert got == shadowing["GLOBAL_MEDIA_SETTINGS"]["1-16"]["OPTICAL100"]
