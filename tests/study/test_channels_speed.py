"""Parametric study channels: built in memory (no temporary TOML), equal to the file route."""

from __future__ import annotations

import os
import tempfile
import tomllib

import numpy as np
import pytest

from eqtune.channel import load_channel
from eqtune.channel.library import resolve
from eqtune.study.channels import dumps_definition, parametric_channel, variant_definition


def _via_file(base: str, params: dict, **kw):
    """The former route: write the variant as TOML and load it."""
    path = resolve(base)
    doc = tomllib.loads(path.read_text(encoding="utf-8"))
    text = dumps_definition(variant_definition(doc, params, base_dir=path.parent, where=str(path)), str(path))
    fd, tmp = tempfile.mkstemp(suffix=".toml")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    try:
        return load_channel(tmp, **kw)
    finally:
        os.unlink(tmp)


@pytest.mark.parametrize(("params", "kw"), [({"length_in": 3.3, "material": "fr4"}, {"aggressors": True}),
                                            ({"length_mm": 300.0}, {"aggressors": False, "temperature_c": 85.0})])
def test_parametric_channel_equals_the_toml_route(params, kw):
    a = _via_file("c2m-10in-xtalk", params, **kw)
    b = parametric_channel("c2m-10in-xtalk", params, **kw)
    assert np.array_equal(a.sdd21, b.sdd21) and np.array_equal(a.freqs_hz, b.freqs_hz)
    assert len(a.aggressors) == len(b.aggressors)
    assert all(np.array_equal(x.sdd21, y.sdd21) for x, y in zip(a.aggressors, b.aggressors))
    assert a.name == b.name and a.meta == b.meta and a.temperature_c == b.temperature_c
    assert "c2m-10in-xtalk.toml" in b.source


def test_parametric_channel_writes_no_temporary_file(monkeypatch):
    def no_temp(*a, **k):
        raise AssertionError("parametric_channel must not write a temporary file")

    monkeypatch.setattr(tempfile, "mkstemp", no_temp)
    assert parametric_channel("c2m-10in", {"length_in": 5}).sdd21.size > 0


def test_process_workers_run_numpy_single_threaded():
    from eqtune.study.executors import blas_threads, open_executor

    with open_executor(2) as (ex, info):
        assert info.kind == "processes"
        assert [f.result() for f in [ex.submit(blas_threads) for _ in range(2)]] == [1, 1]
