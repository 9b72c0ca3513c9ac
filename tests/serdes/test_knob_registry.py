"""The knob and metric vocabulary lives in one module (eqtune/serdes/knobs.py); nothing re-types it.

The source scans tokenize every package file: a knob name in a docstring, comment or f-string is
prose and allowed; a standalone string literal ``"rx_pre"`` (a dict key, a tuple of names, a
comparison) is a second copy of the vocabulary and fails the test: import the constant instead
(``from eqtune.serdes.knobs import RX_PRE``, or a tuple such as ``MODULE_KNOBS``).
"""

from __future__ import annotations

import ast
import io
import subprocess
import sys
import tokenize
from pathlib import Path

import pytest

from eqtune.serdes import knobs as K

PKG = Path(K.__file__).resolve().parents[1]
REGISTRY = Path(K.__file__).resolve()

# Labels a module must take from METRIC_DEFS; bare units ("mV", "dB", "UI") are ordinary words and
# allowed. The variants are the spellings that had drifted apart before the registry.
_VARIANTS = {"Q dB", "-log10 BER", "Q(dB)", "eye height mV"}


def _metric_texts() -> set[str]:
    out = set(_VARIANTS)
    for m in K.METRIC_DEFS.values():
        out |= {m.label, m.suffix}
    return {t for t in out if t not in {m.unit for m in K.METRIC_DEFS.values()} or " " in t or "(" in t}


def string_literals(source: str) -> list[tuple[int, str]]:
    """(line, value) of every plain (non-f, non-bytes) string literal token in ``source``."""
    out = []
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type != tokenize.STRING:
            continue
        prefix = tok.string[: len(tok.string) - len(tok.string.lstrip("rRuUbBfF"))].lower()
        if "f" in prefix or "b" in prefix:
            continue
        try:
            value = ast.literal_eval(tok.string)
        except (ValueError, SyntaxError):
            continue
        out.append((tok.start[0], value))
    return out


def retyped(source: str, vocabulary: set[str]) -> list[tuple[int, str]]:
    return [(ln, v) for ln, v in string_literals(source) if v in vocabulary]


def _package_hits(vocabulary: set[str]) -> list[str]:
    hits = []
    for path in sorted(PKG.rglob("*.py")):
        if path.resolve() == REGISTRY:
            continue
        for ln, v in retyped(path.read_text(encoding="utf-8"), vocabulary):
            hits.append(f"{path.relative_to(PKG.parent)}:{ln}: {v!r}")
    return hits


def test_scanner_flags_literals_and_spares_prose():
    src = ('"""Module doc naming rx_pre and tx_eq."""\n'
           'KNOBS = ("rx_pre", \'rx_post\')  # a re-typed copy of rx_amp\n'
           'x = f"{a}rx_pre"\n'
           'y = point["ctle_gdc2"]\n'
           'z = "rx_pre_max"\n')
    assert retyped(src, set(K.KNOB_NAMES)) == [(2, "rx_pre"), (2, "rx_post"), (4, "ctle_gdc2")]


def test_knob_names_are_typed_only_in_the_registry():
    hits = _package_hits(set(K.KNOB_NAMES))
    assert not hits, ("knob names re-typed outside eqtune/serdes/knobs.py (import the constant):\n"
                      + "\n".join(hits))


def test_metric_labels_are_typed_only_in_the_registry():
    texts = _metric_texts()
    assert {"Q (dB)", "dB Q", "-log10(BER)", "eye height (mV)", "Q dB"} <= texts
    hits = _package_hits(texts)
    assert not hits, ("metric labels re-typed outside eqtune/serdes/knobs.py (use metric_label / "
                      "metric_suffix):\n" + "\n".join(hits))


def test_metric_labels_agree_everywhere():
    from eqtune.session.report import _unit
    from eqtune.tui.format import fmt_margin, margin_unit
    from eqtune.tune.simulation import OBJECTIVES

    assert [K.metric_label(k) for k in ("ber", "q_db", "eye_height", "com")] == [
        "-log10(BER)", "Q (dB)", "eye height (mV)", "COM (dB)"]
    assert [margin_unit(k) for k in K.LIVE_METRICS] == ["-log10(BER)", "dB Q", "mV"]
    assert fmt_margin(7.25, "q_db") == "7.25 (dB Q)"
    for k in K.LIVE_METRICS:
        assert _unit(k) == K.METRIC_DEFS[k].label
    # a simulation objective's unit is the registry's, and the EyeResult field exists
    from eqtune.eye.result import EyeResult

    fields = set(EyeResult.__dataclass_fields__) | {n for n in dir(EyeResult) if not n.startswith("_")}
    from eqtune.eye import fec

    for k, (attr, unit) in OBJECTIVES.items():
        # fec is computed from the eye by eqtune.eye.fec, not read off EyeResult
        assert unit == K.METRIC_DEFS[k].unit and (attr in fields or callable(getattr(fec, attr))), k
    assert set(OBJECTIVES) == set(K.SIM_OBJECTIVES) == {"eye_height", "com", "eye_width", "fec"}
    # unknown metrics pass through unchanged (a journal from a newer eqtune)
    assert K.metric_label("snr") == K.metric_suffix("snr") == "snr"


