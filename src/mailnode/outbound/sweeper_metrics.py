"""The sweeper's process counters, exposed on ``GET /metrics`` by ``mailnode.metrics`` (which reads every
domain and so sits above outbound; the sweeper increments these without importing it, issue 18).

- ``SWEEPER_ROWS``: rows the sweeper decided, by verdict (``SweepVerdict``);
- ``SWEEPER_PASSES``: sweeper passes, by send mode (``SendMode``).

Every label of their closed vocabularies is created at 0 at import: a series that appeared only at its
first increment would hide that increment from ``increase()`` (``mailnode.metrics``' docstring).
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter

from mailnode.outbound.sweeper_rules import SendMode, SweepVerdict

#: Process-wide counters (they survive between scrapes).
COUNTERS = CollectorRegistry(auto_describe=True)
SWEEPER_ROWS = Counter("mailnode_sweeper_rows", "Rows the notify sweeper decided, by verdict.", ["verdict"],
                       registry=COUNTERS)
SWEEPER_PASSES = Counter("mailnode_sweeper_passes", "Notify sweeper passes, by send mode.", ["send_mode"],
                         registry=COUNTERS)
for _verdict in SweepVerdict:
    SWEEPER_ROWS.labels(verdict=_verdict.value)
for _mode in SendMode:
    SWEEPER_PASSES.labels(send_mode=_mode.value)
