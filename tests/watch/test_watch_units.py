"""Watch pieces as a user meets them: modules that advertise only some observables, the detector on
series with a known answer, the CLI's bad-input messages, the thermal model of the emulator."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from click.testing import CliRunner

from eqtune.cli import main
from eqtune.watch.detect import DetectConfig, assess_lane, esnr_for_ser, linear_fit, suggest_action
from eqtune.watch.observe import NOT_ADVERTISED, adapt_vdm, observable_for, read_module


# ------------------------------------------------------------------------------ adapter
def test_adapter_marks_missing_and_none_as_not_advertised_never_zero():
    raw = {1: {"prefec_ber_host_input": 0.0, "esnr_host_input_db": 21.5, "prefec_ber_max_host_input": None,
               "errored_frames_host_input": 3, "vendor_magic": 7.0},
           2: {"prefec_ber_media_input": 1e-7}}
    out = adapt_vdm(raw, [1, 2, 3])
    assert out[1]["prefec_ber"] == 0.0  # a real zero stays zero
    assert out[1]["esnr_db"] == 21.5 and out[1]["errored_frames"] == 3.0
    assert out[1]["prefec_ber_max"] is None and out[1]["ltp_db"] is None
    assert out[2]["prefec_ber"] is None and out[2]["prefec_ber_media"] == 1e-7
    assert all(v is None for v in out[3].values())
    assert observable_for("prefec_ber_avg_host_input") == "prefec_ber_avg"
    assert observable_for("esnr_media_input_db") == "esnr_db_media"


def test_module_without_vdm_reads_as_not_advertised():
    from eqtune.drivers.cmis import CmisModule
    from eqtune.drivers.transport import PagedRegisters
    from eqtune.emulate.link import EmulatedLink, surrogate_quality
    from eqtune.emulate.module import EmulatedModule
    from eqtune.emulate.transport import EmulatorTransport

    link = EmulatedLink("c2m-10in", quality=surrogate_quality(16.0), seed=1)
    emu = EmulatedModule(link, settle_s=0.0, vdm=False)
    mod = CmisModule(PagedRegisters(EmulatorTransport(emu)), resource="emu:novdm")
    s = read_module(mod, "emu:novdm")
    assert s.ok and "VDM: " + NOT_ADVERTISED in s.notes
    assert s.temperature_c == pytest.approx(35.0)  # emulator default without a thermal profile
    d = s.to_dict()
    assert d["lanes"]["1"]["prefec_ber"] == NOT_ADVERTISED and d["lanes"]["1"]["esnr_db"] == NOT_ADVERTISED


# ------------------------------------------------------------------------------ detector
def _series(n=40, dt=10.0, temp=lambda i: 25.0, esnr=lambda i: 22.0, noise=0.05, seed=0):
    rng = np.random.default_rng(seed)
    return [(i * dt, temp(i), esnr(i) + noise * rng.standard_normal(), None) for i in range(n)]


def test_esnr_threshold_from_ber():
    # SER 2.4e-4 -> Q(x) = 1.6e-4 -> x = 3.5985 (normal table) -> SNR = 5 x^2 = 64.75 -> 18.11 dB
    assert esnr_for_ser(2.4e-4) == pytest.approx(10 * math.log10(5 * 3.5985**2), abs=0.01)


def test_linear_fit_known_line():
    x = np.arange(10.0)
    f = linear_fit(x, 2.0 * x + 1.0)
    assert f.slope == pytest.approx(2.0) and f.intercept == pytest.approx(1.0) and f.r == pytest.approx(1.0)


def test_flat_margin_with_temperature_swing_is_not_flagged():
    h = _series(temp=lambda i: 25.0 + 10.0 * min(i, 30) / 30)
    assert assess_lane(h, DetectConfig()) == []


def test_margin_following_temperature_is_thermal():
    temp = lambda i: 25.0 + 10.0 * min(i, 30) / 30  # noqa: E731
    h = _series(temp=temp, esnr=lambda i: 22.0 - 0.15 * (temp(i) - 25.0))
    found = {f.kind: f for f in assess_lane(h, DetectConfig())}
    assert "thermal" in found
    ev = found["thermal"].evidence
    assert ev["sensitivity_per_c"] == pytest.approx(-0.15, abs=0.02)
    assert ev["corr_with_dT_dt"] < -0.7
    assert "--corners" in suggest_action(list(found.values()), channel="c2m-10in")


def test_drift_at_constant_temperature_suggests_swap():
    h = _series(esnr=lambda i: 22.0 - 0.002 * (10.0 * i), noise=0.01)  # -0.002 dB/s = -0.12 dB/min at 25 C
    found = assess_lane(h, DetectConfig(horizon_s=3600.0))
    assert {f.kind for f in found} == {"esnr_trend"}
    ev = found[0].evidence
    assert ev["slope_per_s"] == pytest.approx(-0.002, rel=0.1)
    # at t = 390 s the line is at 21.22 dB, 3.11 dB above 18.11 dB: 1555 s to go
    assert ev["time_to_threshold_s"] == pytest.approx((22.0 - 0.78 - esnr_for_ser(2.4e-4)) / 0.002, rel=0.1)
    assert suggest_action(found).startswith("swap")
    # the same drift with a 10-minute horizon, too short to reach the threshold: no finding
    assert assess_lane(h, DetectConfig(horizon_s=600.0)) == []


def test_too_few_samples_is_silent():
    assert assess_lane(_series(n=5, esnr=lambda i: 30.0 - i)) == []


# ------------------------------------------------------------------------------ thermal model
def test_thermal_profile_and_channel_loss_vs_temperature():
    from eqtune.emulate.link import (
        EmulatedLink,
        ThermalProfile,
        channel_loss_vs_temperature,
        surrogate_quality,
    )

    p = ThermalProfile.parse("0:25,300:35")
    assert p.temperature_c(150) == pytest.approx(30.0) and p.temperature_c(1e4) == 35.0
    assert ThermalProfile.parse("0:25,300:35@600").temperature_c(750) == pytest.approx(30.0)
    with pytest.raises(ValueError):
        ThermalProfile.parse("0:25,x")
    loss = channel_loss_vs_temperature("c2m-10in")
    assert loss(25.0) == pytest.approx(0.0, abs=1e-9)
    # the channel model's own numbers: hotter copper and laminate lose more (trace.py), 0.2-2 dB over 60 C
    assert 0.2 < loss(85.0) < 2.0
    clock = [0.0]
    link = EmulatedLink("c2m-10in", quality=surrogate_quality(17.0), seed=1, noise=False)
    link.set_thermal(p, clock=lambda: clock[0], lane_tempco_db_per_c={2: 0.2})
    cold = (link.ber(1, "module_rx"), link.ber(2, "module_rx"))
    clock[0] = 300.0
    assert link.temperature_c() == 35.0
    assert link.extra_loss_db(2) == pytest.approx(loss(35.0) + 2.0)
    hot = (link.ber(1, "module_rx"), link.ber(2, "module_rx"))
    assert hot[0] > cold[0] and hot[1] / cold[1] > 10 * hot[0] / cold[0]


# ------------------------------------------------------------------------------ CLI
@pytest.mark.parametrize(("args", "needle"), [
    (["watch"], "nothing to watch"),
    (["watch", "net:127.0.0.1:1", "--interval", "0"], "positive"),
    (["watch", "net:127.0.0.1:1", "--prometheus", "nohostport"], "HOST:PORT"),
    (["watch", "net:127.0.0.1:1", "--lanes", "0-9"], "lanes are 1..8"),
    (["watch", "--fleet", "missing.csv"], "fleet CSV"),
])
def test_cli_bad_input_is_one_line_exit_2(args, needle, tmp_path):
    r = CliRunner().invoke(main, [*args, "--db", str(tmp_path / "w.sqlite")])
    assert r.exit_code == 2, r.output
    assert needle in r.output and "Traceback" not in r.output


def test_fleet_csv_without_resource_column(tmp_path):
    csv = tmp_path / "fleet.csv"
    csv.write_text("server,port,lane\nr1,osfp1,1\n")
    r = CliRunner().invoke(main, ["watch", "--fleet", str(csv), "--db", str(tmp_path / "w.sqlite")])
    assert r.exit_code == 2 and "no 'resource' column" in r.output


def test_cli_json_lines_over_a_fleet_csv(tmp_path):
    from eqtune.watch.fleet import FleetSpec, start_fleet

    with start_fleet(FleetSpec(modules=2, planted=[], stable_marginal=[])) as fleet:
        csv = tmp_path / "fleet.csv"
        csv.write_text("resource,server,port,lanes\n" + "".join(f"{r},rack1,osfp{i},1-4\n" for i, r in enumerate(fleet.resources)))
        r = CliRunner().invoke(main, ["watch", "--fleet", str(csv), "--interval", "0.05", "--count", "3", "--json",
                                      "--db", str(tmp_path / "w.sqlite")])
    assert r.exit_code == 0, r.output
    rows = [json.loads(x) for x in r.output.splitlines()]
    samples = [d for d in rows if d["type"] == "sample"]
    assert len(samples) == 6 and all(sorted(d["lanes"]) == ["1", "2", "3", "4"] for d in samples)
    assert all(d["lanes"]["1"]["fec_symbol_errors"] == NOT_ADVERTISED and isinstance(d["lanes"]["1"]["esnr_db"], float)
               for d in samples)
    assert [d["interval"] for d in rows if d["type"] == "interval"] == [1, 2, 3]


def test_bus_key_serializes_modules_on_one_bus():
    from eqtune.watch.poller import bus_key

    assert bus_key("i2c:1@0x50") == bus_key("i2c:1@0x51") == "i2c:1"
    assert bus_key("i2c:2@0x50") != bus_key("i2c:1@0x50")
    assert bus_key("ftdi://ftdi:232h/1@0x50") == "ftdi://ftdi:232h/1"
    assert bus_key("optoe:/sys/bus/i2c/devices/11-0050/eeprom") == "optoe:11"
    assert bus_key("net:127.0.0.1:7700") != bus_key("net:127.0.0.1:7701")


def test_fleet_csv_profile_gives_the_retune_channel(tmp_path):
    from eqtune.session.profile import Profile
    from eqtune.watch.targets import from_csv

    prof = Profile.from_identity({"vendor": "ACME", "pn": "OSFP-800G", "oui": "", "rev": "", "firmware": ""},
                                 {1: {"rx_post": 3}}, channel="c2m-16in")
    prof.save(tmp_path / "p.json")
    csv = tmp_path / "fleet.csv"
    csv.write_text("resource,profile\ni2c:1@0x50,p.json\ni2c:2@0x50,missing.json\n")
    from eqtune.errors import InputError

    with pytest.raises(InputError, match="line 3"):
        from_csv(csv)
    csv.write_text("resource,profile\ni2c:1@0x50,p.json\n")
    (t,) = from_csv(csv)
    assert t.channel == "c2m-16in" and t.profile == "p.json"


def test_prometheus_drops_a_module_that_stops_answering():
    import urllib.request

    from eqtune.watch.observe import ModuleSample, adapt_vdm
    from eqtune.watch.prom import PrometheusExporter, parse_metrics

    exp = PrometheusExporter("127.0.0.1", 0).start()
    try:
        good = ModuleSample("net:a:1", 1.0, 40.0, adapt_vdm({1: {"esnr_host_input_db": 20.0}}, [1]))
        exp.update(1, [good], set())
        scrape = lambda: parse_metrics(urllib.request.urlopen(f"http://127.0.0.1:{exp.port}/metrics", timeout=5).read().decode())  # noqa: E731
        m = scrape()
        assert m[("eqtune_lane_esnr_db", (("lane", "1"), ("resource", "net:a:1")))] == 20.0
        assert ("eqtune_lane_prefec_ber", (("lane", "1"), ("resource", "net:a:1"))) not in m  # not advertised
        exp.update(2, [ModuleSample("net:a:1", 2.0, None, error="timeout")], set())
        m = scrape()
        assert not any(n == "eqtune_lane_esnr_db" for n, _ in m)
        assert m[("eqtune_module_up", (("resource", "net:a:1"),))] == 0.0
        assert ("eqtune_module_temperature_celsius", (("resource", "net:a:1"),)) not in m
    finally:
        exp.stop()


def test_lane_history_buffer_keeps_order_through_growth_and_trim():
    from eqtune.watch.poller import LaneHistory

    h = LaneHistory(capacity=4)
    for i in range(10):
        h.append(float(i), 25.0 + i, None if i % 2 else 20.0, 1e-6)
        h.trim(i - 4.5)
    a = h.array()
    assert a[:, 0].tolist() == [5.0, 6.0, 7.0, 8.0, 9.0]
    assert np.isnan(a[0, 2]) and a[1, 2] == 20.0 and a[-1, 1] == 34.0
    h.extend_before(np.array([[3.0, 1.0, 2.0, 3.0], [4.0, 1.0, 2.0, 3.0]]))
    assert h.array()[:, 0].tolist() == [3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]


def test_disk_full_mid_watch_is_one_clear_error_and_keeps_earlier_intervals(tmp_path):
    import sqlite3

    from eqtune.errors import EqtuneError
    from eqtune.watch.fleet import FleetSpec, start_fleet
    from eqtune.watch.poller import Watcher
    from eqtune.watch.store import WatchStore
    from eqtune.watch.targets import WatchTarget

    db = tmp_path / "w.sqlite"
    store = WatchStore(db)
    with start_fleet(FleetSpec(modules=2, planted=[], stable_marginal=[])) as fleet:
        w = Watcher([WatchTarget(r) for r in fleet.resources], store=store)
        for _ in range(3):
            w.poll_interval()
        # the medium fills up: SQLite's own "database or disk is full" (max_page_count = pages in use)
        used = store.db.execute("PRAGMA page_count").fetchone()[0]
        store.db.execute(f"PRAGMA max_page_count = {used}")
        with pytest.raises(EqtuneError, match="intervals before it are safe") as err:
            for _ in range(50):
                w.poll_interval()
        w.close()
    store.close()
    import re

    failed = int(re.search(r"while writing interval (\d+)", str(err.value)).group(1))
    assert failed >= 4 and "database or disk is full" in str(err.value)
    con = sqlite3.connect(str(db))
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert [r[0] for r in con.execute("SELECT interval FROM intervals")] == list(range(1, failed))
    assert con.execute("SELECT COUNT(*) FROM polls").fetchone()[0] == 2 * (failed - 1)


def test_emulator_fec_counters_accumulate_with_temperature():
    from scipy.stats import binom

    from eqtune.emulate.link import EmulatedLink, ThermalProfile, surrogate_quality

    clock = [0.0]
    link = EmulatedLink("c2m-10in", quality=surrogate_quality(15.5), seed=1, noise=False)
    link.set_thermal(ThermalProfile.parse("0:25,100:25,200:45"), clock=lambda: clock[0],
                     lane_tempco_db_per_c={1: 0.1, 2: 0.15})
    assert link.fec_counters(1)["bits"] == 0
    clock[0] = 1e-3  # 1 ms at 25 C: counters follow the constant BER exactly (noise off)
    c1 = link.fec_counters(1)
    ber25 = link.ber(1, "module_rx")
    assert c1["bits"] == pytest.approx(link.bit_rate_bps * 1e-3, abs=1)
    assert c1["bit_errors"] == pytest.approx(ber25 * c1["bits"], abs=1)
    assert c1["codewords"] == c1["bits"] // 5440
    # uncorrectable codewords at the binomial tail of independent symbol errors (SER ~ 2 BER)
    cer25 = binom.sf(15, 544, 1 - (1 - 2 * ber25) ** 5)
    assert c1["uncorrectable"] == pytest.approx(cer25 * c1["codewords"], abs=1)
    clock[0] = 200.0
    before = link.fec_counters(1)
    clock[0] = 200.001  # 1 ms at 45 C: +2 dB on lane 1 -> many more errors in the same time
    after = link.fec_counters(1)
    ber45 = link.ber(1, "module_rx")
    assert ber45 > 10 * ber25
    assert after["bit_errors"] - before["bit_errors"] == pytest.approx(ber45 * (after["bits"] - before["bits"]), rel=0.01)
    assert after["bit_errors"] - before["bit_errors"] > 10 * c1["bit_errors"]
    # lane 2 at 45 C (+3 dB): pre-FEC BER ~1e-3, codewords start to fail at the binomial-tail rate
    link.fec_counters(2)
    clock[0] = 200.011
    a = link.fec_counters(2)
    clock[0] = 200.111
    b = link.fec_counters(2)
    ber2 = link.ber(2, "module_rx")
    cer2 = binom.sf(15, 544, 1 - (1 - 2 * ber2) ** 5)
    n_cw = b["codewords"] - a["codewords"]
    assert cer2 > 1e-5 and b["uncorrectable"] - a["uncorrectable"] == pytest.approx(cer2 * n_cw, abs=1)
