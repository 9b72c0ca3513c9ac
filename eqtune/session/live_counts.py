"""What a live session's measurements say about each lane, from the journal: the BER metrics' pooled
error counts per code (the incumbent's reference for the sequential dwell, a full dwell's bits), a
scope's reading noise pooled over repeated codes, and each lane's pick under both guards (the margins'
``guard_pick`` and the pooled counts' ``count_guard``, eqtune.tune.recommend)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from eqtune.serdes.knobs import BER_METRICS
from eqtune.session.live_connect import TunerConnect
from eqtune.session.view import _lane_map
from eqtune.tune.base import BaseOptimizer
from eqtune.tune.live import LiveReading, LiveSource
from eqtune.tune.optimizer import GPOptimizer
from eqtune.tune.recommend import count_guard, guard_pick, pooled_variance


class TunerCounts(TunerConnect):
    """Readings pooled from the journal: counts, scope noise and the guarded pick of each lane."""

    def _counted_metric(self) -> bool:
        return self.config.metric in BER_METRICS

    def _pooled_noise(self, current: Mapping[int, LiveReading] | None = None) -> dict[str, Any] | None:
        """A scope's reading noise from repeated codes over every measurement of the session so far
        (plus ``current``), same lane and codes: the pooled variance of ``ln(eye height)`` (a relative
        noise: a scope's reading jitters in proportion to what it measures), {"rel_var", "dof"}; open eyes
        only. None before any repeat, and for a BER metric (its noise comes from its own count)."""
        if self._counted_metric():
            return None
        obs = [((ln, _codes_key(r["codes"])), float(r["margin"]))
               for m in self.view.measurements() for ln, r in _lane_map(m["lanes"]).items()]
        obs += [((ln, _codes_key(r.codes)), float(r.margin)) for ln, r in (current or {}).items()]
        pv = pooled_variance([(k, math.log(y)) for k, y in obs if y > 0.0])
        return None if pv is None else {"rel_var": pv[0], "dof": pv[1]}

    def _journaled_noise(self, gi: int) -> dict[str, Any] | None:
        """The noise the group's last measure record journaled; for a group not started yet, the pool
        of what the session has measured (the earlier groups), as the live loop computes it."""
        ms = self.view.measurements(gi)
        if ms:
            n = ms[-1].get("noise")
            return dict(n) if isinstance(n, Mapping) else None
        return self._pooled_noise()

    def _references(self, gi: int, codes: Mapping[int, Mapping[str, int]],
                    incumbents: Mapping[int, Mapping[str, int] | None]) -> dict[int, tuple[int, int] | None]:
        """Per lane, the pooled (bits, errors) of its incumbent (the current recommendation, else the
        original codes) over the baseline and this group's measurements, from the journal; None where
        the lane measures its incumbent itself (a confirm or contender: the whole dwell)."""
        base = self.view.readings("baseline", gi)
        out: dict[int, tuple[int, int] | None] = {}
        for ln, c in codes.items():
            inc = dict(incumbents.get(ln) or self.originals.get(ln) or {})
            if not inc or _codes_key(inc) == _codes_key(c):
                out[ln] = None
                continue
            bits = errors = 0
            readings = [_lane_map(m["lanes"]).get(ln) for m in self.view.measurements(gi)] + [base.get(ln)]
            for r in readings:
                cnt = (r or {}).get("counts") or {}
                if r and cnt.get("bits") and _codes_key(r["codes"]) == _codes_key(inc):
                    bits += int(cnt["bits"])
                    errors += int(cnt.get("errors") or 0)
            out[ln] = (bits, errors) if bits > 0 else None
        return out

    def _lane_pick(self, gi: int, ln: int, opt: BaseOptimizer,
                   readings: Mapping[int, LiveReading] | None = None) -> dict[str, float] | None:
        """Lane ``ln``'s pick: the optimizer's recommendation under the margin guard (``_pick``) and, for a
        counted metric, the pooled-count guard (``eqtune.tune.recommend.count_guard``): never a code whose
        own error counts, summed over every dwell, are significantly worse than another measured code's."""
        p = _pick(opt)
        if p is None or not isinstance(opt, GPOptimizer) or not self._counted_metric():
            return p
        key = count_guard(self._code_counts(gi, ln, opt, readings or {}), opt.ispace.key_of(p))
        return opt.ispace.point(key)

    def _code_counts(self, gi: int, ln: int, opt: GPOptimizer,
                     readings: Mapping[int, LiveReading]) -> dict[tuple[int, ...], tuple[int, int]]:
        """Per measured code of lane ``ln`` (the optimizer's key): pooled (bits, errors) over this
        group's journaled measurements and ``readings`` (the one not journaled yet)."""
        src = self.sources[gi]
        rows = [_lane_map(m["lanes"]).get(ln) for m in self.view.measurements(gi)]
        rows.append(readings[ln].to_dict() if ln in readings else None)
        out: dict[tuple[int, ...], tuple[int, int]] = {}
        for r in rows:
            cnt = (r or {}).get("counts") or {}
            if not r or not cnt.get("bits"):
                continue
            key = opt.ispace.key_of(_point(src, r["codes"]))
            b, e = out.get(key, (0, 0))
            out[key] = (b + int(cnt["bits"]), e + int(cnt.get("errors") or 0))
        return out

    def _full_bits(self, gi: int, ln: int, readings: Mapping[int, LiveReading]) -> int:
        """Bits of one full dwell of lane ``ln``: the most any single measurement of the group counted."""
        rows = [_lane_map(m["lanes"]).get(ln) for m in self.view.measurements(gi)]
        rows.append(readings[ln].to_dict() if ln in readings else None)
        return max((int(((r or {}).get("counts") or {}).get("bits") or 0) for r in rows), default=0)


def _pick(opt: BaseOptimizer) -> dict[str, float] | None:
    """The optimizer's recommendation, never a code measured significantly worse than the best code
    measured so far (``eqtune.tune.recommend.guard_pick``)."""
    p = opt.recommend()
    if p is None or not isinstance(opt, GPOptimizer):
        return p
    key = guard_pick(opt, opt.ispace.key_of(p))
    return opt.ispace.point(key)



def _codes_key(codes: Mapping[str, Any]) -> tuple[tuple[str, int], ...]:
    return tuple(sorted((str(k), int(v)) for k, v in codes.items()))



def _point(src: LiveSource, codes: Mapping[str, Any]) -> dict[str, float]:
    p = dict(src.space.fixed)
    p.update({k: float(v) for k, v in codes.items() if k in src.knobs})
    return p
