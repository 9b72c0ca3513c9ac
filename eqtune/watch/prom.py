"""Prometheus exporter of a watch (prometheus_client; imported only with ``--prometheus``).

Names follow the Prometheus naming guide (https://prometheus.io/docs/practices/naming/): one unit
per metric, base units as suffixes (``_ratio``, ``_celsius``), ``_total`` for counters, statistics
as a label rather than in the name. Every lane metric carries the labels an operator joins on:
``resource`` and ``lane``, plus ``host`` and ``interface`` (fleet CSV ``server``/``host`` and
``port``/``interface`` columns, empty when not given) and ``serial`` (page 00h vendor SN).

* ``eqtune_module_info{resource, host, interface, serial, vendor, part_number, revision, firmware} 1``;
* ``eqtune_lane_prefec_ber_ratio{..., stat="current|min|max|avg", side="host|media"}``;
* ``eqtune_lane_esnr_decibels`` / ``eqtune_lane_ltp_decibels`` (no base unit exists for a logarithmic
  ratio; a linear one would make the alert thresholds unreadable: the one deliberate deviation);
* ``eqtune_lane_errored_frames_ratio``; ``eqtune_lane_fec_symbol_errors_total`` /
  ``eqtune_lane_fec_codeword_errors_total`` as counters (the module's own accumulating counts);
* ``eqtune_module_temperature_celsius``, ``eqtune_module_up``;
* detector state: ``eqtune_lane_flag{kind}`` (1 while the finding holds), the levels the detector
  uses (``eqtune_lane_prefec_ber_warning_ratio`` / ``_alarm_ratio``,
  ``eqtune_lane_esnr_warning_decibels``), its slopes (``eqtune_lane_esnr_trend_decibels_per_second``,
  ``eqtune_lane_prefec_ber_trend_decades_per_second``, ``eqtune_lane_esnr_tempco_decibels_per_celsius``)
  and ``eqtune_module_hot_celsius`` (TempHighWarning or --hot-c);
* ``eqtune_watch_interval``: the last committed interval.

A lane whose module does not advertise an observable has no sample (absent, never 0); a module that
failed its poll loses its lane samples until it answers. The exporter serves a snapshot taken after
each committed interval, so a scrape sees one interval, never half of one.
"""

from __future__ import annotations

import threading
from typing import Any

from eqtune.errors import InputError
from eqtune.watch.observe import ModuleSample

