"""A source task creates the missing topics it writes to (KIP-158), as Kafka Connect's
``AbstractWorkerSourceTask.maybeCreateTopic`` does: once per topic per task (a topic found
or created is remembered), for the topic a record goes to after the transformations, before
the record is produced, with the first of its connector's topic-creation groups that matches
the topic (else the default group). A topic that exists is left as it is.

Outcomes, as Kafka Connect's ``TopicAdmin.createOrFindTopics``: created, or found existing
(another task won the race: TOPIC_ALREADY_EXISTS) — the topic is remembered; not authorised
or not supported — the task fails with Kafka Connect's "Task failed to create new topic …";
a topic config the broker refuses — the task fails with "Unable to create topic(s) …". An
error worth retrying (Kafka unreachable, a timeout) fails the batch retriably, so the task
retries it within ``task.retry.timeout.ms`` with nothing produced (Kafka Connect fails the
task on a create that times out).

The admin client is confluent-kafka's, long-lived per task, in the task's process (the
driver, or the Spark task hosting it): metadata and CreateTopics requests are not the
coordinator requests ``storage.kafka_admin`` isolates in a child process. Each request is
bounded by ``deadline.remaining()``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import structlog
from confluent_kafka import KafkaError, KafkaException

from connect_grpc.config.worker import TOPIC_CREATION_ENABLE_PROPERTY, WorkerConfig
from connect_grpc.connectors.topic_creation_config import (
    TopicCreationGroup,
    TopicCreationSettings,
    ignored_keys,
    uses_topic_creation,
)
from connect_grpc.kernel import deadline
from connect_grpc.kernel.domain import TaskId
from connect_grpc.kernel.kafka_clients import (
    KafkaIoError,
    is_retriable,
    kafka_error_of,
    with_client_log,
)
from connect_grpc.pipeline.dead_letter import dlq_admin_conf

log = structlog.get_logger(__name__)

#: Kafka's answers after which Kafka Connect neither created nor found the topic.
_NOT_CREATED = frozenset({
    KafkaError.CLUSTER_AUTHORIZATION_FAILED,
    KafkaError.TOPIC_AUTHORIZATION_FAILED,
    KafkaError.UNSUPPORTED_VERSION,
})


class TopicCreationError(KafkaIoError):
    """A topic the task writes to could not be found or created."""


@dataclass(frozen=True, slots=True)
class TopicCreationSpec:
    """What a task needs to create its topics where it runs (picklable)."""

    #: The connector config's ``topic.creation.*`` keys (parsed where the task starts, so
    #: that an invalid one fails the task, not its creation).
    config: Mapping[str, str]
    admin_conf: Mapping[str, str]


def topic_creation_spec(
    worker_config: WorkerConfig,
    connector_config: Mapping[str, str],
    producer_conf: Mapping[str, str],
    task: TaskId,
) -> TopicCreationSpec | None:
    """The task's topic creation, or None when its connector uses none, or the worker's
    ``topic.creation.enable`` is off (the connector's keys are then ignored, as Kafka
    Connect ignores them; said once per task in the log)."""
    if not uses_topic_creation(connector_config):
        return None
    if not worker_config.topic_creation_enabled:
        log.warning(
            "topic_creation_disabled",
            connector=task.connector,
            task=task.task,
            reason=f"the worker has {TOPIC_CREATION_ENABLE_PROPERTY}=false: the connector's "
            "topic.creation.* settings are ignored",
        )
        return None
    admin_conf = dlq_admin_conf(producer_conf, connector_config, task)
    admin_conf["client.id"] = f"connector-adminclient-{task.connector}-{task.task}"
    keys = {k: v for k, v in connector_config.items() if k.startswith("topic.creation.")}
    return TopicCreationSpec(keys, admin_conf)


AdminFactory = Callable[[Mapping[str, str]], Any]


def _admin_client(conf: Mapping[str, str]) -> Any:
    from confluent_kafka.admin import AdminClient

    return AdminClient(with_client_log(conf, "topic-admin"))


class TopicCreator:
    """One task's topic creation: the groups, the topics known to exist, an admin client.
    Not thread-safe (the task's loop uses it)."""

    def __init__(
        self,
        spec: TopicCreationSpec,
        task: TaskId,
        admin_factory: AdminFactory | None = None,
    ) -> None:
        """``admin_factory`` makes the admin client from its config (confluent-kafka's
        AdminClient by default). Raises ValueError (Kafka Connect's messages) when the
        settings are invalid."""
        settings = TopicCreationSettings.from_config(spec.config)
        assert settings is not None  # the spec exists only for a config that uses them
        self._settings = settings
        self._spec = spec
        self._admin_factory = admin_factory or _admin_client
        self._admin: Any = None
        self._known: set[str] = set()
        self._log = log.bind(connector=task.connector, task=task.task)
        for key in ignored_keys(spec.config):
            self._log.warning("topic_creation_key_ignored", key=key)

    def ensure(self, topics: Iterable[str]) -> None:
        """Makes sure every topic exists, creating the missing ones; a no-op for topics
        already found or created by this task.

        Raises:
            TopicCreationError: a topic could not be found or created (retriable when
                Kafka's error is).
        """
        missing = [topic for topic in dict.fromkeys(topics) if topic not in self._known]
        if not missing:
            return
        self._log.info("topics_first_write", topics=missing)
        for topic in missing:
            if not self._exists(topic):
                self._create(topic, self._settings.group_for(topic))
            self._known.add(topic)

    def close(self) -> None:
        """Drops the admin client (confluent-kafka closes it when collected)."""
        self._admin = None

    def _client(self) -> Any:
        if self._admin is None:
            self._admin = self._admin_factory(self._spec.admin_conf)
        return self._admin

    def _exists(self, topic: str) -> bool:
        """Whether the topic exists (DescribeTopics, which never makes a broker create it);
        a topic the task may not describe counts as missing, as in Kafka Connect."""
        from confluent_kafka import TopicCollection

        timeout = deadline.remaining()
        futures = self._client().describe_topics(
            TopicCollection([topic]), request_timeout=timeout
        )
        try:
            futures[topic].result(timeout=timeout + 1.0)
        except KafkaException as exc:
            error = kafka_error_of(exc)
            if error is not None and error.code() in (
                KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError.TOPIC_AUTHORIZATION_FAILED
            ):
                return False
            raise _failure(f"Error while attempting to describe topic '{topic}'", exc) from exc
        except TimeoutError as exc:
            raise _timed_out(topic) from exc
        self._log.info("topic_exists", topic=topic)
        return True

    def _create(self, topic: str, group: TopicCreationGroup) -> None:
        from confluent_kafka.admin import NewTopic  # type: ignore[attr-defined]

        timeout = deadline.remaining()
        new_topic = NewTopic(
            topic,
            num_partitions=group.partitions,
            replication_factor=group.replication_factor,
            config=dict(group.topic_configs),
        )
        futures = self._client().create_topics(
            [new_topic], request_timeout=timeout, operation_timeout=timeout
        )
        try:
            futures[topic].result(timeout=timeout + 1.0)
        except KafkaException as exc:
            self._refused(topic, group, exc)
            return
        except TimeoutError as exc:
            raise _timed_out(topic) from exc
        self._log.info(
            "topic_created",
            topic=topic,
            group=group.name,
            partitions=group.partitions,
            replication_factor=group.replication_factor,
            topic_configs=dict(group.topic_configs),
        )

    def _refused(self, topic: str, group: TopicCreationGroup, exc: KafkaException) -> None:
        """A create Kafka answered with an error: fine when the topic exists (another task
        created it first), else the task's failure with Kafka Connect's message."""
        error = kafka_error_of(exc)
        code = None if error is None else error.code()
        if code == KafkaError.TOPIC_ALREADY_EXISTS:
            self._log.info("topic_exists", topic=topic, created_by="another client")
            return
        if code in _NOT_CREATED:
            raise TopicCreationError(
                f"Task failed to create new topic {group.new_topic_text(topic)}. Ensure that "
                "the task is authorized to create topics or that the topic exists and restart "
                "the task",
                retriable=False,
            ) from exc
        if code == KafkaError.INVALID_CONFIG:
            reason = error.str() if error is not None else str(exc)
            raise TopicCreationError(
                f"Unable to create topic(s) '{topic}': {reason}", retriable=False
            ) from exc
        raise _failure(f"Error while attempting to create/find topic(s) '{topic}'", exc) from exc


def _failure(context: str, exc: KafkaException) -> TopicCreationError:
    error = kafka_error_of(exc)
    if error is None:
        return TopicCreationError(f"{context}: {exc}", retriable=False)
    return TopicCreationError(
        f"{context}: {error.name()}: {error.str()}", retriable=is_retriable(error)
    )


def _timed_out(topic: str) -> TopicCreationError:
    return TopicCreationError(
        f"Timed out while checking for or creating topic(s) '{topic}'. This could indicate a "
        "connectivity issue, unavailable topic partitions, or if this is your first use of "
        "the topic it may have taken too long to create.",
        retriable=True,
    )


def start_topic_creation(spec: TopicCreationSpec | None, task: TaskId) -> TopicCreator | None:
    """The task's creator, or None without topic creation. Raises ValueError for invalid
    settings (the task fails to start, as Kafka Connect's connector does)."""
    return None if spec is None else TopicCreator(spec, task)
