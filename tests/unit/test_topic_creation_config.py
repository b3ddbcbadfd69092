"""Topic creation by source connectors (KIP-158): the connector keys, their validation with
Kafka Connect's messages, the worker's topic.creation.enable, and group matching."""

from __future__ import annotations

import pytest

from connect_grpc.config.worker import WorkerConfig
from connect_grpc.connectors.plugins import Plugins
from connect_grpc.connectors.topic_creation_config import (
    TopicCreationSettings,
    ignored_keys,
    uses_topic_creation,
)
from connect_grpc.herder.validation import ConfigValidator
from connect_grpc.kernel.errors import InvalidArgumentError

RF = "topic.creation.default.replication.factor"
PARTITIONS = "topic.creation.default.partitions"
GROUPS = "topic.creation.groups"


def _source(**extra: str) -> dict[str, str]:
    return {"connector.class": "SequenceSource", "topic": "t", **extra}


def _with_default(rf: str = "1", partitions: str = "3", **extra: str) -> dict[str, str]:
    return {RF: rf, PARTITIONS: partitions, **extra}


def _errors(config: dict[str, str], enabled: bool = True) -> dict[str, list[str]]:
    validator = ConfigValidator(Plugins(), max_tasks=8, topic_creation_enabled=enabled)
    found: dict[str, list[str]] = {}
    for key, message in validator.validate(config).all_errors():
        found.setdefault(key, []).append(message)
    return found


def _settings(config: dict[str, str]) -> TopicCreationSettings:
    settings = TopicCreationSettings.from_config(config)
    assert settings is not None
    return settings


def test_a_source_without_topic_creation_keys_needs_none() -> None:
    assert _errors(_source()) == {}
    assert TopicCreationSettings.from_config(_source()) is None
    assert not uses_topic_creation(_source())


@pytest.mark.parametrize(
    "given", [{GROUPS: "g"}, {RF: "1"}, {PARTITIONS: "1"}, {"topic.creation.g.include": "x"}]
)
def test_any_topic_creation_key_requires_the_default_replication_factor_and_partitions(
    given: dict[str, str],
) -> None:
    errors = _errors(_source(**given))
    for key in (RF, PARTITIONS):
        if key not in given:
            assert errors[key] == [
                f'Missing required configuration "{key}" which has no default value.'
            ]


def test_a_complete_default_group_is_valid_and_validate_config_lists_its_keys() -> None:
    config = _source(**_with_default(**{"topic.creation.default.cleanup.policy": "compact"}))
    assert _errors(config) == {}
    validator = ConfigValidator(Plugins(), max_tasks=8)
    infos = {info.definition.name: info for info in validator.validate(config).configs
             if info.definition is not None}
    assert infos[RF].definition is not None and infos[RF].definition.type == "SHORT"
    assert infos[RF].definition.required
    assert infos[PARTITIONS].definition is not None
    assert infos[PARTITIONS].definition.group == "Topic Creation: default"
    assert infos[GROUPS].definition is not None and infos[GROUPS].definition.group == (
        "Topic Creation"
    )


@pytest.mark.parametrize(
    ("key", "raw", "message"),
    [
        (PARTITIONS, "0", "Invalid value 0 for configuration topic.creation.default.partitions: "
         "Number of partitions must be positive, or -1 to use the broker's default"),
        (RF, "-2", "Invalid value -2 for configuration topic.creation.default.replication.factor: "
         "Replication factor must be positive and not larger than the number of brokers in the "
         "Kafka cluster, or -1 to use the broker's default"),
        (RF, "40000", "Invalid value 40000 for configuration "
         "topic.creation.default.replication.factor: Not a number of type SHORT"),
        (PARTITIONS, "many", "Invalid value many for configuration "
         "topic.creation.default.partitions: Not a number of type INT"),
    ],
)
def test_default_group_values_are_checked_with_kafka_messages(
    key: str, raw: str, message: str
) -> None:
    assert _errors(_source(**_with_default(**{key: raw})))[key] == [message]


def test_minus_one_means_the_brokers_default() -> None:
    settings = _settings(_with_default(rf="-1", partitions="-1"))
    assert (settings.default.replication_factor, settings.default.partitions) == (-1, -1)


def test_duplicate_groups_are_refused_even_with_topic_creation_disabled() -> None:
    message = ("Invalid value [a, b, a] for configuration topic.creation.groups: "
               "Duplicate alias provided.")
    assert _errors(_source(**_with_default(**{GROUPS: "a, b, a"})))[GROUPS] == [message]
    assert _errors(_source(**{GROUPS: "a,b,a"}), enabled=False) == {GROUPS: [message]}


