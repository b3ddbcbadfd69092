"""The reconciler: brings the connectors and tasks this worker runs in line with the config
topic and this worker's share of the published assignment (distributed mode).

One thread runs :meth:`Reconciler.run`; a round stops what is no longer wanted (a deleted
connector's instances are told so), starts what is, moves targets (pause, resume, stop),
hands the task configs of the connectors it runs to the leader, carries out restart
requests, and finally confirms the assignment's generation (the worker record), which lets
the leader move instances this worker gave up. The plain restarts of RestartConnector and
RestartTask run on this thread too, after a round that began once they were asked for (the
caller waits, within its deadline): an instance that a restart request or a move has just
stopped is running again by then, and no instance is stopped or started by two threads at
once (as Kafka Connect's herder carries out every change on its one thread).

A round runs when woken and on every tick; a tick finds nothing to do when the view is the
one the last round carried out in full and nothing was asked of the reconciler since
(a restart, task configs to generate again, a step to retry): it then returns at once
rather than walk every instance (at a thousand connectors a round costs milliseconds, twice
a second on every worker). A round after one that was carried out in full, with nothing
asked since, looks only at the connectors the view changed (config, task configs, target
state, or this worker's share of their instances): every config record wakes every
worker's reconciler, and a full round costs in proportion to the connectors a worker
knows, which at a thousand connectors outweighs the change itself.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import TypeVar

import structlog

from connect_grpc.cluster.assignment import EMPTY, WorkerAssignment
from connect_grpc.cluster.extension_records import AssignmentRecord, assignment_in
from connect_grpc.herder.framework_keys import tasks_max
from connect_grpc.herder.instance_rules import (
    ask_task_configs,
    restart_connector_instance,
    restart_task_instance,
    task_target,
    tasks_max_enforced,
)
from connect_grpc.herder.interface import WorkerRuntime
from connect_grpc.herder.restart import build_restart_plan
from connect_grpc.herder.status import StatusBoard
from connect_grpc.herder.ticker import run_ticks
from connect_grpc.kernel import deadline
from connect_grpc.kernel.domain import (
    ConnectorStatus,
    InstanceStatus,
    RestartRequest,
    State,
    TargetState,
    TaskId,
)
from connect_grpc.kernel.errors import ConnectError, UnavailableError
from connect_grpc.storage.config_snapshot import ConfigSnapshot
from connect_grpc.storage.kafka_status import KafkaStatusStore

log = structlog.get_logger(__name__)

#: How often a round runs without being woken.
TICK_S = 0.5
#: How long a woken round waits before it starts: the records of one write (a create's
#: target state, offsets version and config; task configs and their commit) make one
#: round, and a write's answer relayed through this worker, which arrives just after the
#: worker read the write, is sent before the round competes with it for the interpreter.
SETTLE_S = 0.005

K = TypeVar("K")
V = TypeVar("V")

#: The most a plain restart's caller waits for the reconciler's thread to carry it out.
PLAIN_RESTART_WAIT_S = 60.0

#: What a running task runs with: (connector config, task config, task target).
RunningTask = tuple[Mapping[str, str], Mapping[str, str], TargetState]
#: The connectors a round looks at; None: every one.
Scope = set[str] | None
#: A plain restart handed to the reconciler's thread, and where its outcome goes.
PlainRestart = tuple[Callable[[], None], "Future[None]"]


class Reconciler:
    """This worker's instances, reconciled to the view. Thread-safe."""

    def __init__(
        self,
        worker_id: str,
        worker: WorkerRuntime,
        board: StatusBoard,
        statuses: KafkaStatusStore,
        *,
        snapshot: Callable[[], ConfigSnapshot],
        connector_status: Callable[[str], ConnectorStatus],
        submit_task_configs: Callable[[str, list[dict[str, str]]], None],
        confirm: Callable[[int], None],
        stopping: threading.Event,
    ) -> None:
        """``submit_task_configs`` hands task configs to the leader (raises ConnectError
        when it could not: tried again next round); ``confirm`` writes the generation this
        worker has carried out."""
        self._id = worker_id
        self._worker = worker
        self._board = board
        self._statuses = statuses
        self._snapshot = snapshot
        self._connector_status = connector_status
        self._submit_task_configs = submit_task_configs
        self._confirm = confirm
        self._stopping = stopping
        self._wake = threading.Event()
        #: Set with a plain restart: its caller waits, so the round does not settle first.
        self._hurry = threading.Event()
        self._lock = threading.Lock()
        #: Restart requests read from the config topic since the store started.
        self._restarts: queue.SimpleQueue[RestartRequest] = queue.SimpleQueue()
        #: Plain restarts (RestartConnector without flags, RestartTask) asked for.
        self._plain_restarts: queue.SimpleQueue[PlainRestart] = queue.SimpleQueue()
        #: What each running instance runs with: connector → (config, target).
        self._running_connectors: dict[str, tuple[Mapping[str, str], TargetState]] = {}
        self._running_tasks: dict[TaskId, RunningTask] = {}
        #: Connectors whose task configs should be generated again.
        self._regenerate: set[str] = set()
        self._applied_generation = 0
        self._applied_count = 0
        #: Whether the current round stopped instances for a restart request.
        self._restarted_in_round = False
        #: The view the last round carried out with nothing left to retry (None: a round is
        #: due, in full); any request or failure clears it.
        self._settled: ConfigSnapshot | None = None
        #: This worker's share of the assignment in ``_settled``.
        self._settled_mine: WorkerAssignment = EMPTY
        self._log = log.bind(worker_id=worker_id)

    @property
    def applied_generation(self) -> int:
        """The generation of the last assignment this worker carried out (0: none yet)."""
        return self._applied_generation

    @property
    def completed_rebalances(self) -> int:
        """How many assignments (generations) this worker has carried out."""
        return self._applied_count

    def wake(self) -> None:
        """Runs a round soon (something in the view changed: the round looks at what did)."""
        self._wake.set()

    def wake_for_assignment(self) -> None:
        """A new assignment was read: a round at once, without the settling wait, when it
        gives this worker an instance it does not hold (one record, written alone: nothing
        to gather, and a new connector's worker starts it, and shows its status, that much
        sooner); else a round soon, as for any change (an assignment that only takes
        instances away follows a deletion or a move whose answer goes out first)."""
        mine = assignment_in(self._snapshot()).of(self._id) or EMPTY
        held = self._settled_mine  # replaced by the rounds' thread: read as it stands
        if not set(mine.connectors) <= set(held.connectors) or not set(mine.tasks) <= set(
            held.tasks
        ):
            self._hurry.set()
        self._wake.set()

    def wake_in_full(self) -> None:
        """Runs a round soon that looks at every instance (something was asked of it)."""
        self._unsettle()
        self._wake.set()

    def _unsettle(self) -> None:
        """The next round must run in full, even on an unchanged view."""
        with self._lock:
            self._settled = None

    def queue_restart(self, request: RestartRequest) -> None:
        """A restart request read from the config topic, carried out next round."""
        self._restarts.put(request)
        self.wake_in_full()

    def request_regeneration(self, name: str) -> None:
        """The connector asked for its task configs to be generated again."""
        with self._lock:
            self._regenerate.add(name)
        self.wake_in_full()

    def restart_task(self, task: TaskId) -> None:
        """Restarts a task this worker runs with its current config, on the reconciler's
        thread; returns once it has (waits at most the caller's deadline).

        Raises:
            UnavailableError: the task is not running here (yet), or the restart was not
                carried out in time.
            InstanceFailedError: it failed to start again (its status holds the trace).
        """
        self._carry_out_plain(lambda: self._restart_task_now(task), f"task {task}")

    def restart_connector(self, name: str) -> None:
        """A plain restart of a connector this worker runs, on the reconciler's thread;
        returns once it has (waits at most the caller's deadline).

        Raises:
            UnavailableError: the connector is not running here (yet), or the restart was
                not carried out in time.
            InstanceFailedError: it failed to start again (its status holds the trace).
        """
        self._carry_out_plain(lambda: self._restart_connector_now(name), f"connector {name}")

    def _carry_out_plain(self, restart: Callable[[], None], what: str) -> None:
        done: Future[None] = Future()
        self._plain_restarts.put((restart, done))
        self._hurry.set()
        self.wake()
        wait_s = deadline.remaining(PLAIN_RESTART_WAIT_S)
        try:
            done.result(timeout=wait_s)
        except FutureTimeout:
            if done.cancel():
                raise UnavailableError(
                    f"the restart of {what} was not begun within {wait_s:.1f}s; retry", 1.0
                ) from None
            raise UnavailableError(
                f"the restart of {what} is still under way after {wait_s:.1f}s; its status "
                "shows how it ends", 1.0
            ) from None

    def _restart_task_now(self, task: TaskId) -> None:
        config, task_config, target = self._running(self._running_tasks, task, f"task {task}")
        self._log.info("task_restart_requested", connector=task.connector, task=task.task)
        count = len(self._snapshot().task_configs(task.connector)) or None
        restart_task_instance(self._worker, task, config, task_config, target, count)

    def _restart_connector_now(self, name: str) -> None:
        config, target = self._running(self._running_connectors, name, f"connector {name}")
        self._log.info("connector_restart_requested", connector=name)
        restart_connector_instance(self._worker, name, config, target)
        if target is TargetState.STARTED:
            with self._lock:
                self._regenerate.add(name)
            self.wake_in_full()

    def _running(self, table: Mapping[K, V], key: K, what: str) -> V:
        """What ``table`` holds for an instance this worker runs; UNAVAILABLE if none yet."""
        with self._lock:
            running = table.get(key)
        if running is None:
            raise UnavailableError(f"{what} is not running on this worker yet; retry", 1.0)
        return running

    def run(self, beat: Callable[[], None] | None = None) -> None:
        """The reconciler thread: a round when woken, and every TICK_S anyway; ``beat`` at
        each turn (its liveness heartbeat)."""
        run_ticks(
            self.reconcile,
            wake=self._wake,
            stopping=self._stopping,
            tick_s=TICK_S,
            log=self._log,
            failure_event="reconcile_failed",
            settle_s=SETTLE_S,
            hurry=self._hurry,
            beat=beat,
        )
        self._refuse_plain_restarts()

    def reconcile(self) -> None:
        """One round (what the thread runs when woken and on every tick), unless nothing
        changed since the last one, then the plain restarts asked for before it began;
        raises what a step of the round raised."""
        asked = _drain(self._plain_restarts)
        self._restarted_in_round = False
        try:
            self._round()
        finally:
            if self._restarted_in_round:
                self._requeue(asked)
            else:
                for restart, done in asked:
                    _carry_out(restart, done)

    def _requeue(self, asked: list[PlainRestart]) -> None:
        """The round stopped instances for a restart request: they start again only in the
        next round (already woken in full), so the plain restarts asked for wait for it."""
        for restart in asked:
            self._plain_restarts.put(restart)
        self._hurry.set()

    def _refuse_plain_restarts(self) -> None:
        """The thread is ending: restarts still waiting are answered, not left to time out."""
        for _restart, done in _drain(self._plain_restarts):
            if done.set_running_or_notify_cancel():
                done.set_exception(UnavailableError("this worker is stopping; retry", 1.0))

    def _round(self) -> None:
        snapshot = self._snapshot()
        with self._lock:
            if snapshot is self._settled:
                return
            settled, self._settled = self._settled, snapshot
        assignment = assignment_in(snapshot)
        mine = assignment.of(self._id) or EMPTY
        # rounds run on one thread: only this one reads or replaces it
        settled_mine, self._settled_mine = self._settled_mine, mine
        scope = None if settled is None else changed_connectors(settled, snapshot) | (
            instances_moved(settled_mine, mine)
        )
        try:
            self._reconcile(snapshot, assignment, mine, scope)
        except BaseException:
            self._unsettle()
            raise

    def _reconcile(
        self,
        snapshot: ConfigSnapshot,
        assignment: AssignmentRecord,
        mine: WorkerAssignment,
        scope: Scope,
    ) -> None:
        """``scope``: the connectors to look at (None: all of them)."""
        self._statuses.set_generation(assignment.generation)
        self._stop_unwanted_tasks(snapshot, mine, scope)
        self._reconcile_connectors(snapshot, mine, scope)
        self._start_wanted_tasks(snapshot, mine, scope)
        self._carry_out_restarts(snapshot, mine)
        if assignment.generation != self._applied_generation:
            self._confirm(assignment.generation)  # raises: retried next round
            self._applied_generation = assignment.generation
            self._applied_count += 1
            self._log.info("assignment_applied", generation=assignment.generation,
                           connectors=list(mine.connectors), tasks=len(mine.tasks))

    def _stop_unwanted_tasks(
        self, snapshot: ConfigSnapshot, mine: WorkerAssignment, scope: Scope
    ) -> None:
        """Stops tasks no longer ours or whose task configs changed (a new connector config
        alone does not restart them: its new task configs do, if they differ, as in Kafka
        Connect). A deleted connector's tasks are told so; a task that no longer exists as
        it ran (deleted, or its config replaced) has its status removed, as standalone mode
        does, so that a stale RUNNING is never shown for its successor. A task that only
        moved keeps its status: its new worker overwrites it."""
        wanted = self._wanted_tasks(snapshot, mine, scope)
        deleted: list[TaskId] = []
        replaced: list[TaskId] = []
        moved: list[TaskId] = []
        with self._lock:
            for task, running in self._running_tasks.items():
                if scope is not None and task.connector not in scope:
                    continue
                if not snapshot.contains(task.connector):
                    deleted.append(task)
                elif not _same_task(snapshot, task, running) or _stopped(snapshot, task):
                    replaced.append(task)
                elif task not in wanted:
                    moved.append(task)
        for tasks, connector_deleted, forget in (
            (deleted, True, True), (replaced, False, True), (moved, False, False)
        ):
            if not tasks:
                continue
            self._worker.stop_tasks(tasks, connector_deleted)
            with self._lock:
                for task in tasks:
                    self._running_tasks.pop(task, None)
            if forget:
                for task in tasks:
                    self._statuses.delete_task(task)

    def _reconcile_connectors(
        self, snapshot: ConfigSnapshot, mine: WorkerAssignment, scope: Scope
    ) -> None:
        with self._lock:
            running = _in_scope(self._running_connectors, scope)
            regenerate, self._regenerate = self._regenerate, set()
        for name, (config, target) in running.items():
            gone = not snapshot.contains(name)
            if gone or name not in mine.connectors or (
                snapshot.connectors[name] != config and not _stays_stopped(snapshot, name, target)
            ):
                self._stop_connector_instance(name, connector_deleted=gone)
        for name in mine.connectors if scope is None else sorted(scope & set(mine.connectors)):
            if not snapshot.contains(name):
                continue
            config = snapshot.connectors[name]
            target = snapshot.target_state(name) or TargetState.STARTED
            with self._lock:
                current = self._running_connectors.get(name)
            if current is None:
                started = self._worker.start_connector(name, config, target)
                with self._lock:
                    self._running_connectors[name] = (config, target)
                if started and target is TargetState.STARTED:
                    regenerate.add(name)
            elif current[1] is not target:
                self._retarget_connector(name, current[0], config, target)
                with self._lock:
                    self._running_connectors[name] = (config, target)
                if target is TargetState.STARTED:
                    regenerate.add(name)
        for name in sorted(regenerate):
            if name in mine.connectors and snapshot.target_state(name) is TargetState.STARTED:
                self._generate_task_configs(snapshot, name)

    def _retarget_connector(
        self, name: str, made_with: Mapping[str, str], config: Mapping[str, str],
        target: TargetState,
    ) -> None:
        """Brings the instance to ``target``; one made while STOPPED with a config replaced
        since is made again with the current one."""
        if made_with == config:
            self._worker.set_connector_target(name, target)
            return
        self._worker.stop_connector(name, False)
        self._worker.start_connector(name, config, target)

    def _stop_connector_instance(self, name: str, connector_deleted: bool) -> None:
        self._worker.stop_connector(name, connector_deleted)
        with self._lock:
            self._running_connectors.pop(name, None)
        if connector_deleted:
            self._board.forget_connector(name)

    def _generate_task_configs(self, snapshot: ConfigSnapshot, name: str) -> None:
        """Asks the running connector for its task configs; hands them to the leader if
        they differ from the committed ones. On failure, tries again next round."""
        if not self._worker.connector_running(name):
            return
        config = snapshot.connectors[name]
        configs = ask_task_configs(
            self._worker, self._board, name, tasks_max(config), self._log,
            enforce=tasks_max_enforced(config),
        )
        if configs is None:
            return
        if [dict(c) for c in snapshot.task_configs(name)] == configs:
            return
        try:
            self._submit_task_configs(name, configs)
        except ConnectError as exc:
            self._log.warning("task_configs_not_submitted", connector=name, error=exc.message)
            with self._lock:
                self._regenerate.add(name)
                self._settled = None

    def _start_wanted_tasks(
        self, snapshot: ConfigSnapshot, mine: WorkerAssignment, scope: Scope
    ) -> None:
        wanted_tasks = self._wanted_tasks(snapshot, mine, scope)
        for task in sorted(wanted_tasks):
            wanted = wanted_tasks[task]
            with self._lock:
                running = self._running_tasks.get(task)
            if running is None:
                config, task_config, target = wanted
                self._worker.start_task(
                    task, config, task_config, target, len(snapshot.task_configs(task.connector))
                )
                with self._lock:
                    self._running_tasks[task] = wanted
            elif running[2] is not wanted[2]:
                self._worker.set_task_target(task, wanted[2])
                with self._lock:
                    self._running_tasks[task] = wanted

    def _wanted_tasks(
        self, snapshot: ConfigSnapshot, mine: WorkerAssignment, scope: Scope
    ) -> dict[TaskId, RunningTask]:
        wanted: dict[TaskId, RunningTask] = {}
        for task in mine.tasks:
            if scope is not None and task.connector not in scope:
                continue
            configs = snapshot.task_configs(task.connector)
            if _stopped(snapshot, task):
                continue
            if snapshot.contains(task.connector) and task.task < len(configs):
                target = task_target(snapshot.target_state(task.connector) or TargetState.STARTED)
                wanted[task] = (snapshot.connectors[task.connector], configs[task.task], target)
        return wanted

    def _carry_out_restarts(self, snapshot: ConfigSnapshot, mine: WorkerAssignment) -> None:
        """Restarts the instances of each restart request (KIP-745) that run here."""
        for request in self._pending_restarts():
            name = request.connector
            if not snapshot.contains(name):
                continue
            plan = build_restart_plan(request, self._connector_status(name))
            restart_connector = plan.restart_connector and name in mine.connectors
            tasks = [t for t in plan.task_ids if t in mine.tasks]
            if not restart_connector and not tasks:
                continue
            self._restart_instances(name, restart_connector, tasks)

    def _pending_restarts(self) -> list[RestartRequest]:
        """The restart requests read since the last round, one per connector: of several,
        the one that may restart the most (the first of equals), as Kafka Connect keeps
        them (a second request would only stop again what the first just started)."""
        kept: dict[str, RestartRequest] = {}
        for request in _drain(self._restarts):
            known = kept.get(request.connector)
            if known is None or request.impact > known.impact:
                kept[request.connector] = request
        return list(kept.values())

    def _restart_instances(self, name: str, restart_connector: bool, tasks: list[TaskId]) -> None:
        restarting = InstanceStatus(State.RESTARTING, self._id)
        if restart_connector:
            self._board.on_connector_status(name, restarting)
        for task in tasks:
            self._board.on_task_status(task, restarting)
        with self._lock:
            for task in tasks:
                self._running_tasks.pop(task, None)
        self._restarted_in_round = True
        self._worker.stop_tasks(tasks, False)
        if restart_connector:
            self._stop_connector_instance(name, connector_deleted=False)
        self._log.info("instances_restarting", connector=name,
                       connector_restarted=restart_connector, tasks=[t.task for t in tasks])
        self.wake_in_full()  # the next round starts them again