#: observable -> (metric name, type, extra labels)
_OBS: dict[str, tuple[str, str, dict[str, str]]] = {
    "prefec_ber": ("eqtune_lane_prefec_ber_ratio", "gauge", {"stat": "current"}),
    "prefec_ber_min": ("eqtune_lane_prefec_ber_ratio", "gauge", {"stat": "min"}),
    "prefec_ber_max": ("eqtune_lane_prefec_ber_ratio", "gauge", {"stat": "max"}),
    "prefec_ber_avg": ("eqtune_lane_prefec_ber_ratio", "gauge", {"stat": "avg"}),
    "esnr_db": ("eqtune_lane_esnr_decibels", "gauge", {}),
    "ltp_db": ("eqtune_lane_ltp_decibels", "gauge", {}),
    "errored_frames": ("eqtune_lane_errored_frames_ratio", "gauge", {}),
    "fec_symbol_errors": ("eqtune_lane_fec_symbol_errors", "counter", {}),
    "fec_codeword_errors": ("eqtune_lane_fec_codeword_errors", "counter", {}),
}
_HELP = {
    "eqtune_lane_prefec_ber_ratio": "VDM pre-FEC bit error ratio",
    "eqtune_lane_esnr_decibels": "VDM effective SNR (dB)",
    "eqtune_lane_ltp_decibels": "VDM PAM4 level transition parameter (dB)",
    "eqtune_lane_errored_frames_ratio": "VDM errored (uncorrectable) FEC frame ratio",
    "eqtune_lane_fec_symbol_errors": "FEC corrected symbol errors counted by the module",
    "eqtune_lane_fec_codeword_errors": "FEC uncorrectable codewords counted by the module",
}
LANE_LABELS = ("resource", "lane", "host", "interface", "serial")


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
    """``PrometheusExporter("127.0.0.1", 0).start()``; ``update(interval, samples, active_flags,
    detector_rows=..., identity=..., labels=...)``; ``port`` is the bound port; ``stop()``."""

    def __init__(self, host: str, port: int) -> None:
        try:
            from prometheus_client import CollectorRegistry
        except ImportError:
            raise InputError("--prometheus needs the prometheus_client package: pip install prometheus_client") from None
        self.host, self.port = host, port
        self.registry = CollectorRegistry()
        self._lock = threading.Lock()
        self._snapshot: list[Any] = []
        self._server: Any = None
        self._values: dict[tuple[str, int, str], float] = {}
        self.registry.register(self)

    # prometheus_client custom collector protocol
    def describe(self) -> list[Any]:
        return []

    def collect(self) -> list[Any]:
        with self._lock:
            return list(self._snapshot)

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

    def update(self, interval: int, samples: list[ModuleSample], active_flags: set[tuple[str, int, str]],
               *, detector_rows: list[tuple[str, int, str, float]] | None = None,
               module_rows: list[tuple[str, str, float]] | None = None,
               identity: dict[str, dict[str, str]] | None = None,
               labels: dict[str, dict[str, str]] | None = None) -> None:
        """Build the snapshot of one committed interval. ``detector_rows``: (resource, lane, metric, value);
        ``module_rows``: (resource, metric, value); ``identity``: resource -> page 00h strings;
        ``labels``: resource -> fleet CSV labels."""
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        identity, labels = identity or {}, labels or {}

        def base(res: str) -> tuple[str, str, str]:
            lab = labels.get(res, {})
            return (lab.get("server") or lab.get("host") or "", lab.get("port") or lab.get("interface") or "",
                    identity.get(res, {}).get("sn", ""))

        fams: dict[str, Any] = {}

        def fam(name: str, kind: str, extra: tuple[str, ...] = ()) -> Any:
            if name not in fams:
                cls = CounterMetricFamily if kind == "counter" else GaugeMetricFamily
                fams[name] = cls(name, _HELP.get(name, name.replace("_", " ")), labels=[*LANE_LABELS, *extra])
            return fams[name]

        info = GaugeMetricFamily("eqtune_module_info", "module identity (page 00h)",
                                 labels=["resource", "host", "interface", "serial", "vendor", "part_number", "revision",
                                         "firmware"])
        temp = GaugeMetricFamily("eqtune_module_temperature_celsius", "module temperature", labels=["resource", "host",
                                                                                                       "interface", "serial"])
        up = GaugeMetricFamily("eqtune_module_up", "1 when the module answered the last poll",
                               labels=["resource", "host", "interface", "serial"])
        for s in samples:
            h, i, sn = base(s.resource)
            up.add_metric([s.resource, h, i, sn], 1.0 if s.ok else 0.0)
            ident = identity.get(s.resource)
            if ident:
                info.add_metric([s.resource, h, i, sn, ident.get("vendor", ""), ident.get("pn", ""), ident.get("rev", ""),
                                 ident.get("firmware", "")], 1.0)
            if not s.ok:
                continue
            if s.temperature_c is not None:
                temp.add_metric([s.resource, h, i, sn], s.temperature_c)
            for lane, vals in s.lanes.items():
                for obs, v in vals.items():
                    if v is None:
                        continue
                    media = obs.endswith("_media")
                    name, kind, extra = _OBS[obs[:-6] if media else obs]
                    keys = (*extra.keys(), "side")
                    f = fam(name, kind, keys)
                    f.add_metric([s.resource, str(lane), h, i, sn, *extra.values(), "media" if media else "host"], v)
        flag = GaugeMetricFamily("eqtune_lane_flag", "1 while the detector holds the finding",
                                 labels=[*LANE_LABELS, "kind"])
        seen_flags = {(r, ln, k) for r, ln, k in active_flags}
        for r, ln, k in sorted(seen_flags):
            h, i, sn = base(r)
            flag.add_metric([r, str(ln), h, i, sn, k], 1.0)
        for r, ln, name, v in detector_rows or ():
            h, i, sn = base(r)
            fam(name, "gauge").add_metric([r, str(ln), h, i, sn], v)
        mods: dict[str, Any] = {}
        for r, name, v in module_rows or ():
            h, i, sn = base(r)
            if name not in mods:
                mods[name] = GaugeMetricFamily(name, name.replace("_", " "), labels=["resource", "host", "interface", "serial"])
            mods[name].add_metric([r, h, i, sn], v)
        iv = GaugeMetricFamily("eqtune_watch_interval", "last committed interval")
        iv.add_metric([], float(interval))
        snap = [info, temp, up, flag, *fams.values(), *mods.values(), iv]
        with self._lock:
            self._snapshot = snap

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
