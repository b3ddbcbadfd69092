"""Forwarding of writes to the leader (issue 8, item 4), over real gRPC channels between
in-process servers on 127.0.0.1: success through a follower, the leader's errors unchanged,
one hop only, retries while the leader moves, UNAVAILABLE once the deadline runs out, and
the caller's deadline carried to the leader. No Kafka: each "herder" is a fake that either
answers or raises NotLeaderError."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import cast

import grpc
import pytest
from google.rpc import error_details_pb2, status_pb2
from grpc_status import rpc_status

from connect_grpc.api.errors import mapped
from connect_grpc.api.forward_retry import LEADER_UNAVAILABLE, Backoff, LeaderUnavailableError
from connect_grpc.api.forwarding import FORWARDED_BY, Forwarder, forwardable, forwarded_by
from connect_grpc.api.idempotency import RequestLog
from connect_grpc.api.leader_relay import LeaderWritesRelay
from connect_grpc.api.servicer import ConnectServicer
from connect_grpc.herder.interface import Herder
from connect_grpc.kafka.ports import free_port
from connect_grpc.kernel import deadline
from connect_grpc.kernel.errors import (
    InvalidArgumentError,
    NotFoundError,
    NotLeaderError,
    StorageError,
    UnavailableError,
)
from connect_grpc.v1 import connect_pb2 as pb
from connect_grpc.v1 import connect_pb2_grpc as pb_grpc
from tests.unit.grpc_stubs import start_server

pytestmark = pytest.mark.timeout(30)

CREATE = "/connect.v1.ConnectService/CreateConnector"
FAST = Backoff(initial_s=0.01, max_s=0.05)

Handler = Callable[[pb.CreateConnectorRequest], pb.CreateConnectorResponse]


@dataclass
class Seen:
    """One call a node received: who forwarded it (None: a client) and its time left."""

    forwarded_by: str | None
    time_remaining: float | None


@dataclass
class Node:
    """One worker: a gRPC server whose CreateConnector goes through ``forwardable``."""

    worker_id: str
    handle: Handler
    lookup: Callable[[], tuple[str, str] | None] = lambda: None
    seen: list[Seen] = field(default_factory=list)
    applied: int = 0
    address: str = ""
    forwarder: Forwarder | None = None
    #: Whether this node leads now (only asked by a node started with the relay).
    leading: bool = False

    def leads(self, request: pb.CreateConnectorRequest) -> pb.CreateConnectorResponse:
        self.applied += 1
        return pb.CreateConnectorResponse(
            connector=pb.ConnectorInfo(name=request.name), offsets_message=self.worker_id
        )


class Servicer(pb_grpc.ConnectServiceServicer):  # type: ignore[misc]  # generated, untyped
    """The servicer shape the lead wires: ``@mapped`` over ``@forwardable``, a request log,
    and a ``forwarder`` attribute."""

    def __init__(self, node: Node) -> None:
        self._node = node
        self._requests = RequestLog()
        self.forwarder = node.forwarder

    @mapped
    @forwardable(pb.CreateConnectorResponse)
    def CreateConnector(
        self, request: pb.CreateConnectorRequest, context: grpc.ServicerContext
    ) -> pb.CreateConnectorResponse:
        self._node.seen.append(Seen(forwarded_by(context), context.time_remaining()))
        return self._requests.run(
            "CreateConnector",
            request,
            pb.CreateConnectorResponse,
            lambda: self._node.handle(request),
            lambda response: response,
        )


def not_leader(leader: Node | None = None, address: str = "") -> Handler:
    """A follower's herder: names ``leader`` (or ``address``) as the leader."""

    def handle(request: pb.CreateConnectorRequest) -> pb.CreateConnectorResponse:
        raise NotLeaderError(
            "not the leader",
            leader_id=leader.worker_id if leader else "",
            leader_address=leader.address if leader else address,
        )

    return handle


def raising(error: Exception) -> Handler:
    def handle(request: pb.CreateConnectorRequest) -> pb.CreateConnectorResponse:
        raise error

    return handle


