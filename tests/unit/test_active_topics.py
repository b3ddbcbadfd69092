"""Topic tracking (KIP-558): the status topic's active-topic records in Kafka Connect's
format, both stores, and the board that records each (connector, topic) once."""

from __future__ import annotations

import json
from collections.abc import Collection, Iterator
from pathlib import Path

import grpc
import pytest
import structlog
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from connect_grpc.api.servicer import ConnectServicer
from connect_grpc.config.worker import WorkerConfig
from connect_grpc.connectors.api import SourceRecord
from connect_grpc.connectors.plugins import Plugins
from connect_grpc.herder.standalone import StandaloneHerder
from connect_grpc.herder.status import StatusBoard
from connect_grpc.kernel.domain import ActiveTopic, TaskId
from connect_grpc.kernel.errors import ConnectError, FailedPreconditionError, InvalidArgumentError
from connect_grpc.runtime.kafka_results import KafkaFailure
from connect_grpc.runtime.source_batch import Batch, delivered_topics
from connect_grpc.runtime.task import TaskRunner
from connect_grpc.storage.file_offsets import FileOffsetStore
from connect_grpc.storage.kafka_status import KafkaStatusStore
from connect_grpc.storage.memory_status import MemoryStatusStore
from connect_grpc.storage.status_codec import (
    TopicKey,
    active_topic_key,
    decode_active_topic,
    encode_active_topic,
    parse_topic_key,
)
from connect_grpc.v1 import connect_pb2 as pb
from connect_grpc.v1 import connect_pb2_grpc as pb_grpc
from tests.unit.fake_worker import FakeWorker
from tests.unit.grpc_stubs import connect_stub
from tests.unit.status_stores import StatusLog, started_store, status_log

pytestmark = pytest.mark.timeout(20)

#: A record as Kafka Connect 4.x's KafkaStatusBackingStore writes it (JsonConverter with
#: schemas.enable=false, struct fields in schema order).
KAFKA_KEY = b"status-topic-orders:connector-jdbc-sink"
KAFKA_VALUE = (
    b'{"topic":{"name":"orders","connector":"jdbc-sink","task":2,'
    b'"discoverTimestamp":1700000000123}}'
)


def test_a_record_kafka_connect_wrote_decodes() -> None:
    assert parse_topic_key(KAFKA_KEY) == TopicKey("jdbc-sink", "orders")
    assert decode_active_topic(KAFKA_VALUE) == ActiveTopic(
        "orders", "jdbc-sink", 2, 1700000000123
    )


def test_a_record_written_here_is_byte_for_byte_what_kafka_connect_writes() -> None:
    active = ActiveTopic("orders", "jdbc-sink", 2, 1700000000123)
    assert active_topic_key("jdbc-sink", "orders") == KAFKA_KEY
    assert encode_active_topic(active) == KAFKA_VALUE


def test_a_connector_name_with_colons_and_dashes_survives_the_key() -> None:
    key = active_topic_key("a:b-connector-c", "t.1_x")
    assert key == b"status-topic-t.1_x:connector-a:b-connector-c"
    assert parse_topic_key(key) == TopicKey("a:b-connector-c", "t.1_x")


@pytest.mark.parametrize(
    "key",
    [
        b"status-topic-orders",
        b"status-topic-:connector-c",
        b"status-topic-orders:connector-",
        b"status-topic-orders:conn-c",
        b"status-connector-c",
        b"\xff",
    ],
)
def test_a_malformed_key_is_not_an_active_topic(key: bytes) -> None:
    assert parse_topic_key(key) is None


@pytest.mark.parametrize(
    "value",
    [
        b"not json",
        b"[]",
        b'{"topic":null}',
        b'{"topic":{"name":"t","connector":"c","task":"0","discoverTimestamp":1}}',
        b'{"topic":{"name":"t","connector":"c","task":true,"discoverTimestamp":1}}',
        b'{"topic":{"name":"t","connector":"c","task":0}}',
        b'{"topic":{"connector":"c","task":0,"discoverTimestamp":1}}',
    ],
)
def test_a_malformed_value_is_not_an_active_topic(value: bytes) -> None:
    assert decode_active_topic(value) is None


@pytest.fixture
def log(monkeypatch: pytest.MonkeyPatch) -> StatusLog:
    return status_log(monkeypatch)


@pytest.fixture
def store(log: StatusLog) -> Iterator[KafkaStatusStore]:
    with started_store(log) as store:
        yield store


def test_the_status_topic_store_reads_kafka_connects_records_and_tombstones(
    store: KafkaStatusStore, log: StatusLog
) -> None:
    store._apply(log.next_record(KAFKA_KEY, KAFKA_VALUE))
    audit = KAFKA_VALUE.replace(b'"orders"', b'"audit"')
    store._apply(log.next_record(b"status-topic-audit:connector-jdbc-sink", audit))
    assert [t.topic for t in store.topics("jdbc-sink")] == ["audit", "orders"]
    store._apply(log.next_record(KAFKA_KEY, None))
    assert store.get_topic("jdbc-sink", "orders") is None
    assert [t.topic for t in store.topics("jdbc-sink")] == ["audit"]


