"""The auto-restart policy on a cluster, without a broker: the leader's decider
(``leader_auto_restarter``) writes each connector's progress to a real KafkaConfigStore over
a log that applies each record as it is sent, through a real LeaderWriter's unfenced,
term-stamped write. Shown here: every worker shows the progress and a new leader continues
from it, the healthy period's start included; a record a deposed leader writes after its
successor's term marker is ignored by every reader, so the new leader never continues from
it; the progress of a connector deleted while no leader knew it is removed; and a leader's
memory serves one term."""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from typing import Any, cast

import structlog

from connect_grpc.herder.auto_restart import AutoRestarter
from connect_grpc.herder.auto_restart_policy import RESTART_UNSEEN_MS, config_digest
from connect_grpc.herder.distributed_view import ClusterView
from connect_grpc.herder.leader_auto_restart import leader_auto_restarter, shown_progress
from connect_grpc.herder.leader_loop import LeaderLoop
from connect_grpc.herder.leader_writer import LeaderWriter
from connect_grpc.kernel.domain import (
    AutoRestartStatus,
    ConnectorStatus,
    ConnectorType,
    InstanceStatus,
    RestartRequest,
    State,
    TargetState,
    TaskStatus,
)
from connect_grpc.kernel.errors import NotLeaderError, UnavailableError
from connect_grpc.storage.config_codec import (
    RawRecord,
    carried_records,
    connector_config_records,
    extension_record,
    restart_records,
    term_marker_record,
)
from tests.unit.config_log_fakes import AppliedLog, applied_store

NAME = "c"
KEY = f"connect-grpc-auto-restart-{NAME}".encode()
CONFIG = {
    "connector.class": "connect_grpc.testing.plugins.InstrumentedSourceConnector",
    "tasks.max": "1", "auto.restart.enabled": "true", "auto.restart.backoff.min.ms": "100",
    "auto.restart.backoff.max.ms": "1000", "auto.restart.reset.after.ms": "1000",
}
#: The first restart's time: every time below is after it.
T0 = 1_700_000_000_000


def _status(task: State, revision: int) -> ConnectorStatus:
    return ConnectorStatus(
        NAME, InstanceStatus(State.RUNNING, "w2", revision=1),
        (TaskStatus(0, InstanceStatus(task, "w2", revision=revision)),), ConnectorType.SOURCE,
    )


class _Election:
    """The election as a leader that has not seen its deposal sees it: still leading."""

    def is_leader(self) -> bool:
        return True


class _Office(LeaderWriter):
    """A leader's writer in office for ``term``; its next ``failing`` writes time out."""

    def __init__(self, view: ClusterView, term: int) -> None:
        super().__init__(
            view, cast(Any, _Election()), threading.Event(), structlog.get_logger(), client={},
            cluster=cast(Any, None), worker_id=f"leader-{term}",
            refuse_while_kafka_unreachable=lambda: None,
        )
        self.term = term
        self.failing = 0

    def office_term(self) -> int:
        return self.term

    def write_in_term(self, records: list[RawRecord], answer: RawRecord | None, *,
                      wake_leader: bool = False, change_index: int = -1,
                      carried: Sequence[RawRecord] = ()) -> None:
        if self.failing:
            self.failing -= 1
            raise UnavailableError("the write timed out", 1.0)
        super().write_in_term(records, answer, wake_leader=wake_leader,
                              change_index=change_index, carried=carried)

    def not_leader(self) -> NotLeaderError:
        return NotLeaderError("deposed")


