"""Creates and checks a cluster's internal topics before a distributed worker starts.

The worker refuses to start on a topic that would lose or misorder its state, as Kafka
Connect does, with a message naming the topic and the fix, instead of failing later in a
way nobody can trace back to the topic:

- the config topic must have exactly one partition (its records are applied in order, and
  Kafka orders records only within a partition);
- the config, offsets and status topics must have ``cleanup.policy=compact`` exactly
  (``delete`` or ``compact,delete`` would eventually drop connector configs and offsets).

The leader-election topic (``leader.election.topic``, our own) follows the config topic's
rules: one partition, because the member that owns partition 0 is the leader; compacted,
because nothing there may expire (it carries no records, and a compacted topic keeps
that true of anything the cluster layer writes to it later). It is created with the config
topic's replication factor.

Missing topics are created (compacted) with the configured partition counts and
replication factors; -1 lets the broker choose (KIP-464, Kafka 2.4 and later).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass

import structlog
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient

from connect_grpc.cluster.config import (
    CONFIG_REPLICATION,
    CONFIG_TOPIC,
    LEADER_TOPIC,
    OFFSET_PARTITIONS,
    OFFSET_REPLICATION,
    OFFSET_TOPIC,
    STATUS_PARTITIONS,
    STATUS_REPLICATION,
    STATUS_TOPIC,
    DistributedConfig,
)
from connect_grpc.kernel.errors import ConnectError, StartupError, UnavailableError
from connect_grpc.kernel.kafka_clients import kafka_error_of, with_client_log
from connect_grpc.storage.log_topic import TopicSpec, _partition_count, ensure_topic

log = structlog.get_logger(__name__)

BOOTSTRAP_SERVERS = "bootstrap.servers"


@dataclass(frozen=True, slots=True)
class InternalTopic:
    """One internal topic: how it is created, what is checked, and which properties set it
    (so that an error names the property to change)."""

    role: str
    spec: TopicSpec
    topic_property: str
    replication_property: str
    #: None when the partition count is fixed at one (config and leader-election topics).
    partitions_property: str | None

    @property
    def single_partition(self) -> bool:
        return self.partitions_property is None


def internal_topics(config: DistributedConfig) -> tuple[InternalTopic, ...]:
    """The cluster's four internal topics, in the order they are checked."""
    return (
        InternalTopic(
            "config",
            TopicSpec(config.config_topic, 1, config.config_replication_factor),
            CONFIG_TOPIC,
            CONFIG_REPLICATION,
            None,
        ),
        InternalTopic(
            "offsets",
            TopicSpec(
                config.offset_topic, config.offset_partitions, config.offset_replication_factor
            ),
            OFFSET_TOPIC,
            OFFSET_REPLICATION,
            OFFSET_PARTITIONS,
        ),
        InternalTopic(
            "status",
            TopicSpec(
                config.status_topic, config.status_partitions, config.status_replication_factor
            ),
            STATUS_TOPIC,
            STATUS_REPLICATION,
            STATUS_PARTITIONS,
        ),
        InternalTopic(
            "leader-election",
            TopicSpec(config.leader_election_topic, 1, config.config_replication_factor),
            LEADER_TOPIC,
            CONFIG_REPLICATION,
            None,
        ),
    )


def ensure_internal_topics(
    admin_conf: Mapping[str, str], config: DistributedConfig, timeout_s: float
) -> str:
    """Creates the missing internal topics and checks the existing ones, within ``timeout_s``;
    returns the Kafka cluster's id (empty if the broker does not say).

    ``admin_conf`` is a librdkafka client configuration (``bootstrap.servers`` and security
    settings). One AdminClient serves the whole check and is dropped on return. Only
    metadata, CreateTopics and DescribeConfigs requests are sent: none is
    coordinator-targeted, so they are safe in the worker's process.

    Raises StartupError: exit code 2 (naming the ``*.storage.topic`` property or the
    property to change) for a topic the worker must not use or cannot create as configured;
    exit code 1 (naming ``bootstrap.servers``) when Kafka does not answer in time.
    """
    deadline = time.monotonic() + timeout_s
    bootstrap = str(admin_conf.get(BOOTSTRAP_SERVERS, ""))
    admin = AdminClient(with_client_log(admin_conf, "internal-topics-admin"))
    cluster_id = _check_reachable(admin, bootstrap, timeout_s)
    budget = _Budget(deadline, timeout_s, bootstrap)
    topics = internal_topics(config)
    for topic in topics:
        _ensure(admin, topic, bootstrap, budget)
    log.info("internal_topics_ready", topics=[topic.spec.name for topic in topics])
    return cluster_id


@dataclass(frozen=True, slots=True)
class _Budget:
    """What is left of the caller's timeout; running out is Kafka not answering in time."""

    deadline: float
    timeout_s: float
    bootstrap: str

    def remaining(self) -> float:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise _unreachable(self.bootstrap, self.timeout_s, "the internal topics not ready")
        return left


def _check_reachable(admin: AdminClient, bootstrap: str, timeout_s: float) -> str:
    """Fails fast, naming bootstrap.servers, when no broker answers a metadata request;
    returns the cluster id the answer carries."""
    try:
        metadata = admin.list_topics(timeout=timeout_s)
    except KafkaException as exc:
        raise _unreachable(bootstrap, timeout_s, _describe(exc)) from None
    return str(metadata.cluster_id or "")


