"""The Kafka-topic config store against the real broker.

Every test uses its own topic; stores are stopped at teardown.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from connect_grpc.kernel.domain import RestartRequest, TargetState
from connect_grpc.storage.config_codec import (
    REMOVAL_CHANGE_INDEX,
    extension_record,
    removal_records,
    restart_records,
    target_state_records,
    term_marker_record,
)
from connect_grpc.storage.config_snapshot import ChangeKind
from connect_grpc.storage.kafka_config import KafkaConfigStore
from connect_grpc.storage.log_topic import describe_topic_config
from connect_grpc.testing.cluster import wait_until
from tests.integration.helpers import raw_records

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

TIMEOUT_S = 30.0

#: One listener call: (kind, connector, restart request).
Change = tuple[ChangeKind, str, RestartRequest | None]
Starter = Callable[..., KafkaConfigStore]


class Recorder:
    """A thread-safe listener that remembers every call."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._changes: list[Change] = []

    def __call__(self, kind: ChangeKind, connector: str, restart: RestartRequest | None) -> None:
        with self._lock:
            self._changes.append((kind, connector, restart))

    @property
    def changes(self) -> list[Change]:
        with self._lock:
            return list(self._changes)


@pytest.fixture
def started(kafka_bootstrap: str, unique_topic: str) -> Iterator[Starter]:
    """Starts a config store on the test's topic and stops it at teardown."""
    stores: list[KafkaConfigStore] = []

    def start(**kwargs: Any) -> KafkaConfigStore:
        store = KafkaConfigStore(
            {"bootstrap.servers": kafka_bootstrap}, unique_topic, timeout=TIMEOUT_S, **kwargs
        )
        store.start()
        stores.append(store)
        return store

    yield start
    for store in reversed(stores):
        store.stop()


def test_put_and_remove_round_trip(started: Starter) -> None:
    store = started()
    store.put_connector_config("c", {"connector.class": "X"}, TargetState.PAUSED)
    store.put_task_configs("c", [{"t": "0"}, {"t": "1"}])
    store.put_task_count_record("c", 2)

    snapshot = store.snapshot()
    assert snapshot.connectors == {"c": {"connector.class": "X"}}
    assert snapshot.target_state("c") is TargetState.PAUSED
    assert snapshot.task_configs("c") == ({"t": "0"}, {"t": "1"})
    assert snapshot.task_counts == {"c": 2}
    assert snapshot.offset == 6  # six records written: the offset after the last

    store.put_target_state("c", TargetState.STOPPED)
    assert store.snapshot().target_state("c") is TargetState.STOPPED

    store.remove_connector("c")
    snapshot = store.snapshot()
    assert not snapshot.contains("c")
    assert snapshot.task_configs("c") == ()
    assert snapshot.target_state("c") is None


def test_a_store_started_later_sees_everything(started: Starter) -> None:
    first = started()
    first.put_connector_config("a", {"k": "a"})
    first.put_task_configs("a", [{"t": "a0"}])
    first.put_connector_config("b", {"k": "b"}, TargetState.STOPPED)
    first.put_task_configs("b", [{"t": "b0"}, {"t": "b1"}])
    first.put_task_configs("b", [{"t": "b0'"}])
    first.put_connector_config("gone", {"k": "gone"})
    first.remove_connector("gone")
    first.put_restart_request(RestartRequest("a", include_tasks=True))

    second = started()
    assert second.snapshot() == first.snapshot()
    snapshot = second.snapshot()
    assert set(snapshot.connectors) == {"a", "b"}
    assert snapshot.task_configs("b") == ({"t": "b0'"},)
    assert snapshot.target_states == {"a": TargetState.STARTED, "b": TargetState.STOPPED}


def test_a_running_store_sees_writes_and_hears_of_them(started: Starter) -> None:
    recorder = Recorder()
    writer = started()
    reader = started(on_change=recorder)

    writer.put_connector_config("c", {"k": "v"})
    writer.put_task_configs("c", [{"t": "0"}])
    writer.put_target_state("c", TargetState.PAUSED)
    writer.put_restart_request(RestartRequest("c", only_failed=True))
    writer.put_task_count_record("c", 1)

    reader.refresh(TIMEOUT_S)
    assert reader.snapshot() == writer.snapshot()
    expected: list[Change] = [
        ("connector", "c", None),
        ("tasks", "c", None),
        ("target_state", "c", None),
        ("restart", "c", RestartRequest("c", only_failed=True)),
        ("task_count", "c", None),
    ]
    wait_until(lambda: recorder.changes == expected, timeout=TIMEOUT_S)

    writer.remove_connector("c")
    wait_until(lambda: not reader.snapshot().contains("c"), timeout=TIMEOUT_S)
    wait_until(lambda: recorder.changes[-1] == ("connector", "c", None), timeout=TIMEOUT_S)


