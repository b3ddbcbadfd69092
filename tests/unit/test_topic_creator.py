"""A source task's topic creation against a fake admin client: found or created once per
topic, existing topics untouched, a lost race accepted, Kafka Connect's failures."""

from __future__ import annotations

import time
from collections.abc import Mapping
from concurrent.futures import Future
from typing import Any, cast

import pytest
from confluent_kafka import KafkaError, KafkaException

from connect_grpc.config.worker import WorkerConfig
from connect_grpc.connectors.api import SourceRecord
from connect_grpc.connectors.plugins import Plugins
from connect_grpc.kernel.domain import State, TargetState, TaskId
from connect_grpc.pipeline.build import ConnectorPipeline
from connect_grpc.pipeline.spec import pipeline_spec
from connect_grpc.runtime import topic_creator
from connect_grpc.runtime.retry import RetryPolicy, is_retriable_error
from connect_grpc.runtime.source_task import SourceTaskRunner
from connect_grpc.runtime.spark import SparkRuntime
from connect_grpc.runtime.task_host import DriverHost
from connect_grpc.runtime.task_setup import TaskClients, TaskSetup
from connect_grpc.runtime.topic_creator import (
    TopicCreationError,
    TopicCreationSpec,
    TopicCreator,
    topic_creation_spec,
)
from tests.task_fakes import FakeSpark, PollOnceSource, StatusRecorder

TASK = TaskId("src", 0)
CONFIG = {
    "topic.creation.groups": "compacted",
    "topic.creation.default.replication.factor": "1",
    "topic.creation.default.partitions": "2",
    "topic.creation.compacted.include": "state-.*",
    "topic.creation.compacted.partitions": "5",
    "topic.creation.compacted.cleanup.policy": "compact",
}


def _done(error: int | None = None) -> Future[Any]:
    future: Future[Any] = Future()
    if error is None:
        future.set_result(None)
    else:
        future.set_exception(KafkaException(KafkaError(error)))
    return future


class FakeAdmin:
    def __init__(self, existing: set[str], create_error: int | None = None) -> None:
        self.existing = existing
        self.create_error = create_error
        self.described: list[str] = []
        self.created: list[Any] = []

    def describe_topics(self, topics: Any, request_timeout: float) -> dict[str, Future[Any]]:
        [topic] = topics.topic_names
        self.described.append(topic)
        known = topic in self.existing
        return {topic: _done(None if known else KafkaError.UNKNOWN_TOPIC_OR_PART)}

    def create_topics(self, topics: list[Any], **_: float) -> dict[str, Future[Any]]:
        [new_topic] = topics
        self.created.append(new_topic)
        return {new_topic.topic: _done(self.create_error)}


def _creator(admin: FakeAdmin) -> TopicCreator:
    def factory(conf: Mapping[str, str]) -> FakeAdmin:
        return admin

    return TopicCreator(TopicCreationSpec(CONFIG, {}), TASK, admin_factory=factory)


def test_a_missing_topic_is_created_once_with_its_groups_settings() -> None:
    admin = FakeAdmin(existing=set())
    creator = _creator(admin)
    creator.ensure(["state-1", "state-1", "orders"])
    creator.ensure(["state-1", "orders"])
    assert admin.described == ["state-1", "orders"]
    state, orders = admin.created
    assert (state.topic, state.num_partitions, state.replication_factor) == ("state-1", 5, 1)
    assert state.config == {"cleanup.policy": "compact"}
    assert (orders.topic, orders.num_partitions, orders.config) == ("orders", 2, {})


def test_an_existing_topic_is_left_untouched() -> None:
    admin = FakeAdmin(existing={"state-1"})
    _creator(admin).ensure(["state-1"])
    assert admin.created == []


def test_a_create_lost_to_another_task_is_fine() -> None:
    admin = FakeAdmin(existing=set(), create_error=KafkaError.TOPIC_ALREADY_EXISTS)
    creator = _creator(admin)
    creator.ensure(["state-1"])
    creator.ensure(["state-1"])
    assert len(admin.created) == 1


def test_a_create_the_task_may_not_do_fails_it_with_kafka_connects_message() -> None:
    admin = FakeAdmin(existing=set(), create_error=KafkaError.TOPIC_AUTHORIZATION_FAILED)
    with pytest.raises(TopicCreationError) as caught:
        _creator(admin).ensure(["state-1"])
    assert str(caught.value) == (
        "Task failed to create new topic (name=state-1, numPartitions=5, replicationFactor=1, "
        "replicasAssignments=null, configs={cleanup.policy=compact}). Ensure that the task is "
        "authorized to create topics or that the topic exists and restart the task"
    )
    assert not is_retriable_error(caught.value)


def test_a_refused_topic_config_fails_the_task() -> None:
    admin = FakeAdmin(existing=set(), create_error=KafkaError.INVALID_CONFIG)
    with pytest.raises(TopicCreationError, match=r"^Unable to create topic\(s\) 'orders': "):
        _creator(admin).ensure(["orders"])


