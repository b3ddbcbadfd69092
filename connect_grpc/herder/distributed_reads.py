"""The DistributedHerder's reads of connectors: answered from this worker's view of the
topics.

Any worker answers them locally (Kafka Connect's followers do too), from its snapshot of the
config topic and its status board, with the transactional ids exactly-once source tasks
write under. Separate from the mutations, which only the leader carries out and which use
:meth:`DistributedReads.info` and :meth:`DistributedReads.connector_status` for their
answers.

Locks: none. A read waits (bounded by the caller's deadline) only for a write this worker
answered before its view read it back (``ClusterView.snapshot``), and ``connector_offsets``
for the offsets topic's end.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from connect_grpc import __version__
from connect_grpc.cluster.config import DistributedConfig
from connect_grpc.cluster.extension_records import (
    LEADER_KEY,
    AssignmentRecord,
    LeaderRecord,
    assignment_in,
    worker_records,
)
from connect_grpc.cluster.membership import LeaderElection
from connect_grpc.config.worker import WorkerConfig
from connect_grpc.connectors.plugins import Plugins
from connect_grpc.herder.distributed_etags import ClusterEtags
from connect_grpc.herder.distributed_view import ClusterView
from connect_grpc.herder.instance_rules import connector_type
from connect_grpc.herder.leader_auto_restart import shown_progress
from connect_grpc.herder.offset_manager import OffsetManager
from connect_grpc.herder.status import StatusBoard
from connect_grpc.kernel import deadline
from connect_grpc.kernel.domain import (
    ClusterInfo,
    ConnectorInfo,
    ConnectorOffset,
    ConnectorStatus,
    ConnectorType,
    TaskId,
    TaskInfo,
    TaskStatus,
    WorkerDesc,
)
from connect_grpc.kernel.errors import NotFoundError
from connect_grpc.runtime.transactions import task_transactional_id
from connect_grpc.storage.connector_offsets import ConnectorOffsetStores


class DistributedReads:
    """Connectors, their configs, task configs, statuses and offsets, by this worker's view."""

    def __init__(
        self,
        view: ClusterView,
        etags: ClusterEtags,
        board: StatusBoard,
        plugins: Plugins,
        election: LeaderElection,
        *,
        config: WorkerConfig,
        cluster: DistributedConfig,
        connector_offsets: ConnectorOffsetStores,
        offset_manager: OffsetManager,
        worker_id: str,
    ) -> None:
        self._view = view
        self._statuses = view.statuses
        self._etags = etags
        self._board = board
        self._plugins = plugins
        self._election = election
        self._config = config
        self._cluster = cluster
        self._id = worker_id
        self._connector_offsets = connector_offsets
        self._offset_manager = offset_manager

    def connectors(self) -> list[str]:
        return sorted(self._view.snapshot().connectors)

    def connector_info(self, name: str) -> ConnectorInfo:
        snapshot = self._view.snapshot()
        return self.info(
            name,
            self._view.config_of(snapshot, name),
            len(snapshot.task_configs(name)),
            self._etags.etag_in(snapshot, name),
        )

    def info(
        self, name: str, config: Mapping[str, str], task_count: int, etag: str
    ) -> ConnectorInfo:
        return ConnectorInfo(
            name=name,
            config=dict(config),
            tasks=tuple(TaskId(name, n) for n in range(task_count)),
            type=connector_type(self._plugins, config),
            etag=etag,
        )

    def connector_config(self, name: str) -> dict[str, str]:
        return dict(self._view.config_of(self._view.snapshot(), name))

    def task_configs(self, name: str) -> list[TaskInfo]:
        snapshot = self._view.snapshot()
        self._view.config_of(snapshot, name)
        return [
            TaskInfo(TaskId(name, n), dict(config))
            for n, config in enumerate(snapshot.task_configs(name))
        ]

    def connector_status(self, name: str) -> ConnectorStatus:
        snapshot = self._view.snapshot()
        config = self._view.config_of(snapshot, name)
        kind = connector_type(self._plugins, config)
        status = self._board.connector_status(name, len(snapshot.task_configs(name)), kind)
        progress = shown_progress(snapshot, name, config)
        if progress is not None:
            status = replace(status, auto_restart=progress)
        if not self._transactional(kind):
            return status
        tasks = tuple(self._with_transactional_id(name, task) for task in status.tasks)
        return replace(status, tasks=tasks)

    def task_status(self, task: TaskId) -> TaskStatus:
        snapshot = self._view.snapshot()
        config = self._view.config_of(snapshot, task.connector)
        if not 0 <= task.task < len(snapshot.task_configs(task.connector)):
            raise NotFoundError(f"Unknown task {task.task} of connector {task.connector}")
        status = TaskStatus(task.task, self._board.task(task))
        if self._transactional(connector_type(self._plugins, config)):
            return self._with_transactional_id(task.connector, status)
        return status

    def _transactional(self, kind: ConnectorType) -> bool:
        return self._config.exactly_once_source_enabled and kind is ConnectorType.SOURCE

    def _with_transactional_id(self, name: str, task: TaskStatus) -> TaskStatus:
        tid = task_transactional_id(self._cluster.group_id, name, task.id)
        return replace(task, transactional_id=tid)

    def connector_offsets(self, name: str) -> list[ConnectorOffset]:
        """Read after catching up with the offsets topic (as Kafka Connect reads it to its
        end), so that offsets another worker just wrote are seen."""
        config = self.connector_config(name)
        self._connector_offsets.for_config(config).refresh(deadline.remaining())
        return self._offset_manager.read(name, config)

    def cluster_info(self, kafka_cluster_id: str) -> ClusterInfo:
        """The cluster as this worker's view shows it; ``kafka_cluster_id``: the Kafka
        cluster's id, as the worker found it when it checked its internal topics."""
        snapshot = self._view.snapshot()
        leader = LeaderRecord.from_json(snapshot.extensions.get(LEADER_KEY))
        assignment = assignment_in(snapshot)
        addresses = {w: r.address for w, r in worker_records(self._statuses.extensions()).items()}
        workers = tuple(
            WorkerDesc(
                w,
                addresses.get(w, ""),
                held.connectors,
                held.tasks,
                self._board.placements(w, held.tasks),
            )
            for w, held in sorted(assignment.workers.items())
        )
        return ClusterInfo(
            version=__version__,
            mode="distributed",
            kafka_cluster_id=kafka_cluster_id,
            leader_id=leader.worker_id if leader else "",
            leader_address=leader.address if leader else "",
            workers=workers,
            generation=assignment.generation,
            worker_id=self._id,
            joined=self._joined(assignment),
        )

    def _joined(self, assignment: AssignmentRecord) -> bool:
        """Whether this worker is in the group and in ``assignment`` (the last one it read):
        a worker that starts reads the last one published, which may name workers gone
        since, before it joins; a worker that joined waits for the leader's next one."""
        return self._election.is_member() and self._id in assignment.workers
