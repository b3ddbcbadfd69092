"""Client conversions: domain → proto (api/convert.py) → wire → domain (client_convert.py)
gives back what went in; a rich gRPC status becomes the domain exception it came from, both
as a pure function and through a real in-process gRPC server called by the client."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from dataclasses import replace
from typing import TypeVar

import grpc
import pytest
from google.protobuf.message import Message
from google.rpc import code_pb2, status_pb2
from grpc_status import rpc_status

from connect_grpc.api import convert
from connect_grpc.api.errors import to_status
from connect_grpc.client import ConnectClient
from connect_grpc.client import convert as cc
from connect_grpc.ctl.exit_codes import failure_of
from connect_grpc.kernel.domain import (
    ClusterInfo,
    ConfigInfo,
    ConfigInfos,
    ConfigKeyInfo,
    ConfigValueInfo,
    ConnectorInfo,
    ConnectorOffset,
    ConnectorStatus,
    ConnectorType,
    InstanceStatus,
    PlacementKind,
    PluginDesc,
    State,
    TargetState,
    TaskId,
    TaskInfo,
    TaskPlacement,
    TaskStatus,
    WorkerDesc,
)
from connect_grpc.kernel.errors import (
    AlreadyExistsError,
    ConnectError,
    FailedPreconditionError,
    FieldViolation,
    InstanceFailedError,
    InvalidArgumentError,
    NotFoundError,
    PreconditionViolation,
    UnavailableError,
    UnimplementedError,
)
from connect_grpc.v1 import connect_pb2 as pb
from connect_grpc.v1 import connect_pb2_grpc as pb_grpc
from tests.unit.grpc_stubs import serving

MAX_LONG = 2**63 - 1

pytestmark = pytest.mark.timeout(30)


M = TypeVar("M", bound=Message)


def wire(message: M) -> M:
    """The message after serialization and parsing, as a client receives it."""
    return type(message).FromString(message.SerializeToString())


def info(name: str = "c", connector_type: ConnectorType = ConnectorType.SOURCE) -> ConnectorInfo:
    return ConnectorInfo(
        name=name,
        config={"connector.class": "X", "tasks.max": "2", "name": name},
        tasks=(TaskId(name, 0), TaskId(name, 1)),
        type=connector_type,
    )


def status(state: State, name: str = "c") -> ConnectorStatus:
    return ConnectorStatus(
        name=name,
        connector=InstanceStatus(
            state, "worker-1", "trace\n  at x" if state is State.FAILED else ""
        ),
        tasks=(
            TaskStatus(0, InstanceStatus(state, "worker-2")),
            TaskStatus(1, InstanceStatus(State.RUNNING, "worker-1", "")),
        ),
        type=ConnectorType.SINK,
    )


# domain → proto → domain


@pytest.mark.parametrize("connector_type", list(ConnectorType))
def test_connector_info_round_trips(connector_type: ConnectorType) -> None:
    original = info(connector_type=connector_type)
    assert cc.connector_info_from_pb(wire(convert.connector_info_to_pb(original))) == original


def test_task_info_round_trips() -> None:
    original = TaskInfo(TaskId("c", 3), {"task.key": "v"})
    assert cc.task_info_from_pb(wire(convert.task_info_to_pb(original))) == original


@pytest.mark.parametrize("state", list(State))
def test_status_round_trips_in_every_state(state: State) -> None:
    original = status(state)
    assert cc.connector_status_from_pb(wire(convert.connector_status_to_pb(original))) == original
    task = original.tasks[0]
    assert cc.task_status_from_pb(wire(convert.task_status_to_pb(task))) == task


def test_listing_keeps_absent_expansions_absent() -> None:
    response = wire(
        pb.ListConnectorsResponse(
            connectors=[
                pb.ConnectorListing(name="a"),
                pb.ConnectorListing(
                    name="b",
                    info=convert.connector_info_to_pb(info("b")),
                    status=convert.connector_status_to_pb(status(State.PAUSED, "b")),
                ),
            ]
        )
    )
    assert [cc.connector_listing_from_pb(c) for c in response.connectors] == [
        cc.ConnectorListing("a"),
        cc.ConnectorListing("b", info("b"), status(State.PAUSED, "b")),
    ]


def test_offsets_round_trip_exactly() -> None:
    offsets = [
        ConnectorOffset(
            partition={"filename": "/tmp/a", "shard": 3, "flag": True, "none": None},
            offset={"position": MAX_LONG, "min": -(2**63), "ratio": 0.5, "note": "x"},
        ),
        ConnectorOffset(partition={"kafka_topic": "t", "kafka_partition": 0}, offset=None),
    ]
    response = wire(pb.GetOffsetsResponse(offsets=[cc.connector_offset_to_pb(o) for o in offsets]))
    back = cc.connector_offsets_from_pb(response.offsets, "offsets")
    assert back == offsets
    assert back[0].offset is not None
    assert back[0].offset["position"] == MAX_LONG and type(back[0].offset["position"]) is int
    assert type(back[0].partition and back[0].partition["flag"]) is bool


@pytest.mark.parametrize("state", list(TargetState))
def test_initial_state_round_trips(state: TargetState) -> None:
    assert convert.initial_state_from_pb(cc.initial_state_to_pb(state)) is state


def key(name: str, default: str | None) -> ConfigKeyInfo:
    return ConfigKeyInfo(
        name=name,
        type="INT",
        required=default is None,
        default_value=default,
        importance="HIGH",
        documentation=f"what {name} does",
        group="Common",
        order_in_group=2,
        width="SHORT",
        display_name=name.title(),
        dependents=("other",),
    )


def test_config_infos_round_trip() -> None:
    original = ConfigInfos(
        name="X",
        error_count=2,
        groups=("Common", "Extra"),
        configs=(
            ConfigInfo(key("tasks.max", "1"), ConfigValueInfo("tasks.max", "x", ("not an int",))),
            ConfigInfo(key("file", None), ConfigValueInfo("file", None, ("missing",), (), False)),
            ConfigInfo(None, ConfigValueInfo("extra", "", (), ("a", "b"))),
        ),
    )
    assert cc.config_infos_from_pb(wire(convert.config_infos_to_pb(original))) == original


@pytest.mark.parametrize("connector_type", list(ConnectorType))
def test_plugin_round_trips(connector_type: ConnectorType) -> None:
    original = PluginDesc(
        class_name="a.b.C",
        type=connector_type,
        version="1.2.3",
        aliases=("C", "CConnector"),
        config_definitions=(key("k", "0"), key("r", None)),
    )
    assert cc.plugin_from_pb(wire(convert.plugin_to_pb(original))) == original
    bare = PluginDesc("a.b.D", connector_type, "")
    assert cc.plugin_from_pb(wire(convert.plugin_to_pb(bare))) == bare


@pytest.mark.parametrize(
    "plugin_type",
    ["source", "sink", "transformation", "predicate", "converter", "header_converter"],
)
def test_a_plugins_kafka_type_round_trips(plugin_type: str) -> None:
    original = PluginDesc("org.apache.kafka.connect.json.JsonConverter", ConnectorType.UNKNOWN,
                          "0.1.0", ("Json", "JsonConverter"), plugin_type=plugin_type)
    assert cc.plugin_from_pb(wire(convert.plugin_to_pb(original))) == original


def test_cluster_info_round_trips() -> None:
    original = ClusterInfo(
        version="0.1.0",
        mode="distributed",
        kafka_cluster_id="abc",
        leader_id="w1",
        leader_address="127.0.0.1:1",
        workers=(
            WorkerDesc("w1", "127.0.0.1:1"),
            WorkerDesc(
                "w2",
                "127.0.0.1:2",
                ("c",),
                (TaskId("c", 0), TaskId("c", 1)),
                {TaskId("c", 1): TaskPlacement(PlacementKind.DRIVER, "h2")},
            ),
        ),
        generation=MAX_LONG,
        worker_id="w2",
        joined=False,
    )
    assert cc.cluster_info_from_pb(wire(convert.cluster_info_to_pb(original))) == original
    joined = replace(original, joined=True)
    assert cc.cluster_info_from_pb(wire(convert.cluster_info_to_pb(joined))) == joined


@pytest.mark.parametrize("kind", list(PlacementKind))
def test_where_a_task_runs_round_trips(kind: PlacementKind) -> None:
    placed = TaskStatus(0, InstanceStatus(State.RUNNING, "w", placement=TaskPlacement(kind, "h")))
    assert cc.task_status_from_pb(wire(convert.task_status_to_pb(placed))) == placed
    unplaced = TaskStatus(0, InstanceStatus(State.UNASSIGNED, "w"))
    assert not convert.task_status_to_pb(unplaced).HasField("placement")
    assert cc.task_status_from_pb(wire(convert.task_status_to_pb(unplaced))) == unplaced


# errors: domain → rich status → domain

ERRORS: list[ConnectError] = [
    NotFoundError("connector c not found"),
    AlreadyExistsError("connector c exists"),
    InvalidArgumentError(
        "2 error(s)",
        [FieldViolation("config.tasks.max", "not an int"), FieldViolation("name", "empty")],
    ),
    InvalidArgumentError("no details"),
    FailedPreconditionError(
        "connector c is not STOPPED", [PreconditionViolation("STATE", "c", "is RUNNING")]
    ),
    UnavailableError("no leader", retry_after_seconds=2.5),
    UnimplementedError("not in standalone mode"),
    ConnectError("something broke"),
]


def assert_same_error(actual: ConnectError, expected: ConnectError) -> None:
    assert type(actual) is type(expected)
    assert actual.message == expected.message
    assert getattr(actual, "violations", None) == getattr(expected, "violations", None)
    assert getattr(actual, "retry_after_seconds", None) == getattr(
        expected, "retry_after_seconds", None
    )


@pytest.mark.parametrize("error", ERRORS, ids=lambda e: f"{type(e).__name__}-{e.message}")
def test_error_round_trips_through_the_status(error: ConnectError) -> None:
    assert_same_error(cc.error_from_status(wire(to_status(error))), error)


def test_unavailable_without_retry_info_has_the_default_delay() -> None:
    bare = to_status(UnavailableError("x"))
    del bare.details[:]
    back = cc.error_from_status(bare)
    assert isinstance(back, UnavailableError)
    assert back.retry_after_seconds == cc.DEFAULT_RETRY_AFTER_SECONDS


# through a real in-process gRPC server


class ScriptedServicer(pb_grpc.ConnectServiceServicer):  # type: ignore[misc]  # generated
    """GetConnector fails with ``error``; WatchConnectorStatus streams ``watch``, then fails
    with ``error`` if it is set; GetConnectorStatus answers ``status``."""

    def __init__(self) -> None:
        self.error: ConnectError | None = None
        #: None: ``error`` (or ``plain_abort``) fails every call; N: only the next N calls.
        self.failures: int | None = None
        self.calls = 0
        self.plain_abort: grpc.StatusCode | None = None
        self.watch: list[pb.WatchConnectorStatusResponse] = []
        self.status = status(State.RUNNING)

    def _fail(self, context: grpc.ServicerContext) -> None:
        self.calls += 1
        if self.failures is not None:
            if self.failures == 0:
                return
            self.failures -= 1
        if self.plain_abort is not None:
            context.abort(self.plain_abort, "plain")
        if self.error is not None:
            context.abort_with_status(rpc_status.to_status(to_status(self.error)))

    def GetConnector(
        self, request: pb.GetConnectorRequest, context: grpc.ServicerContext
    ) -> pb.GetConnectorResponse:
        self._fail(context)
        return pb.GetConnectorResponse(connector=convert.connector_info_to_pb(info(request.name)))

    def PauseConnector(
        self, request: pb.PauseConnectorRequest, context: grpc.ServicerContext
    ) -> pb.PauseConnectorResponse:
        self._fail(context)
        return pb.PauseConnectorResponse()

    def GetConnectorStatus(
        self, request: pb.GetConnectorStatusRequest, context: grpc.ServicerContext
    ) -> pb.GetConnectorStatusResponse:
        return pb.GetConnectorStatusResponse(status=convert.connector_status_to_pb(self.status))

    def WatchConnectorStatus(
        self, request: pb.WatchConnectorStatusRequest, context: grpc.ServicerContext
    ) -> Iterator[pb.WatchConnectorStatusResponse]:
        yield from self.watch
        self._fail(context)


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[ScriptedServicer, str]]:
    servicer = ScriptedServicer()
    with serving(servicer, max_workers=4) as address:
        yield servicer, address


@pytest.fixture
def servicer(served: tuple[ScriptedServicer, str]) -> Iterator[ScriptedServicer]:
    servicer = served[0]
    yield servicer
    servicer.error, servicer.plain_abort, servicer.watch = None, None, []
    servicer.failures, servicer.calls = None, 0


@pytest.fixture
def client(served: tuple[ScriptedServicer, str]) -> Iterator[ConnectClient]:
    with ConnectClient(served[1], timeout=10) as client:
        yield client


@pytest.mark.parametrize("error", ERRORS, ids=lambda e: f"{type(e).__name__}-{e.message}")
def test_client_raises_the_domain_error_the_server_sent(
    servicer: ScriptedServicer, client: ConnectClient, error: ConnectError
) -> None:
    servicer.error = error
    with pytest.raises(ConnectError) as excinfo:
        client.get_connector("c")
    assert_same_error(excinfo.value, error)
    assert isinstance(excinfo.value.__cause__, grpc.RpcError)


@pytest.mark.parametrize(
    ("code", "kind"),
    [
        (grpc.StatusCode.NOT_FOUND, NotFoundError),
        (grpc.StatusCode.INTERNAL, ConnectError),
        (grpc.StatusCode.DEADLINE_EXCEEDED, ConnectError),
    ],
)
def test_plain_status_without_details_maps_by_code(
    servicer: ScriptedServicer, client: ConnectClient, code: grpc.StatusCode, kind: type
) -> None:
    servicer.plain_abort = code
    with pytest.raises(ConnectError) as excinfo:
        client.get_connector("c")
    assert type(excinfo.value) is kind and excinfo.value.message == "plain"


def test_unreachable_worker_is_unavailable() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{sock.getsockname()[1]}"  # bound, not listening: refused
        with ConnectClient(address, timeout=5) as client, pytest.raises(UnavailableError):
            client.get_cluster_info()


def test_client_answers_with_domain_types(
    servicer: ScriptedServicer, client: ConnectClient
) -> None:
    assert client.get_connector("x") == info("x")
    assert client.get_connector_status("c") == status(State.RUNNING)


def test_watch_yields_statuses_then_none_on_delete_then_ends(
    servicer: ScriptedServicer, client: ConnectClient
) -> None:
    servicer.watch = [
        pb.WatchConnectorStatusResponse(status=convert.connector_status_to_pb(status(s)))
        for s in (State.RUNNING, State.PAUSED)
    ] + [pb.WatchConnectorStatusResponse(deleted=True)]
    assert list(client.watch_connector_status("c")) == [
        status(State.RUNNING), status(State.PAUSED), None
    ]


def test_watch_raises_the_domain_error_mid_stream(
    servicer: ScriptedServicer, client: ConnectClient
) -> None:
    servicer.watch = [
        pb.WatchConnectorStatusResponse(status=convert.connector_status_to_pb(status(State.FAILED)))
    ]
    servicer.error = UnavailableError("leader moved", retry_after_seconds=0.25)
    stream = client.watch_connector_status("c")
    assert next(stream) == status(State.FAILED)
    with pytest.raises(UnavailableError) as excinfo:
        next(stream)
    assert excinfo.value.retry_after_seconds == 0.25


def test_a_given_channel_is_left_open(served: tuple[ScriptedServicer, str]) -> None:
    channel = grpc.insecure_channel(served[1])
    try:
        with ConnectClient(channel, timeout=10) as client:
            client.get_connector("c")
        assert ConnectClient(channel).get_connector("d").name == "d"
    finally:
        channel.close()


# how a call failed: the code and reason behind the domain error (connect-grpc ctl's exit codes)


@pytest.mark.parametrize(
    ("error", "code", "reason"),
    [
        (NotFoundError("nope"), grpc.StatusCode.NOT_FOUND, "NOT_FOUND"),
        (InstanceFailedError("task 1 failed"), grpc.StatusCode.INTERNAL, "INSTANCE_FAILED"),
        (UnavailableError("later"), grpc.StatusCode.UNAVAILABLE, "UNAVAILABLE"),
    ],
)
def test_call_failure_reads_code_and_reason_from_the_call(
    servicer: ScriptedServicer,
    client: ConnectClient,
    error: ConnectError,
    code: grpc.StatusCode,
    reason: str,
) -> None:
    servicer.error = error
    with pytest.raises(ConnectError) as excinfo:
        client.get_connector("c")
    assert cc.call_failure_of(excinfo.value) == cc.CallFailure(code, reason)


def test_call_failure_of_a_plain_status_keeps_its_code(
    servicer: ScriptedServicer, client: ConnectClient
) -> None:
    servicer.plain_abort = grpc.StatusCode.PERMISSION_DENIED
    with pytest.raises(ConnectError) as excinfo:
        client.get_connector("c")
    assert cc.call_failure_of(excinfo.value).code is grpc.StatusCode.PERMISSION_DENIED


def test_call_failure_of_an_error_raised_without_a_call_uses_its_type() -> None:
    failure = cc.call_failure_of(InvalidArgumentError.for_field("name", "must not be empty"))
    assert failure == cc.CallFailure(grpc.StatusCode.INVALID_ARGUMENT, "INVALID_ARGUMENT")
    assert cc.call_failure_of(ConnectError("?")).code is grpc.StatusCode.UNKNOWN


def test_the_tls_hint_needs_a_bare_unavailable_and_a_known_channel_kind() -> None:
    closed = status_pb2.Status(code=code_pb2.UNAVAILABLE, message="x: Socket closed")
    handshake = status_pb2.Status(
        code=code_pb2.UNAVAILABLE, message="Tls handshake failed: WRONG_VERSION_NUMBER"
    )
    assert cc.transport_hint(closed, tls=False) == cc.PLAINTEXT_AT_TLS_HINT
    assert cc.transport_hint(handshake, tls=True) == cc.TLS_AT_PLAINTEXT_HINT
    assert cc.transport_hint(closed, tls=True) is None
    assert cc.transport_hint(handshake, tls=False) is None
    assert cc.transport_hint(closed, tls=None) is None
    refused = status_pb2.Status(code=code_pb2.UNAVAILABLE, message="Connection refused")
    assert cc.transport_hint(refused, tls=False) is None
    internal = status_pb2.Status(code=code_pb2.INTERNAL, message="Socket closed")
    assert cc.transport_hint(internal, tls=False) is None
    rich = to_status(UnavailableError("Socket closed", retry_after_seconds=2))
    assert cc.transport_hint(rich, tls=False) is None


NO_LEADER = UnavailableError("no leader yet", retry_after_seconds=0.01)


def test_a_read_the_worker_asks_to_retry_is_retried_within_the_timeout(
    servicer: ScriptedServicer, served: tuple[ScriptedServicer, str]
) -> None:
    servicer.error, servicer.failures = NO_LEADER, 2
    with ConnectClient(served[1], timeout=10, retry_unavailable=True) as client:
        assert client.get_connector("c").name == "c"
    assert servicer.calls == 3


def test_without_retry_unavailable_the_first_answer_is_raised(
    servicer: ScriptedServicer, client: ConnectClient
) -> None:
    servicer.error, servicer.failures = NO_LEADER, 2
    with pytest.raises(UnavailableError):
        client.get_connector("c")
    assert servicer.calls == 1


def test_a_mutation_is_retried_only_with_a_request_id(
    servicer: ScriptedServicer, served: tuple[ScriptedServicer, str]
) -> None:
    servicer.error, servicer.failures = NO_LEADER, 1
    with ConnectClient(served[1], timeout=10, retry_unavailable=True) as client:
        with pytest.raises(UnavailableError):
            client.pause_connector("c")
        assert servicer.calls == 1
        servicer.failures, servicer.calls = 1, 0
        client.pause_connector("c", request_id="pause-c-1")
    assert servicer.calls == 2


def test_no_retry_past_the_timeout_nor_without_the_workers_delay(
    servicer: ScriptedServicer, served: tuple[ScriptedServicer, str]
) -> None:
    servicer.error, servicer.failures = UnavailableError("busy", retry_after_seconds=60), 1
    with ConnectClient(served[1], timeout=10, retry_unavailable=True) as client:
        with pytest.raises(UnavailableError):
            client.get_connector("c")
        assert servicer.calls == 1
        servicer.error, servicer.plain_abort = None, grpc.StatusCode.UNAVAILABLE
        servicer.failures, servicer.calls = 1, 0
        with pytest.raises(UnavailableError) as caught:
            client.get_connector("c")
    assert servicer.calls == 1
    assert isinstance(caught.value.__cause__, grpc.RpcError)
    assert cc.server_retry_delay(caught.value.__cause__) is None


def test_ctl_advises_running_again_only_when_the_worker_asked_to_retry(
    servicer: ScriptedServicer, client: ConnectClient
) -> None:
    servicer.error = UnavailableError("no leader yet", retry_after_seconds=2)
    with pytest.raises(UnavailableError) as asked:
        client.get_connector("c")
    assert failure_of(asked.value).lines() == [
        "Error: UNAVAILABLE: no leader yet",
        "  the worker asked to retry after 2 s: run the command again",
    ]
    servicer.error, servicer.plain_abort = None, grpc.StatusCode.UNAVAILABLE
    with pytest.raises(UnavailableError) as transport:
        client.get_connector("c")
    assert failure_of(transport.value).lines() == ["Error: UNAVAILABLE: plain"]
