"""An unconditional pause or resume written by the worker that takes the call (decision 0100),
without a broker: the follower's write over a real KafkaConfigStore whose log applies each
record as it is sent (or holds records back, as a tail that lags), what every reader makes of
such a record, which calls a follower writes itself and which still go to the leader (the
herder's choice and the gRPC relay's)."""

from __future__ import annotations

import threading
from typing import Any, cast

import grpc
import pytest
import structlog

from connect_grpc.api.forwarding import Forwarder
from connect_grpc.api.leader_relay import LeaderWritesRelay
from connect_grpc.api.servicer import ConnectServicer
from connect_grpc.cluster.extension_records import LEADER_KEY, LeaderRecord
from connect_grpc.herder import follower_writes
from connect_grpc.herder.distributed_etags import ClusterEtags
from connect_grpc.herder.distributed_mutations import DistributedMutations
from connect_grpc.herder.distributed_view import ClusterView
from connect_grpc.herder.etags import connector_etag
from connect_grpc.herder.interface import Herder
from connect_grpc.herder.leader_writer import LeaderWriter
from connect_grpc.herder.locks import ConnectorLocks
from connect_grpc.kernel import request_answer
from connect_grpc.kernel.domain import TargetState
from connect_grpc.kernel.errors import NotFoundError, NotLeaderError, UnavailableError
from connect_grpc.storage.config_codec import (
    CARRIED_HEADER,
    TERM_HEADER,
    connector_config_records,
    extension_record,
    removal_records,
    target_state_records,
    term_marker_record,
)
from connect_grpc.storage.kafka_config import KafkaConfigStore
from connect_grpc.storage.log_records import LogRecord
from connect_grpc.v1 import connect_pb2 as pb
from connect_grpc.v1 import connect_pb2_grpc as pb_grpc
from tests.unit.config_log_fakes import AppliedLog, applied_store
from tests.unit.grpc_stubs import start_server

CONFIG = {"connector.class": "SequenceSource", "k": "v"}


class _Election:
    def __init__(self, leader: bool = False) -> None:
        self.leader = leader

    def is_leader(self) -> bool:
        return self.leader

    def leadership(self) -> Any:
        return cast(Any, None)


class _Follower:
    """A worker that does not lead, over its own view of the config log: the leader, "l",
    is named in it (``leader_authenticates``: what its record says), and a STARTED
    connector "c" exists. Neither authenticates callers unless told."""

    def __init__(
        self,
        kafka_away: bool = False,
        authenticates: bool = False,
        leader_authenticates: bool | None = False,
    ) -> None:
        self.store, self.log = applied_store()
        self.view = ClusterView(self.store, cast(Any, None))

        def refuse() -> None:
            if kafka_away:
                raise UnavailableError("Kafka is unreachable", 1.0)

        self.writer = LeaderWriter(
            self.view, cast(Any, _Election()), threading.Event(), structlog.get_logger(),
            client={}, cluster=cast(Any, None), worker_id="f",
            refuse_while_kafka_unreachable=refuse,
        )
        self.writes = follower_writes.FollowerWrites(
            self.view, self.writer, structlog.get_logger(), authenticates=authenticates
        )
        leader = LeaderRecord("l", "127.0.0.1:1", 2, leader_authenticates)
        self.log.send_all([term_marker_record(2), extension_record(LEADER_KEY, leader.to_json())])
        self.log.send_all(connector_config_records("c", CONFIG, TargetState.STARTED))

    def other_worker_writes(self, records: list[Any]) -> None:
        """Records another worker wrote, which this worker's tail has not read yet."""
        self.log.holding = True
        self.log.send_all(records)

    def etag(self, state: TargetState, config: dict[str, str] | None = None) -> str:
        return connector_etag("c", config or CONFIG, state, "0")


def _records(log: AppliedLog, since: int) -> list[LogRecord]:
    return log.records[since:]


def test_a_followers_pause_is_one_target_state_record_without_term_or_answer() -> None:
    follower = _Follower()
    before = len(follower.log.records)

    etag = follower.writes.target_state("c", TargetState.PAUSED)

    [record] = _records(follower.log, before)
    assert record.key == b"target-state-c"
    assert record.header(TERM_HEADER) is None and record.header(CARRIED_HEADER) is None
    assert follower.view.snapshot().target_state("c") is TargetState.PAUSED
    assert etag == follower.etag(TargetState.PAUSED)


def test_a_write_right_after_the_view_is_answered_without_reading_it_back() -> None:
    follower = _Follower()
    follower.log.holding = True  # the tail lags the acknowledgement

    follower.writes.target_state("c", TargetState.PAUSED)

    assert follower.log.read_backs == 0
    end = len(follower.log.records)
    assert follower.store.position() < end == follower.view.owed_position
    tail = threading.Timer(0.2, follower.log.catch_up)
    tail.start()
    # this worker's reads wait for its own write (read-your-writes)
    assert follower.view.snapshot().target_state("c") is TargetState.PAUSED
    tail.join()


