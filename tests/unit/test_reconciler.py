"""The reconciler of a cluster worker (herder/reconciler.py) over the synchronous runtime
stand-in: a config-topic view and an assignment in, instance starts and stops out."""

from __future__ import annotations

import contextlib
import random
import threading
import time
from collections.abc import Iterator, Mapping

import pytest

from connect_grpc.cluster.assignment import WorkerAssignment
from connect_grpc.cluster.extension_records import ASSIGNMENT_KEY, AssignmentRecord, assignment_in
from connect_grpc.connectors.plugins import Plugins
from connect_grpc.herder import reconciler as reconciler_module
from connect_grpc.herder.reconciler import Reconciler
from connect_grpc.herder.status import StatusBoard
from connect_grpc.kernel import deadline
from connect_grpc.kernel.domain import (
    ConnectorStatus,
    ConnectorType,
    RestartRequest,
    State,
    TargetState,
    TaskId,
)
from connect_grpc.kernel.errors import UnavailableError
from connect_grpc.storage.config_codec import (
    RawRecord,
    connector_config_records,
    extension_record,
    removal_records,
    target_state_records,
    task_config_records,
)
from connect_grpc.storage.config_snapshot import ConfigSnapshot, SnapshotBuilder, apply_record
from tests.unit.fake_worker import FakeWorker

ME = "w1"
NAME = "seq"
CONFIG = {"connector.class": "SequenceSource", "topic": "t", "tasks.max": "2", "name": NAME}
T0, T1 = TaskId(NAME, 0), TaskId(NAME, 1)


class FakeStatuses:
    """What the reconciler asks of the status store besides the board."""

    def __init__(self) -> None:
        self.deleted: list[TaskId] = []
        self.generation = 0

    def delete_task(self, task: TaskId) -> None:
        self.deleted.append(task)

    def set_generation(self, generation: int) -> None:
        self.generation = generation


class View:
    """The config topic as the reconciler sees it: records applied in order, one snapshot
    object until the next write (as the config store keeps it)."""

    def __init__(self) -> None:
        self.builder = SnapshotBuilder()
        self._snapshot: ConfigSnapshot | None = None

    def write(self, records: list[RawRecord]) -> None:
        for key, value in records:
            apply_record(self.builder, key.decode(), value)
        self._snapshot = None

    def assign(self, generation: int, **workers: WorkerAssignment) -> None:
        record = AssignmentRecord(generation, ME, workers)
        self.write([extension_record(ASSIGNMENT_KEY, record.to_json())])

    def snapshot(self) -> ConfigSnapshot:
        if self._snapshot is None:
            self._snapshot = self.builder.build()
        return self._snapshot


class Harness:
    def __init__(self) -> None:
        self.view = View()
        self.board = StatusBoard(ME)
        self.worker = FakeWorker(self.board, Plugins(), worker_id=ME)
        self.statuses = FakeStatuses()
        self.submitted: list[tuple[str, list[dict[str, str]]]] = []
        self.confirmed: list[int] = []
        self.confirm_fails = False
        self.submit_refusals: list[UnavailableError] = []
        self.reconciler = Reconciler(
            ME,
            self.worker,
            self.board,
            self.statuses,  # type: ignore[arg-type]  # the two methods it uses
            snapshot=self.view.snapshot,
            connector_status=self.status,
            submit_task_configs=self.submit,
            confirm=self.confirm,
            stopping=threading.Event(),
        )

    def status(self, name: str) -> ConnectorStatus:
        count = len(self.view.snapshot().task_configs(name))
        return self.board.connector_status(name, count, ConnectorType.SOURCE)

    def submit(self, name: str, configs: list[dict[str, str]]) -> None:
        if self.submit_refusals:
            raise self.submit_refusals.pop()
        self.submitted.append((name, configs))

    def confirm(self, generation: int) -> None:
        if self.confirm_fails:
            raise UnavailableError("Kafka is away", 1.0)
        self.confirmed.append(generation)

    def task_configs(self, extra: Mapping[str, str] | None = None) -> list[dict[str, str]]:
        return [{**CONFIG, "task.id": str(n), **(extra or {})} for n in range(2)]


@pytest.fixture
def h() -> Harness:
    harness = Harness()
    harness.view.write(connector_config_records(NAME, CONFIG, TargetState.STARTED))
    return harness


