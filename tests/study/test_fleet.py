"""Fleet CSV -> study -> one eqtune.profile per module; malformed rows are named and skipped."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eqtune.errors import ConfigError
from eqtune.study import load_spec, run_study
from eqtune.study.fleet import parse_fleet_rows
from eqtune.study.synthetic import synthetic

ROOT = Path(__file__).resolve().parents[2]
HEADER = "server,port,lane,host_trace_in,module_pn,module_vendor\n"


def test_example_fleet_csv_parses():
    spec = load_spec(ROOT / "channels" / "studies" / "fleet-example.csv")
    assert len(spec.combinations) == 12 and not spec.row_errors
    assert spec.fleet
    assert spec.combinations[0].channel.params[0] == ("length_in", 6.5)


@pytest.mark.parametrize("line, field", [
    ("s1,p1,9,5,PN,V", "lane"),
    ("s1,p1,1,abc,PN,V", "host_trace_in"),
    ("s1,p1,1,-3,PN,V", "host_trace_in"),
    (",p1,1,5,PN,V", "server"),
    ("s1,p1,1,5,,V", "module_pn"),
    ("s1,p1,1,5,PN", "module_vendor"),
])
def test_bad_rows_are_named_and_the_rest_kept(line, field):
    text = HEADER + "s0,p0,1,4,PN,V\n" + line + "\n" + "s0,p0,2,4.5,PN,V\n"
    links, errors = parse_fleet_rows(text, source="links.csv")
    assert len(links) == 2
    (err,) = errors
    assert err.startswith("links.csv row 2 (line 3) field ") and f"'{field}'" in err, err


def test_duplicate_lane_and_missing_header_column():
    links, errors = parse_fleet_rows(HEADER + "s,p,1,4,PN,V\ns,p,1,5,PN,V\n", source="f.csv")
    assert len(links) == 1 and "row 2 (line 3) field 'lane'" in errors[0] and "row 1" in errors[0]
    with pytest.raises(ConfigError, match="line 1 .*'module_pn'"):
        parse_fleet_rows("server,port,lane,host_trace_in\n", source="f.csv")


def test_fleet_study_writes_pushable_profiles(tmp_path):
    from eqtune.session.profile import Profile

    csv = tmp_path / "links.csv"
    csv.write_text(HEADER + "".join(f"srv1,osfp1,{lane},{4 + lane},PN-A,ACME\n" for lane in range(1, 5))
                   + "srv1,osfp2,1,12,PN-B,ACME\nsrv1,osfp2,2,x,PN-B,ACME\nsrv2,osfp1,1,9,PN-A,ACME\n")
    spec = load_spec(csv)
    assert len(spec.combinations) == 6 and len(spec.row_errors) == 1
    res = run_study(spec, tmp_path / "out", compute=synthetic, report=True)
    names = sorted(p.name for p in res.profiles)
    assert names == ["srv1_osfp1_PN-A.json", "srv1_osfp2_PN-B.json", "srv2_osfp1_PN-A.json"]
    prof = Profile.load(tmp_path / "out" / "profiles" / "srv1_osfp1_PN-A.json")  # verifies schema + digest
    assert sorted(prof.lanes) == [1, 2, 3, 4]
    assert set(prof.lanes[1]) == {"rx_pre", "rx_post", "rx_amp"}
    assert prof.module["pn"] == "PN-A" and prof.link["server"] == "srv1"
    row = next(r for r in res.rows if json.loads(r["link"])["lane"] == "3" and "osfp1" in r["channel"])
    assert prof.lanes[3] == json.loads(row["robust_codes"])
    html = (tmp_path / "out" / "report.html").read_text()
    assert "links.csv row 6 (line 7) field &#x27;host_trace_in&#x27;" in html


def test_channel_column_selects_the_base():
    links, errors = parse_fleet_rows("server,port,lane,host_trace_in,module_pn,channel\n"
                                     "s,p,1,4,PN,c2m-10in-xtalk\ns,p,2,4,PN,nope\n", source="f.csv")
    assert links[0][0].ref == "c2m-10in-xtalk"
    assert "row 2 (line 3) field 'channel'" in errors[0]
