"""Prometheus metrics: the node's breakers, provider status and quota reading, sends and runs by state.

spec/transactional.md §2 "Alerting cannot be mail": a node out of mail cannot mail anyone that it is, so
its state is exposed for a monitoring system to scrape (``GET /metrics``; alert rules in
``docs/operations.md``). Two kinds of metric:

- process counters in ``COUNTERS``: the dispatch passes and materialisation repair scans started and
  completed (owned and counted by ``outbound.workflows`` and ``ingress.workflows``, registered here), and
  ``SWEEPER_ROWS``, ``SWEEPER_PASSES``, declared and incremented by the sweeper (``outbound.sweeper_metrics``,
  so outbound never imports this module, which reads every domain). Every label of their closed vocabularies
  (``SweepVerdict``, ``SendMode``) is exposed from the start at 0, a count this process observed: a series
  that appeared only at its first increment would hide that increment from ``increase()``, and the
  documented alert on ``verdict="give_up"`` would miss the first notice given up. Only their ``_total``
  samples are exposed: prometheus_client's ``_created`` series (a process start time under the counter's
  help text) are dropped for this registry (``_without_created``; the library's own switch,
  ``disable_created_metrics()``, is process-wide);
- readings taken from the database at scrape time (``render``): nothing is cached, so a reading is never
  older than the scrape. A quota percent or quota reading with no reading today is absent, never 0 (no
  reassuring zeros); the configured transport's breaker is read even before its first answer (``open``,
  as ``GET /api/provider-status`` shows it). Each rate breaker's ``mailnode_breaker_armed`` is 0 or 1; an
  unarmed breaker (too few observations to be a rate, ``GET /api/breakers``' ``armed: false``) has no
  ``mailnode_breaker_observed``, ``mailnode_breaker_tripped`` or ``mailnode_breaker_percent`` sample at all,
  so a dashboard cannot read its "cannot trip" as a green 0 (``breaker_samples``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from sqlalchemy import func, select

from mailnode.governance import breakers, provider_io
from mailnode.governance.provider import (
    BreakerState,
    ProviderStatus,
    breaker_state,
    quota_percent,
    reading_today,
)
from mailnode.ingress import workflows as ingress_workflows
from mailnode.node import Node
from mailnode.outbound import workflows as outbound_workflows
from mailnode.outbound.sweeper_metrics import COUNTERS
from mailnode.schema.butler_runs import butler_runs
from mailnode.schema.directory import organisations
from mailnode.schema.outbound import send_manifests

for _pass_counter in (outbound_workflows.PASSES_STARTED, outbound_workflows.PASSES_COMPLETED,
                      ingress_workflows.SCANS_STARTED, ingress_workflows.SCANS_COMPLETED):
    COUNTERS.register(_pass_counter)


def breaker_samples(reading: breakers.Reading) -> dict[str, float]:
    """The ``mailnode_breaker_*`` samples of one reading, by metric name (pure).

    ``armed`` always (1.0 or 0.0); ``observed`` and ``tripped`` only while the breaker is armed, and
    ``percent`` only when the reading has one (never for ``volume``). An unarmed breaker cannot trip, and
    a 0 under ``tripped`` or ``observed`` would read as a healthy rate (no reassuring zeros).
    """
    out = {"armed": 1.0 if reading.armed else 0.0}
    if reading.armed:
        out["observed"] = float(reading.observed)
        out["tripped"] = 1.0 if reading.tripped else 0.0
        if reading.percent is not None:
            out["percent"] = float(reading.percent)
    return out


class NodeCollector(Collector):
    """Readings from one node's database, taken at each scrape."""

    def __init__(self, node: Node) -> None:
        self.node = node

    def collect(self) -> Iterator[Metric]:
        """Yield the provider, breaker, send and run gauges."""
        node = self.node
        now = node.clock.now()
        limits = provider_io.limits_of(node.settings)
        state = GaugeMetricFamily("mailnode_provider_breaker", "1 for the provider breaker's current state.",
                                  labels=["transport", "state"])
        used = GaugeMetricFamily("mailnode_provider_quota_used", "Emails used today per the provider's header.",
                                 labels=["transport"])
        percent = GaugeMetricFamily("mailnode_provider_quota_percent", "The day's reading as percent of the limit.",
                                    labels=["transport"])
        paused = GaugeMetricFamily("mailnode_provider_paused", "1 while a provider pause of this kind is in force.",
                                   labels=["transport", "kind"])
        until = GaugeMetricFamily("mailnode_provider_unavailable_until_seconds",
                                  "Unix time a provider pause ends.", labels=["transport"])
        armed = GaugeMetricFamily("mailnode_breaker_armed",
                                  "1 while a breaker has enough observations to trip; 0 while it cannot.",
                                  labels=["org_id", "breaker"])
        rates = GaugeMetricFamily("mailnode_breaker_observed", "An armed breaker's observed count (absent unarmed).",
                                  labels=["org_id", "breaker"])
        tripped = GaugeMetricFamily("mailnode_breaker_tripped", "1 while an armed breaker is tripped (absent unarmed).",
                                    labels=["org_id", "breaker"])
        rate_percent = GaugeMetricFamily("mailnode_breaker_percent", "An armed rate breaker's percent.",
                                         labels=["org_id", "breaker"])
        families = {"armed": armed, "observed": rates, "tripped": tripped, "percent": rate_percent}
        sends = GaugeMetricFamily("mailnode_sends", "Sends by state and mail class.", labels=["state", "mail_class"])
        runs = GaugeMetricFamily("mailnode_butler_runs", "Butler runs by state.", labels=["state"])
        signals = breakers.delivery_signals_of(node.settings.transport)
        with node.read() as conn:
            statuses = provider_io.read_all(conn)
            if node.settings.transport not in {st.transport for st in statuses}:
                statuses.append(ProviderStatus(transport=node.settings.transport))
            for status in statuses:
                t = status.transport
                current = breaker_state(status, now)
                for s in BreakerState:
                    state.add_metric([t, s.value], 1.0 if s is current else 0.0)
                reading = reading_today(status, now, limits)
                if reading.value is not None:
                    used.add_metric([t], float(reading.value))
                pct = quota_percent(status, now, limits)
                if pct is not None:
                    percent.add_metric([t], pct)
                if current is BreakerState.SHUT and status.pause_kind is not None:
                    paused.add_metric([t, status.pause_kind.value], 1.0)
                if status.unavailable_until is not None:
                    until.add_metric([t], status.unavailable_until.timestamp())
            for org in conn.execute(select(organisations.c.id)).all():
                reading_state = breakers.evaluate(conn, org_id=org.id, now=now, delivery_signals=signals)
                for r in reading_state.readings:
                    for key, value in breaker_samples(r).items():
                        families[key].add_metric([org.id, r.breaker.value], value)
            for row in conn.execute(select(send_manifests.c.state, send_manifests.c.mail_class, func.count())
                                    .group_by(send_manifests.c.state, send_manifests.c.mail_class)).all():
                sends.add_metric([row[0], row[1]], float(row[2]))
            for row in conn.execute(select(butler_runs.c.state, func.count()).group_by(butler_runs.c.state)).all():
                runs.add_metric([row[0]], float(row[1]))
        yield from (state, used, percent, paused, until, armed, rates, tripped, rate_percent, sends, runs)


def _without_created(families: Iterable[Metric]) -> Iterator[Metric]:
    """Each family with its ``_created`` samples removed (their ``_total`` samples are kept as they are)."""
    for family in families:
        copy = Metric(family.name, family.documentation, family.type, family.unit)
        copy.samples = [s for s in family.samples if not s.name.endswith("_created")]
        yield copy


class _CountersWithoutCreated(Collector):
    """``COUNTERS`` as exposed on ``/metrics``: without prometheus_client's ``_created`` series."""

    def collect(self) -> Iterator[Metric]:
        """Yield the process counters' families, ``_created`` samples dropped."""
        return _without_created(COUNTERS.collect())


def render(node: Node) -> bytes:
    """The exposition text: the process counters (no ``_created`` series), then the node's readings now."""
    counters = CollectorRegistry(auto_describe=False)
    counters.register(_CountersWithoutCreated())
    registry = CollectorRegistry(auto_describe=False)
    registry.register(NodeCollector(node))
    return generate_latest(counters) + generate_latest(registry)
