"""Run SONiC's own, unmodified CMIS state machine against an emulated module.

sonic-net/sonic-platform-daemons ``sonic-xcvrd/xcvrd/cmis/cmis_manager_task.py`` (``CmisManagerTask``)
drives one port over sonic-net/sonic-platform-common's ``CmisApi`` (created by its own
``XcvrApiFactory``), whose EEPROM reader/writer here are the emulated module's two-wire interface
(linear CMIS addressing: sonic ``CmisPage.linear_offset``, page * 128 + byte). Only what a switch
provides around xcvrd is stubbed, in this harness: swsscommon / sonic_py_common (redis tables,
syslog), the STATE_DB status table (their own ``tests/mock_swsscommon.Table``), the port's admin
status / host Tx readiness, the platform ``Sfp`` object, and ``optics_si_settings.json`` (the SI
settings eqtune exports, put into ``optics_si_parser.g_optics_si_dict`` as xcvrd's own loader does).

Their code is never copied, committed or modified: it is found through ``EQTUNE_SONIC_ROOT`` (a
directory holding ``sonic-platform-common`` and ``sonic-platform-daemons``; default ``../ext`` next to
the checkout or its worktree folder). Run as a script for a report on every emulated image::

    python tests/hosts/sonic_xcvrd_harness.py
"""

from __future__ import annotations

import importlib
import os
import sys
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest.mock import MagicMock

ROOT = Path(__file__).resolve().parents[2]
STUBBED = ("swsscommon", "swsscommon.swsscommon", "sonic_py_common", "sonic_py_common.syslogger",
           "sonic_py_common.daemon_base", "sonic_py_common.device_info", "sonic_py_common.multi_asic",
           "sonic_py_common.logger")


def sonic_root() -> Path:
    """``EQTUNE_SONIC_ROOT``, else ``../ext`` beside the checkout (or beside its worktree folder)."""
    if os.environ.get("EQTUNE_SONIC_ROOT"):
        return Path(os.environ["EQTUNE_SONIC_ROOT"]).resolve()
    for cand in (ROOT.parent / "ext", ROOT.parent.parent / "ext"):
        if (cand / "sonic-platform-daemons").is_dir():
            return cand.resolve()
    return (ROOT.parent / "ext").resolve()


def missing_reason() -> str | None:
    """Why the conformance check cannot run here (None: it can)."""
    root = sonic_root()
    for sub in ("sonic-platform-common/sonic_platform_base/sonic_xcvr/api/public/cmis.py",
                "sonic-platform-daemons/sonic-xcvrd/xcvrd/cmis/cmis_manager_task.py"):
        if not (root / sub).is_file():
            return f"SONiC trees not found: {root / sub} is missing (set EQTUNE_SONIC_ROOT)"
    try:
        importlib.import_module("natsort")
    except ImportError:
        return "xcvrd needs the natsort package"
    return None


class _Logger:
    """sonic_py_common.syslogger.SysLogger stand-in: keeps the messages."""

    def __init__(self) -> None:
        self.lines: list[tuple[str, str]] = []

    def _log(self, level: str, msg: str, *_: Any, **__: Any) -> None:
        self.lines.append((level, str(msg)))

    def log_notice(self, msg: str, *a: Any, **k: Any) -> None:
        self._log("NOTICE", msg)

    def log_error(self, msg: str, *a: Any, **k: Any) -> None:
        self._log("ERROR", msg)

    def log_warning(self, msg: str, *a: Any, **k: Any) -> None:
        self._log("WARNING", msg)

    def log_info(self, msg: str, *a: Any, **k: Any) -> None:
        self._log("INFO", msg)

    def log_debug(self, msg: str, *a: Any, **k: Any) -> None:
        self._log("DEBUG", msg)


