"""The auto-restart policy (``auto.restart.*``) on a standalone worker process and on a
3-worker cluster (each call sent to a worker that neither leads nor runs the connector: the
leader restarts what another worker reported failed), over real gRPC, real Kafka and real
Spark: a task that fails its first three starts is restarted at growing intervals and then
runs, with the count in the status; a task that always fails is given up on after the
maximum, and stays FAILED; ``connect-grpc ctl get connectors -o wide`` and ``ctl watch``
show the count and the next attempt."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from connect_grpc.ctl.contexts import CONFIG_DIR_ENV
from connect_grpc.ctl.documents import rfc3339_ms
from connect_grpc.testing.cluster import WorkerProcess, wait_until
from connect_grpc.testing.plugins import read_events
from connect_grpc.v1 import connect_pb2 as pb
from tests.integration.helpers import (
    DEPLOYMENTS,
    FAILED,
    INSTRUMENTED_SOURCE,
    RUNNING,
    create,
    deployment_stub,
    source_config,
    wait_for_states,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

STEP_MS = 500


@pytest.fixture(params=DEPLOYMENTS)
def stub(request: pytest.FixtureRequest) -> Any:
    return deployment_stub(request)


def _status(stub: Any, name: str) -> pb.ConnectorStatus:
    status: pb.ConnectorStatus = stub.GetConnectorStatus(
        pb.GetConnectorStatusRequest(name=name), timeout=10
    ).status
    return status


def _start_times(events: Path) -> list[float]:
    return [event["time"] for event in read_events(events)
            if event["event"] == "task_start" and event["task"] == 0]


def test_a_task_failing_its_first_starts_is_restarted_at_growing_intervals(
    stub: Any, name: str, events: Path
) -> None:
    config = source_config(events, tasks=1, **{
        "test.fail.task.start": "0", "test.fail.task.start.times": "3",
        "auto.restart.enabled": "true", "auto.restart.backoff.min.ms": str(STEP_MS),
        "auto.restart.backoff.max.ms": str(10 * STEP_MS),
        # long enough that the count is still shown once the task runs
        "auto.restart.reset.after.ms": "600000",
    })
    create(stub, name, config)
    wait_for_states(stub, name, RUNNING, [RUNNING], timeout=120)
    starts = _start_times(events)
    assert len(starts) == 4  # three failed starts, three automatic restarts
    gaps = [later - earlier for earlier, later in itertools.pairwise(starts)]
    # at once, then 2 and 6 steps after each failure was seen (a start fails at once)
    assert gaps[1] >= 2 * STEP_MS / 1000 * 0.9
    assert gaps[2] >= 6 * STEP_MS / 1000 * 0.9
    assert gaps[2] > gaps[1]
    progress = _status(stub, name).auto_restart
    assert progress.count == 3 and not progress.gave_up
    assert progress.HasField("last_restart_time") and not progress.HasField("next_attempt_time")
    assert abs(progress.last_restart_time.ToMilliseconds() / 1000 - starts[-1]) < 5


def test_the_policy_gives_up_after_its_maximum(stub: Any, name: str, events: Path) -> None:
    config = source_config(events, tasks=1, **{
        "test.fail.task.start": "0", "auto.restart.enabled": "true",
        "auto.restart.backoff.min.ms": "100", "auto.restart.backoff.max.ms": "300",
        "auto.restart.max.attempts": "2",
    })
    create(stub, name, config)
    wait_until(lambda: _status(stub, name).auto_restart.gave_up, timeout=120)
    status = _status(stub, name)
    assert status.tasks[0].state == FAILED
    assert status.auto_restart.count == 2
    assert not status.auto_restart.HasField("next_attempt_time")
    time.sleep(2.0)  # several back-offs: nothing restarts it any more
    assert len(_start_times(events)) == 3


def test_status_has_no_policy_when_it_is_off(stub: Any, name: str, events: Path) -> None:
    create(stub, name, source_config(events, tasks=1))
    wait_for_states(stub, name, RUNNING, [RUNNING])
    assert not _status(stub, name).HasField("auto_restart")


def test_an_invalid_key_is_an_error_on_its_key(stub: Any, name: str, events: Path) -> None:
    config = source_config(events, tasks=1, **{
        "name": name, "auto.restart.backoff.min.ms": "1000", "auto.restart.backoff.max.ms": "10",
    })
    answer = stub.ValidateConfig(pb.ValidateConfigRequest(config=config), timeout=30)
    errors = {info.value.name: list(info.value.errors) for info in answer.configs
              if info.value.errors}
    assert answer.error_count == 1
    assert errors == {"auto.restart.backoff.max.ms": [
        "Invalid value 10 for configuration auto.restart.backoff.max.ms: Value must be at "
        "least auto.restart.backoff.min.ms (1000)"
    ]}
    assert "Auto Restart" in answer.groups


def _ctl(target: str, config_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``connect-grpc ctl --target TARGET ARGS`` as a user runs it (output to a pipe)."""
    environment = {**os.environ, CONFIG_DIR_ENV: str(config_dir)}
    environment.pop("CONNECT_GRPC_TARGET", None)
    return subprocess.run(
        [str(Path(sys.executable).parent / "connect-grpc"), "ctl", "--target", target, *args],
        env=environment, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=90,
        check=False,
    )


def test_ctl_wide_listing_and_watch_show_the_count_and_next_attempt(
    stub: Any, request: pytest.FixtureRequest, name: str, events: Path, tmp_path: Path
) -> None:
    workers: list[WorkerProcess] = (
        [request.getfixturevalue("worker")] if request.node.callspec.params["stub"]
        == "standalone" else request.getfixturevalue("cluster"))
    config = source_config(events, tasks=1, **{
        "test.fail.task.start": "0", "auto.restart.enabled": "true",
        "auto.restart.backoff.min.ms": "60000",  # the next attempt is two minutes away
    })
    create(stub, name, config)

    def waiting() -> pb.AutoRestartStatus | None:
        progress = _status(stub, name).auto_restart
        return progress if progress.count == 1 and progress.HasField("next_attempt_time") else None

    next_at = rfc3339_ms(wait_until(waiting, timeout=60).next_attempt_time.ToMilliseconds())
    for worker in workers:  # a cluster's every worker shows the leader's progress

        def wide_row(target: str = worker.address) -> list[str] | None:
            wide = _ctl(target, tmp_path, "get", "connectors", "-o", "wide", "-e", name)
            assert wide.returncode == 0, wide.stderr
            header, row = wide.stdout.splitlines()
            assert header.split()[:8] == ["NAME", "TYPE", "STATE", "TASKS", "WORKER",
                                          "RESTARTS", "NEXT", "RESTART"]
            return row.split() if row.split()[5:7] == ["1", next_at] else None

        assert wait_until(wide_row, timeout=30)[7] == INSTRUMENTED_SOURCE
        listed = _ctl(worker.address, tmp_path, "get", "connectors", "-o", "json", "-e", name)
        [document] = json.loads(listed.stdout)["connectors"]
        progress = document["auto_restart"]
        assert (progress["count"], progress["next_attempt"], progress["gave_up"]) == (
            1, next_at, False)
        assert progress["last_restart"] is not None
    watched = _ctl(workers[-1].address, tmp_path, "watch", name, "--timeout", "2")
    assert watched.returncode == 0, watched.stderr
    assert f"{name} restarts 1 automatic, next at {next_at}" in watched.stdout.splitlines()
