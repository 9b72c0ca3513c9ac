"""Child process of test_nos_xcvrd_reapply.py: export -> SONiC's parser -> SONiC's CmisManagerTask
applies it -> emulated module reset -> CmisManagerTask applies it again, on every emulated image and
every real module image (page dumps) the emulator has.

Uses the SONiC host harness of tests/hosts (``sonic_xcvrd_harness.run_xcvrd``: SONiC's unmodified
CmisManagerTask over sonic-platform-common's CmisApi on an emulated module), giving it the file eqtune
exported instead of the harness's own. Prints one JSON line.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

HOSTS = Path(__file__).resolve().parents[1] / "hosts"


def main() -> int:
    sys.path.insert(0, str(HOSTS))
    import sonic_xcvrd_harness as H

    from eqtune.drivers.cmis import CmisDriver
    from eqtune.drivers.transport import PagedRegisters
    from eqtune.emulate import cmis_table
    from eqtune.emulate.datapath import EQ_REGS
    from eqtune.emulate.transport import EmulatorTransport
    from eqtune.session.nos_common import facts_from_module, render_nos_json
    from eqtune.session.nos_sonic import export_optics_si

    reason = H.missing_reason()
    if reason:
        print(json.dumps({"skipped": reason}))
        return 0
    results = []
    for i, image in enumerate(module_names(cmis_table)):
        emu = H.emulated(image)
        drv = CmisDriver(PagedRegisters(EmulatorTransport(emu, f"emu:{image}")), resource=f"emu:{image}")
        facts = facts_from_module(drv, f"emu:{image}")  # read only: identity and page 01h maxima
        rng = random.Random(100 + i)
        codes = {ln: {k: rng.choice(v) for k, v in facts.knob_values.items()} for ln in range(1, facts.lanes + 1)}
        speeds: list[int] = []

        def exported(lane_speed_g: int, *_a: object, _codes=codes, _facts=facts, _speeds=speeds, **_k: object) -> dict:
            # xcvrd's g_optics_si_dict = eqtune's file for the port's lane speed (physical port 1)
            _speeds.append(int(lane_speed_g))
            exp = export_optics_si(_codes, _facts, ports=[1], lane_speed_g=int(lane_speed_g))
            return json.loads(render_nos_json(exp.doc))  # the file's bytes, as xcvrd's json.load reads them

        H.optics_si_settings = exported
        before = _active(emu, EQ_REGS)
        first = H.run_xcvrd(emu, image, {"file": 1})
        emu.reset_to_defaults()
        reset = _active(emu, EQ_REGS)
        second = H.run_xcvrd(emu, image, {"file": 1})
        lanes = _host_lanes(first.log) or list(range(1, facts.lanes + 1))
        want = {k: {ln: codes[ln][k] for ln in lanes} for k in codes[1]}

        def run(r, _lanes=lanes, _want=want):
            return {"state": r.state, "errors": r.errors(), "history": r.history,
                    "skipped_init": any("no CMIS application update required" in m for _, m in r.log),
                    "active": _s({k: {ln: r.active_si[k][ln] for ln in _lanes} for k in _want})}

        results.append({"image": image, "lane_speed_g": speeds[0] if speeds else None, "host_lanes": lanes,
                        "want": _s(want), "before": _s({k: {ln: before[k][ln] for ln in lanes} for k in want}),
                        "first": run(first), "second": run(second),
                        "after_reset": _s({k: {ln: reset[k][ln] for ln in lanes} for k in want})})
    print(json.dumps({"results": results}))
    return 0


def _active(emu, regs) -> dict:
    return {k: {ln: emu._get_lane(act, ln) for ln in range(1, emu.lanes + 1)} for k, (_, act) in regs.items()}


def _host_lanes(log) -> list[int]:
    """The host lanes xcvrd configured, from its own log line "Setting host_lanemask=0x.."."""
    import re

    for _, m in log:
        hit = re.search(r"Setting host_lanemask=(0x[0-9a-fA-F]+)", m)
        if hit:
            mask = int(hit.group(1), 16)
            return [ln + 1 for ln in range(8) if mask >> ln & 1]
    return []


def module_names(cmis_table) -> list[str]:
    """Every emulated image, then every real module image (page dumps) the emulator carries."""
    dumps = getattr(cmis_table, "dump_names", None)
    return list(cmis_table.image_names()) + (list(dumps()) if callable(dumps) else [])


def _s(d: dict) -> dict:
    return {k: {str(ln): v for ln, v in lanes.items()} for k, lanes in d.items()}


if __name__ == "__main__":
    raise SystemExit(main())
