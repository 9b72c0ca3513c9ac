"""An emulated switch host's FEC counters for the ports of emulated modules, published as SONiC does
in COUNTERS_DB (field names: eqtune/watch/hostfec.py, from sonic-swss orchagent/port_flr.lua and
sonic-utilities utilities_common/portstat.py).

The host decodes RS(544,514) on what it receives from the module (the link's ``host_rx`` direction).
Per call, the codewords received since the last call (the port's bit rate over the link clock's
elapsed time, 5440 bits each) are split over "0..15 wrong RS symbols" and "uncorrectable" by a
multinomial draw from the burst model's distribution (``eqtune.eye.fec.codeword_error_distribution``)
at PAM4 SER = 2 x the mean host-receive BER of the port's lanes and the host DFE's first tap
``dfe_tap`` (0: independent errors). ``ber_scale`` multiplies that BER (a planted host-side fault).
The counters are cumulative, as SAI's are; ``clear()`` zeroes them (``sonic-clear fec counters``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from eqtune.emulate.link import EmulatedLink

BITS_PER_CODEWORD = 5440


class EmulatedHostFec:
    """FEC counters of ports; ``ports`` maps a SONiC interface name (``Ethernet0``) to its module's link."""

    def __init__(self, ports: dict[str, EmulatedLink], clock: Callable[[], float], *, dfe_tap: float = 0.0,
                 seed: int = 0, lanes: Sequence[int] | None = None) -> None:
        self.ports = dict(ports)
        self.clock = clock
        self.dfe_tap = float(dfe_tap)
        self.lanes = lanes
        self.ber_scale: dict[str, float] = {}
        self._rng = np.random.default_rng(seed)
        self._lock = threading.Lock()
        self._t: dict[str, float] = {}
        self._counts: dict[str, np.ndarray] = {name: np.zeros(17, dtype=np.int64) for name in self.ports}
        self._oid = {name: f"oid:0x1000000000{i + 1:03x}" for i, name in enumerate(self.ports)}

    def port_ber(self, name: str) -> float:
        link = self.ports[name]
        lanes = self.lanes or range(1, link.lanes + 1)
        ber = float(np.mean([link.ber(lane, "host_rx") for lane in lanes]))
        return min(0.37, ber * self.ber_scale.get(name, 1.0))

    def distribution(self, name: str) -> np.ndarray:
        """P(0..15 wrong RS symbols), P(> 15) of a codeword on port ``name`` now."""
        from eqtune.eye.fec import codeword_error_distribution, error_chain, sigma_for_ser

        ser = 2.0 * self.port_ber(name)
        if ser <= 0:
            d = np.zeros(17)
            d[0] = 1.0
            return d
        d = codeword_error_distribution(error_chain([self.dfe_tap] if self.dfe_tap else [], sigma_for_ser(ser)))
        d = np.maximum(np.asarray(d, dtype=float), 0.0)
        return d / d.sum()

    def advance(self) -> None:
        """Count the codewords received on every port since the last call."""
        now = float(self.clock())
        with self._lock:
            for name, link in self.ports.items():
                t0 = self._t.setdefault(name, now)
                n = int(link.bit_rate_bps * len(self.lanes or range(link.lanes)) * max(0.0, now - t0) / BITS_PER_CODEWORD)
                self._t[name] = now
                if n > 0:
                    self._counts[name] += self._rng.multinomial(n, self.distribution(name))

    def clear(self) -> None:
        with self._lock:
            for c in self._counts.values():
                c[:] = 0

    def counters_db(self) -> dict[str, Any]:
        """The COUNTERS_DB tables (as ``sonic-db-dump -n COUNTERS_DB -y`` gives them): the port name
        map and, per port, the SAI FEC counters with the S0..S15 histogram."""
        self.advance()
        doc: dict[str, Any] = {"COUNTERS_PORT_NAME_MAP": {"type": "hash", "value": dict(self._oid)}}
        with self._lock:
            for name, c in self._counts.items():
                value = {f"SAI_PORT_STAT_IF_IN_FEC_CODEWORD_ERRORS_S{i}": str(int(c[i])) for i in range(16)}
                value["SAI_PORT_STAT_IF_IN_FEC_CORRECTABLE_FRAMES"] = str(int(c[1:16].sum()))
                value["SAI_PORT_STAT_IF_IN_FEC_NOT_CORRECTABLE_FRAMES"] = str(int(c[16]))
                value["SAI_PORT_STAT_IF_IN_FEC_SYMBOL_ERRORS"] = str(int((c[:16] * np.arange(16)).sum()))
                doc[f"COUNTERS:{self._oid[name]}"] = {"type": "hash", "value": value}
        return doc
