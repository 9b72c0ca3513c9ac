"""Child process of test_nos_xcvrd_reapply.py: export -> SONiC's parser -> SONiC's CmisManagerTask
applies it -> emulated module reset -> CmisManagerTask applies it again, on every emulated image.

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
    from eqtune.emulate.cmis_table import image_names
    from eqtune.emulate.datapath import EQ_REGS
    from eqtune.emulate.transport import EmulatorTransport
    from eqtune.session.nos_common import facts_from_module, render_nos_json
    from eqtune.session.nos_sonic import export_optics_si

    reason = H.missing_reason()
    if reason:
        print(json.dumps({"skipped": reason}))
        return 0
    results = []
    for i, image in enumerate(image_names()):
        emu = H.emulated(image)
        drv = CmisDriver(PagedRegisters(EmulatorTransport(emu, f"emu:{image}")), resource=f"emu:{image}")
        facts = facts_from_module(drv, f"emu:{image}")  # read only: identity and page 01h maxima
        rng = random.Random(100 + i)
        codes = {ln: {k: rng.choice(v) for k, v in facts.knob_values.items()} for ln in range(1, facts.lanes + 1)}
        # the harness drives physical port 1 at 100 Gb/s per host lane
        exp = export_optics_si(codes, facts, ports=[1], lane_speed_g=100)
        doc = json.loads(render_nos_json(exp.doc))  # the file's bytes, as xcvrd's json.load reads them
        H.optics_si_settings = lambda *_a, _doc=doc, **_k: _doc  # xcvrd's g_optics_si_dict = eqtune's file
        first = H.run_xcvrd(emu, image, {"file": 1})
        emu.reset_to_defaults()
        reset = {k: {ln: emu._get_lane(act, ln) for ln in range(1, emu.lanes + 1)}
                 for k, (_, act) in EQ_REGS.items()}
        second = H.run_xcvrd(emu, image, {"file": 1})
        want = {k: {ln: codes[ln][k] for ln in codes} for k in codes[1]}
        results.append({"image": image, "lanes": facts.lanes, "want": _s(want),
                        "first": {"state": first.state, "active": _s(first.active_si), "errors": first.errors()},
                        "after_reset": _s(reset),
                        "second": {"state": second.state, "active": _s(second.active_si), "errors": second.errors(),
                                   "history": second.history}})
    print(json.dumps({"results": results}))
    return 0


def _s(d: dict) -> dict:
    return {k: {str(ln): v for ln, v in lanes.items()} for k, lanes in d.items()}


if __name__ == "__main__":
    raise SystemExit(main())
