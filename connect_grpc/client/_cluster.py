"""The typed client's calls about the worker, its plugins and the cluster rather than one
connector's life: config validation, the plugins, the cluster's description, the
loggers, and the pipeline preview (a dry run of a config's converters and
transformations, which creates nothing).

Separate from the connector calls (:mod:`._connectors`, :mod:`._offsets`): none of these
changes a connector.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from connect_grpc.client import convert as cc
from connect_grpc.client._channel import ChannelClient
from connect_grpc.kernel.domain import ClusterInfo, ConfigInfos, PluginDesc
from connect_grpc.logs.level_model import LoggerLevel, LogLevelScope
from connect_grpc.pipeline import preview_convert
from connect_grpc.pipeline.preview_model import (
    PipelinePreview,
    PreviewRequest,
    SampleRecord,
    TopicTail,
)
from connect_grpc.v1 import connect_pb2 as pb


class ClusterCalls(ChannelClient):
    """The RPCs about plugins, the cluster, the loggers and the pipeline preview."""

    # plugins and cluster

    def validate_config(
        self, *, plugin: str | None = None, config: Mapping[str, str]
    ) -> ConfigInfos:
        """Validates a config against its plugin's definitions; changes nothing.

        Keyword-only, in the proto's field order (``plugin``, ``config``).

        Args:
            plugin: The plugin's class name or alias; None for ``config["connector.class"]``.
            config: The config to validate.

        Returns:
            Per-key definitions and errors; ``error_count`` is 0 for a valid config (invalid
            values are reported here, not raised).

        Raises:
            InvalidArgumentError: No plugin given and no ``connector.class`` in the config, or
                an unknown plugin (the message lists the available ones).
        """
        return self._call(
            self._stub.ValidateConfig,
            pb.ValidateConfigRequest(plugin=plugin or "", config=dict(config)),
            cc.config_infos_from_pb,
        )

    def list_plugins(
        self, include_config_definitions: bool = False, all_plugin_types: bool = False
    ) -> list[PluginDesc]:
        """Lists the installed connector plugins: the sinks, then the sources, each sorted by
        class name (Kafka Connect's order).

        Args:
            include_config_definitions: Include each plugin's config key definitions.
            all_plugin_types: Also list the transformations, predicates, converters and
                header converters, after the connectors (each type sorted by class name,
                in Kafka Connect's order of types).
        """
        return self._call(
            self._stub.ListPlugins,
            pb.ListPluginsRequest(
                include_config_definitions=include_config_definitions,
                all_plugin_types=all_plugin_types,
            ),
            lambda r: [cc.plugin_from_pb(p) for p in r.plugins],
        )

    def get_plugin_config(self, name: str) -> PluginDesc:
        """Describes one plugin with its config definitions (KIP-769).

        Args:
            name: The plugin's class name or any of its aliases (a connector, transformation,
                predicate, converter or header converter).

        Returns:
            The plugin; for a connector its own keys first, then the framework's connector
            keys it does not define.

        Raises:
            NotFoundError: No plugin has that name (the message names the closest one).
        """
        return self._call(
            self._stub.GetPluginConfig,
            pb.GetPluginConfigRequest(name=name),
            lambda r: cc.plugin_from_pb(r.plugin),
        )

    def get_cluster_info(self) -> ClusterInfo:
        """Describes the cluster: mode, version, leader, live workers, generation."""
        return self._call(
            self._stub.GetClusterInfo, pb.GetClusterInfoRequest(), cc.cluster_info_from_pb
        )

    def list_loggers(self) -> dict[str, LoggerLevel]:
        """The worker's known loggers whose level is not OFF, by name (``root`` first), each
        with its effective level (a Kafka level name) and when it was last set through
        :meth:`set_log_level` (ms since the epoch; None if never)."""
        return self._call(
            self._stub.ListLoggers,
            pb.ListLoggersRequest(),
            lambda r: {logger.name: cc.logger_level_from_pb(logger) for logger in r.loggers},
        )

    def get_logger(self, name: str) -> LoggerLevel:
        """One logger's level on the worker that answers (``root`` for the root logger).

        Raises:
            NotFoundError: The worker knows no logger of that name.
        """
        return self._call(
            self._stub.GetLogger,
            pb.GetLoggerRequest(name=name),
            lambda r: cc.logger_level_from_pb(r.logger),
        )

    def set_log_level(
        self, name: str, level: str, scope: LogLevelScope = LogLevelScope.WORKER
    ) -> list[str]:
        """Sets ``level`` (ALL, TRACE, DEBUG, INFO, WARN, ERROR, FATAL or OFF, any case) on
        the logger ``name`` and every known logger whose name starts with it.

        With ``LogLevelScope.WORKER`` on the worker that answers; returns the loggers whose
        level changed, sorted. With ``LogLevelScope.CLUSTER`` on every worker, including
        those that join later (through the config topic); returns an empty list.

        Raises:
            InvalidArgumentError: An empty name, or a level that is not one of those above.
        """
        return self._call(
            self._stub.SetLogLevel,
            pb.SetLogLevelRequest(name=name, level=level, scope=cc.log_level_scope_to_pb(scope)),
            lambda r: list(r.changed_loggers),
        )

    # pipeline preview

    def preview_pipeline(
        self,
        *,
        name: str = "",
        config: Mapping[str, str] | None = None,
        samples: Sequence[SampleRecord] | None = None,
        from_topic: TopicTail | None = None,
    ) -> PipelinePreview:
        """Runs records through a connector's converters and transformations and returns
        every stage's output, or the failed stage with the dead-letter headers it would
        get; writes nothing, runs no task, creates no connector.

        Keyword-only, in the proto's field order.

        Args:
            name: An existing connector, whose config is previewed (or give ``config``).
            config: A connector config, validated as CreateConnector validates it.
            samples: Sample records (or give ``from_topic``): for a sink, key, value and
                header values as consumed (str: JSON text, taken as its UTF-8 bytes); for a
                source, as polled (str: JSON read as JsonConverter reads it).
            from_topic: The last records of a topic (sink connectors only).

        Raises:
            InvalidArgumentError: an invalid config (the field violations of a create) or
                request.
            NotFoundError: no connector ``name``.
            UnavailableError: Kafka did not answer in time (``from_topic``).
        """
        request = PreviewRequest(
            name=name,
            config=dict(config) if config else None,
            samples=tuple(samples) if samples is not None else None,
            from_topic=from_topic,
        )
        return self._call(
            self._stub.PreviewPipeline,
            preview_convert.request_to_pb(request),
            preview_convert.preview_from_pb,
        )
