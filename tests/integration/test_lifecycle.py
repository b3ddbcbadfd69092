"""Connector lifecycle over real gRPC channels (real Kafka, real Spark): create in state
(KIP-980), pause/resume/stop (KIP-875), failures, tasks.max, errors with the right codes, and
delete with cleanup. Every test runs against a standalone worker process and against a
3-worker cluster, each call sent to a worker that neither leads nor runs the connector."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
import pytest

from connect_grpc.testing.cluster import wait_until
from connect_grpc.testing.plugins import read_events
from connect_grpc.v1 import connect_pb2 as pb
from connect_grpc.v1 import connect_pb2_grpc as pb_grpc
from tests.integration.helpers import (
    DEPLOYMENTS,
    FAILED,
    PAUSED,
    RUNNING,
    STOPPED,
    create,
    deployment_stub,
    error_reason,
    field_violations,
    source_config,
    wait_for_states,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]


@pytest.fixture(params=DEPLOYMENTS)
def stub(request: pytest.FixtureRequest) -> Any:
    return deployment_stub(request)




def test_created_running_runs_tasks_max_tasks(
    stub: pb_grpc.ConnectServiceStub, name: str, events: Path
) -> None:
    response = create(stub, name, source_config(events, tasks=3))
    assert response.connector.name == name
    assert response.connector.config["name"] == name
    assert response.connector.type == pb.CONNECTOR_TYPE_SOURCE
    wait_for_states(stub, name, RUNNING, [RUNNING] * 3)
    info = stub.GetConnector(pb.GetConnectorRequest(name=name)).connector
    assert [t.task for t in info.tasks] == [0, 1, 2]
    _assert_every_task_says_where_it_runs(stub, name, 3)


def _assert_every_task_says_where_it_runs(
    stub: pb_grpc.ConnectServiceStub, name: str, count: int
) -> None:
    """In its status, and in the cluster's description of the worker that runs it."""
    tasks = stub.GetConnectorStatus(pb.GetConnectorStatusRequest(name=name)).status.tasks
    said = {(task.worker_id, task.id): task.placement for task in tasks}
    kinds = {pb.TaskPlacement.KIND_DRIVER, pb.TaskPlacement.KIND_SPARK_EXECUTOR}
    assert len(said) == count
    assert all(p.kind in kinds and p.host for p in said.values()), said
    described = {
        (worker.id, placed.task.task): placed.placement
        for worker in stub.GetClusterInfo(pb.GetClusterInfoRequest()).workers
        for placed in worker.placements
        if placed.task.connector == name
    }
    assert described == said


def test_created_paused_then_resumed(
    stub: pb_grpc.ConnectServiceStub, name: str, events: Path
) -> None:
    create(stub, name, source_config(events, tasks=2), pb.INITIAL_STATE_PAUSED)
    wait_for_states(stub, name, PAUSED, [])
    stub.ResumeConnector(pb.ResumeConnectorRequest(name=name))
    wait_for_states(stub, name, RUNNING, [RUNNING, RUNNING])


def test_created_stopped_then_resumed(
    stub: pb_grpc.ConnectServiceStub, name: str, events: Path
) -> None:
    create(stub, name, source_config(events, tasks=2), pb.INITIAL_STATE_STOPPED)
    wait_for_states(stub, name, STOPPED, [])
    assert list(stub.ListTasks(pb.ListTasksRequest(name=name)).tasks) == []
    assert list(stub.GetConnector(pb.GetConnectorRequest(name=name)).connector.tasks) == []
    assert read_events(events) == []
    stub.ResumeConnector(pb.ResumeConnectorRequest(name=name))
    wait_for_states(stub, name, RUNNING, [RUNNING, RUNNING])


def test_pause_stop_resume_are_idempotent_and_compose(
    stub: pb_grpc.ConnectServiceStub, name: str, events: Path
) -> None:
    create(stub, name, source_config(events, tasks=2))
    wait_for_states(stub, name, RUNNING, [RUNNING, RUNNING])
    for _ in range(2):
        stub.PauseConnector(pb.PauseConnectorRequest(name=name))
    wait_for_states(stub, name, PAUSED, [PAUSED, PAUSED])
    for _ in range(2):
        stub.StopConnector(pb.StopConnectorRequest(name=name))
    wait_for_states(stub, name, STOPPED, [])
    stub.PauseConnector(pb.PauseConnectorRequest(name=name))
    wait_for_states(stub, name, PAUSED, [])
    for _ in range(2):
        stub.ResumeConnector(pb.ResumeConnectorRequest(name=name))
    wait_for_states(stub, name, RUNNING, [RUNNING, RUNNING])


