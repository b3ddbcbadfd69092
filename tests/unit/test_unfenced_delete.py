"""DeleteConnector and StopConnector written without a transaction (issue 25), on the leader's
side, without a broker: the DistributedHerder's delete, stop, create and leader-loop cleanups
(its mutations, its leader's writer and its finishing of writes cut short, over a leader's
writer in office for a given term), with a real KafkaConfigStore (term stamps, refusals,
carried answers) over a log that applies each record as it is sent and can let a new term's
marker in mid-write."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, cast

import pytest
import structlog

from connect_grpc.herder import cut_short_writes, leader_writer
from connect_grpc.herder.cut_short_writes import CutShortWrites
from connect_grpc.herder.distributed import DistributedHerder
from connect_grpc.herder.distributed_etags import ClusterEtags
from connect_grpc.herder.distributed_mutations import DistributedMutations
from connect_grpc.herder.distributed_view import ClusterView
from connect_grpc.herder.leader_writer import LeaderWriter
from connect_grpc.herder.locks import ConnectorLocks
from connect_grpc.kernel import request_answer
from connect_grpc.kernel.domain import TargetState
from connect_grpc.kernel.errors import NotLeaderError
from connect_grpc.storage.config_codec import (
    connector_config_records,
    extension_record,
    task_config_records,
    term_marker_record,
)
from connect_grpc.storage.config_snapshot import ConfigSnapshot
from connect_grpc.storage.kafka_config import KafkaConfigStore
from connect_grpc.storage.log_records import LogRecord
from tests.unit.config_log_fakes import AppliedLog, WholeWriter, applied_store

TERM = 3


@dataclass
class _Election:
    leader: bool = True

    def is_leader(self) -> bool:
        return self.leader


def _store() -> tuple[KafkaConfigStore, AppliedLog]:
    store, log = applied_store()
    log.next_term = TERM + 1
    return store, log


class _InTerm(LeaderWriter):
    """The leader's writer in office for term ``term``, its fenced writer ``whole``; a
    refused write tells it it was deposed."""

    def __init__(self, view: ClusterView, whole: WholeWriter, wake: threading.Event) -> None:
        super().__init__(
            view, cast(Any, _Election()), wake, structlog.get_logger(), client={},
            cluster=cast(Any, None), worker_id="w1", refuse_while_kafka_unreachable=lambda: None,
        )
        self.whole = whole
        self.term = TERM

    def for_write(self) -> Any:
        return self.whole

    def office_term(self) -> int:
        return self.term

    def not_leader(self) -> NotLeaderError:
        return NotLeaderError("deposed")


class _Leader:
    """The herder's parts the leader's writes use (built as it builds them) over one view
    of the applied log, under the names the tests use."""

    def __init__(self, store: KafkaConfigStore, writer: WholeWriter) -> None:
        self._configs = store
        self._writer = writer
        self._leader_wake = threading.Event()
        self._view = ClusterView(store, cast(Any, None))
        self._office = _InTerm(self._view, writer, self._leader_wake)
        etags = ClusterEtags(self._view, self._office)
        locks, log, unused = ConnectorLocks(), structlog.get_logger(), cast(Any, None)
        mutations = DistributedMutations(
            self._view, self._office, etags, unused, locks, config=unused, validator=unused,
            offset_manager=unused, reconciler=unused, board=unused, normalised=unused,
            validated_for_create=unused, worker_id="w1", log=log,
        )
        cut_short = CutShortWrites(self._view, self._office, locks, log)
        self.delete_connector = mutations.delete_connector
        self.stop_connector = mutations.stop_connector
        self.put_task_configs = mutations.put_task_configs
        self._write_target_state = mutations._write_target_state
        self._write_new_connector = mutations._write_new_connector
        self._finish_stops = cut_short.finish_stops
        self._finish_removals = cut_short.finish_removals
        self._snapshot = self._view.snapshot
        self._etag_in = etags.etag_in

    @property
    def term(self) -> int:
        return self._office.term

    @term.setter
    def term(self, term: int) -> None:
        self._office.term = term

    @property
    def _owed_config_position(self) -> int:
        return self._view.owed_position


@pytest.fixture
def leader() -> _Leader:
    """A leader of term TERM whose view has a PAUSED connector "c" with two tasks."""
    store, log = _store()
    writer = WholeWriter(log)
    writer.send_all([term_marker_record(TERM)], 1.0)
    writer.send_all(connector_config_records("c", {"k": "v"}, TargetState.PAUSED), 1.0)
    writer.send_all(task_config_records("c", [{"t": "0"}, {"t": "1"}]), 1.0)
    return _Leader(store, writer)


def _log_of(leader: _Leader) -> AppliedLog:
    return leader._writer._log


def _keys(records: list[LogRecord]) -> list[str]:
    return [(record.key or b"").decode() for record in records]


def _pending_answer() -> request_answer.PendingAnswer:
    return request_answer.PendingAnswer("r-1", b"fingerprint", 1.0, lambda _: b"deleted")


def test_a_delete_is_stamped_and_its_answer_rides_on_the_connector_tombstone(
    leader: _Leader,
) -> None:
    before = len(_log_of(leader).records)
    with request_answer.scope(_pending_answer()):
        leader.delete_connector("c")
    written = _log_of(leader).records[before:]
    assert _keys(written) == ["connector-c", "task-c-0", "task-c-1", "target-state-c"]
    assert all(record.header("connect-grpc-term") == str(TERM).encode() for record in written)
    assert [record.header("connect-grpc-carried") is not None for record in written] == [
        True, False, False, False
    ]
    snapshot = leader._snapshot()
    assert not snapshot.contains("c") and not snapshot.target_states
    assert "connect-grpc-request-r-1" in snapshot.extensions
    assert not snapshot.unfinished_removals
    assert leader._leader_wake.is_set()  # an assignment to publish without the connector


def test_a_delete_whose_cleanup_a_new_term_refused_is_done_and_answered(
    leader: _Leader,
) -> None:
    """A successor's marker after the tombstone: the delete happened (no NotLeaderError,
    which would send the caller to the new leader for a NOT_FOUND), with its answer."""
    _log_of(leader).marker_before = 1
    with request_answer.scope(_pending_answer()):
        leader.delete_connector("c")
    snapshot = leader._snapshot()
    assert not snapshot.contains("c")
    assert "connect-grpc-request-r-1" in snapshot.extensions
    assert snapshot.unfinished_removals == {"c": 2}


def test_a_delete_refused_as_a_deposed_leaders_leaves_the_connector_and_no_answer(
    leader: _Leader,
) -> None:
    _log_of(leader).marker_before = 0
    with request_answer.scope(_pending_answer()), pytest.raises(NotLeaderError):
        leader.delete_connector("c")
    snapshot = leader._snapshot()
    assert snapshot.target_state("c") is TargetState.PAUSED
    assert len(snapshot.task_configs("c")) == 2
    assert "connect-grpc-request-r-1" not in snapshot.extensions
    assert not snapshot.unfinished_removals


def test_a_conditional_delete_stays_one_transaction(leader: _Leader) -> None:
    before = len(_log_of(leader).records)
    leader.delete_connector("c", etag=leader._etag_in(leader._snapshot(), "c"))
    written = _log_of(leader).records[before:]
    assert _keys(written) == ["connector-c", "task-c-0", "task-c-1", "target-state-c"]
    assert not any(record.header("connect-grpc-term") for record in written)


def test_the_leader_finishes_a_removal_cut_short_once(leader: _Leader) -> None:
    _log_of(leader).marker_before = 1
    leader.delete_connector("c")
    before = len(_log_of(leader).records)
    leader._finish_removals(leader._writer)
    leader._finish_removals(leader._writer)
    assert _keys(_log_of(leader).records[before:]) == ["task-c-0", "task-c-1", "target-state-c"]
    assert not leader._snapshot().unfinished_removals


def test_a_create_of_the_name_finishes_its_unfinished_removal_first(leader: _Leader) -> None:
    _log_of(leader).marker_before = 1
    leader.delete_connector("c")
    leader.term = TERM + 1  # the successor, before its loop finished the removal
    before = len(_log_of(leader).records)
    leader._write_new_connector("c", {"k": "new"}, TargetState.STOPPED, [], None)
    assert _keys(_log_of(leader).records[before:]) == [
        "task-c-0", "task-c-1", "target-state-c", "target-state-c", "connector-c"
    ]
    snapshot = leader._snapshot()
    assert snapshot.target_state("c") is TargetState.STOPPED
    assert not snapshot.unfinished_removals


def test_task_configs_submitted_late_for_a_deleted_connector_are_ignored(
    leader: _Leader,
) -> None:
    """A create or a removal cut short may leave a STARTED target state of a connector
    without config: task configs written for the name then would be the tasks of a later
    connector of that name."""
    _log_of(leader).marker_before = 1
    with pytest.raises(NotLeaderError):
        leader._write_new_connector("d", {"k": "v"}, TargetState.STARTED, [], None)
    assert leader._snapshot().target_state("d") is TargetState.STARTED
    before = len(_log_of(leader).records)
    leader.put_task_configs("d", [{"t": "late"}])
    assert _log_of(leader).records[before:] == []


def test_a_stop_is_stamped_and_its_answer_rides_on_the_target_state(leader: _Leader) -> None:
    before = len(_log_of(leader).records)
    with request_answer.scope(_pending_answer()):
        leader.stop_connector("c")
    written = _log_of(leader).records[before:]
    assert _keys(written) == ["target-state-c", "commit-c"]
    assert all(record.header("connect-grpc-term") == str(TERM).encode() for record in written)
    assert [record.header("connect-grpc-carried") is not None for record in written] == [
        True, False
    ]
    snapshot = leader._snapshot()
    assert snapshot.target_state("c") is TargetState.STOPPED
    assert snapshot.task_configs("c") == ()
    assert "connect-grpc-request-r-1" in snapshot.extensions


def test_the_leader_finishes_a_stop_cut_short_once(leader: _Leader) -> None:
    """A successor's marker after the target state: the stop happened and is answered;
    its task configs are emptied by the leader's loop, once."""
    _log_of(leader).marker_before = 1
    with request_answer.scope(_pending_answer()):
        leader.stop_connector("c")
    snapshot = leader._snapshot()
    assert snapshot.target_state("c") is TargetState.STOPPED
    assert len(snapshot.task_configs("c")) == 2
    assert "connect-grpc-request-r-1" in snapshot.extensions
    before = len(_log_of(leader).records)
    leader._finish_stops(leader._writer)
    leader._finish_stops(leader._writer)
    assert _keys(_log_of(leader).records[before:]) == ["commit-c"]
    assert leader._snapshot().task_configs("c") == ()


