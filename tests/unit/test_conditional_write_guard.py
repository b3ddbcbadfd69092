"""The leader's side once any worker writes an unconditional pause or resume itself (decision
0100), without a broker: a conditional write is checked again right before its transaction
commits (the fenced writer's ``before_commit``, the leader's guard), the checks that must
see every acknowledged target state read the config topic to its end, and a connector left
STARTED without task configs by a stop's cleanup asks for them again."""

from __future__ import annotations

import threading
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any, cast

import pytest
import structlog
from confluent_kafka import KafkaException

from connect_grpc.cluster.fenced_writer import FencedWriter
from connect_grpc.herder.cut_short_writes import CutShortWrites
from connect_grpc.herder.distributed import DistributedHerder
from connect_grpc.herder.distributed_etags import ClusterEtags
from connect_grpc.herder.distributed_mutations import DistributedMutations
from connect_grpc.herder.distributed_view import ClusterView
from connect_grpc.herder.etags import connector_etag
from connect_grpc.herder.leader_writer import LeaderWriter
from connect_grpc.herder.locks import ConnectorLocks
from connect_grpc.kernel.domain import OffsetsChange, TargetState
from connect_grpc.kernel.errors import AbortedError, FailedPreconditionError, UnavailableError
from connect_grpc.storage.config_codec import (
    connector_config_records,
    target_state_records,
    task_config_records,
    term_marker_record,
)
from connect_grpc.storage.log_records import LogRecord
from tests.task_fakes import DeliveredMessage
from tests.unit.config_log_fakes import AppliedLog, WholeWriter, applied_store
from tests.unit.test_membership import ABORTABLE, FakeProducer

TERM = 3
CONFIG = {"k": "v"}

# ------------------------------------------------------------ the fenced writer's check


class _FlushingProducer(FakeProducer):
    """Delivers the open transaction's records on ``flush`` (``remaining`` left unsent)."""

    def __init__(self, remaining: int = 0, **failures: list[KafkaException]) -> None:
        super().__init__(**failures)
        self.remaining = remaining

    def flush(self, timeout: float) -> int:
        self._call("flush")
        if self.remaining:
            return self.remaining
        self.commit_transaction_deliveries()
        return 0

    def commit_transaction_deliveries(self) -> None:
        pending, self._pending = self._pending, []
        for key, value, on_delivery in pending:
            on_delivery(None, DeliveredMessage(key, value, self._offset))
            self._offset += 1


def _fenced(producer: FakeProducer) -> FencedWriter:
    writer = FencedWriter(cast(Any, producer), "configs", "g-leader")
    writer._init(1.0)
    return writer


RECORDS = [(b"k1", b"v1"), (b"k2", None)]


def test_a_checked_transaction_commits_after_its_records_are_acknowledged() -> None:
    producer = _FlushingProducer()
    seen: list[list[int]] = []

    written = _fenced(producer).send_all(
        RECORDS, 1.0, before_commit=lambda records: seen.append([r.offset for r in records])
    )

    assert seen == [[0, 1]] and [r.offset for r in written] == [0, 1]
    assert producer.calls == ["init", "begin", "produce", "produce", "flush", "commit"]


def test_a_failed_check_aborts_the_transaction_and_reaches_the_caller() -> None:
    producer = _FlushingProducer()
    writer = _fenced(producer)

    def refuse(records: list[LogRecord]) -> None:
        raise AbortedError("changed meanwhile", "e2")

    with pytest.raises(AbortedError):
        writer.send_all(RECORDS, 1.0, before_commit=refuse)

    assert producer.calls[-2:] == ["flush", "abort"]
    assert writer.usable
    assert len(writer.send_all(RECORDS, 1.0)) == 2


def test_records_not_acknowledged_in_time_abort_the_checked_transaction() -> None:
    producer = _FlushingProducer(remaining=1)
    checked: list[object] = []
    with pytest.raises(UnavailableError):
        _fenced(producer).send_all(RECORDS, 1.0, before_commit=checked.append)
    assert checked == [] and producer.calls[-2:] == ["flush", "abort"]


def test_a_failed_abort_after_a_failed_check_fails_the_writer() -> None:
    producer = _FlushingProducer(abort=[ABORTABLE])
    writer = _fenced(producer)

    def refuse(records: list[LogRecord]) -> None:
        raise AbortedError("changed meanwhile", "e2")

    with pytest.raises(UnavailableError):
        writer.send_all(RECORDS, 1.0, before_commit=refuse)
    assert not writer.usable


