"""Rules both herders apply the same way (standalone and distributed)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connect_grpc.config.worker import (
    TOPIC_TRACKING_ALLOW_RESET_PROPERTY,
    TOPIC_TRACKING_ENABLE_PROPERTY,
    WorkerConfig,
)
from connect_grpc.connectors.plugins import Plugins
from connect_grpc.herder.interface import WorkerRuntime
from connect_grpc.herder.status import StatusBoard
from connect_grpc.kernel.domain import ConnectorType, InstanceStatus, State, TargetState, TaskId
from connect_grpc.kernel.errors import (
    ConnectError,
    FailedPreconditionError,
    InstanceFailedError,
    NotFoundError,
    PreconditionViolation,
)

#: Kafka Connect's answers (HTTP 403) when the worker does not track or reset topics.
TOPIC_TRACKING_DISABLED = "Topic tracking is disabled."
TOPIC_TRACKING_RESET_DISABLED = "Topic tracking reset is disabled."


def task_target(connector_target: TargetState) -> TargetState:
    """The state a connector's tasks run in: paused with it, otherwise started (a STOPPED
    connector has no tasks)."""
    return TargetState.PAUSED if connector_target is TargetState.PAUSED else TargetState.STARTED


#: Kafka Connect's KIP-1004 escape hatch (deprecated there): false lets a connector's task
#: configs beyond ``tasks.max`` run, with a warning.
TASKS_MAX_ENFORCE = "tasks.max.enforce"


def tasks_max_enforced(config: Mapping[str, str]) -> bool:
    """Whether ``tasks.max`` is enforced: anything but ``false`` (Kafka's BOOLEAN: case
    and surrounding spaces aside) enforces it."""
    return (config.get(TASKS_MAX_ENFORCE) or "").strip().lower() != "false"


def too_many_tasks(name: str, generated: int, max_tasks: int) -> str | None:
    """Why a connector that generated ``generated`` task configs is FAILED, or None if that
    is within its ``tasks.max`` (KIP-1004: its tasks are then left as they were)."""
    if generated <= max_tasks:
        return None
    return (
        f"The connector {name} has generated {generated} tasks, which is greater than "
        f"{max_tasks}, the maximum number of tasks it is configured to create (tasks.max)."
    )


def connector_type(plugins: Plugins, config: Mapping[str, str]) -> ConnectorType:
    """SOURCE or SINK by the connector's class; UNKNOWN when the class is not installed."""
    try:
        return Plugins.connector_type(plugins.connector_class(config.get("connector.class", "")))
    except NotFoundError:
        return ConnectorType.UNKNOWN


def not_stopped(name: str) -> FailedPreconditionError:
    """The answer to an offsets change of a connector that is not STOPPED (KIP-875)."""
    return FailedPreconditionError(
        f"Connector {name} must be in the STOPPED state, with no tasks, before its "
        "offsets can be modified. Stop it first with the StopConnector RPC "
        "(connect.v1.ConnectService/StopConnector).",
        [PreconditionViolation("STATE", name, "connector is not STOPPED")],
    )


def require_topic_tracking(config: WorkerConfig, *, reset: bool = False) -> None:
    """Refuses a topic-tracking call the worker's settings disable (KIP-558), with Kafka
    Connect's message; the violation names the worker setting at fault."""
    if not config.topic_tracking_enabled:
        raise FailedPreconditionError(
            TOPIC_TRACKING_DISABLED,
            [PreconditionViolation(
                "WORKER_CONFIG", TOPIC_TRACKING_ENABLE_PROPERTY, "the worker sets it to false"
            )],
        )
    if reset and not config.topic_tracking_reset_allowed:
        raise FailedPreconditionError(
            TOPIC_TRACKING_RESET_DISABLED,
            [PreconditionViolation(
                "WORKER_CONFIG", TOPIC_TRACKING_ALLOW_RESET_PROPERTY, "the worker sets it to false"
            )],
        )


def restart_connector_instance(
    worker: WorkerRuntime, name: str, config: Mapping[str, str], target: TargetState
) -> None:
    """Stops the connector instance (if any) and starts it again in ``target``.

    Raises InstanceFailedError if it failed to start (its status holds the trace), as Kafka
    passes the failure to the caller of a synchronous restart.
    """
    if name in worker.connector_names():
        worker.stop_connector(name, False)
    if not worker.start_connector(name, config, target):
        raise InstanceFailedError(
            f"Failed to start connector {name}: see its status (GetConnectorStatus) for "
            "the cause"
        )


def restart_task_instance(
    worker: WorkerRuntime,
    task: TaskId,
    config: Mapping[str, str],
    task_config: Mapping[str, str],
    target: TargetState,
    task_count: int | None = None,
) -> None:
    """Stops the task and starts it again; raises InstanceFailedError if it failed to.
    ``task_count``: the connector generation's number of tasks."""
    worker.stop_tasks([task], False)
    if not worker.start_task(task, config, task_config, target, task_count):
        raise InstanceFailedError(
            f"Failed to start task {task}: see its status (GetTaskStatus) for the cause"
        )


def ask_task_configs(
    worker: WorkerRuntime,
    board: StatusBoard,
    name: str,
    max_tasks: int,
    log: Any,
    enforce: bool = True,
) -> list[dict[str, str]] | None:
    """The running connector's task configs, or None when it gave none: it could not (logged;
    the runtime reports a raising plugin FAILED) or it gave more than ``tasks.max``, which
    makes the connector FAILED and leaves its tasks as they were (KIP-1004), unless
    ``enforce`` is False (``tasks.max.enforce=false``: they all run, with a warning)."""
    try:
        configs = worker.connector_task_configs(name, max_tasks)
    except ConnectError as exc:
        log.warning("task_configs_failed", connector=name, error=exc.message)
        return None
    reason = too_many_tasks(name, len(configs), max_tasks)
    if reason is None:
        return configs
    if not enforce:
        log.warning("task_configs_beyond_tasks_max", connector=name, generated=len(configs),
                    tasks_max=max_tasks, setting=f"{TASKS_MAX_ENFORCE}=false")
        return configs
    log.error("connector_failed", connector=name, reason=reason)
    board.on_connector_status(name, InstanceStatus(State.FAILED, board.worker_id, reason))
    return None
