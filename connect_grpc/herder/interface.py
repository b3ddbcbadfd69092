"""The Herder interface: the control plane the gRPC API is a thin adapter over.

Two implementations: StandaloneHerder (one process, file offsets) and DistributedHerder
(Kafka-topic stores, leader election, forwarding). Every method is thread-safe and raises
only ``connect_grpc.kernel.errors`` exceptions for caller mistakes.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from typing import Protocol

from connect_grpc.kernel.domain import (
    ClusterInfo,
    ConfigInfos,
    ConnectorInfo,
    ConnectorOffset,
    ConnectorStatus,
    CreateResult,
    HealthReport,
    OffsetsChange,
    PluginDesc,
    PutConfigResult,
    RestartRequest,
    TargetState,
    TaskId,
    TaskInfo,
    TaskStatus,
)
from connect_grpc.logs.levels import LoggerLevel
from connect_grpc.pipeline.preview_model import PipelinePreview, PreviewRequest


class WorkerRuntime(Protocol):
    """What a herder needs of the runtime that runs connector and task instances
    (``connect_grpc.runtime.worker.Worker``). Instances report their states to the
    StatusListener the runtime was built with."""

    def start(self) -> None: ...

    def stop(self) -> None: ...

    def start_connector(self, name: str, config: Mapping[str, str], target: TargetState) -> bool:
        ...

    def set_connector_target(self, name: str, target: TargetState) -> bool: ...

    def connector_task_configs(self, name: str, max_tasks: int) -> list[dict[str, str]]: ...

    def stop_connector(self, name: str, connector_deleted: bool) -> None: ...

    def connector_running(self, name: str) -> bool: ...

    def connector_names(self) -> set[str]: ...

    def start_task(
        self,
        task: TaskId,
        connector_config: Mapping[str, str],
        task_config: Mapping[str, str],
        target: TargetState,
        task_count: int | None = None,
    ) -> bool:
        """``task_count``: how many tasks the connector's current generation has."""
        ...

    def set_task_target(self, task: TaskId, target: TargetState) -> None: ...

    def stop_tasks(self, tasks: Collection[TaskId], connector_deleted: bool) -> None: ...

    def task_ids(self) -> set[TaskId]: ...