def test_failed_connector_can_be_stopped_fixed_and_resumed(
    stub: pb_grpc.ConnectServiceStub, name: str, events: Path
) -> None:
    create(stub, name, source_config(events, **{"test.fail.connector.start": "true"}))
    wait_for_states(stub, name, FAILED, [])
    status = stub.GetConnectorStatus(pb.GetConnectorStatusRequest(name=name)).status
    assert status.connector.trace
    stub.StopConnector(pb.StopConnectorRequest(name=name))
    wait_for_states(stub, name, STOPPED, [])
    response = stub.PutConnectorConfig(
        pb.PutConnectorConfigRequest(name=name, config=source_config(events))
    )
    assert not response.created
    wait_for_states(stub, name, STOPPED, [])
    stub.ResumeConnector(pb.ResumeConnectorRequest(name=name))
    wait_for_states(stub, name, RUNNING, [RUNNING, RUNNING])


def test_connector_whose_stop_throws_still_ends_stopped(
    stub: pb_grpc.ConnectServiceStub, name: str, events: Path
) -> None:
    create(stub, name, source_config(events, **{"test.fail.connector.stop": "true"}))
    wait_for_states(stub, name, RUNNING, [RUNNING, RUNNING])
    stub.StopConnector(pb.StopConnectorRequest(name=name))
    wait_for_states(stub, name, STOPPED, [])


def test_changing_tasks_max_changes_the_task_set(
    stub: pb_grpc.ConnectServiceStub, name: str, events: Path
) -> None:
    created = stub.PutConnectorConfig(
        pb.PutConnectorConfigRequest(name=name, config=source_config(events, tasks=3))
    )
    assert created.created
    wait_for_states(stub, name, RUNNING, [RUNNING] * 3)
    stub.PutConnectorConfig(
        pb.PutConnectorConfigRequest(name=name, config=source_config(events, tasks=1))
    )
    wait_for_states(stub, name, RUNNING, [RUNNING])
    assert len(stub.ListTasks(pb.ListTasksRequest(name=name)).tasks) == 1
    stub.PutConnectorConfig(
        pb.PutConnectorConfigRequest(name=name, config=source_config(events, tasks=4))
    )
    wait_for_states(stub, name, RUNNING, [RUNNING] * 4)


def test_delete_tells_tasks_and_connector_they_were_deleted(
    stub: pb_grpc.ConnectServiceStub, name: str, events: Path
) -> None:
    create(stub, name, source_config(events, tasks=2))
    wait_for_states(stub, name, RUNNING, [RUNNING, RUNNING])
    stub.StopConnector(pb.StopConnectorRequest(name=name))
    wait_for_states(stub, name, STOPPED, [])

    def stops() -> list[dict[str, Any]]:  # on a cluster, each worker stops its own
        return [e for e in read_events(events) if e["event"] in ("task_stop", "connector_stop")]

    wait_until(lambda: len(stops()) == 3, 30)
    assert all(e["connector_deleted"] is False for e in stops())

    stub.ResumeConnector(pb.ResumeConnectorRequest(name=name))
    wait_for_states(stub, name, RUNNING, [RUNNING, RUNNING])
    seen_before_delete = len(read_events(events))
    stub.DeleteConnector(pb.DeleteConnectorRequest(name=name))

    def deleted() -> list[dict[str, Any]]:  # a cluster's workers stop theirs a moment later
        after_delete = read_events(events)[seen_before_delete:]
        return [e for e in after_delete if e["event"].endswith("_stop")]

    expected = [("connector_stop", None), ("task_stop", 0), ("task_stop", 1)]
    wait_until(lambda: sorted((e["event"], e["task"]) for e in deleted()) == expected, 30)
    assert all(e["connector_deleted"] is True for e in deleted())
    with pytest.raises(grpc.RpcError) as excinfo:
        stub.GetConnectorStatus(pb.GetConnectorStatusRequest(name=name))
    assert excinfo.value.code() is grpc.StatusCode.NOT_FOUND


def test_duplicate_create_is_already_exists(
    stub: pb_grpc.ConnectServiceStub, name: str, events: Path
) -> None:
    create(stub, name, source_config(events))
    with pytest.raises(grpc.RpcError) as excinfo:
        create(stub, name, source_config(events), pb.INITIAL_STATE_PAUSED)
    assert excinfo.value.code() is grpc.StatusCode.ALREADY_EXISTS
    assert error_reason(excinfo.value) == "ALREADY_EXISTS"
    wait_for_states(stub, name, RUNNING, [RUNNING, RUNNING])


