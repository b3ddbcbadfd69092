"""Request validation shared by every herder: names, the framework's connector config keys,
and the merge of the framework's and the plugin's validation into ConfigInfos."""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping

from connect_grpc.connectors.api import Connector, SinkConnector
from connect_grpc.connectors.config import (
    ConfigDef,
    ConfigKey,
    ConfigType,
    Importance,
    at_least,
    define_all,
    java_trim,
    parse_value,
    topic_name_error,
    valid_regex,
)
from connect_grpc.connectors.plugins import Plugins
from connect_grpc.domain import ConfigInfo, ConfigInfos, ConfigValueInfo
from connect_grpc.errors import FieldViolation, InvalidArgumentError, NotFoundError
from connect_grpc.runtime.batching import BATCH_MAX_RECORDS_KEY, DEFAULT_MAX_RECORDS

CONNECTOR_CLASS = "connector.class"
TASKS_MAX = "tasks.max"
COMMON_GROUP = "Common"

COMMON_CONFIG = define_all(
    [
        ConfigKey("name", ConfigType.STRING, "Globally unique name of the connector.",
                  default=None, importance=Importance.HIGH, group=COMMON_GROUP,
                  order_in_group=1, display_name="Connector name"),
        ConfigKey(CONNECTOR_CLASS, ConfigType.STRING,
                  "The connector plugin: a fully qualified class name or an alias.",
                  importance=Importance.HIGH, group=COMMON_GROUP, order_in_group=2,
                  display_name="Connector class"),
        ConfigKey(TASKS_MAX, ConfigType.INT, "Maximum number of tasks to use for this connector.",
                  default=1, importance=Importance.HIGH, validator=at_least(1),
                  group=COMMON_GROUP, order_in_group=3, display_name="Tasks max"),
        ConfigKey(BATCH_MAX_RECORDS_KEY, ConfigType.INT,
                  "The most records one micro-batch (one Spark job) of a task moves; batches "
                  f"grow up to it while the backlog keeps them full (default "
                  f"{DEFAULT_MAX_RECORDS}).", default=None, importance=Importance.LOW,
                  validator=at_least(1), group=COMMON_GROUP, order_in_group=4,
                  display_name="Batch max records"),
    ]
)

SINK_CONFIG = define_all(
    [
        ConfigKey("topics", ConfigType.LIST, "Topics to consume (or use topics.regex).",
                  default=None, importance=Importance.HIGH, group=COMMON_GROUP,
                  order_in_group=5, display_name="Topics"),
        ConfigKey("topics.regex", ConfigType.STRING,
                  "Regular expression of topics to consume (or use topics).",
                  default=None, importance=Importance.HIGH, validator=valid_regex,
                  group=COMMON_GROUP, order_in_group=6, display_name="Topics regex"),
    ]
)


#: The longest connector name, in characters (it becomes part of Kafka record keys,
#: consumer group ids and transactional ids).
MAX_NAME_LENGTH = 255


def validate_name(raw_name: str) -> str:
    """Trims the connector name; rejects an empty one, one with control characters, and one
    longer than MAX_NAME_LENGTH. Every RPC's name goes through here, once, at the API edge."""
    name = raw_name.strip()
    if not name:
        raise InvalidArgumentError.for_field("name", "connector name must not be empty")
    if any(unicodedata.category(ch) == "Cc" for ch in name):
        raise InvalidArgumentError.for_field(
            "name", "connector name must not contain ISO control characters"
        )
    if len(name) > MAX_NAME_LENGTH:
        raise InvalidArgumentError.for_field(
            "name", f"connector name is {len(name)} characters long; the limit is "
            f"{MAX_NAME_LENGTH}"
        )
    return name


def check_config_size(config: Mapping[str, str], max_bytes: int) -> None:
    """Rejects a config whose keys and values take more than ``max_bytes`` in UTF-8 (the
    worker property ``connector.config.max.bytes``)."""
    size = sum(len(key.encode()) + len(value.encode()) for key, value in config.items())
    if size > max_bytes:
        raise InvalidArgumentError.for_field(
            "config",
            f"the connector config takes {size} bytes (keys and values, UTF-8); the limit is "
            f"{max_bytes} bytes (worker property connector.config.max.bytes)",
        )


def config_with_name(name: str, config: Mapping[str, str]) -> dict[str, str]:
    """The config with ``name`` set; rejects a ``name`` entry that differs from the request's."""
    given = config.get("name")
    if given is not None and given.strip() != name:
        raise InvalidArgumentError.for_field(
            "config.name",
            f"connector name in the config ({given!r}) does not match the request name ({name!r})",
        )
    return {**config, "name": name}


