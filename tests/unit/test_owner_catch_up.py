"""A plain restart or a task's restart on a cluster goes to the worker that runs the
instance (DistributedMutations._require_owner). When this worker's view does not show that
owner yet, it reads the config and status topics to their end once, within the caller's
deadline, before it answers UNAVAILABLE: the assignment or the owner's worker record may be
written already and only not read here yet, and Kafka Connect's herder catches up with its
config topic before it answers too. Without a broker: a real KafkaConfigStore over a log
whose tail lags until it is read to its end."""

from __future__ import annotations

from typing import Any, cast

import pytest
import structlog

from connect_grpc.cluster.assignment import WorkerAssignment
from connect_grpc.cluster.extension_records import (
    ASSIGNMENT_KEY,
    WORKER_KEY_PREFIX,
    AssignmentRecord,
    WorkerRecord,
)
from connect_grpc.herder.distributed_mutations import DistributedMutations
from connect_grpc.herder.distributed_view import ClusterView
from connect_grpc.herder.locks import ConnectorLocks
from connect_grpc.kernel.domain import RestartRequest, TargetState, TaskId
from connect_grpc.kernel.errors import NotLeaderError, UnavailableError
from connect_grpc.storage.config_codec import (
    connector_config_records,
    extension_record,
    task_config_records,
)
from tests.unit.config_log_fakes import AppliedLog, applied_store

ME, OTHER = "w1", "w2"
NAME = "seq"
CONFIG = {"connector.class": "SequenceSource", "topic": "t", "tasks.max": "1", "name": NAME}
TASK = TaskId(NAME, 0)
PLAIN = RestartRequest(NAME, include_tasks=False, only_failed=False)
OTHER_ADDRESS = "127.0.0.1:9002"


class _Statuses:
    """The status store's worker records: ``unread`` are written but not yet read by this
    worker's tail (a read to the end shows them)."""

    def __init__(self) -> None:
        self.read: dict[str, Any] = {}
        self.unread: dict[str, Any] = {}
        self.refreshes = 0
        self.refresh_fails = False

    def extensions(self) -> dict[str, Any]:
        return dict(self.read)

    def refresh(self, timeout: float | None = None) -> None:
        self.refreshes += 1
        if self.refresh_fails:
            raise UnavailableError("status topic not read to its end in 0 s")
        self.read.update(self.unread)
        self.unread.clear()


class _Reconciler:
    """Records the restarts this worker carries out itself."""

    def __init__(self) -> None:
        self.restarted: list[str | TaskId] = []

    def restart_connector(self, name: str) -> None:
        self.restarted.append(name)

    def restart_task(self, task: TaskId) -> None:
        self.restarted.append(task)


class _Worker:
    """Worker ``ME``'s side of a restart, over a config log and status records that may lag."""

    def __init__(self) -> None:
        store, self.log = applied_store()
        self.statuses = _Statuses()
        self.reconciler = _Reconciler()
        view = ClusterView(store, cast(Any, self.statuses))
        unused = cast(Any, None)
        self.mutations = DistributedMutations(
            view, unused, unused, unused, ConnectorLocks(), config=unused, validator=unused,
            offset_manager=unused, reconciler=cast(Any, self.reconciler), board=unused,
            normalised=unused, validated_for_create=unused, worker_id=ME,
            log=structlog.get_logger(),
        )
        self.log.send_all(connector_config_records(NAME, CONFIG, TargetState.STARTED))
        self.log.send_all(task_config_records(NAME, [{"task.class": "x"}]))

    def assign(self, owner: str, *, read: bool) -> None:
        """The leader's assignment gives the connector and its task to ``owner``; ``read``:
        whether this worker's tail has read it yet."""
        record = AssignmentRecord(1, OTHER, {owner: WorkerAssignment.of([NAME], [TASK])})
        _send(self.log, [extension_record(ASSIGNMENT_KEY, record.to_json())], read=read)

    def publish(self, worker_id: str, address: str, *, read: bool) -> None:
        """The worker's record in the status topic (its address)."""
        value = WorkerRecord(worker_id, address, 1).to_json()
        target = self.statuses.read if read else self.statuses.unread
        target[WORKER_KEY_PREFIX + worker_id] = value


def _send(log: AppliedLog, records: Any, *, read: bool) -> None:
    holding, log.holding = log.holding, not read
    try:
        log.send_all(records)
    finally:
        log.holding = holding


@pytest.fixture
def w() -> _Worker:
    return _Worker()


@pytest.mark.parametrize("restart", ["connector", "task"])
def test_an_assignment_not_read_yet_is_read_and_the_call_sent_to_its_owner(
    w: _Worker, restart: str
) -> None:
    w.assign(OTHER, read=False)
    w.publish(OTHER, OTHER_ADDRESS, read=False)
    with pytest.raises(NotLeaderError) as raised:
        if restart == "connector":
            w.mutations.restart_connector(PLAIN)
        else:
            w.mutations.restart_task(TASK)
    assert raised.value.leader_id == OTHER
    assert raised.value.leader_address == OTHER_ADDRESS
    assert w.log.reads_to_end == 1
    assert w.statuses.refreshes == 1
    assert w.reconciler.restarted == []


def test_an_assignment_to_this_worker_not_read_yet_is_carried_out_here(w: _Worker) -> None:
    w.assign(ME, read=False)
    w.mutations.restart_connector(PLAIN)
    w.mutations.restart_task(TASK)
    assert w.reconciler.restarted == [NAME, TASK]
    assert w.log.reads_to_end == 1  # the second call sees the assignment without reading


def test_an_owner_whose_address_is_not_read_yet_is_found_in_the_status_topic(
    w: _Worker,
) -> None:
    w.assign(OTHER, read=True)
    w.publish(OTHER, OTHER_ADDRESS, read=False)
    with pytest.raises(NotLeaderError) as raised:
        w.mutations.restart_task(TASK)
    assert raised.value.leader_address == OTHER_ADDRESS
    assert w.statuses.refreshes == 1


def test_still_unassigned_after_reading_to_the_end_is_unavailable(w: _Worker) -> None:
    with pytest.raises(UnavailableError, match="not assigned to a worker yet; retry"):
        w.mutations.restart_connector(PLAIN)
    assert w.log.reads_to_end == 1  # once, not a loop until the deadline
    assert w.statuses.refreshes == 1
    assert w.reconciler.restarted == []


def test_a_read_cut_short_by_the_deadline_still_answers_unavailable(w: _Worker) -> None:
    w.assign(OTHER, read=True)
    w.statuses.refresh_fails = True
    w.publish(OTHER, OTHER_ADDRESS, read=False)
    with pytest.raises(UnavailableError, match="not assigned to a worker yet; retry"):
        w.mutations.restart_task(TASK)


def test_an_owner_already_known_costs_no_read(w: _Worker) -> None:
    w.assign(OTHER, read=True)
    w.publish(OTHER, OTHER_ADDRESS, read=True)
    with pytest.raises(NotLeaderError):
        w.mutations.restart_connector(PLAIN)
    assert w.log.reads_to_end == 0
    assert w.statuses.refreshes == 0
