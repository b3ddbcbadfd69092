"""The record pipeline's connector config keys, as Kafka Connect's ConnectorConfig and
SinkConnectorConfig define them: their names and definitions, nothing else. Parsing them is
``pipeline.config``'s, checking them ``pipeline.validation``'s.

Framework keys: ``key.converter``, ``value.converter``, ``header.converter``, ``transforms``,
``predicates``, ``errors.*`` and the ``errors.deadletterqueue.*`` keys (accepted on sources
too: a source-side dead-letter queue goes beyond Kafka Connect). Dynamic keys, added as
Kafka Connect's ``ConnectorConfig.enrich`` adds them: for each alias ``a`` of ``transforms``,
``transforms.a.type``, ``transforms.a.predicate``, ``transforms.a.negate`` and the
transformation's own keys prefixed with ``transforms.a.``, all in the group
``Transforms: a``; the same for ``predicates``; and, when the connector config sets a
converter class, that converter's keys prefixed with ``key.converter.`` (etc.).

Kafka Connect 4.1's ``*.plugin.version`` keys (KIP-891) choose a version of a plugin among
those installed (:mod:`connect_grpc.connectors.plugin_versions`).
"""

from __future__ import annotations

import re

from connect_grpc.connectors.pipeline_plugins import PluginKind
from connect_grpc.kernel.configdef import (
    ConfigKey,
    ConfigType,
    Importance,
    define_all,
    one_of,
    topic_name_error,
)

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


def _converter_key(side: str, order_in_group: int) -> ConfigKey:
    """``key.converter`` or ``value.converter``: the same definition but for the side."""
    return ConfigKey(
        f"{side}.converter",
        ConfigType.CLASS,
        f"The converter of record {side}s between Connect data and the bytes in Kafka: a Kafka "
        "Connect class name, an alias, a Python path or an entry point. When unset, the "
        "worker's; when neither sets one, the bytes pass through unchanged. With it set, "
        f"only this config's {side}.converter.* keys configure it (the worker's are not "
        "merged).",
        default=None,
        importance=Importance.LOW,
        group=COMMON_GROUP,
        order_in_group=order_in_group,
        display_name=f"{side.capitalize()} converter class",
    )


PIPELINE_CONFIG = define_all(
    [
        _converter_key("key", 5),
        _converter_key("value", 6),
        ConfigKey(
            HEADER_CONVERTER,
            ConfigType.CLASS,
            "The HeaderConverter of header values. When unset, the worker's; when "
            "neither sets one, SimpleHeaderConverter for a connector with a converter or "
            "a transformation, and raw header bytes for one with neither.",
            default=None,
            importance=Importance.LOW,
            group=COMMON_GROUP,
            order_in_group=7,
            display_name="Header converter class",
        ),
        ConfigKey(
            TRANSFORMS,
            ConfigType.LIST,
            "Aliases of the transformations applied to each record, in order.",
            default=[],
            importance=Importance.LOW,
            group=TRANSFORMS_GROUP,
            order_in_group=8,
            display_name="Transforms",
        ),
        ConfigKey(
            PREDICATES,
            ConfigType.LIST,
            "Aliases of the predicates the transformations refer to.",
            default=[],
            importance=Importance.LOW,
            group=PREDICATES_GROUP,
            order_in_group=9,
            display_name="Predicates",
        ),
        ConfigKey(
            ERRORS_RETRY_TIMEOUT,
            ConfigType.LONG,
            "How long, in milliseconds, a failed conversion or transformation is "
            "retried; 0 (the default) retries nothing, -1 retries forever.",
            default=0,
            group=ERROR_GROUP,
            order_in_group=1,
            display_name="Retry Timeout for Errors",
        ),
        ConfigKey(
            ERRORS_RETRY_DELAY_MAX_MS,
            ConfigType.LONG,
            "The longest wait, in milliseconds, between two retries.",
            default=60000,
            group=ERROR_GROUP,
            order_in_group=2,
            display_name="Maximum Delay Between Retries for Errors",
        ),
        ConfigKey(
            ERRORS_TOLERANCE,
            ConfigType.STRING,
            f"{TOLERANCE_NONE}: a record's failed conversion or transformation fails "
            f"the task; {TOLERANCE_ALL}: the record is skipped.",
            default=TOLERANCE_NONE,
            validator=one_of(TOLERANCE_NONE, TOLERANCE_ALL),
            group=ERROR_GROUP,
            order_in_group=3,
            display_name="Error Tolerance",
        ),
        ConfigKey(
            ERRORS_LOG_ENABLE,
            ConfigType.BOOLEAN,
            "Whether each error, with the failed operation, is written to the worker's "
            "log (by default only errors that are not tolerated are).",
            default=False,
            group=ERROR_GROUP,
            order_in_group=4,
            display_name="Log Errors",
        ),
        ConfigKey(
            ERRORS_LOG_INCLUDE_MESSAGES,
            ConfigType.BOOLEAN,
            "Whether that log includes the record's key, value and headers (by default "
            "only its topic, partition and offset).",
            default=False,
            group=ERROR_GROUP,
            order_in_group=5,
            display_name="Log Error Details",
        ),
    ]
)


def _dlq_topic_error(value: object) -> str | None:
    text = "" if value is None else str(value)
    return topic_name_error(text) if text else None


DLQ_CONFIG = define_all(
    [
        ConfigKey(
            DLQ_TOPIC_NAME,
            ConfigType.STRING,
            "The dead-letter-queue topic: where the records that fail conversion or "
            "transformation (and a sink task's errant records) are written. Blank (the "
            "default): none. On a source connector too (beyond Kafka Connect).",
            default="",
            validator=_dlq_topic_error,
            group=ERROR_GROUP,
            order_in_group=6,
            display_name="Dead Letter Queue Topic Name",
        ),
        ConfigKey(
            DLQ_TOPIC_REPLICATION_FACTOR,
            ConfigType.SHORT,
            "The replication factor of the dead-letter-queue topic when the worker creates it.",
            default=3,
            group=ERROR_GROUP,
            order_in_group=7,
            display_name="Dead Letter Queue Topic Replication Factor",
        ),
        ConfigKey(
            DLQ_CONTEXT_HEADERS_ENABLE,
            ConfigType.BOOLEAN,
            "Whether the records in the dead-letter queue carry the error's context in "
            "headers named __connect.errors.*.",
            default=False,
            group=ERROR_GROUP,
            order_in_group=8,
            display_name="Enable Error Context Headers",
        ),
    ]
)

#: What a plugin's class key gains to name its version (KIP-891): ``key.converter`` →
#: ``key.converter.plugin.version``, ``transforms.<alias>`` → ``transforms.<alias>.plugin.version``.
PLUGIN_VERSION_SUFFIX = "plugin.version"

#: The pipeline's version keys; group 1 is the plugin's key (the class key, or the alias's
#: prefix without ``.type``).
PLUGIN_VERSION = re.compile(
    r"(key\.converter|value\.converter|header\.converter"
    r"|transforms\.[^.]+|predicates\.[^.]+)\.plugin\.version"
)


#: The fixed pipeline keys of every connector config (converters, transformations,
#: predicates, error handling, dead-letter queue).
PIPELINE_FRAMEWORK = PIPELINE_CONFIG.merged(DLQ_CONFIG)
