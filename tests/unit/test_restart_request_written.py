"""A flagged restart on a cluster (KIP-745), without a broker: the leader's side
(DistributedMutations.restart_connector over a leader's writer in office, with a real
KafkaConfigStore over a log that applies each record as it is sent) hands the request to
every worker's reconciler, which restarts what its own view of the statuses chooses. The
request is written as Kafka Connect writes it, without a transaction: one record, stamped with
the leader's term, carrying the answer (a deposed leader's is refused by every reader).

The leader's view of another worker's statuses may lag that worker's own: the request must
reach the workers even when the leader's view shows nothing to restart, as Kafka Connect
writes it, or an only-failed restart just after a failure is lost."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import pytest
import structlog

from connect_grpc.cluster.assignment import WorkerAssignment
from connect_grpc.connectors.plugins import Plugins
from connect_grpc.herder.distributed_etags import ClusterEtags
from connect_grpc.herder.distributed_mutations import DistributedMutations
from connect_grpc.herder.distributed_view import ClusterView
from connect_grpc.herder.leader_writer import LeaderWriter
from connect_grpc.herder.locks import ConnectorLocks
from connect_grpc.kernel import request_answer
from connect_grpc.kernel.domain import (
    ConnectorStatus,
    ConnectorType,
    InstanceStatus,
    RestartRequest,
    State,
    TargetState,
)
from connect_grpc.kernel.errors import NotLeaderError
from connect_grpc.storage.config_codec import connector_config_records
from connect_grpc.storage.kafka_config import KafkaConfigStore
from connect_grpc.testing.plugins import count, read_events
from tests.unit.config_log_fakes import AppliedLog, WholeWriter, applied_store
from tests.unit.test_reconciler import ME, NAME, Harness

INSTRUMENTED_SOURCE = "connect_grpc.testing.plugins.InstrumentedSourceConnector"

ONLY_FAILED = RestartRequest(NAME, include_tasks=False, only_failed=True)


class _Statuses:
    """The leader's status store: reading it to its end shows ``caught_up``, the statuses
    other workers wrote that its tailing thread had not applied yet."""

    def __init__(self, view: ConnectorStatus, caught_up: ConnectorStatus | None) -> None:
        self.view = view
        self._caught_up = caught_up

    def refresh(self, timeout: float | None = None) -> None:
        if self._caught_up is not None:
            self.view = self._caught_up


@dataclass
class _Election:
    def is_leader(self) -> bool:
        return True


class _Holding(LeaderWriter):
    """The leader's writer in office for term 0, holding the fenced writer ``whole``."""

    def __init__(self, view: ClusterView, whole: WholeWriter, wake: threading.Event) -> None:
        super().__init__(
            view, cast(Any, _Election()), wake, structlog.get_logger(), client={},
            cluster=cast(Any, None), worker_id="w1", refuse_while_kafka_unreachable=lambda: None,
        )
        self.whole = whole

    def for_write(self) -> Any:
        return self.whole

    def office_term(self) -> int:
        return 0

    def not_leader(self) -> NotLeaderError:
        return NotLeaderError("deposed")


class _Reads:
    """The leader's reads: ``statuses`` holds its view of the connector's status."""

    def __init__(self, statuses: _Statuses) -> None:
        self._statuses = statuses

    def connector_status(self, name: str) -> ConnectorStatus:
        return self._statuses.view


class _Leader:
    """The parts a flagged restart uses on the leader (built as the herder builds them);
    ``statuses`` is the leader's view of the connector's status."""

    def __init__(self, store: KafkaConfigStore, writer: WholeWriter, statuses: _Statuses) -> None:
        self.log: AppliedLog = writer._log
        self.snapshot = store.snapshot
        self._leader_wake = threading.Event()
        view = ClusterView(store, cast(Any, statuses))
        office = _Holding(view, writer, self._leader_wake)
        unused = cast(Any, None)
        mutations = DistributedMutations(
            view, office, ClusterEtags(view, office), cast(Any, _Reads(statuses)),
            ConnectorLocks(), config=unused, validator=unused, offset_manager=unused,
            reconciler=unused, board=unused, normalised=unused, validated_for_create=unused,
            worker_id="w1", log=structlog.get_logger(),
        )
        self.restart_connector = mutations.restart_connector


def _status(state: State) -> ConnectorStatus:
    return ConnectorStatus(NAME, InstanceStatus(state, ME), (), ConnectorType.SOURCE)


@pytest.fixture
def h() -> Harness:
    return Harness()


def _runs_it(h: Harness, events: Path, *, failing: bool) -> Harness:
    """``h``'s worker runs the instrumented connector, which it shows FAILED (its start
    raised) or RUNNING."""
    h.worker.plugins = Plugins(include_testing=True)
    config = {
        "name": NAME,
        "connector.class": INSTRUMENTED_SOURCE,
        "tasks.max": "1",
        "test.events.file": str(events),
        "test.fail.connector.start": str(failing).lower(),
    }
    h.view.write(connector_config_records(NAME, config, TargetState.STARTED))
    h.view.assign(1, **{ME: WorkerAssignment.of([NAME])})
    h.reconciler.reconcile()
    assert h.board.connector(NAME).state is (State.FAILED if failing else State.RUNNING)
    return h


