"""The status store writes in the background (issue 23, item 1): a put never waits for or
fails with Kafka; a failed write is retried until written, replaced by a newer write of its
key, or superseded by another worker's newer generation; the order of writes is kept where
it matters (a status written after a connector's tombstone survives it)."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from connect_grpc.kernel.domain import InstanceStatus, State, TaskId
from connect_grpc.kernel.errors import UnavailableError
from connect_grpc.storage import kafka_status
from connect_grpc.storage.kafka_status import KafkaStatusStore
from connect_grpc.storage.log_records import LogRecord
from connect_grpc.storage.status_codec import encode_status, task_key
from tests.unit.status_stores import StatusLog, started_store, status_log

pytestmark = pytest.mark.timeout(20)

RUNNING = InstanceStatus(State.RUNNING, "w1")
RETRYING = InstanceStatus(State.RETRYING, "w1", "Kafka unreachable")


@pytest.fixture
def log(monkeypatch: pytest.MonkeyPatch) -> StatusLog:
    return status_log(monkeypatch)


@pytest.fixture
def store(log: StatusLog) -> Iterator[KafkaStatusStore]:
    with started_store(log) as store:
        yield store


def test_a_put_while_kafka_is_away_returns_at_once_and_is_written_when_it_is_back(
    store: KafkaStatusStore, log: StatusLog
) -> None:
    task = TaskId("c", 0)
    log.down.set()
    store.put_task(task, RUNNING)
    store.put_task(task, RETRYING)  # replaces the pending write of the same key
    assert store.get_task(task) == RETRYING
    assert store.tasks("c") == {0: RETRYING}
    with pytest.raises(UnavailableError, match="not acknowledged"):
        store.flush(0.2)
    assert log.attempts >= 2  # retried
    log.down.clear()
    store.flush(5)
    assert log.states()[-1] == ("status-task-c-0", "RETRYING")
    assert ("status-task-c-0", "RUNNING") not in log.states()[1:]
    assert store.get_task(task) == RETRYING


def test_a_status_written_after_a_tombstone_outlives_it(
    store: KafkaStatusStore, log: StatusLog
) -> None:
    store.put_connector("c", RUNNING)
    store.put_task(TaskId("c", 0), RUNNING)
    store.put_task(TaskId("c", 1), RUNNING)
    store.flush(5)
    log.down.set()
    store.delete_connector("c")
    assert store.get_connector("c") is None and store.tasks("c") == {}
    store.put_connector("c", RETRYING)  # recreated while the tombstones wait
    store.put_task(TaskId("c", 0), RETRYING)
    assert store.tasks("c") == {0: RETRYING}
    log.down.clear()
    store.flush(5)
    assert log.states()[3:] == [
        ("status-task-c-1", None),
        ("status-connector-c", "RETRYING"),
        ("status-task-c-0", "RETRYING"),
    ]
    assert store.get_connector("c") == RETRYING
    assert store.tasks("c") == {0: RETRYING}


def test_a_failed_batch_is_written_before_what_was_queued_after_it(
    store: KafkaStatusStore, log: StatusLog
) -> None:
    log.down.set()
    store.delete_task(TaskId("c", 1))
    store.put_task(TaskId("c", 2), RUNNING)
    while log.attempts < 2:
        threading.Event().wait(0.01)
    store.put_task(TaskId("c", 3), RUNNING)
    log.down.clear()
    store.flush(5)
    keys = [key for key, _ in log.states()]
    assert keys.index("status-task-c-1") < keys.index("status-task-c-3")
    assert keys.index("status-task-c-2") < keys.index("status-task-c-3")


def test_a_pending_status_superseded_by_a_newer_generation_is_dropped(
    store: KafkaStatusStore, log: StatusLog
) -> None:
    task = TaskId("c", 0)
    store.set_generation(3)
    log.down.set()
    store.put_task(task, RETRYING)
    # the task moved to w2 in generation 4, read from the topic while this write waits
    value = b'{"state":"RUNNING","trace":null,"worker_id":"w2","generation":4}'
    store._apply(LogRecord(b"status-task-c-0", value, 0, 100))
    assert store.get_task(task) == InstanceStatus(State.RUNNING, "w2")
    log.down.clear()
    store.flush(5)
    assert ("status-task-c-0", "RETRYING") not in log.states()
    assert store.get_task(task) == InstanceStatus(State.RUNNING, "w2")


def test_stop_gives_up_on_writes_kafka_never_takes(
    store: KafkaStatusStore, log: StatusLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(kafka_status, "STOP_FLUSH_S", 0.2)
    log.down.set()
    store.put_task(TaskId("c", 0), RUNNING)
    store.stop()  # returns (bounded) although the write never succeeded
    assert log.written == []


def test_stop_leaves_the_logs_close_only_what_is_left_of_its_bound(
    store: KafkaStatusStore, log: StatusLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a real log's close would otherwise wait its own timeout (30 s) for the producer's
    # undeliverable writes, after the store gave them up
    monkeypatch.setattr(kafka_status, "STOP_FLUSH_S", 0.2)
    log.down.set()
    store.put_task(TaskId("c", 0), RUNNING)
    store.stop()
    assert log.stop_flush_timeout is not None
    assert 0.0 <= log.stop_flush_timeout < 0.2


def test_a_status_the_topic_has_already_in_this_generation_is_not_written_again(
    store: KafkaStatusStore, log: StatusLog
) -> None:
    stopped = InstanceStatus(State.STOPPED, "w1")
    store.set_generation(3)
    store.put_connector("c", stopped)
    store.flush(5)
    # the instance of a STOPPED connector is made again for each new config: same status
    store.put_connector("c", stopped)
    store.put_connector("c", InstanceStatus(State.STOPPED, "w1"))
    store.flush(5)
    assert log.states() == [("status-connector-c", "STOPPED")]
    # a new generation is written (another worker's older record must not win over it)
    store.set_generation(4)
    store.put_connector("c", stopped)
    store.flush(5)
    # so is the same state over another worker's record
    value = b'{"state":"STOPPED","trace":null,"worker_id":"w2","generation":4}'
    store._apply(LogRecord(b"status-connector-c", value, 0, 100))
    store.put_connector("c", stopped)
    store.flush(5)
    # and a state that changed and changed back
    for state in (RUNNING, RETRYING, RUNNING):
        store.put_task(TaskId("c", 0), state)
        store.flush(5)
    assert log.states()[1:] == [
        ("status-connector-c", "STOPPED"),
        ("status-connector-c", "STOPPED"),
        ("status-task-c-0", "RUNNING"),
        ("status-task-c-0", "RETRYING"),
        ("status-task-c-0", "RUNNING"),
    ]


# ---------------------------------------------------------------------------- revisions

FAILED_ELSEWHERE = InstanceStatus(State.FAILED, "w2", "Traceback ...\nOSError: refused")
RESTARTING_ELSEWHERE = InstanceStatus(State.RESTARTING, "w2")


def _read(store: KafkaStatusStore, key: bytes, status: InstanceStatus, offset: int) -> None:
    """Another worker's status record, as the tailing thread applies it."""
    store._apply(LogRecord(key, encode_status(status, 1), 0, offset))


