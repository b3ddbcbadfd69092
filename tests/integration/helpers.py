"""Shared helpers of the integration tests: status polling and error details."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import grpc
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from connect_grpc.testing.cluster import wait_until
from connect_grpc.v1 import connect_pb2 as pb
from connect_grpc.v1 import connect_pb2_grpc as pb_grpc

INSTRUMENTED_SOURCE = "connect_grpc.testing.plugins.InstrumentedSourceConnector"
INSTRUMENTED_SINK = "connect_grpc.testing.plugins.InstrumentedSinkConnector"

RUNNING = pb.INSTANCE_STATE_RUNNING
PAUSED = pb.INSTANCE_STATE_PAUSED
STOPPED = pb.INSTANCE_STATE_STOPPED
FAILED = pb.INSTANCE_STATE_FAILED


def source_config(events: Path, tasks: int = 2, **extra: str) -> dict[str, str]:
    return {
        "connector.class": INSTRUMENTED_SOURCE,
        "tasks.max": str(tasks),
        "topic": "instrumented",
        "test.events.file": str(events),
        **extra,
    }


def states(stub: pb_grpc.ConnectServiceStub, name: str) -> tuple[int, list[int]]:
    status = stub.GetConnectorStatus(pb.GetConnectorStatusRequest(name=name), timeout=10).status
    return status.connector.state, [task.state for task in status.tasks]


def wait_for_states(
    stub: pb_grpc.ConnectServiceStub,
    name: str,
    connector: int,
    tasks: list[int],
    timeout: float = 60.0,
) -> None:
    """Waits until the connector and its tasks are in exactly these states."""
    try:
        wait_until(lambda: states(stub, name) == (connector, tasks), timeout=timeout)
    except TimeoutError:
        raise AssertionError(
            f"{name}: expected {(connector, tasks)}, got {states(stub, name)}"
        ) from None


def create(
    stub: pb_grpc.ConnectServiceStub,
    name: str,
    config: Mapping[str, str],
    initial_state: int = pb.INITIAL_STATE_UNSPECIFIED,
) -> pb.CreateConnectorResponse:
    return stub.CreateConnector(
        pb.CreateConnectorRequest(name=name, config=dict(config), initial_state=initial_state),
        timeout=60,
    )


def field_violations(error: grpc.RpcError) -> dict[str, str]:
    """The BadRequest field violations of a failed call, field → description."""
    status = rpc_status.from_call(error)  # type: ignore[arg-type]
    assert status is not None, "no rich status in the error"
    violations: dict[str, str] = {}
    for detail in status.details:
        if detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
            bad_request = error_details_pb2.BadRequest()
            detail.Unpack(bad_request)
            violations.update({v.field: v.description for v in bad_request.field_violations})
    return violations


def error_reason(error: grpc.RpcError) -> str:
    status = rpc_status.from_call(error)  # type: ignore[arg-type]
    assert status is not None
    for detail in status.details:
        if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            info = error_details_pb2.ErrorInfo()
            detail.Unpack(info)
            return str(info.reason)
    return ""
