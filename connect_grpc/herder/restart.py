"""KIP-745 restart requests: the plan of what to restart.

Pure functions shared by both herders (the config-topic record of a request is encoded
with the other config-topic records, in ``storage/config_codec.py``). The plan follows
Kafka's ``AbstractHerder.buildRestartPlan``: it is built from the connector's current
status, and its status shows every instance chosen for restart as RESTARTING while the
others keep their state.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from connect_grpc.kernel.domain import (
    ConnectorStatus,
    InstanceStatus,
    RestartRequest,
    State,
    TaskId,
    TaskStatus,
)


@dataclass(frozen=True, slots=True)
class RestartPlan:
    """Which instances of one connector a request restarts, decided from its status.

    Attributes:
        request: the request the plan was built for.
        restart_connector: whether the connector instance restarts.
        task_ids: the tasks that restart, in id order.
        status: the connector's status with each instance to restart shown RESTARTING
            (worker id and trace kept); this is the answer of a flagged restart.
    """

    request: RestartRequest
    restart_connector: bool
    task_ids: tuple[TaskId, ...]
    status: ConnectorStatus

    @property
    def empty(self) -> bool:
        """True iff nothing qualifies for a restart."""
        return not self.restart_connector and not self.task_ids


def _restarting(status: InstanceStatus) -> InstanceStatus:
    return replace(status, state=State.RESTARTING)


def build_restart_plan(request: RestartRequest, status: ConnectorStatus) -> RestartPlan:
    """The plan of ``request`` given the connector's current ``status``.

    The connector restarts if ``not only_failed`` or it is FAILED; a task restarts if
    ``include_tasks`` and (``not only_failed`` or it is FAILED).
    """
    restart_connector = request.restarts_connector(status.connector.state)
    tasks: list[TaskStatus] = []
    task_ids: list[TaskId] = []
    for task in status.tasks:
        if request.restarts_task(task.status.state):
            task_ids.append(TaskId(status.name, task.id))
            tasks.append(TaskStatus(task.id, _restarting(task.status)))
        else:
            tasks.append(task)
    shown = replace(
        status,
        connector=_restarting(status.connector) if restart_connector else status.connector,
        tasks=tuple(tasks),
    )
    return RestartPlan(request, restart_connector, tuple(task_ids), shown)