class Cluster:
    """A config topic with the connector in it, read by one store (every worker's view is
    built the same way), and the leaders that take office over it."""

    def __init__(self) -> None:
        self.store, self.log = applied_store()
        self.view = ClusterView(self.store, cast(Any, None))
        self.status = _status(State.FAILED, 1)
        self.now = T0
        self.asked: list[RestartRequest] = []
        self.log.send_all(connector_config_records(NAME, CONFIG, TargetState.STARTED))

    def take_office(self, term: int) -> AutoRestarter:
        """A new leader's term marker, then its decider."""
        self.log.send_all([term_marker_record(term)])
        return self.decider(_Office(self.view, term))

    def decider(self, office: _Office) -> AutoRestarter:
        def restart(request: RestartRequest, *, carried: Sequence[RawRecord] = ()) -> None:
            # what the mutations' flagged restart writes: the request, carrying the progress
            office.write_in_term(restart_records(request), None, change_index=0,
                                 carried=carried)
            self.asked.append(request)

        return leader_auto_restarter(
            self.view, office, lambda _: self.status, restart,
            structlog.get_logger(), clock_ms=lambda: self.now,
        )

    def shown(self) -> AutoRestartStatus | None:
        """What any worker's status shows."""
        return shown_progress(self.store.snapshot(), NAME, CONFIG)

    def progress_records(self) -> list[Any]:
        """The records that write the progress: its own, or a restart request carrying it."""
        return [record for record in self.log.records
                if record.key == KEY or any(key == KEY.decode()
                                            for key, _ in carried_records(record))]


def test_the_progress_is_written_in_the_leaders_term_and_every_worker_shows_it() -> None:
    cluster = Cluster()
    leader = cluster.take_office(1)
    leader.tick()
    assert cluster.asked == [RestartRequest(NAME, include_tasks=True, only_failed=True)]
    assert cluster.shown() == AutoRestartStatus(1, 0, T0, False)
    [record] = cluster.progress_records()
    assert dict(record.headers or ())["connect-grpc-term"] == b"1"
    # another config: the written progress is not this config's; no policy: none shown
    snapshot = cluster.store.snapshot()
    assert shown_progress(snapshot, NAME, {**CONFIG, "x": "y"}) == AutoRestartStatus()
    assert shown_progress(snapshot, NAME, {}) is None


def test_a_deposed_leaders_progress_is_ignored_and_the_next_leader_continues_from_its_term(
) -> None:
    cluster = Cluster()
    deposed = cluster.take_office(1)
    deposed.tick()  # the first failure: restarted at once, count 1
    written_in_term = cluster.shown()
    assert written_in_term == AutoRestartStatus(1, 0, T0, False)

    cluster.log.send_all([term_marker_record(2)])  # a successor took office
    # the deposed leader, which has not seen it, goes on: the restart failed again, the
    # next attempt is due at once after the back-off, and it counts a second restart
    cluster.status = _status(State.FAILED, 2)
    cluster.now = T0 + 10
    deposed.tick()
    cluster.now = T0 + 10 + 200
    deposed.tick()
    # its restart's request, carrying the second count, is refused with it: the deposed
    # leader keeps no memory of a restart it could not make
    assert deposed.status_of(NAME) is None
    stale = cluster.progress_records()[1:]
    assert len(stale) == 2  # written after the marker, stamped with the ended term
    assert all(dict(r.headers or ())["connect-grpc-term"] == b"1" for r in stale)
    assert [r.key for r in stale] == [KEY, b"restart-connector-c"]
    assert cluster.store.refused(stale)
    assert cluster.shown() == written_in_term  # what every worker shows

    # the successor continues from the last progress written in a leader's term: one
    # restart made, which that record says was asked for task 0; revisions being each
    # view's own, the successor cannot tell the failure it sees from the one that restart
    # was for, and waits for the restart as long as its asker would have
    successor = cluster.decider(_Office(cluster.view, 2))
    cluster.now = T0 + 300
    successor.tick()
    assert successor.status_of(NAME) == AutoRestartStatus(1, 0, T0, False)
    assert len(cluster.asked) == 1
    # then the failure counts, due after one restart's back-off
    cluster.now = T0 + RESTART_UNSEEN_MS
    successor.tick()
    due = T0 + RESTART_UNSEEN_MS + 200
    assert successor.status_of(NAME) == AutoRestartStatus(1, due, T0, False)
    assert cluster.shown() == AutoRestartStatus(1, due, T0, False)


