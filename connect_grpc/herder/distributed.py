"""DistributedHerder: one worker of a cluster that shares its state through Kafka topics.

Who does what (docs/distributed.md):

- **Every worker** tails the three topics (configs, offsets, statuses), answers reads from
  that local view, and runs the connectors and tasks the published assignment gives it
  (the *reconciler* thread: the assignment and the config topic are the truth, the
  worker's instances are brought in line with them).
- **The leader** (the member the group coordinator gives the election partition,
  ``cluster.membership``) alone writes the config topic, through a transactional writer
  that fenced the previous leader (``cluster.fenced_writer``). It carries out every
  mutation (other workers forward them: they raise NotLeaderError, which the gRPC layer
  turns into a call to the leader) and publishes the assignment of connectors and tasks
  over the live workers (the *leader* thread).

Locks: the herder lock guards only this object's small maps; a connector lock serialises
the leader's mutations of one connector (plugin validation and Kafka writes happen under
it, bounded by the caller's deadline); no lock is held across a wait for another worker.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

import structlog

from connect_grpc import __version__, deadline, request_answer
from connect_grpc.cluster.assignment import rebalance, safe_step
from connect_grpc.cluster.config import DistributedConfig
from connect_grpc.cluster.fenced_writer import FencedWriter, leader_transactional_id
from connect_grpc.cluster.membership import ElectionConfig, LeaderElection, Leadership
from connect_grpc.cluster.records import (
    ASSIGNMENT_KEY,
    LEADER_KEY,
    REQUEST_KEY_PREFIX,
    WORKER_KEY_PREFIX,
    AnswerRecord,
    AssignmentRecord,
    LeaderRecord,
    WorkerRecord,
    assignment_in,
    request_key,
    worker_key,
    worker_records,
)
from connect_grpc.cluster.topics import ensure_internal_topics
from connect_grpc.cluster.zombie_fencing import fence_producers
from connect_grpc.config_providers.transformer import ConfigTransformer
from connect_grpc.connectors.plugins import Plugins
from connect_grpc.domain import (
    ClusterInfo,
    ConnectorInfo,
    ConnectorOffset,
    ConnectorStatus,
    ConnectorType,
    CreateResult,
    HealthReport,
    InstanceStatus,
    OffsetsChange,
    PutConfigResult,
    RestartRequest,
    State,
    TargetState,
    TaskId,
    TaskInfo,
    TaskStatus,
    WorkerDesc,
)
from connect_grpc.errors import (
    AlreadyExistsError,
    InvalidArgumentError,
    NotFoundError,
    NotLeaderError,
    UnavailableError,
)
from connect_grpc.herder.base import WorkerRuntime
from connect_grpc.herder.common import HerderCommon
from connect_grpc.herder.etags import (
    connector_etag,
    no_connector_for_etag,
    offsets_version_in,
    offsets_version_key,
    require_etag,
)
from connect_grpc.herder.locks import ConnectorLocks
from connect_grpc.herder.offset_manager import OffsetManager
from connect_grpc.herder.reconciler import Reconciler
from connect_grpc.herder.restart import build_restart_plan
from connect_grpc.herder.rules import connector_type, not_stopped, require_topic_tracking
from connect_grpc.herder.status import StatusBoard
from connect_grpc.herder.ticker import run_ticks
from connect_grpc.herder.validation import (
    ConfigValidator,
    patched_config,
    validate_name,
)
from connect_grpc.loggers import LoggerLevels, parse_level
from connect_grpc.metrics.worker_metrics import RebalanceState, WorkerMetrics
from connect_grpc.runtime.kafka_io import lookup_conf
from connect_grpc.runtime.record_times import RecordTimes
from connect_grpc.runtime.transactions import (
    ExactlyOnceSource,
    connector_transactional_id,
    task_transactional_id,
)
from connect_grpc.runtime.worker import Worker
from connect_grpc.security.session_key import KeyRing, SessionKey
from connect_grpc.storage.base import OffsetEntry
from connect_grpc.storage.connector_offsets import ConnectorOffsetStores, put_fallback
from connect_grpc.storage.consumer_groups import ConsumerGroupOffsets
from connect_grpc.storage.kafka_admin import IsolatedAdmin
from connect_grpc.storage.kafka_config import (
    REMOVAL_CHANGE_INDEX,
    SESSION_KEY_KEY,
    ConfigSnapshot,
    KafkaConfigStore,
    RawRecord,
    connector_config_records,
    extension_record,
    log_level_records,
    removal_cleanup_records,
    removal_records,
    restart_records,
    session_key_record,
    target_state_records,
    task_config_records,
    task_count_records,
    term_marker_record,
)
from connect_grpc.storage.kafka_log import LogRecord
from connect_grpc.storage.kafka_offsets import KafkaOffsetStore, encode_records
from connect_grpc.storage.kafka_status import KafkaStatusStore
from connect_grpc.worker_config import WorkerConfig

log = structlog.get_logger(__name__)

#: How often the leader re-checks the group's members without being woken by a change.
TICK_S = 0.5
#: Bound of the leader's own Kafka calls (opening its writer, publishing an assignment).
LEADER_CALL_TIMEOUT_S = 30.0
#: Bound of the leader's question for the group's members: short, so that a leader whose
#: coordinator does not answer (an outage) is back in its loop, and sees a deposal, soon.
MEMBERS_CALL_TIMEOUT_S = 5.0
#: How long the leader waits for departed workers' UNASSIGNED statuses to be written.
STATUS_FLUSH_TIMEOUT_S = 5.0

#: How long an answer to a request id is replayed (as the standalone RequestLog's default).
ANSWER_TTL_S = 600.0
#: How often the leader tombstones expired answers.
ANSWER_EXPIRY_INTERVAL_S = 60.0

#: How long a worker waits for the leader to fence a connector's previous task generation
#: before a task of the new one fails to start (exactly-once source support).
FENCING_TIMEOUT_S = 20.0
#: Pause between two requests of a fencing the leader could not do yet.
FENCING_RETRY_S = 0.5

#: Sends task configs to the leader: (leader address, connector, configs, timeout).
TaskConfigSender = Callable[[str, str, list[dict[str, str]], float], None]
#: Asks the leader to fence a connector's zombies: (leader address, connector, timeout) →
#: the config position to wait for.
FencingRequester = Callable[[str, str, float], int]


#: Seconds the leader uses the group's members it last asked for, unless a rebalance
#: happened since (which it is told of at once).
MEMBERS_REFRESH_S = 2.0
#: Config changes after which the leader looks whether the assignment must change.
ASSIGNMENT_CHANGES = frozenset({"connector", "tasks"})


def client_config(config: WorkerConfig) -> dict[str, str]:
    """The librdkafka settings every Kafka client of the worker shares."""
    return {"bootstrap.servers": config.bootstrap_servers, **config.prefixed("admin.")}


def _now_ms() -> int:
    """Wall-clock time in ms: session keys are compared across workers' clocks."""
    return int(time.time() * 1000)


