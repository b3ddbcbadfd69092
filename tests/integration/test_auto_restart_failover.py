"""The auto-restart policy across a leader kill, on a 3-worker cluster of its own (real
Kafka, real Spark, real gRPC): a task on a follower fails its first three starts; the
leader restarts it once, is killed with SIGKILL while the task waits for its next attempt,
and the new leader continues from the progress in the status topic: each failure is
restarted once, at the back-off, and the task runs on its fourth start with the count 3."""

from __future__ import annotations

import functools
import itertools
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from connect_grpc.testing.cluster import (
    WorkerProcess,
    agreed_view,
    cluster_properties,
    start_together,
    wait_until,
)
from connect_grpc.testing.plugins import read_events
from connect_grpc.v1 import connect_pb2 as pb
from tests.integration.helpers import FAILED, RUNNING, create, source_config

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

STEP_MS = 2000


@pytest.fixture(scope="module")
def workers(
    kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[list[WorkerProcess]]:
    root = tmp_path_factory.mktemp("auto-restart-cluster")
    properties = cluster_properties(f"auto-restart-{uuid.uuid4().hex[:8]}")
    started = [WorkerProcess(root / f"worker-{n}", kafka_bootstrap, properties,
                             mode="distributed") for n in range(3)]
    try:
        start_together(started)
        wait_until(lambda: agreed_view(started, 3), timeout=120)
        yield started
    finally:
        for worker in started:
            worker.stop()


def _info(worker: WorkerProcess) -> pb.GetClusterInfoResponse:
    info: pb.GetClusterInfoResponse = worker.stub.GetClusterInfo(
        pb.GetClusterInfoRequest(), timeout=5)
    return info


def _status(worker: WorkerProcess, name: str) -> pb.ConnectorStatus:
    status: pb.ConnectorStatus = worker.stub.GetConnectorStatus(
        pb.GetConnectorStatusRequest(name=name), timeout=10).status
    return status


def _reported_task(worker: WorkerProcess, name: str) -> pb.TaskStatus | None:
    """Task 0's status once a worker reported it (not UNASSIGNED)."""
    tasks = _status(worker, name).tasks
    reported = tasks and tasks[0].state != pb.INSTANCE_STATE_UNASSIGNED
    return tasks[0] if reported else None


def _counted(worker: WorkerProcess, name: str, count: int) -> bool:
    return _status(worker, name).auto_restart.count == count


def _starts(events: Path) -> list[float]:
    return [e["time"] for e in read_events(events) if e["event"] == "task_start"]


def test_each_failure_is_restarted_once_across_a_leader_kill(
    workers: list[WorkerProcess], tmp_path: Path
) -> None:
    leader_id = _info(workers[0]).leader_id
    leader = next(w for w in workers if w.id == leader_id)
    via = next(w for w in workers if w is not leader)
    # a task on a follower: the leader restarts what another worker reported failed, and
    # the kill moves no instance of it (a connector on the leader is moved, not its task)
    for attempt in range(6):
        name, events = f"auto-{attempt}-{uuid.uuid4().hex[:6]}", tmp_path / f"e{attempt}.jsonl"
        config = source_config(events, tasks=1, **{
            "test.fail.task.start": "0", "test.fail.task.start.times": "3",
            "auto.restart.enabled": "true", "auto.restart.backoff.min.ms": str(STEP_MS),
            "auto.restart.backoff.max.ms": str(60 * STEP_MS),
            "auto.restart.reset.after.ms": "600000",
        })
        create(via.stub, name, config)
        task = wait_until(functools.partial(_reported_task, via, name), timeout=60)
        if task.worker_id != leader_id:
            break
        via.stub.DeleteConnector(pb.DeleteConnectorRequest(name=name), timeout=30)
        # the assignment gives a new task to the least loaded worker, the leader first on a
        # tie: a task that stays there makes a follower the least loaded one
        create(via.stub, f"ballast-{attempt}-{uuid.uuid4().hex[:6]}",
               source_config(tmp_path / f"ballast{attempt}.jsonl", tasks=1))
    else:
        pytest.fail("the task was placed on the leader six times")

    # an automatic restart was made, and its start failed: the next one waits
    def waiting() -> int | None:
        status = _status(via, name)
        progress = status.auto_restart
        due = status.tasks[0].state == FAILED and progress.HasField("next_attempt_time")
        return progress.count if due and progress.count in (1, 2) else None

    made = wait_until(waiting, timeout=60)
    assert len(_starts(events)) == made + 1
    leader.kill()
    survivors = [w for w in workers if w is not leader]
    wait_until(lambda: _status(via, name).tasks[0].state == RUNNING, timeout=180)
    starts = _starts(events)
    assert len(starts) == 4, starts
    gaps = [later - earlier for earlier, later in itertools.pairwise(starts)]
    assert gaps[1] >= 2 * STEP_MS / 1000 * 0.9
    assert gaps[2] >= 6 * STEP_MS / 1000 * 0.9
    for survivor in survivors:
        wait_until(functools.partial(_counted, survivor, name, 3), timeout=30)
    new_leader = _info(via).leader_id
    assert new_leader != leader_id
