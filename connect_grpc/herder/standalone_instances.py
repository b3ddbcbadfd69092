"""The StandaloneHerder's instances: bringing the worker's connectors and tasks in line with
the table, and restarting them.

Starting a connector in its target state, asking a running one for its task configs and
replacing its tasks when they changed, stopping them (as a delete or not), recomputing task
configs when a connector asks for it, and restarts (KIP-745): a plain one synchronously, a
flagged one on a thread of its own. Separate from the herder's reads and mutations because
this is where the herder does the runtime's I/O (plugins, Spark), always outside the herder
lock.

Locks: callers hold the connector's lock (``ConnectorLocks``); the background threads it
starts (a reconfiguration, a flagged restart) take it themselves, unbounded (no caller
waits). The herder lock (the table's) is taken only to copy state out of the table or to
write task configs into it, never across the runtime's calls.
"""

from __future__ import annotations

import threading
from typing import Any

from connect_grpc.herder.framework_keys import tasks_max
from connect_grpc.herder.instance_rules import (
    ask_task_configs,
    restart_connector_instance,
    task_target,
    tasks_max_enforced,
)
from connect_grpc.herder.interface import WorkerRuntime
from connect_grpc.herder.locks import ConnectorLocks
from connect_grpc.herder.restart import RestartPlan
from connect_grpc.herder.standalone_table import ConnectorTable
from connect_grpc.herder.status import StatusBoard
from connect_grpc.kernel.domain import InstanceStatus, State, TargetState
from connect_grpc.kernel.errors import ConnectError


