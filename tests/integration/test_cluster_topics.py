"""ensure_internal_topics against the real broker: creation, refusals, idempotence, outage.

Every test uses its own uniquely named topics.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
from confluent_kafka.admin import NewTopic  # type: ignore[attr-defined]

from connect_grpc.cluster.config import DistributedConfig
from connect_grpc.cluster.topics import ensure_internal_topics
from connect_grpc.kafka.ports import free_port
from connect_grpc.kernel.errors import StartupError
from connect_grpc.storage.log_topic import describe_topic_config

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

TIMEOUT_S = 30.0


def cluster_config(**extra: str) -> DistributedConfig:
    """A config with fresh topic names, replication factor 1 (one broker) and few partitions."""
    prefix = f"test-cluster-{uuid.uuid4().hex[:12]}"
    props = {
        "group.id": prefix,
        "config.storage.topic": f"{prefix}-configs",
        "offset.storage.topic": f"{prefix}-offsets",
        "status.storage.topic": f"{prefix}-status",
        "config.storage.replication.factor": "1",
        "offset.storage.replication.factor": "1",
        "status.storage.replication.factor": "1",
        "offset.storage.partitions": "3",
        "status.storage.partitions": "2",
        "listeners": "grpc://127.0.0.1:8083",
        **extra,
    }
    return DistributedConfig.from_properties(props)


def partitions(admin: Any, topic: str) -> int:
    return len(admin.list_topics(topic=topic, timeout=TIMEOUT_S).topics[topic].partitions)


def create_topic(admin: Any, topic: str, count: int, policy: str) -> None:
    new = NewTopic(topic, num_partitions=count, replication_factor=1,
                   config={"cleanup.policy": policy})
    admin.create_topics([new])[topic].result(timeout=TIMEOUT_S)


def refusal(bootstrap: str, config: DistributedConfig) -> StartupError:
    with pytest.raises(StartupError) as caught:
        ensure_internal_topics({"bootstrap.servers": bootstrap}, config, TIMEOUT_S)
    return caught.value


def test_missing_topics_are_created_compacted(kafka_bootstrap: str, kafka_admin: Any) -> None:
    config = cluster_config()
    ensure_internal_topics({"bootstrap.servers": kafka_bootstrap}, config, TIMEOUT_S)
    expected = {
        config.config_topic: 1,
        config.offset_topic: 3,
        config.status_topic: 2,
        config.leader_election_topic: 1,
    }
    for topic, count in expected.items():
        assert partitions(kafka_admin, topic) == count, topic
        assert describe_topic_config(kafka_admin, topic, "cleanup.policy") == "compact", topic


def test_broker_defaults_are_used_for_minus_one(kafka_bootstrap: str, kafka_admin: Any) -> None:
    config = cluster_config(**{
        "config.storage.replication.factor": "-1",
        "offset.storage.replication.factor": "-1",
        "status.storage.replication.factor": "-1",
        "offset.storage.partitions": "-1",
    })
    ensure_internal_topics({"bootstrap.servers": kafka_bootstrap}, config, TIMEOUT_S)
    assert partitions(kafka_admin, config.config_topic) == 1
    assert partitions(kafka_admin, config.offset_topic) >= 1
    assert describe_topic_config(kafka_admin, config.offset_topic, "cleanup.policy") == "compact"


def test_running_twice_is_idempotent(kafka_bootstrap: str, kafka_admin: Any) -> None:
    config = cluster_config()
    ensure_internal_topics({"bootstrap.servers": kafka_bootstrap}, config, TIMEOUT_S)
    ensure_internal_topics({"bootstrap.servers": kafka_bootstrap}, config, TIMEOUT_S)
    assert partitions(kafka_admin, config.config_topic) == 1
    assert partitions(kafka_admin, config.offset_topic) == 3


def test_existing_compacted_topics_are_accepted(kafka_bootstrap: str, kafka_admin: Any) -> None:
    config = cluster_config()
    create_topic(kafka_admin, config.config_topic, 1, "compact")
    create_topic(kafka_admin, config.offset_topic, 7, "compact")
    ensure_internal_topics({"bootstrap.servers": kafka_bootstrap}, config, TIMEOUT_S)
    assert partitions(kafka_admin, config.offset_topic) == 7


def test_config_topic_with_two_partitions_is_refused(
    kafka_bootstrap: str, kafka_admin: Any
) -> None:
    config = cluster_config()
    create_topic(kafka_admin, config.config_topic, 2, "compact")
    error = refusal(kafka_bootstrap, config)
    assert error.exit_code == 2
    assert error.property_name == "config.storage.topic"
    assert config.config_topic in error.message
    assert "2 partitions" in error.message
    assert "config.storage.topic" in error.fix


def test_leader_topic_with_two_partitions_is_refused(
    kafka_bootstrap: str, kafka_admin: Any
) -> None:
    config = cluster_config()
    create_topic(kafka_admin, config.leader_election_topic, 2, "compact")
    error = refusal(kafka_bootstrap, config)
    assert error.property_name == "leader.election.topic"
    assert config.leader_election_topic in error.message


@pytest.mark.parametrize("policy", ["delete", "compact,delete"])
def test_non_compacted_offsets_topic_is_refused(
    kafka_bootstrap: str, kafka_admin: Any, policy: str
) -> None:
    config = cluster_config()
    create_topic(kafka_admin, config.offset_topic, 3, policy)
    error = refusal(kafka_bootstrap, config)
    assert error.exit_code == 2
    assert error.property_name == "offset.storage.topic"
    assert config.offset_topic in error.message
    assert "cleanup.policy" in error.message
    assert f"--entity-name {config.offset_topic} --add-config cleanup.policy=compact" in error.fix


def test_non_compacted_status_topic_is_refused(kafka_bootstrap: str, kafka_admin: Any) -> None:
    config = cluster_config()
    create_topic(kafka_admin, config.status_topic, 2, "delete")
    error = refusal(kafka_bootstrap, config)
    assert error.property_name == "status.storage.topic"
    assert config.status_topic in error.message


def test_replication_factor_above_broker_count_names_the_property(
    kafka_bootstrap: str, kafka_admin: Any
) -> None:
    config = cluster_config(**{"status.storage.replication.factor": "3"})
    error = refusal(kafka_bootstrap, config)
    assert error.exit_code == 2
    assert error.property_name == "status.storage.replication.factor"
    assert config.status_topic in error.message


def test_unreachable_kafka_fails_within_the_timeout() -> None:
    config = cluster_config()
    bootstrap = f"127.0.0.1:{free_port()}"
    started = time.monotonic()
    with pytest.raises(StartupError) as caught:
        ensure_internal_topics({"bootstrap.servers": bootstrap}, config, 3.0)
    elapsed = time.monotonic() - started
    assert elapsed < 3.0 + 2.0
    assert caught.value.exit_code == 1
    assert caught.value.property_name == "bootstrap.servers"
    assert bootstrap in caught.value.message
