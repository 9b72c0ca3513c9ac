"""Building the channel variants of a length sweep with crosstalk (a study's ``build_channel``), with the
parsed-network cache of ``eqtune.channel.touchstone`` and without it (each aggressor file parsed again
because its load options carry the victim's delay, which changes with the length), interleaved in one
run, CPU per channel; and the same at the screening study's 100 MHz grid.

Run:  nice python benchmarks/bench_channel_sweep.py [--n 40]
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

import eqtune.channel.touchstone as ts
from eqtune.study.compute import build_channel
from eqtune.study.spec import ChannelRef, Corner


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=40)
    a = ap.parse_args()
    cached = ts._parsed_network
    refs = [ChannelRef(f"host {3 + 0.3 * i:.1f}in", "parametric", "c2m-10in-xtalk",
                       (("length_in", 3 + 0.3 * i), ("crosstalk", True))) for i in range(a.n)]
    corner = Corner("85C", 85.0, True)
    build_channel(refs[0], corner)
    times: dict[str, list[float]] = {"cache": [], "no cache": [], "cache, 100 MHz": []}
    for ref in refs:
        for mode in ("cache", "no cache", "cache, 100 MHz") if hash(ref.label) % 2 else ("no cache", "cache", "cache, 100 MHz"):
            ts._parsed_network = cached if mode != "no cache" else (lambda p, key: ts.read_network(p))
            t0 = time.process_time()
            build_channel(ref, corner, 100e6 if "100" in mode else None)
            times[mode].append(time.process_time() - t0)
    ts._parsed_network = cached
    print(f"{a.n} variants of c2m-10in-xtalk at 85 C with crosstalk, load {os.getloadavg()[0]:.1f}:")
    for mode, t in times.items():
        print(f"  {mode:16s} median {statistics.median(t) * 1e3:6.1f} ms CPU a channel")
    print(f"  without / with the cache: {statistics.median(times['no cache']) / statistics.median(times['cache']):.2f}x")


if __name__ == "__main__":
    main()
