"""Channel-model speed: load + prepare a 6,000-point .s4p, and ``eqtune --help`` wall time.

    python benchmarks/bench_channel.py [FILE.s4p] [--repeat N]

Targets: load + SDD21 on the simulation grid + pulse response <= 300 ms median;
``eqtune --help`` <= 0.5 s. Prints each median and its ratio to the target (< 1 is inside).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ROOT.parent / "shared" / "channels-ieee" / "tracy_3ck_02_0119_DPO_4in" / "DPO_4in_Meg7_THRU.s4p"


def bench_load(path: Path, repeat: int, *, cold: bool = True) -> list[float]:
    """Load + prepare ``path``; ``cold`` clears the per-process Touchstone cache before each run (a
    first load, as the CLI does), otherwise repeated loads hit the cache (as study workers do)."""
    from eqtune.channel import load_channel, pulse_response
    from eqtune.channel.touchstone import clear_cache

    times = []
    for _ in range(repeat):
        if cold:
            clear_cache()
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ch = load_channel(path)
        pulse_response(ch, samples_per_ui=32)
        times.append(time.perf_counter() - t0)
    return times


def bench_help(repeat: int) -> list[float]:
    exe = shutil.which("eqtune", path=str(Path(sys.executable).parent)) or shutil.which("eqtune")
    cmd = [exe, "--help"] if exe else [sys.executable, "-m", "eqtune", "--help"]
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True)
        times.append(time.perf_counter() - t0)
    return times


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file", nargs="?", type=Path, default=DEFAULT)
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    if not args.file.is_file():
        print(f"bench_channel: {args.file} not found (pass a 6,000-point .s4p)", file=sys.stderr)
        return 2
    import skrf  # noqa: F401

    import eqtune.channel.library  # noqa: F401 - import cost is not part of the per-file figure

    load = bench_load(args.file, args.repeat)
    warm = bench_load(args.file, args.repeat, cold=False)
    helps = bench_help(args.repeat)
    rows = [("load + prepare .s4p, first load (cache cleared)", statistics.median(load), 0.300, min(load)),
            ("load + prepare .s4p, repeated (Touchstone cache)", statistics.median(warm), 0.300, min(warm)),
            ("eqtune --help (wall, new process)", statistics.median(helps), 0.500, min(helps))]
    print(f"file: {args.file} ({args.repeat} runs each)")
    for name, med, target, best in rows:
        print(f"{name:<52} median {med * 1e3:7.1f} ms  best {best * 1e3:7.1f} ms  "
              f"target {target * 1e3:.0f} ms  ratio {med / target:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