def test_group_regexes_and_values_are_checked_per_key() -> None:
    config = _source(**_with_default(**{
        GROUPS: "g",
        "topic.creation.g.include": "ok.*, bad(",
        "topic.creation.g.partitions": "0",
    }))
    errors = _errors(config)
    [include_error] = errors["topic.creation.g.include"]
    assert include_error.startswith(
        "Invalid value [ok.*, bad(] for configuration topic.creation.g.include: "
        "Syntax error in regular expression: "
    )
    assert errors["topic.creation.g.partitions"] == [
        "Invalid value 0 for configuration topic.creation.g.partitions: Number of partitions "
        "must be positive, or -1 to use the broker's default"
    ]


def test_with_the_worker_disabled_the_keys_are_accepted_unchecked() -> None:
    config = _source(**{PARTITIONS: "0", "topic.creation.default.cleanup.policy": "compact"})
    assert _errors(config, enabled=False) == {}


def test_the_first_matching_group_wins_and_default_comes_last() -> None:
    settings = _settings(_with_default(**{
        GROUPS: "compacted, wide, default",
        "topic.creation.compacted.include": "state-.*, .*-changelog",
        "topic.creation.compacted.exclude": "state-tmp.*",
        "topic.creation.compacted.cleanup.policy": "compact",
        "topic.creation.compacted.replication.factor": "-1",
        "topic.creation.wide.include": "state-.*, wide-.*",
        "topic.creation.wide.partitions": "12",
        "topic.creation.default.compression.type": "zstd",
    }))
    assert [group.name for group in settings.groups] == ["compacted", "wide"]
    compacted = settings.group_for("state-1")
    assert compacted.name == "compacted"
    assert compacted.topic_configs == {"cleanup.policy": "compact"}
    # unset partitions come from the default group; the default's topic configs do not
    assert (compacted.partitions, compacted.replication_factor) == (3, -1)
    assert settings.group_for("orders-changelog").name == "compacted"
    assert settings.group_for("state-tmp1").name == "wide"  # excluded from the first
    wide = settings.group_for("wide-x")
    assert (wide.partitions, wide.replication_factor) == (12, 1)
    assert settings.group_for("xstate-1").name == "default"  # include matches whole names
    assert settings.default.topic_configs == {"compression.type": "zstd"}


def test_a_group_without_include_takes_no_topic() -> None:
    settings = _settings(_with_default(**{GROUPS: "g", "topic.creation.g.partitions": "5"}))
    assert settings.group_for("anything").name == "default"


def test_keys_without_effect_are_named_as_ignored() -> None:
    config = _with_default(**{
        GROUPS: "default, g",
        "topic.creation.default.include": "x",
        "topic.creation.default.exclude": "y",
        "topic.creation.unlisted.partitions": "2",
        "topic.creation.g.include": "z",
    })
    assert ignored_keys(config) == [
        "topic.creation.default.include",
        "topic.creation.default.exclude",
        "topic.creation.unlisted.partitions",
        "topic.creation.groups (default)",
    ]
    # the default group's include/exclude are not its topic configs either
    assert _settings(config).default.topic_configs == {}


def test_an_invalid_config_fails_the_settings_with_every_message() -> None:
    with pytest.raises(ValueError, match=r"Missing required configuration .*partitions"):
        TopicCreationSettings.from_config({RF: "1"})


def test_new_topic_text_is_kafkas() -> None:
    group = _settings(_with_default(**{"topic.creation.default.cleanup.policy": "compact"}))
    assert group.default.new_topic_text("t") == (
        "(name=t, numPartitions=3, replicationFactor=1, replicasAssignments=null, "
        "configs={cleanup.policy=compact})"
    )


@pytest.mark.parametrize(("raw", "enabled"), [(None, True), (" FALSE ", False), ("True", True)])
def test_worker_topic_creation_enable_is_a_kafka_boolean(raw: str | None, enabled: bool) -> None:
    props = {"bootstrap.servers": "b:9092"}
    if raw is not None:
        props["topic.creation.enable"] = raw
    assert WorkerConfig.from_properties(props).topic_creation_enabled is enabled


def test_worker_topic_creation_enable_refuses_other_values() -> None:
    props = {"bootstrap.servers": "b:9092", "topic.creation.enable": "yes"}
    with pytest.raises(InvalidArgumentError) as caught:
        WorkerConfig.from_properties(props)
    assert caught.value.violations[0].field == "topic.creation.enable"