def test_runs_only_what_the_assignment_gives_it(h: Harness) -> None:
    h.view.assign(1, w2=WorkerAssignment.of([NAME]))
    h.reconciler.reconcile()
    assert h.worker.connector_names() == set()
    assert h.confirmed == [1]


def test_starts_its_connector_and_hands_its_task_configs_to_the_leader(h: Harness) -> None:
    h.view.assign(1, w1=WorkerAssignment.of([NAME]))
    h.reconciler.reconcile()
    assert h.worker.connector_running(NAME)
    assert [name for name, _ in h.submitted] == [NAME]
    assert len(h.submitted[0][1]) == 2
    assert h.confirmed == [1] and h.statuses.generation == 1


def test_starts_its_tasks_once_committed_and_follows_the_target_state(h: Harness) -> None:
    h.view.write(task_config_records(NAME, h.task_configs()))
    h.view.assign(2, w1=WorkerAssignment.of([], [T0, T1]))
    h.reconciler.reconcile()
    assert h.worker.task_ids() == {T0, T1}
    h.view.write(target_state_records(NAME, TargetState.PAUSED))
    h.reconciler.reconcile()
    assert h.worker.tasks == {T0: TargetState.PAUSED, T1: TargetState.PAUSED}
    assert h.worker.task_starts == [T0, T1]  # paused in place, not restarted


def test_a_new_connector_config_alone_does_not_restart_the_tasks(h: Harness) -> None:
    h.view.write(task_config_records(NAME, h.task_configs()))
    h.view.assign(2, w1=WorkerAssignment.of([NAME], [T0, T1]))
    h.reconciler.reconcile()
    starts = list(h.worker.task_starts)
    h.view.write(connector_config_records(NAME, {**CONFIG, "sequence.start": "5"}))
    h.reconciler.reconcile()
    assert h.worker.task_starts == starts
    assert h.worker.connector_stops == [(NAME, False)]  # the connector restarted with it


def test_replaced_task_configs_restart_the_tasks_and_drop_their_statuses(h: Harness) -> None:
    h.view.write(task_config_records(NAME, h.task_configs()))
    h.view.assign(2, w1=WorkerAssignment.of([], [T0, T1]))
    h.reconciler.reconcile()
    h.view.write(task_config_records(NAME, h.task_configs({"x": "y"})[:1]))
    h.view.assign(3, w1=WorkerAssignment.of([], [T0]))
    h.reconciler.reconcile()
    assert sorted(h.worker.task_stops) == [(T0, False), (T1, False)]
    assert sorted(h.statuses.deleted) == [T0, T1]
    assert h.worker.task_ids() == {T0}
    assert h.worker.task_starts.count(T0) == 2
    # each start is given its generation's task count (a Java task's Kafka worker checks it
    # against tasks.max), not the task's number + 1
    assert h.worker.task_counts == [2, 2, 1]


def test_a_moved_task_stops_here_and_keeps_its_status(h: Harness) -> None:
    h.view.write(task_config_records(NAME, h.task_configs()))
    h.view.assign(2, w1=WorkerAssignment.of([], [T0, T1]))
    h.reconciler.reconcile()
    h.view.assign(3, w1=WorkerAssignment.of([], [T0]), w2=WorkerAssignment.of([], [T1]))
    h.reconciler.reconcile()
    assert h.worker.task_stops == [(T1, False)]
    assert h.statuses.deleted == []
    assert h.confirmed == [2, 3]


@pytest.mark.parametrize("cut", [1, 2])
def test_a_stopped_connector_runs_no_task_even_before_its_task_configs_are_emptied(
    h: Harness, cut: int
) -> None:
    """A stop is the target state, then empty task configs (a stop written without a
    transaction may be cut short after the first): either way its tasks stop here and
    their statuses go, as KIP-875's STOPPED shows no task."""
    h.view.write(task_config_records(NAME, h.task_configs()))
    h.view.assign(2, w1=WorkerAssignment.of([NAME], [T0, T1]))
    h.reconciler.reconcile()
    stop = target_state_records(NAME, TargetState.STOPPED) + task_config_records(NAME, [])
    h.view.write(stop[:cut])
    h.reconciler.reconcile()
    assert sorted(h.worker.task_stops) == [(T0, False), (T1, False)]
    assert sorted(h.statuses.deleted) == [T0, T1]
    assert h.worker.task_ids() == set()
    h.reconciler.reconcile()
    assert h.worker.task_starts == [T0, T1]  # not started again while STOPPED