def test_a_put_and_a_reset_are_written_as_kafka_connect_writes_them(
    store: KafkaStatusStore, log: StatusLog
) -> None:
    store.put_topic(ActiveTopic("orders", "jdbc-sink", 2, 1700000000123))
    store.flush(5)
    store.delete_topic("jdbc-sink", "orders")
    store.flush(5)
    assert log.written == [(KAFKA_KEY, KAFKA_VALUE), (KAFKA_KEY, None)]
    assert store.topics("jdbc-sink") == []


def test_a_put_while_kafka_is_away_shows_at_once_and_is_written_when_it_is_back(
    store: KafkaStatusStore, log: StatusLog
) -> None:
    log.down.set()
    store.put_topic(ActiveTopic("orders", "jdbc-sink", 0, 1))
    assert store.get_topic("jdbc-sink", "orders") == ActiveTopic("orders", "jdbc-sink", 0, 1)
    log.down.clear()
    store.flush(5)
    assert [key for key, _ in log.written] == [KAFKA_KEY]


def test_active_topic_records_leave_statuses_alone(
    store: KafkaStatusStore, log: StatusLog
) -> None:
    store._apply(log.next_record(KAFKA_KEY, KAFKA_VALUE))
    assert store.get_connector("jdbc-sink") is None
    assert store.tasks("jdbc-sink") == {}


class CountingStore(MemoryStatusStore):
    def __init__(self) -> None:
        super().__init__()
        self.puts: list[ActiveTopic] = []

    def put_topic(self, active: ActiveTopic) -> None:
        self.puts.append(active)
        super().put_topic(active)


def test_the_board_writes_a_topic_once_per_connector_whatever_the_task() -> None:
    store = CountingStore()
    board = StatusBoard("w1", store)
    board.record_active_topics(TaskId("sink", 0), {"a", "b"})
    board.record_active_topics(TaskId("sink", 1), {"a", "b"})
    board.record_active_topics(TaskId("sink", 0), {"b", "c"})
    board.record_active_topics(TaskId("other", 0), {"a"})
    assert sorted((p.connector, p.topic, p.task) for p in store.puts) == [
        ("other", "a", 0),
        ("sink", "a", 0),
        ("sink", "b", 0),
        ("sink", "c", 0),
    ]
    assert board.active_topics("sink") == ["a", "b", "c"]
    assert board.active_topics("unknown") == []


def test_a_reset_topic_is_recorded_again_when_a_task_uses_it_again() -> None:
    store = CountingStore()
    board = StatusBoard("w1", store)
    board.record_active_topics(TaskId("sink", 0), {"a"})
    board.reset_active_topics("sink")
    assert board.active_topics("sink") == []
    board.record_active_topics(TaskId("sink", 0), {"a"})
    assert board.active_topics("sink") == ["a"]
    assert len(store.puts) == 2


def test_a_deleted_connectors_topics_are_forgotten() -> None:
    board = StatusBoard("w1", MemoryStatusStore())
    board.record_active_topics(TaskId("sink", 0), {"a"})
    board.record_active_topics(TaskId("kept", 0), {"a"})
    board.forget_connector("sink")
    assert board.active_topics("sink") == []
    assert board.active_topics("kept") == ["a"]


def test_the_discover_timestamp_is_epoch_milliseconds() -> None:
    store = MemoryStatusStore()
    StatusBoard("w1", store).record_active_topics(TaskId("sink", 3), {"a"})
    recorded = store.get_topic("sink", "a")
    assert recorded is not None and recorded.task == 3
    assert json.loads(encode_active_topic(recorded))["topic"]["discoverTimestamp"] > 1.6e12


def test_the_worker_settings_default_to_true_and_parse_as_booleans() -> None:
    base = {"bootstrap.servers": "localhost:9092"}
    default = WorkerConfig.from_properties(base)
    assert default.topic_tracking_enabled and default.topic_tracking_reset_allowed
    off = WorkerConfig.from_properties(
        {**base, "topic.tracking.enable": " FALSE ", "topic.tracking.allow.reset": "False"}
    )
    assert not off.topic_tracking_enabled and not off.topic_tracking_reset_allowed
    with pytest.raises(InvalidArgumentError, match=r"topic\.tracking\.enable"):
        WorkerConfig.from_properties({**base, "topic.tracking.enable": "yes"})


def standalone(tmp_path: Path, plugins: Plugins, **settings: str) -> StandaloneHerder:
    config = WorkerConfig.from_properties(
        {"bootstrap.servers": "127.0.0.1:1", "listeners": "grpc://127.0.0.1:0",
         "worker.id": "w1", **settings}
    )
    herder = StandaloneHerder(
        config, plugins, FileOffsetStore(tmp_path / "offsets.json"),
        lambda board: FakeWorker(board, plugins),
    )
    herder.start()
    return herder