class Cluster:
    """Starts nodes on free ports; stops them and closes their forwarders at the end."""

    def __init__(self) -> None:
        self._servers: list[grpc.Server] = []
        self._channels: list[grpc.Channel] = []
        self._forwarders: list[Forwarder] = []

    def node(self, worker_id: str, *, relay: bool = False) -> Node:
        """A node; with ``relay``, wired as a distributed worker is: the leader's writes go
        through :class:`LeaderWritesRelay` while ``node.leading`` is False."""
        node = Node(worker_id, handle=lambda request: node.leads(request))
        node.forwarder = Forwarder(
            worker_id, lambda: node.lookup(), backoff=FAST, serves_itself=lambda: node.leading
        )
        self._forwarders.append(node.forwarder)
        interceptors = [LeaderWritesRelay(node.forwarder, lambda: node.leading)] if relay else []
        server, node.address = start_server(
            Servicer(node), max_workers=8, interceptors=interceptors
        )
        self._servers.append(server)
        return node

    def client(self, node: Node) -> pb_grpc.ConnectServiceStub:
        channel = grpc.insecure_channel(node.address)
        self._channels.append(channel)
        return pb_grpc.ConnectServiceStub(channel)

    def close(self) -> None:
        for forwarder in self._forwarders:
            forwarder.close()
        for channel in self._channels:
            channel.close()
        for server in self._servers:
            server.stop(0).wait()


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    result = Cluster()
    yield result
    result.close()


def create(
    stub: pb_grpc.ConnectServiceStub,
    timeout: float = 5.0,
    request_id: str = "",
    metadata: tuple[tuple[str, str], ...] = (),
) -> pb.CreateConnectorResponse:
    request = pb.CreateConnectorRequest(name="c", config={"a": "1"}, request_id=request_id)
    response: pb.CreateConnectorResponse = stub.CreateConnector(
        request, timeout=timeout, metadata=metadata
    )
    return response


def failure(call: Callable[[], object]) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as caught:
        call()
    return caught.value


def rich_status(error: grpc.RpcError) -> status_pb2.Status:
    call: grpc.Call = error  # type: ignore[assignment]  # a unary call's error is its Call
    status = rpc_status.from_call(call)
    assert status is not None, "no google.rpc status in the answer"
    return status


def detail(status: status_pb2.Status, kind: type[object]) -> object | None:
    for packed in status.details:
        message = kind()
        if packed.Unpack(message):
            return message
    return None


def reason(error: grpc.RpcError) -> str:
    info = detail(rich_status(error), error_details_pb2.ErrorInfo)
    assert isinstance(info, error_details_pb2.ErrorInfo)
    return str(info.reason)


def hops(*nodes: Node) -> set[str | None]:
    """Every forwarder id seen by ``nodes``."""
    return {seen.forwarded_by for node in nodes for seen in node.seen}


def test_a_follower_answers_with_the_leaders_response(cluster: Cluster) -> None:
    follower, leader = cluster.node("a"), cluster.node("b")
    follower.handle = not_leader(leader)

    response = create(cluster.client(follower))

    assert response.connector.name == "c" and response.offsets_message == "b"
    assert [seen.forwarded_by for seen in follower.seen] == [None]
    assert [seen.forwarded_by for seen in leader.seen] == ["a"]
    assert leader.applied == 1


def test_the_leaders_invalid_argument_reaches_the_caller_unchanged(cluster: Cluster) -> None:
    follower, leader = cluster.node("a"), cluster.node("b")
    follower.handle = not_leader(leader)
    leader.handle = raising(InvalidArgumentError.for_field("config.x", "must be a number"))

    forwarded = failure(lambda: create(cluster.client(follower)))
    direct = failure(lambda: create(cluster.client(leader)))

    assert forwarded.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert forwarded.details() == direct.details() == "config.x: must be a number"
    assert rich_status(forwarded) == rich_status(direct)
    bad_request = detail(rich_status(forwarded), error_details_pb2.BadRequest)
    assert isinstance(bad_request, error_details_pb2.BadRequest)
    assert [v.field for v in bad_request.field_violations] == ["config.x"]


