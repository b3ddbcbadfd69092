"""Domain types shared by every room: states, ids, infos, statuses and offsets.

Nothing here knows about gRPC, Kafka or Spark.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

#: A primitive value as the offsets topic can hold it (JSON scalar).
OffsetPrimitive = str | int | float | bool | None
#: A source partition or offset, or a sink partition/offset map.
OffsetMap = Mapping[str, OffsetPrimitive]


class TargetState(enum.Enum):
    """What the user asked a connector to be (Kafka's TargetState)."""

    STARTED = "STARTED"
    PAUSED = "PAUSED"
    STOPPED = "STOPPED"

    @classmethod
    def parse_initial(cls, text: str) -> TargetState:
        """Parses an ``initial_state`` as files and the CLI spell it: RUNNING, PAUSED, STOPPED.

        Case-insensitive. Raises ValueError for anything else.
        """
        normalized = text.strip().upper()
        if normalized == "RUNNING":
            return cls.STARTED
        if normalized in ("PAUSED", "STOPPED"):
            return cls(normalized)
        raise ValueError(
            f"invalid initial_state {text!r}: expected one of RUNNING, PAUSED, STOPPED"
        )


class State(enum.Enum):
    """The state of a connector or task instance, as reported in statuses."""

    UNASSIGNED = "UNASSIGNED"
    RUNNING = "RUNNING"
    PAUSED = "PAUSED"
    FAILED = "FAILED"
    RESTARTING = "RESTARTING"
    STOPPED = "STOPPED"
    #: Started, but not moving data: retrying a retriable error (e.g. Kafka unreachable).
    RETRYING = "RETRYING"


class ConnectorType(enum.Enum):
    SOURCE = "source"
    SINK = "sink"
    UNKNOWN = "unknown"


class TaskId(NamedTuple):
    """A task's id: its connector's name and its number, ordered by both.

    A tuple rather than a frozen dataclass: hashed, compared and sorted in C. The leader's
    assignment and every worker's reconciler hash and compare thousands of task ids on
    each change, and a dataclass's Python-level ``__hash__`` and ``__eq__`` were 13 % of
    the leader's busy time at 1,000 connectors. A side effect: it also equals the plain
    tuple ``(connector, task)``.
    """

    connector: str
    task: int

    def __str__(self) -> str:
        return f"{self.connector}-{self.task}"


@dataclass(frozen=True, slots=True)
class ConnectorInfo:
    name: str
    config: Mapping[str, str]
    tasks: tuple[TaskId, ...]
    type: ConnectorType
    #: AIP-154: changes with the config, the target state and API offsets changes
    #: (``herder.etags``); empty where the answer does not carry one.
    etag: str = ""


@dataclass(frozen=True, slots=True)
class TaskInfo:
    id: TaskId
    config: Mapping[str, str]


class PlacementKind(enum.Enum):
    """Where a task's plugin lives on its worker."""

    #: A thread of the worker's own process (the Spark driver); its batches run in that
    #: process or, when large, as Spark jobs.
    DRIVER = "driver"
    #: One long-running Spark task on an executor, which moves every batch itself.
    SPARK_EXECUTOR = "spark-executor"


@dataclass(frozen=True, slots=True)
class TaskPlacement:
    """Where a task runs: on the driver or in a Spark executor, and on which host."""

    kind: PlacementKind
    host: str


@dataclass(frozen=True, slots=True)
class InstanceStatus:
    """The state of one connector or task instance, where it runs and why it failed."""

    state: State
    worker_id: str
    trace: str = ""
    #: Tasks only, once started: where the task's plugin lives. None for connectors and
    #: for statuses written before a task started (or by Kafka Connect).
    placement: TaskPlacement | None = None
    #: The version of the plugin the instance runs (its ``version()``, KIP-891); empty when
    #: not known (a status written before the instance started, or by an older worker).
    version: str = ""
    #: This worker's count of the status changes its view has shown (the status store
    #: stamps it): a higher revision of the same instance on the same worker is a later
    #: status, even when it reads as the earlier one (a restarted task that failed as
    #: before). 0: not known. Not part of the status's equality, and not written to Kafka.
    revision: int = field(default=0, compare=False)


@dataclass(frozen=True, slots=True)
class TaskStatus:
    id: int
    status: InstanceStatus
    #: With exactly-once source support: ``<group.id>-<connector>-<task>``; else empty.
    transactional_id: str = ""


@dataclass(frozen=True, slots=True)
class AutoRestartStatus:
    """Where a connector's auto-restart policy (``auto.restart.*``) stands.

    Attributes:
        count: automatic restarts since the policy last reset (a healthy period, a user's
            restart, a config change).
        next_attempt_ms: when the next automatic restart is due (epoch milliseconds); 0
            when none is scheduled.
        last_restart_ms: when the last automatic restart was made (epoch ms); 0: none.
        gave_up: the policy made ``auto.restart.max.attempts`` restarts and the connector
            failed again: it stays FAILED until a user restarts it or changes its config.
    """

    count: int = 0
    next_attempt_ms: int = 0
    last_restart_ms: int = 0
    gave_up: bool = False


@dataclass(frozen=True, slots=True)
class ConnectorStatus:
    name: str
    connector: InstanceStatus
    tasks: tuple[TaskStatus, ...]
    type: ConnectorType
    #: The auto-restart policy's progress; None when the connector's policy is off.
    auto_restart: AutoRestartStatus | None = None

    def revisions(self) -> tuple[int, ...]:
        """The connector's and each task's revision: two equal statuses whose revisions
        differ are two reports (say FAILED, restarted, and FAILED again as before)."""
        return (self.connector.revision, *(task.status.revision for task in self.tasks))


@dataclass(frozen=True, slots=True)
class ActiveTopic:
    """A topic a connector's task used (KIP-558): written to by a source, read by a sink;
    ``discovered_ms`` is when the task first used it (epoch milliseconds)."""

    topic: str
    connector: str
    task: int
    discovered_ms: int


@dataclass(frozen=True, slots=True)
class ConnectorOffset:
    """One partition's offset. ``offset=None`` (and no record time) means "reset this
    partition"."""

    partition: OffsetMap | None
    offset: OffsetMap | None
    #: Rewind a sink by time (milliseconds since the epoch): the partition is set to its first
    #: record at or after it, or to its end. Sinks only; never with ``offset``.
    record_time_ms: int | None = None


@dataclass(frozen=True, slots=True)
class OffsetsChange:
    """What an offsets change answers: Kafka Connect's message, and the offsets record
    times resolved to (sink offsets, one per partition; empty when no time was given)."""

    message: str
    resolved: tuple[ConnectorOffset, ...] = ()
    #: The connector's etag after the change (AIP-154); empty where none is known.
    etag: str = ""


@dataclass(frozen=True, slots=True)
class ConfigKeyInfo:
    name: str
    type: str
    required: bool
    default_value: str | None
    importance: str
    documentation: str
    group: str = ""
    order_in_group: int = 0
    width: str = "NONE"
    display_name: str = ""
    dependents: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ConfigValueInfo:
    name: str
    value: str | None
    errors: tuple[str, ...] = ()
    recommended_values: tuple[str, ...] = ()
    visible: bool = True


@dataclass(frozen=True, slots=True)
class ConfigInfo:
    definition: ConfigKeyInfo | None
    value: ConfigValueInfo


@dataclass(frozen=True, slots=True)
class ConfigInfos:
    """The result of validating a connector config (Kafka's ConfigInfos)."""

    name: str
    error_count: int
    groups: tuple[str, ...]
    configs: tuple[ConfigInfo, ...]

    def all_errors(self) -> list[tuple[str, str]]:
        """Every (key, message) pair, in key order."""
        return [(c.value.name, e) for c in self.configs for e in c.value.errors]


@dataclass(frozen=True, slots=True)
class PluginDesc:
    class_name: str
    #: SOURCE or SINK for a connector; UNKNOWN for the other plugin types.
    type: ConnectorType
    version: str
    aliases: tuple[str, ...] = ()
    config_definitions: tuple[ConfigKeyInfo, ...] = ()
    #: Kafka Connect's plugin type: ``source``, ``sink``, ``transformation``,
    #: ``predicate``, ``converter`` or ``header_converter`` (empty when unknown).
    plugin_type: str = ""


@dataclass(frozen=True, slots=True)
class WorkerDesc:
    id: str
    address: str
    #: What the worker runs (distributed mode: its current assignment).
    connectors: tuple[str, ...] = ()
    tasks: tuple[TaskId, ...] = ()
    #: Where each of ``tasks`` that this worker started runs.
    placements: Mapping[TaskId, TaskPlacement] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ClusterInfo:
    version: str
    mode: str
    kafka_cluster_id: str
    leader_id: str
    leader_address: str
    workers: tuple[WorkerDesc, ...]
    generation: int
    worker_id: str
    #: Whether the answering worker is a member of the group and of the assignment shown.
    joined: bool = True


@dataclass(frozen=True, slots=True)
class HealthReport:
    """Whether a worker passes one health check now, and if not, why: ``reason`` for
    people (the log), ``cause`` a short fixed word for machines (a metric label)."""

    serving: bool
    reason: str = ""
    cause: str = ""


@dataclass(frozen=True, slots=True)
class CreateResult:
    info: ConnectorInfo
    offsets_message: str = ""
    #: The initial offsets record times resolved to (see OffsetsChange.resolved).
    resolved_offsets: tuple[ConnectorOffset, ...] = ()


@dataclass(frozen=True, slots=True)
class PutConfigResult:
    info: ConnectorInfo
    created: bool


@dataclass(slots=True)
class RestartRequest:
    """A KIP-745 restart request."""

    connector: str
    include_tasks: bool = False
    only_failed: bool = False

    def restarts_connector(self, connector_state: State) -> bool:
        return not self.only_failed or connector_state is State.FAILED

    def restarts_task(self, task_state: State) -> bool:
        return self.include_tasks and (not self.only_failed or task_state is State.FAILED)

    @property
    def impact(self) -> int:
        """How much the request may restart, as Kafka Connect ranks it: only a failed
        connector (0), failed connector and tasks (1), the connector (2), everything (3)."""
        if self.only_failed:
            return 1 if self.include_tasks else 0
        return 3 if self.include_tasks else 2