def test_the_herder_answers_the_topics_sorted_and_forgets_them_on_reset(
    tmp_path: Path, plugins: Plugins
) -> None:
    herder = standalone(tmp_path, plugins)
    herder._board.record_active_topics(TaskId("sink", 0), {"b", "a"})
    assert herder.connector_topics("sink") == ["a", "b"]
    assert herder.connector_topics("nobody") == []
    herder.reset_connector_topics("sink")
    herder.reset_connector_topics("nobody")
    assert herder.connector_topics("sink") == []


def test_disabled_tracking_is_refused_with_kafka_connects_message(
    tmp_path: Path, plugins: Plugins
) -> None:
    herder = standalone(tmp_path, plugins, **{"topic.tracking.enable": "false"})
    for call in (herder.connector_topics, herder.reset_connector_topics):
        with pytest.raises(FailedPreconditionError) as refused:
            call("sink")
        assert refused.value.message == "Topic tracking is disabled."
        assert refused.value.violations[0].subject == "topic.tracking.enable"


def test_a_disabled_reset_is_refused_and_the_topics_stay(
    tmp_path: Path, plugins: Plugins
) -> None:
    herder = standalone(tmp_path, plugins, **{"topic.tracking.allow.reset": "false"})
    herder._board.record_active_topics(TaskId("sink", 0), {"a"})
    with pytest.raises(FailedPreconditionError) as refused:
        herder.reset_connector_topics("sink")
    assert refused.value.message == "Topic tracking reset is disabled."
    assert refused.value.violations[0].subject == "topic.tracking.allow.reset"
    assert herder.connector_topics("sink") == ["a"]


class FailingRecorder:
    def record_active_topics(self, task: TaskId, topics: Collection[str]) -> None:
        raise ConnectError("status topic gone")


class RunnerStandIn:
    """What ``TaskRunner.record_topics`` uses of its runner."""

    def __init__(self, recorder: object) -> None:
        self.id = TaskId("sink", 0)
        self._active_topics = recorder
        self.log = structlog.get_logger()


def test_a_failing_recorder_never_raises_into_the_task_loop() -> None:
    TaskRunner.record_topics(RunnerStandIn(FailingRecorder()), {"a"})  # type: ignore[arg-type]


@pytest.fixture
def disabled_stub(tmp_path: Path, plugins: Plugins) -> Iterator[pb_grpc.ConnectServiceStub]:
    """An in-process server of a standalone herder whose worker does not track topics."""
    herder = standalone(tmp_path, plugins, **{"topic.tracking.enable": "false"})
    with connect_stub(ConnectServicer(herder)) as stub:
        yield stub


def _precondition_subjects(error: grpc.RpcError) -> list[str]:
    status = rpc_status.from_call(error)  # type: ignore[arg-type]
    assert status is not None
    failure = error_details_pb2.PreconditionFailure()
    [detail] = [d for d in status.details if d.Is(failure.DESCRIPTOR)]
    detail.Unpack(failure)
    return [violation.subject for violation in failure.violations]


def test_disabled_tracking_over_grpc_is_failed_precondition_naming_the_setting(
    disabled_stub: pb_grpc.ConnectServiceStub,
) -> None:
    calls = [
        lambda: disabled_stub.GetConnectorTopics(
            pb.GetConnectorTopicsRequest(name="sink"), timeout=10),
        lambda: disabled_stub.ResetConnectorTopics(
            pb.ResetConnectorTopicsRequest(name="sink"), timeout=10),
    ]
    for call in calls:
        with pytest.raises(grpc.RpcError) as refused:
            call()
        assert refused.value.code() is grpc.StatusCode.FAILED_PRECONDITION
        assert refused.value.details() == "Topic tracking is disabled."
        assert _precondition_subjects(refused.value) == ["topic.tracking.enable"]


def test_an_empty_connector_name_is_invalid_argument(
    disabled_stub: pb_grpc.ConnectServiceStub,
) -> None:
    with pytest.raises(grpc.RpcError) as refused:
        disabled_stub.GetConnectorTopics(pb.GetConnectorTopicsRequest(name=" "), timeout=10)
    assert refused.value.code() is grpc.StatusCode.INVALID_ARGUMENT


def _records(*topics: str) -> list[SourceRecord]:
    return [SourceRecord({"p": 0}, {"o": n}, topic, value=n) for n, topic in enumerate(topics)]


def test_a_batch_gathers_its_topics_once_and_records_only_those_a_send_succeeded_for() -> None:
    batch = Batch(_records("a", "b", "a", "c")).through(None)
    assert batch.topics == {"a", "b", "c"}
    refused = KafkaFailure(10, "MSG_SIZE_TOO_LARGE", False, "too large")
    assert delivered_topics(batch, []) == {"a", "b", "c"}
    # every record of b and c refused for good; a has one record through
    assert delivered_topics(batch, [(1, refused), (2, refused), (3, refused)]) == {"a"}