@pytest.mark.parametrize(
    ("error", "code", "expected_reason"),
    [
        (NotFoundError("connector 'c' not found"), grpc.StatusCode.NOT_FOUND, "NOT_FOUND"),
        (StorageError("offsets file not writable"), grpc.StatusCode.UNAVAILABLE,
         "STORAGE_UNAVAILABLE"),
    ],
    ids=["not-found", "unavailable-with-a-reason"],
)
def test_other_errors_of_the_leader_are_final(
    cluster: Cluster, error: Exception, code: grpc.StatusCode, expected_reason: str
) -> None:
    follower, leader = cluster.node("a"), cluster.node("b")
    follower.handle = not_leader(leader)
    follower.lookup = lambda: ("b", leader.address)
    leader.handle = raising(error)

    answer = failure(lambda: create(cluster.client(follower)))

    assert answer.code() == code and reason(answer) == expected_reason
    assert len(leader.seen) == 1, "a final answer is not retried"


def test_a_forwarded_call_that_meets_a_non_leader_is_not_forwarded_again(
    cluster: Cluster,
) -> None:
    follower, stale, leader = cluster.node("a"), cluster.node("b"), cluster.node("c")
    follower.handle = not_leader(stale)
    stale.handle = not_leader(leader)
    lookups = iter([("b", stale.address), ("b", stale.address)])
    follower.lookup = lambda: next(lookups, ("c", leader.address))

    response = create(cluster.client(follower))

    assert response.offsets_message == "c"
    assert len(stale.seen) == 3, "b was asked on the first try and on both stale lookups"
    assert hops(stale, leader) == {"a"}, "only the first worker forwards"
    assert leader.applied == 1


def test_a_direct_call_carrying_the_mark_is_answered_not_leader(cluster: Cluster) -> None:
    stale, leader = cluster.node("b"), cluster.node("c")
    stale.handle = not_leader(leader)

    answer = failure(lambda: create(cluster.client(stale), metadata=((FORWARDED_BY, "x"),)))

    assert answer.code() == grpc.StatusCode.UNAVAILABLE and reason(answer) == "NOT_LEADER"
    assert detail(rich_status(answer), error_details_pb2.RetryInfo) is not None
    assert leader.seen == []


def test_a_target_that_stays_not_leader_ends_in_unavailable(cluster: Cluster) -> None:
    follower, stale = cluster.node("a"), cluster.node("b")
    follower.handle = not_leader(stale)
    stale.handle = not_leader(address=follower.address)
    follower.lookup = lambda: ("b", stale.address)

    answer = failure(lambda: create(cluster.client(follower), timeout=1.0))

    assert answer.code() == grpc.StatusCode.UNAVAILABLE
    assert reason(answer) == LEADER_UNAVAILABLE, "the caller never sees NOT_LEADER"
    assert len(stale.seen) > 1 and hops(stale) == {"a"}
    assert len(follower.seen) == 1, "b never forwarded back to a"


def test_an_unknown_leader_ends_in_unavailable_with_retry_info_within_the_deadline(
    cluster: Cluster,
) -> None:
    follower = cluster.node("a")
    follower.handle = not_leader()
    client_deadline = 1.0

    started = time.monotonic()
    answer = failure(lambda: create(cluster.client(follower), timeout=client_deadline))
    took = time.monotonic() - started

    assert answer.code() == grpc.StatusCode.UNAVAILABLE
    assert reason(answer) == LEADER_UNAVAILABLE
    assert detail(rich_status(answer), error_details_pb2.RetryInfo) is not None
    assert client_deadline - deadline.ANSWER_MARGIN_S - 0.1 <= took <= client_deadline + 0.5


def test_a_worker_that_names_itself_leader_never_forwards_to_itself(cluster: Cluster) -> None:
    lonely = cluster.node("a")
    lonely.handle = not_leader()  # it lost its writer, while its group view still names it
    lonely.lookup = lambda: ("a", lonely.address)

    answer = failure(lambda: create(cluster.client(lonely), timeout=1.0))

    assert answer.code() == grpc.StatusCode.UNAVAILABLE
    assert "no leader known" in str(answer.details())
    assert len(lonely.seen) == 1, "the refused write came back to the worker that refused it"


