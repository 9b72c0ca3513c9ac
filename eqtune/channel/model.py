"""The ``Channel`` type: a differential (mixed-mode) 2-port on a uniform frequency grid.

Conventions
-----------
* Frequencies in Hz, uniform grid starting at 0 Hz (DC is extrapolated when the source has no DC point).
* ``sdd21`` is the differential through response from the transmitter die/pin (port 1) to the
  receiver (port 2), linear complex, 50 ohm single-ended / 100 ohm differential reference.
* Aggressors are differential transfer functions from the aggressor's transmitter to this channel's
  receiver on the same grid (FEXT: far-end, driven by a transmitter at the victim's TX end;
  NEXT: near-end, driven by a transmitter at the victim's RX end).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Literal, TypeGuard

import numpy as np

from eqtune.channel.grid import check_uniform_grid, resample

Modulation = Literal["NRZ", "PAM4", "PAM6"]
MODULATION_NAMES: tuple[Modulation, ...] = ("NRZ", "PAM4", "PAM6")


def is_modulation(name: object) -> TypeGuard[Modulation]:
    """True when ``name`` is one of ``MODULATION_NAMES`` (narrows a ``str`` read from a file)."""
    return name in MODULATION_NAMES


@dataclass(frozen=True)
class Aggressor:
    """One crosstalk aggressor: its transfer function into the victim receiver."""

    name: str
    kind: Literal["FEXT", "NEXT"]
    sdd21: np.ndarray  # complex, same grid as the victim's ``freqs_hz``
    amplitude_v: float | None = None  # aggressor TX swing (peak, V); None = the profile's value


@dataclass(frozen=True)
class Channel:
    """A differential channel ready for the eye engine."""

    name: str
    freqs_hz: np.ndarray  # uniform, freqs_hz[0] == 0
    sdd21: np.ndarray  # complex transfer function (linear)
    baud_gbd: float = 53.125
    modulation: Modulation = "PAM4"
    serdes_profile: str = "host-lr-112g"
    sdd11: np.ndarray | None = None
    sdd22: np.ndarray | None = None
    aggressors: tuple[Aggressor, ...] = ()
    source: str = ""  # file path or "parametric" / library name
    port_order: str | None = None  # "1-2/3-4" or "1-3/2-4" for 4-port Touchstone sources
    temperature_c: float | None = None  # for parametric segments: the temperature evaluated
    meta: dict[str, object] = field(default_factory=dict)

    @property
    def df_hz(self) -> float:
        return float(self.freqs_hz[1] - self.freqs_hz[0])

    @property
    def nyquist_hz(self) -> float:
        """Nyquist frequency of the symbol rate (Hz)."""
        return self.baud_gbd * 1e9 / 2.0

    def resampled(self, freqs_hz: np.ndarray) -> Channel:
        """This channel on another uniform grid from 0 Hz (``freqs_hz``).

        Polar (magnitude / unwrapped phase) interpolation inside the current band; above it a smooth
        raised-cosine roll-off to 0 (see ``eqtune.channel.grid``). Aggressors are resampled too.
        """
        f = np.asarray(freqs_hz, dtype=float)
        check_uniform_grid(f)

        def rs(x: np.ndarray) -> np.ndarray:
            return resample(self.freqs_hz, x, f)

        def rs_opt(x: np.ndarray | None) -> np.ndarray | None:
            return None if x is None else rs(x)

        aggs = tuple(replace(a, sdd21=rs(a.sdd21)) for a in self.aggressors)
        return replace(self, freqs_hz=f, sdd21=rs(self.sdd21), sdd11=rs_opt(self.sdd11), sdd22=rs_opt(self.sdd22),
                       aggressors=aggs)

    def insertion_loss_db(self, f_hz: float) -> float:
        """Insertion loss -20 log10 |SDD21| at ``f_hz`` (dB, positive number for a lossy channel)."""
        mag = np.interp(f_hz, self.freqs_hz, np.abs(self.sdd21))
        return float(-20.0 * np.log10(max(mag, 1e-30)))
