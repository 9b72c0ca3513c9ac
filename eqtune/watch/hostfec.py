"""The host's FEC counters of a port, as SONiC publishes them in COUNTERS_DB, and the frame loss they say.

Field names (SAI port statistics in ``COUNTERS:<port oid>``, the port's oid in
``COUNTERS_PORT_NAME_MAP``; derived figures in ``RATES:<port oid>``):

* ``SAI_PORT_STAT_IF_IN_FEC_CORRECTABLE_FRAMES``, ``SAI_PORT_STAT_IF_IN_FEC_NOT_CORRECTABLE_FRAMES``,
  ``SAI_PORT_STAT_IF_IN_FEC_SYMBOL_ERRORS`` (sonic-net/sonic-utilities 648be3b
  utilities_common/portstat.py ``counter_bucket_dict`` 42-44, the ``show interfaces counters
  fec-stats`` columns FEC_CORR / FEC_UNCORR / FEC_SYMBOL_ERR; RATES ``FEC_PRE_BER`` / ``FEC_POST_BER``);
* ``SAI_PORT_STAT_IF_IN_FEC_CODEWORD_ERRORS_S0`` .. ``_S15``: codewords with exactly i wrong RS
  symbols (the histogram), and RATES ``FEC_FLR`` (observed: uncorrectable over all codewords of the
  interval), ``FEC_FLR_PREDICTED`` and ``FEC_FLR_R_SQUARED`` (a log-linear fit of the S1..S15 bins
  extrapolated to 16..20 symbols) (sonic-net/sonic-swss f06e7d0 orchagent/port_flr.lua:
  ``fec_cwerr_keys``, ``compute_observed_flr``, ``compute_predicted_flr``, ``HSET ... 'FEC_FLR'``).

A snapshot is a JSON document of those tables, ``{"KEY": {field: value}}`` or the typed form of
``sonic-db-dump`` (``{"KEY": {"type": "hash", "value": {...}}}``), e.g.
``sonic-db-dump -n COUNTERS_DB -k 'COUNTERS*' -y > counters.json`` on the switch, refreshed by the
operator's own job; the watch reads it at each poll (fleet CSV columns ``fec_source`` and
``interface``). Counts are cumulative: the watch uses the difference between two polls, and a counter
that went down (a clear, a reboot) starts a new baseline.

Observed frame loss here is the codeword error ratio of the interval, k uncorrectable of n codewords,
with the exact (Garwood) Poisson interval; SONiC's own ``FEC_FLR`` multiplies it by the interleaving
factor, and is shown beside it when the host publishes it. The prediction from the histogram is
:func:`eqtune.watch.frameloss.predict_from_histogram` (the DFE burst model, fitted).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eqtune.errors import InputError

UNCORRECTABLE = "SAI_PORT_STAT_IF_IN_FEC_NOT_CORRECTABLE_FRAMES"
CORRECTABLE = "SAI_PORT_STAT_IF_IN_FEC_CORRECTABLE_FRAMES"
SYMBOL_ERRORS = "SAI_PORT_STAT_IF_IN_FEC_SYMBOL_ERRORS"
BIN = "SAI_PORT_STAT_IF_IN_FEC_CODEWORD_ERRORS_S{}"
BINS = 16  # S0..S15: codewords with 0..15 wrong symbols (all corrected by RS(544,514))
RATE_FIELDS = ("FEC_FLR", "FEC_FLR_PREDICTED", "FEC_FLR_R_SQUARED", "FEC_PRE_BER", "FEC_POST_BER")
_HINT = "give a COUNTERS_DB JSON dump (sonic-db-dump -n COUNTERS_DB -y) and the port's SONiC name"


@dataclass
class FecSnapshot:
    """Cumulative counters of one port: ``uncorrectable``, ``correctable`` (codewords with 1..15
    wrong symbols), ``bins`` S0..S15 (None when the host has no histogram), ``rates`` (RATES fields)."""

    uncorrectable: int
    correctable: int | None = None
    bins: list[int] | None = None
    symbol_errors: int | None = None
    rates: dict[str, float] = field(default_factory=dict)

    @property
    def codewords(self) -> int | None:
        """All codewords received: the histogram's sum plus the uncorrectable ones, else corrected +
        uncorrectable + S0 (sonic-swss port_flr.lua compute_observed_flr)."""
        if self.bins is not None:
            return sum(self.bins) + self.uncorrectable
        return None


@dataclass
class FecInterval:
    """What happened between two snapshots: ``codewords``, ``uncorrectable``, ``bins`` (deltas)."""

    codewords: int
    uncorrectable: int
    bins: list[int] | None
    rates: dict[str, float]


def _table(doc: dict[str, Any], key: str) -> dict[str, Any] | None:
    t = doc.get(key)
    if isinstance(t, dict) and t.get("type") == "hash" and isinstance(t.get("value"), dict):
        t = t["value"]
    return t if isinstance(t, dict) else None


def _int(table: dict[str, Any], name: str, where: str) -> int | None:
    v = table.get(name)
    if v is None or v == "N/A":
        return None
    try:
        n = int(float(v))
    except (TypeError, ValueError, OverflowError):
        raise InputError(f"{where}: {name} = {str(v)[:40]!r} is not a count; {_HINT}") from None
    if n < 0:
        raise InputError(f"{where}: {name} = {n} is negative; {_HINT}")
    return n


def parse_counters_db(doc: Any, interface: str, where: str) -> FecSnapshot | None:
    """The FEC counters of ``interface`` in a COUNTERS_DB document; None when the host has none for it
    (not advertised: the port has no FEC statistics). Malformed documents raise one InputError."""
    if not isinstance(doc, dict):
        raise InputError(f"{where}: not a JSON object of COUNTERS_DB tables; {_HINT}")
    names = _table(doc, "COUNTERS_PORT_NAME_MAP")
    if names is None:
        raise InputError(f"{where}: no COUNTERS_PORT_NAME_MAP table; {_HINT}")
    oid = names.get(interface)
    if not isinstance(oid, str):
        raise InputError(f"{where}: no port {interface!r} in COUNTERS_PORT_NAME_MAP (have e.g. "
                         f"{', '.join(list(names)[:3])}); give the SONiC interface name in the fleet CSV")
    ctr = _table(doc, f"COUNTERS:{oid}")
    if ctr is None:
        return None
    unc = _int(ctr, UNCORRECTABLE, where)
    if unc is None:
        return None
    bins = [_int(ctr, BIN.format(i), where) for i in range(BINS)]
    rates_t = _table(doc, f"RATES:{oid}") or {}
    rates: dict[str, float] = {}
    for name in RATE_FIELDS:
        try:
            v = float(rates_t[name])
        except (KeyError, TypeError, ValueError):
            continue
        if math.isfinite(v):
            rates[name] = v
    return FecSnapshot(unc, _int(ctr, CORRECTABLE, where),
                       None if any(b is None for b in bins) else [int(b) for b in bins if b is not None],
                       _int(ctr, SYMBOL_ERRORS, where), rates)


def read_counters_db(path: str | Path, interface: str) -> FecSnapshot | None:
    """:func:`parse_counters_db` of a JSON file (bounded reader: one-line errors)."""
    from eqtune.readers import loads_json

    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"FEC counters {p}: {exc.strerror or exc}; {_HINT}") from None
    return parse_counters_db(loads_json(text, f"FEC counters {p}", error=InputError), interface,
                             f"FEC counters {p}")


def interval(prev: FecSnapshot | None, cur: FecSnapshot) -> FecInterval | None:
    """The counts between two snapshots; None for the first, or when a counter went down (cleared)."""
    if prev is None:
        return None
    d_unc = cur.uncorrectable - prev.uncorrectable
    bins = None
    if cur.bins is not None and prev.bins is not None:
        bins = [a - b for a, b in zip(cur.bins, prev.bins, strict=True)]
    if d_unc < 0 or (bins is not None and min(bins) < 0):
        return None
    if bins is not None:
        n = sum(bins) + d_unc
    elif cur.correctable is not None and prev.correctable is not None:
        return None  # without S0 the codewords received are not known
    else:
        return None
    return FecInterval(n, d_unc, bins, dict(cur.rates))


def poisson_interval(k: int, n: float, level: float = 0.95) -> tuple[float, float]:
    """Exact (Garwood 1936) interval of a rate from k events in n trials: chi2 quantiles
    chi2(a/2; 2k)/2n .. chi2(1 - a/2; 2k + 2)/2n (Garwood, Biometrika 28, 1936)."""
    from scipy.stats import chi2

    a = 1.0 - level
    lo = 0.0 if k == 0 else float(chi2.ppf(a / 2.0, 2 * k)) / (2.0 * n)
    hi = float(chi2.ppf(1.0 - a / 2.0, 2 * k + 2)) / (2.0 * n)
    return lo, hi
