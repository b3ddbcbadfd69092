"""The plugin metrics (KIP-877) of a task hosted in a Spark executor: its plugins get a
PluginMetrics as on the driver, so they run unchanged, but the executor's Python worker
has no metrics endpoint and nothing carries the values to the driver: they are not
exported, which the host logs once per task."""

from __future__ import annotations

from collections.abc import Mapping

import structlog

from connect_grpc.connectors.plugin_metrics import PluginMetrics
from connect_grpc.kernel.domain import TaskId
from connect_grpc.pipeline.monitoring import monitor_pipeline
from connect_grpc.pipeline.task_pipeline import TaskPipeline

__all__ = ["monitor_hosted"]

_log = structlog.get_logger(__name__)


def monitor_hosted(pipeline: TaskPipeline | None, task: TaskId) -> None:
    """Hands the pipeline's Monitorable plugins an unexported PluginMetrics each."""
    if pipeline is None:
        return
    monitored: list[PluginMetrics] = []

    def unexported(tags: Mapping[str, str]) -> PluginMetrics:
        metrics = PluginMetrics(tags)
        monitored.append(metrics)
        return metrics

    monitor_pipeline(pipeline.plugins, task, unexported)
    if monitored:
        _log.info("plugin_metrics_not_exported", connector=task.connector, task=task.task,
                  reason="the task is hosted in a Spark executor")