def test_a_stale_term_record_is_not_applied_by_any_reader() -> None:
    """The reader's side alone: a progress record stamped with a term a later marker ended
    changes nothing, one stamped with the current term does."""
    store, log = applied_store()
    log.send_all(connector_config_records(NAME, CONFIG, TargetState.STARTED))
    log.send_all([term_marker_record(3)])
    ours = {"config": config_digest(CONFIG), "count": 4, "next_attempt_ms": 0, "last_restart_ms": 7,
            "gave_up": False}
    store.send_in_term([extension_record(KEY.decode(), ours)], 3, 1.0)
    stale = store.send_in_term(
        [extension_record(KEY.decode(), {**ours, "count": 9, "gave_up": True})], 2, 1.0)
    assert store.refused(stale)
    assert shown_progress(store.snapshot(), NAME, CONFIG) == AutoRestartStatus(4, 0, 7, False)


def test_the_healthy_period_runs_on_across_a_new_leader() -> None:
    """The count resets ``auto.restart.reset.after.ms`` after the connector became healthy
    under the first leader, not that long after the next one took office."""
    cluster = Cluster()
    first = cluster.take_office(1)
    first.tick()
    cluster.status = _status(State.RUNNING, 2)  # the restart worked
    cluster.now = T0 + 100
    first.tick()
    written = cluster.store.snapshot().extensions[KEY.decode()]
    assert written["healthy_since_ms"] == T0 + 100

    cluster.now = T0 + 700
    second = cluster.take_office(2)
    second.tick()
    assert second.status_of(NAME) == AutoRestartStatus(1, 0, T0, False)
    cluster.now = T0 + 1100  # the period, from when the first leader saw it healthy
    second.tick()
    assert second.status_of(NAME) == AutoRestartStatus(0, 0, 0, False)
    assert cluster.shown() == AutoRestartStatus()
    assert "healthy_since_ms" not in cluster.store.snapshot().extensions[KEY.decode()]


def test_a_write_that_failed_is_made_again_at_the_next_look() -> None:
    cluster = Cluster()
    cluster.log.send_all([term_marker_record(1)])
    office = _Office(cluster.view, 1)
    leader = cluster.decider(office)
    office.failing = 1
    leader.tick()  # the restart's request timed out (it did not land): taken as made
    assert cluster.shown() == AutoRestartStatus()
    leader.tick()  # its progress, written alone
    assert cluster.shown() == AutoRestartStatus(1, 0, T0, False)
    assert cluster.asked == []
    cluster.now = T0 + RESTART_UNSEEN_MS  # never shown: the failure counts again
    office.failing = 1
    leader.tick()  # that progress could not be written
    assert cluster.shown() == AutoRestartStatus(1, 0, T0, False)
    leader.tick()
    due = T0 + RESTART_UNSEEN_MS + 200
    assert cluster.shown() == AutoRestartStatus(1, due, T0, False)
    cluster.now = due
    leader.tick()
    assert len(cluster.asked) == 1
    assert cluster.shown() == AutoRestartStatus(2, 0, due, False)


def test_the_progress_of_a_connector_no_leader_knew_deleted_is_removed() -> None:
    cluster = Cluster()
    orphan = "connect-grpc-auto-restart-gone"
    cluster.store.send_in_term([extension_record(orphan, {"count": 3})], 0, 1.0)
    assert orphan in cluster.store.snapshot().extensions
    cluster.take_office(1).tick()
    assert orphan not in cluster.store.snapshot().extensions
    assert KEY.decode() in cluster.store.snapshot().extensions


def test_the_deciders_memory_serves_one_term() -> None:
    """A leadership won again after another leader's term continues from the config topic,
    even when the loop never saw the deposal."""
    cluster = Cluster()
    office = _Office(cluster.view, 1)
    decider = cluster.decider(office)
    unused = cast(Any, None)
    loop = LeaderLoop(
        cluster.view, office, unused, cut_short=unused, assignment=unused, answers=unused,
        auto_restart=decider, cluster=unused, wake=threading.Event(),
        stopping=threading.Event(), log=structlog.get_logger(),
    )
    cluster.log.send_all([term_marker_record(1)])
    loop._look_at_auto_restarts(decider)
    assert decider.status_of(NAME) == AutoRestartStatus(1, 0, T0, False)
    # another leader's term came and went: its progress is what the topic holds now (five
    # restarts, the last one seen)
    cluster.log.send_all([term_marker_record(2)])
    theirs = {key: value for key, value in _written(cluster.log).items()
              if key not in ("restart_awaited", "restart_asked_ms")}
    cluster.store.send_in_term(
        [extension_record(KEY.decode(), {**theirs, "count": 5})], 2, 1.0)
    cluster.log.send_all([term_marker_record(3)])
    office.term = 3
    loop._look_at_auto_restarts(decider)
    # five restarts, and the failure it sees is due after the fifth's back-off (the cap)
    assert decider.status_of(NAME) == AutoRestartStatus(5, T0 + 1000, T0, False)