class DistributedHerder(HerderCommon):
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
    ) -> None:
        """``metrics``: where the worker's runtime counts (see ``runtime.worker.Worker``)."""
        self._config = config
        self._cluster = cluster
        self._plugins = plugins
        self._id = config.worker_id
        self._client = client_config(config)
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
        transformer = ConfigTransformer.from_specs(config.config_providers)
        self._validator = ConfigValidator(
            plugins,
            config.limits.tasks_max,
            config.exactly_once_source,
            transformer,
            worker_group_id=cluster.group_id,
            topic_creation_enabled=config.topic_creation_enabled,
            worker_converters=config.converters,
        )
        self._connector_offsets = ConnectorOffsetStores(self._offsets, self._open_offsets)
        self._offset_manager = OffsetManager(
            plugins,
            self._connector_offsets.for_config,
            ConsumerGroupOffsets(self._client),
            self._write_offsets_exactly_once if config.exactly_once_source_enabled else None,
            transformer,
            record_times=RecordTimes(functools.partial(lookup_conf, config)),
        )
        self._loggers = LoggerLevels()
        self._board = StatusBoard(self._id, self._statuses)
        self._board.set_reconfiguration_handler(self._on_reconfiguration_requested)
        self._worker: WorkerRuntime = (
            runtime_factory(self._board, self._offsets)
            if runtime_factory
            else Worker(
                config,
                plugins,
                self._offsets,
                self._board,
                exactly_once=self._exactly_once(),
                offsets_for=self._connector_offsets.for_config,
                metrics=metrics,
                transformer=transformer,
                active_topics=self._board if config.topic_tracking_enabled else None,
            )
        )
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
        self._request_fencing = fencing_requester
        self._connector_locks = ConnectorLocks()
        self._lock = threading.Lock()
        self._writer: FencedWriter | None = None
        #: The term the writer took office in (its unfenced writes carry it).
        self._term = 0
        #: The config-topic position of the last unfenced write this worker answered before
        #: its own view had read it back (``_write_in_term``): every read here waits for it.
        self._owed_config_position = 0
        self._owed_lock = threading.Lock()
        #: The leader record last read from the view, and the (id, address) it names.
        self._leader_named: tuple[object, tuple[str, str] | None] = (object(), None)
        #: The election's ``changes`` when the writer took office: a writer serves that
        #: leadership only, never one won again after a deposal (a new term then).
        self._office_changes = -1
        self._writer_lock = threading.Lock()
        self._stopping = threading.Event()
        self._leader_wake = threading.Event()
        self._threads: list[threading.Thread] = []
        #: Whether restart requests read from the config topic are carried out (not those
        #: read while the store starts: a worker that joins does not replay old ones).
        self._listening = False
        self._reconciler = Reconciler(
            self._id,
            self._worker,
            self._board,
            self._statuses,
            snapshot=self._snapshot,
            connector_status=self.connector_status,
            submit_task_configs=self._submit_task_configs,
            confirm=self._write_worker_record,
            stopping=self._stopping,
        )
        self._next_expiry = 0.0
        self._session_keys = KeyRing()
        self._kafka_cluster_id = ""
        #: The generation the leader waits for workers to confirm, and since when.
        self._awaited: tuple[int, float] = (-1, 0.0)
        #: Issue 25, the leader's loop at scale: the maps of the last view in which no stop
        #: was left to finish, and the instances of the last view's connectors.
        self._no_stops_in: tuple[object, object] | None = None
        self._instances_of: tuple[object, object, dict[str, list[TaskId]]] | None = None
        #: Rebalances of the group this worker was told of (and elections won).
        self._rebalances = 0
        #: The group's members as last asked: (rebalances told then, when, the members).
        self._members: tuple[int, float, frozenset[str]] | None = None
        self._log = log.bind(worker_id=self._id)

    # lifecycle

    def start(self) -> None:
        """Creates or checks the internal topics, reads them, starts the runtime, joins the
        group, then serves. Raises StartupError for unusable topics."""
        self._kafka_cluster_id = ensure_internal_topics(
            self._client, self._cluster, self._cluster.default_api_timeout_ms / 1000
        )
        self._offsets.start()
        self._statuses.start()
        self._configs.start()
        self._listening = True
        self._worker.start()
        self._write_worker_record()
        self._election.start()
        for target, name in ((self._lead_loop, "cluster-leader"),
                             (self._reconciler.run, "cluster-reconciler")):
            thread = threading.Thread(target=target, name=name, daemon=True)
            thread.start()
            self._threads.append(thread)
        self._log.info("herder_started", mode="distributed", group_id=self._cluster.group_id)

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
        self._close_writer()
        self._admin.close()
        self._configs.stop()
        self._statuses.stop()
        self._connector_offsets.stop()
        self._offsets.stop()
        self._board.close()
        self._log.info("herder_stopped")

    def health(self) -> HealthReport:
        kafka_problem = self._kafka_unhealthy()
        if kafka_problem is not None:
            return HealthReport(False, kafka_problem)
        error = self._election.leadership().error
        if error is not None:
            return HealthReport(False, f"this worker left the cluster: {error}")
        return HealthReport(True, "")

    # LeadershipListener (on the election's thread: only wakes the leader thread)

    def on_elected(self, leadership: Leadership) -> None:
        self._log.info("leadership_won", changes=leadership.changes)
        self._rebalances += 1
        self._leader_wake.set()

    def _on_group_rebalanced(self) -> None:
        """The group's members changed (a worker joined or left): the leader asks for them
        again and looks now rather than at its next tick (recovery after a worker died
        starts sooner)."""
        self._rebalances += 1
        if self._election.is_leader():
            self._leader_wake.set()

    def _group_members(self) -> frozenset[str]:
        """The group's members, this worker included. Asked of the group coordinator (an
        admin call) only after a rebalance, and at least every MEMBERS_REFRESH_S: the
        members change only in a rebalance, which every member takes part in, and the
        leader runs after every config change that may move instances (at a thousand
        connectors, twice a create)."""
        now, told = time.monotonic(), self._rebalances
        known = self._members
        if known is None or known[0] != told or now - known[1] >= MEMBERS_REFRESH_S:
            with deadline.scope(MEMBERS_CALL_TIMEOUT_S):
                asked = self._admin.call("group_members", self._cluster.group_id)
            known = (told, now, frozenset([*asked, self._id]))
            self._members = known
        return known[2]

    def on_deposed(self, leadership: Leadership) -> None:
        self._log.info("leadership_lost", changes=leadership.changes, error=leadership.error)
        self._leader_wake.set()

    # reads (from this worker's view of the topics)

    def connectors(self) -> list[str]:
        return sorted(self._snapshot().connectors)

    def connector_info(self, name: str) -> ConnectorInfo:
        snapshot = self._snapshot()
        return self._info(
            name,
            self._config_of(snapshot, name),
            len(snapshot.task_configs(name)),
            self._etag_in(snapshot, name),
        )

    def _info(
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
        return dict(self._config_of(self._snapshot(), name))

    def task_configs(self, name: str) -> list[TaskInfo]:
        snapshot = self._snapshot()
        self._config_of(snapshot, name)
        return [
            TaskInfo(TaskId(name, n), dict(config))
            for n, config in enumerate(snapshot.task_configs(name))
        ]

    def connector_status(self, name: str) -> ConnectorStatus:
        snapshot = self._snapshot()
        config = self._config_of(snapshot, name)
        kind = connector_type(self._plugins, config)
        status = self._board.connector_status(name, len(snapshot.task_configs(name)), kind)
        if not self._transactional(kind):
            return status
        tasks = tuple(self._with_transactional_id(name, task) for task in status.tasks)
        return replace(status, tasks=tasks)

    def task_status(self, task: TaskId) -> TaskStatus:
        snapshot = self._snapshot()
        config = self._config_of(snapshot, task.connector)
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

    def cluster_info(self) -> ClusterInfo:
        snapshot = self._snapshot()
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
            kafka_cluster_id=self._kafka_cluster_id,
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
        """(id, address) of the leader as the config topic names it; None before any."""
        raw = self._snapshot().extensions.get(LEADER_KEY)
        seen, named = self._leader_named
        if raw is seen:  # asked on every forwarded write: parsed once per leader record
            return named
        leader = LeaderRecord.from_json(raw)
        named = (leader.worker_id, leader.address) if leader else None
        self._leader_named = (raw, named)
        return named

    def session_key(self) -> SessionKey | None:
        """The cluster's current inter-worker session key (KIP-507) as this worker read
        it; None before the first leader wrote one. Signs this worker's calls to others."""
        self._observe_session_key_once()
        return self._session_keys.current()

    def session_keys(self) -> tuple[SessionKey, ...]:
        """The session keys a call from another worker may be signed with: the current
        one and the one it replaced."""
        self._observe_session_key_once()
        return self._session_keys.known()

    def _observe_session_key_once(self) -> None:
        """Reads the key from the view until one is known; after that the config listener
        observes each new key as it is read (every forwarded call is signed and verified:
        neither should build a snapshot, which a write has just made stale)."""
        if self._session_keys.current() is None:
            self._observe_session_key()

    def _observe_session_key(self) -> None:
        self._session_keys.observe(
            SessionKey.from_json(self._snapshot().extensions.get(SESSION_KEY_KEY))
        )

    def config_position(self) -> int:
        """How far this worker's reads see the config topic (for read-your-writes
        elsewhere): what it has read, or the end of a write it answered before reading it
        back, which its reads wait for."""
        return max(self._configs.position(), self._owed_config_position)

    def wait_for_config_position(self, position: int, timeout: float) -> None:
        """Blocks until this worker has read the config topic up to ``position``."""
        self._configs.wait_for_offset(position, timeout)

    # mutations (the leader carries them out; any other worker raises NotLeaderError)

    def create_connector(
        self,
        name: str,
        config: Mapping[str, str],
        initial_state: TargetState,
        initial_offsets: Sequence[ConnectorOffset] | None = None,
        initial_offsets_time_ms: int | None = None,
    ) -> CreateResult:
        self._leader_writer()  # a follower forwards before doing any work
        name, full_config = self._normalised(name, config)
        with self._connector_locks.hold(name):
            self._leader_writer()
            if self._snapshot().contains(name):
                raise AlreadyExistsError(f"Connector {name} already exists")
            initial = self._validated_for_create(
                name, full_config, initial_offsets, initial_offsets_time_ms
            )
            version, version_records = self._next_offsets_version(self._snapshot(), name)
            etag = connector_etag(name, full_config, initial_state, version)
            result = CreateResult(
                self._info(name, full_config, 0, etag), initial.message, initial.resolved
            )
            self._write_new_connector(name, full_config, initial_state, version_records, result)
            self._log.info("connector_created", connector=name, initial_state=initial_state.value)
            return result

    def put_connector_config(
        self, name: str, config: Mapping[str, str], etag: str = ""
    ) -> PutConfigResult:
        self._leader_writer()  # a follower forwards before doing any work
        name, full_config = self._normalised(name, config)
        with self._connector_locks.hold(name):
            writer = self._leader_writer()
            if etag and not self._snapshot().contains(name):
                raise no_connector_for_etag(name)
            self._require_etag(name, etag)
            return self._put_config(writer, name, full_config, conditional=bool(etag))

    def patch_connector_config(
        self, name: str, patch: Mapping[str, str | None], etag: str = ""
    ) -> PutConfigResult:
        self._leader_writer()  # a follower forwards before doing any work
        name = validate_name(name)
        with self._connector_locks.hold(name):
            writer = self._leader_writer()
            current = self._config_of(self._snapshot(), name)
            self._require_etag(name, etag)
            _, full_config = self._normalised(name, patched_config(current, patch))
            return self._put_config(writer, name, full_config, conditional=bool(etag))

    def _put_config(
        self, writer: FencedWriter, name: str, full_config: dict[str, str], *, conditional: bool
    ) -> PutConfigResult:
        """Validates and writes a whole config; the caller holds the connector's lock and
        checked the etag of a ``conditional`` write."""
        self._validator.ensure_valid(full_config)
        snapshot = self._snapshot()
        created = not snapshot.contains(name)
        task_count = 0 if created else len(snapshot.task_configs(name))
        if created:
            version, version_records = self._next_offsets_version(snapshot, name)
        else:
            version, version_records = str(offsets_version_in(snapshot.extensions, name)), []
        target = snapshot.target_state(name) or TargetState.STARTED
        etag = connector_etag(name, full_config, target, version)
        result = PutConfigResult(self._info(name, full_config, task_count, etag), created=created)
        if created:
            self._write_new_connector(
                name, full_config, TargetState.STARTED, version_records, result
            )
        elif conditional:
            self._write(writer, self._with_answer(connector_config_records(name, full_config),
                                                  result))
        else:
            self._write_in_term(
                connector_config_records(name, full_config), self._answer_record(result)
            )
        self._log.info("connector_config_written", connector=name, created=created)
        return result

    def delete_connector(self, name: str, etag: str = "") -> None:
        """Without an etag, written without a transaction (issue 25, as Kafka Connect
        does): the connector tombstone first, carrying the answer, then the cleanup
        (``removal_records``: every prefix leaves the connector as it was or deleted; the
        leader finishes a removal cut short, ``_finish_removals``). With one, a
        transaction, as the other conditional writes."""
        with self._connector_locks.hold(name):
            writer = self._leader_writer()
            snapshot = self._snapshot()
            self._config_of(snapshot, name)
            self._require_etag(name, etag)
            records = removal_records(name, len(snapshot.task_configs(name)))
            if etag:
                self._write(writer, self._with_answer(records, None))
            else:
                self._write_in_term(
                    records, self._answer_record(None), wake_leader=True,
                    change_index=REMOVAL_CHANGE_INDEX,
                )
            self._log.info("connector_deleted", connector=name)

    def pause_connector(self, name: str, etag: str = "") -> str:
        return self._write_target_state(name, TargetState.PAUSED, etag=etag)

    def resume_connector(self, name: str, etag: str = "") -> str:
        return self._write_target_state(name, TargetState.STARTED, etag=etag)

    def stop_connector(self, name: str, etag: str = "") -> str:
        """STOPPED, and no task configs: the tasks stop everywhere (KIP-875).

        Without an etag, written without a transaction: the target state first, carrying
        the answer (alone it stops the connector and its tasks in every view), then the
        empty task configs, the cleanup. A stop cut short leaves a STOPPED connector with
        task configs, which runs no task and which the leader finishes (``_finish_stops``).
        With an etag, a transaction, as the other conditional writes."""
        return self._write_target_state(
            name, TargetState.STOPPED, cleanup=task_config_records(name, []), etag=etag
        )

    def restart_connector(self, request: RestartRequest) -> ConnectorStatus | None:
        """KIP-745 on a cluster: the leader writes the request to the config topic, and each
        worker restarts those of its instances that the request chooses by that worker's
        own view of their statuses, when it reads the request. The answer shows the plan by
        the leader's view, read to the status topic's end first.

        The request is written even when the leader's view shows nothing to restart, as
        Kafka Connect writes it: that view of other workers' statuses may lag theirs (an
        only-failed restart just after a failure would otherwise be lost).

        A plain restart (no flags) is carried out by the connector's worker synchronously,
        as in standalone mode: another worker raises NotLeaderError naming that worker, so
        that the call is forwarded there.
        """
        name = request.connector
        if not request.include_tasks and not request.only_failed:
            snapshot = self._snapshot()
            self._config_of(snapshot, name)
            self._require_owner(snapshot, name)
            self._reconciler.restart_connector(name)
            return None
        with self._connector_locks.hold(name):
            writer = self._leader_writer()
            self._config_of(self._snapshot(), name)
            # the answer's plan by every status written before the call (another worker's
            # report of a failure that the caller saw, say), not by this view's lag
            self._statuses.refresh(deadline.remaining(LEADER_CALL_TIMEOUT_S))
            plan = build_restart_plan(request, self.connector_status(name))
            # no assignment changes with it: the leader's loop is not woken
            self._write(
                writer, self._with_answer(restart_records(request), plan.status), wake_leader=False
            )
            self._log.info("connector_restart_requested", connector=name,
                           include_tasks=request.include_tasks, only_failed=request.only_failed)
            return plan.status

    def restart_task(self, task: TaskId) -> None:
        """Restarts one task on the worker that runs it, synchronously (forwarded there)."""
        snapshot = self._snapshot()
        self._config_of(snapshot, task.connector)
        if not 0 <= task.task < len(snapshot.task_configs(task.connector)):
            raise NotFoundError(f"Unknown task {task.task} of connector {task.connector}")
        self._require_owner(snapshot, task)
        self._reconciler.restart_task(task)

    def alter_offsets(
        self,
        name: str,
        offsets: Sequence[ConnectorOffset],
        all_partitions_time_ms: int | None = None,
        etag: str = "",
    ) -> OffsetsChange:
        with self._connector_locks.hold(name):
            self._leader_writer()
            self._require_etag(name, etag)
            change = self._offset_manager.alter(
                name, self._stopped_config(name), offsets, all_partitions_time_ms
            )
            return replace(change, etag=self._offsets_changed(name))

    def reset_offsets(self, name: str, etag: str = "") -> OffsetsChange:
        with self._connector_locks.hold(name):
            self._leader_writer()
            self._require_etag(name, etag)
            message = self._offset_manager.reset(name, self._stopped_config(name))
            return OffsetsChange(message, etag=self._offsets_changed(name))

    def reset_connector_topics(self, name: str) -> None:
        """The leader writes the tombstones (a write: forwarded to it, like Kafka Connect's
        request), and answers once they are in the status topic (bounded wait)."""
        require_topic_tracking(self._config, reset=True)
        self._leader_writer()
        self._board.reset_active_topics(name)
        self._flush_statuses()

    def put_task_configs(self, name: str, configs: list[dict[str, str]]) -> None:
        """Writes the task configs the connector's worker generated (leader only).

        Ignored when the connector is gone or no longer STARTED (a late submission)."""
        with self._connector_locks.hold(name):
            writer = self._leader_writer()
            snapshot = self._snapshot()
            # a connector deleted meanwhile may have left a target state (a removal cut
            # short): task configs written for it would be a new connector's of that name
            started = snapshot.target_state(name) is TargetState.STARTED
            if not snapshot.contains(name) or not started:
                self._log.info("task_configs_ignored", connector=name)
                return
            if [dict(c) for c in snapshot.task_configs(name)] == configs:
                return
            records = task_config_records(name, list(configs))
            if self._config.exactly_once_source_enabled:
                self._write(writer, records)
            else:
                self._write_in_term(records, None, wake_leader=True)
            self._log.info("task_configs_written", connector=name, tasks=len(configs))

    def set_cluster_log_level(self, namespace: str, level: str) -> None:
        """KIP-976: the leader writes the level to the config topic; every worker applies it
        when it reads it (``_on_config_change``), this one before the call returns."""
        writer = self._leader_writer()
        self._write(writer, log_level_records(namespace, level), wake_leader=False)
        self._log.info("cluster_log_level_written", namespace=namespace, level=level)

    # request ids (api.idempotency.SharedAnswers): answers in the config topic

    def answer_for(self, request_id: str) -> tuple[float, bytes, bytes] | None:
        """The answer in the config topic, read to its end first: a retry that reaches a new
        leader before its view caught up with the old leader's last transaction would
        otherwise run the change again (e.g. ALREADY_EXISTS for a create) instead of
        replaying the answer written with it."""
        self._configs.refresh(deadline.remaining(LEADER_CALL_TIMEOUT_S))
        record = AnswerRecord.from_json(self._snapshot().extensions.get(request_key(request_id)))
        return None if record is None else (record.stored_at, record.fingerprint, record.payload)

    def remember_answer(
        self, request_id: str, stored_at: float, fingerprint: bytes, payload: bytes
    ) -> None:
        record = AnswerRecord(stored_at, fingerprint, payload)
        self._leader_writer()
        self._write_in_term([extension_record(request_key(request_id), record.to_json())], None)

    @staticmethod
    def _with_answer(records: list[RawRecord], result: object) -> list[RawRecord]:
        """The change's records and, when the call carries a request id, its answer: one
        transaction, so that no crash leaves the change written without its answer."""
        answer = DistributedHerder._answer_record(result)
        return records if answer is None else [*records, answer]

    @staticmethod
    def _answer_record(result: object) -> RawRecord | None:
        """The record of the call's answer when the call carries a request id."""
        answer = request_answer.take(result)
        if answer is None:
            return None
        record = AnswerRecord(answer.stored_at, answer.fingerprint, answer.payload)
        return extension_record(request_key(answer.request_id), record.to_json())

    def _expire_answers(self, writer: FencedWriter) -> None:
        """Tombstones the answers older than the replay window (the leader, now and then)."""
        cutoff = time.time() - ANSWER_TTL_S
        expired = [
            key
            for key, value in self._snapshot().extensions.items()
            if key.startswith(REQUEST_KEY_PREFIX)
            and (record := AnswerRecord.from_json(value)) is not None
            and record.stored_at < cutoff
        ]
        if expired:
            self._write(writer, [extension_record(k, None) for k in expired], wake_leader=False)
            self._log.info("request_answers_expired", count=len(expired))

    # the leader's writes

    def _write_target_state(
        self, name: str, state: TargetState, *, cleanup: list[RawRecord] | None = None,
        etag: str = "",
    ) -> str:
        """Writes the target state, then the ``cleanup`` records; returns the connector's
        etag after the write (the answer a request id stores with it, so a retry that
        reaches a later leader replays that etag too)."""
        with self._connector_locks.hold(name):
            writer = self._leader_writer()
            snapshot = self._snapshot()
            config = self._config_of(snapshot, name)
            self._require_etag(name, etag)
            version = offsets_version_in(snapshot.extensions, name)
            after = connector_etag(name, config, state, str(version))
            records = target_state_records(name, state) + (cleanup or [])
            if etag:
                self._write(writer, self._with_answer(records, after))
            else:
                self._write_in_term(
                    records, self._answer_record(after), wake_leader=bool(cleanup),
                    change_index=0,
                )
            self._log.info("connector_target_state_written", connector=name, state=state.value)
            return after

    # etags (AIP-154): the leader checks them under the connector's lock, against its own
    # view, before the write they guard (a follower forwards the request, etag and all)

    def _etag_in(self, snapshot: ConfigSnapshot, name: str) -> str:
        config = self._config_of(snapshot, name)
        target = snapshot.target_state(name) or TargetState.STARTED
        version = offsets_version_in(snapshot.extensions, name)
        return connector_etag(name, config, target, str(version))

    def _require_etag(self, name: str, etag: str) -> None:
        """NotFoundError for an unknown connector, AbortedError for a stale ``etag``."""
        if etag:
            require_etag(name, etag, self._etag_in(self._snapshot(), name))

    @staticmethod
    def _next_offsets_version(
        snapshot: ConfigSnapshot, name: str
    ) -> tuple[str, list[RawRecord]]:
        """The connector's next offsets version and the record that writes it."""
        version = offsets_version_in(snapshot.extensions, name) + 1
        return str(version), [extension_record(offsets_version_key(name), {"version": version})]

    def _offsets_changed(self, name: str) -> str:
        """(After a successful offsets change) Writes the connector's next offsets version,
        unfenced (one record: a deposed leader's is refused, and its caller's retry through
        the new leader changes the same offsets again); returns the new etag."""
        _, records = self._next_offsets_version(self._snapshot(), name)
        self._write_in_term(records, None)
        return self._etag_in(self._snapshot(), name)

    def leads(self) -> bool:
        """Whether this worker carries out the leader's writes now."""
        return self._usable_writer() is not None

    def answers_writes(self) -> bool:
        """Whether this worker's servicer answers the leader's writes rather than relaying
        them: it leads, or it knows Kafka is unreachable (then it refuses them at once,
        where a relay would hold the caller to its deadline looking for a leader)."""
        return self.leads() or self._kafka_away_for() is not None

    def _usable_writer(self) -> FencedWriter | None:
        """The writer, while the leadership it took office in lasts."""
        with self._writer_lock:
            writer, office = self._writer, self._office_changes
        if writer is None or not writer.usable:
            return None
        leadership = self._election.leadership()
        if not leadership.leader or leadership.changes != office:
            return None
        return writer

    def _leader_writer(self) -> FencedWriter:
        """The leader's writer, for a write about to be made: NotLeaderError on any other
        worker (the call is forwarded), UNAVAILABLE at once while Kafka is unreachable.

        Kafka first: a worker cut off from Kafka loses its place in the group too, and
        forwarding to a leader it can no longer know would hold the caller to the end of
        its deadline."""
        self._refuse_while_kafka_unreachable()
        writer = self._usable_writer()
        if writer is None:
            raise self._not_leader()
        return writer

    def _not_leader(self) -> NotLeaderError:
        leader = self.leader_address()
        if leader is None or leader[0] == self._id:
            return NotLeaderError("this worker is not the leader; no leader is known yet")
        return NotLeaderError(
            f"this worker is not the leader ({leader[0]} is)",
            leader_id=leader[0],
            leader_address=leader[1],
        )

    def _write(
        self, writer: FencedWriter, records: list[RawRecord], *, wake_leader: bool = True
    ) -> None:
        """One transaction, then waits until this worker's view shows it."""
        started = time.perf_counter()
        written = writer.send_all(records, deadline.remaining(LEADER_CALL_TIMEOUT_S))
        sent = time.perf_counter()
        self._configs.wait_for(written, deadline.remaining(LEADER_CALL_TIMEOUT_S))
        if wake_leader:
            self._leader_wake.set()
        # where a leader write's time goes (BENCHMARKS.md "Distributed mode"): off by
        # default, SetLogLevel connect_grpc.herder.distributed DEBUG shows it
        self._log.debug(
            "leader_write_timed",
            records=len(records),
            send_ms=round((sent - started) * 1000, 3),
            read_back_ms=round((time.perf_counter() - sent) * 1000, 3),
        )

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
        records = self._removal_leftovers(self._snapshot(), name)
        records += [*target_state_records(name, state), *version_records]
        records += connector_config_records(name, config)
        self._write_in_term(records, self._answer_record(result), wake_leader=True)

    def _write_in_term(
        self,
        records: list[RawRecord],
        answer: RawRecord | None,
        *,
        wake_leader: bool = False,
        change_index: int = -1,
    ) -> None:
        """Writes without a transaction, stamped with this leader's term, the record at
        ``change_index`` (the change) carrying the call's ``answer`` (applied with it or
        not at all), then waits until this worker's view shows the write (issue 25: a
        transaction's commit was most of a write's time; Kafka Connect writes without one
        unless exactly-once is on). The write failed iff the change was refused: the
        records after it are cleanup whose refusal leaves the change done.

        Only for changes whose every prefix may be applied alone: the records before the
        change change nothing shown, those after it only clean up: a pause, a resume, an
        unconditional config of an existing connector, a new connector (the config is the
        change, last), a stop (the target state, first), a deletion (the connector
        tombstone, first), task configs (held back until their commit record, the last)
        while exactly-once source support is off, as Kafka Connect writes them then, and
        an assignment (one record). Conditional (etag) writes and the other changes keep
        the transaction.

        Fencing moves to the readers: every worker ignores such a record when a later
        leader's term marker came before it, this one included, which is how a deposed
        leader learns its write failed: NotLeaderError, so that the call goes to the new
        leader. The leader loop is woken only for a ``wake_leader`` write: a target state
        or an existing connector's config changes no instance to assign (new task configs
        wake it when they are written).
        """
        term = self._office_term()
        if not self._election.is_leader():
            raise self._not_leader()
        started = time.perf_counter()
        mark = self._configs.applied_mark()
        written = self._configs.send_in_term(
            records, term, deadline.remaining(LEADER_CALL_TIMEOUT_S), carried=answer,
            carrier_index=change_index,
        )
        sent = time.perf_counter()
        read_back = not landed_next(mark, term, written, change_index)
        if read_back:
            # the view and the refusal are all the answer needs: woken before the reconciler
            # and the leader thread the change wakes (they would compete with the answer)
            self._configs.wait_for(
                written, deadline.remaining(LEADER_CALL_TIMEOUT_S), before_listener=True
            )
            if self._configs.refused([written[change_index]]):
                self._log.warning("leader_write_refused_as_deposed", term=term)
                raise self._not_leader()
        else:
            self._owe_config_position(written[-1].offset + 1)
        if wake_leader:
            self._leader_wake.set()
        self._log.debug(
            "leader_write_timed",
            records=len(records),
            transaction=False,
            send_ms=round((sent - started) * 1000, 3),
            read_back_ms=round((time.perf_counter() - sent) * 1000, 3) if read_back else None,
        )

    def _owe_config_position(self, position: int) -> None:
        with self._owed_lock:
            self._owed_config_position = max(self._owed_config_position, position)

    def _office_term(self) -> int:
        """The term of the usable writer (checked just before by ``_leader_writer``)."""
        with self._writer_lock:
            return self._term

    def _stopped_config(self, name: str) -> dict[str, str]:
        """Cluster-wide STOPPED: the target state, and no task configs (so no task of it
        runs on any worker once each has read the config topic)."""
        snapshot = self._snapshot()
        config = dict(self._config_of(snapshot, name))
        if snapshot.target_state(name) is not TargetState.STOPPED or snapshot.task_configs(name):
            raise not_stopped(name)
        return config

    # leader thread: take office, publish assignments

    def _lead_loop(self) -> None:
        run_ticks(
            self._lead_or_step_down,
            wake=self._leader_wake,
            stopping=self._stopping,
            tick_s=TICK_S,
            log=self._log,
            failure_event="leader_duties_failed",
        )

    def _lead_or_step_down(self) -> None:
        if self._election.is_leader():
            self._lead()
        else:
            self._close_writer()

    def _lead(self) -> None:
        with deadline.scope(LEADER_CALL_TIMEOUT_S):
            writer = self._take_office()
            self._finish_removals(writer)
            self._finish_stops(writer)
            self._rotate_session_key(writer)
            self._publish_assignment()
            if time.monotonic() >= self._next_expiry:
                self._next_expiry = time.monotonic() + ANSWER_EXPIRY_INTERVAL_S
                self._expire_answers(writer)

    def _take_office(self) -> FencedWriter:
        """The usable writer; when there is none, claims the leader's transactional id
        (fencing the previous leader), reads the config topic to its end and announces
        this worker as leader. A leadership won again after a deposal takes office anew,
        with a new term, even when this worker's loop did not see the deposal (it was busy
        with a Kafka call meanwhile): opening the writer again also aborts a transaction
        the old one left open, which would hold every read_committed reader back."""
        usable = self._usable_writer()
        if usable is not None:
            return usable
        elected = self._election.leadership().changes
        self._close_writer()
        writer = FencedWriter.open(
            self._client,
            self._cluster.config_topic,
            leader_transactional_id(self._cluster.group_id),
            deadline.remaining(LEADER_CALL_TIMEOUT_S),
            still_leader=self._election.is_leader,
            worker_id=self._id,
        )
        try:
            self._configs.refresh(deadline.remaining(LEADER_CALL_TIMEOUT_S))
            snapshot = self._snapshot()
            previous = LeaderRecord.from_json(snapshot.extensions.get(LEADER_KEY))
            term = max(previous.term if previous else 0, snapshot.term) + 1
            record = LeaderRecord(self._id, self._cluster.advertised_address, term)
            # with a fresh session key in the same transaction: a worker that knows this
            # leader knows the key to sign the calls it forwards to it; and the term's
            # marker, after which every worker ignores a deposed leader's unfenced writes
            written = writer.send_all(
                [
                    extension_record(LEADER_KEY, record.to_json()),
                    term_marker_record(term),
                    session_key_record(SessionKey.generate(_now_ms()).to_json()),
                ],
                deadline.remaining(LEADER_CALL_TIMEOUT_S),
            )
            self._configs.wait_for(written, deadline.remaining(LEADER_CALL_TIMEOUT_S))
        except BaseException:
            writer.close(0)
            raise
        with self._writer_lock:
            self._writer, self._term, self._office_changes = writer, term, elected
        self._log.info("leader_in_office", term=term)
        return writer

    def _finish_removals(self, writer: FencedWriter) -> None:
        """Finishes the removals cut short (a crash, or a deposed leader whose cleanup
        records were refused): tombstones their task configs and target state, which
        compaction would otherwise bring back to a reader from the topic's start once it
        dropped the connector tombstone. Idempotent (a removal is finished once its
        target-state tombstone is read); under the connector's lock and after this
        leader's term marker, so that no create of the name comes in between."""
        for name in list(self._snapshot().unfinished_removals):
            with self._connector_locks.hold(name):
                leftovers = self._removal_leftovers(self._snapshot(), name)
                if leftovers:
                    self._write(writer, leftovers, wake_leader=False)
                    self._log.info("connector_removal_finished", connector=name)

    def _finish_stops(self, writer: FencedWriter) -> None:
        """Finishes the stops cut short (a crash, or a deposed leader whose cleanup was
        refused): a STOPPED connector's task configs are emptied, as KIP-875's STOPPED
        means (offsets may be changed then). Under the connector's lock, checked again
        there; idempotent."""
        snapshot = self._snapshot()
        # the answer depends on these two maps alone, which unchanged views share
        maps = (snapshot.target_states, snapshot.tasks)
        last = self._no_stops_in
        if last is not None and last[0] is maps[0] and last[1] is maps[1]:
            return
        stopped = _stops_cut_short(snapshot)
        for name in stopped:
            with self._connector_locks.hold(name):
                if _stopped_with_tasks(self._snapshot(), name):
                    self._write(writer, task_config_records(name, []))
                    self._log.info("connector_stop_finished", connector=name)
        if not stopped:
            self._no_stops_in = maps

    @staticmethod
    def _removal_leftovers(snapshot: ConfigSnapshot, name: str) -> list[RawRecord]:
        """The cleanup of the name's unfinished removal, if any, while it has no config."""
        count = snapshot.unfinished_removals.get(name)
        if count is None or snapshot.contains(name):
            return []
        return removal_cleanup_records(name, count)

    def _rotate_session_key(self, writer: FencedWriter) -> None:
        """Writes a new session key once the current one is ``inter.worker.key.ttl.ms``
        old (the previous one stays valid for calls signed before workers read it)."""
        now_ms = _now_ms()
        current = self.session_key()
        if current is not None and not current.expired(now_ms, self._cluster.key_ttl_ms):
            return
        key = SessionKey.generate(now_ms)
        self._write(writer, [session_key_record(key.to_json())], wake_leader=False)
        self._log.info("session_key_rotated", created_ms=key.created_ms)

    def _close_writer(self) -> None:
        with self._writer_lock:
            writer, self._writer = self._writer, None
        if writer is not None:
            writer.close(5.0)
            self._log.info("leader_writer_closed")

    def _publish_assignment(self) -> None:
        """Publishes the next assignment step when the live members or the connectors and
        tasks changed and every live worker has carried out the current one."""
        members = self._group_members()
        snapshot = self._snapshot()
        current = assignment_in(snapshot)
        live_current = {w: a for w, a in current.workers.items() if w in members}
        reported = worker_records(self._statuses.extensions())
        waiting = [
            w for w in live_current
            if current.generation and reported.get(w, _NO_RECORD).generation < current.generation
        ]
        if waiting and not self._confirmation_overdue(current.generation, waiting):
            return
        instances = self._instances(snapshot)
        target = rebalance(members, instances, live_current).assignment
        step = safe_step(target, live_current)
        if step == dict(current.workers):
            return
        record = AssignmentRecord(current.generation + 1, self._id, step)
        self._mark_departed(current, members, instances)
        self._write_in_term([extension_record(ASSIGNMENT_KEY, record.to_json())], None)
        self._log.info(
            "assignment_published",
            generation=record.generation,
            workers={w: a.size for w, a in step.items()},
        )

    def _instances(self, snapshot: ConfigSnapshot) -> dict[str, list[TaskId]]:
        """Each connector's task ids (the same objects as long as its task count is: making
        a thousand task ids on every run of the leader's loop cost milliseconds); the last
        answer again while the view's connectors and task configs are the same maps."""
        last = self._instances_of
        if last is not None and last[0] is snapshot.connectors and last[1] is snapshot.tasks:
            return last[2]
        known = {} if last is None else last[2]
        instances: dict[str, list[TaskId]] = {}
        for name in snapshot.connectors:
            count = len(snapshot.task_configs(name))
            tasks = known.get(name)
            if tasks is None or len(tasks) != count:
                tasks = [TaskId(name, n) for n in range(count)]
            instances[name] = tasks
        self._instances_of = (snapshot.connectors, snapshot.tasks, instances)
        return instances

    def _confirmation_overdue(self, generation: int, waiting: list[str]) -> bool:
        """Whether live workers have failed to confirm ``generation`` for longer than
        ``rebalance.timeout.ms`` (as Kafka's group would expel a member that long in a
        rebalance): the leader then goes on without them rather than stall every change.
        Instances they held stay theirs (``safe_step``)."""
        now = time.monotonic()
        if self._awaited[0] != generation:
            self._awaited = (generation, now)
            return False
        if (now - self._awaited[1]) * 1000 < self._cluster.rebalance_timeout_ms:
            return False
        self._log.warning("assignment_confirmation_overdue", generation=generation,
                          workers=sorted(waiting))
        return True

    def _mark_departed(
        self,
        previous: AssignmentRecord,
        members: frozenset[str],
        instances: Mapping[str, list[TaskId]],
    ) -> None:
        """Instances of workers that left the group show UNASSIGNED (under the departed
        worker's id) until their new worker reports: nobody runs them now. Written before
        the assignment that hands them over, so that no new owner's status can precede it.
        ``instances``: the connectors and tasks that still exist (no status for the rest)."""
        marked = False
        for worker, held in previous.workers.items():
            if worker in members:
                continue
            unassigned = InstanceStatus(State.UNASSIGNED, worker)
            connectors = [c for c in held.connectors if c in instances]
            tasks = [t for t in held.tasks if t in instances.get(t.connector, ())]
            for connector in connectors:
                self._board.on_connector_status(connector, unassigned)
            for task in tasks:
                self._board.on_task_status(task, unassigned)
            self._log.info("departed_worker_instances_unassigned", departed=worker,
                           connectors=len(connectors), tasks=len(tasks))
            marked = True
        if marked:
            self._flush_statuses()

    def _flush_statuses(self) -> None:
        """Waits (bounded) until the statuses reported so far are in the status topic, as
        status writes are asynchronous. Should it take too long, a late UNASSIGNED still
        cannot hide a new owner's status: that one carries a newer generation."""
        try:
            self._statuses.flush(deadline.remaining(STATUS_FLUSH_TIMEOUT_S))
        except UnavailableError as exc:
            self._log.warning("departed_statuses_not_flushed", error=exc.message)

    def _submit_task_configs(self, name: str, configs: list[dict[str, str]]) -> None:
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

    # exactly-once source support: fencing task generations (Kafka Connect's KIP-618)

    def _exactly_once(self) -> ExactlyOnceSource | None:
        """How source tasks write with ``exactly.once.source.support=enabled``, else None."""
        if not self._config.exactly_once_source_enabled:
            return None
        return ExactlyOnceSource(
            self._cluster.group_id, self._cluster.offset_topic, self.await_fenced_generation
        )

    def fence_zombies(self, name: str) -> int:
        """(Leader) If the connector's latest task configs were not fenced yet: fences the
        transactional producers of its previous generation, ``<group.id>-<name>-0…N-1``
        with N its last task count, and writes the new task count. Nothing to fence when it
        never had a task count (no task of it wrote transactionally) or when both
        generations are one task (the new task's producer fences the old one itself).
        Returns the config position that has the task count."""
        with self._connector_locks.hold(name):
            writer = self._leader_writer()
            snapshot = self._snapshot()
            self._config_of(snapshot, name)
            if name not in snapshot.pending_fencing:
                return snapshot.offset
            previous = snapshot.task_counts.get(name)
            current = len(snapshot.task_configs(name))
            if previous is not None and (previous, current) != (1, 1):
                ids = [task_transactional_id(self._cluster.group_id, name, t)
                       for t in range(previous)]
                fence_producers(
                    self._producer_config(), ids, deadline.remaining(FENCING_TIMEOUT_S)
                )
            self._write(writer, task_count_records(name, current))
            self._log.info("task_generation_fenced", connector=name, previous=previous,
                           tasks=current)
            return self._snapshot().offset

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

    def _write_offsets_exactly_once(
        self, name: str, config: Mapping[str, str], entries: Sequence[OffsetEntry]
    ) -> None:
        """(Leader, under the connector's lock: it is STOPPED, or being created) Fences every
        producer the connector's tasks may still hold, ``<group.id>-<name>-0…N-1`` with N
        its task count, then writes the offsets in one transaction under
        ``<group.id>-<name>``, then records a task count of 0: until a task runs again, the
        next change has nothing to fence. A fencing that fails writes nothing."""
        records = encode_records(name, entries)
        if not records:
            return
        group = self._cluster.group_id
        previous = self._snapshot().task_counts.get(name, 0)
        ids = [task_transactional_id(group, name, t) for t in range(previous)]
        store = self._connector_offsets.primary(config)
        fence_producers(self._producer_config(), ids, deadline.remaining(FENCING_TIMEOUT_S))
        writer = FencedWriter.open(
            self._producer_config(),
            store.topic,
            connector_transactional_id(group, name),
            deadline.remaining(LEADER_CALL_TIMEOUT_S),
            worker_id=self._id,
        )
        try:
            written = writer.send_all(records, deadline.remaining(LEADER_CALL_TIMEOUT_S))
        finally:
            writer.close(deadline.remaining(LEADER_CALL_TIMEOUT_S))
        store.wait_for(written, deadline.remaining(LEADER_CALL_TIMEOUT_S))
        if store is not self._offsets:
            put_fallback(self._offsets, name, entries)
        if previous:
            self._write(self._leader_writer(), task_count_records(name, 0))
        self._log.info("offsets_written_exactly_once", connector=name, fenced=len(ids),
                       records=len(records))

    def _producer_config(self) -> dict[str, str]:
        """Settings of the leader's producers that fence and write for a connector."""
        return {**self._client, **self._config.prefixed("producer.")}

    def await_fenced_generation(self, name: str) -> None:
        """(Any worker, before it starts a task of an exactly-once source) Returns once the
        connector's latest task configs are fenced in this worker's view, asking the leader
        to fence them if need be. Raises UnavailableError if that takes FENCING_TIMEOUT_S,
        FailedPreconditionError if the leader cannot fence (the task then fails with it)."""
        give_up_at = time.monotonic() + FENCING_TIMEOUT_S
        while name in self._snapshot().pending_fencing:
            left = give_up_at - time.monotonic()
            try:
                position = self._fencing_position(name, left)
                self._configs.wait_for_offset(position, max(0.0, give_up_at - time.monotonic()))
            except UnavailableError as exc:
                if time.monotonic() + FENCING_RETRY_S >= give_up_at:
                    raise UnavailableError(
                        f"the previous task generation of {name} was not fenced within "
                        f"{FENCING_TIMEOUT_S:.0f} s: {exc.message}",
                        exc.retry_after_seconds,
                    ) from exc
                time.sleep(FENCING_RETRY_S)

    def _fencing_position(self, name: str, timeout: float) -> int:
        if self._election.is_leader():
            with deadline.scope(timeout):
                try:
                    return self.fence_zombies(name)
                except NotLeaderError:
                    pass
        leader = self.leader_address()
        if leader is None or leader[0] == self._id or self._request_fencing is None:
            raise UnavailableError("no leader to ask for zombie fencing", 1.0)
        return self._request_fencing(leader[1], name, timeout)

    def _require_owner(self, snapshot: ConfigSnapshot, instance: str | TaskId) -> None:
        """Raises NotLeaderError naming the worker that runs ``instance`` unless it is this
        one (the forwarding layer then sends the call there)."""
        owner = assignment_in(snapshot).owner_of(instance)
        if owner == self._id:
            return
        address = worker_records(self._statuses.extensions()).get(owner or "")
        if owner is None or address is None:
            raise UnavailableError(f"{instance} is not assigned to a worker yet; retry", 1.0)
        raise NotLeaderError(
            f"{instance} runs on worker {owner}", leader_id=owner, leader_address=address.address
        )

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
            self._observe_session_key()
        if kind == "logger":
            self._apply_cluster_log_level(connector)
            return
        self._reconciler.wake()
        if kind in ASSIGNMENT_CHANGES and self._election.is_leader():
            self._leader_wake.set()

    def _apply_cluster_log_level(self, namespace: str) -> None:
        """Applies the namespace's cluster-wide level as read, stamped with the time it was
        written (so every worker, a later one too, reports the same ``last_modified``)."""
        written = self._snapshot().log_levels.get(namespace)
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

    # view helpers

    def _snapshot(self) -> ConfigSnapshot:
        """The view, with every write this worker answered: a leader's unfenced write that
        landed right after the view's last record is answered before this worker's own tail
        has read it back (``_write_in_term``), so whoever reads here waits for that first
        (within the caller's deadline; never the tail's thread, which is what reads it)."""
        owed = self._owed_config_position
        if owed > self._configs.position() and not self._configs.on_tail_thread():
            self._configs.wait_for_offset(
                owed, deadline.remaining(LEADER_CALL_TIMEOUT_S), before_listener=True
            )
        return self._configs.snapshot()

    @staticmethod
    def _config_of(snapshot: ConfigSnapshot, name: str) -> Mapping[str, str]:
        config = snapshot.connectors.get(name)
        if config is None:
            raise NotFoundError(f"Connector {name} not found")
        return config

    def _write_worker_record(self, generation: int = 0) -> None:
        """This worker's address and the assignment generation it has carried out."""
        record = WorkerRecord(self._id, self._cluster.advertised_address, generation)
        self._statuses.put_extension(worker_key(self._id), record.to_json())


_NO_RECORD = WorkerRecord("", "", -1)


def landed_next(
    mark: tuple[int, int], term: int, written: Sequence[LogRecord], change_index: int
) -> bool:
    """Whether an unfenced write of ``term`` took effect, known without reading it back:
    the change and every record before it landed, one after another, right after the last
    record the view had applied when the write was sent (``mark``: that offset and the
    highest term read), and no marker read by then had ended ``term``. No later leader's
    marker can then come before them, so every reader applies them. Otherwise only the
    read-back tells (another writer's record, or a transaction's marker, came between)."""
    offset, term_read = mark
    if term_read > term or not written:
        return False
    change = written[: change_index % len(written) + 1]
    return all(record.offset == offset + n for n, record in enumerate(change))


def _stops_cut_short(snapshot: ConfigSnapshot) -> list[str]:
    """The connectors :func:`_stopped_with_tasks`, found among the STOPPED ones in one
    comprehension: three calls per connector, on each create at 1,000 connectors, were 5 %
    of the leader's samples."""
    return [
        name for name, state in snapshot.target_states.items()
        if state is TargetState.STOPPED and snapshot.contains(name)
        and snapshot.task_configs(name)
    ]


def _stopped_with_tasks(snapshot: ConfigSnapshot, name: str) -> bool:
    """A stop cut short: STOPPED, with task configs still committed."""
    return snapshot.target_state(name) is TargetState.STOPPED and bool(snapshot.task_configs(name))