def test_a_restart_that_fails_as_before_shows_a_higher_revision_on_another_worker(
    store: KafkaStatusStore,
) -> None:
    """The case of a cluster's follower that reads RESTARTING and the new FAILED in one
    batch: its view ends equal to the status before the restart, but a later revision."""
    task = TaskId("c", 0)
    key = task_key(task)
    _read(store, key, FAILED_ELSEWHERE, 1000)
    before = store.get_task(task)
    assert before is not None and before.revision > 0
    _read(store, key, RESTARTING_ELSEWHERE, 1001)
    restarting = store.get_task(task)
    _read(store, key, FAILED_ELSEWHERE, 1002)
    after = store.get_task(task)
    assert restarting is not None and after is not None
    assert after == before
    assert before.revision < restarting.revision < after.revision
    assert store.tasks("c")[0].revision == after.revision


def test_a_status_shown_again_keeps_its_revision(
    store: KafkaStatusStore, log: StatusLog
) -> None:
    """This worker's write read back, and an equal status in a new generation, are no new
    report: the revision a reader saw stays."""
    task = TaskId("c", 0)
    store.put_task(task, RUNNING)
    written = store.get_task(task)
    assert written is not None and written.revision > 0
    store.flush(5)  # applied as acknowledged
    store.set_generation(7)
    store.put_task(task, RUNNING)
    store.flush(5)
    assert log.states() == [("status-task-c-0", "RUNNING"), ("status-task-c-0", "RUNNING")]
    shown = store.get_task(task)
    assert shown is not None and shown.revision == written.revision
    store.put_task(task, RETRYING)
    retrying = store.get_task(task)
    assert retrying is not None and retrying.revision > written.revision
