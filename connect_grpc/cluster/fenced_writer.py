"""The leader's writer of the config topic: a transactional producer that fences its predecessor.

The group coordinator decides who leads (:mod:`connect_grpc.cluster.membership`), but a
deposed leader learns of it late: a paused or partitioned process may still write after the
group gave the leadership away. So every leader writes the config topic through a
transactional producer with one transactional id for the whole cluster,
``<group.id>-leader`` (DESIGN §4). A new leader's ``init_transactions`` bumps that id's epoch
at the transaction coordinator, which

- aborts the previous leader's open transaction, if any, and
- fails every later write of the previous leader's producer with a fencing error.

Workers read the config topic with ``isolation.level=read_committed``
(:class:`~connect_grpc.storage.kafka_log.KafkaBasedLog`), so an aborted zombie write is never
applied. A new leader must read the topic to its end *after* :meth:`FencedWriter.open`
returned and before its first write: only then has it seen everything the previous leader
committed (``KafkaConfigStore.refresh``).

A fenced producer is unusable for good (a librdkafka fatal error), so a writer lives for one
leadership term: opened when elected, closed when deposed, replaced on the next election.
"""

from __future__ import annotations

import enum
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from typing import Any

import structlog
from confluent_kafka import KafkaError, KafkaException, Producer

from connect_grpc.kernel.errors import NotLeaderError, UnavailableError
from connect_grpc.kernel.kafka_clients import is_retriable, kafka_error_of, with_client_log
from connect_grpc.storage.log_records import LogRecord, delivery_reporter

log = structlog.get_logger(__name__)

#: Suffix of the cluster's one leader transactional id: ``<group.id>-leader``.
TRANSACTIONAL_ID_SUFFIX = "-leader"
#: Back-off between two attempts of an operation librdkafka says may be retried.
RETRY_BACKOFF_S = 0.05
#: Retry hint of an UnavailableError: a moment for the coordinator or the broker.
RETRY_AFTER_S = 1.0
#: An abort gets at least this long even when the caller's time is up, so that a failed
#: write leaves no open transaction behind whenever the broker answers promptly.
MIN_ABORT_S = 0.5

#: Errors saying another producer took over the transactional id.
FENCED_CODES = frozenset(
    {KafkaError._FENCED, KafkaError.PRODUCER_FENCED, KafkaError.INVALID_PRODUCER_EPOCH}
)


def leader_transactional_id(group_id: str) -> str:
    """The transactional id every leader of the cluster ``group_id`` writes under."""
    return group_id + TRANSACTIONAL_ID_SUFFIX


class Failure(enum.Enum):
    """What a failed transactional call means for the writer."""

    #: Another leader's producer took over: this writer must never write again.
    FENCED = "fenced"
    #: The producer is unusable for another reason: replace the writer.
    FATAL = "fatal"
    #: This transaction cannot commit; abort it, the writer stays usable.
    ABORTABLE = "abortable"
    #: The call may be repeated (a timeout: it may still complete in the background).
    RETRIABLE = "retriable"


def classify(error: KafkaError | None) -> Failure:
    """How to react to ``error`` (None: a failure that carried no KafkaError)."""
    if error is None:
        return Failure.ABORTABLE
    if error.code() in FENCED_CODES:
        return Failure.FENCED
    if error.fatal():
        return Failure.FATAL
    if error.txn_requires_abort():
        return Failure.ABORTABLE
    if is_retriable(error):
        return Failure.RETRIABLE
    return Failure.ABORTABLE


class _Phase(enum.Enum):
    """Where the producer stands between two calls."""

    READY = "ready"
    #: A commit timed out; it may still complete, so it is resumed before the next write.
    COMMIT_PENDING = "commit_pending"
    #: An abort timed out; it is finished before the next write.
    ABORT_PENDING = "abort_pending"
    FENCED = "fenced"
    FAILED = "failed"
    CLOSED = "closed"