def test_a_dead_target_is_retried_with_the_next_leader(cluster: Cluster) -> None:
    follower, leader = cluster.node("a"), cluster.node("b")
    follower.handle = not_leader(address=f"127.0.0.1:{free_port()}")  # nothing listens
    follower.lookup = lambda: ("b", leader.address)

    assert create(cluster.client(follower)).offsets_message == "b"
    assert hops(leader) == {"a"}


def test_a_leader_appearing_later_takes_the_call(cluster: Cluster) -> None:
    follower, leader = cluster.node("a"), cluster.node("b")
    follower.handle = not_leader()
    known_after = time.monotonic() + 0.2
    follower.lookup = lambda: ("b", leader.address) if time.monotonic() > known_after else None

    assert create(cluster.client(follower)).offsets_message == "b"


GRPC_CLOCK_SLACK_S = 0.05


def test_the_callers_deadline_reaches_the_leader(cluster: Cluster) -> None:
    follower, leader = cluster.node("a"), cluster.node("b")
    follower.handle = not_leader(leader)
    client_deadline = 3.0

    create(cluster.client(follower), timeout=client_deadline)

    remaining = leader.seen[0].time_remaining
    assert remaining is not None
    # gRPC reads the time from a clock it caches per poll, which lags on a loaded machine:
    # allow it GRPC_CLOCK_SLACK_S, far less than the margin the follower keeps
    assert 1.0 < remaining <= client_deadline - deadline.ANSWER_MARGIN_S + GRPC_CLOCK_SLACK_S


def test_request_ids_are_applied_by_the_leader_once(cluster: Cluster) -> None:
    follower, leader = cluster.node("a"), cluster.node("b")
    follower.handle = not_leader(leader)
    client = cluster.client(follower)

    first = create(client, request_id="r1")
    again = create(client, request_id="r1")

    assert first == again and leader.applied == 1
    assert len(follower.seen) == 2, "the follower remembered nothing, so it forwarded twice"