def test_a_stopped_connectors_new_config_waits_until_it_leaves_stopped(h: Harness) -> None:
    """Making a STOPPED instance again would run nothing and report the same STOPPED: a
    new config is taken when the connector is resumed (or restarted by a request)."""
    h.view.write(target_state_records(NAME, TargetState.STOPPED))
    h.view.assign(2, w1=WorkerAssignment.of([NAME]))
    h.reconciler.reconcile()
    instance = h.worker.connectors[NAME]
    for start in ("5", "6"):
        h.view.write(connector_config_records(NAME, {**CONFIG, "sequence.start": start}))
        h.reconciler.reconcile()
    assert h.worker.connectors[NAME] is instance  # not made again
    assert h.worker.connector_stops == [] and h.submitted == []
    h.view.write(target_state_records(NAME, TargetState.STARTED))
    h.reconciler.reconcile()
    assert h.worker.connectors[NAME] is not instance
    assert h.worker.connectors[NAME].config["sequence.start"] == "6"
    assert h.worker.connector_running(NAME)
    assert [configs[0]["sequence.start"] for _, configs in h.submitted] == ["6"]
    # a running connector still restarts with a new config, as in Kafka Connect
    h.view.write(connector_config_records(NAME, {**CONFIG, "sequence.start": "7"}))
    h.reconciler.reconcile()
    assert h.worker.connector_stops == [(NAME, False)]
    assert h.worker.connectors[NAME].config["sequence.start"] == "7"


def test_a_stopped_connector_resumed_with_its_config_unchanged_keeps_its_instance(
    h: Harness,
) -> None:
    h.view.write(target_state_records(NAME, TargetState.STOPPED))
    h.view.assign(2, w1=WorkerAssignment.of([NAME]))
    h.reconciler.reconcile()
    instance = h.worker.connectors[NAME]
    h.view.write(target_state_records(NAME, TargetState.PAUSED))
    h.reconciler.reconcile()
    assert h.worker.connectors[NAME] is instance


@pytest.mark.parametrize("cut", range(1, len(removal_records(NAME, 2)) + 1))
def test_a_deleted_connector_is_told_so_everywhere(h: Harness, cut: int) -> None:
    """Whatever part of the removal was written after its tombstone (a removal cut short,
    or a round between its records)."""
    h.view.write(task_config_records(NAME, h.task_configs()))
    h.view.assign(2, w1=WorkerAssignment.of([NAME], [T0, T1]))
    h.reconciler.reconcile()
    h.view.write(removal_records(NAME, 2)[:cut])
    h.reconciler.reconcile()
    assert sorted(h.worker.task_stops) == [(T0, True), (T1, True)]
    assert h.worker.connector_stops == [(NAME, True)]
    assert h.worker.connector_names() == set() and h.worker.task_ids() == set()


def test_a_restart_request_restarts_the_instances_it_runs(h: Harness) -> None:
    h.view.write(task_config_records(NAME, h.task_configs()))
    h.view.assign(2, w1=WorkerAssignment.of([NAME], [T0]), w2=WorkerAssignment.of([], [T1]))
    h.reconciler.reconcile()
    h.reconciler.queue_restart(RestartRequest(NAME, include_tasks=True, only_failed=False))
    h.reconciler.reconcile()  # stops them and shows RESTARTING
    assert h.board.task(T0).state is State.RESTARTING
    assert h.worker.task_stops == [(T0, False)]  # not T1: another worker runs it
    h.reconciler.reconcile()  # starts them again
    assert h.worker.task_starts.count(T0) == 2
    assert h.board.task(T0).state is State.RUNNING
    assert h.worker.connector_running(NAME)


def test_of_several_restart_requests_for_a_connector_the_most_impactful_is_carried_out_once(
    h: Harness,
) -> None:
    h.view.write(task_config_records(NAME, h.task_configs()))
    h.view.assign(2, w1=WorkerAssignment.of([NAME], [T0, T1]))
    h.reconciler.reconcile()
    for include_tasks, only_failed in [(False, True), (True, False), (False, False)]:
        h.reconciler.queue_restart(RestartRequest(NAME, include_tasks, only_failed))
    h.reconciler.reconcile()  # stops what the include_tasks request chose, once
    assert h.worker.task_stops == [(T0, False), (T1, False)]
    assert h.worker.connector_stops == [(NAME, False)]
    h.reconciler.reconcile()
    assert h.worker.task_starts.count(T0) == h.worker.task_starts.count(T1) == 2


