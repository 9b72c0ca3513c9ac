"""Cost of the one validation layer and the one JSON helper, against a baseline checkout.

    python benchmarks/bench_config_schema.py --baseline DIR [--repeat N]

``DIR`` is a checkout of the version to compare with (e.g. ``git archive <commit> | tar -x -C DIR``);
the same timing code runs in a subprocess on each tree in this run, and the ratios new / baseline are
printed (< 1: the new code is faster). Timed: checking the shipped SerDes profiles (parsed TOML ->
SerdesProfile), the example study spec (-> combinations), the shipped driver definitions, ``--json``
output of a tune-sized result (``echo_json``) and journal record encoding (``encode_record``).
Per tree: ``--rounds`` alternating rounds, each the median of ``--repeat`` runs of ``--inner`` calls;
the fastest round is kept (the machine is shared; alternating exposes both trees to the same load).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_WORKER = r'''
import io, json, sys, time, tomllib, contextlib
from pathlib import Path
import numpy as np
root, repeat, inner = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
from eqtune.serdes.profile import profile_from_dict
from eqtune.study.spec import parse_spec
from eqtune.drivers.definition import parse_definition
from eqtune.cli._common import echo_json
from eqtune.session.journal import encode_record

profiles = [(tomllib.loads(p.read_text()), str(p)) for p in sorted((root / "channels" / "serdes").glob("*.toml"))]
spec_path = root / "channels" / "studies" / "example.toml"
spec = tomllib.loads(spec_path.read_text())
defs = [(tomllib.loads(p.read_text()), p) for p in sorted((root / "drivers").glob("*.toml"))]
rng = np.random.default_rng(1)
history = [{"index": i, "codes": {"rx_pre": int(i % 8), "rx_post": int(i % 7), "rx_amp": 2},
            "margin": float(rng.normal(20, 3)), "metrics": {"eye_height_mv": rng.normal(20, 3, 3),
            "com_db": np.float64(3.1), "vec_db": float("nan"), "ok": np.bool_(True)}, "cost_s": 0.01}
           for i in range(250)]
result = {"channel": "c2m-10in", "history": history, "tuned": history[-1], "seed": np.int64(3)}
record = {"v": 1, "seq": 12, "t": 1764571234.5, "type": "measure",
          "lanes": {str(ln): {"codes": {"rx_pre": 1, "rx_post": 3, "rx_amp": 2}, "margin": 5.25,
                              "counts": {"bits": 10**12, "errors": 17}} for ln in range(1, 9)}}

def timed(fn):
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        out.append((time.perf_counter() - t0) / inner)
    return sorted(out)[len(out) // 2]

def quiet_echo():
    with contextlib.redirect_stdout(io.StringIO()):
        echo_json(result)

res = {
    "serdes_profiles": timed(lambda: [profile_from_dict(d, s) for d, s in profiles]),
    "study_spec": timed(lambda: parse_spec(spec, base_dir=spec_path.parent, source=str(spec_path))),
    "driver_definitions": timed(lambda: [parse_definition(d, p) for d, p in defs]),
    "echo_json_250_evals": timed(quiet_echo),
    "journal_record": timed(lambda: encode_record(record)),
}
print(json.dumps(res))
'''


def run_tree(tree: Path, repeat: int, inner: int) -> dict[str, float]:
    env_path = str(tree)
    out = subprocess.run([sys.executable, "-c", _WORKER, str(tree), str(repeat), str(inner)], capture_output=True,
                         text=True, cwd=tree, env={"PYTHONPATH": env_path, "PATH": "/usr/bin:/bin"}, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", type=Path, required=True, help="checkout of the version to compare with")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--inner", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3, help="alternating runs per tree; the fastest is kept")
    a = ap.parse_args()
    runs: dict[str, list[dict[str, float]]] = {"base": [], "new": []}
    for _ in range(a.rounds):  # alternate the trees so that load on a shared machine hits both alike
        runs["base"].append(run_tree(a.baseline.resolve(), a.repeat, a.inner))
        runs["new"].append(run_tree(ROOT, a.repeat, a.inner))
    base = {k: min(r[k] for r in runs["base"]) for k in runs["base"][0]}
    new = {k: min(r[k] for r in runs["new"]) for k in runs["new"][0]}
    print(f"{'case':24s} {'baseline':>12s} {'new':>12s} {'new/baseline':>13s}")
    for k in new:
        print(f"{k:24s} {base[k] * 1e3:10.3f}ms {new[k] * 1e3:10.3f}ms {new[k] / base[k]:13.2f}")
    print(f"(best of {a.rounds} alternating rounds of the median of {a.repeat} x {a.inner} calls; "
          f"{statistics.mean(new[k] / base[k] for k in new):.2f} mean ratio)")


if __name__ == "__main__":
    main()