def test_channels_are_opened_once_per_address_and_closed_once(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    leader = cluster.node("b")
    opened: list[grpc.Channel] = []
    real = grpc.insecure_channel

    def counting(target: str, options: object = None) -> grpc.Channel:
        opened.append(real(target, options=options))  # type: ignore[arg-type]
        return opened[-1]

    monkeypatch.setattr(grpc, "insecure_channel", counting)
    forwarder = Forwarder("a", lambda: None, backoff=FAST)
    error = NotLeaderError("not the leader", leader_id="b", leader_address=leader.address)
    request = pb.CreateConnectorRequest(name="c")

    for _ in range(3):
        forwarder.forward(CREATE, request, pb.CreateConnectorResponse, error)
    forwarder.close()
    forwarder.close()

    assert len(opened) == 1 and len(leader.seen) == 3
    with deadline.scope(0.4), pytest.raises(LeaderUnavailableError):
        forwarder.forward(CREATE, request, pb.CreateConnectorResponse, error)
    assert len(opened) == 1, "a closed forwarder opens nothing"


def test_concurrent_forwards_all_reach_the_leader(cluster: Cluster) -> None:
    follower, leader = cluster.node("a"), cluster.node("b")
    follower.handle = not_leader(leader)
    client = cluster.client(follower)
    answers: list[str] = []

    threads = [
        threading.Thread(target=lambda: answers.append(create(client).offsets_message))
        for _ in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert answers == ["b"] * 8 and leader.applied == 8


# ---- a follower relays the leader's writes unparsed ---------------------------------------


def relaying_follower(cluster: Cluster, leader: Node) -> Node:
    """A follower that knows ``leader``; its own servicer must not be reached."""
    follower = cluster.node("a", relay=True)
    follower.handle = raising(AssertionError("the follower's servicer ran"))
    follower.lookup = lambda: (leader.worker_id, leader.address)
    return follower


def test_a_relaying_follower_answers_with_the_leaders_response(cluster: Cluster) -> None:
    leader = cluster.node("b")
    follower = relaying_follower(cluster, leader)

    response = create(cluster.client(follower), request_id="r1")

    assert response.connector.name == "c" and response.offsets_message == "b"
    assert follower.seen == [], "the follower parsed nothing and ran nothing"
    assert hops(leader) == {"a"} and leader.applied == 1


def test_a_relayed_error_is_the_one_the_leader_answers_directly(cluster: Cluster) -> None:
    leader = cluster.node("b")
    leader.handle = raising(InvalidArgumentError.for_field("config.x", "must be a number"))
    follower = relaying_follower(cluster, leader)

    relayed = failure(lambda: create(cluster.client(follower)))
    direct = failure(lambda: create(cluster.client(leader)))

    assert relayed.code() == direct.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert relayed.details() == direct.details()
    assert rich_status(relayed) == rich_status(direct)


def test_a_relay_carries_the_callers_deadline_and_retries_a_moving_leader(
    cluster: Cluster,
) -> None:
    stale, leader = cluster.node("s"), cluster.node("b")
    stale.handle = not_leader(leader)
    follower = relaying_follower(cluster, stale)
    lookups = iter([("s", stale.address)])
    follower.lookup = lambda: next(lookups, ("b", leader.address))

    assert create(cluster.client(follower), timeout=3.0).offsets_message == "b"

    assert hops(stale, leader) == {"a"}, "the stale target did not forward it again"
    remaining = leader.seen[0].time_remaining
    assert remaining is not None and 1.0 < remaining <= 3.0 - deadline.ANSWER_MARGIN_S


def test_a_relay_with_no_leader_ends_in_unavailable_with_retry_info(cluster: Cluster) -> None:
    follower = cluster.node("a", relay=True)

    answer = failure(lambda: create(cluster.client(follower), timeout=0.8))

    assert answer.code() == grpc.StatusCode.UNAVAILABLE
    assert reason(answer) == LEADER_UNAVAILABLE
    assert detail(rich_status(answer), error_details_pb2.RetryInfo) is not None
    assert follower.seen == []


def elected_after(node: Node, seconds: float) -> threading.Timer:
    """Makes ``node`` the leader in ``seconds`` (as a worker that takes office meanwhile)."""

    def elect() -> None:
        node.leading = True

    timer = threading.Timer(seconds, elect)
    timer.start()
    return timer


def test_a_relayed_write_waiting_for_a_leader_is_served_by_its_worker_once_it_leads(
    cluster: Cluster,
) -> None:
    # a worker just elected names itself leader before it can write: the write waits for
    # it to take office, not for the caller's deadline
    node = cluster.node("a", relay=True)
    node.lookup = lambda: ("a", node.address)
    timer = elected_after(node, 0.3)

    response = create(cluster.client(node), timeout=20.0, request_id="r1")
    timer.join()

    assert response.offsets_message == "a" and node.applied == 1
    assert [seen.forwarded_by for seen in node.seen] == [None]


def test_a_forwarded_write_waiting_for_a_leader_is_served_here_once_this_worker_leads(
    cluster: Cluster,
) -> None:
    # the servicer's path (@forwardable): the herder refused, no other leader is known,
    # and this worker takes office while the call waits
    node = cluster.node("a")
    node.handle = lambda request: (
        node.leads(request) if node.leading else not_leader()(request)
    )
    timer = elected_after(node, 0.3)

    response = create(cluster.client(node), timeout=20.0)
    timer.join()

    assert response.offsets_message == "a" and node.applied == 1
    assert len(node.seen) == 2, "refused once, then served by the same worker"


def test_the_leader_and_forwarded_calls_are_answered_by_the_servicer(cluster: Cluster) -> None:
    leader = cluster.node("b")
    follower = cluster.node("a", relay=True)
    follower.handle = not_leader(leader)
    follower.lookup = lambda: ("b", leader.address)

    marked = failure(lambda: create(cluster.client(follower), metadata=((FORWARDED_BY, "x"),)))
    follower.leading = True
    follower.handle = lambda request: follower.leads(request)
    leading = create(cluster.client(follower))

    assert marked.code() == grpc.StatusCode.UNAVAILABLE and reason(marked) == "NOT_LEADER"
    assert leading.offsets_message == "a"
    assert [seen.forwarded_by for seen in follower.seen] == ["x", None]
    assert leader.seen == []


@dataclass
class _Details:
    """What gRPC tells an interceptor of a call."""

    method: str
    invocation_metadata: tuple[tuple[str, str], ...] = ()


def test_only_the_leaders_writes_are_relayed() -> None:
    relay = LeaderWritesRelay(Forwarder("a", lambda: None), lambda: False)

    def relayed(name: str) -> bool:
        details = _Details(f"/connect.v1.ConnectService/{name}")
        return relay.intercept_service(lambda _: None, details) is not None

    writes = ["CreateConnector", "PutConnectorConfig", "PatchConnectorConfig", "DeleteConnector",
              "PauseConnector", "ResumeConnector", "StopConnector", "AlterOffsets", "ResetOffsets"]
    others = ["RestartConnector", "RestartTask", "GetConnectorConfig", "GetOffsets",
              "ListConnectors", "WatchConnectorStatus", "ValidateConfig"]
    assert [name for name in writes if not relayed(name)] == []
    assert [name for name in others if relayed(name)] == []


def test_a_relayed_method_has_one_handler_built_on_its_first_call() -> None:
    relay = LeaderWritesRelay(Forwarder("a", lambda: None), lambda: False)
    asked: list[str] = []

    def servicer_handler(details: _Details) -> str:
        asked.append(details.method)
        return "the servicer's handler"

    pause = _Details("/connect.v1.ConnectService/PauseConnector")
    handlers = {id(relay.intercept_service(servicer_handler, pause)) for _ in range(3)}
    assert len(handlers) == 1
    # the servicer's handler is looked up once, for a call this worker ends up serving
    assert asked == [pause.method]
    forwarded = _Details(pause.method, ((FORWARDED_BY, "b"),))
    assert relay.intercept_service(servicer_handler, forwarded) == "the servicer's handler"


# ---- the project's own ConnectServicer -----------------------------------------------------


class _PauseHerder:
    """The one herder call these tests make: the leader records it, a follower refuses."""

    def __init__(self, leader_address: str | None = None) -> None:
        self.leader_address = leader_address
        self.paused: list[str] = []

    def pause_connector(self, name: str, etag: str = "") -> str:
        if self.leader_address is not None:
            raise NotLeaderError(
                "not the leader", leader_id="l", leader_address=self.leader_address
            )
        self.paused.append(name)
        return "etag-after-pause"


def _serve(servicer: ConnectServicer) -> tuple[grpc.Server, str]:
    return start_server(servicer, max_workers=4)


def test_the_servicers_writes_are_forwarded_to_the_leader_by_name() -> None:
    leader_herder = _PauseHerder()
    leader, leader_address = _serve(ConnectServicer(cast(Herder, leader_herder)))
    forwarder = Forwarder("f", lambda: ("l", leader_address), backoff=FAST)
    follower_herder = _PauseHerder(leader_address)
    follower, follower_address = _serve(
        ConnectServicer(cast(Herder, follower_herder), forwarder=forwarder)
    )
    try:
        with grpc.insecure_channel(follower_address) as channel:
            pb_grpc.ConnectServiceStub(channel).PauseConnector(
                pb.PauseConnectorRequest(name="  c1 "), timeout=5
            )
        assert leader_herder.paused == ["c1"]  # normalised once, on the follower and leader
        assert follower_herder.paused == []
    finally:
        forwarder.close()
        follower.stop(0).wait()
        leader.stop(0).wait()


def test_a_servicer_without_forwarder_answers_not_leader() -> None:
    server, address = _serve(ConnectServicer(cast(Herder, _PauseHerder("127.0.0.1:1"))))
    try:
        with grpc.insecure_channel(address) as channel:
            error = failure(lambda: pb_grpc.ConnectServiceStub(channel).PauseConnector(
                pb.PauseConnectorRequest(name="c1"), timeout=5))
        assert error.code() == grpc.StatusCode.UNAVAILABLE
        assert reason(error) == "NOT_LEADER"
    finally:
        server.stop(0).wait()


# ---- read-your-writes on the worker that forwarded -----------------------------------------


class _View:
    """A worker's view of the config topic: records applied up to ``position``, the herder's
    listener told of them up to ``told`` (``position`` unless given); ``catch_up`` says
    whether a wait for a later position ends with the view there (True) or times out
    (False). ``waits`` lists the waits that had to block."""

    def __init__(self, position: int, catch_up: bool = True, told: int | None = None) -> None:
        self.position = position
        self.told = position if told is None else told
        self.catch_up = catch_up
        self.waits: list[int] = []

    def config_position(self) -> int:
        return self.position

    def wait_for_config_position(self, position: int, timeout: float) -> None:
        if position <= self.told:
            return
        self.waits.append(position)
        if not self.catch_up:
            raise UnavailableError(f"not read in {timeout}s")
        self.position = max(self.position, position)
        self.told = max(self.told, position)


class _ConfigHerder(_PauseHerder):
    def connector_config(self, name: str) -> dict[str, str]:
        return {"name": name}


def _leader_and_follower(
    leader_view: _View, follower_view: _View
) -> tuple[list[grpc.Server], list[Forwarder], str]:
    """A leader servicer at ``leader_view`` and a follower servicer at ``follower_view``;
    the follower's address."""
    leader_forwarder = Forwarder("l", lambda: None, backoff=FAST, view=leader_view)
    leader, leader_address = _serve(
        ConnectServicer(cast(Herder, _ConfigHerder()), forwarder=leader_forwarder)
    )
    forwarder = Forwarder("f", lambda: ("l", leader_address), backoff=FAST, view=follower_view)
    follower, follower_address = _serve(
        ConnectServicer(cast(Herder, _ConfigHerder(leader_address)), forwarder=forwarder)
    )
    return [follower, leader], [forwarder, leader_forwarder], follower_address


def test_a_forwarded_write_is_answered_at_once_and_the_next_read_waits_for_it() -> None:
    follower_view = _View(position=3)
    servers, forwarders, address = _leader_and_follower(_View(position=7), follower_view)
    try:
        with grpc.insecure_channel(address) as channel:
            stub = pb_grpc.ConnectServiceStub(channel)
            stub.PauseConnector(pb.PauseConnectorRequest(name="c1"), timeout=5)
            assert follower_view.waits == []  # the write did not wait for the tail
            stub.GetConnectorConfig(pb.GetConnectorConfigRequest(name="c1"), timeout=5)
            assert follower_view.waits == [7]  # the read did, up to the leader's position
            stub.GetConnectorConfig(pb.GetConnectorConfigRequest(name="c1"), timeout=5)
            assert follower_view.waits == [7]  # caught up: no second wait
    finally:
        for forwarder in forwarders:
            forwarder.close()
        for server in servers:
            server.stop(0).wait()


def test_a_read_waits_until_the_listener_acted_on_a_write_already_applied() -> None:
    """The follower applied the leader's record (a cluster log level, say) but its herder
    has not acted on it yet: the next read waits for that too, not only for the record."""
    follower_view = _View(position=7, told=3)
    servers, forwarders, address = _leader_and_follower(_View(position=7), follower_view)
    try:
        with grpc.insecure_channel(address) as channel:
            stub = pb_grpc.ConnectServiceStub(channel)
            stub.PauseConnector(pb.PauseConnectorRequest(name="c1"), timeout=5)
            stub.GetConnectorConfig(pb.GetConnectorConfigRequest(name="c1"), timeout=5)
            assert follower_view.waits == [7]
    finally:
        for forwarder in forwarders:
            forwarder.close()
        for server in servers:
            server.stop(0).wait()


def test_a_read_whose_worker_cannot_catch_up_is_unavailable_with_a_retry_delay() -> None:
    follower_view = _View(position=3, catch_up=False)
    servers, forwarders, address = _leader_and_follower(_View(position=7), follower_view)
    try:
        with grpc.insecure_channel(address) as channel:
            stub = pb_grpc.ConnectServiceStub(channel)
            stub.PauseConnector(pb.PauseConnectorRequest(name="c1"), timeout=5)
            error = failure(
                lambda: stub.GetConnectorConfig(pb.GetConnectorConfigRequest(name="c1"), timeout=5)
            )
        assert error.code() == grpc.StatusCode.UNAVAILABLE
        assert "position 7" in (error.details() or "")
        assert detail(rich_status(error), error_details_pb2.RetryInfo) is not None
    finally:
        for forwarder in forwarders:
            forwarder.close()
        for server in servers:
            server.stop(0).wait()