def _drain(pending: queue.SimpleQueue[V]) -> list[V]:
    """What ``pending`` holds now, in order."""
    drained: list[V] = []
    while True:
        try:
            drained.append(pending.get_nowait())
        except queue.Empty:
            return drained


def _carry_out(restart: Callable[[], None], done: Future[None]) -> None:
    """Runs ``restart`` unless its caller gave up; its outcome goes to ``done``."""
    if not done.set_running_or_notify_cancel():
        return
    try:
        restart()
    except BaseException as exc:  # the caller's thread raises it
        done.set_exception(exc)
    else:
        done.set_result(None)


def changed_connectors(before: ConfigSnapshot, after: ConfigSnapshot) -> set[str]:
    """The connectors whose config, task configs or target state differ between two views
    (an entry replaced counts even if equal: records always make new objects). A map the
    config store's copy-on-write builds shared between them is skipped at once."""
    changed: set[str] = set()
    for old, new in (
        (before.connectors, after.connectors),
        (before.tasks, after.tasks),
        (before.target_states, after.target_states),
    ):
        if old is new:
            continue
        changed.update(old.keys() - new.keys())
        changed.update(name for name, value in new.items() if old.get(name) is not value)
    return changed


def instances_moved(before: WorkerAssignment, after: WorkerAssignment) -> set[str]:
    """The connectors of which this worker gained or lost the connector or a task."""
    if before is after:
        return set()
    moved = set(before.connectors).symmetric_difference(after.connectors)
    moved.update(t.connector for t in set(before.tasks).symmetric_difference(after.tasks))
    return moved


def _in_scope(table: Mapping[str, V], scope: Scope) -> dict[str, V]:
    """A copy of ``table``'s entries for the connectors in ``scope`` (all when None)."""
    if scope is None:
        return dict(table)
    return {name: table[name] for name in scope if name in table}


def _stays_stopped(snapshot: ConfigSnapshot, name: str, target: TargetState) -> bool:
    """Whether a connector instance made STOPPED is still to be STOPPED: a new config then
    waits until it leaves STOPPED (``_retarget_connector``), as making the instance again
    would run nothing, report the same status and only cost every config change."""
    return target is TargetState.STOPPED and snapshot.target_state(name) is TargetState.STOPPED


def _stopped(snapshot: ConfigSnapshot, task: TaskId) -> bool:
    """Whether the task's connector is STOPPED: it runs no task, even while a stop written
    without a transaction has not emptied its task configs yet."""
    return snapshot.target_state(task.connector) is TargetState.STOPPED


def _same_task(
    snapshot: ConfigSnapshot,
    task: TaskId,
    running: RunningTask,
) -> bool:
    """Whether the task still exists with the config it runs with."""
    configs = snapshot.task_configs(task.connector)
    return task.task < len(configs) and configs[task.task] == running[1]

