"""The record pipeline's connector config keys, as Kafka Connect's ConnectorConfig and
SinkConnectorConfig define them, and their validation for ValidateConfig and Create.

Framework keys: ``key.converter``, ``value.converter``, ``header.converter``, ``transforms``,
``predicates``, ``errors.*`` and the ``errors.deadletterqueue.*`` keys (accepted on sources
too: a source-side dead-letter queue goes beyond Kafka Connect). Dynamic keys, added as
Kafka Connect's ``ConnectorConfig.enrich`` adds them: for each alias ``a`` of ``transforms``,
``transforms.a.type``, ``transforms.a.predicate``, ``transforms.a.negate`` and the
transformation's own keys prefixed with ``transforms.a.``, all in the group
``Transforms: a``; the same for ``predicates``; and, when the connector config sets a
converter class, that converter's keys prefixed with ``key.converter.`` (etc.).

A key of a plugin's config that the plugin does not define is ignored, as Kafka Connect
ignores it. Kafka Connect 4.1's ``*.plugin.version`` keys (KIP-891) are refused: this worker
has one version of each plugin.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast

import structlog

from connect_grpc.configdef import (
    ConfigDef,
    ConfigKey,
    ConfigType,
    Importance,
    define_all,
    java_trim,
    one_of,
    parse_value,
    topic_name_error,
)
from connect_grpc.connectors.pipeline_plugins import PluginClassError, PluginKind
from connect_grpc.connectors.plugins import Plugins
from connect_grpc.data.plugins import Converter, HeaderConverter, Predicate, Transformation

Closeable = Converter | HeaderConverter | Transformation[Any] | Predicate[Any]

_log = structlog.get_logger(__name__)

KEY_CONVERTER = "key.converter"
VALUE_CONVERTER = "value.converter"
HEADER_CONVERTER = "header.converter"
TRANSFORMS = "transforms"
PREDICATES = "predicates"
ERRORS_RETRY_TIMEOUT = "errors.retry.timeout"
ERRORS_RETRY_DELAY_MAX_MS = "errors.retry.delay.max.ms"
ERRORS_TOLERANCE = "errors.tolerance"
ERRORS_LOG_ENABLE = "errors.log.enable"
ERRORS_LOG_INCLUDE_MESSAGES = "errors.log.include.messages"
DLQ_TOPIC_NAME = "errors.deadletterqueue.topic.name"
DLQ_TOPIC_REPLICATION_FACTOR = "errors.deadletterqueue.topic.replication.factor"
DLQ_CONTEXT_HEADERS_ENABLE = "errors.deadletterqueue.context.headers.enable"
PREDICATE = "predicate"
NEGATE = "negate"
TOLERANCE_NONE = "none"
TOLERANCE_ALL = "all"
CONVERTER_TYPE = "converter.type"

COMMON_GROUP = "Common"
TRANSFORMS_GROUP = "Transforms"
PREDICATES_GROUP = "Predicates"
ERROR_GROUP = "Error Handling"

#: The converter class keys, in the order Kafka Connect validates them, with the plugin kind
#: and the ``converter.type`` each converter is configured as.
CONVERTER_KEYS: dict[str, tuple[PluginKind, str]] = {
    HEADER_CONVERTER: (PluginKind.HEADER_CONVERTER, "header"),
    KEY_CONVERTER: (PluginKind.CONVERTER, "key"),
    VALUE_CONVERTER: (PluginKind.CONVERTER, "value"),
}


def _converter_doc(side: str) -> str:
    return (
        f"The converter of record {side}s between Connect data and the bytes in Kafka: a Kafka "
        "Connect class name, an alias, a Python path or an entry point. When unset, the "
        "worker's; when neither sets one, the bytes pass through unchanged. With it set, "
        f"only this config's {side}.converter.* keys configure it (the worker's are not "
        "merged)."
    )


PIPELINE_CONFIG = define_all(
    [
        ConfigKey(KEY_CONVERTER, ConfigType.CLASS, _converter_doc("key"), default=None,
                  importance=Importance.LOW, group=COMMON_GROUP, order_in_group=5,
                  display_name="Key converter class"),
        ConfigKey(VALUE_CONVERTER, ConfigType.CLASS, _converter_doc("value"), default=None,
                  importance=Importance.LOW, group=COMMON_GROUP, order_in_group=6,
                  display_name="Value converter class"),
        ConfigKey(HEADER_CONVERTER, ConfigType.CLASS,
                  "The HeaderConverter of header values. When unset, the worker's; when "
                  "neither sets one, SimpleHeaderConverter for a connector with a converter or "
                  "a transformation, and raw header bytes for one with neither.",
                  default=None, importance=Importance.LOW, group=COMMON_GROUP,
                  order_in_group=7, display_name="Header converter class"),
        ConfigKey(TRANSFORMS, ConfigType.LIST,
                  "Aliases of the transformations applied to each record, in order.",
                  default=[], importance=Importance.LOW, group=TRANSFORMS_GROUP,
                  order_in_group=8, display_name="Transforms"),
        ConfigKey(PREDICATES, ConfigType.LIST,
                  "Aliases of the predicates the transformations refer to.", default=[],
                  importance=Importance.LOW, group=PREDICATES_GROUP, order_in_group=9,
                  display_name="Predicates"),
        ConfigKey(ERRORS_RETRY_TIMEOUT, ConfigType.LONG,
                  "How long, in milliseconds, a failed conversion or transformation is "
                  "retried; 0 (the default) retries nothing, -1 retries forever.", default=0,
                  group=ERROR_GROUP, order_in_group=1, display_name="Retry Timeout for Errors"),
        ConfigKey(ERRORS_RETRY_DELAY_MAX_MS, ConfigType.LONG,
                  "The longest wait, in milliseconds, between two retries.", default=60000,
                  group=ERROR_GROUP, order_in_group=2,
                  display_name="Maximum Delay Between Retries for Errors"),
        ConfigKey(ERRORS_TOLERANCE, ConfigType.STRING,
                  f"{TOLERANCE_NONE}: a record's failed conversion or transformation fails "
                  f"the task; {TOLERANCE_ALL}: the record is skipped.", default=TOLERANCE_NONE,
                  validator=one_of(TOLERANCE_NONE, TOLERANCE_ALL), group=ERROR_GROUP,
                  order_in_group=3, display_name="Error Tolerance"),
        ConfigKey(ERRORS_LOG_ENABLE, ConfigType.BOOLEAN,
                  "Whether each error, with the failed operation, is written to the worker's "
                  "log (by default only errors that are not tolerated are).", default=False,
                  group=ERROR_GROUP, order_in_group=4, display_name="Log Errors"),
        ConfigKey(ERRORS_LOG_INCLUDE_MESSAGES, ConfigType.BOOLEAN,
                  "Whether that log includes the record's key, value and headers (by default "
                  "only its topic, partition and offset).", default=False, group=ERROR_GROUP,
                  order_in_group=5, display_name="Log Error Details"),
    ]
)


def _dlq_topic_error(value: object) -> str | None:
    text = "" if value is None else str(value)
    return topic_name_error(text) if text else None


DLQ_CONFIG = define_all(
    [
        ConfigKey(DLQ_TOPIC_NAME, ConfigType.STRING,
                  "The dead-letter-queue topic: where the records that fail conversion or "
                  "transformation (and a sink task's errant records) are written. Blank (the "
                  "default): none. On a source connector too (beyond Kafka Connect).",
                  default="", validator=_dlq_topic_error, group=ERROR_GROUP, order_in_group=6,
                  display_name="Dead Letter Queue Topic Name"),
        ConfigKey(DLQ_TOPIC_REPLICATION_FACTOR, ConfigType.SHORT,
                  "The replication factor of the dead-letter-queue topic when the worker "
                  "creates it.", default=3, group=ERROR_GROUP, order_in_group=7,
                  display_name="Dead Letter Queue Topic Replication Factor"),
        ConfigKey(DLQ_CONTEXT_HEADERS_ENABLE, ConfigType.BOOLEAN,
                  "Whether the records in the dead-letter queue carry the error's context in "
                  "headers named __connect.errors.*.", default=False, group=ERROR_GROUP,
                  order_in_group=8, display_name="Enable Error Context Headers"),
    ]
)

#: Kafka Connect 4.1's multi-version plugin keys (KIP-891), which this worker refuses.
_PLUGIN_VERSION = re.compile(
    r"(?:connector|key\.converter|value\.converter|header\.converter"
    r"|transforms\.[^.]+|predicates\.[^.]+)\.plugin\.version"
)


def plugin_version_error(key: str) -> str:
    return (
        f"{key} is not supported: connect-grpc has a single installed version of each plugin "
        "(Kafka Connect's multi-version plugins, KIP-891, are not implemented); remove it"
    )


def aliases(config: Mapping[str, str], key: str) -> list[str]:
    """The parsed alias list of ``transforms`` or ``predicates`` (empty when unset)."""
    raw = config.get(key)
    return [] if raw is None else list(parse_value(PIPELINE_CONFIG.keys[key], raw))

#: The fixed pipeline keys of every connector config (converters, transformations,
#: predicates, error handling, dead-letter queue).
PIPELINE_FRAMEWORK = PIPELINE_CONFIG.merged(DLQ_CONFIG)


@dataclass
class PipelineValidation:
    """The pipeline keys of one connector config, defined and checked.

    ``framework``: the fixed keys; ``aliases``: the keys of each transformation and
    predicate alias; ``converters``: the keys of the converters the connector config sets.
    ``errors``: every key's errors (empty lists for valid keys).
    """

    framework: ConfigDef
    aliases: ConfigDef = field(default_factory=ConfigDef)
    converters: ConfigDef = field(default_factory=ConfigDef)
    errors: dict[str, list[str]] = field(default_factory=dict)

    def add(self, key: str, *messages: str) -> None:
        self.errors.setdefault(key, []).extend(messages)


def validate_pipeline(config: Mapping[str, str], plugins: Plugins) -> PipelineValidation:
    """Defines and validates the pipeline keys of a (resolved) connector config."""
    framework = PIPELINE_FRAMEWORK
    result = PipelineValidation(framework, errors=framework.validate(config))
    for key in config:
        if _PLUGIN_VERSION.fullmatch(key):
            result.add(key, plugin_version_error(key))
    for list_key in (TRANSFORMS, PREDICATES):
        if not result.errors[list_key]:
            _duplicate_alias_errors(config, list_key, result)
    for class_key in CONVERTER_KEYS:
        _ConverterCheck(config, plugins, class_key, result).run()
    transform_aliases = _unique_aliases(config, TRANSFORMS)
    predicate_aliases = _unique_aliases(config, PREDICATES)
    for alias in transform_aliases:
        _AliasCheck(config, plugins, PluginKind.TRANSFORMATION, alias, result).run()
        _predicate_reference_errors(config, alias, predicate_aliases, result)
    for alias in predicate_aliases:
        _AliasCheck(config, plugins, PluginKind.PREDICATE, alias, result).run()
    return result


def _duplicate_alias_errors(
    config: Mapping[str, str], key: str, result: PipelineValidation
) -> None:
    listed = aliases(config, key)
    if len(listed) > len(set(listed)):
        result.add(
            key, f"Invalid value [{', '.join(listed)}] for configuration {key}: "
            "Duplicate alias provided."
        )


def _unique_aliases(config: Mapping[str, str], key: str) -> list[str]:
    return list(dict.fromkeys(aliases(config, key)))


def _predicate_reference_errors(
    config: Mapping[str, str], alias: str, defined: list[str], result: PipelineValidation
) -> None:
    """A transformation's predicate must be one of ``predicates`` (Kafka Connect finds out
    only when the task starts, with this message)."""
    key = f"{TRANSFORMS}.{alias}.{PREDICATE}"
    raw = config.get(key)
    if raw is not None and java_trim(raw) not in defined:
        result.add(
            key, f"Invalid value {raw} for configuration {key}: Unknown configuration "
            f"'{PREDICATES}.{java_trim(raw)}.type' (the predicate alias {java_trim(raw)} is not "
            f"listed in {PREDICATES})"
        )


def _prefixed(key: ConfigKey, prefix: str, **changes: Any) -> ConfigKey:
    return dataclasses.replace(key, name=prefix + key.name, **changes)


def _sub_config(config: Mapping[str, str], prefix: str) -> dict[str, str]:
    """The keys under ``prefix``, with it removed (Kafka's ``originalsWithPrefix``)."""
    return {k[len(prefix):]: v for k, v in config.items() if k.startswith(prefix) and k != prefix}


class _AliasCheck:
    """``transforms.<a>.*`` or ``predicates.<p>.*``: the type key, then (when the class is
    usable) the implicit keys and the plugin's own, prefixed, in the alias's group."""

    def __init__(
        self,
        config: Mapping[str, str],
        plugins: Plugins,
        kind: PluginKind,
        alias: str,
        result: PipelineValidation,
    ) -> None:
        self._config = config
        self._plugins = plugins
        self._kind = kind
        self._alias = alias
        self._result = result
        list_key, group = (
            (TRANSFORMS, TRANSFORMS_GROUP) if kind is PluginKind.TRANSFORMATION
            else (PREDICATES, PREDICATES_GROUP)
        )
        self._prefix = f"{list_key}.{alias}."
        self._group = f"{group}: {alias}"
        self._type_key = f"{self._prefix}type"

    def run(self) -> None:
        noun = self._kind.interface.lower()
        self._result.aliases.define(ConfigKey(
            self._type_key, ConfigType.CLASS, f"Class for the '{self._alias}' {noun}.",
            importance=Importance.HIGH, group=self._group, order_in_group=0,
            display_name=f"{self._kind.interface} type for {self._alias}",
        ))
        self._result.errors.setdefault(self._type_key, [])
        plugin = self._plugin()
        if plugin is None:
            return
        own = self._own_keys(plugin)
        if own is not None and not self._validate(own):
            # only a configured plugin is closed: Kafka Connect never closes the instance it
            # asks for its ConfigDef, so a plugin need not support close before configure
            try:
                self._probe(plugin)
            finally:
                _close_quietly(plugin)

    def _plugin(self) -> Transformation[Any] | Predicate[Any] | None:
        """The plugin instance the type key names; None (its errors added) when there is
        none. Kafka Connect's order: the class lookup's error, then the implicit keys'
        check, then the class's own checks."""
        raw = self._config.get(self._type_key)
        cls: type | None = None
        unusable = ""
        if raw is None:
            self._result.add(
                self._type_key,
                f"Missing required configuration \"{self._type_key}\" which has no default value.",
            )
        else:
            try:
                cls = self._plugins.pipeline.plugin_class(self._kind, raw)
            except PluginClassError as exc:
                if exc.about_value:
                    self._result.add(self._type_key, exc.for_key(self._type_key, raw))
                unusable = "" if exc.about_value else exc.message
        # Kafka Connect's type validator checks negate first and stops there; the plugin's
        # keys are still defined and checked when its class is usable
        negate_error = self._negate_without_predicate()
        if unusable and not negate_error:
            self._result.add(self._type_key, unusable)
        if cls is None:
            return None
        try:
            plugin: Transformation[Any] | Predicate[Any] = cls()
        except Exception as exc:
            if not negate_error:
                self._result.add(
                    self._type_key,
                    f"Invalid value class {cls.__module__}.{cls.__qualname__} for "
                    f"configuration {self._type_key}: Error getting config definition from "
                    f"{self._kind.interface}: {exc}",
                )
            return None
        return plugin

    def _negate_without_predicate(self) -> bool:
        if self._kind is not PluginKind.TRANSFORMATION:
            return False
        negate, predicate = self._prefix + NEGATE, self._prefix + PREDICATE
        if negate in self._config and predicate not in self._config:
            self._result.add(
                self._type_key,
                f"Config '{negate}' was provided but there is no config '{predicate}' "
                "defining a predicate to be negated.",
            )
            return True
        return False

    def _own_keys(self, plugin: Transformation[Any] | Predicate[Any]) -> ConfigDef | None:
        """The implicit keys and the plugin's, prefixed, in the alias's group."""
        own: ConfigDef | None = plugin.config_def()
        if own is None:
            self._result.add(
                self._type_key,
                f"{type(plugin).__module__}.{type(plugin).__qualname__}.config_def() must "
                "return a ConfigDef that is not None.",
            )
            return None
        keys = _implicit_keys() if self._kind is PluginKind.TRANSFORMATION else []
        for key in own.keys.values():
            if self._kind is PluginKind.TRANSFORMATION and key.name in (PREDICATE, NEGATE):
                _log.warning("transformation_key_masked", key=key.name, alias=self._alias)
                continue
            keys.append(key)
        embedded = ConfigDef()
        for order, key in enumerate(keys, start=1):
            embedded.define(
                _prefixed(key, self._prefix, group=self._group, order_in_group=order)
            )
            self._result.aliases.define(embedded.keys[self._prefix + key.name])
        return embedded

    def _validate(self, embedded: ConfigDef) -> bool:
        """Validates the prefixed keys; True when any has an error."""
        found = False
        for key, messages in embedded.validate(self._config).items():
            self._result.add(key, *messages)
            found = found or bool(messages)
        return found

    def _probe(self, plugin: Transformation[Any] | Predicate[Any]) -> None:
        """Configures the plugin as a task would (beyond Kafka Connect, whose validation
        stops at the ConfigDef), so a config the plugin refuses is refused now."""
        sub = _sub_config(self._config, self._prefix)
        if self._kind is PluginKind.TRANSFORMATION:
            sub.pop(PREDICATE, None)
            sub.pop(NEGATE, None)
        try:
            plugin.configure(sub)
        except Exception as exc:
            self._result.add(
                self._type_key,
                f"The {self._kind.interface.lower()} '{self._alias}' refused its "
                f"configuration: {exc}",
            )


def _implicit_keys() -> list[ConfigKey]:
    return [
        ConfigKey(PREDICATE, ConfigType.STRING,
                  "The alias of a predicate used to determine whether to apply this "
                  "transformation.", default=None),
        ConfigKey(NEGATE, ConfigType.BOOLEAN,
                  "Whether the configured predicate should be negated.", default=False),
    ]


class _ConverterCheck:
    """A converter the connector config sets: its class, then its own keys (prefix removed
    for the check, as Kafka Connect does, then shown and reported under the prefix)."""

    def __init__(
        self, config: Mapping[str, str], plugins: Plugins, class_key: str,
        result: PipelineValidation,
    ) -> None:
        self._config = config
        self._plugins = plugins
        self._class_key = class_key
        self._kind, self._converter_type = CONVERTER_KEYS[class_key]
        self._result = result
        self._prefix = class_key + "."

    def run(self) -> None:
        raw = self._config.get(self._class_key)
        if raw is None or self._result.errors.get(self._class_key):
            return  # the worker's converter: its keys are the worker's business
        try:
            cls = self._plugins.pipeline.plugin_class(self._kind, raw)
        except PluginClassError as exc:
            self._result.add(self._class_key, exc.for_key(self._class_key, raw))
            return
        try:
            converter: Converter | HeaderConverter = cls()
        except Exception as exc:
            self._result.add(
                self._class_key,
                f"Invalid value {cls.__module__}.{cls.__qualname__} for configuration "
                f"{self._class_key}: Could not instantiate class: {exc}",
            )
            return
        try:
            if not self._validate(converter.config_def()):
                self._probe(converter)
        finally:
            _close_quietly(converter)

    def _validate(self, own: ConfigDef) -> bool:
        sub = _sub_config(self._config, self._prefix)
        sub.setdefault(CONVERTER_TYPE, self._converter_type)
        found = False
        for name, messages in own.validate(sub).items():
            self._result.add(self._prefix + name, *messages)
            found = found or bool(messages)
        for key in own.keys.values():
            self._result.converters.define(_prefixed(key, self._prefix))
        return found

    def _probe(self, converter: Converter | HeaderConverter) -> None:
        sub = _sub_config(self._config, self._prefix)
        try:
            configure_converter(converter, self._kind, sub, self._class_key == KEY_CONVERTER)
        except Exception as exc:
            self._result.add(
                self._class_key, f"The {self._class_key} refused its configuration: {exc}"
            )


def configure_converter(
    converter: Converter | HeaderConverter, kind: PluginKind, sub: Mapping[str, str], is_key: bool
) -> None:
    """Configures a converter as Kafka Connect does: a key or value converter with its keys
    and ``is_key`` (it adds ``converter.type`` itself), a header converter with its keys and
    ``converter.type=header``. A class of both kinds is configured as the kind it is used as."""
    if kind is PluginKind.HEADER_CONVERTER:
        cast(HeaderConverter, converter).configure({**sub, CONVERTER_TYPE: "header"})
    else:
        cast(Converter, converter).configure(sub, is_key)


def _close_quietly(plugin: Closeable) -> None:
    try:
        plugin.close()
    except Exception as exc:  # closing a probe must not turn into a validation error
        _log.warning("plugin_close_failed", plugin=type(plugin).__qualname__, error=repr(exc))