def _load_sonic() -> types.SimpleNamespace:
    """Import xcvrd and sonic_platform_base from the SONiC trees with the switch services stubbed."""
    root = sonic_root()
    for p in (root / "sonic-platform-common", root / "sonic-platform-daemons" / "sonic-xcvrd"):
        if str(p) not in sys.path:
            sys.path.insert(0, str(p))
    for name in STUBBED:
        sys.modules.setdefault(name, MagicMock(name=name))
    sys.modules["swsscommon"].swsscommon = sys.modules["swsscommon.swsscommon"]  # type: ignore[attr-defined]
    sys.modules["swsscommon.swsscommon"].FieldValuePairs = list  # type: ignore[attr-defined]
    sys.modules["sonic_py_common"].multi_asic.is_multi_asic = lambda: False  # type: ignore[attr-defined]
    os.environ.setdefault("XCVRD_UNIT_TESTING", "1")
    importlib.import_module("xcvrd.xcvrd")  # breaks xcvrd's import cycle the way its own tests do
    cmt = importlib.import_module("xcvrd.cmis.cmis_manager_task")
    common = importlib.import_module("xcvrd.xcvrd_utilities.common")
    peh = importlib.import_module("xcvrd.xcvrd_utilities.port_event_helper")
    si = importlib.import_module("xcvrd.xcvrd_utilities.optics_si_parser")
    factory = importlib.import_module("sonic_platform_base.sonic_xcvr.xcvr_api_factory")
    mock_tables = _import_file("sonic_mock_swsscommon",
                               root / "sonic-platform-daemons" / "sonic-xcvrd" / "tests" / "mock_swsscommon.py")
    return types.SimpleNamespace(cmt=cmt, common=common, peh=peh, si=si, factory=factory, Table=mock_tables.Table)


def _import_file(name: str, path: Path) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _virtual_datetime(clock: Any) -> types.SimpleNamespace:
    """A ``datetime`` module whose ``datetime.now()`` follows ``clock`` (the emulator's virtual clock),
    so xcvrd's expiry timers (``update_cmis_state_expiration_time`` / ``is_timer_expired``) run at
    module time and nothing sleeps for real."""
    import datetime as real

    epoch = real.datetime(2026, 1, 1)
    start = clock()

    class VirtualDatetime(real.datetime):
        @classmethod
        def now(cls, tz: Any = None) -> VirtualDatetime:  # type: ignore[override]
            t = epoch + real.timedelta(seconds=clock() - start)
            return cls(t.year, t.month, t.day, t.hour, t.minute, t.second, t.microsecond)

    return types.SimpleNamespace(datetime=VirtualDatetime, timedelta=real.timedelta)


class EmulatedSfp:
    """The platform ``Sfp`` object xcvrd talks to: presence and a ``CmisApi`` over the emulator."""

    def __init__(self, sonic: types.SimpleNamespace, emu: Any) -> None:
        self.emu = emu
        self._api = sonic.factory.XcvrApiFactory(self.read_eeprom, self.write_eeprom).create_xcvr_api()

    @staticmethod
    def _locate(addr: int) -> tuple[int, int]:
        """Linear address -> (page, byte) (sonic CmisPage.linear_offset, bank 0)."""
        if addr < 128:
            return 0, addr
        return addr // 128 - 1, 128 + addr % 128

    def read_eeprom(self, offset: int, num_bytes: int) -> bytearray:
        out = bytearray()
        while num_bytes > 0:
            page, byte = self._locate(offset)
            n = min(num_bytes, (128 if byte < 128 else 256) - byte)
            if byte >= 128:
                self.emu.write(127, bytes([page]))
            out += self.emu.read(byte, n)
            offset, num_bytes = offset + n, num_bytes - n
        return out

    def write_eeprom(self, offset: int, num_bytes: int, write_buffer: bytes) -> bool:
        page, byte = self._locate(offset)
        if byte >= 128:
            self.emu.write(127, bytes([page]))
        self.emu.write(byte, bytes(write_buffer[:num_bytes]))
        return True

    def get_presence(self) -> bool:
        return True

    def get_xcvr_api(self) -> Any:
        return self._api


@dataclass
class SonicRun:
    """What xcvrd reached: its CMIS state, the log it wrote, the registers it left."""

    image: str
    state: str
    history: list[str]
    log: list[tuple[str, str]]
    tx_disabled: int
    dp_states: list[str]
    config_status: list[str]
    active_si: dict[str, dict[str, int]] = field(default_factory=dict)

    def errors(self) -> list[str]:
        return [m for lvl, m in self.log if lvl == "ERROR"]


