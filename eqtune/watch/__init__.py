"""``eqtune watch``: fleet link-health watch.

* :mod:`eqtune.watch.observe`: per-lane observables from ``CmisModule.vdm(lanes)`` and the module
  temperature, tolerant of modules that advertise only some of them ("not advertised", never 0).
* :mod:`eqtune.watch.store`: the SQLite time series (one file in the sessions folder, WAL, one
  committed transaction per interval: a SIGKILL loses at most the interval in progress).
* :mod:`eqtune.watch.detect`: trend and temperature-correlation detector with its evidence and the
  suggested action.
* :mod:`eqtune.watch.poller`: the polling loop over many modules.
* :mod:`eqtune.watch.prom`: the Prometheus exporter (prometheus_client, imported only when asked).
* :mod:`eqtune.watch.targets`: resources from a fleet CSV or a ``profile push --json`` report.
* :mod:`eqtune.watch.fleet`: a fleet of emulated modules with thermal profiles behind net: bridges
  (tests, benchmarks, demos).
"""
