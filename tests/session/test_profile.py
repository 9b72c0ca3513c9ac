from __future__ import annotations

import json
import random

import pytest

from eqtune.errors import ProfileError
from eqtune.session.profile import Profile, canonical_json, content_digest
from eqtune.session.push import push_profile
from tests.session.fakes import FakeModule, fake_identity


def make_profile(**kw) -> Profile:
    lanes = kw.pop("lanes", {1: {"rx_pre": 2, "rx_post": 4, "rx_amp": 3, "tx_eq": 6},
                             2: {"rx_pre": 1, "rx_post": 5, "rx_amp": 3, "tx_eq": 7}})
    return Profile.from_identity(fake_identity(), lanes, channel="c2m-10in", session="s1",
                                 link={"site": "Lab \u00e9"}, margins={1: {"baseline": 4.0, "tuned": 9.5}}, **kw)


def test_rfc8785_examples():
    # RFC 8785 section 3.2.2 / appendix style checks
    assert canonical_json({"b": 1, "a": [1.0, "x", None, True]}) == b'{"a":[1,"x",null,true],"b":1}'
    assert canonical_json({"\u20ac": 1, "\r": 2, "1": 3}) == '{"\\r":2,"1":3,"\u20ac":1}'.encode()
    assert canonical_json([1e21, 1e-7, 0.000001, -0.0]) == b"[1e+21,1e-7,0.000001,0]"
    # UTF-16 code unit ordering: U+1F600 (surrogates D83D..) sorts before U+FB01
    assert canonical_json({"\ufb01": 1, "\U0001f600": 2}).startswith('{"\U0001f600"'.encode())


def test_roundtrip_and_digest(tmp_path):
    p = make_profile()
    path = p.save(tmp_path / "p.json")
    q = Profile.load(path)
    assert q.codes() == p.codes() and q.digest == p.digest and len(q.digest) == 64
    doc = json.loads(path.read_text())
    assert doc["digest"]["value"] == content_digest(doc)
    assert doc["module"]["sn"] is None and doc["schema"] == "eqtune.profile" and doc["version"] == 1
    # CRLF conversion in transit is tolerated
    Profile.loads(path.read_text().replace("\n", "\r\n"))


def test_every_single_byte_change_is_refused_before_any_write(tmp_path):
    data = make_profile().dumps().encode()
    rng = random.Random(7)
    positions = list(range(len(data)))
    rng.shuffle(positions)
    mod = FakeModule()
    for pos in positions[:300]:
        b = bytearray(data)
        b[pos] = (b[pos] + rng.randint(1, 255)) % 256
        path = tmp_path / "bad.json"
        path.write_bytes(bytes(b))
        with pytest.raises(ProfileError):
            push_profile(str(path), [mod])
    assert mod.writes == 0


def test_wrong_pn_and_out_of_range_refused_before_any_write(tmp_path):
    mod = FakeModule()
    before = {ln: mod.active_eq(ln) for ln in (1, 2)}
    other = Profile.from_identity(fake_identity(pn="OTHER-PN"), {1: {"tx_eq": 5}})
    rep = push_profile(other, [mod])
    assert rep.results[0].status == "refused" and "PN" in rep.results[0].message and mod.writes == 0
    pinned = Profile.from_identity(fake_identity(sn="SN9999"), {1: {"tx_eq": 5}}, pin_serial=True)
    assert push_profile(pinned, [mod]).results[0].status == "refused"
    big = make_profile(lanes={1: {"tx_eq": 12}})  # tx_eq_max is 10
    r = push_profile(big, [mod]).results[0]
    assert r.status == "refused" and "tx_eq=12" in r.message
    with pytest.raises(ProfileError, match="0..15"):
        make_profile(lanes={1: {"tx_eq": 16}}).dumps()
    with pytest.raises(ProfileError, match="lane"):
        make_profile(lanes={9: {"tx_eq": 1}}).dumps()
    assert mod.writes == 0 and {ln: mod.active_eq(ln) for ln in (1, 2)} == before
    # forced identity goes ahead
    r = push_profile(other, [mod], force_identity=True).results[0]
    assert r.status == "applied" and "forced" in r.message


def test_push_dry_run_applied_unchanged(tmp_path):
    p = make_profile()
    mod = FakeModule()
    r = push_profile(p, [mod], dry_run=True).results[0]
    assert r.status == "dry-run" and mod.writes == 0 and "rx_post" in r.message
    rep = push_profile(p, [mod])
    assert rep.results[0].status == "applied" and rep.ok
    assert mod.active_eq(1) == p.lanes[1]
    assert push_profile(p, [mod]).results[0].status == "unchanged"
    assert "1 of 1 module(s) hold" in rep.summary_lines()[0]


def test_schema_errors_name_the_field():
    doc = json.loads(make_profile().dumps())
    doc["lanes"]["1"]["bogus"] = 1
    with pytest.raises(ProfileError, match="bogus"):
        Profile.loads(json.dumps(doc))
    with pytest.raises(ProfileError, match="not an eqtune profile"):
        Profile.loads('{"schema": "x"}')