def test_own_writes_reach_the_listener(started: Starter) -> None:
    recorder = Recorder()
    store = started(on_change=recorder)
    store.put_connector_config("c", {"k": "v"}, TargetState.STARTED)
    assert recorder.changes == [("target_state", "c", None), ("connector", "c", None)]


def test_topic_is_compacted_with_one_partition(
    started: Starter, kafka_admin: Any, unique_topic: str
) -> None:
    started()
    assert describe_topic_config(kafka_admin, unique_topic, "cleanup.policy") == "compact"
    metadata = kafka_admin.list_topics(unique_topic, timeout=TIMEOUT_S).topics[unique_topic]
    assert len(metadata.partitions) == 1


def test_records_have_kafka_connect_shape(
    started: Starter, kafka_bootstrap: str, unique_topic: str
) -> None:
    store = started()
    store.put_connector_config("my-conn", {"connector.class": "X", "tasks.max": "1"})
    store.put_task_configs("my-conn", [{"t": "0"}])
    store.put_target_state("my-conn", TargetState.STOPPED)

    records = raw_records(kafka_bootstrap, unique_topic, 4)
    assert [(key, json.loads(value)) for key, value in records] == [
        (b"connector-my-conn", {"properties": {"connector.class": "X", "tasks.max": "1"}}),
        (b"task-my-conn-0", {"properties": {"t": "0"}}),
        (b"commit-my-conn", {"tasks": 1}),
        (b"target-state-my-conn", {"state": "PAUSED", "state.v2": "STOPPED"}),
    ]
    assert records[0][1] == b'{"properties":{"connector.class":"X","tasks.max":"1"}}'


def test_a_write_stamped_with_an_ended_term_is_refused_by_every_reader(started: Starter) -> None:
    """Unfenced leader writes (issue 25): a record stamped with a term that a later term's
    marker ended is ignored, and reported refused, by a live reader and by one that reads
    the topic from its start; one of the current term is applied."""
    writer = started()
    writer.put_connector_config("c", {"connector.class": "X"})
    writer.send_in_term([term_marker_record(4)], 0, TIMEOUT_S)  # before any marker: term 0
    stale = writer.send_in_term(target_state_records("c", TargetState.PAUSED), 3, TIMEOUT_S)
    writer.wait_for(stale, TIMEOUT_S)
    assert writer.refused(stale)
    assert writer.snapshot().target_state("c") is TargetState.STARTED
    assert writer.snapshot().term == 4

    current = writer.send_in_term(target_state_records("c", TargetState.STOPPED), 4, TIMEOUT_S)
    writer.wait_for(current, TIMEOUT_S)
    assert not writer.refused(current)
    assert writer.snapshot().target_state("c") is TargetState.STOPPED

    later = started()
    assert later.snapshot().target_state("c") is TargetState.STOPPED
    assert later.refused(stale) and not later.refused(current)
    assert later.snapshot().term == 4
    assert not any(key.startswith("connect-grpc-term-") for key in later.snapshot().extensions)


def test_unstamped_records_are_applied_whatever_the_term(started: Starter) -> None:
    """Records without a term (the fenced transactional writes, tools) are not judged."""
    writer = started()
    writer.send_in_term([term_marker_record(9)], 0, TIMEOUT_S)
    writer.put_connector_config("c", {"connector.class": "X"}, TargetState.PAUSED)
    assert writer.snapshot().target_state("c") is TargetState.PAUSED


def test_a_carried_record_is_applied_with_its_carrier_or_not_at_all(started: Starter) -> None:
    """A change's answer rides in a header of the change's last record: applied with it,
    or refused with it."""
    writer = started()
    writer.put_connector_config("c", {"connector.class": "X"})
    writer.send_in_term([term_marker_record(2)], 0, TIMEOUT_S)
    kept = extension_record("connect-grpc-request-kept", {"answer": 1})
    dropped = extension_record("connect-grpc-request-dropped", {"answer": 2})
    records = target_state_records("c", TargetState.PAUSED)
    writer.wait_for(writer.send_in_term(records, 1, TIMEOUT_S, carried=dropped), TIMEOUT_S)
    writer.wait_for(writer.send_in_term(records, 2, TIMEOUT_S, carried=kept), TIMEOUT_S)
    for store in (writer, started()):
        extensions = store.snapshot().extensions
        assert extensions.get("connect-grpc-request-kept") == {"answer": 1}
        assert "connect-grpc-request-dropped" not in extensions
        assert store.snapshot().target_state("c") is TargetState.PAUSED