def _sink_topic_errors(config: Mapping[str, str]) -> dict[str, list[str]]:
    has_topics = bool(config.get("topics", "").strip())
    has_regex = bool(config.get("topics.regex", "").strip())
    if has_topics and has_regex:
        message = "topics and topics.regex are mutually exclusive options, but both are set."
        return {"topics": [message], "topics.regex": [message]}
    if not has_topics and not has_regex:
        message = "Must configure one of topics or topics.regex"
        return {"topics": [message], "topics.regex": [message]}
    if has_topics:
        topics = [java_trim(topic) for topic in config["topics"].split(",")]
        illegal = [error for topic in topics if (error := topic_name_error(topic))]
        if illegal:
            return {"topics": illegal}
    return {}


class ConfigValidator:
    """Validates connector configs the way Kafka Connect's AbstractHerder does."""

    def __init__(self, plugins: Plugins, max_tasks: int) -> None:
        self._plugins = plugins
        self._max_tasks = max_tasks

    def plugin_for(self, config: Mapping[str, str], plugin: str | None = None) -> Connector:
        class_name = (plugin or config.get(CONNECTOR_CLASS) or "").strip()
        if not class_name:
            raise InvalidArgumentError.for_field(
                f"config.{CONNECTOR_CLASS}", "connector config contains no connector type"
            )
        try:
            return self._plugins.new_connector(class_name)
        except NotFoundError as exc:
            raise InvalidArgumentError(
                exc.message, [FieldViolation(f"config.{CONNECTOR_CLASS}", exc.message)]
            ) from None

    def validate(self, config: Mapping[str, str], plugin: str | None = None) -> ConfigInfos:
        connector = self.plugin_for(config, plugin)
        framework_def = COMMON_CONFIG
        errors = COMMON_CONFIG.validate(config)
        errors[TASKS_MAX].extend(self._tasks_limit_errors(config, errors[TASKS_MAX]))
        if isinstance(connector, SinkConnector):
            framework_def = COMMON_CONFIG.merged(SINK_CONFIG)
            errors.update(SINK_CONFIG.validate(config))
            errors.update(_sink_topic_errors(config))
        for key, key_errors in connector.validate(config).items():
            errors[key] = [*errors.get(key, []), *key_errors]
        connector_class = type(connector)
        return _config_infos(
            f"{connector_class.__module__}.{connector_class.__qualname__}",
            framework_def.merged(connector.config_def()),
            config,
            errors,
        )

    def _tasks_limit_errors(self, config: Mapping[str, str], parse_errors: list[str]) -> list[str]:
        raw = config.get(TASKS_MAX)
        if raw is None or parse_errors or tasks_max(config) <= self._max_tasks:
            return []
        return [
            f"Invalid value {raw} for configuration {TASKS_MAX}: Value must be no more than "
            f"{self._max_tasks} (the worker property tasks.max.limit)"
        ]

    def ensure_valid(self, config: Mapping[str, str]) -> ConfigInfos:
        """Raises InvalidArgumentError listing every error, as ValidateConfig reports them."""
        infos = self.validate(config)
        problems = infos.all_errors()
        if problems:
            lines = "\n".join(f"{key}: {message}" for key, message in problems)
            raise InvalidArgumentError(
                f"Connector configuration is invalid and contains the following "
                f"{len(problems)} error(s):\n{lines}",
                [FieldViolation(f"config.{key}", message) for key, message in problems],
            )
        return infos


def _config_infos(
    plugin_name: str,
    config_def: ConfigDef,
    config: Mapping[str, str],
    errors: Mapping[str, list[str]],
) -> ConfigInfos:
    infos: list[ConfigInfo] = []
    for key in config_def.keys.values():
        value = ConfigValueInfo(key.name, config.get(key.name), tuple(errors.get(key.name, ())))
        infos.append(ConfigInfo(definition=key.describe(), value=value))
    for name, undefined_key_errors in errors.items():
        if name not in config_def.keys and undefined_key_errors:
            value = ConfigValueInfo(name, config.get(name), tuple(undefined_key_errors))
            infos.append(ConfigInfo(None, value))
    return ConfigInfos(
        name=plugin_name,
        error_count=sum(len(info.value.errors) for info in infos),
        groups=tuple(config_def.groups()),
        configs=tuple(infos),
    )


def tasks_max(config: Mapping[str, str]) -> int:
    """The parsed ``tasks.max`` of a config that passed validation."""
    raw = config.get(TASKS_MAX)
    key = COMMON_CONFIG.keys[TASKS_MAX]
    return key.default if raw is None else int(parse_value(key, raw))