# ------------------------------------------------------------------- the leader's writes


class _Election:
    def is_leader(self) -> bool:
        return True


class _InTerm(LeaderWriter):
    """The leader's writer in office for TERM, its fenced writer ``whole``."""

    def __init__(self, view: ClusterView, whole: WholeWriter) -> None:
        super().__init__(
            view, cast(Any, _Election()), threading.Event(), structlog.get_logger(), client={},
            cluster=cast(Any, None), worker_id="l", refuse_while_kafka_unreachable=lambda: None,
        )
        self.whole = whole

    def for_write(self) -> Any:
        return self.whole

    def leads(self) -> bool:
        return True

    def office_term(self) -> int:
        return TERM


class _Offsets:
    """The offset manager: records the changes it was asked for."""

    def __init__(self) -> None:
        self.altered: list[str] = []

    def alter(self, name: str, config: Any, offsets: Any, time_ms: Any) -> OffsetsChange:
        self.altered.append(name)
        return OffsetsChange("altered")


class _Leader:
    """The leader's mutations and its loop's cleanups over one view of an applied log, with
    a STARTED connector "c" with two tasks."""

    def __init__(self) -> None:
        self.store, self.log = applied_store()
        self.whole = WholeWriter(self.log)
        self.view = ClusterView(self.store, cast(Any, None))
        self.writer = _InTerm(self.view, self.whole)
        self.etags = ClusterEtags(self.view, self.writer)
        self.offsets = _Offsets()
        locks, log, unused = ConnectorLocks(), structlog.get_logger(), cast(Any, None)
        config = cast(Any, SimpleNamespace(exactly_once_source_enabled=False))
        reads = cast(Any, SimpleNamespace(info=lambda *args: args))
        validator = cast(Any, SimpleNamespace(ensure_valid=lambda config: None))
        self.mutations = DistributedMutations(
            self.view, self.writer, self.etags, reads, locks, config=config,
            validator=validator, offset_manager=cast(Any, self.offsets), reconciler=unused,
            board=unused, normalised=lambda name, config: (name, dict(config)),
            validated_for_create=unused, worker_id="l", log=log,
        )
        self.cut_short = CutShortWrites(self.view, self.writer, locks, log)
        self.whole.send_all([term_marker_record(TERM)], 1.0)
        self.whole.send_all(connector_config_records("c", CONFIG, TargetState.STARTED), 1.0)
        self.whole.send_all(task_config_records("c", [{"t": "0"}, {"t": "1"}]), 1.0)

    def etag(self) -> str:
        return self.etags.etag_in(self.view.snapshot(), "c")

    def follower_writes(self, state: TargetState) -> None:
        """A target state another worker wrote itself, which this view has not read."""
        self.log.holding = True
        self.log.send_all(target_state_records("c", state))
        self.log.holding = False

    def follower_writes_next(self, state: TargetState) -> None:
        """... landing after this leader's check, right before its transaction."""
        self.whole.on_open = lambda: self.log.send_all(target_state_records("c", state))


@pytest.fixture
def leader() -> _Leader:
    return _Leader()


def _applied(log: AppliedLog, since: int) -> list[str]:
    return [
        (record.key or b"").decode() for record in log.records[since:]
        if record.offset not in log.aborted
    ]


def test_a_conditional_write_that_a_followers_pause_overtook_is_aborted(leader: _Leader) -> None:
    etag = leader.etag()
    leader.follower_writes_next(TargetState.PAUSED)
    before = len(leader.log.records)

    with pytest.raises(AbortedError) as raised:
        leader.mutations.stop_connector("c", etag=etag)

    assert _applied(leader.log, before) == ["target-state-c"]  # the pause, not the stop
    snapshot = leader.view.snapshot()
    assert snapshot.target_state("c") is TargetState.PAUSED
    assert len(snapshot.task_configs("c")) == 2
    assert raised.value.current_etag == leader.etag()


@pytest.mark.parametrize("write", ["pause", "resume", "delete", "put", "patch"])
def test_every_conditional_write_is_checked_right_before_it_commits(
    leader: _Leader, write: str
) -> None:
    etag = leader.etag()
    leader.follower_writes_next(TargetState.PAUSED if write != "pause" else TargetState.STOPPED)
    call: Callable[[], object] = {
        "pause": lambda: leader.mutations.pause_connector("c", etag=etag),
        "resume": lambda: leader.mutations.resume_connector("c", etag=etag),
        "delete": lambda: leader.mutations.delete_connector("c", etag=etag),
        "put": lambda: leader.mutations.put_connector_config("c", {"k": "new"}, etag=etag),
        "patch": lambda: leader.mutations.patch_connector_config("c", {"k": "new"}, etag=etag),
    }[write]
    with pytest.raises(AbortedError):
        call()
    assert leader.view.snapshot().connectors.get("c") == CONFIG


