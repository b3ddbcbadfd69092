"""The Kafka-topic offset and status stores against the real broker.

Every test uses its own topic; stores are stopped at teardown.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import pytest

from connect_grpc.kernel.domain import InstanceStatus, State, TaskId
from connect_grpc.storage.kafka_offsets import KafkaOffsetStore
from connect_grpc.storage.kafka_status import KafkaStatusStore
from connect_grpc.storage.log_topic import describe_topic_config
from connect_grpc.testing.cluster import wait_until
from tests.integration.helpers import raw_records

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

MAX_LONG = 2**63 - 1
TIMEOUT_S = 30.0

S = TypeVar("S", KafkaOffsetStore, KafkaStatusStore)


@pytest.fixture
def started(kafka_bootstrap: str) -> Iterator[Callable[[S], S]]:
    """Starts a store and stops it at teardown."""
    stores: list[KafkaOffsetStore | KafkaStatusStore] = []

    def start(store: S) -> S:
        store.start()
        stores.append(store)
        return store

    yield start
    for store in reversed(stores):
        store.stop()


def _offsets(bootstrap: str, topic: str, partitions: int = 3) -> KafkaOffsetStore:
    return KafkaOffsetStore({"bootstrap.servers": bootstrap}, topic, partitions, timeout=TIMEOUT_S)


def _statuses(bootstrap: str, topic: str, generation: int = 0) -> KafkaStatusStore:
    return KafkaStatusStore(
        {"bootstrap.servers": bootstrap}, topic, 3, generation=generation, timeout=TIMEOUT_S
    )


def test_offsets_put_get_get_all(
    kafka_bootstrap: str, unique_topic: str, started: Callable[[KafkaOffsetStore], Any]
) -> None:
    store = started(_offsets(kafka_bootstrap, unique_topic))
    store.put("conn", [({"file": "/a"}, {"pos": 1}), ({"file": "/b"}, {"pos": 2})])
    store.put("conn", [({"file": "/a"}, {"pos": 3})])
    store.put("other", [({"file": "/a"}, {"pos": 9})])

    assert store.get("conn", {"file": "/a"}) == {"pos": 3}
    assert store.get("conn", {"file": "/c"}) is None
    assert sorted(store.get_all("conn"), key=repr) == [
        ({"file": "/a"}, {"pos": 3}),
        ({"file": "/b"}, {"pos": 2}),
    ]
    assert store.get_all("other") == [({"file": "/a"}, {"pos": 9})]
    assert store.get_all("nobody") == []


def test_offsets_tombstone_resets_a_partition(
    kafka_bootstrap: str, unique_topic: str, started: Callable[[KafkaOffsetStore], Any]
) -> None:
    store = started(_offsets(kafka_bootstrap, unique_topic))
    store.put("conn", [({"p": 0}, {"pos": 1}), ({"p": 1}, {"pos": 2})])
    store.put("conn", [({"p": 0}, None)])

    assert store.get("conn", {"p": 0}) is None
    assert store.get_all("conn") == [({"p": 1}, {"pos": 2})]
    later = started(_offsets(kafka_bootstrap, unique_topic))
    assert later.get("conn", {"p": 0}) is None
    assert later.get_all("conn") == [({"p": 1}, {"pos": 2})]


def test_offsets_keep_64_bit_integers_exact(
    kafka_bootstrap: str, unique_topic: str, started: Callable[[KafkaOffsetStore], Any]
) -> None:
    store = started(_offsets(kafka_bootstrap, unique_topic))
    store.put("conn", [({"p": MAX_LONG}, {"pos": MAX_LONG, "neg": -(2**63)})])

    later = started(_offsets(kafka_bootstrap, unique_topic))
    assert later.get("conn", {"p": MAX_LONG}) == {"pos": MAX_LONG, "neg": -(2**63)}
    assert store.get("conn", {"p": MAX_LONG}) == {"pos": MAX_LONG, "neg": -(2**63)}


def test_offsets_survive_a_restart(
    kafka_bootstrap: str, unique_topic: str, started: Callable[[KafkaOffsetStore], Any]
) -> None:
    first = _offsets(kafka_bootstrap, unique_topic)
    first.start()
    try:
        first.put("conn", [({"file": "/a", "n": 1}, {"pos": 10, "done": False, "r": 0.5})])
    finally:
        first.stop()

    second = started(_offsets(kafka_bootstrap, unique_topic))
    assert second.get("conn", {"n": 1, "file": "/a"}) == {"pos": 10, "done": False, "r": 0.5}


def test_running_instance_sees_new_offsets_after_refresh(
    kafka_bootstrap: str, unique_topic: str, started: Callable[[KafkaOffsetStore], Any]
) -> None:
    writer = started(_offsets(kafka_bootstrap, unique_topic))
    reader = started(_offsets(kafka_bootstrap, unique_topic))
    writer.put("conn", [({"p": i}, {"pos": i * 10}) for i in range(20)])
    writer.put("conn", [({"p": 3}, None)])

    reader.refresh(TIMEOUT_S)
    assert reader.get("conn", {"p": 7}) == {"pos": 70}
    assert reader.get("conn", {"p": 3}) is None
    assert len(reader.get_all("conn")) == 19

    writer.put("conn", [({"p": 7}, {"pos": 71})])
    wait_until(lambda: reader.get("conn", {"p": 7}) == {"pos": 71}, timeout=TIMEOUT_S)


def test_offsets_topic_is_created_compacted_with_kafka_connect_records(
    kafka_bootstrap: str,
    kafka_admin: Any,
    unique_topic: str,
    started: Callable[[KafkaOffsetStore], Any],
) -> None:
    store = started(
        KafkaOffsetStore({"bootstrap.servers": kafka_bootstrap}, unique_topic, timeout=TIMEOUT_S)
    )
    store.put("conn", [({"filename": "/a"}, {"position": 42})])

    assert describe_topic_config(kafka_admin, unique_topic, "cleanup.policy") == "compact"
    metadata = kafka_admin.list_topics(unique_topic, timeout=TIMEOUT_S).topics[unique_topic]
    assert len(metadata.partitions) == 25
    assert raw_records(kafka_bootstrap, unique_topic, 1) == [
        (b'["conn",{"filename":"/a"}]', b'{"position":42}')
    ]


def test_status_put_get_delete(
    kafka_bootstrap: str, unique_topic: str, started: Callable[[KafkaStatusStore], Any]
) -> None:
    store = started(_statuses(kafka_bootstrap, unique_topic))
    running = InstanceStatus(State.RUNNING, "w1")
    failed = InstanceStatus(State.FAILED, "w2", "Traceback: boom")
    store.put_connector("conn", running)
    store.put_task(TaskId("conn", 0), running)
    store.put_task(TaskId("conn", 1), failed)
    store.put_task(TaskId("conn", 1), InstanceStatus(State.RESTARTING, "w2"))

    assert store.get_connector("conn") == running
    assert store.get_task(TaskId("conn", 1)) == InstanceStatus(State.RESTARTING, "w2")
    assert store.tasks("conn") == {0: running, 1: InstanceStatus(State.RESTARTING, "w2")}

    store.delete_task(TaskId("conn", 0))
    assert store.get_task(TaskId("conn", 0)) is None
    assert store.tasks("conn") == {1: InstanceStatus(State.RESTARTING, "w2")}

    store.delete_connector("conn")
    assert store.get_connector("conn") is None
    assert store.tasks("conn") == {}


def test_status_task_keys_with_dashed_connector_names(
    kafka_bootstrap: str, unique_topic: str, started: Callable[[KafkaStatusStore], Any]
) -> None:
    store = started(_statuses(kafka_bootstrap, unique_topic))
    status = InstanceStatus(State.RUNNING, "w1")
    store.put_task(TaskId("my-conn", 0), status)
    store.put_task(TaskId("my-conn-1", 2), status)
    store.put_task(TaskId("my", 11), status)
    store.put_connector("my-conn-1", status)
    store.flush(TIMEOUT_S)  # writes are asynchronous

    later = started(_statuses(kafka_bootstrap, unique_topic))
    for view in (store, later):
        assert view.tasks("my-conn") == {0: status}
        assert view.tasks("my-conn-1") == {2: status}
        assert view.tasks("my") == {11: status}
        assert view.get_connector("my-conn-1") == status
        assert view.get_connector("my-conn") is None


def test_status_second_instance_sees_writes_and_deletes(
    kafka_bootstrap: str, unique_topic: str, started: Callable[[KafkaStatusStore], Any]
) -> None:
    writer = started(_statuses(kafka_bootstrap, unique_topic, generation=4))
    reader = started(_statuses(kafka_bootstrap, unique_topic))
    failed = InstanceStatus(State.FAILED, "w1", "Traceback: boom")
    writer.put_connector("conn", InstanceStatus(State.RUNNING, "w1"))
    writer.put_task(TaskId("conn", 0), failed)
    writer.put_connector("gone", InstanceStatus(State.PAUSED, "w1"))
    writer.put_task(TaskId("gone", 3), InstanceStatus(State.PAUSED, "w1"))
    writer.flush(TIMEOUT_S)  # writes are asynchronous

    reader.refresh(TIMEOUT_S)
    assert reader.get_connector("conn") == InstanceStatus(State.RUNNING, "w1")
    assert reader.get_task(TaskId("conn", 0)) == failed
    assert reader.tasks("gone") == {3: InstanceStatus(State.PAUSED, "w1")}

    writer.delete_connector("gone")
    writer.flush(TIMEOUT_S)
    reader.refresh(TIMEOUT_S)
    assert reader.get_connector("gone") is None
    assert reader.tasks("gone") == {}

    writer.put_task(TaskId("conn", 0), InstanceStatus(State.RUNNING, "w1"))
    wait_until(
        lambda: reader.get_task(TaskId("conn", 0)) == InstanceStatus(State.RUNNING, "w1"),
        timeout=TIMEOUT_S,
    )


def test_status_records_have_kafka_connect_format(
    kafka_bootstrap: str,
    kafka_admin: Any,
    unique_topic: str,
    started: Callable[[KafkaStatusStore], Any],
) -> None:
    store = started(
        KafkaStatusStore(
            {"bootstrap.servers": kafka_bootstrap}, unique_topic, generation=2, timeout=TIMEOUT_S
        )
    )
    store.put_task(TaskId("my-conn", 1), InstanceStatus(State.RUNNING, "w1"))
    store.flush(TIMEOUT_S)  # else the tombstone replaces the pending put: one record only
    store.delete_task(TaskId("my-conn", 1))
    store.flush(TIMEOUT_S)  # writes are asynchronous

    assert describe_topic_config(kafka_admin, unique_topic, "cleanup.policy") == "compact"
    metadata = kafka_admin.list_topics(unique_topic, timeout=TIMEOUT_S).topics[unique_topic]
    assert len(metadata.partitions) == 5
    assert raw_records(kafka_bootstrap, unique_topic, 2) == [
        (
            b"status-task-my-conn-1",
            b'{"state":"RUNNING","trace":null,"worker_id":"w1","generation":2}',
        ),
        (b"status-task-my-conn-1", None),
    ]
