"""Channel-model views of a live session: what the library channel and the eye engine say about the
lanes being measured (the model eye in the report and the TUI, the model optimum as a warm start).

A live session names the library channel its link corresponds to (``LiveConfig.channel``). Module
Rx-output knobs (rx_pre, rx_post, rx_amp) act in the module -> host direction (``host_rx``), the Tx
input EQ (tx_eq) in the host -> module direction (``module_rx``). The host SerDes TX FFE is invisible
from the module; the model assumes the typical preset that opens the module input best
(:func:`eqtune.eye.host_tx.pick_host_tx`), as the host vendor's bring-up tuning would.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from eqtune.serdes.knobs import HOST_RX, MODULE_RX, TX_EQ, module_knobs_in_direction

MODULE_RX_KNOBS = module_knobs_in_direction(MODULE_RX)
HOST_RX_KNOBS = module_knobs_in_direction(HOST_RX)


def direction_engine(channel: str, direction: str, *, ber: float = 1e-6) -> tuple[Any, dict[str, float]]:
    """(eye engine of ``channel`` in ``direction``, the host-side point the module cannot see)."""
    from eqtune.channel import load_channel
    from eqtune.eye import EyeEngine

    eng = EyeEngine(load_channel(channel), direction=direction, ber=ber)
    host: dict[str, float] = {}
    if direction == "module_rx":
        from eqtune.eye.host_tx import pick_host_tx

        host = pick_host_tx(eng, range(int(eng.knob_space([TX_EQ]).knobs[0].values[-1]) + 1))
    return eng, host


def model_eye_setup(channel: str | None, knobs: Iterable[str] | None) -> tuple[Any, dict[str, float], tuple[str, ...], str] | None:
    """(engine, host point, the module knobs that enter it, direction) for a session's tuned ``knobs``:
    module_rx when only tx_eq was tuned, else host_rx; None without a channel."""
    if not channel:
        return None
    knobs = set(knobs or HOST_RX_KNOBS)
    direction = "module_rx" if knobs <= set(MODULE_RX_KNOBS) else "host_rx"
    use = MODULE_RX_KNOBS if direction == "module_rx" else HOST_RX_KNOBS
    eng, host = direction_engine(channel, direction)
    return eng, host, use, direction


def model_point(setup: tuple[Any, dict[str, float], tuple[str, ...], str], codes: Mapping[str, Any], *,
                tx_adaptive: bool = False) -> dict[str, float]:
    """The engine point of a lane's module codes (see :func:`model_eye_setup`). ``tx_adaptive``: the
    module's Tx input adaptive EQ runs, so its fixed tx_eq code is dormant; the model takes the code
    that opens the eye most (what an adaptive equalizer converges to)."""
    eng, host, use, _ = setup
    pt = {**host, **{k: float(v) for k, v in codes.items() if k in use}}
    if tx_adaptive and TX_EQ in use:
        values = eng.knob_space([TX_EQ]).knobs[0].values
        pt[TX_EQ] = float(max(values, key=lambda t: eng.evaluate({**pt, TX_EQ: float(t)}).eye_height_min_mv))
    return pt


def model_optimum(channel: str, knobs: Iterable[str], *, ber: float = 1e-6,
                  allowed: Mapping[str, Iterable[int]] | None = None) -> dict[str, int]:
    """The module codes of ``knobs`` with the largest model eye height (exhaustive over the codes, each
    direction on its own: rx_* in host_rx, tx_eq in module_rx). ``allowed``: the codes the module
    advertises per knob (default: the SerDes profile's). Knobs of neither direction are left out."""
    out: dict[str, int] = {}
    knobs = list(knobs)
    for direction, names in (("host_rx", HOST_RX_KNOBS), ("module_rx", MODULE_RX_KNOBS)):
        mine = [k for k in knobs if k in names]
        if not mine:
            continue
        eng, host = direction_engine(channel, direction, ber=ber)
        space = eng.knob_space(mine)
        levels = []
        for k in space.knobs:
            vals = [int(round(v)) for v in k.values]
            if allowed and k.name in allowed:
                vals = [v for v in vals if v in {int(a) for a in allowed[k.name]}] or vals
            levels.append(vals)
        combos = list(itertools.product(*levels))
        pts = [{**host, **{n: float(c) for n, c in zip(mine, combo)}} for combo in combos]
        eh = np.asarray(eng.evaluate_batch(pts).eye_height_min_mv, dtype=float)
        best = combos[int(np.nanargmax(eh))]
        out.update({n: int(c) for n, c in zip(mine, best)})
    return out


def model_eye_lines(view: Any, *, width: int = 56, height: int = 9,
                    lane: int | None = None) -> list[str]:
    """The model eye of a session's ``lane`` (default: its first lane) as text: a caption line, then
    :func:`text_eye` rows, for
    the codes the lane holds after the decision (else the recommendation, else the original codes; Tx
    input adaptive EQ back on is modelled as its best code). [] when the session names no channel or the
    model closes the eye there: the picture is an illustration and never fails its caller."""
    try:
        from eqtune.eye.plot import engine_text_eye

        lanes = view.lane_results()
        setup = model_eye_setup(view.config.channel, (view.plan() or {}).get("knobs"))
        if setup is None or not lanes:
            return []
        ln = lane if lane in lanes else sorted(lanes)[0]
        r = lanes[ln]
        codes = r.final or r.recommended or r.original
        eng, _, use, direction = setup
        adaptive = bool(r.tx_adaptive) and r.final is not None and TX_EQ in use
        pt = model_point(setup, codes, tx_adaptive=adaptive)
        res = eng.evaluate(pt)
        if res.eye_height_min_mv <= 0:
            return []
        caption = (f"model eye, lane {ln} ({' '.join(f'{k}={int(pt[k])}' for k in use if k in pt)}"
                   f"{' adaptive' if adaptive else ''}, {direction}, {view.config.channel}): "
                   f"EH {res.eye_height_min_mv:.1f} mV at BER {res.ber_target:g}")
        return [caption] + engine_text_eye(eng, res, width=width, height=height)
    except Exception:
        return []
