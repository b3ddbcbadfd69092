"""The framework's keys of a connector config, as Kafka Connect's ConnectorConfig,
SinkConnectorConfig and SourceConnectorConfig define them: the common ones, the sink's and
the source's (exactly-once support, its own offsets topic), and the checks of a sink's
``topics`` that need nothing but the config. The checks that ask the worker's settings or the
plugin are ``herder.validation``'s."""

from __future__ import annotations

import re
from collections.abc import Mapping

from connect_grpc.config_providers.transformer import (
    CONFIG_RELOAD_ACTION,
    RELOAD_NONE,
    RELOAD_RESTART,
)
from connect_grpc.connectors.api import (
    Connector,
    SinkConnector,
    SourceConnector,
    TransactionBoundary,
)
from connect_grpc.connectors.topic_creation_config import GROUPS_KEY
from connect_grpc.herder.auto_restart_policy import AUTO_RESTART_CONFIG
from connect_grpc.herder.connector_version import CONNECTOR_VERSION_KEY
from connect_grpc.kernel.configdef import (
    ConfigDef,
    ConfigKey,
    ConfigType,
    Importance,
    all_of,
    at_least,
    define_all,
    java_trim,
    non_empty_string,
    one_of_ignoring_case,
    parse_value,
    topic_name_error,
    valid_regex,
)
from connect_grpc.pipeline.keys import DLQ_TOPIC_NAME, PIPELINE_FRAMEWORK
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
        CONNECTOR_VERSION_KEY,
        ConfigKey(TASKS_MAX, ConfigType.INT, "Maximum number of tasks to use for this connector.",
                  default=1, importance=Importance.HIGH, validator=at_least(1),
                  group=COMMON_GROUP, order_in_group=3, display_name="Tasks max"),
        ConfigKey(BATCH_MAX_RECORDS_KEY, ConfigType.INT,
                  "The most records one micro-batch (one Spark job) of a task moves; batches "
                  f"grow up to it while the backlog keeps them full (default "
                  f"{DEFAULT_MAX_RECORDS}).", default=None, importance=Importance.LOW,
                  validator=at_least(1), group=COMMON_GROUP, order_in_group=4,
                  display_name="Batch max records"),
        ConfigKey(CONFIG_RELOAD_ACTION, ConfigType.STRING,
                  "What the connector does when the values its config's references resolved "
                  f"to expire (a provider's time to live): {RELOAD_RESTART} restarts it, "
                  f"{RELOAD_NONE} does nothing.", default=RELOAD_RESTART,
                  importance=Importance.LOW,
                  validator=one_of_ignoring_case(RELOAD_NONE, RELOAD_RESTART),
                  group=COMMON_GROUP, order_in_group=7, display_name="Reload Action"),
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

EXACTLY_ONCE_SUPPORT = "exactly.once.support"
REQUESTED = "requested"
REQUIRED = "required"
TRANSACTION_BOUNDARY = "transaction.boundary"
TRANSACTION_BOUNDARY_INTERVAL_MS = "transaction.boundary.interval.ms"
OFFSETS_STORAGE_TOPIC = "offsets.storage.topic"
EXACTLY_ONCE_GROUP = "Exactly Once Support"
OFFSETS_TOPIC_GROUP = "offsets.topic"


def _topic_name(value: object) -> str | None:
    return None if value is None else topic_name_error(str(value))


SOURCE_CONFIG = define_all(
    [
        GROUPS_KEY,
        ConfigKey(EXACTLY_ONCE_SUPPORT, ConfigType.STRING,
                  f"{REQUESTED} or {REQUIRED}. {REQUIRED} makes validation check that the "
                  "connector declares exactly-once support with this config, and fails on a "
                  "worker without exactly.once.source.support=enabled.", default=REQUESTED,
                  validator=one_of_ignoring_case(REQUESTED, REQUIRED),
                  group=EXACTLY_ONCE_GROUP, order_in_group=1,
                  display_name="Exactly once support"),
        ConfigKey(TRANSACTION_BOUNDARY, ConfigType.STRING,
                  "poll: one transaction per batch the worker moves; interval: one per "
                  f"{TRANSACTION_BOUNDARY_INTERVAL_MS}; connector: where the connector's "
                  "tasks say (only for connectors that can define them).",
                  default=TransactionBoundary.POLL.value,
                  validator=one_of_ignoring_case(*(b.value for b in TransactionBoundary)),
                  group=EXACTLY_ONCE_GROUP, order_in_group=2,
                  display_name="Transaction Boundary"),
        ConfigKey(TRANSACTION_BOUNDARY_INTERVAL_MS, ConfigType.LONG,
                  f"With {TRANSACTION_BOUNDARY}=interval, how often a task commits its "
                  "transaction; unset means 60000 (Kafka Connect's offset.flush.interval.ms "
                  "default). No effect "
                  "with other boundaries.", default=None, importance=Importance.LOW,
                  validator=at_least(0), group=EXACTLY_ONCE_GROUP, order_in_group=3,
                  display_name="Transaction boundary interval"),
        ConfigKey(OFFSETS_STORAGE_TOPIC, ConfigType.STRING,
                  "A separate offsets topic for this connector (distributed mode); unset "
                  "means the worker's offset.storage.topic.", default=None,
                  importance=Importance.LOW, validator=all_of(non_empty_string, _topic_name),
                  group=OFFSETS_TOPIC_GROUP, order_in_group=1, display_name="Offsets topic"),
    ]
)


