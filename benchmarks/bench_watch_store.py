"""Size and query time of the watch store: 256 lanes (32 modules x 8) at 60 s.

    nice -n 10 python benchmarks/bench_watch_store.py [--hours 12] [--raw-days 7]

Writes ``--hours`` of intervals (simulated time, real SQLite commits with synchronous=FULL) with the
observables the default emulated image advertises (8 per lane), compacts with the default retention,
and reports: bytes per raw interval and per downsampled block (measured), the 30-day size
extrapolated from them (raw for ``--raw-days``, then min/max/mean per 15-minute block), and the
time of the fleet-wide worst-lanes query and of ``latest_values`` on that store.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from eqtune.watch.observe import ModuleSample
from eqtune.watch.store import BLOCK_S, RAW_DAYS, WatchStore, connect_readonly, latest_values, worst_lanes

OBS = ("prefec_ber", "prefec_ber_min", "prefec_ber_max", "prefec_ber_avg", "esnr_db", "ltp_db", "errored_frames",
       "fec_codeword_errors")


def _samples(ts: float, rng: np.random.Generator, modules: int = 32, lanes: int = 8) -> list[ModuleSample]:
    out = []
    for m in range(modules):
        vals = {ln: {o: float(rng.uniform(1e-9, 1e-6)) for o in OBS} for ln in range(1, lanes + 1)}
        out.append(ModuleSample(f"net:10.0.{m // 8}.{m % 8}:9000", ts, 30.0 + rng.standard_normal(), vals))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--hours", type=float, default=12.0)
    ap.add_argument("--raw-days", type=float, default=RAW_DAYS)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    n = int(args.hours * 60)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "watch.sqlite"
        st = WatchStore(path)
        st.start_run(["bench"])
        t0 = time.perf_counter()
        for i in range(n):
            st.append_interval(i + 1, 1.7e9 + 60.0 * i, _samples(1.7e9 + 60.0 * i, rng))
        write_s = time.perf_counter() - t0
        st.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        raw_bytes = path.stat().st_size
        per_interval = raw_bytes / n
        # everything goes to min/max/mean blocks; their bytes measured alone (a copy of those tables)
        st.compact(1.7e9 + 60.0 * n + 86400.0 * args.raw_days, args.raw_days)
        st.close()
        import sqlite3

        agg = Path(tmp) / "agg.sqlite"
        con = sqlite3.connect(str(agg))
        con.execute(f"ATTACH DATABASE '{path}' AS w")
        con.execute("CREATE TABLE series AS SELECT * FROM w.series")
        con.execute("CREATE TABLE samples_agg(series INTEGER NOT NULL, block_ts INTEGER NOT NULL, block_s INTEGER NOT NULL, "
                    "n INTEGER NOT NULL, vmin REAL NOT NULL, vmax REAL NOT NULL, vmean REAL NOT NULL, "
                    "PRIMARY KEY(series, block_ts)) WITHOUT ROWID")
        con.execute("INSERT INTO samples_agg SELECT * FROM w.samples_agg")
        con.commit()
        con.execute("DETACH DATABASE w")
        con.execute("VACUUM")
        con.close()
        blocks = n * 60.0 / BLOCK_S
        per_block = agg.stat().st_size / blocks
        raw_n = args.raw_days * 86400 / 60
        agg_n = (30 - args.raw_days) * 86400 / BLOCK_S
        est = raw_n * per_interval + agg_n * per_block
        keep = 30 * 86400 / 60 * per_interval
        # queries on the raw store (the larger one): rebuild it
        st = WatchStore(path)
        st.start_run(["bench"])
        for i in range(n):
            st.append_interval(i + 1, 1.8e9 + 60.0 * i, _samples(1.8e9 + 60.0 * i, rng))
        st.close()
        db = connect_readonly(path)
        t1 = time.perf_counter()
        worst = worst_lanes(db, "prefec_ber", 10)
        worst_s = time.perf_counter() - t1
        t2 = time.perf_counter()
        lat = latest_values(db)
        latest_s = time.perf_counter() - t2
    print(f"load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; {n} intervals of 256 lanes x {len(OBS)} observables "
          f"written in {write_s:.1f} s ({1e3 * write_s / n:.1f} ms per committed interval)")
    print(f"raw: {per_interval / 1024:.1f} kB per interval; downsampled: {per_block / 1024:.1f} kB per {BLOCK_S:.0f} s block")
    print(f"30 days at 60 s, raw {args.raw_days:g} days then blocks: {est / 1e9:.2f} GB (extrapolated); "
          f"all raw (no retention): {keep / 1e9:.2f} GB")
    print(f"fleet-wide worst 10 lanes: {1e3 * worst_s:.1f} ms ({len(worst)} rows); latest_values: "
          f"{1e3 * latest_s:.0f} ms ({len(lat)} values) on a {n}-interval store")


if __name__ == "__main__":
    main()
