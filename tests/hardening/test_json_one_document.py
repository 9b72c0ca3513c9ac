"""`--json` prints exactly one JSON document on stdout in every outcome: a partial failure (one module of
a push refused, one row of a study unusable) is inside that document as "error", with exit 2."""

from __future__ import annotations

import json

from click.testing import CliRunner

from eqtune.cli import main

RES = "emu:c2m-10in?settle_ms=0&fast=1&name=json-one-doc"


def _profile(tmp_path) -> str:
    from eqtune.drivers.cmis import open_module
    from eqtune.session.profile import Profile

    m = open_module(RES)
    prof = Profile.from_identity(m.identity(), {1: {"rx_post": 5}})
    m.close()
    return str(prof.save(tmp_path / "p.json"))


def _one_document(r) -> dict:
    doc = json.loads(r.stdout)  # raises on a second document ("Extra data")
    assert isinstance(doc, dict) and r.stderr.strip() == "", r.stderr
    return doc


def test_push_json_with_one_module_refused_is_one_document(tmp_path):
    path = _profile(tmp_path)
    r = CliRunner().invoke(main, ["profile", "push", path, "--module", RES, "--module", "emu:nonexistent", "--json"])
    assert r.exit_code == 2
    doc = _one_document(r)
    assert [x["status"] for x in doc["results"]] == ["applied", "refused"]
    assert doc["error"]["exit_code"] == 2 and "1 of 2 module(s)" in doc["error"]["message"]


def test_push_json_that_succeeds_has_no_error_member(tmp_path):
    path = _profile(tmp_path)
    r = CliRunner().invoke(main, ["profile", "push", path, "--module", RES, "--json"])
    assert r.exit_code == 0 and "error" not in _one_document(r)


def test_push_json_refused_before_any_module_is_one_error_document(tmp_path):
    r = CliRunner().invoke(main, ["profile", "push", str(tmp_path / "missing.json"), "--module", RES, "--json"])
    assert r.exit_code == 2 and set(_one_document(r)) == {"error"}


def test_study_json_with_a_bad_row_is_one_document(tmp_path):
    csv = tmp_path / "links.csv"
    csv.write_text("server,port,lane,host_trace_in,module_pn,module_vendor\n"
                   "s1,p1,1,5,PN,V\ns1,p1,2,five,PN,V\ns1,p1,3,6,PN,V\n")
    r = CliRunner().invoke(main, ["study", str(csv), "--out", str(tmp_path / "o"), "--backend", "synthetic",
                                  "--workers", "1", "-q", "--json", "--no-report"])
    assert r.exit_code == 2
    doc = json.loads(r.stdout)
    assert doc["finished"] == 2 and "row 2" in doc["error"]["message"]