class Herder(Protocol):
    def start(self) -> None:
        """Starts the worker runtime and the stores. Blocks until ready to serve."""

    def stop(self) -> None:
        """Stops every connector and task (not as a delete) and closes the stores."""

    def health(self) -> HealthReport:
        """Whether the worker can serve now: live and ready (the first that is not says
        why). Returns within a few seconds whatever the state."""

    def liveness(self) -> HealthReport:
        """KIP-1017's liveness: the herder's loops have gone round within
        ``health.liveness.timeout.ms``. Kafka's absence never makes it NOT_SERVING.
        Returns within a few seconds whatever the state."""

    def readiness(self) -> HealthReport:
        """KIP-1017's readiness: the worker has started and can do its work now (Kafka
        reachable; distributed: a member of its group, which read the config topic)."""

    def connectors(self) -> list[str]:
        """Every connector name, sorted."""

    def connector_info(self, name: str) -> ConnectorInfo: ...

    def connector_config(self, name: str) -> dict[str, str]: ...

    def create_connector(
        self,
        name: str,
        config: Mapping[str, str],
        initial_state: TargetState,
        initial_offsets: Sequence[ConnectorOffset] | None = None,
        initial_offsets_time_ms: int | None = None,
    ) -> CreateResult:
        """Creates a connector in ``initial_state`` (KIP-980), with optional initial offsets
        (KIP-995): per partition, or (a sink's) every partition of its topics at one record
        time, ``initial_offsets_time_ms``. ALREADY_EXISTS if the name is taken."""

    def put_connector_config(
        self, name: str, config: Mapping[str, str], etag: str = ""
    ) -> PutConfigResult:
        """Creates or replaces the config; the target state of an existing connector is kept.

        ``etag`` (AIP-154, on this and every write below): empty for an unconditional
        write; otherwise the connector's current etag, or AbortedError and nothing changes
        (NotFoundError for a connector that does not exist, here too: a conditional put
        never creates). Checked under the connector's lock, with the write."""

    def patch_connector_config(
        self, name: str, patch: Mapping[str, str | None], etag: str = ""
    ) -> PutConfigResult:
        """KIP-477: lays ``patch`` over the current config (None removes a key) and puts the
        result as ``put_connector_config`` would, validation included; ``created`` is always
        False. NOT_FOUND if the connector does not exist."""

    def delete_connector(self, name: str, etag: str = "") -> None:
        """Stops tasks and connector with ``connector_deleted=True`` and forgets the connector."""

    def connector_status(self, name: str) -> ConnectorStatus: ...

    def task_status(self, task: TaskId) -> TaskStatus: ...

    def task_configs(self, name: str) -> list[TaskInfo]: ...

    def pause_connector(self, name: str, etag: str = "") -> str:
        """Returns the connector's etag after the change (as resume and stop)."""

    def resume_connector(self, name: str, etag: str = "") -> str: ...

    def stop_connector(self, name: str, etag: str = "") -> str: ...

    def restart_connector(self, request: RestartRequest) -> ConnectorStatus | None:
        """KIP-745. None for a plain restart; otherwise the status showing RESTARTING."""

    def restart_task(self, task: TaskId) -> None: ...

    def connector_offsets(self, name: str) -> list[ConnectorOffset]: ...

    def alter_offsets(
        self,
        name: str,
        offsets: Sequence[ConnectorOffset],
        all_partitions_time_ms: int | None = None,
        etag: str = "",
    ) -> OffsetsChange:
        """KIP-875 alter (merge), or (a sink's) every partition of its topics set by one
        record time; returns the success message, what record times resolved to and the
        connector's new etag."""

    def reset_offsets(self, name: str, etag: str = "") -> OffsetsChange:
        """KIP-875 reset; returns the success message and the connector's new etag."""

    def validate_config(self, config: Mapping[str, str], plugin: str | None = None) -> ConfigInfos:
        ...

    def plugins(
        self, include_config_definitions: bool = False, all_plugin_types: bool = False
    ) -> list[PluginDesc]:
        """The sink connectors, then the source connectors, each sorted by class name; with
        ``all_plugin_types`` then the transformations, predicates, converters and header
        converters (Kafka Connect's ``connectorsOnly=false``), in Kafka Connect's order."""
        ...

    def plugin_config(self, name: str) -> PluginDesc:
        """KIP-769: one plugin (class name or alias) with its config definitions; for a
        connector, its own keys then the framework's it does not define. NOT_FOUND (with
        the closest name) for an unknown plugin."""
        ...

    def cluster_info(self) -> ClusterInfo: ...

    def connector_topics(self, name: str) -> list[str]:
        """KIP-558: the topics the connector's tasks used, sorted; empty for an unknown
        connector. FailedPreconditionError when ``topic.tracking.enable=false``."""

    def reset_connector_topics(self, name: str) -> None:
        """KIP-558: forgets the topics the connector's tasks used, whatever its state (as
        Kafka Connect; a running task records a topic again when it next uses it).
        FailedPreconditionError when tracking or its reset is disabled."""

    def loggers(self) -> dict[str, LoggerLevel]:
        """This worker's known loggers whose level is not OFF, sorted by name, root first."""

    def logger_level(self, name: str) -> LoggerLevel:
        """One logger's level on this worker; NotFoundError if it is not known."""

    def set_worker_log_level(self, namespace: str, level: str) -> list[str]:
        """Sets ``level`` (a Kafka name) on this worker's logger ``namespace`` and the known
        loggers under it; returns those whose level changed, sorted."""

    def set_cluster_log_level(self, namespace: str, level: str) -> None:
        """Sets ``level`` on every worker, including those that join later (KIP-976)."""

    # ---- Pipeline preview ----
    def preview_pipeline(self, request: PreviewRequest) -> PipelinePreview:
        """Runs the request's records through the connector's converters and
        transformations (``herder.preview.run_preview``); writes nothing. Reading a
        topic's last records waits no longer than the caller's deadline."""
        ...

    def watch_status(
        self, name: str, is_active: Callable[[], bool]
    ) -> Iterator[ConnectorStatus | None]:
        """The status now, then after every change; None once the connector is deleted.

        Ends when ``is_active()`` turns False (checked at least every second).
        """
