"""The auto-restart policy across a leader kill, on the session's 3-worker cluster (real
Kafka, real Spark, real gRPC), with two connectors whose instances run on followers:

- ``waiting``'s task fails its first three starts; the leader restarts it twice and is
  killed with SIGKILL while the task waits for its third attempt. The new leader continues
  from the progress in the config topic, with the count and the attempt's time the old
  leader scheduled (its log says so as it takes over): each failure is restarted once, at
  the back-off, and the task runs on its fourth start with the count 3.
- ``healthy``'s task failed once and was restarted: it runs, its count is 1, and its
  healthy period has begun under the old leader. The new leader counts the period from
  then, not from when it took office, and resets the count at its end.
"""

from __future__ import annotations

import contextlib
import datetime
import functools
import itertools
import json
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from connect_grpc.testing.cluster import WorkerProcess, wait_until
from connect_grpc.testing.plugins import read_events
from connect_grpc.v1 import connect_pb2 as pb
from tests.integration.helpers import FAILED, RUNNING, create, source_config

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

STEP_MS = 3000
#: ``healthy``'s healthy period: long enough that it ends under the new leader (the test
#: waits for its end). On the 2-core machine under a load of 14, with six placements of
#: ``waiting``, the leader was killed 11 s into it and its successor had loaded the
#: progress at 19 s.
HEALTHY_PERIOD_MS = 45_000


def _info(worker: WorkerProcess) -> pb.GetClusterInfoResponse:
    info: pb.GetClusterInfoResponse = worker.stub.GetClusterInfo(
        pb.GetClusterInfoRequest(), timeout=5)
    return info


def _status(worker: WorkerProcess, name: str) -> pb.ConnectorStatus:
    status: pb.ConnectorStatus = worker.stub.GetConnectorStatus(
        pb.GetConnectorStatusRequest(name=name), timeout=10).status
    return status


def _reported(worker: WorkerProcess, name: str) -> pb.ConnectorStatus | None:
    """The status once workers reported the connector and its task (not UNASSIGNED)."""
    status = _status(worker, name)
    unassigned = pb.INSTANCE_STATE_UNASSIGNED
    if status.connector.state == unassigned or not status.tasks:
        return None
    return None if status.tasks[0].state == unassigned else status


def _counted(worker: WorkerProcess, name: str, count: int) -> bool:
    return _status(worker, name).auto_restart.count == count


def _starts(events: Path) -> list[float]:
    return [e["time"] for e in read_events(events) if e["event"] == "task_start"]


def _logged(worker: WorkerProcess, event: str, connector: str) -> list[dict[str, Any]]:
    """The worker's JSON log events named ``event`` about ``connector``."""
    found = []
    for line in worker.log_path.read_text(encoding="utf-8", errors="replace").splitlines():
        if f'"{event}"' not in line:
            continue
        with contextlib.suppress(ValueError):
            entry = json.loads(line)
            if entry.get("event") == event and entry.get("connector") == connector:
                found.append(entry)
    return found


def _placed_off_the_leader(
    via: WorkerProcess,
    leader_id: str,
    tmp_path: Path,
    prefix: str,
    config_of: Callable[[Path], dict[str, str]],
    *,
    connector_too: bool,
) -> tuple[str, Path]:
    """A connector whose task (and, ``connector_too``, connector) another worker than the
    leader runs: the assignment gives a new instance to the least loaded worker, the
    leader first on a tie, so a ballast connector left on the leader moves the next try."""
    placed = []
    for attempt in range(6):
        name, events = f"{prefix}-{uuid.uuid4().hex[:6]}", tmp_path / f"{prefix}{attempt}.jsonl"
        create(via.stub, name, config_of(events))
        status = wait_until(functools.partial(_reported, via, name), timeout=60)
        on_leader = status.tasks[0].worker_id == leader_id or (
            connector_too and status.connector.worker_id == leader_id)
        if not on_leader:
            return name, events
        placed.append((status.connector.worker_id, status.tasks[0].worker_id))
        via.stub.DeleteConnector(pb.DeleteConnectorRequest(name=name), timeout=30)
        ballast = f"ballast-{prefix}-{uuid.uuid4().hex[:6]}"
        create(via.stub, ballast,
               source_config(tmp_path / f"ballast-{prefix}{attempt}.jsonl", tasks=1))
        # placed before the next try is created: two new instances dealt in one round go
        # out in id order, and the ballast would not take the leader's free place
        wait_until(functools.partial(_reported, via, ballast), timeout=60)
    members = {w.id: (len(w.connectors), len(w.tasks)) for w in _info(via).workers}
    pytest.fail(f"{prefix}: placed on the leader {leader_id} six times (connector, task): "
                f"{placed}; members' (connectors, tasks) {members}")


