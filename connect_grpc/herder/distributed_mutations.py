"""The DistributedHerder's mutations: the leader carries them out; any other worker raises
NotLeaderError (the gRPC layer then forwards the call to the leader), except an
unconditional pause or resume without a request id, which any worker writes itself, as
Kafka Connect's workers do (``follower_writes``, decision 0100).

Each is checked and written under its connector's lock against the leader's own view: a
create, a config, a deletion, a target state, a restart request, task configs, an offsets
change, a cluster-wide log level. Since a pause or resume written by another worker takes
no lock here, a conditional write checks its etag again right before its transaction
commits (``LeaderWriter.write``'s guard), and what must see every acknowledged target state
(an offsets change's STOPPED, task configs refused for a connector not STARTED) reads the
config topic to its end first. A plain restart and a task's restart are carried out
synchronously by the worker that runs the instance (NotLeaderError names that worker).
Separate from the reads, which every worker answers, and from the leader's writer, which
only knows how to write records, not which records a change is.

Lock: each connector's lock (``ConnectorLocks``), around the check, the plugin validation
and the Kafka writes of one change, bounded by the caller's deadline (a waiter that runs out
gets UNAVAILABLE). No herder-wide lock is taken, and no lock is held across a wait for
another worker.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from connect_grpc.cluster.extension_records import WorkerRecord, assignment_in, worker_records
from connect_grpc.cluster.fenced_writer import FencedWriter
from connect_grpc.config.worker import WorkerConfig
from connect_grpc.herder.cut_short_writes import removal_leftovers
from connect_grpc.herder.distributed_etags import ClusterEtags
from connect_grpc.herder.distributed_reads import DistributedReads
from connect_grpc.herder.distributed_view import LEADER_CALL_TIMEOUT_S, ClusterView
from connect_grpc.herder.etags import connector_etag, no_connector_for_etag, offsets_version_in
from connect_grpc.herder.follower_writes import FollowerWrites
from connect_grpc.herder.instance_rules import not_stopped, require_topic_tracking
from connect_grpc.herder.leader_writer import LeaderWriter
from connect_grpc.herder.locks import ConnectorLocks
from connect_grpc.herder.offset_manager import OffsetManager
from connect_grpc.herder.reconciler import Reconciler
from connect_grpc.herder.recorded_answers import answer_record, with_answer
from connect_grpc.herder.restart import build_restart_plan
from connect_grpc.herder.status import StatusBoard
from connect_grpc.herder.validation import ConfigValidator, patched_config, validate_name
from connect_grpc.kernel import deadline, request_answer
from connect_grpc.kernel.domain import (
    ConnectorOffset,
    ConnectorStatus,
    CreateResult,
    OffsetsChange,
    PutConfigResult,
    RestartRequest,
    TargetState,
    TaskId,
)
from connect_grpc.kernel.errors import (
    AlreadyExistsError,
    NotFoundError,
    NotLeaderError,
    UnavailableError,
)
from connect_grpc.storage.config_codec import (
    REMOVAL_CHANGE_INDEX,
    RawRecord,
    connector_config_records,
    log_level_records,
    removal_records,
    restart_records,
    target_state_records,
    task_config_records,
)
from connect_grpc.storage.config_snapshot import ConfigSnapshot

#: The trimmed, checked name and the config with it (``HerderCommon._normalised``).
Normaliser = Callable[[str, Mapping[str, str]], tuple[str, dict[str, str]]]
#: Validates a new connector and writes its initial offsets (``_validated_for_create``).
CreateValidator = Callable[
    [str, Mapping[str, str], Sequence[ConnectorOffset] | None, int | None], OffsetsChange
]


class DistributedMutations:
    """The leader's side of every mutation (thread-safe)."""

    def __init__(
        self,
        view: ClusterView,
        writer: LeaderWriter,
        etags: ClusterEtags,
        reads: DistributedReads,
        locks: ConnectorLocks,
        *,
        config: WorkerConfig,
        validator: ConfigValidator,
        offset_manager: OffsetManager,
        reconciler: Reconciler,
        board: StatusBoard,
        normalised: Normaliser,
        validated_for_create: CreateValidator,
        worker_id: str,
        log: Any,
        follower_writes: FollowerWrites | None = None,
    ) -> None:
        """``follower_writes``: how this worker writes an unconditional pause or resume
        itself while it does not lead (None: it forwards every one to the leader)."""
        self._view = view
        self._statuses = view.statuses
        self._writer = writer
        self._etags = etags
        self._reads = reads
        self._connector_locks = locks
        self._config = config
        self._validator = validator
        self._offset_manager = offset_manager
        self._reconciler = reconciler
        self._board = board
        self._normalised = normalised
        self._validated_for_create = validated_for_create
        self._id = worker_id
        self._log = log
        self._follower = follower_writes

    def create_connector(
        self,
        name: str,
        config: Mapping[str, str],
        initial_state: TargetState,
        initial_offsets: Sequence[ConnectorOffset] | None = None,
        initial_offsets_time_ms: int | None = None,
    ) -> CreateResult:
        self._writer.for_write()  # a follower forwards before doing any work
        name, full_config = self._normalised(name, config)
        with self._connector_locks.hold(name):
            self._writer.for_write()
            if self._view.snapshot().contains(name):
                raise AlreadyExistsError(f"Connector {name} already exists")
            initial = self._validated_for_create(
                name, full_config, initial_offsets, initial_offsets_time_ms
            )
            version, version_records = self._etags.next_offsets_version(
                self._view.snapshot(), name
            )
            etag = connector_etag(name, full_config, initial_state, version)
            result = CreateResult(
                self._reads.info(name, full_config, 0, etag), initial.message, initial.resolved
            )
            self._write_new_connector(name, full_config, initial_state, version_records, result)
            self._log.info("connector_created", connector=name, initial_state=initial_state.value)
            return result

    def put_connector_config(
        self, name: str, config: Mapping[str, str], etag: str = ""
    ) -> PutConfigResult:
        self._writer.for_write()  # a follower forwards before doing any work
        name, full_config = self._normalised(name, config)
        with self._connector_locks.hold(name):
            writer = self._writer.for_write()
            if etag and not self._view.snapshot().contains(name):
                raise no_connector_for_etag(name)
            self._etags.require(name, etag)
            return self._put_config(writer, name, full_config, etag=etag)

    def patch_connector_config(
        self, name: str, patch: Mapping[str, str | None], etag: str = ""
    ) -> PutConfigResult:
        self._writer.for_write()  # a follower forwards before doing any work
        name = validate_name(name)
        with self._connector_locks.hold(name):
            writer = self._writer.for_write()
            current = self._view.config_of(self._view.snapshot(), name)
            self._etags.require(name, etag)
            _, full_config = self._normalised(name, patched_config(current, patch))
            return self._put_config(writer, name, full_config, etag=etag)

    def _put_config(
        self, writer: FencedWriter, name: str, full_config: dict[str, str], *, etag: str
    ) -> PutConfigResult:
        """Validates and writes a whole config; the caller holds the connector's lock and
        checked ``etag`` (empty: an unconditional write)."""
        self._validator.ensure_valid(full_config)
        snapshot = self._view.snapshot()
        created = not snapshot.contains(name)
        task_count = 0 if created else len(snapshot.task_configs(name))
        if created:
            version, version_records = self._etags.next_offsets_version(snapshot, name)
        else:
            version, version_records = str(offsets_version_in(snapshot.extensions, name)), []
        target = snapshot.target_state(name) or TargetState.STARTED
        after = connector_etag(name, full_config, target, version)
        result = PutConfigResult(
            self._reads.info(name, full_config, task_count, after), created=created
        )
        if created:
            self._write_new_connector(
                name, full_config, TargetState.STARTED, version_records, result
            )
        elif etag:
            self._writer.write(
                writer, with_answer(connector_config_records(name, full_config), result),
                guard=self._unchanged(name, etag),
            )
        else:
            self._writer.write_in_term(
                connector_config_records(name, full_config), answer_record(result)
            )
        self._log.info("connector_config_written", connector=name, created=created)
        return result

    def delete_connector(self, name: str, etag: str = "") -> None:
        """Without an etag, written without a transaction (as Kafka Connect does): the
        connector tombstone first, carrying the answer, then the cleanup
        (``removal_records``: every prefix leaves the connector as it was or deleted; the
        leader finishes a removal cut short, ``CutShortWrites.finish_removals``). With one,
        a transaction, as the other conditional writes."""
        with self._connector_locks.hold(name):
            writer = self._writer.for_write()
            snapshot = self._view.snapshot()
            self._view.config_of(snapshot, name)
            self._etags.require(name, etag)
            records = removal_records(name, len(snapshot.task_configs(name)))
            if etag:
                self._writer.write(
                    writer, with_answer(records, None), guard=self._unchanged(name, etag)
                )
            else:
                self._writer.write_in_term(
                    records, answer_record(None), wake_leader=True,
                    change_index=REMOVAL_CHANGE_INDEX,
                )
            self._log.info("connector_deleted", connector=name)

    def pause_connector(self, name: str, etag: str = "") -> str:
        return self._pause_or_resume(name, TargetState.PAUSED, etag)

    def resume_connector(self, name: str, etag: str = "") -> str:
        return self._pause_or_resume(name, TargetState.STARTED, etag)

    def _pause_or_resume(self, name: str, state: TargetState, etag: str) -> str:
        """On a worker that does not lead, an unconditional call without a request id is
        written here (``FollowerWrites``), as Kafka Connect's workers write it; the leader
        writes the others: a conditional one (its etag is checked under the connector's
        lock, and again right before the write commits), and one with a request id (the
        leader's request log runs it once, even while a retry of it is in flight)."""
        follower = self._follower
        if follower and not etag and not request_answer.pending() and not self._writer.leads():
            return follower.target_state(name, state)
        return self._write_target_state(name, state, etag=etag)

    def stop_connector(self, name: str, etag: str = "") -> str:
        """STOPPED, and no task configs: the tasks stop everywhere (KIP-875).

        Without an etag, written without a transaction: the target state first, carrying
        the answer (alone it stops the connector and its tasks in every view), then the
        empty task configs, the cleanup. A stop cut short leaves a STOPPED connector with
        task configs, which runs no task and which the leader finishes
        (``CutShortWrites.finish_stops``). With an etag, a transaction, as the other
        conditional writes."""
        return self._write_target_state(
            name, TargetState.STOPPED, cleanup=task_config_records(name, []), etag=etag
        )

    def _write_target_state(
        self, name: str, state: TargetState, *, cleanup: list[RawRecord] | None = None,
        etag: str = "",
    ) -> str:
        """Writes the target state, then the ``cleanup`` records; returns the connector's
        etag after the write (the answer a request id stores with it, so a retry that
        reaches a later leader replays that etag too)."""
        with self._connector_locks.hold(name):
            writer = self._writer.for_write()
            snapshot = self._view.snapshot()
            config = self._view.config_of(snapshot, name)
            self._etags.require(name, etag)
            version = offsets_version_in(snapshot.extensions, name)
            after = connector_etag(name, config, state, str(version))
            records = target_state_records(name, state) + (cleanup or [])
            if etag:
                self._writer.write(
                    writer, with_answer(records, after), guard=self._unchanged(name, etag)
                )
            else:
                self._writer.write_in_term(
                    records, answer_record(after), wake_leader=bool(cleanup),
                    change_index=0,
                )
            self._log.info("connector_target_state_written", connector=name, state=state.value)
            return after

    def restart_connector(
        self, request: RestartRequest, *, carried: Sequence[RawRecord] = ()
    ) -> ConnectorStatus | None:
        """KIP-745 on a cluster: the leader writes the request to the config topic, and each
        worker restarts those of its instances that the request chooses by that worker's
        own view of their statuses, when it reads the request. The answer shows the plan by
        the leader's view, read to the status topic's end first. ``carried``: extension
        records the request's record carries, applied with it or not at all (the leader's
        auto-restart progress that counts the restart); only for a flagged restart.

        The request is written even when the leader's view shows nothing to restart, as
        Kafka Connect writes it: that view of other workers' statuses may lag theirs (an
        only-failed restart just after a failure would otherwise be lost).

        A plain restart (no flags) is carried out by the connector's worker synchronously,
        as in standalone mode: another worker raises NotLeaderError naming that worker, so
        that the call is forwarded there.
        """
        name = request.connector
        if not request.include_tasks and not request.only_failed:
            if carried:
                raise ValueError("only a flagged restart's record carries other records")
            snapshot = self._view.snapshot()
            self._view.config_of(snapshot, name)
            self._require_owner(snapshot, name)
            self._reconciler.restart_connector(name)
            return None
        with self._connector_locks.hold(name):
            self._writer.for_write()
            self._view.config_of(self._view.snapshot(), name)
            # the answer's plan by every status written before the call (another worker's
            # report of a failure that the caller saw, say), not by this view's lag
            self._statuses.refresh(deadline.remaining(LEADER_CALL_TIMEOUT_S))
            plan = build_restart_plan(request, self._reads.connector_status(name))
            # one record, the change, carrying the answer; no assignment changes with it
            self._writer.write_in_term(
                restart_records(request), answer_record(plan.status), change_index=0,
                carried=carried,
            )
            self._log.info("connector_restart_requested", connector=name,
                           include_tasks=request.include_tasks, only_failed=request.only_failed)
            return plan.status

    def restart_task(self, task: TaskId) -> None:
        """Restarts one task on the worker that runs it, synchronously (forwarded there)."""
        snapshot = self._view.snapshot()
        self._view.config_of(snapshot, task.connector)
        if not 0 <= task.task < len(snapshot.task_configs(task.connector)):
            raise NotFoundError(f"Unknown task {task.task} of connector {task.connector}")
        self._require_owner(snapshot, task)
        self._reconciler.restart_task(task)

    def _require_owner(self, snapshot: ConfigSnapshot, instance: str | TaskId) -> None:
        """Raises NotLeaderError naming the worker that runs ``instance`` unless it is this
        one (the forwarding layer then sends the call there).

        When this view shows no owner, or not the owner's address, the config and status
        topics are read to their end once first, within the caller's deadline, as Kafka
        Connect's herder catches up with its config topic before it answers: the assignment
        or the worker's record may be written already and only not read here yet. Still
        none: UNAVAILABLE (retry). No lock is held while it reads."""
        owner = assignment_in(snapshot).owner_of(instance)
        if owner == self._id:
            return
        address = worker_records(self._statuses.extensions()).get(owner or "")
        if owner is None or address is None:
            owner, address = self._owner_after_catching_up(instance)
            if owner == self._id:
                return
        if owner is None or address is None:
            raise UnavailableError(f"{instance} is not assigned to a worker yet; retry", 1.0)
        raise NotLeaderError(
            f"{instance} runs on worker {owner}", leader_id=owner, leader_address=address.address
        )

    def _owner_after_catching_up(
        self, instance: str | TaskId
    ) -> tuple[str | None, WorkerRecord | None]:
        """The owner of ``instance`` and its worker record once the config topic, then the
        status topic, are read to their end (as far as the caller's deadline allows: a read
        cut short answers from what was read)."""
        try:
            self._view.configs.refresh(deadline.remaining(LEADER_CALL_TIMEOUT_S))
            self._statuses.refresh(deadline.remaining(LEADER_CALL_TIMEOUT_S))
        except UnavailableError:
            connector, task = (instance, None) if isinstance(instance, str) else instance
            self._log.info("owner_catch_up_cut_short", connector=connector, task=task)
        owner = assignment_in(self._view.snapshot()).owner_of(instance)
        return owner, worker_records(self._statuses.extensions()).get(owner or "")

    def alter_offsets(
        self,
        name: str,
        offsets: Sequence[ConnectorOffset],
        all_partitions_time_ms: int | None = None,
        etag: str = "",
    ) -> OffsetsChange:
        with self._connector_locks.hold(name):
            self._writer.for_write()
            self._read_to_end()
            self._etags.require(name, etag)
            change = self._offset_manager.alter(
                name, self._stopped_config(name), offsets, all_partitions_time_ms
            )
            return replace(change, etag=self._etags.offsets_changed(name))

    def reset_offsets(self, name: str, etag: str = "") -> OffsetsChange:
        with self._connector_locks.hold(name):
            self._writer.for_write()
            self._read_to_end()
            self._etags.require(name, etag)
            message = self._offset_manager.reset(name, self._stopped_config(name))
            return OffsetsChange(message, etag=self._etags.offsets_changed(name))

    def _read_to_end(self) -> None:
        """Reads the config topic to its end: a resume or pause another worker wrote itself
        (not under this leader's lock) and acknowledged before this call must be seen by an
        offsets change, which needs the connector STOPPED, and by the etag it checks."""
        self._view.configs.refresh(deadline.remaining(LEADER_CALL_TIMEOUT_S))

    def _unchanged(self, name: str, etag: str) -> Callable[[ConfigSnapshot], None]:
        """The guard of a conditional write: the etag still the connector's right before the
        write commits (a pause or resume written by another worker meanwhile aborts it)."""
        return lambda snapshot: self._etags.require_in(snapshot, name, etag)

    def _stopped_config(self, name: str) -> dict[str, str]:
        """Cluster-wide STOPPED: the target state, and no task configs (so no task of it
        runs on any worker once each has read the config topic)."""
        snapshot = self._view.snapshot()
        config = dict(self._view.config_of(snapshot, name))
        if snapshot.target_state(name) is not TargetState.STOPPED or snapshot.task_configs(name):
            raise not_stopped(name)
        return config

    def reset_connector_topics(self, name: str) -> None:
        """The leader writes the tombstones (a write: forwarded to it, like Kafka Connect's
        request), and answers once they are in the status topic (bounded wait)."""
        require_topic_tracking(self._config, reset=True)
        self._writer.for_write()
        self._board.reset_active_topics(name)
        self._view.flush_statuses(self._log)

    def put_task_configs(self, name: str, configs: list[dict[str, str]]) -> None:
        """Writes the task configs the connector's worker generated (leader only).

        Ignored when the connector is gone or no longer STARTED (a late submission)."""
        with self._connector_locks.hold(name):
            writer = self._writer.for_write()
            snapshot = self._view.snapshot()
            if not _started(snapshot, name):
                # the resume that started the connector may have been written by another
                # worker, read by the connector's worker before this view read it
                self._read_to_end()
                snapshot = self._view.snapshot()
            # a connector deleted meanwhile may have left a target state (a removal cut
            # short): task configs written for it would be a new connector's of that name
            if not _started(snapshot, name):
                self._log.info("task_configs_ignored", connector=name)
                return
            if [dict(c) for c in snapshot.task_configs(name)] == configs:
                return
            records = task_config_records(name, list(configs))
            if self._config.exactly_once_source_enabled:
                self._writer.write(writer, records)
            else:
                self._writer.write_in_term(records, None, wake_leader=True)
            self._log.info("task_configs_written", connector=name, tasks=len(configs))

    def set_cluster_log_level(self, namespace: str, level: str) -> None:
        """KIP-976: the leader writes the level to the config topic; every worker applies it
        when it reads it (the herder's config listener), this one before the call returns."""
        writer = self._writer.for_write()
        self._writer.write(writer, log_level_records(namespace, level), wake_leader=False)
        self._log.info("cluster_log_level_written", namespace=namespace, level=level)

    def _write_new_connector(
        self,
        name: str,
        config: dict[str, str],
        state: TargetState,
        version_records: list[RawRecord],
        result: object,
    ) -> None:
        """A new connector without a transaction: its target state and offsets version
        first, its config last, carrying the answer. A write cut short (a crash, a deposed
        leader's records refused after the config's) leaves at most a target state and a
        version of a connector that does not exist, which its next create overwrites. An
        unfinished removal of the name is finished first (its task configs would otherwise
        outlive the tombstone that hides them and, once compaction drops it, be the new
        connector's in the view of a worker that reads the topic from its start)."""
        records = removal_leftovers(self._view.snapshot(), name)
        records += [*target_state_records(name, state), *version_records]
        records += connector_config_records(name, config)
        self._writer.write_in_term(records, answer_record(result), wake_leader=True)


def _started(snapshot: ConfigSnapshot, name: str) -> bool:
    """Whether the connector exists and its target state is STARTED."""
    return snapshot.contains(name) and snapshot.target_state(name) is TargetState.STARTED
