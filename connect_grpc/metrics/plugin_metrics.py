"""The metrics plugins register themselves (KIP-877), exported with the worker's: each
metric of each open PluginMetrics (``connectors.plugin_metrics``) is a gauge sample of the
family ``connect_grpc_plugin_<name>``, labelled with its tags, read at each scrape (so a
stopped instance's metrics are gone from the next scrape)."""

from __future__ import annotations

import re
from collections.abc import Iterable

from prometheus_client.core import Metric
from prometheus_client.registry import Collector

from connect_grpc.connectors.plugin_metrics import PluginMetricsStore

__all__ = ["PluginMetricsCollector", "family_name"]

PREFIX = "connect_grpc_plugin_"


def family_name(metric: str) -> str:
    """The Prometheus family of a plugin metric: ``records-seen`` →
    ``connect_grpc_plugin_records_seen``."""
    return PREFIX + re.sub(r"[^A-Za-z0-9_]", "_", metric)


class PluginMetricsCollector(Collector):
    """Reads every open PluginMetrics of ``store`` at each scrape."""

    def __init__(self, store: PluginMetricsStore) -> None:
        self._store = store

    def collect(self) -> Iterable[Metric]:
        families: dict[str, Metric] = {}
        for metrics in self._store.all():
            for name, labels, value in metrics.samples():
                family_key = family_name(name.name)
                family = families.get(family_key)
                if family is None:
                    family = Metric(family_key, name.description or name.name, "gauge")
                    families[family_key] = family
                family.add_sample(family_key, labels, value)
        return list(families.values())
