"""The study backends by name (``eqtune study --backend``): the computation of one combination and its
detail view (eye and bathtub of the robust codes)."""

from __future__ import annotations

from eqtune.study.compute import engine_detail, simulate
from eqtune.study.synthetic import synthetic, synthetic_detail

BACKENDS = {"sim": simulate, "synthetic": synthetic}
DETAILS = {"sim": engine_detail, "synthetic": synthetic_detail}
