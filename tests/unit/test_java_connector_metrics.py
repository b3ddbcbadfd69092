"""A Java connector's own metrics (KIP-877) as the driver exports them: read from the JVM
(here a list standing for ``ConnectorHost.pluginMetrics``' answers) into the connector's
PluginMetrics, under the worker's tags and the metric's own, at most once an interval, and
gone when the instance is released; a later instance's series are its own."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from prometheus_client import CollectorRegistry
from structlog.testing import capture_logs

from connect_grpc.metrics.worker_metrics import WorkerMetrics
from connect_grpc.runtime.java_connector_metrics import METRICS_INTERVAL_S, JavaConnectorMetrics

WORKER_TAGS = {"connector": "mm", "config": "connector", "class": "org.example.Mirror",
               "version": "1.0"}
SERIES = "connect_grpc_plugin_polls"


class Jvm:
    """What the JVM answers for each instance, and a clock the test moves."""

    def __init__(self) -> None:
        self.metrics: dict[int, list[Mapping[str, Any]]] = {}
        self.reads = 0
        self.now = 0.0
        self.failing = False

    def read(self, handle: int) -> Sequence[Mapping[str, Any]]:
        self.reads += 1
        if self.failing:
            raise RuntimeError("the gateway is gone")
        return self.metrics.get(handle, [])


def _metric(value: float, **own: str) -> Mapping[str, Any]:
    return {"name": "polls", "description": "polls made", "value": value,
            "tags": {"connector": "mm", **own}}


def _setup() -> tuple[CollectorRegistry, Jvm, JavaConnectorMetrics]:
    registry = CollectorRegistry()
    worker = WorkerMetrics(registry)
    opened = worker.plugins.open(WORKER_TAGS, "mm", None)
    jvm = Jvm()
    return registry, jvm, JavaConnectorMetrics("org.example.Mirror", jvm.read, lambda: opened,
                                               clock=lambda: jvm.now)


def test_a_connectors_metrics_are_exported_with_the_workers_tags_and_their_own() -> None:
    registry, jvm, metrics = _setup()
    jvm.metrics[1] = [_metric(3, unit="calls")]
    metrics.follow(1)
    metrics.read(1)
    assert registry.get_sample_value(SERIES, {**WORKER_TAGS, "unit": "calls"}) == 3
    # read at most once an interval
    jvm.metrics[1] = [_metric(5, unit="calls")]
    metrics.read(1)
    assert jvm.reads == 1
    jvm.now += METRICS_INTERVAL_S
    metrics.read(1)
    assert registry.get_sample_value(SERIES, {**WORKER_TAGS, "unit": "calls"}) == 5
    # released: gone from the scrape
    metrics.release(1)
    assert registry.get_sample_value(SERIES, {**WORKER_TAGS, "unit": "calls"}) is None


def test_only_the_followed_instance_is_read_and_a_late_release_leaves_the_next_ones() -> None:
    registry, jvm, metrics = _setup()
    jvm.metrics[1] = [_metric(1)]
    jvm.metrics[2] = [_metric(2)]
    metrics.follow(1)
    metrics.read(1)
    metrics.follow(2)  # a restart made a new instance before the first's relay ended
    metrics.read(1)
    assert jvm.reads == 1
    metrics.read(2)
    metrics.release(1)
    assert registry.get_sample_value(SERIES, WORKER_TAGS) == 2


def test_a_metric_that_reuses_a_workers_tag_is_left_out_and_a_failed_read_keeps_values() -> None:
    registry, jvm, metrics = _setup()
    jvm.metrics[1] = [_metric(1), {**_metric(7), "name": "other", "tags": {"class": "mine"}}]
    metrics.follow(1)
    metrics.read(1)
    assert registry.get_sample_value(SERIES, WORKER_TAGS) == 1
    assert not [s for m in registry.collect() for s in m.samples
                if s.name == "connect_grpc_plugin_other"]

    jvm.failing = True  # the gateway fails: logged, the last values stay
    jvm.now += METRICS_INTERVAL_S
    metrics.read(1)
    assert registry.get_sample_value(SERIES, WORKER_TAGS) == 1
    jvm.failing = False
    jvm.now += METRICS_INTERVAL_S
    jvm.metrics[1] = []
    metrics.read(1)  # the connector removed its metric
    assert registry.get_sample_value(SERIES, WORKER_TAGS) is None


def test_an_answer_it_cannot_take_is_logged_once_and_the_next_reads_go_on() -> None:
    registry, jvm, metrics = _setup()
    jvm.metrics[1] = [{**_metric(0), "value": "many"}]  # not a number
    metrics.follow(1)
    with capture_logs() as logs:
        metrics.read(1)
        jvm.now += METRICS_INTERVAL_S
        metrics.read(1)
    assert jvm.reads == 2
    # once, the error's kind only: its message may hold the value
    assert [entry for entry in logs if entry["event"] == "java_connector_metrics_not_exported"
            ] == [{"event": "java_connector_metrics_not_exported", "log_level": "warning",
                   "java_class": "org.example.Mirror", "error": "ValueError"}]
    jvm.metrics[1] = [_metric(4)]
    jvm.now += METRICS_INTERVAL_S
    metrics.read(1)
    assert registry.get_sample_value(SERIES, WORKER_TAGS) == 4


def test_the_reading_loop_reads_until_its_instance_is_released() -> None:
    registry, jvm, metrics = _setup()
    jvm.metrics[1] = [_metric(2)]
    metrics.follow(1)
    reading = threading.Thread(target=metrics.keep_reading, args=(1,), daemon=True)
    reading.start()
    deadline = time.monotonic() + 5
    while registry.get_sample_value(SERIES, WORKER_TAGS) != 2:
        assert time.monotonic() < deadline, "never read"
        time.sleep(0.01)
    metrics.release(1)
    reading.join(5)
    assert not reading.is_alive()
    assert registry.get_sample_value(SERIES, WORKER_TAGS) is None
