"""Batch studies: channels x SerDes profiles x corners, serially, on local processes or on dask.

Public API::

    from eqtune.study import load_spec, run_study
    spec = load_spec("channels/studies/example.toml")     # or a fleet CSV
    result = run_study(spec, "out/", workers=2)           # scheduler="tcp://host:8786" for dask
    result.rows, result.summary, result.report, result.profiles

``run_study(..., compute=fn)`` takes any picklable ``fn(Combination) -> dict`` (default: the eye-engine
simulation ``eqtune.study.compute.simulate``). Results are stored in ``out/results.sqlite``
(``eqtune.study.store.ResultStore``: ``rows()``, ``worst(20, corner="85C")``, ``export_csv()``);
``docs/studies.md`` describes workers, content-addressed channels and faults.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from eqtune.study.runner import StudyError, StudyResult, load_rows, run_study, summarize
    from eqtune.study.spec import Combination, Corner, StudySpec, load_spec, parse_spec

__all__ = ["Combination", "Corner", "StudyError", "StudyResult", "StudySpec", "load_rows", "load_spec", "parse_spec",
           "run_study", "summarize"]

# Imported on first use (PEP 562): ``eqtune study query`` needs only eqtune.study.store, and
# importing the runner (specs, content, executors) first cost it ~0.3 s of a ~1 s answer under load.
_HOME = {"StudyError": "runner", "StudyResult": "runner", "load_rows": "runner", "run_study": "runner",
         "summarize": "runner", "Combination": "spec", "Corner": "spec", "StudySpec": "spec",
         "load_spec": "spec", "parse_spec": "spec"}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'eqtune.study' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"eqtune.study.{home}"), name)
    globals()[name] = value
    return value