def optics_si_settings(lane_speed_g: int, codes: dict[str, int], lanes: int) -> dict[str, Any]:
    """An ``optics_si_settings.json`` body (the format xcvrd's optics_si_parser reads:
    GLOBAL_MEDIA_SETTINGS -> port range -> <speed>G_SPEED -> Default -> SI key -> lane), one code per
    knob on every lane. Keys: sonic-platform-common consts OUTPUT_EQ_PRE_CURSOR_TARGET_RX etc."""
    keys = {"rx_pre": "OutputEqPreCursorTargetRx", "rx_post": "OutputEqPostCursorTargetRx",
            "rx_amp": "OutputAmplitudeTargetRx", "tx_eq": "FixedInputEqTargetTx"}
    body = {keys[k]: {f"{keys[k]}{ln}": int(v) for ln in range(1, 9)} for k, v in codes.items()}
    del lanes
    return {"GLOBAL_MEDIA_SETTINGS": {"0-31": {f"{lane_speed_g}G_SPEED": {"Default": body}}}}


def run_xcvrd(emu: Any, image: str, si_codes: dict[str, int] | None, *, max_rounds: int = 200,
              step_s: float = 0.25) -> SonicRun:
    """Drive one port (Ethernet0, physical port 1, the host lanes and speed of application 1) through
    ``CmisManagerTask`` until it reaches READY or FAILED, advancing the emulator's virtual clock by
    ``step_s`` between task rounds (xcvrd's own timers use wall time; each round is one
    ``task_worker`` pass as its own tests run it)."""
    sonic = _load_sonic()
    logger = _Logger()
    sonic.cmt.helper_logger = logger
    sonic.common.helper_logger = logger
    sonic.si.helper_logger = logger
    sonic.cmt.PortChangeObserver = MagicMock()  # the redis port-event subscriber (events are fed below)
    sonic.cmt.datetime = _virtual_datetime(emu.clock)  # xcvrd's timers on the emulator's clock
    lanes = emu.lanes
    sonic.si.g_optics_si_dict = {}
    sfp = EmulatedSfp(sonic, emu)
    chassis = MagicMock()
    chassis.get_cpo.return_value = None
    chassis.get_sfp.return_value = sfp
    sonic.common.init_globals(chassis, None)
    table = sonic.Table("STATE_DB", "TRANSCEIVER_STATUS_SW")
    pm = sonic.peh.PortMapping()
    pm.handle_port_change_event(sonic.peh.PortChangeEvent("Ethernet0", 1, 0, sonic.peh.PortChangeEvent.PORT_ADD))
    task = sonic.cmt.CmisManagerTask([""], pm, {1: sfp}, MagicMock())
    helper = MagicMock()
    helper.get_status_sw_tbl.return_value = table
    helper.get_gearbox_line_lanes_dict.return_value = {}
    task.xcvr_table_helper = helper
    task.get_host_tx_status = lambda lport: "true"
    task.get_port_admin_status = lambda lport: "up"
    task.post_port_active_apsel_to_db = lambda *a, **k: None
    task.is_decommission_required = lambda api, lport: False
    task.on_port_update_event(sonic.peh.PortChangeEvent("PortConfigDone", -1, 0, sonic.peh.PortChangeEvent.PORT_SET))
    # the port as the module's first application defines it (host lane count, interface speed)
    app1 = sfp.get_xcvr_api().get_application_advertisement()[1]
    port_lanes = int(app1["host_lane_count"])
    speed = sonic.common.get_interface_speed(app1["host_electrical_interface_id"])
    if si_codes:
        sonic.si.g_optics_si_dict = optics_si_settings(speed // 1000 // port_lanes, si_codes, lanes)
    task.on_port_update_event(sonic.peh.PortChangeEvent(
        "Ethernet0", 1, 0, sonic.peh.PortChangeEvent.PORT_SET,
        {"speed": str(speed), "lanes": ",".join(str(i) for i in range(1, port_lanes + 1))}))
    state = sonic.common.get_cmis_state_from_state_db("Ethernet0", table)
    history: list[str] = [state]
    for _ in range(max_rounds):
        task.task_stopping_event.is_set = MagicMock(side_effect=[False, False, True])
        task.task_worker()
        state = sonic.common.get_cmis_state_from_state_db("Ethernet0", table)
        if not history or history[-1] != state:
            history.append(state)
        if state in ("READY", "FAILED"):
            break
        emu.clock.sleep(step_s)
    api = sfp.get_xcvr_api()
    dp = api.get_datapath_state()
    cs = api.get_config_datapath_hostlane_status()
    active = {"tx_eq": [], "rx_pre": [], "rx_post": [], "rx_amp": []}
    from eqtune.emulate.datapath import EQ_REGS

    for ln in range(1, lanes + 1):
        for knob, (_, act) in EQ_REGS.items():
            active[knob].append(emu._get_lane(act, ln))
    return SonicRun(image, state, history, list(logger.lines), emu.peek(0x10, 130)[0],
                    [dp[f"DP{ln}State"] for ln in range(1, lanes + 1)],
                    [cs[f"ConfigStatusLane{ln}"] for ln in range(1, lanes + 1)],
                    {k: dict(enumerate(v, 1)) for k, v in active.items()})


def emulated(image: str, **kw: Any) -> Any:
    from eqtune.emulate.module import EmulatedModule, VirtualClock

    return EmulatedModule(settle_s=0.05, clock=VirtualClock(), image=image, seed=1, noise=False, **kw)


GOOD = {"tx_eq": 3, "rx_pre": 2, "rx_post": 4, "rx_amp": 1}
#: rx_amp 5: not an amplitude code the module supports (page 01h byte 153 bits 7-4 advertise 0-3);
#: xcvrd's own range check (CmisApi.stage_output_amp_target_rx: <= the raw RxOutputLevelSupport
#: field) lets it through, so the module is the one to reject it
BAD = {**GOOD, "rx_amp": 5}


def check_image(image: str) -> dict[str, Any]:
    """One image: xcvrd with good SI codes, then with :data:`BAD` (JSON-safe summary)."""
    good = run_xcvrd(emulated(image), image, GOOD)
    bad = run_xcvrd(emulated(image), image, BAD)
    return {"image": image, "state": good.state, "history": good.history, "tx_disabled": good.tx_disabled,
            "dp_states": good.dp_states, "config_status": good.config_status, "active_si": good.active_si,
            "errors": good.errors(), "bad_state": bad.state, "bad_config_status": bad.config_status,
            "bad_log": [m for _, m in bad.log if "ConfigRejected" in m or "FAILED" in m]}


def main(argv: list[str]) -> int:
    import json

    reason = missing_reason()
    if reason:
        print(json.dumps({"skipped": reason}) if "--json" in argv else f"skipped: {reason}")
        return 0
    from eqtune.emulate.cmis_table import dump_names, image_names

    results = [check_image(image) for image in image_names() + dump_names()]
    if "--json" in argv:
        print(json.dumps({"root": str(sonic_root()), "good": GOOD, "bad": BAD, "results": results}))
        return 0
    print(f"SONiC xcvrd CmisManagerTask from {sonic_root()} ; optics SI {GOOD}, bad {BAD}")
    for r in results:
        active = all(set(r["active_si"][k].values()) == {v} for k, v in GOOD.items())
        print(f"{r['image']:16} {r['state']:7} {' -> '.join(r['history'])}")
        print(f"{'':16} Tx disable 0x{r['tx_disabled']:02x}  DP {sorted(set(r['dp_states']))}  "
              f"staged SI active {'yes' if active else r['active_si']}")
        print(f"{'':16} bad code: {r['bad_state']}, ConfigStatus {sorted(set(r['bad_config_status']))}; "
              f"xcvrd: {r['bad_log'][0] if r['bad_log'] else '-'}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    raise SystemExit(main(sys.argv[1:]))
