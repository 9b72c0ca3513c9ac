"""224G (106.25 GBd) channel files for the 802.3dj COM comparison, written by eqtune's own models.

    python benchmarks/dj_channels.py OUT_DIR

Public 802.3dj channel sets are not available offline, so both COM tools (eqtune and PyChOpMarg) read
the same generated 4-port Touchstone files (50 ohm, RI, port order 1-2/3-4, 0-120 GHz in 50 MHz steps):

* ``host-{4,8,12}in.s4p``: host PCB thru, SerDes ball -> breakout via -> Tachyon 100G stripline
  (5/7 mil, 92 ohm, Huray roughness; ``eqtune.channel.trace``) -> connector pad;
* ``c2m-224g-6in.s4p``: the library channel ``channels/c2m-224g-6in.toml`` exported as it loads;
* ``<name>-fext{1,2}.s4p``, ``<name>-next1.s4p``: crosstalk of each thru, weak-coupling forms of
  C. R. Paul, "Analysis of Multiconductor Transmission Lines", 2nd ed., 2008, sec. 10.2 (as
  ``eqtune.channel.generate``): FEXT X_f = j w tau_f H_thru, tau_f = k_f x length; NEXT
  X_n = K_b (1 - H_thru^2), K_b the backward coupling coefficient.

The files are generated into a directory the caller owns (a temp dir in tests); nothing is committed.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

FREQS_HZ = np.arange(0, 2401) * 50e6
HOST_LENGTHS_IN = (4.0, 8.0, 12.0)
#: FEXT coefficients k_f (ps per inch) of the two FEXT aggressors, NEXT backward coefficient K_b
K_F_PS_PER_IN = (0.006, 0.004)
K_B = 0.004


@dataclass(frozen=True)
class DjChannelSet:
    """One thru file and its aggressor files."""

    name: str
    thru: Path
    fext: tuple[Path, ...]
    next: tuple[Path, ...]
    length_in: float

    def as_pychopmarg(self) -> dict[str, list[Path]]:
        """The ``channels`` argument of ``pychopmarg.com.COM``."""
        return {"THRU": [self.thru], "FEXT": list(self.fext), "NEXT": list(self.next)}


def host_thru_sdd(freqs_hz: np.ndarray, length_in: float) -> np.ndarray:
    """(n, 2, 2) differential S-matrix of a host PCB thru of ``length_in`` inches."""
    from eqtune.channel import elements
    from eqtune.channel.trace import INCH, TraceSpec, trace_sparams

    spec = TraceSpec(length_m=length_in * INCH, material="tachyon100g", zdiff_ohm=92.0)
    return elements.cascade_all([
        elements.short_line(freqs_hz, delay_s=20e-12, zdiff_ohm=90.0, loss_db=0.1, loss_f_hz=53.125e9),
        elements.shunt_c(freqs_hz, 0.08e-12),
        trace_sparams(freqs_hz, spec),
        elements.shunt_c(freqs_hz, 0.10e-12),
    ])


def library_thru_sdd(freqs_hz: np.ndarray, name: str = "c2m-224g-6in") -> np.ndarray:
    """The library channel ``name`` (no aggressors) on ``freqs_hz``, as an (n, 2, 2) S-matrix."""
    from eqtune.channel import elements
    from eqtune.channel.library import load_channel

    ch = load_channel(name, aggressors=False).resampled(freqs_hz)
    s11 = ch.sdd11 if ch.sdd11 is not None else np.zeros_like(ch.sdd21)
    s22 = ch.sdd22 if ch.sdd22 is not None else s11
    return elements.two_port(s11, ch.sdd21, s22)


def crosstalk_sdd(freqs_hz: np.ndarray, thru_s21: np.ndarray, kind: str, length_in: float,
                  k_f_ps_per_in: float = K_F_PS_PER_IN[0], k_b: float = K_B) -> np.ndarray:
    """Aggressor-to-victim differential 2-port (Paul sec. 10.2 weak coupling, module docstring)."""
    from eqtune.channel import elements

    w = 2 * np.pi * freqs_hz
    x = (1j * w * (k_f_ps_per_in * length_in * 1e-12) * thru_s21 if kind == "FEXT"
         else k_b * (1.0 - thru_s21**2))
    return elements.two_port(np.zeros_like(x), x)


def _write(out_dir: Path, name: str, sdd: np.ndarray) -> Path:
    from eqtune.channel.generate import to_network

    net = to_network(FREQS_HZ, sdd, name)
    path = out_dir / f"{name}.s4p"
    net.write_touchstone(str(path.with_suffix("")), form="ri", skrf_comment=False)
    return path


def write_dj_channel_sets(out_dir: Path) -> list[DjChannelSet]:
    """Write the three host channels and the library channel, each with 2 FEXT and 1 NEXT file."""
    out_dir.mkdir(parents=True, exist_ok=True)
    thrus = [(f"host-{int(n)}in", host_thru_sdd(FREQS_HZ, n), n) for n in HOST_LENGTHS_IN]
    thrus.append(("c2m-224g-6in", library_thru_sdd(FREQS_HZ), 6.0))
    sets = []
    for name, sdd, length in thrus:
        thru = _write(out_dir, name, sdd)
        fext = tuple(_write(out_dir, f"{name}-fext{k + 1}",
                            crosstalk_sdd(FREQS_HZ, sdd[:, 1, 0], "FEXT", length, k_f_ps_per_in=kf))
                     for k, kf in enumerate(K_F_PS_PER_IN))
        nxt = (_write(out_dir, f"{name}-next1", crosstalk_sdd(FREQS_HZ, sdd[:, 1, 0], "NEXT", length)),)
        sets.append(DjChannelSet(name, thru, fext, nxt, length))
    return sets


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__.splitlines()[2].strip())
        raise SystemExit(2)
    for s in write_dj_channel_sets(Path(sys.argv[1])):
        print(s.name, s.thru, *s.fext, *s.next)
