"""What the standalone and the distributed herder do the same way, written once."""

from __future__ import annotations

import abc
import dataclasses
import functools
from collections.abc import Callable, Iterator, Mapping, Sequence

from connect_grpc.config.worker import WorkerConfig
from connect_grpc.connectors.plugin_versions import PluginVersion
from connect_grpc.connectors.plugins import Plugins, closest_name
from connect_grpc.herder.framework_keys import framework_config_def
from connect_grpc.herder.instance_rules import require_topic_tracking
from connect_grpc.herder.interface import WorkerRuntime
from connect_grpc.herder.java_listing import merge_listing
from connect_grpc.herder.java_plugins import JavaAwareValidator, JavaPlugins
from connect_grpc.herder.offset_manager import OffsetManager
from connect_grpc.herder.preview import run_preview
from connect_grpc.herder.status import StatusBoard
from connect_grpc.herder.validation import (
    ConfigValidator,
    check_config_size,
    config_with_name,
    validate_name,
)
from connect_grpc.kernel.domain import (
    ConfigInfos,
    ConnectorOffset,
    ConnectorStatus,
    ConnectorType,
    HealthReport,
    OffsetsChange,
    PluginDesc,
)
from connect_grpc.kernel.errors import (
    ConnectError,
    InvalidArgumentError,
    NotFoundError,
    UnavailableError,
)
from connect_grpc.logs.levels import LoggerLevel, LoggerLevels
from connect_grpc.pipeline.preview_input import TopicTailReader
from connect_grpc.pipeline.preview_model import PipelinePreview, PreviewRequest
from connect_grpc.runtime.kafka_monitor import PROBE_INTERVAL_S, KafkaReachability
from connect_grpc.runtime.topic_tail import read_topic_tail


