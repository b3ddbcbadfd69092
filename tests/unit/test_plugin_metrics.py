"""Metrics plugins register themselves (KIP-877): through a context's ``plugin_metrics`` or
``Monitorable``, exported with the worker's tags, gone when the instance stops."""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client import generate_latest

from connect_grpc.connectors.plugin_metrics import Monitorable, PluginMetrics
from connect_grpc.kernel.domain import TaskId
from connect_grpc.metrics.worker_metrics import WorkerMetrics
from connect_grpc.pipeline.build import PipelinePlugins, TransformStage
from connect_grpc.pipeline.config import ErrorHandling
from connect_grpc.pipeline.monitoring import monitor_pipeline
from connect_grpc.plugin import ConnectRecord, Transformation

TASK = TaskId("orders", 2)


def _scrape(metrics: WorkerMetrics) -> str:
    return generate_latest(metrics.registry).decode()


class Counting(Transformation[ConnectRecord]):
    def __init__(self) -> None:
        self.seen = 0

    def with_plugin_metrics(self, metrics: PluginMetrics) -> None:
        metrics.add_metric(metrics.metric_name("records-seen", "Records seen."), lambda: self.seen)

    def apply(self, record: ConnectRecord) -> ConnectRecord:
        self.seen += 1
        return record


def test_a_task_metric_is_exported_with_its_tags_and_gone_when_the_task_stops() -> None:
    metrics = WorkerMetrics()
    own = metrics.task(TASK).plugin_metrics(
        {"connector": "orders", "task": "2", "config": "task", "class": "p.T", "version": "1.0"}
    )
    value = [3.0]
    own.add_metric(own.metric_name("queue-size", "Queued rows.", {"queue": "a"}),
                   lambda: value[0])
    text = _scrape(metrics)
    assert "# HELP connect_grpc_plugin_queue_size Queued rows." in text
    assert ('connect_grpc_plugin_queue_size{class="p.T",config="task",connector="orders",'
            'queue="a",task="2",version="1.0"} 3.0') in text
    value[0] = 5
    assert 'version="1.0"} 5.0' in _scrape(metrics)
    metrics.forget_task(TASK)
    assert "connect_grpc_plugin_queue_size" not in _scrape(metrics)
    with pytest.raises(ValueError, match="closed"):
        own.add_metric("late", lambda: 1)


def test_a_metric_is_named_by_its_name_and_tags_not_its_description() -> None:
    """As Kafka's MetricName: a metric added with a description is removed by its plain
    name, and one added again under a new description replaces it, the new description
    shown."""
    metrics = WorkerMetrics()
    own = metrics.plugins.open({"connector": "c"}, "c", None)
    own.add_metric(own.metric_name("polls", "Polls made."), lambda: 1)
    own.add_metric(own.metric_name("polls", "Polls, all of them."), lambda: 2)
    text = _scrape(metrics)
    assert "# HELP connect_grpc_plugin_polls Polls, all of them." in text
    assert 'connect_grpc_plugin_polls{connector="c"} 2.0' in text
    own.remove_metric("polls")
    assert "connect_grpc_plugin_polls" not in _scrape(metrics)
    metrics.plugins.close_owner("c", None)


def test_a_gauge_that_raises_is_left_out_of_the_scrape() -> None:
    metrics = WorkerMetrics()
    own = metrics.plugins.open({"connector": "c"}, "c", None)
    own.add_metric("broken", lambda: 1 / 0)
    own.add_metric("fine", lambda: 1)
    text = _scrape(metrics)
    assert "connect_grpc_plugin_broken" not in text
    assert 'connect_grpc_plugin_fine{connector="c"} 1.0' in text
    metrics.plugins.close_owner("c", None)
    assert "connect_grpc_plugin_fine" not in _scrape(metrics)


@pytest.mark.parametrize("name", ["", "1st", "has space"])
def test_a_bad_metric_name_is_refused(name: str) -> None:
    with pytest.raises(ValueError, match="invalid metric name"):
        PluginMetrics({}).metric_name(name)


@pytest.mark.parametrize("tag", ["connector", "task", "alias", "class", "bad-tag"])
def test_the_workers_tags_cannot_be_replaced(tag: str) -> None:
    with pytest.raises(ValueError, match="reserved"):
        PluginMetrics({}).metric_name("m", tags={tag: "x"})


def test_monitorable_pipeline_plugins_get_metrics_tagged_with_their_alias() -> None:
    counting = Counting()
    assert isinstance(counting, Monitorable)
    plugins = PipelinePlugins(None, None, None, [TransformStage("count", counting, None, False)],
                              ErrorHandling.from_config({}))
    metrics = WorkerMetrics()
    opened: list[dict[str, Any]] = []

    def open_metrics(tags: Any) -> PluginMetrics:
        opened.append(dict(tags))
        return metrics.task(TASK).plugin_metrics(tags)

    monitor_pipeline(plugins, TASK, open_metrics)
    counting.seen = 4
    assert opened == [{"connector": "orders", "task": "2", "config": "transforms",
                       "class": f"{__name__}.Counting", "version": opened[0]["version"],
                       "alias": "count"}]
    assert 'alias="count"' in _scrape(metrics)
    assert 'task="2",version="' in _scrape(metrics)
    assert "connect_grpc_plugin_records_seen{" in _scrape(metrics)
    assert "} 4.0" in _scrape(metrics)
    metrics.forget_task(TASK)
    assert "records_seen" not in _scrape(metrics)
