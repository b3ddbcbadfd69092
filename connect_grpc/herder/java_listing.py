"""Kafka Connect's REST JSON of the Java plugins of ``plugin.path`` (the JVM catalogue's
answers, ``herder.java_plugins.JavaCatalogue``) in the API's terms: a listing's entries as
the domain's ``PluginDesc``, merged with the Python plugins in Kafka Connect's order, the
connectors' aliases, and a validation's ``ConfigInfos``, exactly as a Python plugin's are
shown."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from connect_grpc.config_providers.redaction import HIDDEN, SECRETS
from connect_grpc.connectors.pipeline_plugins import PluginKind
from connect_grpc.kernel.domain import (
    ConfigInfo,
    ConfigInfos,
    ConfigKeyInfo,
    ConfigValueInfo,
    ConnectorType,
    PluginDesc,
)
from connect_grpc.kernel.errors import ConnectError, InvalidArgumentError

#: Kafka's type name of a config provider; the API lists them after every other type.
CONFIG_PROVIDER = "configprovider"
#: Where Kafka's scan found a plugin of the runtime's own classpath (``JsonConverter``,
#: Kafka's transformations): the JVM host's, not the user's ``plugin.path``; not listed.
CLASSPATH = "classpath"
#: Kafka's REST API answers its ``BadRequestException`` with 400: a bad request here too.
_BAD_REQUEST = "org.apache.kafka.connect.runtime.rest.errors.BadRequestException"

CONNECTOR_TYPES = {"source": ConnectorType.SOURCE, "sink": ConnectorType.SINK}
#: Kafka Connect's order of the connectors in ``GET /connector-plugins``: sinks, then sources.
_CONNECTOR_ORDER = {ConnectorType.SINK: 0, ConnectorType.SOURCE: 1, ConnectorType.UNKNOWN: 2}
#: Kafka Connect's order of the plugin types in a listing after the connectors.
_TYPE_ORDER = {kind.value: order for order, kind in enumerate(PluginKind)} | {
    CONFIG_PROVIDER: len(PluginKind)
}


def merge_listing(
    python: Sequence[PluginDesc], java: Sequence[PluginDesc], connectors: bool
) -> list[PluginDesc]:
    """Python and Java plugins of one part of a listing in Kafka Connect's order: by type
    (sinks then sources; or transformations, predicates, converters, header converters, then
    config providers), then by class name; a Python plugin before a Java one of its name.

    A Java connector's class name is no longer a Python connector's alias (Kafka's names of
    the FileStream built-ins, once Kafka's jar is there): it designates the Java class."""
    if connectors:
        java_names = {plugin.class_name for plugin in java}
        python = [
            dataclasses.replace(p, aliases=tuple(a for a in p.aliases if a not in java_names))
            if java_names.intersection(p.aliases) else p
            for p in python
        ]
        return sorted(
            [*python, *java], key=lambda p: (_CONNECTOR_ORDER[p.type], p.class_name)
        )
    return sorted(
        [*python, *java],
        key=lambda p: (_TYPE_ORDER.get(p.plugin_type, len(_TYPE_ORDER)), p.class_name),
    )


def plugin_path_entries(listing: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [p for p in listing.get("plugins") or () if p.get("location") != CLASSPATH]


def _simple_aliases(class_name: str) -> set[str]:
    """Kafka Connect's aliases of a connector: its simple name, and that without
    ``Connector``."""
    simple = class_name.rsplit(".", 1)[-1]
    aliases = {simple}
    if simple.endswith("Connector") and simple != "Connector":
        aliases.add(simple.removesuffix("Connector"))
    return aliases


def connector_aliases(listing: Mapping[str, Any]) -> dict[str, set[str]]:
    """Each Java connector's aliases that no other Java connector claims (Kafka drops an
    ambiguous alias too)."""
    classes = {p["class"] for p in plugin_path_entries(listing) if p["type"] in CONNECTOR_TYPES}
    claims: dict[str, set[str]] = {}
    for class_name in classes:
        for alias in _simple_aliases(class_name):
            claims.setdefault(alias, set()).add(class_name)
    aliases: dict[str, set[str]] = {class_name: set() for class_name in classes}
    for alias, owners in claims.items():
        if len(owners) == 1:
            aliases[next(iter(owners))].add(alias)
    return aliases


def connector_names(listing: Mapping[str, Any]) -> dict[str, str]:
    """Every name of a Java connector (its class name and its aliases) to its class."""
    names: dict[str, str] = {}
    for class_name, aliases in connector_aliases(listing).items():
        names.update(dict.fromkeys(aliases, class_name))
        names[class_name] = class_name
    return names


def _text(value: Any, default: str = "") -> str:
    return default if value is None else str(value)


def config_key_from_kafka(key: Mapping[str, Any]) -> ConfigKeyInfo:
    """Kafka's ``ConfigKeyInfo`` JSON as the domain's."""
    default = key.get("default_value")
    return ConfigKeyInfo(
        name=_text(key.get("name")),
        type=_text(key.get("type")),
        required=bool(key.get("required")),
        default_value=None if default is None else str(default),
        importance=_text(key.get("importance")),
        documentation=_text(key.get("documentation")),
        group=_text(key.get("group")),
        order_in_group=int(key.get("order_in_group") or 0),
        width=_text(key.get("width"), "NONE"),
        display_name=_text(key.get("display_name")),
        dependents=tuple(str(d) for d in key.get("dependents") or ()),
    )


def plugin_desc(
    plugin: Mapping[str, Any], aliases: Mapping[str, set[str]], include_config_definitions: bool
) -> PluginDesc:
    kind = str(plugin["type"])
    definitions = (
        tuple(config_key_from_kafka(key) for key in plugin.get("config") or ())
        if include_config_definitions
        else ()
    )
    return PluginDesc(
        class_name=str(plugin["class"]),
        type=CONNECTOR_TYPES.get(kind, ConnectorType.UNKNOWN),
        version=_text(plugin.get("version")),
        aliases=tuple(sorted(aliases.get(plugin["class"], ()))) if kind in CONNECTOR_TYPES
        else (),
        config_definitions=definitions,
        plugin_type=kind,
    )


def config_infos_from_kafka(body: Mapping[str, Any], raw: Mapping[str, str]) -> ConfigInfos:
    """Kafka's ``ConfigInfos`` JSON as the domain's, values shown as the user gave them: a
    PASSWORD as ``[hidden]``, a config provider reference unresolved."""
    configs: list[ConfigInfo] = []
    for entry in body.get("configs") or ():
        definition_json = entry.get("definition")
        definition = None if definition_json is None else config_key_from_kafka(definition_json)
        # Kafka answers a key its validation gave no value for with a null value.
        value = entry.get("value") or {}
        name = _text(value.get("name")) or (definition.name if definition is not None else "")
        shown = value.get("value")
        if definition is not None and definition.type == "PASSWORD":
            shown = HIDDEN if shown is not None or name in raw else None
        elif name in raw:
            shown = raw[name]
        configs.append(
            ConfigInfo(
                definition,
                ConfigValueInfo(
                    name=name,
                    value=None if shown is None else str(shown),
                    errors=tuple(str(e) for e in value.get("errors") or ()),
                    recommended_values=tuple(
                        str(v) for v in value.get("recommended_values") or ()
                    ),
                    visible=bool(value.get("visible", True)),
                ),
            )
        )
    return ConfigInfos(
        name=_text(body.get("name")),
        error_count=sum(len(c.value.errors) for c in configs),
        groups=tuple(str(g) for g in body.get("groups") or ()),
        configs=tuple(configs),
    )


def validation_error(java_class: str, error: Mapping[str, Any]) -> ConnectError:
    """What Kafka's validation failed with outright, as its REST API would answer it: a bad
    request (400) as INVALID_ARGUMENT, anything else as an error of the plugin."""
    message = SECRETS.redact(_text(error.get("message"), "no message"))
    cause = error.get("cause")
    detail = f"{message} (caused by {SECRETS.redact(str(cause))})" if cause else message
    if error.get("class") == _BAD_REQUEST:
        return InvalidArgumentError(detail)
    return ConnectError(
        f"Kafka Connect's validation of the Java connector {java_class} failed: "
        f"{error.get('class')}: {detail}"
    )
