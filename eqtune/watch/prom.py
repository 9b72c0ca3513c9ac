"""Prometheus exporter of a watch (prometheus_client; imported only with ``--prometheus``).

Metrics (the same values the SQLite store gets for each interval):

* ``eqtune_lane_<observable>{resource, lane}`` gauges, e.g. ``eqtune_lane_prefec_ber``,
  ``eqtune_lane_esnr_db``; a lane whose module does not advertise an observable has no sample
  (absent, never 0), and a lane whose module failed to answer loses its samples until it answers;
* ``eqtune_module_temperature_celsius{resource}``;
* ``eqtune_lane_flag{resource, lane, kind}`` 1 while the detector holds that finding, else 0;
* ``eqtune_watch_interval`` the last committed interval number, ``eqtune_module_up{resource}``.
"""

from __future__ import annotations

from typing import Any

from eqtune.errors import InputError
from eqtune.watch.observe import ALL_OBSERVABLES, ModuleSample


def parse_hostport(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    try:
        if not sep or not host:
            raise ValueError
        p = int(port)
        if not 0 <= p <= 65535:
            raise ValueError
    except ValueError:
        raise InputError(f"--prometheus {text!r}: give HOST:PORT, e.g. 127.0.0.1:9464 (port 0 = any free port)") from None
    return host.strip("[]"), p


class PrometheusExporter:
    """``PrometheusExporter("127.0.0.1", 0).start()``; ``update(interval, samples, active_flags)``;
    ``port`` is the bound port; ``stop()``."""

    def __init__(self, host: str, port: int) -> None:
        try:
            from prometheus_client import CollectorRegistry, Gauge
        except ImportError:
            raise InputError("--prometheus needs the prometheus_client package: pip install prometheus_client") from None
        self.host, self.port = host, port
        self.registry = CollectorRegistry()
        self.gauges = {o: Gauge(f"eqtune_lane_{o}", f"lane observable {o} (VDM)", ["resource", "lane"],
                                registry=self.registry) for o in ALL_OBSERVABLES}
        self.temp = Gauge("eqtune_module_temperature_celsius", "module temperature (C)", ["resource"],
                          registry=self.registry)
        self.up = Gauge("eqtune_module_up", "1 when the module answered the last poll", ["resource"],
                        registry=self.registry)
        self.flag = Gauge("eqtune_lane_flag", "1 while the detector holds the finding", ["resource", "lane", "kind"],
                          registry=self.registry)
        self.interval = Gauge("eqtune_watch_interval", "last committed interval", registry=self.registry)
        self._server: Any = None
        self._flags: set[tuple[str, int, str]] = set()
        self._lanes: dict[str, set[int]] = {}

    def start(self) -> PrometheusExporter:
        from prometheus_client import start_http_server

        try:
            out = start_http_server(self.port, addr=self.host, registry=self.registry)
        except OSError as exc:
            raise InputError(f"--prometheus {self.host}:{self.port}: {exc.strerror or exc}; choose a free port") from None
        if isinstance(out, tuple):  # prometheus_client >= 0.17 returns (server, thread)
            self._server = out[0]
            self.port = int(self._server.server_address[1])
        return self

    def update(self, interval: int, samples: list[ModuleSample], active_flags: set[tuple[str, int, str]]) -> None:
        for s in samples:
            self.up.labels(s.resource).set(1 if s.ok else 0)
            if not s.ok:  # no stale numbers for a module that stopped answering
                for lane in self._lanes.pop(s.resource, ()):
                    for g in self.gauges.values():
                        try:
                            g.remove(s.resource, str(lane))
                        except KeyError:
                            pass
                try:
                    self.temp.remove(s.resource)
                except KeyError:
                    pass
                continue
            self._lanes[s.resource] = set(s.lanes)
            if s.temperature_c is not None:
                self.temp.labels(s.resource).set(s.temperature_c)
            for lane, vals in s.lanes.items():
                for obs, v in vals.items():
                    g = self.gauges[obs]
                    if v is None:
                        try:
                            g.remove(s.resource, str(lane))
                        except KeyError:
                            pass
                    else:
                        g.labels(s.resource, str(lane)).set(v)
        for key in self._flags - active_flags:
            self.flag.labels(key[0], str(key[1]), key[2]).set(0)
        for key in active_flags:
            self.flag.labels(key[0], str(key[1]), key[2]).set(1)
        self._flags = set(active_flags)
        self.interval.set(interval)

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None


def parse_metrics(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Parse a /metrics scrape (text exposition format) with prometheus_client's own parser:
    {(name, sorted labels): value} (tests and tools)."""
    from prometheus_client.parser import text_string_to_metric_families

    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = float(s.value)
    return out