def _written(log: AppliedLog) -> dict[str, Any]:
    [*_, last] = [value for record in log.records
                  for key, value in [((record.key or b"").decode(), record.value),
                                     *carried_records(record)]
                  if key == KEY.decode()]
    value: dict[str, Any] = json.loads(last or b"null")
    return value


def test_the_restart_and_the_progress_that_counts_it_are_one_record() -> None:
    """The request's record carries the progress: there is no moment at which one is in
    the config topic without the other, and a refused request takes the count with it."""
    cluster = Cluster()
    cluster.take_office(1).tick()
    [request] = [record for record in cluster.log.records
                 if record.key == b"restart-connector-c"]
    [(key, value)] = carried_records(request)
    assert key == KEY.decode()
    progress = json.loads(value or b"null")
    assert progress["count"] == 1
    assert progress["restart_awaited"] == [0]
    assert not [record for record in cluster.log.records if record.key == KEY]

    # a deposed leader's request is refused whole: no restart, no count
    cluster.log.send_all([term_marker_record(2)])
    cluster.status = _status(State.FAILED, 2)
    stale = cluster.decider(_Office(cluster.view, 1))
    cluster.now = T0 + RESTART_UNSEEN_MS + 1000
    stale.tick()
    stale.tick()
    assert cluster.store.refused(cluster.log.records[-1:])
    assert cluster.shown() == AutoRestartStatus(1, 0, T0, False)


def test_a_leader_that_dies_right_after_asking_is_not_restarted_twice() -> None:
    """The leader asks for the restart and dies before the status shows it: its successor
    finds the restart awaited in the same record, waits for it rather than asking again,
    and counts on from it once it shows."""
    cluster = Cluster()
    cluster.take_office(1).tick()  # asked, then the leader dies
    successor = cluster.take_office(2)
    cluster.now = T0 + 50
    successor.tick()  # the task is still FAILED as it was: the restart has not run yet
    assert len(cluster.asked) == 1
    assert successor.status_of(NAME) == AutoRestartStatus(1, 0, T0, False)
    cluster.status = _status(State.RUNNING, 2)  # the restart ran
    cluster.now = T0 + 100
    successor.tick()
    written = cluster.store.snapshot().extensions[KEY.decode()]
    assert "restart_awaited" not in written  # seen: no longer awaited
    assert written["count"] == 1
    cluster.status = _status(State.FAILED, 3)  # a new failure: restarted after 1 back-off
    cluster.now = T0 + 200
    successor.tick()
    cluster.now = T0 + 400
    successor.tick()
    assert len(cluster.asked) == 2
    assert successor.status_of(NAME) == AutoRestartStatus(2, 0, T0 + 400, False)


def test_a_progress_record_of_an_earlier_build_is_read() -> None:
    """A record without the awaited restart (written before the request carried it):
    nothing is awaited, the count goes on."""
    cluster = Cluster()
    cluster.log.send_all([term_marker_record(1)])
    earlier = {"config": config_digest(CONFIG), "count": 2, "next_attempt_ms": 0,
               "last_restart_ms": T0 - 5000, "gave_up": False}
    cluster.store.send_in_term([extension_record(KEY.decode(), earlier)], 1, 1.0)
    leader = cluster.decider(_Office(cluster.view, 1))
    leader.tick()  # the failure it sees is due after two restarts' back-off (600 ms)
    assert leader.status_of(NAME) == AutoRestartStatus(2, T0 + 600, T0 - 5000, False)
    assert not cluster.asked