UNKNOWN_CALLS: list[tuple[str, Callable[[pb_grpc.ConnectServiceStub], Any]]] = [
    ("GetConnector", lambda s: s.GetConnector(pb.GetConnectorRequest(name="nope"))),
    ("GetConnectorConfig",
     lambda s: s.GetConnectorConfig(pb.GetConnectorConfigRequest(name="nope"))),
    ("DeleteConnector", lambda s: s.DeleteConnector(pb.DeleteConnectorRequest(name="nope"))),
    ("GetConnectorStatus",
     lambda s: s.GetConnectorStatus(pb.GetConnectorStatusRequest(name="nope"))),
    ("GetTaskStatus", lambda s: s.GetTaskStatus(pb.GetTaskStatusRequest(name="nope", task_id=0))),
    ("ListTasks", lambda s: s.ListTasks(pb.ListTasksRequest(name="nope"))),
    ("PauseConnector", lambda s: s.PauseConnector(pb.PauseConnectorRequest(name="nope"))),
    ("ResumeConnector", lambda s: s.ResumeConnector(pb.ResumeConnectorRequest(name="nope"))),
    ("StopConnector", lambda s: s.StopConnector(pb.StopConnectorRequest(name="nope"))),
    ("RestartConnector", lambda s: s.RestartConnector(pb.RestartConnectorRequest(name="nope"))),
    ("RestartTask", lambda s: s.RestartTask(pb.RestartTaskRequest(name="nope", task_id=0))),
    ("GetOffsets", lambda s: s.GetOffsets(pb.GetOffsetsRequest(name="nope"))),
    ("AlterOffsets", lambda s: s.AlterOffsets(pb.AlterOffsetsRequest(name="nope"))),
    ("ResetOffsets", lambda s: s.ResetOffsets(pb.ResetOffsetsRequest(name="nope"))),
    ("WatchConnectorStatus",
     lambda s: next(iter(s.WatchConnectorStatus(pb.WatchConnectorStatusRequest(name="nope"))))),
]


@pytest.mark.parametrize("call", [c for _, c in UNKNOWN_CALLS], ids=[n for n, _ in UNKNOWN_CALLS])
def test_unknown_connector_is_not_found_on_every_rpc(
    stub: pb_grpc.ConnectServiceStub, call: Callable[[pb_grpc.ConnectServiceStub], Any]
) -> None:
    with pytest.raises(grpc.RpcError) as excinfo:
        call(stub)
    assert excinfo.value.code() is grpc.StatusCode.NOT_FOUND
    assert "nope" in (excinfo.value.details() or "")


def test_unknown_task_is_not_found(
    stub: pb_grpc.ConnectServiceStub, name: str, events: Path
) -> None:
    create(stub, name, source_config(events, tasks=1))
    with pytest.raises(grpc.RpcError) as excinfo:
        stub.GetTaskStatus(pb.GetTaskStatusRequest(name=name, task_id=5))
    assert excinfo.value.code() is grpc.StatusCode.NOT_FOUND


def test_invalid_config_lists_every_error_and_creates_nothing(
    stub: pb_grpc.ConnectServiceStub, name: str, events: Path
) -> None:
    config = source_config(events, tasks=0, **{"test.source.records": "-1"})
    with pytest.raises(grpc.RpcError) as excinfo:
        create(stub, name, config)
    assert excinfo.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    violations = field_violations(excinfo.value)
    assert set(violations) == {"config.tasks.max", "config.test.source.records"}
    assert "2 error(s)" in (excinfo.value.details() or "")
    validated = stub.ValidateConfig(pb.ValidateConfigRequest(config=config))
    assert validated.error_count == len(violations)
    assert name not in [c.name for c in stub.ListConnectors(pb.ListConnectorsRequest()).connectors]


@pytest.mark.parametrize(
    ("request_name", "config_name", "field"),
    [("   ", None, "name"), ("", None, "name"), ("a", "b", "config.name")],
)
def test_bad_names_are_invalid_argument(
    stub: pb_grpc.ConnectServiceStub, events: Path,
    request_name: str, config_name: str | None, field: str,
) -> None:
    config = source_config(events)
    if config_name is not None:
        config["name"] = config_name
    with pytest.raises(grpc.RpcError) as excinfo:
        create(stub, request_name, config)
    assert excinfo.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert field in field_violations(excinfo.value)


def test_name_is_trimmed(stub: pb_grpc.ConnectServiceStub, name: str, events: Path) -> None:
    response = create(stub, f"  {name}  ", source_config(events))
    assert response.connector.name == name
    stub.GetConnector(pb.GetConnectorRequest(name=name))


def test_unknown_initial_state_is_invalid_argument(
    stub: pb_grpc.ConnectServiceStub, name: str, events: Path
) -> None:
    with pytest.raises(grpc.RpcError) as excinfo:
        create(stub, name, source_config(events), initial_state=9)
    assert excinfo.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert "initial_state" in field_violations(excinfo.value)


