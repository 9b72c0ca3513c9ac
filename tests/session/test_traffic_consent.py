"""Consent before a write that takes traffic down (SteppedConfigOnly 1 + AutoCommissioning 01b: every apply
is DPDeinit + ApplyDPInit, CMIS 5.2 s6.2.4), and the journal of every outage.

"Nothing is written" is checked on the wire: every register write the driver makes goes through its
transport, and only the page/bank selects (bytes 126-127) are allowed before consent.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eqtune.drivers.cmis import open_module
from eqtune.session.consent import DOWN_ONLY, STOP, TUNE, TrafficDownRefused, traffic_down_notice
from eqtune.session.live import LiveConfig, LiveTuner

REGULAR = "emu:c2m-10in?image=qsfp4-regular&seed=2&settle_ms=0&fast=1&adaptive=0&name={name}"


def _records(sessions: Path) -> list[dict]:
    (sid,) = [p for p in sessions.iterdir() if p.is_dir()]
    return [json.loads(x) for x in (sid / "journal.jsonl").read_text().splitlines() if x.strip()]


def _count_writes(mod) -> list[tuple[int, int, bytes]]:
    """Wrap the module's transport: every write except the page/bank select is recorded as
    (page, offset, data)."""
    writes: list[tuple[int, int, bytes]] = []
    t = mod.transport
    inner = t.write
    page = [0]

    def write(offset: int, data: bytes) -> None:
        if offset == 126 and len(data) == 2:  # bank + page select in one write (PagedRegisters)
            page[0] = data[1]
        elif offset == 127:
            page[0] = data[0]
        elif offset != 126:
            writes.append((page[0], offset, bytes(data)))
        inner(offset, data)

    inner_page = t.write_page

    def write_page(bank: int, pg: int, offset: int, data: bytes) -> None:
        writes.append((pg, offset, bytes(data)))
        inner_page(bank, pg, offset, data)

    t.write = write
    t.write_page = write_page
    return writes


def test_no_consent_no_write_and_one_clear_line(tmp_path: Path) -> None:
    mod = open_module(REGULAR.format(name="consent-none"))
    writes = _count_writes(mod)
    cfg = LiveConfig(module=mod.resource, lanes=[], dwell_s=0.01, budget=5, seed=1)
    tuner = LiveTuner.create(cfg, sessions_dir=tmp_path, module=mod)
    with pytest.raises(TrafficDownRefused, match=r"lane\(s\) 1,2,3,4 .*about 8 time\(s\).*--allow-traffic-down"):
        tuner.run()
    assert writes == []  # not one register written before consent
    assert _count_writes  # (the wrapper sees writes: the allowed test below counts its DPDeinit writes)
    recs = _records(tmp_path)
    assert not [r for r in recs if r["type"] in ("apply", "original", "outage", "consent")]
    assert recs[-1]["type"] == "end" and recs[-1]["status"] == "aborted"
    mod.close()


@pytest.mark.parametrize("choice", [STOP, DOWN_ONLY])
def test_stop_or_no_link_down_lane_writes_nothing(tmp_path: Path, choice: str) -> None:
    mod = open_module(REGULAR.format(name=f"consent-{choice}"))
    writes = _count_writes(mod)
    asked = []

    def ask(notice):
        asked.append(notice)
        return choice

    cfg = LiveConfig(module=mod.resource, lanes=[1, 2], dwell_s=0.01, budget=4, seed=1)
    with pytest.raises(TrafficDownRefused, match="nothing was written"):
        LiveTuner.create(cfg, sessions_dir=tmp_path, module=mod, consent=ask).run()
    assert writes == [] and len(asked) == 1
    n = asked[0]
    assert n.lanes == [1, 2] and n.outages == 4 + 3 and n.advertised_s == pytest.approx(0.1)
    assert n.down_lanes == []  # every lane of the emulated link carries traffic (DPActivated)
    consent = [r for r in _records(tmp_path) if r["type"] == "consent"]
    assert consent and consent[0]["choice"] == STOP and consent[0]["lanes"] == []
    mod.close()


def test_allowed_session_journals_every_outage_and_the_report_lists_them(tmp_path: Path) -> None:
    from eqtune.session.report import render_report
    from eqtune.session.view import load_session

    mod = open_module(REGULAR.format(name="consent-flag"))
    writes = _count_writes(mod)
    cfg = LiveConfig(module=mod.resource, lanes=[1], dwell_s=0.01, budget=3, seed=1, allow_traffic_down=True)
    tuner = LiveTuner.create(cfg, sessions_dir=tmp_path, module=mod)
    result = tuner.run()
    assert result.status == "done"
    recs = _records(tmp_path)
    seq = {r["type"]: r["seq"] for r in reversed(recs)}  # first of each type
    assert seq["consent"] < seq["original"] < seq.get("apply", 10**9)
    consent = next(r for r in recs if r["type"] == "consent")
    assert consent["how"] == "--allow-traffic-down" and consent["choice"] == TUNE
    outages = [r for r in recs if r["type"] == "outage"]
    # one journaled outage per DPDeinit raised on the wire (page 10h byte 128, CMIS 5.2 Table 8-57)
    deinits = [w for w in writes if w[0] == 0x10 and w[1] == 128 and w[2][0]]
    assert len(outages) == len(deinits) >= 1
    assert all(o["lanes"] == [1, 2, 3, 4] for o in outages)  # the whole 4-lane data path goes down
    from eqtune.session.export import save_session_profile

    save_session_profile(tuner.session_id, tmp_path / "laptop" / "folder" / "p.json", sessions_dir=tmp_path)
    html = render_report(load_session(tuner.session_id, tmp_path), session_id=tuner.session_id,
                         journal_path=tmp_path / tuner.session_id / "journal.jsonl")
    assert f"{len(outages)} traffic outage" in html
    assert str(tmp_path) not in html  # the customer's report names no folder of the FAE's laptop
    assert "p.json" in html and "journal.jsonl" in html
    assert "tx_adaptive: ;" not in html and "<td></td>" not in html  # no empty fields
    for o in outages:
        assert o["phase"] in html
    mod.close()


def test_notice_is_none_where_writes_keep_traffic_up() -> None:
    mod = open_module("emu:c2m-10in?image=osfp8-both&fast=1&name=consent-hot")
    try:
        assert traffic_down_notice(mod, [1], outages=5) is None
    finally:
        mod.close()


def test_resume_keeps_the_journaled_consent(tmp_path: Path) -> None:
    """A resumed session does not ask again: the consent and its lanes are in the journal."""
    mod = open_module(REGULAR.format(name="consent-resume"))
    cfg = LiveConfig(module=mod.resource, lanes=[1, 2], dwell_s=0.01, budget=3, seed=1)
    t = LiveTuner.create(cfg, sessions_dir=tmp_path, module=mod, consent=lambda n: TUNE)
    t.connect()
    sid = t.session_id
    t.journal.close()  # a crash after connect
    again = LiveTuner.resume(sid, sessions_dir=tmp_path, module=mod,
                             consent=lambda n: pytest.fail("asked again on resume"))
    assert again.run().status == "done"
    mod.close()


def test_push_is_refused_without_consent_and_lists_its_outage(tmp_path: Path) -> None:
    from eqtune.session.profile import Profile
    from eqtune.session.push import push_to_module

    mod = open_module(REGULAR.format(name="consent-push"))
    cur = mod.active_eq(1)
    ident = mod.identity().to_dict()
    prof = Profile.from_identity(ident, {1: {"rx_pre": (cur["rx_pre"] + 1) % 4}})
    writes = _count_writes(mod)
    res = push_to_module(prof, mod)
    assert res.status == "refused" and "--allow-traffic-down" in res.message and writes == []
    res = push_to_module(prof, mod, allow_traffic_down=True)
    assert res.status == "applied" and len(res.outages) == 1 and res.outages[0]["lanes"] == [1, 2, 3, 4]
    mod.close()


def test_cli_without_the_flag_writes_nothing_and_exits_2(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from eqtune.cli import main

    res = REGULAR.format(name="consent-cli")
    args = ["tune", "c2m-10in", "--live", "--module", res, "--lane", "all", "--module-ber", "--budget", "2",
            "--dwell", "0.01", "--sessions", str(tmp_path)]
    out = CliRunner().invoke(main, args)  # stdin is not a terminal: nobody to ask
    assert out.exit_code == 2, out.output
    assert "TRAFFIC GOES DOWN" in out.output and "--allow-traffic-down" in out.output
    assert "Traceback" not in out.output
    assert not [r for r in _records(tmp_path) if r["type"] in ("apply", "outage", "original")]
    out = CliRunner().invoke(main, [*args, "--allow-traffic-down", "--sessions", str(tmp_path / "ok")])
    assert out.exit_code == 0, out.output
    recs = _records(tmp_path / "ok")
    assert [r["how"] for r in recs if r["type"] == "consent"] == ["--allow-traffic-down"]
    assert [r for r in recs if r["type"] == "outage"]
