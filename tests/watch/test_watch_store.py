"""The watch store's retention, downsampling, fleet-wide queries and acknowledgements, and a hostile file."""

from __future__ import annotations

import sqlite3

import pytest
from click.testing import CliRunner

from eqtune.cli import main
from eqtune.watch.observe import ModuleSample
from eqtune.watch.store import WatchStore, connect_readonly, history, latest_values, worst_lanes

T0 = 1_699_999_200.0  # a multiple of the 900 s block


def _fill(path, hours=3.0, modules=2):
    st = WatchStore(path)
    st.start_run(["test"])
    n = int(hours * 60)
    for i in range(n):
        ts = T0 + 60.0 * i
        samples = [ModuleSample(f"net:h:{m}", ts, 30.0, {ln: {"prefec_ber": (m + 1) * ln * 1e-8 * (1 + i % 3),
                                                             "esnr_db": 25.0 - ln} for ln in (1, 2)})
                   for m in range(modules)]
        st.append_interval(i + 1, ts, samples)
    return st, n


def test_compaction_keeps_min_max_mean_per_block_and_the_recent_raw(tmp_path):
    st, n = _fill(tmp_path / "w.sqlite")
    end = T0 + 60.0 * n
    removed = st.compact(end, raw_days=1.0 / 24, block_s=900.0)  # keep the last hour raw
    st.close()
    db = connect_readonly(tmp_path / "w.sqlite")
    assert removed == (n - 60) * 2 * 2 * 2  # older samples: 2 modules x 2 lanes x 2 observables
    rows = history(db, "net:h:1", 2, "prefec_ber")
    blocks = [r for r in rows if "block_s" in r]
    raw = [r for r in rows if "value" in r]
    assert len(raw) == 60 and len(blocks) == (n - 60) // 15
    b = blocks[0]  # 15 samples cycling 1x, 2x, 3x of 4e-8
    assert b["n"] == 15 and b["min"] == pytest.approx(4e-8) and b["max"] == pytest.approx(12e-8)
    assert b["mean"] == pytest.approx(8e-8)


def test_worst_lanes_and_latest_values(tmp_path):
    st, _ = _fill(tmp_path / "w.sqlite")
    st.close()
    db = connect_readonly(tmp_path / "w.sqlite")
    top = worst_lanes(db, "prefec_ber", 2)
    assert [(r, ln) for r, ln, _v, _t in top] == [("net:h:1", 2), ("net:h:1", 1)]
    assert worst_lanes(db, "esnr_db", 1, ascending=True)[0][2] == 23.0
    lat = latest_values(db)
    assert lat == latest_values(db, run_id=1) and len(lat) == 8
    r = CliRunner().invoke(main, ["watch", "worst", "--db", str(tmp_path / "w.sqlite"), "-n", "1"])
    assert r.exit_code == 0 and "net:h:1 lane 2" in r.output
    r = CliRunner().invoke(main, ["watch", "history", "net:h:0", "--lane", "1", "--db", str(tmp_path / "w.sqlite")])
    assert r.exit_code == 0 and len(r.output.splitlines()) == 180
    r = CliRunner().invoke(main, ["watch", "export", "--db", str(tmp_path / "w.sqlite")])
    assert r.exit_code == 0 and r.output.splitlines()[0] == "ts,resource,lane,observable,value"


def test_ack_reaches_a_running_watch(tmp_path):
    st, _ = _fill(tmp_path / "w.sqlite", hours=0.1)
    r = CliRunner().invoke(main, ["watch", "ack", "net:h:0", "2", "--db", str(tmp_path / "w.sqlite")])
    assert r.exit_code == 0, r.output
    assert st.new_acks() == [("net:h:0", 2)] and st.new_acks() == []
    st.close()


@pytest.mark.parametrize("kind", ["garbage", "wrong_schema"])
def test_hostile_store_is_one_line(tmp_path, kind):
    p = tmp_path / "w.sqlite"
    if kind == "garbage":
        p.write_bytes(b"SQLite format 3\x00" + b"\xff" * 4000)
    else:
        con = sqlite3.connect(str(p))
        con.execute("CREATE TABLE runs(run_id TEXT PRIMARY KEY NOT NULL, started REAL NOT NULL, argv TEXT)")
        con.execute("INSERT INTO runs VALUES('a', 1, 'x')")  # the watch's INSERT gives run_id NULL: IntegrityError
        con.commit()
        con.close()
    r = CliRunner().invoke(main, ["watch", "emu:c2m-10in", "--count", "1", "--db", str(p)])
    assert r.exit_code == 2 and "watch store" in r.output and "Traceback" not in r.output, r.output