def test_reads_list_expand_config_plugins_and_cluster(
    stub: pb_grpc.ConnectServiceStub, name: str, events: Path
) -> None:
    create(stub, name, source_config(events, tasks=1))
    wait_for_states(stub, name, RUNNING, [RUNNING])
    listing = stub.ListConnectors(pb.ListConnectorsRequest(expand_status=True, expand_info=True))
    (mine,) = [c for c in listing.connectors if c.name == name]
    assert mine.info.config["tasks.max"] == "1"
    assert mine.status.connector.state == RUNNING
    plain = stub.ListConnectors(pb.ListConnectorsRequest())
    (bare,) = [c for c in plain.connectors if c.name == name]
    assert not bare.HasField("status") and not bare.HasField("info")
    config = stub.GetConnectorConfig(pb.GetConnectorConfigRequest(name=name)).config
    assert dict(config) == {**source_config(events, tasks=1), "name": name}
    plugins = stub.ListPlugins(pb.ListPluginsRequest()).plugins
    by_alias = {alias: p for p in plugins for alias in p.aliases}
    assert by_alias["FileStreamSource"].type == pb.CONNECTOR_TYPE_SOURCE
    assert by_alias["org.apache.kafka.connect.file.FileStreamSinkConnector"].type == (
        pb.CONNECTOR_TYPE_SINK
    )
    cluster = stub.GetClusterInfo(pb.GetClusterInfoRequest())
    assert cluster.leader_id and cluster.leader_address and cluster.joined
    if cluster.mode == "standalone":
        assert cluster.worker_id == cluster.leader_id
    else:
        assert cluster.mode == "distributed" and len(cluster.workers) == 3
        assert cluster.worker_id != cluster.leader_id  # a follower answered


def test_exactly_once_settings_on_a_worker_without_it_are_refused_and_change_nothing(
    stub: pb_grpc.ConnectServiceStub, name: str, events: Path
) -> None:
    eos = {"exactly.once.support": "required", "transaction.boundary": "interval"}
    validated = stub.ValidateConfig(pb.ValidateConfigRequest(config=source_config(events, **eos)))
    assert "Exactly Once Support" in validated.groups
    errors = {c.value.name: list(c.value.errors) for c in validated.configs if c.value.errors}
    assert set(errors) == {"exactly.once.support", "transaction.boundary"}
    assert "does not have exactly-once source support enabled" in errors[
        "exactly.once.support"
    ][0]
    with pytest.raises(grpc.RpcError) as excinfo:
        create(stub, name, source_config(events, **eos))
    assert excinfo.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert set(field_violations(excinfo.value)) == {
        "config.exactly.once.support",
        "config.transaction.boundary",
    }
    assert name not in [c.name for c in stub.ListConnectors(pb.ListConnectorsRequest()).connectors]

    create(stub, name, source_config(events, tasks=1))
    with pytest.raises(grpc.RpcError) as excinfo:
        stub.PutConnectorConfig(
            pb.PutConnectorConfigRequest(name=name, config=source_config(events, tasks=1, **eos))
        )
    assert excinfo.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    config = stub.GetConnectorConfig(pb.GetConnectorConfigRequest(name=name)).config
    assert dict(config) == {**source_config(events, tasks=1), "name": name}


def test_validate_config_reports_per_key_errors(stub: pb_grpc.ConnectServiceStub) -> None:
    response = stub.ValidateConfig(
        pb.ValidateConfigRequest(config={"connector.class": "FileStreamSink", "tasks.max": "x"})
    )
    errors = {c.value.name: list(c.value.errors) for c in response.configs}
    assert errors["tasks.max"] and errors["file"] and errors["topics"]
    assert response.error_count == sum(len(e) for e in errors.values())
    with pytest.raises(grpc.RpcError) as excinfo:
        stub.ValidateConfig(pb.ValidateConfigRequest(config={"tasks.max": "1"}))
    assert excinfo.value.code() is grpc.StatusCode.INVALID_ARGUMENT


def test_watch_streams_status_changes_until_delete(
    stub: pb_grpc.ConnectServiceStub, name: str, events: Path
) -> None:
    create(stub, name, source_config(events, tasks=1))
    wait_for_states(stub, name, RUNNING, [RUNNING])
    stream = stub.WatchConnectorStatus(pb.WatchConnectorStatusRequest(name=name), timeout=60)
    first = next(stream)
    assert first.status.connector.state == RUNNING
    stub.PauseConnector(pb.PauseConnectorRequest(name=name))
    seen = []
    for message in stream:
        seen.append(message)
        if message.status.connector.state == PAUSED and all(
            t.state == PAUSED for t in message.status.tasks
        ):
            break
    stub.DeleteConnector(pb.DeleteConnectorRequest(name=name))
    assert any(m.deleted for m in stream)
    stream.cancel()