def test_a_conditional_write_nothing_overtook_commits(leader: _Leader) -> None:
    after = leader.mutations.pause_connector("c", etag=leader.etag())
    assert leader.view.snapshot().target_state("c") is TargetState.PAUSED
    assert after == leader.etag()


def test_an_etag_a_follower_answered_before_this_view_read_it_is_not_refused(
    leader: _Leader,
) -> None:
    """Pause through a follower, then a conditional call with the etag it answered: the
    leader's view may not have read that pause yet; it reads the topic to its end rather
    than answer ABORTED."""
    leader.log.holding = True
    leader.log.send_all(target_state_records("c", TargetState.PAUSED))
    paused = connector_etag("c", CONFIG, TargetState.PAUSED, "0")
    assert leader.etag() != paused  # not read yet

    leader.mutations.resume_connector("c", etag=paused)

    assert leader.log.reads_to_end == 1
    assert leader.view.snapshot().target_state("c") is TargetState.STARTED


def test_a_stale_etag_is_refused_after_reading_the_topic_to_its_end(leader: _Leader) -> None:
    with pytest.raises(AbortedError):
        leader.mutations.pause_connector("c", etag="0000000000000000")
    assert leader.log.reads_to_end == 1


def test_an_offsets_change_sees_a_resume_its_view_had_not_read(leader: _Leader) -> None:
    leader.mutations.stop_connector("c")
    leader.follower_writes(TargetState.STARTED)

    with pytest.raises(FailedPreconditionError):
        leader.mutations.alter_offsets("c", [])

    assert leader.offsets.altered == []


def test_task_configs_of_a_connector_resumed_by_a_follower_are_written(leader: _Leader) -> None:
    """The connector's worker read the resume and sent its tasks before the leader's view
    read it: the leader reads the topic to its end rather than ignore them."""
    leader.mutations.stop_connector("c")
    leader.follower_writes(TargetState.STARTED)
    leader.log.holding = True  # the resume is not in the leader's view

    leader.mutations.put_task_configs("c", [{"t": "new"}])

    leader.log.holding = False
    leader.log.catch_up()
    assert leader.view.snapshot().task_configs("c") == ({"t": "new"},)


def test_a_stop_cut_short_is_not_finished_over_a_resume_written_meanwhile(
    leader: _Leader,
) -> None:
    leader.log.marker_before = 1  # a successor's marker refuses the stop's cleanup
    leader.log.next_term = TERM + 1
    leader.mutations.stop_connector("c")
    snapshot = leader.view.snapshot()
    assert snapshot.target_state("c") is TargetState.STOPPED
    assert len(snapshot.task_configs("c")) == 2
    leader.follower_writes_next(TargetState.STARTED)

    leader.cut_short.finish_stops(cast(Any, leader.whole))

    snapshot = leader.view.snapshot()
    assert snapshot.target_state("c") is TargetState.STARTED
    assert len(snapshot.task_configs("c")) == 2  # its tasks run on


# ---------------------------------------------- a connector left STARTED without tasks


def test_a_started_connector_whose_task_configs_were_emptied_asks_for_them_again() -> None:
    store, log = applied_store()
    regenerated: list[str] = []
    herder = SimpleNamespace(
        _configs=store, _listening=True, _view=SimpleNamespace(),
        _reconciler=SimpleNamespace(
            request_regeneration=regenerated.append, wake=lambda: None,
        ),
        _election=SimpleNamespace(is_leader=lambda: False), _leader_wake=threading.Event(),
    )
    log.send_all(connector_config_records("c", CONFIG, TargetState.STOPPED))
    log.send_all(task_config_records("c", [{"t": "0"}]))

    def told(kind: str) -> None:
        DistributedHerder._on_config_change(cast(Any, herder), kind, "c", None)

    told("tasks")  # STOPPED: its tasks are to stop
    log.send_all(target_state_records("c", TargetState.STARTED))
    told("tasks")  # STARTED with tasks
    log.send_all(task_config_records("c", []))
    told("tasks")  # STARTED, emptied: the stop's cleanup read after a resume
    assert regenerated == ["c"]