def test_a_config_the_view_had_not_read_is_in_the_etag_answered() -> None:
    """A put through the leader, then a pause through a follower that has not read it: the
    pause lands after the config; the follower reads its write back and answers the etag of
    the connector as it is after it (a chained conditional call then succeeds)."""
    follower = _Follower()
    new_config = {**CONFIG, "k": "new"}
    follower.other_worker_writes(connector_config_records("c", new_config))

    etag = follower.writes.target_state("c", TargetState.PAUSED)

    assert follower.log.read_backs == 1
    assert etag == follower.etag(TargetState.PAUSED, new_config)


def test_a_record_after_the_connectors_deletion_is_not_found() -> None:
    follower = _Follower()
    follower.other_worker_writes(removal_records("c", 0))

    with pytest.raises(NotFoundError):
        follower.writes.target_state("c", TargetState.PAUSED)

    snapshot = follower.view.snapshot()
    assert not snapshot.contains("c")
    # the state of no connector: a create of the name writes its own target state first
    assert snapshot.target_state("c") is TargetState.PAUSED


def test_a_connector_this_view_lacks_goes_to_the_leader() -> None:
    follower = _Follower()
    before = len(follower.log.records)

    with pytest.raises(NotLeaderError) as raised:
        follower.writes.target_state("new", TargetState.PAUSED)

    assert raised.value.leader_address == "127.0.0.1:1"
    assert _records(follower.log, before) == []


@pytest.mark.parametrize(
    ("authenticates", "leader_authenticates"), [(True, False), (False, True), (False, None)]
)
def test_where_a_worker_authenticates_callers_the_leaders_roles_judge_the_call(
    authenticates: bool, leader_authenticates: bool | None
) -> None:
    """A follower with laxer roles than the leader's cannot lend its callers a pause: the
    call goes to the leader as every write does (a leader's record that does not say is
    taken to authenticate)."""
    follower = _Follower(authenticates=authenticates, leader_authenticates=leader_authenticates)
    before = len(follower.log.records)
    with pytest.raises(NotLeaderError):
        follower.writes.target_state("c", TargetState.PAUSED)
    assert _records(follower.log, before) == []


def test_nothing_is_written_while_kafka_is_unreachable() -> None:
    follower = _Follower(kafka_away=True)
    before = len(follower.log.records)
    with pytest.raises(UnavailableError):
        follower.writes.target_state("c", TargetState.PAUSED)
    assert _records(follower.log, before) == []


def test_every_reader_applies_it_after_a_later_leaders_marker() -> None:
    """Unstamped, as Kafka Connect's own records: no term ends it (a stamped record of an
    earlier term after that marker is refused)."""
    follower = _Follower()
    follower.log.send_all([term_marker_record(9)])

    follower.writes.target_state("c", TargetState.PAUSED)

    reader, log = applied_store()
    for record in follower.log.records:
        log.send_all([(record.key or b"", record.value)], headers=record.headers)
    assert reader.snapshot().target_state("c") is TargetState.PAUSED


def test_orphaned_names_only_a_target_state_read_without_its_connector() -> None:
    store, log = applied_store()
    created = log.send_all(connector_config_records("c", CONFIG, TargetState.PAUSED))
    assert not store.orphaned(created[1:])  # the create's own config is what follows
    paused = log.send_all(target_state_records("c", TargetState.PAUSED))
    log.send_all(removal_records("c", 0))
    late = log.send_all(target_state_records("c", TargetState.STARTED))
    assert not store.orphaned(paused)
    assert store.orphaned(late)


@pytest.mark.parametrize(
    ("view_offset", "offsets", "right_after"),
    [(10, (10,), True), (10, (11,), False), (10, (10, 12), False), (-1, (0,), False)],
)
def test_landed_right_after(view_offset: int, offsets: tuple[int, ...], right_after: bool) -> None:
    written = [LogRecord(b"k", b"v", 0, offset) for offset in offsets]
    assert follower_writes.landed_right_after(view_offset, written) is right_after


# ------------------------------------------------------------------- who writes which call


def _mutations(follower: _Follower) -> DistributedMutations:
    unused = cast(Any, None)
    return DistributedMutations(
        follower.view, follower.writer, ClusterEtags(follower.view, follower.writer), unused,
        ConnectorLocks(), config=unused, validator=unused, offset_manager=unused,
        reconciler=unused, board=unused, normalised=unused, validated_for_create=unused,
        worker_id="f", log=structlog.get_logger(), follower_writes=follower.writes,
    )


def test_a_follower_writes_an_unconditional_pause_and_resume_itself() -> None:
    follower = _Follower()
    mutations = _mutations(follower)

    mutations.pause_connector("c")
    assert follower.view.snapshot().target_state("c") is TargetState.PAUSED
    mutations.resume_connector("c")
    assert follower.view.snapshot().target_state("c") is TargetState.STARTED