def framework_config_def(
    connector: Connector, pipeline_framework: ConfigDef = PIPELINE_FRAMEWORK
) -> ConfigDef:
    """The framework's keys of a connector's config, in Kafka Connect's order: the common
    ones, the pipeline's, then the sink's or the source's."""
    framework = COMMON_CONFIG.merged(pipeline_framework).merged(AUTO_RESTART_CONFIG)
    if isinstance(connector, SinkConnector):
        return framework.merged(SINK_CONFIG)
    if isinstance(connector, SourceConnector):
        return framework.merged(SOURCE_CONFIG)
    return framework


def tasks_max(config: Mapping[str, str]) -> int:
    """The parsed ``tasks.max`` of a config that passed validation."""
    raw = config.get(TASKS_MAX)
    key = COMMON_CONFIG.keys[TASKS_MAX]
    return key.default if raw is None else int(parse_value(key, raw))


def source_choice(config: Mapping[str, str], key: str) -> str:
    """A source's valid case-insensitive STRING setting, lowercased (its default when
    absent)."""
    raw = config.get(key)
    default = SOURCE_CONFIG.keys[key].default
    return str(default if raw is None else parse_value(SOURCE_CONFIG.keys[key], raw)).lower()


#: Kafka's messages for a sink's ``topics`` list with a repeated or an empty entry.
TOPICS_DUPLICATED = "Configuration 'topics' values must not be duplicated."
TOPICS_EMPTY_ENTRY = "Configuration 'topics' values must not be empty."


def sink_topic_errors(config: Mapping[str, str]) -> dict[str, list[str]]:
    """A sink's errors of ``topics`` and ``topics.regex``: exactly one set, a list with no
    repeated, empty or illegal name, and no dead-letter-queue topic among those consumed."""
    has_topics = bool(config.get("topics", "").strip())
    has_regex = bool(config.get("topics.regex", "").strip())
    if has_topics and has_regex:
        message = "topics and topics.regex are mutually exclusive options, but both are set."
        return _with_dlq_errors(config, {"topics": [message], "topics.regex": [message]})
    if not has_topics and not has_regex:
        message = "Must configure one of topics or topics.regex"
        return {"topics": [message], "topics.regex": [message]}
    if has_topics:
        topics = [java_trim(topic) for topic in config["topics"].split(",")]
        # Kafka Connect 4.2 and later (KIP-1161) refuse a repeated and an empty entry, the
        # repeat looked for first, with these messages.
        if len(set(topics)) != len(topics):
            return _with_dlq_errors(config, {"topics": [TOPICS_DUPLICATED]})
        if "" in topics:
            return _with_dlq_errors(config, {"topics": [TOPICS_EMPTY_ENTRY]})
        illegal = [error for topic in topics if (error := topic_name_error(topic))]
        if illegal:
            return _with_dlq_errors(config, {"topics": illegal})
    return _with_dlq_errors(config, {})


def _with_dlq_errors(
    config: Mapping[str, str], errors: dict[str, list[str]]
) -> dict[str, list[str]]:
    """Adds Kafka Connect's errors for a dead-letter-queue topic the sink itself consumes:
    one of its ``topics`` (on ``topics``), or one its ``topics.regex`` matches (on
    ``topics.regex``)."""
    dlq = config.get(DLQ_TOPIC_NAME, "").strip()
    if not dlq:
        return errors
    topics = list(dict.fromkeys(
        java_trim(t) for t in config.get("topics", "").split(",") if java_trim(t)
    ))
    if dlq in topics:
        errors.setdefault("topics", []).append(
            f"The DLQ topic '{dlq}' may not be included in the list of topics "
            f"('topics=[{', '.join(topics)}]') consumed by the connector"
        )
    regex = config.get("topics.regex", "").strip()
    if regex and valid_regex(regex) is None and re.fullmatch(regex, dlq):
        errors.setdefault("topics.regex", []).append(
            f"The DLQ topic '{dlq}' may not be matched by the regex for the topics "
            f"('topics.regex={config['topics.regex']}') consumed by the connector"
        )
    return errors
