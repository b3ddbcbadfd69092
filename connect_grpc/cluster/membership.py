"""Leader election through Kafka's group coordinator (DESIGN §4): no Raft, no consensus of ours.

Every worker keeps one consumer in the consumer group ``group.id``, subscribed to a topic
with a single partition (``leader.election.topic``). The group coordinator hands that
partition to exactly one live member at a time, and that member is the leader. Nothing is
ever produced to or read from the topic: the partition is paused as soon as it is assigned,
so the consumer only heartbeats and takes part in rebalances.

Why these settings:

- ``partition.assignment.strategy=cooperative-sticky``: a rebalance keeps a partition with
  its owner whenever the owner is still a member, so a worker joining never moves the
  leadership; only the leader leaving (or being expired) does.
- ``group.protocol=classic``: under the newer consumer protocol (KIP-848) the broker owns
  ``session.timeout.ms`` and ``heartbeat.interval.ms`` and the worker's settings would be
  ignored, while failover time is set by them.
- ``max.poll.interval.ms`` is the rebalance timeout: a member that does not poll for that
  long leaves the group (and is deposed here, as for any revocation).
- ``enable.auto.commit=false``: there is nothing to commit; no offsets are ever stored.

Timing, measured against a local broker (librdkafka 2.16, Kafka 4.1): the other members
learn of a rebalance at their next heartbeat, so a leader that closes (and so leaves the
group; a follower, which holds no partition, leaves only because it unsubscribes first: see
``kafka_clients.leave_group_and_close``) is replaced 0.1 s to ``heartbeat.interval.ms``
later; a leader that is killed is replaced once the coordinator expires it,
``session.timeout.ms`` after its last heartbeat, plus up to one heartbeat interval (SIGKILL:
5.2-5.8 s with a 6 s session and 1 s heartbeat, 9.0-11.0 s with 10 s and 3 s). Failover
within ``session.timeout.ms`` + 2 s therefore needs ``heartbeat.interval.ms`` of at most
about 2 s.

A deposed leader may still believe it leads until its own client notices (at the latest
``session.timeout.ms`` after its last successful heartbeat): the config writer is therefore
fenced (:mod:`connect_grpc.cluster.fenced_writer`), which is what keeps two leaders from both
writing, not this module.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Protocol

import structlog
from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from connect_grpc.kernel.kafka_clients import kafka_error_of, leave_group_and_close, with_client_log

log = structlog.get_logger(__name__)

#: The partition whose owner is the leader.
LEADER_PARTITION = 0
#: How long one poll may block: bounds how late close() and rebalance callbacks run.
POLL_TIMEOUT_S = 0.1
#: Pause between polls once the consumer hit a fatal error, so the loop does not spin.
FATAL_BACKOFF_S = 1.0
DEFAULT_CLOSE_TIMEOUT_S = 30.0


@dataclass(frozen=True, slots=True)
class ElectionConfig:
    """What a worker needs to take part in the election.

    ``client_config`` is the librdkafka configuration shared by the worker's clients
    (``bootstrap.servers``, security settings); the group settings here override it.
    """

    client_config: Mapping[str, Any]
    group_id: str
    topic: str
    worker_id: str
    session_timeout_ms: int = 10_000
    heartbeat_interval_ms: int = 3_000
    rebalance_timeout_ms: int = 60_000

    def consumer_config(self) -> dict[str, Any]:
        """The consumer's librdkafka configuration (see the module docstring for why)."""
        return {
            **self.client_config,
            "group.id": self.group_id,
            "group.protocol": "classic",
            "client.id": self.worker_id,
            "partition.assignment.strategy": "cooperative-sticky",
            "session.timeout.ms": self.session_timeout_ms,
            "heartbeat.interval.ms": self.heartbeat_interval_ms,
            "max.poll.interval.ms": self.rebalance_timeout_ms,
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "auto.offset.reset": "latest",
        }


@dataclass(frozen=True, slots=True)
class Leadership:
    """This member's view of the leadership at one moment.

    ``changes`` counts the leadership changes this member has seen (elected or deposed),
    so a caller can tell that it lost and regained the leadership between two looks.
    ``error`` is set once the consumer hit a fatal error: the member cannot lead again and
    the worker should stop, so that the group expires it.
    """

    leader: bool = False
    changes: int = 0
    error: str | None = None


