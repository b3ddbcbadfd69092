"""Hands a task's converters, transformations and predicates that are ``Monitorable``
(KIP-877) their own PluginMetrics, tagged with the task and the plugin's place in the
connector config, as Kafka Connect's worker does once they are configured."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from connect_grpc.connectors.plugin_loading import qualified_name
from connect_grpc.connectors.plugin_metrics import Monitorable, PluginMetrics
from connect_grpc.connectors.plugin_versions import instance_version
from connect_grpc.kernel.domain import TaskId
from connect_grpc.pipeline.build import PipelinePlugins
from connect_grpc.pipeline.keys import HEADER_CONVERTER, KEY_CONVERTER, VALUE_CONVERTER

__all__ = ["monitor_pipeline", "plugin_tags"]


def plugin_tags(task: TaskId | None, connector: str, plugin: object, config: str) -> dict[str, str]:
    """The worker's tags of a plugin instance's metrics: its connector (and task), the key
    of the config that made it (``connector``, ``task``, ``key.converter``, …), its class
    and its version."""
    tags = {"connector": connector}
    if task is not None:
        tags["task"] = str(task.task)
    tags.update(config=config, **{"class": qualified_name(type(plugin))},
                version=instance_version(plugin))
    return tags


def monitor_pipeline(
    plugins: PipelinePlugins,
    task: TaskId,
    open_metrics: Callable[[Mapping[str, str]], PluginMetrics],
) -> None:
    """Calls ``with_plugin_metrics`` of each Monitorable plugin of the pipeline, once per
    plugin instance (a predicate shared by two stages is given one PluginMetrics)."""
    seen: set[int] = set()

    def hand(plugin: object, config: str, alias: str = "") -> None:
        if not isinstance(plugin, Monitorable) or id(plugin) in seen:
            return
        seen.add(id(plugin))
        tags = plugin_tags(task, task.connector, plugin, config)
        if alias:
            tags["alias"] = alias
        plugin.with_plugin_metrics(open_metrics(tags))

    for config, converter in (
        (KEY_CONVERTER, plugins.key_converter),
        (VALUE_CONVERTER, plugins.value_converter),
        (HEADER_CONVERTER, plugins.header_converter),
    ):
        hand(converter, config)
    for stage in plugins.stages:
        hand(stage.transformation, "transforms", stage.alias)
        if stage.predicate is not None:
            hand(stage.predicate, "predicates", stage.predicate_alias)
