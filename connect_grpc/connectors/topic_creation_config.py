"""Topic creation by source connectors (KIP-158): the ``topic.creation.*`` connector keys,
as Kafka Connect's SourceConnectorConfig and TopicCreationConfig define them, their
validation, and the groups a task matches the topics it writes to against.

Keys: ``topic.creation.groups`` (aliases of groups, besides ``default``, which always
exists); ``topic.creation.default.replication.factor`` (SHORT) and
``topic.creation.default.partitions`` (INT), both required as soon as any key starts with
``topic.creation.``, ``-1`` meaning the broker's default; for each listed group ``g``,
``topic.creation.g.include`` / ``.exclude`` (lists of Java regexes, matched against the whole
topic name, exclusion first) and ``.replication.factor`` / ``.partitions`` (the default
group's values when unset); and any other ``topic.creation.<g>.<config>`` is a topic config
of the topics the group creates (``cleanup.policy``, ``compression.type``, …).

As in Kafka Connect: a topic goes to the first listed group that matches it, else to
``default``; ``default`` listed in ``topic.creation.groups`` is ignored with a warning, and so
are the default group's ``include`` / ``exclude`` (it takes every topic no other group
takes) and the keys of a group that is not listed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from connect_grpc.data.transforms._regex import compile_java
from connect_grpc.kernel.configdef import (
    ConfigDef,
    ConfigKey,
    ConfigType,
    ExactMessage,
    Importance,
    Validator,
    java_list,
    parse_value,
)

TOPIC_CREATION_PREFIX = "topic.creation."
TOPIC_CREATION_GROUPS = TOPIC_CREATION_PREFIX + "groups"
DEFAULT_GROUP = "default"
DEFAULT_GROUP_PREFIX = f"{TOPIC_CREATION_PREFIX}{DEFAULT_GROUP}."
INCLUDE = "include"
EXCLUDE = "exclude"
REPLICATION_FACTOR = "replication.factor"
PARTITIONS = "partitions"
#: The keys of a group that are not topic configs.
GROUP_KEYS = (INCLUDE, EXCLUDE, REPLICATION_FACTOR, PARTITIONS)
#: ``replication.factor`` / ``partitions`` value meaning "the broker's default".
BROKER_DEFAULT = -1
#: ValidateConfig's group of ``topic.creation.groups``; each group's keys are in
#: ``Topic Creation: <alias>``.
TOPIC_CREATION_CONFIG_GROUP = "Topic Creation"


def _unique_groups(value: Any) -> str | None:
    if value is not None and len(value) > len(set(value)):
        return ExactMessage(
            f"Invalid value {java_list(value)} for configuration {TOPIC_CREATION_GROUPS}: "
            "Duplicate alias provided."
        )
    return None


GROUPS_KEY = ConfigKey(
    TOPIC_CREATION_GROUPS, ConfigType.LIST,
    "Groups of configurations for topics created by source connectors", default=[],
    importance=Importance.LOW, validator=_unique_groups, group=TOPIC_CREATION_CONFIG_GROUP,
    order_in_group=1, display_name="Topic Creation Groups",
)


def uses_topic_creation(config: Mapping[str, str]) -> bool:
    """Whether the connector config has any ``topic.creation.`` key (Kafka Connect's
    trigger: ``topic.creation.groups`` alone is enough to require the default group)."""
    return any(key.startswith(TOPIC_CREATION_PREFIX) for key in config)


def _partitions_validator(name: str) -> Validator:
    def check(value: Any) -> str | None:
        if value is not None and value != BROKER_DEFAULT and value < 1:
            return ExactMessage(
                f"Invalid value {value} for configuration {name}: Number of partitions must "
                "be positive, or -1 to use the broker's default"
            )
        return None

    return check


def _replication_factor_validator(name: str) -> Validator:
    def check(value: Any) -> str | None:
        if value is not None and value != BROKER_DEFAULT and value < 1:
            return ExactMessage(
                f"Invalid value {value} for configuration {name}: Replication factor must be "
                "positive and not larger than the number of brokers in the Kafka cluster, or "
                "-1 to use the broker's default"
            )
        return None

    return check


def _regex_list_validator(name: str) -> Validator:
    def check(value: Any) -> str | None:
        for pattern in value or ():
            try:
                compile_java(pattern)
            except re.error as exc:
                return ExactMessage(
                    f"Invalid value {java_list(value)} for configuration {name}: Syntax error "
                    f"in regular expression: {exc}"
                )
        return None

    return check


_INCLUDE_DOC = (
    "Java regular expressions, each matching whole topic names: the topics the source "
    "connector writes to that this group creates, with its settings."
)
_EXCLUDE_DOC = (
    "Java regular expressions, each matching whole topic names: the topics this group does "
    "not create even when they match its include list (exclusion wins)."
)
_REPLICATION_FACTOR_DOC = (
    "The replication factor of the topics this group creates: positive and not larger than "
    "the number of brokers, or -1 for the broker's default. Required for the default group; "
    "another group takes the default group's when unset."
)
_PARTITIONS_DOC = (
    "The number of partitions of the topics this group creates: positive, or -1 for the "
    "broker's default. Required for the default group; another group takes the default "
    "group's when unset."
)


def _group_keys(alias: str, defaults: tuple[Any, Any] | None) -> list[ConfigKey]:
    """The keys of group ``alias``; ``defaults`` are those of its replication factor and
    partitions (None for the default group's, which are required)."""
    rf_default, partitions_default = (
        ({}, {}) if defaults is None else ({"default": defaults[0]}, {"default": defaults[1]})
    )
    prefix = f"{TOPIC_CREATION_PREFIX}{alias}."
    config_group = f"{TOPIC_CREATION_CONFIG_GROUP}: {alias}"
    keys = []
    if alias != DEFAULT_GROUP:
        keys += [
            ConfigKey(prefix + INCLUDE, ConfigType.LIST, _INCLUDE_DOC, default=[],
                      importance=Importance.LOW, validator=_regex_list_validator(prefix + INCLUDE),
                      group=config_group, order_in_group=1,
                      display_name=f"Inclusion Topic Pattern for {config_group}"),
            ConfigKey(prefix + EXCLUDE, ConfigType.LIST, _EXCLUDE_DOC, default=[],
                      importance=Importance.LOW, validator=_regex_list_validator(prefix + EXCLUDE),
                      group=config_group, order_in_group=2,
                      display_name=f"Exclusion Topic Pattern for {config_group}"),
        ]
    rf_name, partitions_name = prefix + REPLICATION_FACTOR, prefix + PARTITIONS
    keys += [
        ConfigKey(rf_name, ConfigType.SHORT, _REPLICATION_FACTOR_DOC, **rf_default,
                  importance=Importance.LOW, validator=_replication_factor_validator(rf_name),
                  group=config_group, order_in_group=3,
                  display_name=f"Replication Factor for Topics in {config_group}"),
        ConfigKey(partitions_name, ConfigType.INT, _PARTITIONS_DOC, **partitions_default,
                  importance=Importance.LOW, validator=_partitions_validator(partitions_name),
                  group=config_group, order_in_group=4,
                  display_name=f"Partition Count for Topics in {config_group}"),
    ]
    return keys


def listed_groups(config: Mapping[str, str]) -> list[str]:
    """The aliases of ``topic.creation.groups``, unique, in order, without ``default``
    (which always exists). An unparsable list counts as none."""
    raw = config.get(TOPIC_CREATION_GROUPS)
    aliases = [] if raw is None else list(parse_value(GROUPS_KEY, raw))
    return [alias for alias in dict.fromkeys(aliases) if alias != DEFAULT_GROUP]


def topic_creation_config_def(config: Mapping[str, str]) -> ConfigDef:
    """The keys of the default group and of every listed group (empty when the config has
    no ``topic.creation.`` key): Kafka Connect's enriched SourceConnectorConfig."""
    result = ConfigDef()
    if not uses_topic_creation(config):
        return result
    default_keys = _group_keys(DEFAULT_GROUP, None)
    for key in default_keys:
        result.define(key)
    errors = ConfigDef({key.name: key for key in default_keys}).validate(config)
    rf, partitions = (
        None if errors[key.name] else parse_value(key, config[key.name]) for key in default_keys
    )
    for alias in listed_groups(config):
        for key in _group_keys(alias, (rf, partitions)):
            result.keys.setdefault(key.name, key)
    return result


def validate_topic_creation(config: Mapping[str, str]) -> dict[str, list[str]]:
    """Every topic-creation key's errors, with Kafka Connect's messages (Kafka Connect finds
    those of the groups' keys only when the connector starts, and fails it)."""
    return topic_creation_config_def(config).validate(config)


def ignored_keys(config: Mapping[str, str]) -> list[str]:
    """The ``topic.creation.*`` keys that have no effect, as in Kafka Connect: the default
    group's ``include`` / ``exclude``, ``default`` listed in ``topic.creation.groups``, and the
    keys of a group that is not listed."""
    listed = set(listed_groups(config))
    ignored = []
    for key in config:
        if not key.startswith(TOPIC_CREATION_PREFIX) or key == TOPIC_CREATION_GROUPS:
            continue
        alias, _, rest = key[len(TOPIC_CREATION_PREFIX):].partition(".")
        default_regex = alias == DEFAULT_GROUP and rest in (INCLUDE, EXCLUDE)
        if default_regex or (alias != DEFAULT_GROUP and alias not in listed):
            ignored.append(key)
    raw = config.get(TOPIC_CREATION_GROUPS)
    if raw is not None and DEFAULT_GROUP in parse_value(GROUPS_KEY, raw):
        ignored.append(f"{TOPIC_CREATION_GROUPS} ({DEFAULT_GROUP})")
    return ignored


@dataclass(frozen=True, slots=True)
class TopicCreationGroup:
    """One group: which topics it creates, and how."""

    name: str
    #: The include patterns joined with ``|`` (Kafka Connect's single pattern); None for the
    #: default group, which takes every topic.
    include: re.Pattern[str] | None
    #: The exclude patterns joined with ``|``; None when there are none.
    exclude: re.Pattern[str] | None
    partitions: int
    replication_factor: int
    #: The topic configs of the topics it creates (``cleanup.policy``, …).
    topic_configs: Mapping[str, str] = field(default_factory=dict)

    def matches(self, topic: str) -> bool:
        """Whether the topic is not excluded and is included, each as a whole name."""
        if self.exclude is not None and self.exclude.fullmatch(topic):
            return False
        return self.include is None or self.include.fullmatch(topic) is not None

    def new_topic_text(self, topic: str) -> str:
        """The topic to create, as Kafka's ``NewTopic`` prints it (for messages)."""
        configs = ", ".join(f"{k}={v}" for k, v in self.topic_configs.items())
        return (
            f"(name={topic}, numPartitions={self.partitions}, replicationFactor="
            f"{self.replication_factor}, replicasAssignments=null, configs={{{configs}}})"
        )


@dataclass(frozen=True, slots=True)
class TopicCreationSettings:
    """A source connector's topic-creation groups: the listed ones in order, then the
    default one (picklable: a hosted task gets them)."""

    groups: tuple[TopicCreationGroup, ...]
    default: TopicCreationGroup

    @classmethod
    def from_config(cls, config: Mapping[str, str]) -> TopicCreationSettings | None:
        """The settings of a connector config; None when it has no ``topic.creation.`` key.

        Raises:
            ValueError: naming every invalid key with Kafka Connect's message.
        """
        if not uses_topic_creation(config):
            return None
        config_def = topic_creation_config_def(config)
        problems = [m for messages in config_def.validate(config).values() for m in messages]
        if problems:
            raise ValueError("; ".join(problems))
        parsed = config_def.parse(config)
        groups = tuple(
            _group(alias, parsed, config) for alias in listed_groups(config)
        )
        return cls(groups, _group(DEFAULT_GROUP, parsed, config))

    def group_for(self, topic: str) -> TopicCreationGroup:
        """The first listed group that matches the topic, else the default group."""
        for group in self.groups:
            if group.matches(topic):
                return group
        return self.default


def _joined(
    patterns: list[str], if_none: re.Pattern[str] | None = None
) -> re.Pattern[str] | None:
    """Kafka Connect's single pattern of a list: the items joined with ``|``."""
    return compile_java("|".join(patterns)) if patterns else if_none


def _group(alias: str, parsed: Mapping[str, Any], config: Mapping[str, str]) -> TopicCreationGroup:
    prefix = f"{TOPIC_CREATION_PREFIX}{alias}."
    topic_configs = {
        key[len(prefix):]: value
        for key, value in config.items()
        if key.startswith(prefix) and key[len(prefix):] not in GROUP_KEYS
    }
    is_default = alias == DEFAULT_GROUP
    return TopicCreationGroup(
        name=alias,
        include=None if is_default else _joined(parsed[prefix + INCLUDE], _NOTHING),
        exclude=None if is_default else _joined(parsed[prefix + EXCLUDE]),
        partitions=parsed[prefix + PARTITIONS],
        replication_factor=parsed[prefix + REPLICATION_FACTOR],
        topic_configs=topic_configs,
    )


#: A listed group with no include pattern takes no topic (Kafka Connect's empty pattern
#: matches only the empty name, which no topic has).
_NOTHING = re.compile(r"(?!)")
