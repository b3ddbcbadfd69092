"""The pipeline keys of a connector config, checked for ValidateConfig and every create or
change, with Kafka Connect's messages: the framework keys, each transformation's and
predicate's keys (defined and checked in the alias's group) and the keys of the converters
the connector config sets. Keys are read through ``pipeline.config``, as a task reads them.

A key of a plugin's config that the plugin does not define is ignored, as Kafka Connect
ignores it. Beyond Kafka Connect, a plugin whose keys pass is configured once as a task
would configure it, so that a config it refuses is refused now.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import structlog

from connect_grpc.connectors.pipeline_plugins import PluginClassError, PluginKind
from connect_grpc.connectors.plugin_versions import (
    NoMatchingVersionError,
    VersionSpecError,
    version_requirement,
)
from connect_grpc.connectors.plugins import Plugins
from connect_grpc.data.plugins import Converter, HeaderConverter, Predicate, Transformation
from connect_grpc.kernel.configdef import ConfigDef, ConfigKey, ConfigType, Importance, java_trim
from connect_grpc.pipeline.config import (
    aliases,
    configure_converter,
    predicate_keys,
    sub_config,
    transformation_keys,
)
from connect_grpc.pipeline.keys import (
    CONVERTER_KEYS,
    CONVERTER_TYPE,
    KEY_CONVERTER,
    NEGATE,
    PIPELINE_FRAMEWORK,
    PLUGIN_VERSION,
    PLUGIN_VERSION_SUFFIX,
    PREDICATE,
    PREDICATES,
    PREDICATES_GROUP,
    TRANSFORMS,
    TRANSFORMS_GROUP,
)

__all__ = ["PipelineValidation", "validate_pipeline"]

Closeable = Converter | HeaderConverter | Transformation[Any] | Predicate[Any]

_log = structlog.get_logger(__name__)


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
    _version_errors(config, plugins, result)
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


def _version_errors(
    config: Mapping[str, str], plugins: Plugins, result: PipelineValidation
) -> None:
    """Each ``*.plugin.version`` key (KIP-891): a Maven version range, which an installed
    version of the plugin its class key names must be in (Kafka Connect's messages, on the
    version key). An unusable class is its class key's error, not this key's."""
    for key in config:
        if not (match := PLUGIN_VERSION.fullmatch(key)):
            continue
        plugin_key = match.group(1)
        if plugin_key in CONVERTER_KEYS:
            kind, class_key = CONVERTER_KEYS[plugin_key][0], plugin_key
            described, defs = f"the {plugin_key.replace('.', ' ')}", result.converters
        else:
            is_transform = plugin_key.startswith(TRANSFORMS + ".")
            kind = PluginKind.TRANSFORMATION if is_transform else PluginKind.PREDICATE
            class_key, defs = f"{plugin_key}.type", result.aliases
            alias = plugin_key.split(".", 1)[1]
            described = f"the '{alias}' {kind.interface.lower()}"
        defs.define(ConfigKey(key, ConfigType.STRING, f"Version of {described}.",
                              default=None, importance=Importance.LOW))
        result.errors.setdefault(key, [])
        try:
            version_requirement(config[key])
        except VersionSpecError as exc:
            result.add(key, str(exc))
            continue
        raw = config.get(class_key)
        if raw is None:
            continue
        try:
            plugins.pipeline.plugin_class(kind, raw, config[key])
        except NoMatchingVersionError as exc:
            result.add(key, exc.message)
        except PluginClassError:
            pass


def _checked_version(
    config: Mapping[str, str], prefix: str, result: PipelineValidation
) -> str | None:
    """The version a plugin's ``<prefix>plugin.version`` asks for, when that key has no
    error (the latest otherwise, to check the plugin's own keys against)."""
    key = prefix + PLUGIN_VERSION_SUFFIX
    return None if result.errors.get(key) else config.get(key)


def _duplicate_alias_errors(
    config: Mapping[str, str], key: str, result: PipelineValidation
) -> None:
    listed = aliases(config, key)
    if len(listed) > len(set(listed)):
        result.add(
            key,
            f"Invalid value [{', '.join(listed)}] for configuration {key}: "
            "Duplicate alias provided.",
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
            key,
            f"Invalid value {raw} for configuration {key}: Unknown configuration "
            f"'{PREDICATES}.{java_trim(raw)}.type' (the predicate alias {java_trim(raw)} is not "
            f"listed in {PREDICATES})",
        )


def _prefixed(key: ConfigKey, prefix: str, **changes: Any) -> ConfigKey:
    return dataclasses.replace(key, name=prefix + key.name, **changes)


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
            (TRANSFORMS, TRANSFORMS_GROUP)
            if kind is PluginKind.TRANSFORMATION
            else (PREDICATES, PREDICATES_GROUP)
        )
        self._prefix = f"{list_key}.{alias}."
        self._group = f"{group}: {alias}"
        self._type_key = f"{self._prefix}type"

    def run(self) -> None:
        noun = self._kind.interface.lower()
        self._result.aliases.define(
            ConfigKey(
                self._type_key,
                ConfigType.CLASS,
                f"Class for the '{self._alias}' {noun}.",
                importance=Importance.HIGH,
                group=self._group,
                order_in_group=0,
                display_name=f"{self._kind.interface} type for {self._alias}",
            )
        )
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
                f'Missing required configuration "{self._type_key}" which has no default value.',
            )
        else:
            try:
                cls = self._plugins.pipeline.plugin_class(
                    self._kind, raw, _checked_version(self._config, self._prefix, self._result)
                )
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
            embedded.define(_prefixed(key, self._prefix, group=self._group, order_in_group=order))
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
        keys = (
            transformation_keys(self._config, self._alias)
            if self._kind is PluginKind.TRANSFORMATION
            else predicate_keys(self._config, self._alias)
        )
        sub = keys.own
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
        ConfigKey(
            PREDICATE,
            ConfigType.STRING,
            "The alias of a predicate used to determine whether to apply this transformation.",
            default=None,
        ),
        ConfigKey(
            NEGATE,
            ConfigType.BOOLEAN,
            "Whether the configured predicate should be negated.",
            default=False,
        ),
    ]


class _ConverterCheck:
    """A converter the connector config sets: its class, then its own keys (prefix removed
    for the check, as Kafka Connect does, then shown and reported under the prefix)."""

    def __init__(
        self,
        config: Mapping[str, str],
        plugins: Plugins,
        class_key: str,
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
            cls = self._plugins.pipeline.plugin_class(
                self._kind, raw, _checked_version(self._config, self._prefix, self._result)
            )
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
        sub = sub_config(self._config, self._prefix)
        sub.setdefault(CONVERTER_TYPE, self._converter_type)
        found = False
        for name, messages in own.validate(sub).items():
            self._result.add(self._prefix + name, *messages)
            found = found or bool(messages)
        for key in own.keys.values():
            self._result.converters.define(_prefixed(key, self._prefix))
        return found

    def _probe(self, converter: Converter | HeaderConverter) -> None:
        sub = sub_config(self._config, self._prefix)
        try:
            configure_converter(converter, self._kind, sub, self._class_key == KEY_CONVERTER)
        except Exception as exc:
            self._result.add(
                self._class_key, f"The {self._class_key} refused its configuration: {exc}"
            )


def _close_quietly(plugin: Closeable) -> None:
    try:
        plugin.close()
    except Exception as exc:  # closing a probe must not turn into a validation error
        _log.warning("plugin_close_failed", plugin=type(plugin).__qualname__, error=repr(exc))
