"""What the CMIS driver's mixins (``cmis_prbs.PrbsMixin``, ``cmis_vdm.VdmMixin``) use of
:class:`eqtune.drivers.cmis.CmisDriver`, declared once for the type checker (empty at run time)."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from collections.abc import Callable

    from eqtune.drivers.cmis_policy import CmisTiming
    from eqtune.drivers.cmis_types import EqCapabilities
    from eqtune.drivers.transport import PagedRegisters, Transport

_T = TypeVar("_T")


class DriverParts:
    """Base of the driver's mixins: the attributes and methods ``CmisDriver`` provides them."""

    if TYPE_CHECKING:  # provided by eqtune.drivers.cmis.CmisDriver
        regs: PagedRegisters
        transport: Transport
        resource: str
        timing: CmisTiming
        _settle_until: float

        def capabilities(self, refresh: bool = False) -> EqCapabilities: ...

        def _check_lane(self, lane: int) -> None: ...

        def _poll(self, what: str, check: Callable[[], _T | None], timeout_s: float | None = None,
                  interval_s: float | None = None) -> _T: ...
