"""Eye margin: equalized pulse response -> statistical eye at a target BER.

Public API::

    EyeEngine(channel, profile=None, *, direction="host_rx", ber=1e-6, samples_per_ui=32)
        .knob_space(names=None, fixed=None) -> KnobSpace
        .default_point() -> EqPoint
        .evaluate(point) -> EyeResult
        .evaluate_batch(points) -> BatchResult
        .pulse_response(point) -> PulseResponse(t_s, pulse_v, cursor_index, samples_per_ui)
        .noise_sigma_v(point) -> NoiseBudget
    evaluate_link(channel, point, ber=1e-6) -> LinkResult
"""

from __future__ import annotations

from eqtune.eye.engine import DIRECTIONS, KNOB_DIRECTION, EyeEngine, NoiseBudget, PulseResponse, check_ber
from eqtune.eye.link import evaluate_link
from eqtune.eye.result import BatchResult, EyeResult, LinkResult

__all__ = ["DIRECTIONS", "KNOB_DIRECTION", "BatchResult", "EyeEngine", "EyeResult", "LinkResult", "NoiseBudget",
           "PulseResponse", "check_ber", "evaluate_link"]
