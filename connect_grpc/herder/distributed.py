"""DistributedHerder: one worker of a cluster that shares its state through Kafka topics.

Who does what (docs/distributed.md):

- **Every worker** tails the three topics (configs, offsets, statuses), answers reads from
  that local view, and runs the connectors and tasks the published assignment gives it
  (the *reconciler* thread: the assignment and the config topic are the truth, the
  worker's instances are brought in line with them).
- **The leader** (the member the group coordinator gives the election partition,
  ``cluster.membership``) writes the config topic, through a transactional writer that
  fenced the previous leader (``cluster.fenced_writer``). It carries out every mutation
  (other workers forward them: they raise NotLeaderError, which the gRPC layer turns into
  a call to the leader) but an unconditional pause or resume, which any worker writes
  itself as in Kafka Connect (``follower_writes``), and publishes the assignment of
  connectors and tasks over the live workers (the *leader* thread).

This module builds the worker's stores, runtime and election and the collaborators it
delegates to: ``distributed_view`` (the view of the topics they share), ``distributed_reads``,
``distributed_mutations``, ``distributed_etags``, ``recorded_answers`` (request ids),
``leader_writer`` (office, fenced and unfenced writes), ``leader_loop`` (with
``cut_short_writes`` and ``leader_assignment``) and ``task_fencing`` (exactly-once source
support). It keeps the lifecycle, and the election's and the stores' listeners; the public
interface (the ``Herder`` protocol and what the cluster's gRPC services call), each call
handed to the collaborator that carries it out, is ``distributed_calls``'s.

Locks: a connector lock (``ConnectorLocks``, shared by the mutations, the finishing of
cut-short writes and the fencing of task generations) serialises the leader's changes of one
connector (plugin validation and Kafka writes happen under it, bounded by the caller's
deadline); the leader's writer guards its office, and the view its owed position, each with
a lock held across no I/O. No herder-wide lock is taken, and no lock is held across a wait
for another worker.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable

import structlog

from connect_grpc.cluster.config import DistributedConfig
from connect_grpc.cluster.extension_records import (
    ASSIGNMENT_KEY,
    WORKER_KEY_PREFIX,
    WorkerRecord,
    assignment_in,
    worker_key,
)
from connect_grpc.cluster.membership import ElectionConfig, LeaderElection, Leadership
from connect_grpc.cluster.topics import ensure_internal_topics
from connect_grpc.config.worker import WorkerConfig
from connect_grpc.config_providers.transformer import ConfigTransformer
from connect_grpc.connectors.plugins import Plugins
from connect_grpc.herder.cut_short_writes import CutShortWrites
from connect_grpc.herder.distributed_calls import DistributedCalls
from connect_grpc.herder.distributed_etags import ClusterEtags
from connect_grpc.herder.distributed_mutations import DistributedMutations
from connect_grpc.herder.distributed_reads import DistributedReads
from connect_grpc.herder.distributed_view import LEADER_CALL_TIMEOUT_S, ClusterView
from connect_grpc.herder.follower_writes import FollowerWrites
from connect_grpc.herder.health_checks import LoopHeartbeats, group_readiness, live_and_ready
from connect_grpc.herder.interface import WorkerRuntime
from connect_grpc.herder.java_plugins import JavaPlugins, config_validator
from connect_grpc.herder.leader_assignment import AssignmentPublisher
from connect_grpc.herder.leader_auto_restart import leader_auto_restarter
from connect_grpc.herder.leader_loop import LeaderLoop
from connect_grpc.herder.leader_writer import LeaderWriter
from connect_grpc.herder.locks import ConnectorLocks
from connect_grpc.herder.offset_manager import OffsetManager
from connect_grpc.herder.reconciler import Reconciler
from connect_grpc.herder.recorded_answers import RecordedAnswers
from connect_grpc.herder.status import StatusBoard
from connect_grpc.herder.task_fencing import FencingRequester, TaskFencing
from connect_grpc.kernel import deadline
from connect_grpc.kernel.domain import HealthReport, RestartRequest, TargetState
from connect_grpc.kernel.errors import (
    ConnectError,
    InvalidArgumentError,
    NotLeaderError,
    UnavailableError,
)
from connect_grpc.kernel.start_phases import running_beside, start_phase
from connect_grpc.logs.levels import LoggerLevels, parse_level
from connect_grpc.metrics.worker_metrics import WorkerMetrics
from connect_grpc.runtime.client_settings import lookup_conf
from connect_grpc.runtime.record_times import RecordTimes
from connect_grpc.runtime.worker import Worker
from connect_grpc.storage.config_codec import SESSION_KEY_KEY
from connect_grpc.storage.config_snapshot import ConfigSnapshot
from connect_grpc.storage.connector_offsets import ConnectorOffsetStores
from connect_grpc.storage.consumer_groups import ConsumerGroupOffsets
from connect_grpc.storage.kafka_admin import IsolatedAdmin
from connect_grpc.storage.kafka_config import KafkaConfigStore
from connect_grpc.storage.kafka_offsets import KafkaOffsetStore
from connect_grpc.storage.kafka_status import KafkaStatusStore

log = structlog.get_logger(__name__)

#: Sends task configs to the leader: (leader address, connector, configs, timeout).
TaskConfigSender = Callable[[str, str, list[dict[str, str]], float], None]

#: Config changes after which the leader looks whether the assignment must change.
ASSIGNMENT_CHANGES = frozenset({"connector", "tasks"})


def client_config(config: WorkerConfig) -> dict[str, str]:
    """The librdkafka settings every Kafka client of the worker shares."""
    return {"bootstrap.servers": config.bootstrap_servers, **config.prefixed("admin.")}


class DistributedHerder(DistributedCalls):
    """The Herder of a worker in distributed mode (``connect-grpc distributed``)."""

    def __init__(
        self,
        config: WorkerConfig,
        cluster: DistributedConfig,
        plugins: Plugins,
        *,
        task_config_sender: TaskConfigSender | None = None,
        fencing_requester: FencingRequester | None = None,
        runtime_factory: Callable[[StatusBoard, KafkaOffsetStore], WorkerRuntime] | None = None,
        metrics: WorkerMetrics | None = None,
        java_plugins: JavaPlugins | None = None,
    ) -> None:
        """``metrics``: where the worker's runtime counts (see ``runtime.worker.Worker``);
        ``java_plugins``: the Java plugins of ``plugin.path`` (None: it holds none)."""
        self._config = config
        self._cluster = cluster
        self._plugins = plugins
        self._id = config.worker_id
        self._client = client_config(config)
        self._log = log.bind(worker_id=self._id)
        self._configs = KafkaConfigStore(
            self._client,
            cluster.config_topic,
            cluster.config_replication_factor,
            on_change=self._on_config_change,
        )
        self._statuses = KafkaStatusStore(
            self._client,
            cluster.status_topic,
            cluster.status_partitions,
            cluster.status_replication_factor,
            on_change=self._on_status_change,
            on_extension=self._on_status_extension,
        )
        self._offsets = KafkaOffsetStore(
            self._client,
            cluster.offset_topic,
            cluster.offset_partitions,
            cluster.offset_replication_factor,
        )
        self._view = ClusterView(self._configs, self._statuses)
        transformer = ConfigTransformer.from_specs(
            config.config_providers, java_plugins.config_lookup if java_plugins else None
        )
        self._validator = config_validator(
            java_plugins,
            plugins,
            config.limits.tasks_max,
            config.exactly_once_source,
            transformer,
            worker_group_id=cluster.group_id,
            topic_creation_enabled=config.topic_creation_enabled,
            worker_converters=config.converters,
            override_policy=config.client_override_policy,
        )
        self._connector_offsets = ConnectorOffsetStores(self._offsets, self._open_offsets)
        self._election = LeaderElection(
            ElectionConfig(
                self._client,
                cluster.group_id,
                cluster.leader_election_topic,
                self._id,
                cluster.session_timeout_ms,
                cluster.heartbeat_interval_ms,
                cluster.rebalance_timeout_ms,
            ),
            listener=self,
            on_rebalanced=self._on_group_rebalanced,
        )
        self._admin = IsolatedAdmin({**self._client, "client.id": f"{self._id}-admin"},
                                    config.log_format)
        self._send_task_configs = task_config_sender
        self._connector_locks = ConnectorLocks()
        self._stopping = threading.Event()
        self._leader_wake = threading.Event()
        self._threads: list[threading.Thread] = []
        self._heartbeats = LoopHeartbeats(config.resilience.liveness_timeout_ms)
        self._started = False
        self._writer = LeaderWriter(
            self._view, self._election, self._leader_wake, self._log,
            client=self._client, cluster=cluster, worker_id=self._id,
            refuse_while_kafka_unreachable=self._refuse_while_kafka_unreachable,
            authenticates=config.security.authenticates,
        )
        self._fencing = TaskFencing(
            self._view, self._writer, self._election, self._connector_locks,
            config=config, cluster=cluster, client=self._client, offsets=self._offsets,
            connector_offsets=self._connector_offsets, request_fencing=fencing_requester,
            worker_id=self._id, log=self._log,
        )
        self._offset_manager = OffsetManager(
            plugins,
            self._connector_offsets.for_config,
            ConsumerGroupOffsets(self._client),
            self._fencing.write_offsets_exactly_once
            if config.exactly_once_source_enabled else None,
            transformer,
            record_times=RecordTimes(functools.partial(lookup_conf, config)),
        )
        self._loggers = LoggerLevels()
        self._board = StatusBoard(self._id, self._statuses)
        self._board.set_reconfiguration_handler(self._on_reconfiguration_requested)
        self._board.set_expiry_handler(self._on_config_expired)
        self._worker: WorkerRuntime = (
            runtime_factory(self._board, self._offsets)
            if runtime_factory
            else Worker(
                config,
                plugins,
                self._offsets,
                self._board,
                exactly_once=self._fencing.exactly_once(),
                offsets_for=self._connector_offsets.for_config,
                metrics=metrics,
                transformer=transformer,
                active_topics=self._board if config.topic_tracking_enabled else None,
                hosts_java_tasks=java_plugins is not None,
            )
        )
        #: Whether restart requests read from the config topic are carried out (not those
        #: read while the store starts: a worker that joins does not replay old ones).
        self._listening = False
        self._reconciler = Reconciler(
            self._id,
            self._worker,
            self._board,
            self._statuses,
            snapshot=self._view.snapshot,
            connector_status=self.connector_status,
            submit_task_configs=self._submit_task_configs,
            confirm=self._write_worker_record,
            stopping=self._stopping,
        )
        self._kafka_cluster_id = ""
        etags = ClusterEtags(self._view, self._writer)
        self._reads = DistributedReads(
            self._view, etags, self._board, plugins, self._election, config=config,
            cluster=cluster, connector_offsets=self._connector_offsets,
            offset_manager=self._offset_manager, worker_id=self._id,
        )
        self._mutations = DistributedMutations(
            self._view, self._writer, etags, self._reads, self._connector_locks,
            config=config, validator=self._validator, offset_manager=self._offset_manager,
            reconciler=self._reconciler, board=self._board, normalised=self._normalised,
            validated_for_create=self._validated_for_create, worker_id=self._id,
            log=self._log,
            follower_writes=FollowerWrites(
                self._view, self._writer, self._log,
                authenticates=config.security.authenticates,
            ),
        )
        self._answers = RecordedAnswers(self._view, self._writer, self._log)
        self._assignment = AssignmentPublisher(
            self._view, self._writer, self._election, self._admin, self._board,
            cluster=cluster, worker_id=self._id, wake=self._leader_wake, log=self._log,
        )
        self._leader = LeaderLoop(
            self._view, self._writer, self._election,
            cut_short=CutShortWrites(self._view, self._writer, self._connector_locks, self._log),
            assignment=self._assignment, answers=self._answers, cluster=cluster,
            auto_restart=leader_auto_restarter(
                self._view, self._writer, self._reads.connector_status,
                self._mutations.restart_connector, self._log,
                metrics=None if metrics is None else metrics.auto_restarts),
            wake=self._leader_wake, stopping=self._stopping, log=self._log,
        )

    # lifecycle

    def start(self) -> None:
        """Creates or checks the internal topics, reads them while the runtime starts, joins
        the group, then serves. Raises StartupError for unusable topics.

        The runtime's start (Spark: seconds of CPU) and the reads (mostly waits on Kafka)
        need nothing of each other, so they overlap; the topics come first, so that an
        unusable one stops the start before Spark does."""
        with start_phase("internal_topics"):
            self._kafka_cluster_id = ensure_internal_topics(
                self._client, self._cluster, self._cluster.default_api_timeout_ms / 1000
            )
        with running_beside(self._start_runtime, "runtime-start"), start_phase("stores"):
            self._offsets.start()
            self._statuses.start()
            self._configs.start()
            self._listening = True
        self._write_worker_record()
        self._election.start()
        for target, name in ((self._leader.run, "cluster-leader"),
                             (self._reconciler.run, "cluster-reconciler")):
            beat = self._heartbeats.loop(name).beat
            thread = threading.Thread(target=target, args=(beat,), name=name, daemon=True)
            thread.start()
            self._threads.append(thread)
        self._started = True
        self._log.info("herder_started", mode="distributed", group_id=self._cluster.group_id)

    def _start_runtime(self) -> None:
        with start_phase("runtime"):
            self._worker.start()

    def stop(self) -> None:
        """Stops this worker's instances, then leaves the group (so that another worker
        takes them over only once they stopped), then closes the stores."""
        self._stopping.set()
        self._leader_wake.set()
        self._reconciler.wake()
        for thread in self._threads:
            thread.join(timeout=LEADER_CALL_TIMEOUT_S)
        self._worker.stop()
        self._election.close()
        self._writer.close()
        self._admin.close()
        self._configs.stop()
        self._statuses.stop()
        self._connector_offsets.stop()
        self._offsets.stop()
        self._board.close()
        self._log.info("herder_stopped")

    def health(self) -> HealthReport:
        return live_and_ready(self.liveness, self.readiness)

    def liveness(self) -> HealthReport:
        """The leader and reconciler threads have gone round within the bound."""
        return self._heartbeats.report()

    def readiness(self) -> HealthReport:
        """Started, Kafka reachable, a member of the group, named by the assignment it read
        (the store's view as read: no wait for Kafka)."""
        return self._kafka_report() or group_readiness(
            started=self._started,
            left_with=self._election.leadership().error,
            member=self._election.is_member(),
            assigned=assignment_in(self._configs.snapshot()).workers,
            worker_id=self._id,
        )

    # LeadershipListener (on the election's thread: only wakes the leader thread)

    def on_elected(self, leadership: Leadership) -> None:
        self._log.info("leadership_won", changes=leadership.changes)
        self._assignment.count_rebalance()
        self._leader_wake.set()

    def _on_group_rebalanced(self) -> None:
        self._assignment.on_group_rebalanced()

    def on_deposed(self, leadership: Leadership) -> None:
        self._log.info("leadership_lost", changes=leadership.changes, error=leadership.error)
        self._leader_wake.set()

    # the parts' callbacks

    def _submit_task_configs(self, name: str, configs: list[dict[str, str]]) -> None:
        """(The reconciler's) Sends the task configs a connector of this worker generated
        to the leader: this worker's own mutations when it leads, else a call to it."""
        if self._election.is_leader():
            with deadline.scope(LEADER_CALL_TIMEOUT_S):
                try:
                    self.put_task_configs(name, configs)
                    return
                except NotLeaderError:
                    pass
        leader = self.leader_address()
        if leader is None or leader[0] == self._id or self._send_task_configs is None:
            raise UnavailableError("no leader to send task configs to", 1.0)
        self._send_task_configs(leader[1], name, configs, LEADER_CALL_TIMEOUT_S)

    def _open_offsets(self, topic: str) -> KafkaOffsetStore:
        """The started store of a connector's own offsets topic (created like the worker's
        when missing: compacted, the worker's offset.storage.* partitions and replicas)."""
        store = KafkaOffsetStore(
            self._client,
            topic,
            self._cluster.offset_partitions,
            self._cluster.offset_replication_factor,
        )
        store.start()
        return store

    # events

    def _on_config_change(self, kind: str, connector: str, restart: RestartRequest | None) -> None:
        """On the config store's thread: queue restart requests read after start-up (a
        worker that joins later does not replay old ones), wake the reconciler, and wake
        the leader's thread when the change may call for a new assignment (a connector
        created or deleted, a new set of task configs). Other changes (target states,
        restart requests, recorded answers, the assignment itself) leave the instances to
        assign as they were: waking the leader for them cost every pause and resume a look
        at the group's members (an admin call), run just as the write's caller is answered."""
        if kind == "restart" and restart is not None and self._listening:
            self._reconciler.queue_restart(restart)
        if kind == "extension" and connector == SESSION_KEY_KEY:
            self._view.observe_session_key()
        if kind == "logger":
            self._apply_cluster_log_level(connector)
            return
        if kind == "tasks" and _started_without_tasks(self._configs.snapshot(), connector):
            # a stop's cleanup read after a resume that another worker wrote between the
            # stop's two records (decision 0100): the connector runs with no task config;
            # its worker asks it for them again (a connector that has none asks in vain once)
            self._reconciler.request_regeneration(connector)
        if kind == "extension" and connector == ASSIGNMENT_KEY:
            self._reconciler.wake_for_assignment()
        else:
            self._reconciler.wake()
        if kind in ASSIGNMENT_CHANGES and self._election.is_leader():
            self._leader_wake.set()

    def _apply_cluster_log_level(self, namespace: str) -> None:
        """Applies the namespace's cluster-wide level as read, stamped with the time it was
        written (so every worker, a later one too, reports the same ``last_modified``)."""
        written = self._view.snapshot().log_levels.get(namespace)
        if written is None:
            return
        try:
            level = parse_level(written.level)
        except InvalidArgumentError:
            self._log.warning("cluster_log_level_skipped", namespace=namespace,
                              level=written.level)
            return
        self._loggers.set_level(namespace, level, at=written.written_at)

    def _on_status_change(self) -> None:
        self._board.notify_changed()

    def _on_status_extension(self, key: str) -> None:
        """A worker's record confirms the assignment generation it carried out: the leader
        publishes the next step as soon as the last live worker has confirmed, rather than
        at its next tick (up to TICK_S later, on every connector created or removed)."""
        if key.startswith(WORKER_KEY_PREFIX) and self._election.is_leader():
            self._leader_wake.set()

    def _on_reconfiguration_requested(self, name: str) -> None:
        self._reconciler.request_regeneration(name)

    def _on_config_expired(self, name: str) -> None:
        """A plain restart of the connector here, off the timer's thread, as Kafka Connect's
        worker restarts the connectors it runs whose values expired."""

        def restart() -> None:
            try:
                self._reconciler.restart_connector(name)
            except ConnectError as exc:  # stopped, moved or failed meanwhile: its status says
                log.warning("connector_restart_failed", connector=name, error=exc.message)

        threading.Thread(target=restart, name=f"expired-{name}", daemon=True).start()

    def _write_worker_record(self, generation: int = 0) -> None:
        """This worker's address and the assignment generation it has carried out."""
        record = WorkerRecord(self._id, self._cluster.advertised_address, generation)
        self._statuses.put_extension(worker_key(self._id), record.to_json())


def _started_without_tasks(snapshot: ConfigSnapshot, name: str) -> bool:
    return (
        snapshot.contains(name)
        and snapshot.target_state(name) is TargetState.STARTED
        and not snapshot.task_configs(name)
    )
