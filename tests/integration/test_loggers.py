"""Log levels at run time over real gRPC (KIP-495, KIP-976): on the shared standalone worker,
and cluster-wide on the shared 3-worker cluster through a follower, seen on every worker and
on a worker that joins afterwards.

Each test sets levels on a namespace of its own (no module logs under it), so the shared
workers' own logging is left as it was."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from connect_grpc.testing.cluster import WorkerProcess, wait_until
from connect_grpc.v1 import connect_pb2 as pb
from connect_grpc.v1 import connect_pb2_grpc as pb_grpc
from tests.integration.conftest import one_start_at_a_time
from tests.integration.helpers import (
    INSTRUMENTED_SOURCE,
    RUNNING,
    create,
    create_topic,
    field_violations,
)

pytestmark = pytest.mark.timeout(300)

#: The module logger of the instrumented test plugins (their tasks log DEBUG lines on it).
PLUGIN_LOGGER = "connect_grpc.testing.plugins"
#: The properties every WorkerProcess writes for itself (the others make it a member).
_OWN_PROPERTIES = {"bootstrap.servers", "listeners", "worker.id", "offset.storage.file.filename"}


@pytest.fixture
def namespace() -> str:
    return f"itest{uuid.uuid4().hex[:8]}"


def get_logger(stub: pb_grpc.ConnectServiceStub, name: str) -> pb.Logger:
    return stub.GetLogger(pb.GetLoggerRequest(name=name), timeout=10).logger


def set_level(
    stub: pb_grpc.ConnectServiceStub, name: str, level: str, scope: int = 0
) -> list[str]:
    request = pb.SetLogLevelRequest(name=name, level=level, scope=scope)
    return list(stub.SetLogLevel(request, timeout=60).changed_loggers)


def not_found(stub: pb_grpc.ConnectServiceStub, name: str) -> bool:
    try:
        get_logger(stub, name)
    except grpc.RpcError as error:
        return error.code() is grpc.StatusCode.NOT_FOUND
    return False


def _set(stub: pb_grpc.ConnectServiceStub, name: str) -> pb.Logger | None:
    """The logger once its level was set through the API; None before."""
    found = get_logger(stub, name)
    return found if found.HasField("last_modified") else None


def a_follower(cluster: list[WorkerProcess]) -> WorkerProcess:
    leader = wait_until(
        lambda: cluster[0].stub.GetClusterInfo(pb.GetClusterInfoRequest(), timeout=5).leader_id
    )
    return next(w for w in cluster if f"worker-{w.port}" != leader)


# ---- standalone ------------------------------------------------------------------------------


def test_a_level_set_on_the_standalone_worker_is_read_back(
    worker: WorkerProcess, namespace: str
) -> None:
    stub = worker.stub
    assert set_level(stub, namespace, "debug") == [namespace]
    assert set_level(stub, f"{namespace}.child", "ERROR") == [f"{namespace}.child"]

    found = get_logger(stub, namespace)
    assert found.level == "DEBUG"
    assert found.HasField("last_modified")
    loggers = stub.ListLoggers(pb.ListLoggersRequest(), timeout=10).loggers
    listed = {logger.name: logger.level for logger in loggers}
    assert listed[namespace] == "DEBUG"
    assert listed[f"{namespace}.child"] == "ERROR"
    assert next(iter(listed)) == "root"

    # the namespace again: its child too, and only what changed is answered
    assert set_level(stub, namespace, "INFO") == [namespace, f"{namespace}.child"]
    assert set_level(stub, namespace, "INFO") == []


def test_the_workers_own_module_loggers_are_known_before_they_log(worker: WorkerProcess) -> None:
    found = get_logger(worker.stub, "connect_grpc.api.forwarding")
    assert found.level in {"ALL", "TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL"}
    assert not found.HasField("last_modified")


def test_bad_requests_name_their_field(worker: WorkerProcess, namespace: str) -> None:
    with pytest.raises(grpc.RpcError) as caught:
        set_level(worker.stub, namespace, "LOUD")
    assert caught.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert field_violations(caught.value) == {
        "level": "invalid log level 'LOUD'; valid levels: "
        "ALL, TRACE, DEBUG, INFO, WARN, ERROR, FATAL, OFF"
    }
    assert not_found(worker.stub, namespace)


def test_a_level_set_over_grpc_reaches_a_task_hosted_in_an_executor(
    worker: WorkerProcess, kafka_admin: Any, name: str, tmp_path: Path
) -> None:
    """The task's plugin logs in an executor's Python worker: the level reaches it there,
    and its line (from the plugin's own module logger) reaches the worker's log stream
    with the connector and task bound."""
    topic = create_topic(kafka_admin, f"{name}-out")
    config = {
        "connector.class": INSTRUMENTED_SOURCE,
        "topic": topic,
        "tasks.max": "1",
        "test.source.records": "3",
        "test.events.file": str(tmp_path / "events.jsonl"),
    }
    create(worker.stub, name, config)
    wait_until(lambda: _hosted_and_running(worker.stub, name), timeout=120)

    def polled_lines() -> list[str]:
        return [
            line for line in worker.logs().splitlines()
            if "instrumented_task_polled" in line and name in line
        ]

    assert polled_lines() == []  # INFO: the plugin's DEBUG lines are filtered out
    set_level(worker.stub, PLUGIN_LOGGER, "DEBUG")
    try:
        [line, *_] = wait_until(polled_lines, timeout=60)
        assert "debug" in line.lower() and PLUGIN_LOGGER in line
        assert "task" in line
    finally:
        set_level(worker.stub, PLUGIN_LOGGER, "INFO")
        worker.stub.DeleteConnector(pb.DeleteConnectorRequest(name=name), timeout=60)


def _hosted_and_running(stub: pb_grpc.ConnectServiceStub, name: str) -> bool:
    try:
        task = stub.GetTaskStatus(pb.GetTaskStatusRequest(name=name, task_id=0), timeout=10).task
    except grpc.RpcError:
        return False
    return task.state == RUNNING and (
        task.placement.kind == pb.TaskPlacement.KIND_SPARK_EXECUTOR
    )


# ---- a cluster -------------------------------------------------------------------------------


def test_a_cluster_level_set_through_a_follower_reaches_every_worker(
    cluster: list[WorkerProcess], namespace: str
) -> None:
    follower = a_follower(cluster)
    assert set_level(follower.stub, namespace, "DEBUG", pb.LOG_LEVEL_SCOPE_CLUSTER) == []

    # the worker that forwarded it reads its own write at once
    on_follower = get_logger(follower.stub, namespace)
    assert on_follower.level == "DEBUG"
    assert on_follower.HasField("last_modified")
    for other in cluster:
        found = wait_until(lambda other=other: _set(other.stub, namespace), timeout=60)
        assert found.level == "DEBUG"
        # stamped with the time the level was written, the same on every worker
        assert found.last_modified == on_follower.last_modified


def test_a_worker_scope_level_on_a_follower_stays_on_that_worker(
    cluster: list[WorkerProcess], namespace: str
) -> None:
    follower = a_follower(cluster)
    assert set_level(follower.stub, namespace, "WARN", pb.LOG_LEVEL_SCOPE_WORKER) == [namespace]
    assert get_logger(follower.stub, namespace).level == "WARN"
    assert all(not_found(w.stub, namespace) for w in cluster if w is not follower)


@pytest.fixture
def joining_worker(cluster: list[WorkerProcess], tmp_path: Path) -> Iterator[WorkerProcess]:
    """A fourth worker of the shared cluster's group, not started yet; stopped afterwards,
    once it left the group and the cluster's three workers lead and run everything again
    (so the next module that shares them finds no rebalance under way)."""
    members = _member_properties(cluster[0].properties_path)
    joining = WorkerProcess(tmp_path / "joining", members.pop("bootstrap.servers"),
                            members, mode="distributed")
    try:
        yield joining
    finally:
        joining.stop()
        wait_until(lambda: _settled_without(cluster, f"worker-{joining.port}"), timeout=120)


def _settled_without(cluster: list[WorkerProcess], departed: str) -> bool:
    views = [w.stub.GetClusterInfo(pb.GetClusterInfoRequest(), timeout=5) for w in cluster]
    first = views[0]
    return (
        bool(first.leader_id)
        and first.leader_id != departed
        and len(first.workers) == len(cluster)
        and all((v.generation, v.leader_id) == (first.generation, first.leader_id) for v in views)
    )


def test_a_worker_that_joins_later_applies_the_cluster_levels_written_before(
    cluster: list[WorkerProcess], joining_worker: WorkerProcess, namespace: str
) -> None:
    follower = a_follower(cluster)
    set_level(follower.stub, f"{namespace}.early", "TRACE", pb.LOG_LEVEL_SCOPE_CLUSTER)
    set_level(follower.stub, f"{namespace}.early", "ERROR", pb.LOG_LEVEL_SCOPE_CLUSTER)
    written = get_logger(follower.stub, f"{namespace}.early")

    with one_start_at_a_time():
        joining_worker.start()

    # read from the config topic while it started: the latest level, with its time
    found = get_logger(joining_worker.stub, f"{namespace}.early")
    assert found.level == "ERROR"
    assert found.last_modified == written.last_modified


def _member_properties(path: Path) -> dict[str, str]:
    """A cluster worker's properties, less those each worker has of its own, plus its
    bootstrap servers."""
    properties = dict(
        line.split("=", 1) for line in path.read_text(encoding="utf-8").splitlines() if line
    )
    members = {k: v for k, v in properties.items() if k not in _OWN_PROPERTIES}
    members["bootstrap.servers"] = properties["bootstrap.servers"]
    return members