def test_an_unreachable_kafka_is_retried_and_the_topic_asked_about_again() -> None:
    admin = FakeAdmin(existing=set(), create_error=KafkaError._TRANSPORT)
    creator = _creator(admin)
    with pytest.raises(TopicCreationError) as caught:
        creator.ensure(["orders"])
    assert is_retriable_error(caught.value)
    admin.create_error = None
    creator.ensure(["orders"])
    assert admin.described == ["orders", "orders"]


def test_invalid_settings_fail_the_task_at_start() -> None:
    spec = TopicCreationSpec({"topic.creation.default.partitions": "0"}, {})
    with pytest.raises(ValueError, match="Missing required configuration"):
        TopicCreator(spec, TASK)


def test_the_spec_follows_the_worker_and_the_connector() -> None:
    enabled = WorkerConfig.from_properties({"bootstrap.servers": "b:9092"})
    disabled = WorkerConfig.from_properties(
        {"bootstrap.servers": "b:9092", "topic.creation.enable": "false"}
    )
    producer = {"bootstrap.servers": "b:9092", "acks": "all"}
    connector = {**CONFIG, "admin.override.request.timeout.ms": "5000", "file": "x"}
    spec = topic_creation_spec(enabled, connector, producer, TASK)
    assert spec is not None
    assert spec.config == CONFIG
    assert spec.admin_conf == {
        "bootstrap.servers": "b:9092",
        "request.timeout.ms": "5000",
        "client.id": "connector-adminclient-src-0",
    }
    assert topic_creation_spec(disabled, connector, producer, TASK) is None
    assert topic_creation_spec(enabled, {"file": "x"}, producer, TASK) is None


# ---- in a source task: after the transformations, before the produce ----------------------


class _Store:
    def __init__(self) -> None:
        self.writes: list[Any] = []

    def put(self, connector: str, entries: Any) -> None:
        self.writes.append(list(entries))

    def get(self, connector: str, partition: Any) -> None:
        return None


class _RecordingRunner(SourceTaskRunner):
    """Produces into the shared event list instead of Kafka."""

    events: list[tuple[str, str]]

    def _produce(self, records: Any, tolerate: bool = False) -> list[Any]:
        self.events.extend(("produce", record.topic) for record in records)
        return []


class _SharedAdmin(FakeAdmin):
    def __init__(self, events: list[tuple[str, str]], create_errors: list[int]) -> None:
        super().__init__(existing=set())
        self.events = events
        self.create_errors = create_errors

    def create_topics(self, topics: list[Any], **timeouts: float) -> dict[str, Future[Any]]:
        self.create_error = self.create_errors.pop(0) if self.create_errors else None
        self.events.append(("create", topics[0].topic))
        return super().create_topics(topics, **timeouts)


def _run_routed_source(
    monkeypatch: pytest.MonkeyPatch, create_errors: list[int]
) -> tuple[list[tuple[str, str]], StatusRecorder]:
    events: list[tuple[str, str]] = []
    admin = _SharedAdmin(events, create_errors)
    monkeypatch.setattr(topic_creator, "_admin_client", lambda conf: admin)
    connector = {
        "topic": "raw-orders",
        "transforms": "route",
        "transforms.route.type": "org.apache.kafka.connect.transforms.RegexRouter",
        "transforms.route.regex": "raw-(.*)",
        "transforms.route.replacement": "$1",
        **CONFIG,
    }
    worker = WorkerConfig.from_properties({"bootstrap.servers": "127.0.0.1:9092"})
    records = [SourceRecord({"f": "a"}, {"line": i}, "raw-orders", value=b"x") for i in range(2)]
    recorder, store = StatusRecorder(), _Store()
    setup = TaskSetup(TASK, "w1", worker, connector, {})
    runner = _RecordingRunner(
        setup,
        DriverHost(PollOnceSource(records)),
        TaskClients(recorder, cast(SparkRuntime, FakeSpark()), offset_store=cast(Any, store)),
        pipeline_spec(
            ConnectorPipeline(connector, worker, Plugins(), is_sink=False),
            TASK,
            setup.producer_conf(),
            connector,
        ),
        retry_policy=RetryPolicy(timeout_s=5.0, backoff_max_s=0.02, backoff_initial_s=0.01),
    )
    runner.events = events
    assert runner.start({}, TargetState.STARTED)
    try:
        end = time.monotonic() + 5
        while not store.writes:
            assert time.monotonic() < end, "the batch was not committed"
            time.sleep(0.01)
    finally:
        runner.finish_stop(False, 2)
    return events, recorder


def test_a_task_creates_the_routed_topic_before_producing_to_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    events, _ = _run_routed_source(monkeypatch, [])
    assert events == [("create", "orders"), ("produce", "orders"), ("produce", "orders")]


def test_a_create_kafka_did_not_answer_is_retried_and_nothing_produced_before(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    events, recorder = _run_routed_source(monkeypatch, [KafkaError._TRANSPORT])
    assert events == [
        ("create", "orders"), ("create", "orders"), ("produce", "orders"), ("produce", "orders")
    ]
    assert recorder.states() == [State.RUNNING, State.RETRYING, State.RUNNING]
