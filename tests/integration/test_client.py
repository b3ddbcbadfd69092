"""The typed Python client against a real standalone worker process (real Kafka, real Spark,
real gRPC): a connector's whole life through ``ConnectClient``, with domain types back and
domain exceptions raised."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from connect_grpc.client import ConnectClient
from connect_grpc.kernel.domain import (
    ConnectorOffset,
    ConnectorStatus,
    ConnectorType,
    State,
    TargetState,
    TaskId,
)
from connect_grpc.kernel.errors import (
    AlreadyExistsError,
    FailedPreconditionError,
    InvalidArgumentError,
    NotFoundError,
)
from connect_grpc.testing.cluster import WorkerProcess, wait_until
from tests.integration.helpers import INSTRUMENTED_SOURCE, source_config

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

MAX_LONG = 2**63 - 1
README = Path(__file__).resolve().parents[2] / "clients" / "python" / "README.md"


@pytest.fixture
def client(worker: WorkerProcess) -> Iterator[ConnectClient]:
    with ConnectClient(worker.address, timeout=60) as client:
        yield client


def states(client: ConnectClient, name: str) -> tuple[State, list[State]]:
    status = client.get_connector_status(name)
    return status.connector.state, [task.status.state for task in status.tasks]


def wait_for(client: ConnectClient, name: str, connector: State, tasks: list[State]) -> None:
    try:
        wait_until(lambda: states(client, name) == (connector, tasks), timeout=60)
    except TimeoutError:
        raise AssertionError(f"expected {(connector, tasks)}, got {states(client, name)}") from None


def all_in(status: ConnectorStatus | None, state: State) -> bool:
    return status is not None and status.connector.state is state and all(
        task.status.state is state for task in status.tasks
    )


def test_connector_lifecycle_through_the_client(
    client: ConnectClient, name: str, events: Path
) -> None:
    initial = [ConnectorOffset({"task": 0}, {"seq": MAX_LONG, "note": "x", "ok": True})]
    created = client.create_connector(
        name,
        source_config(events, tasks=1),
        initial_state=TargetState.STOPPED,
        initial_offsets=initial,
        request_id=str(uuid.uuid4()),
    )
    assert created.info.name == name and created.info.type is ConnectorType.SOURCE
    assert created.info.config["name"] == name
    assert created.offsets_message
    wait_for(client, name, State.STOPPED, [])
    assert client.get_offsets(name) == initial
    assert client.list_tasks(name) == []

    client.resume_connector(name)
    wait_for(client, name, State.RUNNING, [State.RUNNING])
    assert client.get_connector(name).tasks == (TaskId(name, 0),)
    assert client.get_task_status(name, 0).status.state is State.RUNNING
    (task,) = client.list_tasks(name)
    assert task.id == TaskId(name, 0) and task.config
    with pytest.raises(FailedPreconditionError) as not_stopped:
        client.reset_offsets(name)
    assert [v.type for v in not_stopped.value.violations] == ["STATE"]

    stream = client.watch_connector_status(name, timeout=60)
    try:
        first = next(stream)
        assert first is not None and first.name == name
        assert all_in(first, State.RUNNING)
        client.pause_connector(name)
        assert any(all_in(status, State.PAUSED) for status in stream)
    finally:
        stream.close()
    wait_for(client, name, State.PAUSED, [State.PAUSED])

    client.resume_connector(name)
    wait_for(client, name, State.RUNNING, [State.RUNNING])
    restarted = client.restart_connector(name, include_tasks=True)
    assert restarted is not None and restarted.name == name
    wait_for(client, name, State.RUNNING, [State.RUNNING])
    assert client.restart_connector(name) is None

    (listing,) = [c for c in client.list_connectors(expand_status=True) if c.name == name]
    assert listing.status is not None and listing.info is None
    assert client.get_connector_config(name) == {**source_config(events, tasks=1), "name": name}

    watch_deleted = client.watch_connector_status(name, timeout=60)
    assert next(watch_deleted) is not None
    client.delete_connector(name)
    assert list(watch_deleted)[-1:] == [None]
    with pytest.raises(NotFoundError):
        client.get_connector_status(name)


def test_errors_are_domain_exceptions(client: ConnectClient, name: str, events: Path) -> None:
    with pytest.raises(NotFoundError):
        client.get_connector(f"{name}-unknown")
    with pytest.raises(NotFoundError):
        next(client.watch_connector_status(f"{name}-unknown"))

    client.create_connector(name, source_config(events, tasks=1), TargetState.PAUSED)
    with pytest.raises(AlreadyExistsError):
        client.create_connector(name, source_config(events, tasks=1))

    bad = source_config(events, tasks=0, **{"test.source.records": "-1"})
    with pytest.raises(InvalidArgumentError) as invalid:
        client.create_connector(f"{name}-bad", bad)
    assert {v.field for v in invalid.value.violations} == {
        "config.tasks.max", "config.test.source.records"
    }
    validated = client.validate_config(config=bad)
    assert validated.error_count == len(invalid.value.violations) == len(validated.all_errors())
    assert client.validate_config(plugin="InstrumentedSource", config=bad).error_count == (
        validated.error_count
    )
    with pytest.raises(InvalidArgumentError, match="NoSuchPlugin"):
        client.validate_config(plugin="NoSuchPlugin", config=bad)
    with pytest.raises(TypeError):
        client.validate_config(bad)  # type: ignore[misc]  # keyword-only, as documented
    client.delete_connector(name)


def test_idempotent_retry_with_a_request_id(
    client: ConnectClient, name: str, events: Path
) -> None:
    request_id = str(uuid.uuid4())
    first = client.create_connector(
        name, source_config(events, tasks=1), "stopped", request_id=request_id
    )
    again = client.create_connector(
        name, source_config(events, tasks=1), "stopped", request_id=request_id
    )
    assert again == first
    put = client.put_connector_config(name, source_config(events, tasks=1))
    assert not put.created and put.info.name == name
    delete_id = str(uuid.uuid4())
    client.delete_connector(name, request_id=delete_id)
    client.delete_connector(name, request_id=delete_id)
    with pytest.raises(NotFoundError):
        client.delete_connector(name)


def test_plugins_and_cluster_info(client: ConnectClient) -> None:
    plugins = {p.class_name: p for p in client.list_plugins(include_config_definitions=True)}
    source = plugins[INSTRUMENTED_SOURCE]
    assert source.type is ConnectorType.SOURCE
    assert "test.events.file" in {key.name for key in source.config_definitions}
    cluster = client.get_cluster_info()
    assert cluster.mode == "standalone" and cluster.worker_id == cluster.leader_id


def test_readme_example_runs(
    worker: WorkerProcess, name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (block,) = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    namespace: dict[str, object] = {"__name__": "readme_example"}
    exec(compile(block, str(README), "exec"), namespace)
    run = namespace["run"]
    assert callable(run)
    missing = tmp_path / "in.txt"
    with pytest.raises(FileNotFoundError, match="create it first"):
        run(worker.address, name=name, file=str(missing))
    missing.write_text("hello\n", encoding="utf-8")
    capsys.readouterr()
    run(worker.address, name=name, file=str(missing))
    printed = capsys.readouterr().out.splitlines()
    assert f"{name}: created stopped at position 0, ran, deleted" in printed, printed
    with ConnectClient(worker.address) as client, pytest.raises(NotFoundError):
        client.get_connector(name)