def test_registry_matches_its_users():
    from eqtune.drivers.cmis_map import EQ_FIELDS
    from eqtune.emulate.link import DIRECTION_KNOBS
    from eqtune.eye.engine import KNOB_DIRECTION, KNOWN_KNOBS
    from eqtune.serdes.profile import load_profile
    from eqtune.study.spec import DIRECTION_KNOBS as STUDY_DIRECTION_KNOBS

    assert tuple(EQ_FIELDS) == K.MODULE_KNOBS == ("rx_pre", "rx_post", "rx_amp", "tx_eq")
    assert DIRECTION_KNOBS == {"module_rx": ("tx_eq",), "host_rx": ("rx_pre", "rx_post", "rx_amp")}
    assert KNOWN_KNOBS == K.KNOB_NAMES and len(set(K.KNOB_NAMES)) == 14
    assert KNOB_DIRECTION["ctle_gdc"] == "host_rx" and KNOB_DIRECTION["tx_c1"] == "module_rx"
    assert set(STUDY_DIRECTION_KNOBS["serdes"]) == set(K.TX_FFE_KNOBS + K.CTLE_KNOBS)
    assert K.TX_TAP_OFFSETS == {"tx_cm3": -3, "tx_cm2": -2, "tx_cm1": -1, "tx_c1": 1, "tx_c2": 2}
    # every knob a SerDes profile defines is registered, with the registry's unit
    prof = load_profile("ieee-3ck-c2c")
    for name, knob in prof.knobs().items():
        assert name in K.KNOB_DEFS and knob.unit == K.KNOB_DEFS[name].unit, name
    # the --knobs aliases expand to registered knobs of one group each
    for alias, names in K.KNOB_ALIASES.items():
        assert names and all(n in K.KNOB_DEFS for n in names), alias


def test_cli_options_come_from_the_registry():
    from click.testing import CliRunner

    from eqtune.cli import main

    out = CliRunner().invoke(main, ["module", "set", "--help"]).output
    for name in K.MODULE_KNOBS:
        assert K.KNOB_DEFS[name].cli_option in out
    res = CliRunner().invoke(main, ["module", "set", "emu:c2m-10in", "--lane", "1"])
    assert res.exit_code == 2
    assert "--rx-pre, --rx-post, --rx-amp, --tx-eq, --tx-adaptive" in res.output


def test_registry_import_is_light():
    code = "import sys, eqtune.serdes.knobs; print(sorted(m for m in ('numpy', 'scipy', 'click') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize("name", K.KNOB_NAMES)
def test_every_knob_has_a_direction_group_and_option(name):
    d = K.KNOB_DEFS[name]
    # the host receiver's Rx FFE overrides act only on a host TX -> host receiver (serdes) link
    assert d.direction == (K.SERDES if d.group == K.GROUP_RX_FFE else d.direction)
    assert d.direction in ((K.SERDES,) if d.group == K.GROUP_RX_FFE else (K.HOST_RX, K.MODULE_RX))
    assert name in K.knobs_in_group(d.group)
    assert d.cli_option == "--" + name.replace("_", "-")
    assert (d.tap is not None) == (d.group == K.GROUP_TX_FFE)
    assert (d.rx_tap is not None) == (d.group == K.GROUP_RX_FFE)


def test_literal_types_list_exactly_the_registry_spellings():
    """The ``Literal`` aliases the type checker sees hold the same spellings as the registry,
    which are the ones journals, profiles and JSON output carry: a knob, direction, group, unit or metric
    added to one and not the other fails here."""
    from typing import get_args

    assert get_args(K.KnobName) == K.KNOB_NAMES
    assert set(get_args(K.Direction)) == set(K.DIRECTIONS) == {d.direction for d in K.KNOB_DEFS.values()} | {K.SERDES}
    assert set(get_args(K.KnobGroup)) == {d.group for d in K.KNOB_DEFS.values()}
    assert set(get_args(K.KnobUnit)) == {d.unit for d in K.KNOB_DEFS.values()}
    assert get_args(K.MetricKey) == tuple(K.METRIC_DEFS)
    assert K.is_direction("module_rx") and not K.is_direction("module-rx") and not K.is_direction(None)
    assert K.is_knob_name("ctle_gdc2") and not K.is_knob_name("ctle_gdc3")
    # the constants are the plain on-disk strings (Final str, no enum wrapper): JSON round-trips unchanged
    import json

    assert json.loads(json.dumps({K.RX_PRE: 1, "d": K.HOST_RX})) == {"rx_pre": 1, "d": "host_rx"}
    assert type(K.RX_PRE) is str and type(K.DIRECTIONS[0]) is str