class StandaloneInstances:
    """Reconciles the worker's instances of each connector to the table."""

    def __init__(
        self,
        table: ConnectorTable,
        worker: WorkerRuntime,
        board: StatusBoard,
        locks: ConnectorLocks,
        *,
        worker_id: str,
        log: Any,
    ) -> None:
        self._table = table
        self._lock = table.lock
        self._worker = worker
        self._board = board
        self._connector_locks = locks
        self._worker_id = worker_id
        self._log = log

    # reconciliation (callers hold the connector's lock)

    def request_reconfiguration(self, name: str) -> None:
        """A connector asked for new task configs: recompute them off the plugin's thread."""

        def reconfigure() -> None:
            with self._connector_locks.hold(name, bounded=False):
                with self._lock:
                    state = self._table.connectors.get(name)
                    wanted = (
                        state is not None
                        and state.target is TargetState.STARTED
                        and not self._table.stopped
                    )
                if wanted:
                    self.reconfigure_tasks(name)

        threading.Thread(target=reconfigure, name=f"reconfigure-{name}", daemon=True).start()

    def restart_expired(self, name: str) -> None:
        """The values of a running connector's config expired: a plain restart of it, off
        the timer's thread, as Kafka Connect restarts it (its tasks follow only if their
        configs change)."""

        def restart() -> None:
            with self._connector_locks.hold(name, bounded=False):
                with self._lock:
                    state = self._table.connectors.get(name)
                    wanted = state is not None and not self._table.stopped
                if not wanted or name not in self._worker.connector_names():
                    return
                try:
                    self.restart_connector_now(name)
                except ConnectError as exc:  # its status says why
                    self._log.warning("connector_restart_failed", connector=name,
                                      error=exc.message)

        threading.Thread(target=restart, name=f"expired-{name}", daemon=True).start()

    def start_connector(self, name: str) -> None:
        """Starts the connector instance in its target state, then its tasks if running."""
        with self._lock:
            state = self._table.connectors[name]
            config, target, has_tasks = dict(state.config), state.target, bool(state.task_configs)
        started = self._worker.start_connector(name, config, target)
        if started and target is TargetState.STARTED:
            self.reconfigure_tasks(name)
        elif has_tasks:
            self._start_tasks(name)

    def reconfigure_tasks(self, name: str) -> None:
        """Asks the running connector for its task configs; replaces the tasks if they changed.

        A connector that generates more configs than its ``tasks.max`` is FAILED and its
        tasks are left as they were (as Kafka does since KIP-1004).
        """
        if not self._worker.connector_running(name):
            return
        with self._lock:
            state = self._table.connectors[name]
            max_tasks, current = tasks_max(state.config), list(state.task_configs)
            enforce = tasks_max_enforced(state.config)
            task_ids = state.task_ids(name)
        new_configs = ask_task_configs(
            self._worker, self._board, name, max_tasks, self._log, enforce=enforce
        )
        if new_configs is None:
            return
        running = self._worker.task_ids()
        if new_configs == current and all(task in running for task in task_ids):
            return
        self.replace_tasks(name, new_configs)

    def replace_tasks(self, name: str, new_configs: list[dict[str, str]]) -> None:
        self._stop_tasks(name, connector_deleted=False)
        with self._lock:
            self._table.connectors[name].task_configs = [dict(config) for config in new_configs]
        self._start_tasks(name)
        self._log.info("tasks_reconfigured", connector=name, tasks=len(new_configs))

    def _start_tasks(self, name: str) -> None:
        with self._lock:
            state = self._table.connectors[name]
            config, target = dict(state.config), task_target(state.target)
            tasks = list(zip(state.task_ids(name), state.task_configs, strict=True))
        running = self._worker.task_ids()
        for task, task_config in tasks:
            if task not in running:
                self._worker.start_task(task, config, task_config, target, len(tasks))

    def _stop_tasks(self, name: str, connector_deleted: bool) -> None:
        running = sorted(task for task in self._worker.task_ids() if task.connector == name)
        self._worker.stop_tasks(running, connector_deleted)
        self._board.forget_tasks(name)

    def stop_instances(self, name: str, connector_deleted: bool) -> None:
        self._stop_tasks(name, connector_deleted)
        if name in self._worker.connector_names():
            self._worker.stop_connector(name, connector_deleted)

    # restarts (callers hold the connector's lock)

    def restart_connector_now(self, name: str) -> None:
        """A plain restart: the connector instance only, synchronously; raises if it failed."""
        with self._lock:
            state = self._table.connectors[name]
            config, target = dict(state.config), state.target
        restart_connector_instance(self._worker, name, config, target)
        if target is TargetState.STARTED:
            self.reconfigure_tasks(name)
        self._log.info("connector_restarted", connector=name)

    def mark_restarting(self, plan: RestartPlan) -> None:
        restarting = InstanceStatus(State.RESTARTING, self._worker_id)
        if plan.restart_connector:
            self._board.on_connector_status(plan.request.connector, restarting)
        for task in plan.task_ids:
            self._board.on_task_status(task, restarting)

    def execute_restart(self, plan: RestartPlan) -> None:
        """Carries out a flagged restart on its own thread (takes the connector's lock).

        Stops the chosen instances, then starts them again: connector first, then tasks with
        their current configs. Like Kafka's distributed herder, a connector that is running
        again with target STARTED is then asked for its task configs, which replaces the tasks
        only if those changed. A connector deleted meanwhile is left alone; tasks that no
        longer exist are skipped.
        """
        name = plan.request.connector
        try:
            with self._connector_locks.hold(name, bounded=False):
                self._restart_planned(plan)
        except Exception:
            self._log.exception("connector_restart_failed", connector=name)

    def _restart_planned(self, plan: RestartPlan) -> None:
        name = plan.request.connector
        with self._lock:
            state = self._table.connectors.get(name)
            if state is None or self._table.stopped:
                self._log.info("connector_restart_abandoned", connector=name)
                return
            config, target = dict(state.config), state.target
            tasks_target = task_target(state.target)
            tasks = [
                (t, dict(state.task_configs[t.task]))
                for t in plan.task_ids
                if t.task < len(state.task_configs)
            ]
            count = len(state.task_configs)
        if plan.restart_connector and name in self._worker.connector_names():
            self._worker.stop_connector(name, False)
        self._worker.stop_tasks([t for t, _ in tasks], False)
        self.mark_restarting(
            RestartPlan(plan.request, plan.restart_connector, tuple(t for t, _ in tasks),
                        plan.status)
        )
        running = False
        if plan.restart_connector:
            started = self._worker.start_connector(name, config, target)
            running = started and target is TargetState.STARTED
        for task, task_config in tasks:
            self._worker.start_task(task, config, task_config, tasks_target, count)
        if running:
            self.reconfigure_tasks(name)
        self._log.info(
            "connector_restarted",
            connector=name,
            connector_restarted=plan.restart_connector,
            tasks=[t.task for t, _ in tasks],
        )