def _ensure(admin: AdminClient, topic: InternalTopic, bootstrap: str, budget: _Budget) -> None:
    """Creates ``topic`` if missing, then checks its cleanup policy and partition count."""
    partitions = 1
    try:
        ensure_topic(admin, topic.spec, budget.remaining())
        if topic.single_partition:
            partitions = _partition_count(admin, topic.spec.name, budget.remaining())
    except UnavailableError as exc:
        raise _unusable(topic, bootstrap, exc.message, _cause_error(exc)) from None
    except ConnectError as exc:  # ensure_topic's verdict on an existing topic's policy
        raise _not_compacted(topic, bootstrap, exc.message) from None
    except KafkaException as exc:  # DescribeConfigs answered an error
        raise _unusable(topic, bootstrap, _describe(exc), kafka_error_of(exc)) from None
    except TimeoutError:
        raise _unreachable(
            bootstrap, budget.timeout_s, f"no answer about {topic.spec.name}"
        ) from None
    if partitions != 1:
        raise _not_single_partition(topic, partitions)


def _describe(exc: KafkaException) -> str:
    error = kafka_error_of(exc)
    return f"{error.name()}: {error.str()}" if error is not None else str(exc)


def _cause_error(exc: BaseException) -> KafkaError | None:
    """The KafkaError behind a wrapped failure (ensure_topic wraps create errors)."""
    return kafka_error_of(exc.__cause__) if exc.__cause__ is not None else None


def _unreachable(bootstrap: str, timeout_s: float, detail: str) -> StartupError:
    return StartupError(
        f"Kafka at {BOOTSTRAP_SERVERS}={bootstrap} did not answer within {timeout_s:g}s "
        f"({detail})",
        fix=f"start the brokers or correct {BOOTSTRAP_SERVERS} (and the security settings), "
        "and make sure this host can reach them; then start the worker again",
        property_name=BOOTSTRAP_SERVERS,
        exit_code=1,
    )


def _not_compacted(topic: InternalTopic, bootstrap: str, detail: str) -> StartupError:
    name = topic.spec.name
    return StartupError(
        f"the {topic.role} topic {name} ({topic.topic_property}) is refused: {detail}",
        fix=(
            f"make it compacted: kafka-configs.sh --bootstrap-server {bootstrap} --alter "
            f"--entity-type topics --entity-name {name} --add-config cleanup.policy=compact "
            f"(or set {topic.topic_property} to a new topic, which the worker creates compacted)"
        ),
        property_name=topic.topic_property,
    )


def _not_single_partition(topic: InternalTopic, partitions: int) -> StartupError:
    name = topic.spec.name
    why = (
        "its records are applied in order, and Kafka orders records only within a partition"
        if topic.role == "config"
        else "the member that owns its only partition is the leader"
    )
    return StartupError(
        f"the {topic.role} topic {name} ({topic.topic_property}) has {partitions} partitions "
        f"but must have exactly one: {why}",
        fix=(
            f"set {topic.topic_property} to a new topic name (the worker creates it with one "
            f"partition), or delete topic {name} if nothing in it is needed; a topic's "
            "partition count cannot be lowered"
        ),
        property_name=topic.topic_property,
    )


def _unusable(
    topic: InternalTopic, bootstrap: str, detail: str, error: KafkaError | None
) -> StartupError:
    """A failed create or describe: a configuration error when Kafka's answer says what to
    change (exit 2, naming the property), otherwise Kafka not answering (exit 1)."""
    code = error.code() if error is not None else None
    prefix = f"the {topic.role} topic {topic.spec.name} cannot be used: {detail}"
    if code == KafkaError.INVALID_REPLICATION_FACTOR:
        prop = topic.replication_property
        fix = f"set {prop} to at most the number of brokers, or to -1 for the broker's default"
        return StartupError(prefix, fix=fix, property_name=prop)
    if code == KafkaError.INVALID_PARTITIONS and topic.partitions_property is not None:
        prop = topic.partitions_property
        fix = f"set {prop} to a partition count the brokers accept, or to -1 for their default"
        return StartupError(prefix, fix=fix, property_name=prop)
    if code in _REFUSED_BY_BROKER:
        fix = _precreate_fix(topic, bootstrap)
        return StartupError(prefix, fix=fix, property_name=topic.topic_property)
    return StartupError(
        prefix,
        fix=f"check that the brokers at {BOOTSTRAP_SERVERS}={bootstrap} are up and healthy, "
        "then start the worker again",
        property_name=BOOTSTRAP_SERVERS,
        exit_code=1,
    )


#: Answers that no retry changes: the broker's authorizer or topic policy said no.
_REFUSED_BY_BROKER = frozenset(
    {
        KafkaError.TOPIC_AUTHORIZATION_FAILED,
        KafkaError.CLUSTER_AUTHORIZATION_FAILED,
        KafkaError.POLICY_VIOLATION,
        KafkaError.INVALID_CONFIG,
    }
)


def _precreate_fix(topic: InternalTopic, bootstrap: str) -> str:
    partitions = "1" if topic.single_partition else f"the {topic.partitions_property} count"
    return (
        f"grant this worker CREATE and DESCRIBE_CONFIGS on topic {topic.spec.name}, or create "
        f"it beforehand with {partitions} partition(s) and cleanup.policy=compact "
        f"(kafka-topics.sh --bootstrap-server {bootstrap} --create --topic {topic.spec.name} "
        "--config cleanup.policy=compact ...)"
    )