def _starts(events: Path) -> int:
    return count(read_events(events), "connector_start")


def _leader(leader_view: State, worker: Harness, caught_up: State | None = None) -> _Leader:
    """A leader whose view of the connector's status is ``leader_view``, and ``caught_up``
    once it has read the status topic to its end (None: the same); each restart request its
    config store reads goes to ``worker``'s reconciler, as the herder's config listener
    hands it over."""

    def heard(kind: str, connector: str, restart: RestartRequest | None) -> None:
        if kind == "restart" and restart is not None:
            worker.reconciler.queue_restart(restart)

    store, log = applied_store(on_change=heard)
    writer = WholeWriter(log)
    writer.send_all(connector_config_records(NAME, {"connector.class": "any"}), 1.0)
    statuses = _Statuses(_status(leader_view), None if caught_up is None else _status(caught_up))
    return _Leader(store, writer, statuses)


def test_an_only_failed_restart_reaches_the_worker_whose_view_shows_it_failed(
    h: Harness, tmp_path: Path
) -> None:
    """The leader has not read the failure yet (its view: RUNNING); the connector's worker
    has, and restarts it."""
    events = tmp_path / "events.jsonl"
    worker = _runs_it(h, events, failing=True)
    leader = _leader(State.RUNNING, worker)
    answer = leader.restart_connector(ONLY_FAILED)
    assert answer is not None and answer.connector.state is State.RUNNING  # the leader's view
    assert not leader._leader_wake.is_set()  # a restart changes no assignment
    worker.reconciler.reconcile()  # carries out the request: RESTARTING
    assert worker.board.connector(NAME).state is State.RESTARTING
    worker.reconciler.reconcile()  # starts it again
    assert _starts(events) == 2
    assert worker.board.connector(NAME).state is State.FAILED


def test_an_only_failed_restart_leaves_an_instance_its_worker_shows_running(
    h: Harness, tmp_path: Path
) -> None:
    """The other way round: the leader's stale view shows FAILED (its answer says
    RESTARTING), but the connector's worker plans by its own view, where it runs: nothing
    restarts (as Kafka Connect's workers each build the plan)."""
    events = tmp_path / "events.jsonl"
    worker = _runs_it(h, events, failing=False)
    leader = _leader(State.FAILED, worker)
    answer = leader.restart_connector(ONLY_FAILED)
    assert answer is not None and answer.connector.state is State.RESTARTING
    worker.reconciler.reconcile()
    worker.reconciler.reconcile()
    assert _starts(events) == 1 and worker.worker.connector_stops == []
    assert worker.board.connector(NAME).state is State.RUNNING


def test_the_answer_plans_by_every_status_written_before_the_call(
    h: Harness, tmp_path: Path
) -> None:
    """The failure reached the status topic (the caller saw it through another worker) but
    not yet the leader's view: the leader reads the topic to its end before it plans, so
    its answer shows the connector RESTARTING, not the UNASSIGNED it had."""
    events = tmp_path / "events.jsonl"
    worker = _runs_it(h, events, failing=True)
    leader = _leader(State.UNASSIGNED, worker, caught_up=State.FAILED)
    answer = leader.restart_connector(ONLY_FAILED)
    assert answer is not None and answer.connector.state is State.RESTARTING


def _pending_answer() -> request_answer.PendingAnswer:
    return request_answer.PendingAnswer("r-1", b"fingerprint", 1.0, lambda _: b"restarting")


def test_a_flagged_restart_is_one_record_stamped_with_the_term_carrying_its_answer(
    h: Harness, tmp_path: Path
) -> None:
    """No transaction: the request alone, written in the leader's term, with the answer to
    its request id in a header (applied with it), and carried out by the worker."""
    events = tmp_path / "events.jsonl"
    worker = _runs_it(h, events, failing=True)
    leader = _leader(State.FAILED, worker)
    before = len(leader.log.records)
    with request_answer.scope(_pending_answer()):
        answer = leader.restart_connector(ONLY_FAILED)
    assert answer is not None and answer.connector.state is State.RESTARTING
    written = leader.log.records[before:]
    assert [record.key for record in written] == [f"restart-connector-{NAME}".encode()]
    headers = dict(written[0].headers or ())
    assert headers["connect-grpc-term"] == b"0"
    assert "connect-grpc-carried" in headers
    assert "connect-grpc-request-r-1" in leader.snapshot().extensions
    worker.reconciler.reconcile()
    worker.reconciler.reconcile()
    assert _starts(events) == 2


def test_a_flagged_restart_refused_as_a_deposed_leaders_is_not_carried_out(
    h: Harness, tmp_path: Path
) -> None:
    """A successor's term marker came before the request: no reader applies it, so no
    worker restarts anything, no answer is kept, and the caller is sent to the new leader."""
    events = tmp_path / "events.jsonl"
    worker = _runs_it(h, events, failing=True)
    leader = _leader(State.FAILED, worker)
    leader.log.next_term, leader.log.marker_before = 1, 0
    with request_answer.scope(_pending_answer()), pytest.raises(NotLeaderError):
        leader.restart_connector(ONLY_FAILED)
    assert "connect-grpc-request-r-1" not in leader.snapshot().extensions
    worker.reconciler.reconcile()
    worker.reconciler.reconcile()
    assert _starts(events) == 1
