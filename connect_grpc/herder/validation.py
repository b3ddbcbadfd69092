"""Request validation shared by every herder: names, config size and patches, and the
validation of a connector config (the framework's keys, ``herder.framework_keys``, checked
with the worker's settings, the pipeline's and the plugin's) merged into ConfigInfos."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping

from connect_grpc.config.override_policy import ClientOverridePolicy
from connect_grpc.config.worker import (
    EXACTLY_ONCE_SOURCE_DISABLED,
    EXACTLY_ONCE_SOURCE_ENABLED,
    EXACTLY_ONCE_SOURCE_PROPERTY,
)
from connect_grpc.config_providers.redaction import HIDDEN, SECRETS
from connect_grpc.config_providers.transformer import ConfigTransformer, has_references
from connect_grpc.connectors.api import (
    Connector,
    ConnectorTransactionBoundaries,
    ExactlyOnceSupport,
    SinkConnector,
    SourceConnector,
    TransactionBoundary,
)
from connect_grpc.connectors.plugin_loading import qualified_name
from connect_grpc.connectors.plugins import Plugins
from connect_grpc.connectors.topic_creation_config import (
    topic_creation_config_def,
    validate_topic_creation,
)
from connect_grpc.herder.auto_restart_policy import auto_restart_errors
from connect_grpc.herder.connector_version import CONNECTOR_VERSION, versioned_connector
from connect_grpc.herder.framework_keys import (
    COMMON_CONFIG,
    CONNECTOR_CLASS,
    EXACTLY_ONCE_SUPPORT,
    OFFSETS_STORAGE_TOPIC,
    REQUESTED,
    REQUIRED,
    SINK_CONFIG,
    SOURCE_CONFIG,
    TASKS_MAX,
    TRANSACTION_BOUNDARY,
    framework_config_def,
    sink_topic_errors,
    source_choice,
    tasks_max,
)
from connect_grpc.kernel.configdef import ConfigDef, ConfigKey, ConfigType
from connect_grpc.kernel.domain import ConfigInfo, ConfigInfos, ConfigValueInfo
from connect_grpc.kernel.errors import (
    FieldViolation,
    InvalidArgumentError,
    NotFoundError,
    UnavailableError,
)
from connect_grpc.pipeline.output_check import unwritable_output_errors
from connect_grpc.pipeline.validation import PipelineValidation, validate_pipeline

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


def patched_config(current: Mapping[str, str], patch: Mapping[str, str | None]) -> dict[str, str]:
    """``current`` with ``patch`` laid over it (KIP-477): a None value removes its key (a key
    that is not there is no error), any other value sets it."""
    merged = dict(current)
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    return merged


#: Keys the control plane itself reads from the stored config (to name, find, size and
#: place a connector, and to find a sink's consumer group for its offsets): config
#: provider references are not allowed in them.
SINK_GROUP_OVERRIDE = "consumer.override.group.id"
LITERAL_KEYS = (
    "name", CONNECTOR_CLASS, TASKS_MAX, OFFSETS_STORAGE_TOPIC, SINK_GROUP_OVERRIDE
)


def _literal_key_error(key: str) -> str:
    return (
        f"{key} must be a literal value: config provider references (${{provider:path:key}}) "
        "are resolved only in the values handed to the connector and its Kafka clients"
    )


class ConfigValidator:
    """Validates connector configs the way Kafka Connect's AbstractHerder (and, for a
    source's exactly-once settings, its DistributedHerder) does.

    Config provider references are resolved first (``transformer``) and the plugin checks
    the resolved values, as in Kafka Connect; a reference that does not resolve is an error
    of its key. The ConfigInfos show the raw values (references, not what they resolved
    to), PASSWORD values as ``[hidden]``, and no resolved value in a message.
    """

    def __init__(
        self,
        plugins: Plugins,
        max_tasks: int,
        exactly_once_source: str = EXACTLY_ONCE_SOURCE_DISABLED,
        transformer: ConfigTransformer | None = None,
        worker_group_id: str | None = None,
        topic_creation_enabled: bool = True,
        worker_converters: Mapping[str, str | None] | None = None,
        override_policy: ClientOverridePolicy | None = None,
    ) -> None:
        """``worker_group_id``: the distributed worker cluster's ``group.id`` (None in
        standalone mode), which no sink connector's consumer group may take.
        ``topic_creation_enabled``: the worker's ``topic.creation.enable``; off, a source's
        ``topic.creation.*`` keys other than ``topic.creation.groups`` are not checked (they
        are ignored, as Kafka Connect ignores them). ``worker_converters``: the worker's
        ``key.converter`` / ``value.converter`` classes, which take the sides a connector
        sets no converter for (a source whose transformations make data they cannot write is
        refused). ``override_policy``: the worker's
        ``connector.client.config.override.policy`` (``All`` when None), which refuses the
        ``*.override.*`` keys it does not allow."""
        self._override_policy = override_policy or ClientOverridePolicy()
        self._override_policy.log_setup()
        self._topic_creation_enabled = topic_creation_enabled
        self._worker_converters = {
            key: value for key, value in (worker_converters or {}).items() if value is not None
        }
        self._plugins = plugins
        self._max_tasks = max_tasks
        self._exactly_once_source = exactly_once_source
        self._transformer = transformer or ConfigTransformer()
        self._worker_group_id = worker_group_id

    def plugin_for(
        self,
        config: Mapping[str, str],
        plugin: str | None = None,
        version_errors: list[str] | None = None,
    ) -> Connector:
        class_name = (plugin or config.get(CONNECTOR_CLASS) or "").strip()
        if not class_name:
            raise InvalidArgumentError.for_field(
                f"config.{CONNECTOR_CLASS}", "connector config contains no connector type"
            )
        if has_references(class_name):
            raise InvalidArgumentError.for_field(
                f"config.{CONNECTOR_CLASS}", _literal_key_error(CONNECTOR_CLASS)
            )
        try:
            return versioned_connector(
                self._plugins, class_name, config, [] if version_errors is None else version_errors
            )
        except NotFoundError as exc:
            raise InvalidArgumentError(
                exc.message, [FieldViolation(f"config.{CONNECTOR_CLASS}", exc.message)]
            ) from None

    def resolved(self, config: Mapping[str, str]) -> dict[str, str]:
        """The config with its provider references resolved, as a task gets it."""
        return self._transformer.resolve(config)

    def validate(self, config: Mapping[str, str], plugin: str | None = None) -> ConfigInfos:
        version_errors: list[str] = []
        connector = self.plugin_for(config, plugin, version_errors)
        resolution = self._transformer.resolve_all(config)
        pipeline = validate_pipeline(resolution.config, self._plugins)
        errors = self._resolved_errors(connector, resolution.config)
        for key, key_errors in [*pipeline.errors.items(), (CONNECTOR_VERSION, version_errors)]:
            errors[key] = [*errors.get(key, []), *key_errors]
        for key, problems in resolution.problems.items():
            errors[key] = problems  # its other errors would be about the unresolved text
        for key in LITERAL_KEYS:
            if has_references(config.get(key)):
                errors[key] = [_literal_key_error(key)]
        return _config_infos(
            qualified_name(type(connector)),
            self._config_def(connector, pipeline, resolution.config),
            config,
            _without_resolved_values(errors, config, resolution.config),
        )

    def _config_def(
        self, connector: Connector, pipeline: PipelineValidation, config: Mapping[str, str]
    ) -> ConfigDef:
        """Kafka Connect's order: the framework's keys (the sink's or the source's among
        them, a source's topic-creation groups' keys last), the keys of each transformation
        and predicate alias, the plugin's keys, then the keys of the converters the config
        sets."""
        framework = framework_config_def(connector, pipeline.framework)
        if isinstance(connector, SourceConnector) and self._topic_creation_enabled:
            framework = framework.merged(topic_creation_config_def(config))
        return (
            framework
            .merged(pipeline.aliases)
            .merged(connector.config_def())
            .merged(pipeline.converters)
        )

    def _resolved_errors(
        self, connector: Connector, config: Mapping[str, str]
    ) -> dict[str, list[str]]:
        """Every key's errors, the framework's and the plugin's, of a resolved config."""
        errors = COMMON_CONFIG.validate(config)
        errors[TASKS_MAX].extend(self._tasks_limit_errors(config, errors[TASKS_MAX]))
        errors.update(auto_restart_errors(config))
        if isinstance(connector, SinkConnector):
            errors.update(SINK_CONFIG.validate(config))
            errors.update(sink_topic_errors(config))
            self._sink_group_errors(config, errors)
        elif isinstance(connector, SourceConnector):
            errors.update(SOURCE_CONFIG.validate(config))
            if self._topic_creation_enabled:
                errors.update(validate_topic_creation(config))
            self._exactly_once_errors(connector, config, errors)
            for key, key_errors in unwritable_output_errors(
                config, self._plugins, self._worker_converters
            ).items():
                errors[key] = [*errors.get(key, []), *key_errors]
        overrides = self._override_policy.errors(config, sink=isinstance(connector, SinkConnector))
        for key, key_errors in overrides.items():
            errors[key] = [*errors.get(key, []), *key_errors]
        for key, key_errors in connector.validate(config).items():
            errors[key] = [*errors.get(key, []), *key_errors]
        return errors

    def _exactly_once_errors(
        self, connector: SourceConnector, config: Mapping[str, str], errors: dict[str, list[str]]
    ) -> None:
        """Adds the errors of a source's exactly-once settings that passed their own checks:
        what the worker's exactly.once.source.support and the plugin's declarations allow."""
        if (
            not errors[EXACTLY_ONCE_SUPPORT]
            and source_choice(config, EXACTLY_ONCE_SUPPORT) == REQUIRED
        ):
            if self._exactly_once_source != EXACTLY_ONCE_SOURCE_ENABLED:
                errors[EXACTLY_ONCE_SUPPORT].append(_WORKER_WITHOUT_EXACTLY_ONCE)
            errors[EXACTLY_ONCE_SUPPORT].extend(_declared_support_errors(connector, config))
        boundary = source_choice(config, TRANSACTION_BOUNDARY)
        if not errors[TRANSACTION_BOUNDARY] and boundary != TransactionBoundary.POLL.value:
            if self._exactly_once_source == EXACTLY_ONCE_SOURCE_DISABLED:
                errors[TRANSACTION_BOUNDARY].append(
                    f"{_WORKER_WITHOUT_EXACTLY_ONCE} Without it a source's records are not "
                    f"written in transactions, so {TRANSACTION_BOUNDARY}={boundary} has nothing "
                    f"to bound; leave it at {TransactionBoundary.POLL.value}."
                )
            if boundary == TransactionBoundary.CONNECTOR.value:
                errors[TRANSACTION_BOUNDARY].extend(_declared_boundary_errors(connector, config))

    def _sink_group_errors(self, config: Mapping[str, str], errors: dict[str, list[str]]) -> None:
        """Adds Kafka Connect's error for a sink whose consumer group is the worker cluster's
        own group: its consumer would join the group that elects the leader. The error is on
        the group override when there is one, else on the name its group derives from."""
        worker_group = self._worker_group_id
        if worker_group is None:
            return
        if SINK_GROUP_OVERRIDE in config:
            if config[SINK_GROUP_OVERRIDE] == worker_group:
                errors.setdefault(SINK_GROUP_OVERRIDE, []).append(
                    f"Consumer group {worker_group} conflicts with Connect worker group "
                    f"{worker_group}"
                )
            return
        name = config.get("name")
        if name is not None and f"connect-{name}" == worker_group:
            errors.setdefault("name", []).append(
                f"Consumer group for sink connector named {name} conflicts with Connect worker "
                f"group {worker_group}"
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
        return refuse_invalid(self.validate(config))


def refuse_invalid(infos: ConfigInfos) -> ConfigInfos:
    """``infos``, unless they have errors: InvalidArgumentError listing every one, as
    ValidateConfig reports them."""
    problems = infos.all_errors()
    if problems:
        lines = "\n".join(f"{key}: {message}" for key, message in problems)
        raise InvalidArgumentError(
            f"Connector configuration is invalid and contains the following "
            f"{len(problems)} error(s):\n{lines}\n{_FIND_THEM_AGAIN}",
            [FieldViolation(f"config.{key}", message) for key, message in problems],
        )
    return infos


#: The last line of a refused create or update: Kafka Connect points to its REST validate
#: endpoint; the gRPC API's counterpart is ValidateConfig.
_FIND_THEM_AGAIN = (
    "You can also find the above list of errors by calling ValidateConfig "
    "(connect.v1.ConnectService/ValidateConfig) with this configuration"
)

_WORKER_WITHOUT_EXACTLY_ONCE = (
    f"This worker does not have exactly-once source support enabled "
    f"({EXACTLY_ONCE_SOURCE_PROPERTY}={EXACTLY_ONCE_SOURCE_ENABLED})."
)


def _declared_support_errors(connector: SourceConnector, config: Mapping[str, str]) -> list[str]:
    try:
        support = connector.exactly_once_support(config)
    except UnavailableError:
        raise  # a Java connector's answer outlived the call's deadline: retry the call
    except Exception as exc:  # a plugin's bug is a validation error, not a failed RPC
        return [_unexpected(exc)]
    if support is ExactlyOnceSupport.SUPPORTED:
        return []
    if support is None:
        return [
            "The connector does not declare whether it supports exactly-once delivery "
            "(its exactly_once_support returns None). Check its documentation; if it does, "
            f"set {EXACTLY_ONCE_SUPPORT}={REQUESTED}, which skips this check."
        ]
    return ["The connector does not support exactly-once semantics with the provided "
            "configuration."]


def _declared_boundary_errors(connector: SourceConnector, config: Mapping[str, str]) -> list[str]:
    try:
        boundaries = connector.can_define_transaction_boundaries(config)
    except UnavailableError:
        raise  # a Java connector's answer outlived the call's deadline: retry the call
    except Exception as exc:  # a plugin's bug is a validation error, not a failed RPC
        return [_unexpected(exc)]
    if boundaries is ConnectorTransactionBoundaries.SUPPORTED:
        return []
    return ["The connector does not support connector-defined transaction boundaries with the "
            "given configuration. Please reconfigure it to use a different transaction "
            "boundary definition."]


def _unexpected(exc: Exception) -> str:
    # The first line only: a Java connector's exception goes on with its stack trace.
    reason = next(iter(str(exc).strip().splitlines()), "")
    return "An unexpected error occurred during validation" + (
        f": {reason}" if reason else f" ({type(exc).__name__})"
    )


def _without_resolved_values(
    errors: Mapping[str, list[str]], raw: Mapping[str, str], resolved: Mapping[str, str]
) -> dict[str, list[str]]:
    """The messages with no value a reference resolved to: in a key's own messages its
    resolved value, where it stands as a word, becomes its raw value (the reference), and
    registered secrets are masked in every message (a plugin's message may quote another
    key's value)."""
    cleaned: dict[str, list[str]] = {}
    for key, messages in errors.items():
        raw_value, value = raw.get(key), resolved.get(key)
        if raw_value is not None and value and value != raw_value:
            quoted = re.compile(rf"(?<![A-Za-z0-9]){re.escape(value)}(?![A-Za-z0-9])")
            template = raw_value.replace("\\", "\\\\")  # a literal replacement
            messages = [quoted.sub(template, message) for message in messages]
        cleaned[key] = [SECRETS.redact(message) for message in messages]
    return cleaned


def _shown_value(key: ConfigKey, config: Mapping[str, str]) -> str | None:
    """What ValidateConfig shows of a defined key's value: a PASSWORD as ``[hidden]``, as
    Kafka Connect does, and anything else raw (references unresolved)."""
    raw = config.get(key.name)
    if raw is not None and key.type is ConfigType.PASSWORD:
        return HIDDEN
    return raw


def _config_infos(
    plugin_name: str,
    config_def: ConfigDef,
    config: Mapping[str, str],
    errors: Mapping[str, list[str]],
) -> ConfigInfos:
    infos: list[ConfigInfo] = []
    for key in config_def.keys.values():
        value = ConfigValueInfo(
            key.name, _shown_value(key, config), tuple(errors.get(key.name, ()))
        )
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