def test_a_view_without_a_stop_to_finish_is_not_walked_again_until_it_changes(
    leader: _Leader, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The leader's loop runs on every config record; at a thousand connectors walking
    them all for stops cut short cost milliseconds each time (issue 25)."""
    walks: list[ConfigSnapshot] = []
    real = cut_short_writes._stops_cut_short

    def counted(snapshot: ConfigSnapshot) -> list[str]:
        walks.append(snapshot)
        return real(snapshot)

    monkeypatch.setattr(cut_short_writes, "_stops_cut_short", counted)
    leader._finish_stops(leader._writer)
    assert len(walks) == 1
    leader._writer.send_all([extension_record("connect-grpc-x", 1)], 1.0)
    leader._finish_stops(leader._writer)
    assert len(walks) == 1  # an extension record changes neither map it depends on
    _log_of(leader).marker_before = 1
    leader.stop_connector("c")  # cut short after its target state
    before = len(_log_of(leader).records)
    leader._finish_stops(leader._writer)
    assert _keys(_log_of(leader).records[before:]) == ["commit-c"]
    assert leader._snapshot().task_configs("c") == ()


def test_a_conditional_stop_stays_one_transaction(leader: _Leader) -> None:
    before = len(_log_of(leader).records)
    leader.stop_connector("c", etag=leader._etag_in(leader._snapshot(), "c"))
    written = _log_of(leader).records[before:]
    assert _keys(written) == ["target-state-c", "commit-c"]
    assert not any(record.header("connect-grpc-term") for record in written)


# ------------------------------------------- the answer before the read-back (issue 25)


def _at(*offsets: int) -> list[LogRecord]:
    return [LogRecord(b"k", b"v", 0, offset) for offset in offsets]


@pytest.mark.parametrize(
    ("mark", "offsets", "change_index", "known"),
    [
        ((10, TERM), (10,), -1, True),  # right after the view's last record
        ((10, TERM), (10, 11, 12), -1, True),
        ((10, TERM), (11,), -1, False),  # a record the view has not read came first
        ((10, TERM), (10, 12), -1, False),  # another writer's record between two of ours
        ((10, TERM), (10, 12), 0, True),  # ... after the change: cleanup only
        ((10, TERM + 1), (10,), -1, False),  # the view has read a later leader's marker
        ((10, TERM - 1), (10,), -1, True),
    ],
)
def test_a_write_is_known_to_have_taken_effect_only_when_nothing_can_have_come_before_it(
    mark: tuple[int, int], offsets: tuple[int, ...], change_index: int, known: bool
) -> None:
    assert leader_writer.landed_next(mark, TERM, _at(*offsets), change_index) is known


def test_a_write_right_after_the_view_is_answered_before_it_is_read_back_and_reads_wait(
    leader: _Leader,
) -> None:
    """A leader's unfenced write needs no read-back when it landed right after the last
    record its view had applied; every read on that worker then waits for its tail to
    read it (read-your-writes), and its config position already counts it."""
    log = _log_of(leader)
    log.holding = True
    leader._write_target_state("c", TargetState.STARTED)
    assert log.read_backs == 0
    end = len(log.records)
    assert leader._configs.position() < end == leader._owed_config_position
    assert DistributedHerder.config_position(leader) == end  # type: ignore[arg-type]

    tail = threading.Timer(0.2, log.catch_up)
    tail.start()
    assert leader._snapshot().target_state("c") is TargetState.STARTED
    tail.join()


def test_a_write_after_a_record_the_view_has_not_read_is_read_back(leader: _Leader) -> None:
    log = _log_of(leader)
    log.holding = True
    log.send_all(connector_config_records("other", {"k": "v"}, TargetState.STARTED))
    leader._write_target_state("c", TargetState.STARTED)  # held records: read back first
    assert log.read_backs == 1
    assert leader._owed_config_position == 0
    assert leader._snapshot().target_state("c") is TargetState.STARTED


def test_a_read_on_the_tails_own_thread_does_not_wait_for_it(
    leader: _Leader, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = _log_of(leader)
    log.holding = True
    leader._write_target_state("c", TargetState.STARTED)
    monkeypatch.setattr(log, "on_tail_thread", lambda: True)
    assert leader._snapshot().target_state("c") is TargetState.PAUSED  # not read yet