def test_a_restart_requests_impact_is_ranked_as_kafka_connects() -> None:
    ranks = [RestartRequest(NAME, include_tasks, only_failed).impact
             for include_tasks, only_failed in [(False, True), (True, True), (False, False),
                                                (True, False)]]
    assert ranks == [0, 1, 2, 3]


def test_an_unconfirmed_generation_is_confirmed_again_next_round(h: Harness) -> None:
    h.view.assign(1, w1=WorkerAssignment.of([NAME]))
    h.confirm_fails = True
    with pytest.raises(UnavailableError):
        h.reconciler.reconcile()
    h.confirm_fails = False
    h.reconciler.reconcile()
    assert h.confirmed == [1]


@contextlib.contextmanager
def reconciler_thread(h: Harness) -> Iterator[None]:
    """The reconciler's own thread runs while the block does."""
    stopping = h.reconciler._stopping
    stopping.clear()
    thread = threading.Thread(target=h.reconciler.run, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stopping.set()
        thread.join(5)


def test_a_plain_task_restart_gives_the_task_its_generations_count(h: Harness) -> None:
    h.view.write(task_config_records(NAME, h.task_configs()))
    h.view.assign(2, w1=WorkerAssignment.of([], [T0, T1]))
    h.reconciler.reconcile()
    with reconciler_thread(h):
        h.reconciler.restart_task(T1)
    assert h.worker.task_starts == [T0, T1, T1]
    assert h.worker.task_counts == [2, 2, 2]


def test_plain_restart_of_an_instance_not_running_here_is_unavailable(h: Harness) -> None:
    with reconciler_thread(h):
        with pytest.raises(UnavailableError, match="not running on this worker"):
            h.reconciler.restart_task(T0)
        with pytest.raises(UnavailableError, match="not running on this worker"):
            h.reconciler.restart_connector(NAME)


def test_a_plain_restart_asked_while_a_restart_request_has_the_instance_down_waits_for_it(
    h: Harness,
) -> None:
    """The CI failure of stop 32: a plain restart that reached the connector's worker
    between the round that stopped the instance for a flagged restart and the round that
    started it again was refused with UNAVAILABLE."""
    h.view.assign(1, w1=WorkerAssignment.of([NAME]))
    h.reconciler.reconcile()
    h.reconciler.queue_restart(RestartRequest(NAME, include_tasks=True, only_failed=False))
    h.reconciler.reconcile()  # stops the connector instance and shows RESTARTING
    assert not h.worker.connector_running(NAME)
    with reconciler_thread(h):
        h.reconciler.restart_connector(NAME)
    assert h.worker.connector_stops == [(NAME, False), (NAME, False)]
    assert h.worker.connector_running(NAME)
    assert h.board.connector(NAME).state is State.RUNNING


def test_a_plain_restart_drained_by_the_round_that_carries_out_a_restart_request_waits_for_the_next(
    h: Harness,
) -> None:
    """The CI failure at f265b26: the plain restart was carried out right after the round
    whose restart request stopped the instance, before the next round started it again."""
    h.view.assign(1, w1=WorkerAssignment.of([NAME]))
    h.reconciler.reconcile()
    outcome: list[BaseException | None] = []

    def ask() -> None:
        try:
            h.reconciler.restart_connector(NAME)
        except BaseException as exc:
            outcome.append(exc)
        else:
            outcome.append(None)

    asker = threading.Thread(target=ask)
    asker.start()
    while h.reconciler._plain_restarts.empty():
        time.sleep(0.001)
    h.reconciler.queue_restart(RestartRequest(NAME, include_tasks=True, only_failed=False))
    h.reconciler.reconcile()  # the request stops the instance; the plain restart waits
    assert not h.worker.connector_running(NAME)
    assert outcome == []
    h.reconciler.reconcile()  # starts it again, then restarts it as asked
    asker.join(5)
    assert outcome == [None]
    assert h.worker.connector_stops == [(NAME, False), (NAME, False)]
    assert h.worker.connector_running(NAME)


def test_a_plain_restart_not_begun_within_the_deadline_is_unavailable_and_never_runs(
    h: Harness,
) -> None:
    h.view.assign(1, w1=WorkerAssignment.of([NAME]))
    h.reconciler.reconcile()
    with deadline.scope(0.4), pytest.raises(UnavailableError, match="not begun within"):
        h.reconciler.restart_connector(NAME)  # no thread carries it out
    h.reconciler.reconcile()
    assert h.worker.connector_stops == []


def test_plain_restarts_waiting_when_the_thread_ends_are_refused(h: Harness) -> None:
    h.reconciler._stopping.set()
    h.reconciler.run()  # ends at once, as a stopping worker's thread does
    outcome: list[BaseException] = []

    def ask() -> None:
        try:
            h.reconciler.restart_connector(NAME)
        except UnavailableError as exc:
            outcome.append(exc)

    asker = threading.Thread(target=ask)
    asker.start()
    time.sleep(0.2)
    h.reconciler.run()
    asker.join(5)
    assert [str(exc.message) for exc in outcome] == ["this worker is stopping; retry"]


def test_a_tick_on_an_unchanged_view_walks_nothing_until_something_changes(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    rounds: list[int] = []

    def counted(snapshot: ConfigSnapshot) -> AssignmentRecord:
        rounds.append(1)
        return assignment_in(snapshot)

    monkeypatch.setattr(reconciler_module, "assignment_in", counted)
    h.view.write(task_config_records(NAME, h.task_configs()))
    h.view.assign(1, w1=WorkerAssignment.of([NAME], [T0, T1]))
    h.reconciler.reconcile()
    h.reconciler.reconcile()
    h.reconciler.reconcile()
    assert len(rounds) == 1 and h.worker.task_starts == [T0, T1]
    h.view.write(target_state_records(NAME, TargetState.PAUSED))
    h.reconciler.reconcile()
    assert len(rounds) == 2 and h.worker.tasks == {T0: TargetState.PAUSED, T1: TargetState.PAUSED}
    h.reconciler.request_regeneration(NAME)
    h.reconciler.reconcile()
    h.reconciler.reconcile()
    assert len(rounds) == 3


def test_task_configs_not_handed_over_are_offered_again_on_an_unchanged_view(h: Harness) -> None:
    h.submit_refusals.append(UnavailableError("no leader to send task configs to", 1.0))
    h.view.assign(1, w1=WorkerAssignment.of([NAME]))
    h.reconciler.reconcile()
    assert h.submitted == []
    h.reconciler.reconcile()
    assert [name for name, _ in h.submitted] == [NAME]


# --- rounds that look only at what changed (issue 25) -----------------------------------


def _outcome(h: Harness) -> tuple[object, ...]:
    """What the reconciler did and holds, every history sorted (a round that looks only at
    the changed connectors may take them in another order than a full one)."""
    return (
        {name: instance.started for name, instance in h.worker.connectors.items()},
        dict(h.worker.tasks),
        sorted(h.worker.task_starts),
        sorted(h.worker.task_stops),
        sorted(h.worker.connector_stops),
        sorted(h.statuses.deleted),
        sorted((name, str(configs)) for name, configs in h.submitted),
        h.confirmed,
        dict(h.reconciler._running_connectors),
        dict(h.reconciler._running_tasks),
    )


class RandomChanges:
    """Random config-topic writes, assignments and requests, given to two harnesses alike."""

    NAMES = ("a", "b", "c", "d")

    def __init__(self, seed: int, *harnesses: Harness) -> None:
        self.rng = random.Random(seed)
        self.harnesses = harnesses
        self.generation = 0
        #: A restart request is queued and no round ran since (the fake runtime, unlike the
        #: real one, refuses to stop a connector twice, as two requests in a round would).
        self.restart_queued = False

    def write(self, records: list[RawRecord]) -> None:
        for h in self.harnesses:
            h.view.write(records)

    def step(self) -> None:
        rng, name = self.rng, self.rng.choice(self.NAMES)
        kind = rng.randrange(8)
        if kind == 0:
            config = {**CONFIG, "name": name, "tasks.max": str(rng.randint(1, 3)),
                      "sequence.start": str(rng.randint(0, 1))}
            state = rng.choice([None, *TargetState])
            self.write(connector_config_records(name, config, state))
        elif kind == 1:
            configs = [{**CONFIG, "task.id": str(n), "v": str(rng.randint(0, 1))}
                       for n in range(rng.randint(0, 3))]
            self.write(task_config_records(name, configs))
        elif kind == 2:
            self.write(target_state_records(name, rng.choice(list(TargetState))))
        elif kind == 3:
            removal = removal_records(name, 3)
            self.write(removal[: rng.randint(1, len(removal))])
        elif kind == 4:
            self.assign()
        elif kind == 5 and self.harnesses[0].submitted:
            submitted, configs = self.harnesses[0].submitted[-1]
            self.write(task_config_records(submitted, configs))
        elif kind == 6:
            for h in self.harnesses:
                h.reconciler.request_regeneration(name)
        elif not self.restart_queued:
            self.restart_queued = True
            request = RestartRequest(name, include_tasks=rng.random() < 0.5)
            for h in self.harnesses:
                h.reconciler.queue_restart(request)

    def assign(self) -> None:
        """Each existing connector and task to this worker or another, at random."""
        shares: dict[str, tuple[list[str], list[TaskId]]] = {ME: ([], []), "w2": ([], [])}
        snapshot = self.harnesses[0].view.snapshot()
        for name in snapshot.connectors:
            shares[self.rng.choice([ME, "w2"])][0].append(name)
            for n in range(len(snapshot.task_configs(name))):
                shares[self.rng.choice([ME, "w2"])][1].append(TaskId(name, n))
        self.generation += 1
        workers = {w: WorkerAssignment.of(c, t) for w, (c, t) in shares.items()}
        for h in self.harnesses:
            h.view.assign(self.generation, **workers)


@pytest.mark.parametrize("seed", range(6))
def test_rounds_on_the_changes_alone_do_what_full_rounds_do(seed: int) -> None:
    looking_at_changes, full = Harness(), Harness()
    changes = RandomChanges(seed, looking_at_changes, full)
    for _ in range(150):
        changes.step()
        if changes.rng.random() < 0.6:
            looking_at_changes.reconciler.reconcile()
            full.reconciler.wake_in_full()
            full.reconciler.reconcile()
            changes.restart_queued = False
            assert _outcome(looking_at_changes) == _outcome(full)
    assert looking_at_changes.worker.task_starts and looking_at_changes.worker.connector_stops


def test_a_round_after_a_change_looks_at_the_changed_connector_alone(h: Harness) -> None:
    others = [f"other-{n}" for n in range(3)]
    for name in others:
        h.view.write(connector_config_records(name, {**CONFIG, "name": name}))
    h.view.write(task_config_records(NAME, h.task_configs()))
    h.view.assign(1, w1=WorkerAssignment.of([NAME, *others], [T0, T1]))
    h.reconciler.reconcile()
    looked_at: list[str] = []
    real = h.view.snapshot

    class Watched:
        def __init__(self, snapshot: ConfigSnapshot) -> None:
            self._snapshot = snapshot

        def __getattr__(self, attribute: str) -> object:
            return getattr(self._snapshot, attribute)

        def target_state(self, name: str) -> TargetState | None:
            looked_at.append(name)
            return self._snapshot.target_state(name)

    h.view.write(target_state_records(NAME, TargetState.PAUSED))
    h.reconciler._snapshot = lambda: Watched(real())  # type: ignore[assignment, return-value]
    h.reconciler.reconcile()
    assert set(looked_at) == {NAME}
    assert h.worker.tasks == {T0: TargetState.PAUSED, T1: TargetState.PAUSED}


def test_an_assignment_that_gives_an_instance_wakes_a_round_that_does_not_settle(
    h: Harness,
) -> None:
    """One record, written alone: the round need not wait for more, so a worker given a new
    connector starts it (and shows its status) that much sooner."""
    h.view.write(connector_config_records(NAME, CONFIG, TargetState.STOPPED))
    h.view.assign(1, **{ME: WorkerAssignment.of([NAME])})
    h.reconciler.wake_for_assignment()
    assert h.reconciler._wake.is_set() and h.reconciler._hurry.is_set()


def test_an_assignment_that_only_takes_instances_away_settles_as_any_change(
    h: Harness,
) -> None:
    """It follows a deletion or a move, whose caller's answer goes out first."""
    h.view.write(connector_config_records(NAME, CONFIG, TargetState.STOPPED))
    h.view.assign(1, **{ME: WorkerAssignment.of([NAME])})
    h.reconciler.reconcile()
    h.reconciler._wake.clear()
    h.view.assign(2, **{ME: WorkerAssignment.of()})
    h.reconciler.wake_for_assignment()
    assert h.reconciler._wake.is_set() and not h.reconciler._hurry.is_set()