def test_several_carried_records_are_applied_with_their_carrier_or_none(
    started: Starter,
) -> None:
    """A restart request carrying the call's answer and the auto-restart progress, through
    the broker: both applied with it by a live reader and by one reading from the start,
    or, stamped with an ended term, neither."""
    writer = started()
    writer.put_connector_config("c", {"connector.class": "X"})
    writer.send_in_term([term_marker_record(2)], 0, TIMEOUT_S)
    request = restart_records(RestartRequest("c", include_tasks=True, only_failed=True))
    answer = extension_record("connect-grpc-request-r", {"answer": 1})
    progress = extension_record("connect-grpc-auto-restart-c", {"count": 1})
    stale = extension_record("connect-grpc-auto-restart-c", {"count": 9})
    writer.wait_for(writer.send_in_term(request, 1, TIMEOUT_S, also_carried=[stale]), TIMEOUT_S)
    writer.wait_for(
        writer.send_in_term(request, 2, TIMEOUT_S, carried=answer, also_carried=[progress]),
        TIMEOUT_S,
    )
    for store in (writer, started()):
        extensions = store.snapshot().extensions
        assert extensions.get("connect-grpc-request-r") == {"answer": 1}
        assert extensions.get("connect-grpc-auto-restart-c") == {"count": 1}


def _paused_with_tasks(store: KafkaConfigStore) -> None:
    store.put_connector_config("c", {"connector.class": "X"}, TargetState.PAUSED)
    store.put_task_configs("c", [{"t": "0"}, {"t": "1"}])


def test_a_removal_stamped_with_an_ended_term_is_refused_and_the_connector_stays(
    started: Starter,
) -> None:
    """A deposed leader's unfenced delete: every record refused, by a live reader and by
    one from the topic's start; the PAUSED connector keeps its tasks and state."""
    writer = started()
    _paused_with_tasks(writer)
    writer.send_in_term([term_marker_record(2)], 0, TIMEOUT_S)
    answer = extension_record("connect-grpc-request-delete", {"answer": 1})
    stale = writer.send_in_term(
        removal_records("c", 2), 1, TIMEOUT_S, carried=answer,
        carrier_index=REMOVAL_CHANGE_INDEX,
    )
    writer.wait_for(stale, TIMEOUT_S)
    for store in (writer, started()):
        snapshot = store.snapshot()
        assert store.refused(stale[:1])
        assert snapshot.target_state("c") is TargetState.PAUSED
        assert snapshot.task_configs("c") == ({"t": "0"}, {"t": "1"})
        assert "connect-grpc-request-delete" not in snapshot.extensions
        assert not snapshot.unfinished_removals


def test_a_removal_carries_its_answer_on_the_tombstone_and_is_done_when_its_cleanup_is_refused(
    started: Starter,
) -> None:
    """The answer rides on the connector tombstone, the change: applied with it even when
    the cleanup after it is refused (a new term's marker came in between). The connector
    is deleted, its removal unfinished until the cleanup is written again."""
    writer = started()
    _paused_with_tasks(writer)
    answer = extension_record("connect-grpc-request-delete", {"answer": 1})
    tombstone, *cleanup = removal_records("c", 2)
    change = writer.send_in_term(
        [tombstone], 1, TIMEOUT_S, carried=answer, carrier_index=REMOVAL_CHANGE_INDEX
    )
    writer.send_in_term([term_marker_record(2)], 0, TIMEOUT_S)
    refused = writer.send_in_term(cleanup, 1, TIMEOUT_S)
    writer.wait_for(refused, TIMEOUT_S)
    assert writer.refused(refused) and not writer.refused(change)
    for store in (writer, started()):
        snapshot = store.snapshot()
        assert not snapshot.contains("c")
        assert snapshot.target_state("c") is None and snapshot.task_configs("c") == ()
        assert snapshot.extensions["connect-grpc-request-delete"] == {"answer": 1}
        assert snapshot.unfinished_removals == {"c": 2}

    writer.wait_for(writer.send_in_term(cleanup, 2, TIMEOUT_S), TIMEOUT_S)
    assert not writer.snapshot().unfinished_removals
    assert not started().snapshot().unfinished_removals
