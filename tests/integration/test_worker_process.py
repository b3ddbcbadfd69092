"""The worker as a process: reflection and health as grpcurl uses them, connector files on
the command line, the FileStream pipeline file → topic → file, and graceful SIGTERM."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from connect_grpc.runtime.futex_hash import futex_hash_slots
from connect_grpc.testing.cluster import WorkerProcess, wait_until
from connect_grpc.testing.plugins import read_events
from connect_grpc.v1 import connect_pb2 as pb
from connect_grpc.v1 import connect_pb2_grpc as pb_grpc
from tests.integration.helpers import PAUSED, RUNNING, STOPPED, source_config, wait_for_states

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]


@pytest.fixture
def files(tmp_path: Path) -> Iterator[tuple[Path, Path, Path]]:
    events = tmp_path / "events.jsonl"
    paused = tmp_path / "paused.json"
    paused.write_text(json.dumps({
        "name": "from-json", "config": source_config(events, tasks=2),
        "initial_state": "paused", "some_future_field": 1,
    }))
    props = tmp_path / "running.properties"
    props.write_text("".join(
        f"{k}={v}\n" for k, v in {**source_config(events, tasks=1), "name": "from-props"}.items()
    ))
    yield events, paused, props


def test_reflection_health_files_pipeline_and_sigterm(
    kafka_bootstrap: str, tmp_path: Path, files: tuple[Path, Path, Path]
) -> None:
    events, paused, props = files
    worker = WorkerProcess(tmp_path / "w", kafka_bootstrap, connector_files=[paused, props])
    with worker:
        assert worker.channel is not None
        _check_reflection_and_health(worker.channel)
        stub = worker.stub
        wait_for_states(stub, "from-json", PAUSED, [])
        wait_for_states(stub, "from-props", RUNNING, [RUNNING])
        _check_file_pipeline(stub, tmp_path)
        assert worker.stop() == 0, worker.logs()[-8000:]
    stops = [e for e in read_events(events) if e["event"].endswith("_stop")]
    assert sorted((e["connector"], e["event"], e["task"]) for e in stops) == [
        ("from-props", "connector_stop", None), ("from-props", "task_stop", 0),
    ]
    assert all(e["connector_deleted"] is False for e in stops)
    assert '"event": "worker_stopped"' in worker.logs()
    _check_futex_hash(worker.log_path)


def _check_futex_hash(log_path: Path) -> None:
    """The worker moved itself to the kernel's global futex hash table where the kernel
    gives processes tables of their own (Linux 6.16+; runtime/futex_hash.py)."""
    started = [
        json.loads(line) for line in log_path.read_text(encoding="utf-8").splitlines()
        if '"event": "worker_started"' in line
    ]
    expected = "no_private_tables" if futex_hash_slots() is None else "global"
    assert [line["futex_hash"] for line in started] == [expected]


def _check_reflection_and_health(channel: grpc.Channel) -> None:
    reflection = reflection_pb2_grpc.ServerReflectionStub(channel)
    replies = reflection.ServerReflectionInfo(
        iter([reflection_pb2.ServerReflectionRequest(list_services="")]), timeout=10
    )
    services = {s.name for reply in replies for s in reply.list_services_response.service}
    assert {"connect.v1.ConnectService", "grpc.health.v1.Health"} <= services
    replies = reflection.ServerReflectionInfo(
        iter([reflection_pb2.ServerReflectionRequest(
            file_containing_symbol="connect.v1.ConnectService")]),
        timeout=10,
    )
    assert any(r.file_descriptor_response.file_descriptor_proto for r in replies)
    health = health_pb2_grpc.HealthStub(channel)
    for service in ("", "connect.v1.ConnectService"):
        reply = health.Check(health_pb2.HealthCheckRequest(service=service), timeout=10)
        assert reply.status == health_pb2.HealthCheckResponse.SERVING


def _check_file_pipeline(stub: pb_grpc.ConnectServiceStub, tmp_path: Path) -> None:
    topic = f"pipeline-{uuid.uuid4().hex[:8]}"
    source_file, sink_file = tmp_path / "in.txt", tmp_path / "out.txt"
    lines = [f"line {i} ünïcode" for i in range(500)]
    source_file.write_text("\n".join(lines[:300]) + "\n", encoding="utf-8")
    stub.CreateConnector(pb.CreateConnectorRequest(name="file-source", config={
        "connector.class": "FileStreamSource", "tasks.max": "1",
        "file": str(source_file), "topic": topic}), timeout=60)
    stub.CreateConnector(pb.CreateConnectorRequest(name="file-sink", config={
        "connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector",
        "tasks.max": "1", "file": str(sink_file), "topics": topic}), timeout=60)
    with source_file.open("a", encoding="utf-8") as handle:
        handle.write("\n".join(lines[300:]) + "\n")

    def sink_lines() -> list[str]:
        return sink_file.read_text(encoding="utf-8").splitlines() if sink_file.exists() else []

    wait_until(lambda: len(sink_lines()) >= len(lines), timeout=120)
    assert sink_lines() == lines
    stub.StopConnector(pb.StopConnectorRequest(name="file-source"))
    wait_for_states(stub, "file-source", STOPPED, [])
