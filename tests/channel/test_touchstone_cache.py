"""The per-process Touchstone cache (``load_sdd``) and channels built from a definition dict."""

from __future__ import annotations

import os
import tomllib
import warnings

import numpy as np
import pytest
import skrf

from eqtune.channel import channel_from_definition, load_channel
from eqtune.channel import touchstone as ts
from eqtune.resources import channels_dir

F = np.arange(1, 201) * 200e6


def _write_4port(path, gain: float, skew_ps: float = 0.0) -> None:
    s = np.zeros((F.size, 4, 4), dtype=complex)
    s[:, 1, 0] = s[:, 0, 1] = gain * np.exp(-2j * np.pi * F * 300e-12)
    s[:, 3, 2] = s[:, 2, 3] = gain * np.exp(-2j * np.pi * F * (300e-12 + skew_ps * 1e-12))
    for i in range(4):
        s[:, i, i] = 0.02
    net = skrf.Network(frequency=skrf.Frequency.from_f(F, unit="Hz"), s=s, z0=50.0)
    net.write_touchstone(str(path.with_suffix("")), skrf_comment=False, form="ri")


def _same(a: ts.DiffSParams, b: ts.DiffSParams) -> None:
    assert np.array_equal(a.freqs_hz, b.freqs_hz) and np.array_equal(a.s, b.s)
    assert (a.port_order, a.port_order_detected, a.nports, a.max_singular_value, a.source) == \
        (b.port_order, b.port_order_detected, b.nports, b.max_singular_value, b.source)


def test_cached_load_equals_uncached_and_is_parsed_once(tmp_path):
    ts.clear_cache()
    p = tmp_path / "conn.s4p"
    _write_4port(p, 0.9)
    first = ts.load_sdd(p)
    assert ts.cache_info()["misses"] == 1
    again = ts.load_sdd(p)
    assert again is first and ts.cache_info()["hits"] == 1
    _same(first, ts.load_sdd(p, cache=False))
    # options are part of the key: another port order is another entry, equal to its uncached load
    _same(ts.load_sdd(p, port_order="1-3/2-4"), ts.load_sdd(p, port_order="1-3/2-4", cache=False))
    assert ts.cache_info()["misses"] == 2
    # the cached arrays cannot be changed by a caller (they are shared)
    with pytest.raises(ValueError):
        first.s[0, 0, 0] = 1.0


def test_cache_notices_a_changed_file(tmp_path):
    ts.clear_cache()
    p = tmp_path / "conn.s4p"
    _write_4port(p, 0.9)
    old = ts.load_sdd(p)
    st = p.stat()
    _write_4port(p, 0.5, skew_ps=2.0)  # new contents ...
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))  # ... even within one mtime tick
    new = ts.load_sdd(p)
    assert new is not old and not np.allclose(new.s, old.s)
    _same(new, ts.load_sdd(p, cache=False))
    # a rewrite with the same size and mtime but a new inode (write + rename) is noticed too
    q = tmp_path / "tmp.s4p"
    _write_4port(q, 0.7)
    os.utime(q, ns=(p.stat().st_atime_ns, p.stat().st_mtime_ns))
    os.replace(q, p)
    _same(ts.load_sdd(p), ts.load_sdd(p, cache=False))


def test_cache_hit_repeats_the_passivity_warning(tmp_path):
    ts.clear_cache()
    p = tmp_path / "active.s4p"
    _write_4port(p, 1.05)
    with pytest.warns(UserWarning, match="not passive"):
        ts.load_sdd(p)
    with pytest.warns(UserWarning, match="not passive"):
        ts.load_sdd(p)
    assert ts.cache_info()["hits"] == 1


def test_a_bad_file_is_not_cached(tmp_path):
    from eqtune.errors import TouchstoneError

    ts.clear_cache()
    p = tmp_path / "bad.s4p"
    p.write_text("# Hz S RI R 50\n1 2 3\n")
    for _ in range(2):
        with pytest.raises(TouchstoneError):
            ts.load_sdd(p)
    assert ts.cache_info()["size"] == 0


def _channels_equal(a, b) -> None:
    assert np.array_equal(a.freqs_hz, b.freqs_hz) and np.array_equal(a.sdd21, b.sdd21)
    assert np.array_equal(a.sdd11, b.sdd11) and np.array_equal(a.sdd22, b.sdd22)
    assert [(x.name, x.kind, x.amplitude_v) for x in a.aggressors] == [(x.name, x.kind, x.amplitude_v)
                                                                      for x in b.aggressors]
    assert all(np.array_equal(x.sdd21, y.sdd21) for x, y in zip(a.aggressors, b.aggressors))
    assert (a.name, a.baud_gbd, a.modulation, a.serdes_profile, a.port_order, a.temperature_c, a.meta) == \
        (b.name, b.baud_gbd, b.modulation, b.serdes_profile, b.port_order, b.temperature_c, b.meta)


@pytest.mark.parametrize("kw", [{}, {"aggressors": False, "temperature_c": 85.0}])
def test_channel_from_definition_equals_load_channel(kw):
    path = channels_dir() / "c2m-10in-xtalk.toml"
    doc = tomllib.loads(path.read_text(encoding="utf-8"))
    a = load_channel(path, **kw)
    b = channel_from_definition(doc, base_dir=path.parent, **kw)
    _channels_equal(a, b)
    assert a.source == str(path) and b.source == "definition"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        c = load_channel(path, **kw)  # the second load comes from the Touchstone cache
    _channels_equal(a, c)


def test_channel_from_definition_names_and_errors(tmp_path):
    from eqtune.errors import ConfigError

    doc = {"segments": [{"type": "line", "delay_ps": 10}]}
    assert channel_from_definition(doc, name="mine").name == "mine"
    with pytest.raises(ConfigError, match="variant-x.*segments\\[0\\].file"):
        channel_from_definition({"segments": [{"type": "touchstone", "file": "nope.s4p"}]}, base_dir=tmp_path,
                                source="variant-x")
    with pytest.raises(ConfigError, match="colour: unknown key; allowed keys: name, "):
        channel_from_definition({"colour": 1, "segments": doc["segments"]})
