"""Every bad input, over every RPC, gets the right status code with the field named, and
changes nothing: the worker stays healthy and every other connector is exactly as it was
(items 1, 5, 6, 7, 8 and 11 of the hardening issue)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from connect_grpc.testing.cluster import WorkerProcess
from connect_grpc.v1 import connect_pb2 as pb
from connect_grpc.v1 import connect_pb2_grpc as pb_grpc
from tests.integration.helpers import (
    INSTRUMENTED_SINK,
    PAUSED,
    RUNNING,
    STOPPED,
    create,
    field_violations,
    source_config,
    wait_for_states,
)

INVALID = grpc.StatusCode.INVALID_ARGUMENT
NOT_FOUND = grpc.StatusCode.NOT_FOUND
PRECONDITION = grpc.StatusCode.FAILED_PRECONDITION
EXISTS = grpc.StatusCode.ALREADY_EXISTS

#: Connectors every case runs beside; none of them may change.
RUNNING_SOURCE = "bystander-running"
STOPPED_SOURCE = "bystander-stopped"
STOPPED_SINK = "bystander-sink"
PAUSED_SOURCE = "bystander-paused"

#: Kafka Connect's answer to a sink partition without one of its keys (a null value has its own).
MISSING_SINK_PARTITION_KEYS = (
    "The partition for a sink connector offset must contain the keys 'kafka_topic' and "
    "'kafka_partition'"
)


@dataclass(frozen=True)
class Case:
    rpc: str
    request: Any
    code: grpc.StatusCode
    #: The field violation expected (None: the code alone is checked).
    field: str | None = None
    #: A fragment the message or the field's description must contain.
    says: str = ""


def _offset(partition: dict[str, Any], offset: dict[str, Any] | None) -> pb.ConnectorOffset:
    def fields(values: dict[str, Any]) -> pb.OffsetFields:
        result = pb.OffsetFields()
        for key, value in values.items():
            if isinstance(value, bool):
                result.fields[key].bool_value = value
            elif isinstance(value, int):
                result.fields[key].integer_value = value
            else:
                result.fields[key].string_value = value
        return result

    message = pb.ConnectorOffset(partition=fields(partition))
    if offset is not None:
        message.offset.CopyFrom(fields(offset))
    return message


def _sink_config(events: Path) -> dict[str, str]:
    return {
        "connector.class": INSTRUMENTED_SINK,
        "tasks.max": "1",
        "topics": "bad-inputs-topic",
        "test.events.file": str(events),
    }


def _sequence(**extra: str) -> dict[str, str]:
    return {"connector.class": "SequenceSource", "topic": "bad-inputs-seq", **extra}


def _create(name: str, config: dict[str, str], **kwargs: Any) -> pb.CreateConnectorRequest:
    return pb.CreateConnectorRequest(name=name, config=config, **kwargs)


def _cases(events: Path) -> list[Case]:
    source = source_config(events, tasks=1)
    by_name: list[Case] = []
    name_rpcs: list[tuple[str, Callable[[str], Any]]] = [
        ("GetConnector", lambda n: pb.GetConnectorRequest(name=n)),
        ("GetConnectorConfig", lambda n: pb.GetConnectorConfigRequest(name=n)),
        ("GetConnectorStatus", lambda n: pb.GetConnectorStatusRequest(name=n)),
        ("GetTaskStatus", lambda n: pb.GetTaskStatusRequest(name=n, task_id=0)),
        ("ListTasks", lambda n: pb.ListTasksRequest(name=n)),
        ("DeleteConnector", lambda n: pb.DeleteConnectorRequest(name=n)),
        ("PauseConnector", lambda n: pb.PauseConnectorRequest(name=n)),
        ("ResumeConnector", lambda n: pb.ResumeConnectorRequest(name=n)),
        ("StopConnector", lambda n: pb.StopConnectorRequest(name=n)),
        ("RestartConnector", lambda n: pb.RestartConnectorRequest(name=n, include_tasks=True)),
        ("RestartTask", lambda n: pb.RestartTaskRequest(name=n, task_id=0)),
        ("GetOffsets", lambda n: pb.GetOffsetsRequest(name=n)),
        ("AlterOffsets", lambda n: pb.AlterOffsetsRequest(
            name=n, offsets=[_offset({"p": 1}, {"o": 1})])),
        ("ResetOffsets", lambda n: pb.ResetOffsetsRequest(name=n)),
        ("PutConnectorConfig", lambda n: pb.PutConnectorConfigRequest(name=n, config=source)),
        ("CreateConnector", lambda n: _create(n, source)),
    ]
    for rpc, build in name_rpcs:
        by_name += [
            Case(rpc, build(""), INVALID, "name", "must not be empty"),
            Case(rpc, build("   "), INVALID, "name", "must not be empty"),
            Case(rpc, build("bad\nname"), INVALID, "name", "control characters"),
            Case(rpc, build("x" * 256), INVALID, "name", "limit is 255"),
        ]
        if rpc not in ("PutConnectorConfig", "CreateConnector"):
            by_name.append(Case(rpc, build("no-such-connector"), NOT_FOUND))
    sink_stopped = STOPPED_SINK
    tasks_max = "tasks.max"
    return [
        *by_name,
        # typed configs are parsed as Kafka's ConfigDef parses them; limits are named
        Case("CreateConnector", _create("c", _sequence(**{tasks_max: "2147483648"})),
             INVALID, "config.tasks.max", "Not a number of type INT"),
        Case("CreateConnector", _create("c", _sequence(**{tasks_max: "1_0"})),
             INVALID, "config.tasks.max", "Not a number of type INT"),
        Case("CreateConnector", _create("c", _sequence(**{tasks_max: "9" * 30})),
             INVALID, "config.tasks.max"),
        Case("CreateConnector", _create("c", _sequence(**{tasks_max: "257"})),
             INVALID, "config.tasks.max", "tasks.max.limit"),
        Case("CreateConnector", _create("c", _sequence(**{tasks_max: "0"})),
             INVALID, "config.tasks.max"),
        Case("CreateConnector", _create("c", _sequence(**{"sequence.rate": "NaN"})),
             INVALID, "config.sequence.rate"),
        Case("CreateConnector", _create("c", _sequence(**{"sequence.rate": "Infinity"})),
             INVALID, "config.sequence.rate"),
        Case("CreateConnector", _create("c", _sequence(**{"sequence.count": "1e3"})),
             INVALID, "config.sequence.count"),
        Case("CreateConnector",
             _create("c", {**_sink_config(events), "topics": "", "topics.regex": "[unclosed"}),
             INVALID, "config.topics.regex"),
        Case("CreateConnector", _create("c", {"tasks.max": "1"}),
             INVALID, "config.connector.class"),
        Case("CreateConnector", _create("c", {"connector.class": "no.such.Plugin"}),
             INVALID, "config.connector.class"),
        Case("CreateConnector", _create("c", {**source, "name": "other"}),
             INVALID, "config.name"),
        Case("CreateConnector", _create("c", {**source, "padding": "x" * 600_000}),
             INVALID, "config", "connector.config.max.bytes"),
        Case("CreateConnector", _create("c", source, initial_state=99),
             INVALID, "initial_state"),
        Case("CreateConnector", _create(RUNNING_SOURCE, source), EXISTS),
        Case("CreateConnector", _create(f" {RUNNING_SOURCE} ", source), EXISTS),
        Case("CreateConnector",
             _create("c", source, initial_offsets=pb.ConnectorOffsets(
                 offsets=[pb.ConnectorOffset()])),
             INVALID, "initial_offsets.offsets[0].partition"),
        Case("PutConnectorConfig",
             pb.PutConnectorConfigRequest(name=STOPPED_SOURCE, config={
                 **source, tasks_max: "-1"}),
             INVALID, "config.tasks.max"),
        # offsets
        Case("AlterOffsets", pb.AlterOffsetsRequest(
            name=RUNNING_SOURCE, offsets=[_offset({"p": 1}, {"o": 1})]), PRECONDITION),
        Case("AlterOffsets", pb.AlterOffsetsRequest(name=STOPPED_SOURCE), INVALID, "offsets"),
        Case("AlterOffsets", pb.AlterOffsetsRequest(name=sink_stopped, offsets=[_offset(
            {"kafka_topic": "bad-inputs-topic", "kafka_partition": 2**31},
            {"kafka_offset": 1})]), INVALID, "offsets[0].partition.kafka_partition"),
        Case("AlterOffsets", pb.AlterOffsetsRequest(name=sink_stopped, offsets=[_offset(
            {"kafka_partition": 0}, {"kafka_offset": 1})]),
             INVALID, "offsets[0].partition.kafka_topic", MISSING_SINK_PARTITION_KEYS),
        Case("AlterOffsets", pb.AlterOffsetsRequest(name=sink_stopped, offsets=[_offset(
            {"kafka_topic": "bad-inputs-topic"}, {"kafka_offset": 1})]),
             INVALID, "offsets[0].partition.kafka_partition", MISSING_SINK_PARTITION_KEYS),
        Case("AlterOffsets", pb.AlterOffsetsRequest(name=sink_stopped, offsets=[_offset(
            {"kafka_topic": "bad-inputs-topic", "kafka_partition": 0},
            {"kafka_offset": -1})]), INVALID, "offsets[0].offset.kafka_offset"),
        Case("AlterOffsets", pb.AlterOffsetsRequest(name=sink_stopped, offsets=[_offset(
            {"kafka_topic": f"no-such-topic-{uuid.uuid4().hex}", "kafka_partition": 0},
            {"kafka_offset": 1})]), INVALID, "offsets[0].partition.kafka_topic",
             "does not exist"),
        Case("AlterOffsets", pb.AlterOffsetsRequest(name=sink_stopped, offsets=[_offset(
            {"kafka_topic": "bad-inputs-topic", "kafka_partition": 7},
            {"kafka_offset": 1})]), INVALID, "offsets[0].partition.kafka_partition",
             "does not exist"),
        Case("ResetOffsets", pb.ResetOffsetsRequest(name=RUNNING_SOURCE), PRECONDITION),
        # tasks, paging, plugins
        Case("GetTaskStatus", pb.GetTaskStatusRequest(name=RUNNING_SOURCE, task_id=5), NOT_FOUND),
        Case("RestartTask", pb.RestartTaskRequest(name=RUNNING_SOURCE, task_id=-1), NOT_FOUND),
        Case("ListConnectors", pb.ListConnectorsRequest(page_size=-1), INVALID, "page_size"),
        Case("ListConnectors", pb.ListConnectorsRequest(page_token="!!"), INVALID, "page_token"),
        Case("ValidateConfig", pb.ValidateConfigRequest(config={"connector.class": "nope"}),
             INVALID, "config.connector.class"),
    ]


@pytest.fixture(scope="module")
def module_events(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("bad-inputs") / "events.jsonl"


@pytest.fixture(scope="module")
def bystanders(
    worker: WorkerProcess, module_events: Path, kafka_admin: Any
) -> Iterator[pb_grpc.ConnectServiceStub]:
    from tests.integration.helpers import create_topic

    create_topic(kafka_admin, "bad-inputs-topic")
    stub = worker.stub
    source = source_config(module_events, tasks=1)
    create(stub, RUNNING_SOURCE, source)
    create(stub, STOPPED_SOURCE, source, pb.INITIAL_STATE_STOPPED)
    create(stub, PAUSED_SOURCE, source, pb.INITIAL_STATE_PAUSED)
    create(stub, STOPPED_SINK, _sink_config(module_events), pb.INITIAL_STATE_STOPPED)
    wait_for_states(stub, RUNNING_SOURCE, RUNNING, [RUNNING])
    yield stub


def _snapshot(stub: pb_grpc.ConnectServiceStub) -> dict[str, Any]:
    listing = stub.ListConnectors(
        pb.ListConnectorsRequest(expand_info=True, expand_status=True), timeout=10
    )
    return {
        c.name: (
            dict(c.info.config),
            [t.task for t in c.info.tasks],
            c.status.connector.state,
            [t.state for t in c.status.tasks],
        )
        for c in listing.connectors
    }


def _case_id(case: Case) -> str:
    return f"{case.rpc}-{case.code.name}-{case.field or case.says[:20]}"


_ALL_CASES = _cases(Path("/events-placeholder"))


@pytest.mark.parametrize("index", range(len(_ALL_CASES)), ids=[_case_id(c) for c in _ALL_CASES])
def test_bad_input_is_rejected_and_changes_nothing(
    worker: WorkerProcess,
    bystanders: pb_grpc.ConnectServiceStub,
    module_events: Path,
    index: int,
) -> None:
    case = _cases(module_events)[index]
    stub = bystanders
    before = _snapshot(stub)
    method = getattr(stub, case.rpc)
    with pytest.raises(grpc.RpcError) as caught:
        answer = method(case.request, timeout=30)
        if case.rpc == "WatchConnectorStatus":
            next(iter(answer))
    error = caught.value
    assert error.code() == case.code, f"{case.rpc}: {error.code()} {error.details()}"
    violations = field_violations(error) if case.code == INVALID else {}
    if case.field is not None:
        assert case.field in violations, f"{case.rpc}: violations {violations}"
    if case.says:
        text = f"{error.details()} {' '.join(violations.values())}"
        assert case.says in text, f"{case.rpc}: {text!r}"
    assert _snapshot(stub) == before
    health = health_pb2_grpc.HealthStub(worker.channel).Check(
        health_pb2.HealthCheckRequest(service=""), timeout=5
    )
    assert health.status == health_pb2.HealthCheckResponse.SERVING
    assert worker.returncode is None


def test_watch_of_a_bad_name_is_rejected(bystanders: pb_grpc.ConnectServiceStub) -> None:
    for name, code in (("", INVALID), ("no-such-connector", NOT_FOUND)):
        with pytest.raises(grpc.RpcError) as caught:
            next(iter(bystanders.WatchConnectorStatus(
                pb.WatchConnectorStatusRequest(name=name), timeout=10)))
        assert caught.value.code() == code


# ---- names are normalised once, at the edge, for every RPC (item 5) ----------------------


def test_every_rpc_trims_the_name(
    bystanders: pb_grpc.ConnectServiceStub, module_events: Path, name: str
) -> None:
    stub = bystanders
    padded = f"  {name} "
    create(stub, padded, source_config(module_events, tasks=1))
    wait_for_states(stub, name, RUNNING, [RUNNING])
    assert stub.GetConnector(pb.GetConnectorRequest(name=padded), timeout=10).connector.name == name
    stub.PauseConnector(pb.PauseConnectorRequest(name=padded), timeout=10)
    wait_for_states(stub, name, PAUSED, [PAUSED])
    stub.StopConnector(pb.StopConnectorRequest(name=padded), timeout=30)
    wait_for_states(stub, name, STOPPED, [])
    offsets = [_offset({"p": 1}, {"o": 7})]
    stub.AlterOffsets(pb.AlterOffsetsRequest(name=padded, offsets=offsets), timeout=30)
    read = stub.GetOffsets(pb.GetOffsetsRequest(name=name), timeout=30).offsets
    assert [o.offset.fields["o"].integer_value for o in read] == [7]
    stub.ResumeConnector(pb.ResumeConnectorRequest(name=padded), timeout=30)
    wait_for_states(stub, name, RUNNING, [RUNNING])
    stub.RestartTask(pb.RestartTaskRequest(name=padded, task_id=0), timeout=30)
    stub.RestartConnector(pb.RestartConnectorRequest(name=padded), timeout=30)
    stub.DeleteConnector(pb.DeleteConnectorRequest(name=padded), timeout=30)
    names = [c.name for c in stub.ListConnectors(pb.ListConnectorsRequest(), timeout=10).connectors]
    assert name not in names


# ---- request_id is bound to its request (item 6) -----------------------------------------


def test_a_request_id_reused_for_another_request_is_rejected(
    bystanders: pb_grpc.ConnectServiceStub, module_events: Path, name: str
) -> None:
    stub = bystanders
    request_id = uuid.uuid4().hex
    config = source_config(module_events, tasks=1)
    first = stub.CreateConnector(
        _create(name, config, initial_state=pb.INITIAL_STATE_STOPPED, request_id=request_id),
        timeout=30,
    )
    replay = stub.CreateConnector(
        _create(f" {name}", config, initial_state=pb.INITIAL_STATE_STOPPED,
                request_id=request_id),
        timeout=30,
    )
    assert replay == first
    for other in (
        _create(f"{name}-other", config, initial_state=pb.INITIAL_STATE_STOPPED,
                request_id=request_id),
        _create(name, {**config, "tasks.max": "2"}, initial_state=pb.INITIAL_STATE_STOPPED,
                request_id=request_id),
    ):
        with pytest.raises(grpc.RpcError) as caught:
            stub.CreateConnector(other, timeout=30)
        assert caught.value.code() == INVALID
        assert "request_id" in field_violations(caught.value)
    with pytest.raises(grpc.RpcError) as caught:
        stub.DeleteConnector(pb.DeleteConnectorRequest(name=name, request_id=request_id),
                             timeout=30)
    assert caught.value.code() == INVALID
    names = [c.name for c in stub.ListConnectors(pb.ListConnectorsRequest(), timeout=10).connectors]
    assert name in names and f"{name}-other" not in names
    stub.DeleteConnector(pb.DeleteConnectorRequest(name=name), timeout=30)


# ---- size limits and paging (item 7) -------------------------------------------------------


def test_list_connectors_pages_so_no_answer_outgrows_a_default_client(
    bystanders: pb_grpc.ConnectServiceStub, module_events: Path, name: str
) -> None:
    stub = bystanders
    big = {**source_config(module_events, tasks=1), "padding": "x" * 400_000}
    created = [f"{name}-{i:02d}" for i in range(12)]
    for connector in created:
        create(stub, connector, big, pb.INITIAL_STATE_STOPPED)
    seen: list[str] = []
    token, pages = "", 0
    while True:
        page = stub.ListConnectors(
            pb.ListConnectorsRequest(expand_info=True, page_token=token), timeout=30
        )
        assert page.ByteSize() < 4 * 1024 * 1024
        seen += [c.name for c in page.connectors]
        pages += 1
        token = page.next_page_token
        if not token:
            break
    assert pages >= 2
    assert seen == sorted(seen) and set(created) <= set(seen)
    assert len(seen) == len(set(seen))
    small = stub.ListConnectors(pb.ListConnectorsRequest(page_size=2), timeout=10)
    assert len(small.connectors) == 2 and small.next_page_token
    with pytest.raises(grpc.RpcError) as caught:
        stub.ListConnectors(
            pb.ListConnectorsRequest(page_size=2, page_token=small.next_page_token,
                                     expand_status=True),
            timeout=10,
        )
    assert caught.value.code() == INVALID
    for connector in created:
        stub.DeleteConnector(pb.DeleteConnectorRequest(name=connector), timeout=30)