def test_a_conditional_pause_and_one_with_a_request_id_go_to_the_leader() -> None:
    follower = _Follower()
    mutations = _mutations(follower)
    before = len(follower.log.records)

    with pytest.raises(NotLeaderError):
        mutations.pause_connector("c", etag=follower.etag(TargetState.STARTED))
    pending = request_answer.PendingAnswer("r-1", b"fingerprint", 1.0, lambda _: b"answer")
    with request_answer.scope(pending), pytest.raises(NotLeaderError):
        mutations.resume_connector("c")
    with pytest.raises(NotLeaderError):
        mutations.stop_connector("c")

    assert _records(follower.log, before) == []


# ------------------------------------------------------------------------ the gRPC relay


class _Herder:
    """A follower's herder: writes an unconditional pause or resume, refuses the rest."""

    def __init__(self) -> None:
        self.written: list[str] = []

    def pause_connector(self, name: str, etag: str = "") -> str:
        return self._write("paused", name, etag)

    def resume_connector(self, name: str, etag: str = "") -> str:
        return self._write("resumed", name, etag)

    def _write(self, what: str, name: str, etag: str) -> str:
        if etag:
            raise NotLeaderError("not the leader")
        self.written.append(f"{what} {name}")
        return "follower-etag"


class _Leader(pb_grpc.ConnectServiceServicer):  # type: ignore[misc]  # generated, untyped
    def __init__(self) -> None:
        self.seen: list[str] = []

    def PauseConnector(self, request: Any, context: Any) -> pb.PauseConnectorResponse:
        self.seen.append(f"pause {request.name} {request.etag} {request.request_id}")
        return pb.PauseConnectorResponse(etag="leader-etag")

    def ResumeConnector(self, request: Any, context: Any) -> pb.ResumeConnectorResponse:
        self.seen.append(f"resume {request.name} {request.etag} {request.request_id}")
        return pb.ResumeConnectorResponse(etag="leader-etag")


def test_the_relay_lets_a_follower_write_only_unconditional_calls_without_request_id() -> None:
    leader = _Leader()
    leader_server, leader_address = start_server(leader, max_workers=4)
    forwarder = Forwarder("f", lambda: ("l", leader_address))
    herder = _Herder()
    follower_server, follower_address = start_server(
        ConnectServicer(cast(Herder, herder), forwarder=forwarder), max_workers=4,
        interceptors=[LeaderWritesRelay(forwarder, lambda: False)],
    )
    try:
        with grpc.insecure_channel(follower_address) as channel:
            stub = pb_grpc.ConnectServiceStub(channel)
            answers = [
                stub.PauseConnector(pb.PauseConnectorRequest(name="c"), timeout=5).etag,
                stub.ResumeConnector(pb.ResumeConnectorRequest(name="c"), timeout=5).etag,
                stub.PauseConnector(pb.PauseConnectorRequest(name="c", etag="e"), timeout=5).etag,
                stub.ResumeConnector(
                    pb.ResumeConnectorRequest(name="c", request_id="r"), timeout=5
                ).etag,
            ]
        assert answers == ["follower-etag", "follower-etag", "leader-etag", "leader-etag"]
        assert herder.written == ["paused c", "resumed c"]
        assert leader.seen == ["pause c e ", "resume c  r"]
    finally:
        forwarder.close()
        follower_server.stop(0).wait()
        leader_server.stop(0).wait()


def test_a_request_that_does_not_parse_is_left_to_the_leader() -> None:
    relay = LeaderWritesRelay(Forwarder("f", lambda: None), lambda: False)
    pause = "/connect.v1.ConnectService/PauseConnector"
    unconditional = pb.PauseConnectorRequest(name="c").SerializeToString()
    assert relay._writes_here(pause, unconditional)
    assert not relay._writes_here(pause, b"\xff\xff\xff")
    stop = "/connect.v1.ConnectService/StopConnector"
    assert not relay._writes_here(stop, pb.StopConnectorRequest(name="c").SerializeToString())
    # a worker that authenticates its callers leaves every write to the leader's roles
    secured = LeaderWritesRelay(Forwarder("f", lambda: None), lambda: False, writes_here=False)
    assert not secured._writes_here(pause, unconditional)


def test_the_config_store_sends_unstamped_records() -> None:
    store = KafkaConfigStore({"bootstrap.servers": "127.0.0.1:1"}, "configs")
    sent: list[dict[str, Any]] = []

    class _Log:
        def send_all(self, records: Any, **kwargs: Any) -> list[LogRecord]:
            sent.append(kwargs)
            return [LogRecord(b"k", b"v", 0, 0)]

    store._log = cast(Any, _Log())
    store.send([(b"target-state-c", b"{}")], 2.0)
    assert sent == [{"timeout": 2.0}]  # no term header, no carried answer
