"""The calls a distributed worker answers (the ``Herder`` protocol's and those of the
cluster's gRPC services), each handed to the part of ``DistributedHerder`` that carries it
out: reads to ``distributed_reads`` (this worker's view of the topics), mutations to
``distributed_mutations`` (the leader's), request ids to ``recorded_answers``, the fencing of
task generations to ``task_fencing``. Each call's contract is documented where it is carried
out, and in the ``Herder`` protocol; the herder builds the parts, and runs the worker."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from connect_grpc.herder.abstract_herder import HerderCommon
from connect_grpc.herder.distributed_mutations import DistributedMutations
from connect_grpc.herder.distributed_reads import DistributedReads
from connect_grpc.herder.distributed_view import ClusterView
from connect_grpc.herder.leader_writer import LeaderWriter
from connect_grpc.herder.reconciler import Reconciler
from connect_grpc.herder.recorded_answers import RecordedAnswers
from connect_grpc.herder.task_fencing import TaskFencing
from connect_grpc.kernel.domain import (
    ClusterInfo,
    ConnectorInfo,
    ConnectorOffset,
    ConnectorStatus,
    CreateResult,
    OffsetsChange,
    PutConfigResult,
    RestartRequest,
    TargetState,
    TaskId,
    TaskInfo,
    TaskStatus,
)
from connect_grpc.metrics.worker_metrics import RebalanceState
from connect_grpc.security.session_key import SessionKey

__all__ = ["DistributedCalls"]


class DistributedCalls(HerderCommon):
    """A distributed worker's calls, handed to its parts. The subclass sets the parts below
    in its constructor."""

    _view: ClusterView
    _writer: LeaderWriter
    _reads: DistributedReads
    _mutations: DistributedMutations
    _answers: RecordedAnswers
    _fencing: TaskFencing
    _reconciler: Reconciler
    _kafka_cluster_id: str

    # reads, from this worker's view of the topics

    def connectors(self) -> list[str]:
        return self._reads.connectors()

    def connector_info(self, name: str) -> ConnectorInfo:
        return self._reads.connector_info(name)

    def connector_config(self, name: str) -> dict[str, str]:
        return self._reads.connector_config(name)

    def task_configs(self, name: str) -> list[TaskInfo]:
        return self._reads.task_configs(name)

    def connector_status(self, name: str) -> ConnectorStatus:
        return self._reads.connector_status(name)

    def task_status(self, task: TaskId) -> TaskStatus:
        return self._reads.task_status(task)

    def connector_offsets(self, name: str) -> list[ConnectorOffset]:
        return self._reads.connector_offsets(name)

    def cluster_info(self) -> ClusterInfo:
        return self._reads.cluster_info(self._kafka_cluster_id)

    def rebalance_state(self) -> RebalanceState:
        """This worker's view of the group, for its rebalance metrics."""
        leader = self.leader_address()
        return RebalanceState(
            generation=self._reconciler.applied_generation,
            leader_id=leader[0] if leader else "",
            is_leader=self.leads(),
            completed_rebalances=self._reconciler.completed_rebalances,
        )

    def leader_address(self) -> tuple[str, str] | None:
        return self._view.leader_address()

    def session_key(self) -> SessionKey | None:
        return self._view.session_key()

    def session_keys(self) -> tuple[SessionKey, ...]:
        return self._view.session_keys()

    def config_position(self) -> int:
        return self._view.config_position()

    def wait_for_config_position(self, position: int, timeout: float) -> None:
        self._view.wait_for_config_position(position, timeout)

    # mutations: the leader carries them out, any other worker raises NotLeaderError

    def create_connector(
        self,
        name: str,
        config: Mapping[str, str],
        initial_state: TargetState,
        initial_offsets: Sequence[ConnectorOffset] | None = None,
        initial_offsets_time_ms: int | None = None,
    ) -> CreateResult:
        return self._mutations.create_connector(
            name, config, initial_state, initial_offsets, initial_offsets_time_ms
        )

    def put_connector_config(
        self, name: str, config: Mapping[str, str], etag: str = ""
    ) -> PutConfigResult:
        return self._mutations.put_connector_config(name, config, etag)

    def patch_connector_config(
        self, name: str, patch: Mapping[str, str | None], etag: str = ""
    ) -> PutConfigResult:
        return self._mutations.patch_connector_config(name, patch, etag)

    def delete_connector(self, name: str, etag: str = "") -> None:
        self._mutations.delete_connector(name, etag)

    def pause_connector(self, name: str, etag: str = "") -> str:
        return self._mutations.pause_connector(name, etag)

    def resume_connector(self, name: str, etag: str = "") -> str:
        return self._mutations.resume_connector(name, etag)

    def stop_connector(self, name: str, etag: str = "") -> str:
        return self._mutations.stop_connector(name, etag)

    def restart_connector(self, request: RestartRequest) -> ConnectorStatus | None:
        return self._mutations.restart_connector(request)

    def restart_task(self, task: TaskId) -> None:
        self._mutations.restart_task(task)

    def alter_offsets(
        self,
        name: str,
        offsets: Sequence[ConnectorOffset],
        all_partitions_time_ms: int | None = None,
        etag: str = "",
    ) -> OffsetsChange:
        return self._mutations.alter_offsets(name, offsets, all_partitions_time_ms, etag)

    def reset_offsets(self, name: str, etag: str = "") -> OffsetsChange:
        return self._mutations.reset_offsets(name, etag)

    def reset_connector_topics(self, name: str) -> None:
        self._mutations.reset_connector_topics(name)

    def put_task_configs(self, name: str, configs: list[dict[str, str]]) -> None:
        self._mutations.put_task_configs(name, configs)

    def set_cluster_log_level(self, namespace: str, level: str) -> None:
        self._mutations.set_cluster_log_level(namespace, level)

    # request ids (api.idempotency.SharedAnswers): answers in the config topic

    def answer_for(self, request_id: str) -> tuple[float, bytes, bytes] | None:
        return self._answers.answer_for(request_id)

    def remember_answer(
        self, request_id: str, stored_at: float, fingerprint: bytes, payload: bytes
    ) -> None:
        self._answers.remember(request_id, stored_at, fingerprint, payload)

    # the leader's writer

    def leads(self) -> bool:
        return self._writer.leads()

    def answers_writes(self) -> bool:
        """Whether this worker's servicer answers the leader's writes rather than relaying
        them: it leads, or it knows Kafka is unreachable (then it refuses them at once,
        where a relay would hold the caller to its deadline looking for a leader)."""
        return self.leads() or self._kafka_away_for() is not None

    # exactly-once source support: fencing task generations

    def fence_zombies(self, name: str) -> int:
        return self._fencing.fence_zombies(name)

    def await_fenced_generation(self, name: str) -> None:
        self._fencing.await_fenced_generation(name)
