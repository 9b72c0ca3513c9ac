"""Fleet drift: which modules, per lane, no longer hold a profile's or a NOS file's codes.

The expected codes come from an eqtune profile, or from a NOS file as the NOS would apply it to each
module (its identity read from page 00h, its physical port given): SONiC's optics_si_settings.json
(:func:`eqtune.session.nos_sonic.import_optics_si`) or FBOSS's overrides. The module's Active Control
Set (page 11h) is read, nothing is written.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from eqtune.errors import EqtuneError
from eqtune.session.nos_common import NoEntryError

if TYPE_CHECKING:
    from eqtune.drivers.protocols import CmisModule

HOLDS = "holds"
DRIFTED = "drifted"
WRONG_MODULE = "wrong-module"
NO_ENTRY = "no-entry"  # the NOS file applies nothing to this module on its port: it runs its defaults
UNREADABLE = "unreadable"


@dataclass
class DriftRow:
    """One module: ``state``, and per drifted lane what differs ("rx_pre 3, expected 2")."""

    resource: str
    port: int | None
    state: str
    lanes: dict[int, list[str]] = field(default_factory=dict)
    message: str = ""

    def line(self) -> str:
        from eqtune.textsafe import printable

        where = self.resource + (f" (port {self.port})" if self.port is not None else "")
        if self.state == HOLDS:
            return printable(f"{where}: holds the codes")
        if self.state == DRIFTED:
            body = "; ".join(f"lane {ln}: {', '.join(d)}" for ln, d in sorted(self.lanes.items()))
            return printable(f"{where}: DRIFTED on lane(s) {','.join(map(str, sorted(self.lanes)))}: {body}")
        return printable(f"{where}: {self.state.upper()}: {self.message}")

    def to_dict(self) -> dict[str, Any]:
        return {"resource": self.resource, "port": self.port, "state": self.state,
                "lanes": {str(k): v for k, v in sorted(self.lanes.items())}, "message": self.message}


def compare(expected: dict[int, dict[str, int]], module: CmisModule) -> dict[int, list[str]]:
    """Per lane, the knobs whose active code differs from ``expected`` (read only)."""
    out: dict[int, list[str]] = {}
    for lane, codes in sorted(expected.items()):
        active = module.active_eq(lane)
        diffs = [f"{k} {active.get(k, '?')}, expected {v}" for k, v in sorted(codes.items()) if active.get(k) != v]
        if diffs:
            out[lane] = diffs
    return out


def _expected(source: str, fmt: str | None, module: CmisModule, resource: str, port: int | None,
              lane_speed_g: int | None, app_code: str | None, profile: Any) -> dict[int, dict[str, int]]:
    from eqtune.session.nos_common import NosFormatError, facts_from_module, read_nos_json

    if profile is not None:
        mism = profile.identity_mismatches(module.identity())
        if mism:
            raise _Wrong("; ".join(mism))
        return profile.codes()
    facts = facts_from_module(module, resource)
    doc = read_nos_json(source, what=f"{fmt} file")
    if fmt == "fboss":
        from eqtune.session.nos_fboss import application_code, import_fboss

        return import_fboss(doc, facts, app_code=application_code(app_code))
    from eqtune.session.nos_sonic import import_optics_si

    if port is None or lane_speed_g is None:
        raise NosFormatError(f"{resource}: give --port (or a fleet CSV port column) and --lane-speed to read "
                             "what SONiC applies to it")
    return import_optics_si(doc, facts, port=port, lane_speed_g=lane_speed_g)[0]


class _Wrong(Exception):
    pass


def drift_report(source: str, targets: Sequence[tuple[str, int | None]], *, fmt: str | None = None,
                 lane_speed_g: int | None = None, app_code: str | None = None,
                 opener: Callable[[str], CmisModule] | None = None) -> list[DriftRow]:
    """One :class:`DriftRow` per (resource, physical port); a module that cannot be read or
    compared is a row with its reason, never an exception."""
    profile = None
    if fmt is None:
        from eqtune.session.profile import Profile

        profile = Profile.load(source)  # refused before any module is opened
    if opener is None:
        from eqtune.drivers.cmis import open_module

        opener = open_module
    rows = []
    for resource, port in targets:
        try:
            mod = opener(resource)
        except EqtuneError as exc:
            rows.append(DriftRow(resource, port, UNREADABLE, message=f"cannot open: {exc}"))
            continue
        try:
            exp = _expected(source, fmt, mod, resource, port, lane_speed_g, app_code, profile)
            lanes = compare(exp, mod)
            rows.append(DriftRow(resource, port, DRIFTED if lanes else HOLDS, lanes))
        except _Wrong as exc:
            rows.append(DriftRow(resource, port, WRONG_MODULE, message=str(exc)))
        except NoEntryError as exc:
            rows.append(DriftRow(resource, port, NO_ENTRY, message=str(exc)))
        except EqtuneError as exc:
            rows.append(DriftRow(resource, port, UNREADABLE, message=str(exc)))
        finally:
            try:
                mod.close()
            except Exception:  # noqa: BLE001 - closing must not hide the row
                pass
    return rows