class HerderCommon(abc.ABC):
    """Reads, validation and health checks both herders share. Subclasses set the
    attributes below in their constructor and implement the abstract methods."""

    _config: WorkerConfig
    _plugins: Plugins
    _validator: ConfigValidator
    _board: StatusBoard
    _worker: WorkerRuntime
    _loggers: LoggerLevels
    _offset_manager: OffsetManager

    @abc.abstractmethod
    def connector_status(self, name: str) -> ConnectorStatus:
        """The connector's and its tasks' status (NotFoundError when unknown)."""

    @abc.abstractmethod
    def connector_config(self, name: str) -> dict[str, str]:
        """The connector's config as the user gave it (NotFoundError when unknown)."""

    def watch_status(
        self, name: str, is_active: Callable[[], bool]
    ) -> Iterator[ConnectorStatus | None]:
        last: ConnectorStatus | None = None
        version = -1
        while is_active():
            version = self._board.wait_for_change(version, timeout=1.0)
            try:
                current = self.connector_status(name)
            except NotFoundError:
                if last is not None:
                    yield None
                    return
                raise
            if last is None or current != last or current.revisions() != last.revisions():
                last = current
                yield current

    def validate_config(self, config: Mapping[str, str], plugin: str | None = None) -> ConfigInfos:
        return self._validator.validate(config, plugin)

    @property
    def _java_plugins(self) -> JavaPlugins | None:
        """The Java plugins of ``plugin.path``; None when it holds none."""
        validator = self._validator
        return validator.java_plugins if isinstance(validator, JavaAwareValidator) else None

    def plugins(
        self, include_config_definitions: bool = False, all_plugin_types: bool = False
    ) -> list[PluginDesc]:
        java = self._java_plugins
        java_connectors, java_others = (
            ([], [])
            if java is None
            else java.describe(include_config_definitions, all_plugin_types)
        )
        connectors = merge_listing(
            self._plugins.describe(include_config_definitions), java_connectors, connectors=True
        )
        if not all_plugin_types:
            return connectors
        pipeline = self._plugins.describe_pipeline(include_config_definitions)
        return [*connectors, *merge_listing(pipeline, java_others, connectors=False)]

    def plugin_config(self, name: str) -> PluginDesc:
        wanted = name.strip()
        if not wanted:
            raise InvalidArgumentError.for_field("name", "required: a plugin's class or alias")
        described = self.plugins(include_config_definitions=True, all_plugin_types=True)
        # A class name before an alias: a Java class of plugin.path that shares Kafka's name
        # with a Python built-in's alias is that class. Of a class listed once a version,
        # the latest, as Kafka Connect describes a plugin asked for without a version.
        matches = [p for p in described if wanted == p.class_name or wanted in p.aliases]
        if matches:
            chosen = min(matches, key=lambda p: wanted != p.class_name)
            versions = [p for p in matches
                        if (p.class_name, p.plugin_type) == (chosen.class_name, chosen.plugin_type)]
            return self._with_framework_keys(
                max(versions, key=lambda p: PluginVersion(p.version or "0"))
            )
        closest = closest_name(wanted, (n for p in described for n in (p.class_name, *p.aliases)))
        hint = f" Did you mean {closest}?" if closest else ""
        raise NotFoundError(f"Unknown plugin {wanted}.{hint}")

    def _with_framework_keys(self, plugin: PluginDesc) -> PluginDesc:
        """A connector's description with the framework's keys it does not define after its
        own (Kafka Connect's order); any other plugin's as it is (a Java connector's has
        them: Kafka's definition merges its framework's)."""
        java = self._java_plugins
        if plugin.type is ConnectorType.UNKNOWN or (java is not None and java.describes(plugin)):
            return plugin
        connector = self._plugins.new_connector(plugin.class_name)
        definitions = connector.config_def().merged(framework_config_def(connector))
        return dataclasses.replace(plugin, config_definitions=tuple(definitions.describe()))

    # topic tracking (KIP-558)

    def connector_topics(self, name: str) -> list[str]:
        """The topics the connector's tasks used, sorted; empty for an unknown connector
        (as Kafka Connect answers it)."""
        require_topic_tracking(self._config)
        return self._board.active_topics(name)

    # loggers (KIP-495): this worker's levels

    def loggers(self) -> dict[str, LoggerLevel]:
        return self._loggers.all_levels()

    def logger_level(self, name: str) -> LoggerLevel:
        found = self._loggers.level(name)
        if found is None:
            raise NotFoundError(f"Logger {name} not found.")
        return found

    def set_worker_log_level(self, namespace: str, level: str) -> list[str]:
        return self._loggers.set_level(namespace, level)

    def preview_pipeline(self, request: PreviewRequest) -> PipelinePreview:
        return run_preview(
            request, self.connector_config, self._validator, self._config, self._plugins,
            read_tail=self._topic_tail_reader(),
        )

    def _topic_tail_reader(self) -> TopicTailReader:
        return functools.partial(read_topic_tail, self._config)

    def _normalised(self, name: str, config: Mapping[str, str]) -> tuple[str, dict[str, str]]:
        """The trimmed, checked name and the config with it, within the size limit."""
        name = validate_name(name)
        full_config = config_with_name(name, config)
        check_config_size(full_config, self._config.limits.config_bytes)
        return name, full_config

    def _validated_for_create(
        self,
        name: str,
        config: Mapping[str, str],
        initial_offsets: Sequence[ConnectorOffset] | None,
        initial_offsets_time_ms: int | None,
    ) -> OffsetsChange:
        """Validates a new connector's config, then writes its initial offsets (KIP-995)
        if it has any; the caller holds the connector's lock and writes the config after.

        With initial offsets a failure names its step, as Kafka Connect's does."""
        with_initial_offsets = initial_offsets is not None or initial_offsets_time_ms is not None
        try:
            self._validator.ensure_valid(config)
        except ConnectError as exc:
            if not with_initial_offsets:
                raise
            raise exc.in_step("validate config") from exc
        if not with_initial_offsets:
            return OffsetsChange("")
        return self._offset_manager.set_initial(
            name, config, initial_offsets or [], initial_offsets_time_ms
        )

    def _kafka_report(self) -> HealthReport | None:
        """NOT_SERVING while Kafka has been unreachable past its grace, else None."""
        problem = self._kafka_unhealthy()
        return None if problem is None else HealthReport(False, problem, "kafka_unreachable")

    def _kafka_unhealthy(self) -> str | None:
        """Why the worker should not serve because of Kafka, or None."""
        if not isinstance(self._worker, KafkaReachability):
            return None
        away = self._worker.kafka_unreachable_for()
        grace_ms = self._config.resilience.kafka_unreachable_grace_ms
        if away is None or away * 1000 <= grace_ms:
            return None
        return (
            f"Kafka ({self._config.bootstrap_servers}) has been unreachable for "
            f"{away:.0f} s (health.kafka.unreachable.grace.ms={grace_ms})"
        )

    def _kafka_away_for(self) -> float | None:
        """Seconds this worker's Kafka monitor has found Kafka unreachable, or None."""
        if not isinstance(self._worker, KafkaReachability):
            return None
        return self._worker.kafka_unreachable_for()

    def _refuse_while_kafka_unreachable(self) -> None:
        """A write that needs Kafka is answered UNAVAILABLE at once, with a retry hint,
        while the worker's Kafka monitor already knows Kafka is unreachable: waiting for
        the write to time out would only hold the caller for its whole deadline."""
        away = self._kafka_away_for()
        if away is None:
            return
        raise UnavailableError(
            f"Kafka ({self._config.bootstrap_servers}) has been unreachable for {away:.0f} s: "
            "nothing was written; retry once it is back",
            PROBE_INTERVAL_S,
        )