class LeadershipListener(Protocol):
    """Told of every leadership change, in order, on the election's thread.

    Both methods must return quickly: while one runs, no rebalance callback of this member
    can run, so a rebalance of the whole group waits for it (and after
    ``max.poll.interval.ms`` the group expels this member). Hand slow work (fencing the
    previous leader, reading the config topic) to another thread.
    """

    def on_elected(self, leadership: Leadership) -> None: ...

    def on_deposed(self, leadership: Leadership) -> None: ...


class LeaderElection:
    """This worker's membership in the group, and whether it is the leader.

    Threading: :meth:`start` creates one consumer and one daemon thread that owns it; the
    thread polls it every :data:`POLL_TIMEOUT_S`, which runs the rebalance callbacks, and
    closes it when :meth:`close` asks. The consumer is never recreated: after a fatal
    error the thread reports the member deposed and keeps polling with a back-off.
    Listener methods run on that thread. :meth:`leadership`, :meth:`is_leader` and
    :meth:`wait_for_change` are thread-safe.

    Losing the partition (revoked or lost) is reported before the rebalance callback
    returns, i.e. before the group can hand the partition to another member.
    """

    def __init__(
        self,
        config: ElectionConfig,
        listener: LeadershipListener | None = None,
        on_rebalanced: Callable[[], None] | None = None,
    ) -> None:
        """``on_rebalanced`` is called (on the election's thread, and must return quickly)
        after every rebalance of the group this member took part in: the group's members
        changed, which the leader acts on (the cooperative protocol calls the assignment
        callback after each rebalance, with the partitions added, often none)."""
        self._config = config
        self._listener = listener
        self._on_rebalanced = on_rebalanced
        self._log = log.bind(worker_id=config.worker_id, group=config.group_id)
        self._state = Leadership()
        self._changed = threading.Condition()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._report_error: Callable[[KafkaError], None] | None = None
        #: Whether this member is in the group: from its first assignment after a join to a
        #: lost session or its leaving.
        self._member = False

    def start(self) -> None:
        """Creates the consumer, joins the group and starts the polling thread. Call once.

        Returns at once; the first assignment (and so the first election) follows within
        about a second. Raises KafkaException when the configuration is invalid.
        """
        if self._thread is not None or self._stopping.is_set():
            raise RuntimeError("LeaderElection.start() may be called only once")
        conf = with_client_log(
            self._config.consumer_config(), f"leader-election-{self._config.worker_id}"
        )
        self._report_error = conf["error_cb"]
        consumer = Consumer(conf)
        consumer.subscribe(
            [self._config.topic],
            on_assign=self._on_assign,
            on_revoke=self._on_revoke,
            on_lost=self._on_lost,
        )
        self._thread = threading.Thread(
            target=self._run,
            args=(consumer,),
            name=f"leader-election-{self._config.worker_id}",
            daemon=True,
        )
        self._thread.start()
        self._log.info("leader_election_started", topic=self._config.topic)

    def close(self, timeout: float = DEFAULT_CLOSE_TIMEOUT_S) -> None:
        """Leaves the group and closes the consumer. Idempotent.

        Waits up to ``timeout`` seconds for the thread to leave the group; either way this
        member is reported deposed before it returns. Called from a listener (on the
        election's thread) it only asks the thread to stop.
        """
        self._stopping.set()
        thread = self._thread
        if thread is None or thread is threading.current_thread():
            return
        thread.join(timeout)
        if thread.is_alive():
            self._log.warning("leader_election_close_timed_out", timeout_s=timeout)
        self._depose()

    def leadership(self) -> Leadership:
        """The current view."""
        with self._changed:
            return self._state

    def is_leader(self) -> bool:
        """Whether this member owns the leader partition now."""
        return self.leadership().leader

    def is_member(self) -> bool:
        """Whether this member is in the group now (it joined, and has not lost its session
        or left since)."""
        return self._member

    def wait_for_change(self, seen: int, timeout: float) -> Leadership:
        """Waits until ``changes`` exceeds ``seen`` or ``timeout`` seconds pass; the view then."""
        with self._changed:
            self._changed.wait_for(lambda: self._state.changes > seen, timeout)
            return self._state

    def _run(self, consumer: Consumer) -> None:
        """The election thread: polls until asked to stop, then leaves the group."""
        try:
            while not self._stopping.is_set():
                self._poll_once(consumer)
        finally:
            self._close_consumer(consumer)

    def _poll_once(self, consumer: Consumer) -> None:
        try:
            message = consumer.poll(POLL_TIMEOUT_S)
        except KafkaException as exc:
            self._on_error(kafka_error_of(exc), exc)
            return
        except Exception as exc:  # e.g. RuntimeError: the client refuses calls when unusable
            self._on_error(None, exc)
            return
        error = message.error() if message is not None else None
        if error is not None and error.code() != KafkaError._PARTITION_EOF:
            self._on_error(error, None)
        if self.leadership().error is not None:
            self._stopping.wait(FATAL_BACKOFF_S)

    def _on_error(self, error: KafkaError | None, exc: BaseException | None) -> None:
        """A fatal error deposes this member for good; anything else is logged and ridden out."""
        if error is not None and error.fatal():
            self._fail(f"{error.name()}: {error.str()}")
            return
        if error is not None and self._report_error is not None:
            self._report_error(error)  # rate-limited, as librdkafka's own errors
            return
        self._log.warning("leader_election_poll_failed", error=repr(exc))
        self._stopping.wait(FATAL_BACKOFF_S)

    def _fail(self, error: str) -> None:
        self._member = False
        with self._changed:
            first = self._state.error is None
            if first:
                self._state = replace(self._state, error=error)
        if first:
            self._log.critical("leader_election_failed", error=error)
        self._depose()

    def _close_consumer(self, consumer: Consumer) -> None:
        """Leaves the group (the revocation callback deposes this member) and closes."""
        self._member = False
        try:
            leave_group_and_close(consumer)
        except (KafkaException, RuntimeError) as exc:
            self._log.warning("leader_election_close_failed", error=repr(exc))
        self._depose()
        self._log.info("leader_election_closed")

    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        """Rebalance callback: takes the partitions (paused) and the leadership if it is in them."""
        self._member = self.leadership().error is None
        self._tell_rebalanced()
        if not partitions:
            return
        try:
            consumer.incremental_assign(partitions)
        except KafkaException as exc:
            self._log.warning("leader_partition_assign_failed", error=repr(exc))
            return
        try:
            consumer.pause(partitions)
        except KafkaException as exc:  # only costs idle fetches; the leadership holds
            self._log.warning("leader_partition_pause_failed", error=repr(exc))
        if self._holds_leader_partition(partitions) and not self._stopping.is_set():
            self._elect()

    def _tell_rebalanced(self) -> None:
        if self._on_rebalanced is None:
            return
        try:
            self._on_rebalanced()
        except Exception:  # never allowed to break the rebalance
            self._log.exception("rebalance_listener_failed")

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        """Rebalance callback: gives up the leadership at once if its partition goes."""
        if self._holds_leader_partition(partitions):
            self._depose()

    def _on_lost(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        """Rebalance callback: the session expired, another member may already lead."""
        self._member = False
        if self._holds_leader_partition(partitions):
            self._log.warning("leader_partition_lost")
            self._depose()

    def _holds_leader_partition(self, partitions: list[TopicPartition]) -> bool:
        return any(
            tp.topic == self._config.topic and tp.partition == LEADER_PARTITION for tp in partitions
        )

    def _elect(self) -> None:
        with self._changed:
            if self._state.leader or self._state.error is not None:
                return
            self._state = replace(self._state, leader=True, changes=self._state.changes + 1)
            state = self._state
            self._changed.notify_all()
        self._log.info("leader_elected", changes=state.changes)
        self._notify(state, elected=True)

    def _depose(self) -> None:
        with self._changed:
            if not self._state.leader:
                return
            self._state = replace(self._state, leader=False, changes=self._state.changes + 1)
            state = self._state
            self._changed.notify_all()
        self._log.info("leader_deposed", changes=state.changes)
        self._notify(state, elected=False)

    def _notify(self, state: Leadership, *, elected: bool) -> None:
        """Calls the listener; its failure is logged, never allowed to break the rebalance."""
        if self._listener is None:
            return
        try:
            if elected:
                self._listener.on_elected(state)
            else:
                self._listener.on_deposed(state)
        except Exception:
            self._log.exception("leadership_listener_failed", elected=elected)