class FencedWriter:
    """Writes batches of records to one topic, each batch in one Kafka transaction.

    Create it with :meth:`open` (which fences the previous leader); write with
    :meth:`send_all`; :meth:`close` once. ``still_leader`` (typically
    ``LeaderElection.is_leader``) is asked before each transaction starts and before it
    commits, so that a leader deposed by the group stops writing at once, even before the
    next leader fenced it.

    Once :attr:`usable` is False (fenced, a fatal error, closed) the writer never writes
    again. If the election still says this worker leads (a fatal error, not a fence), close
    it and open a new one: its ``init_transactions`` only fences the old one, again.

    Threading: :meth:`send_all` calls are serialised (one transaction at a time); every
    method is thread-safe and every wait is bounded by its ``timeout`` argument.
    """

    def __init__(
        self,
        producer: Producer,
        topic: str,
        transactional_id: str,
        *,
        still_leader: Callable[[], bool] | None = None,
        worker_id: str = "",
    ) -> None:
        """Wraps a transactional ``producer`` on which ``init_transactions`` has not been
        called yet; use :meth:`open` unless you bring your own producer (tests)."""
        self._producer = producer
        self._topic = topic
        self._transactional_id = transactional_id
        self._still_leader = still_leader
        self._log = log.bind(worker_id=worker_id, topic=topic, transactional_id=transactional_id)
        self._phase = _Phase.READY
        #: Serialises transactions and close(); held across Kafka calls on purpose (this
        #: lock is the writer's own, never a herder-wide one).
        self._lock = threading.Lock()
        self._close_requested = False

    @classmethod
    def open(
        cls,
        client_config: Mapping[str, Any],
        topic: str,
        transactional_id: str,
        timeout: float,
        *,
        still_leader: Callable[[], bool] | None = None,
        worker_id: str = "",
    ) -> FencedWriter:
        """Creates the producer and claims ``transactional_id``, fencing any previous holder.

        On return, no earlier writer under that id can commit again, and its open
        transaction (if any) is aborted. Raises NotLeaderError if a newer writer claimed the
        id meanwhile, UnavailableError if the transaction coordinator does not answer in
        ``timeout`` seconds (nothing to close then: the writer is not returned).
        """
        conf = with_client_log(
            _producer_config(client_config, transactional_id), f"config-writer-{worker_id}"
        )
        writer = cls(
            Producer(conf),
            topic,
            transactional_id,
            still_leader=still_leader,
            worker_id=worker_id,
        )
        try:
            writer._init(timeout)
        except BaseException:
            writer.close(0)
            raise
        return writer

    @property
    def usable(self) -> bool:
        """False once fenced, failed or closed: the leader needs a new writer to write again."""
        return self._phase not in (_Phase.FENCED, _Phase.FAILED, _Phase.CLOSED)

    @property
    def fenced(self) -> bool:
        """Whether a newer writer took over the transactional id."""
        return self._phase is _Phase.FENCED

    def send_all(
        self,
        records: Sequence[tuple[bytes, bytes | None]],
        timeout: float,
        *,
        before_commit: Callable[[list[LogRecord]], None] | None = None,
    ) -> list[LogRecord]:
        """Writes the (key, value) records, in order, in one transaction; None is a tombstone.

        With ``before_commit``, the records are first acknowledged (so their offsets are
        known) and ``before_commit`` is called with them while the transaction is still
        open: whatever it raises aborts the transaction, nothing is written, and the error
        reaches the caller (a compare-and-set: a read_committed reader cannot read past the
        open transaction, so what it shows then is exactly what the records follow).

        Returns once the transaction is committed, with the offset of each record. Raises:

        - NotLeaderError when this worker is no longer the leader (``still_leader`` said
          so, or a newer leader fenced this writer): nothing was written, ever will be.
        - UnavailableError when Kafka did not answer in ``timeout`` seconds or the
          transaction was aborted; retry. After a commit that timed out the outcome is
          unknown until the next call resumes that commit.
        """
        deadline = time.monotonic() + timeout
        if not self._lock.acquire(timeout=max(0.0, timeout)):
            raise UnavailableError(f"another write to {self._topic} is in progress", RETRY_AFTER_S)
        try:
            self._check_usable()
            self._check_leader()  # a deposed leader leaves even a pending commit alone
            self._finish_pending(deadline)
            return self._transact(records, deadline, before_commit)
        finally:
            self._release()

    def close(self, timeout: float) -> None:
        """Closes the producer, aborting an open transaction. Idempotent.

        If a write is in progress after ``timeout`` seconds, that write closes the producer
        when it ends; no write starts after this call either way.
        """
        self._close_requested = True
        if self._lock.acquire(timeout=max(0.0, timeout)):
            self._release()

    def _init(self, timeout: float) -> None:
        """init_transactions, repeated while librdkafka says it may be and time remains."""
        deadline = time.monotonic() + timeout
        started = time.monotonic()
        while True:
            try:
                self._producer.init_transactions(_left(deadline))
                break
            except KafkaException as exc:
                self._retry_or_raise(kafka_error_of(exc), deadline, "claim the leader's id")
        self._log.info("config_writer_opened", fence_s=round(time.monotonic() - started, 3))

    def _retry_or_raise(self, error: KafkaError | None, deadline: float, what: str) -> None:
        """Returns (after a back-off) when the call may be repeated in time; raises otherwise."""
        failure = classify(error)
        if failure is Failure.RETRIABLE and _left(deadline) > RETRY_BACKOFF_S:
            time.sleep(RETRY_BACKOFF_S)
            return
        raise self._error(failure, error, what)

    def _transact(
        self,
        records: Sequence[tuple[bytes, bytes | None]],
        deadline: float,
        before_commit: Callable[[list[LogRecord]], None] | None = None,
    ) -> list[LogRecord]:
        """One transaction; the caller checked the leadership just before."""
        started = time.perf_counter()
        try:
            self._producer.begin_transaction()
            begun = time.perf_counter()
            reports = [self._produce(key, value) for key, value in records]
        except (KafkaException, BufferError) as exc:
            raise self._abandon(kafka_error_of(exc), deadline, "write") from exc
        produced = time.perf_counter()
        if not self._is_leader():
            self._abort_deposed(deadline)
            raise self._not_leader()
        if before_commit is not None:
            self._check_before_commit(reports, before_commit, deadline)
        checked = time.perf_counter()
        self._commit(deadline)
        committed = time.perf_counter()
        # where a leader write's time goes (BENCHMARKS.md "Distributed mode"): off by
        # default, SetLogLevel connect_grpc.cluster.fenced_writer DEBUG shows it
        self._log.debug(
            "config_transaction_timed",
            records=len(records),
            begin_ms=round((begun - started) * 1000, 3),
            produce_ms=round((produced - begun) * 1000, 3),
            check_ms=round((checked - produced) * 1000, 3) if before_commit else None,
            commit_ms=round((committed - checked) * 1000, 3),
        )
        return [report.result(timeout=0) for report in reports]

    def _check_before_commit(
        self,
        reports: Sequence[Future[LogRecord]],
        before_commit: Callable[[list[LogRecord]], None],
        deadline: float,
    ) -> None:
        """Waits until the open transaction's records are acknowledged, then calls
        ``before_commit`` with them; aborts the transaction when either fails."""
        if self._producer.flush(_left(deadline)):
            self._abort(deadline)
            raise UnavailableError(
                f"the records to {self._topic} were not acknowledged in time; nothing was "
                "written", RETRY_AFTER_S,
            )
        try:
            written = [report.result(timeout=0) for report in reports]
        except KafkaException as exc:
            raise self._abandon(kafka_error_of(exc), deadline, "write") from exc
        try:
            before_commit(written)
        except BaseException:
            self._abort(deadline)
            raise

    def _produce(self, key: bytes, value: bytes | None) -> Future[LogRecord]:
        report: Future[LogRecord] = Future()
        on_delivery = delivery_reporter(report, KafkaException)
        self._producer.produce(self._topic, value=value, key=key, on_delivery=on_delivery)
        return report

    def _commit(self, deadline: float) -> None:
        """Commits (flushing the records first); a timeout leaves the commit pending."""
        while True:
            try:
                self._producer.commit_transaction(_left(deadline))
                self._phase = _Phase.READY
                return
            except KafkaException as exc:
                error = kafka_error_of(exc)
                if classify(error) is not Failure.RETRIABLE:
                    raise self._abandon(error, deadline, "commit") from exc
                self._phase = _Phase.COMMIT_PENDING
                self._retry_or_raise(error, deadline, "commit")

    def _finish_pending(self, deadline: float) -> None:
        """Completes the commit or abort an earlier call left behind when it timed out."""
        if self._phase is _Phase.COMMIT_PENDING:
            self._commit(deadline)
            self._log.warning("config_transaction_committed_late")
        elif self._phase is _Phase.ABORT_PENDING:
            self._abort(deadline)

    def _abandon(
        self, error: KafkaError | None, deadline: float, what: str
    ) -> NotLeaderError | UnavailableError:
        """The error to raise for a failed transaction, aborted first unless the producer
        is fenced or failed (then there is nothing left to abort)."""
        failure = classify(error)
        if failure in (Failure.FENCED, Failure.FATAL):
            return self._error(failure, error, what)
        self._abort(deadline)
        return self._error(Failure.ABORTABLE, error, what)

    def _abort(self, deadline: float) -> None:
        """Aborts the open transaction; a timeout leaves the abort pending.

        An abort that fails otherwise leaves the producer in a state nothing here can
        repair: the writer is failed (and the leader opens a new one).
        """
        self._phase = _Phase.ABORT_PENDING
        try:
            self._producer.abort_transaction(max(_left(deadline), MIN_ABORT_S))
        except KafkaException as exc:
            error = kafka_error_of(exc)
            failure = classify(error)
            if failure is Failure.ABORTABLE:
                failure = Failure.FATAL
            raise self._error(failure, error, "abort") from exc
        self._phase = _Phase.READY

    def _abort_deposed(self, deadline: float) -> None:
        """Aborts the transaction of a leader deposed mid-write; its failure is only logged,
        since the caller is told the more useful fact: this worker no longer leads."""
        try:
            self._abort(deadline)
        except UnavailableError as exc:
            self._log.warning("config_transaction_abort_failed", error=exc.message)

    def _error(
        self, failure: Failure, error: KafkaError | None, what: str
    ) -> NotLeaderError | UnavailableError:
        """The domain error for a failure; fencing and fatal errors end the writer's use."""
        detail = f"{error.name()}: {error.str()}" if error is not None else "no error code"
        if failure is Failure.FENCED:
            self._phase = _Phase.FENCED
            self._log.warning("config_writer_fenced", step=what, error=detail)
            return self._not_leader()
        if failure is Failure.FATAL:
            self._phase = _Phase.FAILED
            self._log.error("config_writer_failed", step=what, error=detail)
        return UnavailableError(f"cannot {what} on topic {self._topic}: {detail}", RETRY_AFTER_S)

    def _check_usable(self) -> None:
        if self._close_requested or self._phase is _Phase.CLOSED:
            raise self._not_leader("the config writer is closed")
        if self._phase is _Phase.FENCED:
            raise self._not_leader()
        if self._phase is _Phase.FAILED:
            raise UnavailableError(
                f"the config writer of {self._topic} failed; a new one is needed",
                RETRY_AFTER_S,
            )

    def _check_leader(self) -> None:
        if not self._is_leader():
            raise self._not_leader()

    def _is_leader(self) -> bool:
        return self._still_leader is None or self._still_leader()

    def _not_leader(self, reason: str = "") -> NotLeaderError:
        if not reason:
            reason = (
                f"this worker no longer leads: a newer leader fenced its writer to {self._topic}"
                if self._phase is _Phase.FENCED
                else "this worker is not the leader"
            )
        return NotLeaderError(reason)

    def _release(self) -> None:
        """Releases the lock, closing the producer first if close() asked for it."""
        try:
            if self._close_requested and self._phase is not _Phase.CLOSED:
                self._close_producer()
        finally:
            self._lock.release()

    def _close_producer(self) -> None:
        """Closes a healthy producer (which aborts its open transaction); a fenced or
        failed one has nothing left to abort and is only dropped."""
        healthy = self.usable
        self._phase = _Phase.CLOSED
        try:
            if healthy:
                self._producer.close()
            else:
                self._producer.purge()
        except (KafkaException, RuntimeError) as exc:
            self._log.warning("config_writer_close_failed", error=repr(exc))
        self._log.info("config_writer_closed")


def _left(deadline: float) -> float:
    return max(0.0, deadline - time.monotonic())


def _producer_config(client_config: Mapping[str, Any], transactional_id: str) -> dict[str, Any]:
    """Why: acks=all and idempotence come with transactions; murmur2 as Kafka Connect's
    Java producer, like :class:`~connect_grpc.storage.kafka_log.KafkaBasedLog`."""
    return {
        **client_config,
        "transactional.id": transactional_id,
        "acks": "all",
        "enable.idempotence": True,
        "partitioner": "murmur2_random",
        "linger.ms": 0,
    }