def test_count_back_off_and_healthy_period_survive_a_leader_kill(
    cluster: list[WorkerProcess], tmp_path: Path
) -> None:
    leader_id = _info(cluster[0]).leader_id
    leader = next(w for w in cluster if w.id == leader_id)
    via = next(w for w in cluster if w is not leader)

    def policy(events: Path, **keys: str) -> dict[str, str]:
        return source_config(events, tasks=1, **{
            "test.fail.task.start": "0", "auto.restart.enabled": "true", **keys})

    healthy, _ = _placed_off_the_leader(
        via, leader_id, tmp_path, "healthy",
        lambda events: policy(events, **{
            "test.fail.task.start.times": "1", "auto.restart.backoff.min.ms": "1000",
            "auto.restart.reset.after.ms": str(HEALTHY_PERIOD_MS)}),
        connector_too=True,
    )
    waiting, events = _placed_off_the_leader(
        via, leader_id, tmp_path, "waiting",
        lambda events: policy(events, **{
            "test.fail.task.start.times": "3", "auto.restart.backoff.min.ms": str(STEP_MS),
            "auto.restart.backoff.max.ms": str(60 * STEP_MS),
            "auto.restart.reset.after.ms": "600000"}),
        connector_too=False,
    )

    def healthy_once_restarted() -> bool:
        status = _status(via, healthy)
        return status.tasks[0].state == RUNNING and status.auto_restart.count == 1

    wait_until(healthy_once_restarted, timeout=60)

    # two automatic restarts were made, and the third start failed: the next one waits
    # six steps from when the leader saw that failure
    def second_back_off() -> pb.AutoRestartStatus | None:
        status = _status(via, waiting)
        progress = status.auto_restart
        due = status.tasks[0].state == FAILED and progress.HasField("next_attempt_time")
        return progress if due and progress.count == 2 else None

    scheduled = wait_until(second_back_off, timeout=90)
    assert len(_starts(events)) == 3
    assert _status(via, healthy).auto_restart.count == 1  # its period has not ended
    killed_ms = int(time.time() * 1000)
    leader.kill()
    survivors = [w for w in cluster if w is not leader]

    def new_leader() -> WorkerProcess | None:
        named = _info(via).leader_id
        return next((w for w in survivors if w.id == named), None)

    successor = wait_until(new_leader, timeout=120)

    # the successor took over the count and the attempt's time the old leader scheduled
    took_over, *_ = wait_until(lambda: _logged(successor, "auto_restart_progress_loaded",
                                               waiting), timeout=60)
    assert took_over["count"] == 2
    assert took_over["next_attempt_ms"] == scheduled.next_attempt_time.ToMilliseconds()
    wait_until(lambda: _status(via, waiting).tasks[0].state == RUNNING, timeout=180)
    starts = _starts(events)
    assert len(starts) == 4, starts
    gaps = [later - earlier for earlier, later in itertools.pairwise(starts)]
    assert gaps[1] >= 2 * STEP_MS / 1000 * 0.9
    assert gaps[2] >= 6 * STEP_MS / 1000 * 0.9
    for survivor in survivors:
        wait_until(functools.partial(_counted, survivor, waiting, 3), timeout=30)

    # the healthy period began under the old leader, and ends as it counted it
    loaded, *_ = wait_until(lambda: _logged(successor, "auto_restart_progress_loaded",
                                            healthy), timeout=60)
    assert loaded["count"] == 1
    began = loaded["healthy_since_ms"]
    assert began is not None and began < killed_ms
    for survivor in survivors:
        wait_until(functools.partial(_counted, survivor, healthy, 0),
                   timeout=HEALTHY_PERIOD_MS / 1000 + 30)
    [reset] = _logged(successor, "auto_restart_reset", healthy)
    assert reset["healthy_since_ms"] == began
    reset_ms = datetime.datetime.fromisoformat(reset["timestamp"]).timestamp() * 1000
    assert reset_ms >= began + HEALTHY_PERIOD_MS

    # the killed worker back (same id, port and properties), so that the session's shared
    # cluster is whole for the modules after this one: otherwise the next one finds a dead
    # member, stops the two others and starts all three afresh
    leader.start()
