"""KIP-745 restart requests: their config-topic record and the plan of what to restart.

Pure functions shared by both herders. The record follows Kafka Connect's config topic:
key ``restart-connector-<name>``, value ``{"include-tasks": bool, "only-failed": bool}``,
where a missing or non-boolean field reads as false (as Kafka's KafkaConfigBackingStore
does). The plan follows Kafka's ``AbstractHerder.buildRestartPlan``: it is built from the
connector's current status, and its status shows every instance chosen for restart as
RESTARTING while the others keep their state.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from connect_grpc.domain import (
    ConnectorStatus,
    InstanceStatus,
    RestartRequest,
    State,
    TaskId,
    TaskStatus,
)

#: Key prefix of restart records in the config topic.
RESTART_KEY_PREFIX = "restart-connector-"
INCLUDE_TASKS_FIELD = "include-tasks"
ONLY_FAILED_FIELD = "only-failed"


def restart_key(connector: str) -> str:
    """The config-topic key of a restart request for ``connector``."""
    return f"{RESTART_KEY_PREFIX}{connector}"


def restart_record_value(request: RestartRequest) -> dict[str, bool]:
    """The config-topic value of ``request`` (the connector's name is in the key)."""
    return {
        INCLUDE_TASKS_FIELD: bool(request.include_tasks),
        ONLY_FAILED_FIELD: bool(request.only_failed),
    }


def parse_restart_record(connector: str, value: object) -> RestartRequest:
    """Reads a restart record's value back into a request for ``connector``.

    A missing or non-boolean field reads as false, as in Kafka Connect.

    Raises:
        ValueError: the value is not a JSON object (the record should be ignored).
    """
    if not isinstance(value, Mapping):
        raise ValueError(
            f"restart record of {connector!r} is not an object: {type(value).__name__}"
        )
    include_tasks = value.get(INCLUDE_TASKS_FIELD)
    only_failed = value.get(ONLY_FAILED_FIELD)
    return RestartRequest(
        connector,
        include_tasks=include_tasks if isinstance(include_tasks, bool) else False,
        only_failed=only_failed if isinstance(only_failed, bool) else False,
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
