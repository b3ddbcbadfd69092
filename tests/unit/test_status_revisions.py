"""Status revisions (``InstanceStatus.revision``): the standalone store's stamps, the watch
stream sending a status that repeats the last one under a new revision, and their trip
through the API's messages."""

from __future__ import annotations

import dataclasses
import threading

import pytest

from connect_grpc.api.convert import connector_status_to_pb
from connect_grpc.client.convert import connector_status_from_pb
from connect_grpc.herder.abstract_herder import HerderCommon
from connect_grpc.herder.status import StatusBoard
from connect_grpc.kernel.domain import (
    ConnectorStatus,
    ConnectorType,
    InstanceStatus,
    State,
    TaskId,
    TaskStatus,
)
from connect_grpc.storage.base import StatusRevisions
from connect_grpc.storage.memory_status import MemoryStatusStore

pytestmark = pytest.mark.timeout(20)

FAILED = InstanceStatus(State.FAILED, "w1", "Traceback ...\nOSError: refused")
RESTARTING = InstanceStatus(State.RESTARTING, "w1")


def test_a_new_status_gets_a_higher_revision_and_an_equal_one_keeps_it() -> None:
    revisions = StatusRevisions()
    first = revisions.stamp(FAILED, None)
    again = revisions.stamp(FAILED, first)
    restarting = revisions.stamp(RESTARTING, again)
    failed_anew = revisions.stamp(FAILED, restarting)
    assert first.revision > 0 and again.revision == first.revision
    assert first.revision < restarting.revision < failed_anew.revision
    assert failed_anew == first  # revisions are not part of a status's equality


def test_the_memory_store_stamps_connectors_and_tasks() -> None:
    store = MemoryStatusStore()
    task = TaskId("c", 1)
    store.put_task(task, FAILED)
    store.put_connector("c", FAILED)
    before = store.get_task(task)
    store.put_task(task, RESTARTING)
    store.put_task(task, FAILED)
    after = store.get_task(task)
    assert before is not None and after is not None and after.revision > before.revision
    store.put_task(task, FAILED)
    assert store.tasks("c")[1].revision == after.revision
    connector = store.get_connector("c")
    assert connector is not None and connector.revision > 0


class _BoardHerder(HerderCommon):
    """The watch of :class:`HerderCommon` over a board, with a connector of one task."""

    def __init__(self, board: StatusBoard) -> None:
        self._board = board

    def connector_status(self, name: str) -> ConnectorStatus:
        return self._board.connector_status(name, 1, ConnectorType.SOURCE)

    def connector_config(self, name: str) -> dict[str, str]:
        return {}


def test_the_watch_sends_a_status_that_repeats_the_last_under_a_new_revision() -> None:
    board = StatusBoard("w1")
    board.on_connector_status("c", InstanceStatus(State.RUNNING, "w1"))
    board.on_task_status(TaskId("c", 0), FAILED)
    active = threading.Event()
    active.set()
    stream = _BoardHerder(board).watch_status("c", active.is_set)
    first = next(stream)
    # a restart whose RESTARTING the watch did not see: the task fails as before
    board.on_task_status(TaskId("c", 0), RESTARTING)
    board.on_task_status(TaskId("c", 0), FAILED)
    second = next(stream)
    assert second == first
    assert second.tasks[0].status.revision > first.tasks[0].status.revision
    active.clear()
    board.close()


def test_revisions_travel_through_the_api_messages() -> None:
    status = ConnectorStatus(
        "c",
        dataclasses.replace(InstanceStatus(State.RUNNING, "w1"), revision=3),
        (TaskStatus(0, dataclasses.replace(FAILED, revision=9)),),
        ConnectorType.SOURCE,
    )
    message = connector_status_to_pb(status)
    assert (message.connector.revision, message.tasks[0].revision) == (3, 9)
    assert connector_status_from_pb(message).revisions() == (3, 9)
