"""Exactly-once source batches (``exactly.once.source.support=enabled``): a task's records
are written in Kafka transactions that also hold their source offsets; where a transaction
ends is the connector's ``transaction.boundary`` (``transaction_boundaries``: by default,
each batch the task moves is one transaction).

A task's producer claims the transactional id ``<group.id>-<connector>-<task>`` when it is
created (``init_transactions``). The transaction coordinator then

- aborts any transaction an earlier holder of the id left open (a crashed worker, a lost
  Spark task, a duplicate of it), and
- refuses every later write of that earlier holder: a zombie can never commit.

The offsets are records of the worker's offsets topic in Kafka Connect's format
(:mod:`~connect_grpc.storage.offsets_codec`), written by the same producer in the same
transaction, and read back with ``read_committed``: a batch's offsets are committed exactly
when its records are. The producer partitions like Kafka Connect's Java producer (murmur2
of the key), so an offset record lands in the partition the worker's offset store writes
that key to.

A commit that timed out may still complete: the next attempt of the same batch resumes
that commit instead of writing the batch again, as librdkafka's transactional API requires.
This module runs wherever the task's batches are moved: in the task's Spark task (hosted)
or on the driver.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import structlog
from confluent_kafka import KafkaError, KafkaException

from connect_grpc.cluster.fenced_writer import Failure, classify
from connect_grpc.connectors.api import SourceRecord, TransactionBoundary
from connect_grpc.kernel.domain import TaskId
from connect_grpc.kernel.kafka_clients import KafkaIoError, kafka_error_of
from connect_grpc.metrics.worker_metrics import CommitTally
from connect_grpc.runtime.produce import (
    CachedProducer,
    ProduceErrors,
    hand_records,
    produce_when_room,
)
from connect_grpc.runtime.spark_rows import latest_offsets
from connect_grpc.runtime.transaction_boundaries import (
    DEFAULT_INTERVAL_MS,
    Decision,
    boundary_settings,
    new_boundary,
)
from connect_grpc.storage import offsets_codec
from connect_grpc.storage.connector_offsets import own_offsets_topic

log = structlog.get_logger(__name__)

#: How long claiming the transactional id, or committing a batch, may take before the
#: attempt fails (retriably: the task's retry policy decides what happens next).
TRANSACTION_STEP_TIMEOUT_S = 30.0
#: How long each wait of a commit lasts between two checks of ``stopping``.
COMMIT_SLICE_S = 1.0
#: An abort gets this long: it only tells the coordinator what it would decide anyway.
ABORT_TIMEOUT_S = 5.0


def task_transactional_id(group_id: str, connector: str, task: int) -> str:
    """The transactional id of a source task's producer: ``<group.id>-<connector>-<task>``."""
    return f"{group_id}-{connector}-{task}"


def connector_transactional_id(group_id: str, connector: str) -> str:
    """The transactional id the leader writes a connector's offsets under when they are
    altered or reset: ``<group.id>-<connector>``."""
    return f"{group_id}-{connector}"


@dataclass(frozen=True, slots=True)
class Transactions:
    """How one source task writes its batches (picklable: a hosted task gets it)."""

    transactional_id: str
    offsets_topic: str
    connector: str
    #: The connector's ``transaction.boundary`` and its interval (``interval`` only).
    boundary: TransactionBoundary = TransactionBoundary.POLL
    interval_s: float = DEFAULT_INTERVAL_MS / 1000


@dataclass(frozen=True, slots=True)
class ExactlyOnceSource:
    """A worker's exactly-once source setup: its cluster's ``group.id`` and offsets topic,
    and ``await_fenced_generation(connector)``, which returns once the leader fenced the
    connector's previous task generation (a task of the latest one may then start)."""

    group_id: str
    offsets_topic: str
    await_fenced_generation: Callable[[str], None]

    def for_task(self, task: TaskId, connector_config: Mapping[str, str]) -> Transactions:
        """How ``task`` writes its batches: its connector's transaction boundary, and its
        offsets topic (``offsets.storage.topic``, else the worker's). Only the connector's
        topic gets the offsets: it is read first, so the worker's topic, a fallback for
        offsets written before the connector had its own, needs no copy of them."""
        boundary, interval_s = boundary_settings(connector_config)
        return Transactions(
            task_transactional_id(self.group_id, task.connector, task.task),
            own_offsets_topic(connector_config) or self.offsets_topic,
            task.connector,
            boundary,
            interval_s,
        )


class TaskFencedError(KafkaIoError):
    """A newer producer claimed this task's transactional id: another instance of the task
    (after a restart, a reassignment or a duplicate) or the leader fencing the task's
    generation. This instance must never write again; not retriable."""

    def __init__(self, transactional_id: str, detail: str) -> None:
        super().__init__(
            f"the producer of transactional id {transactional_id} was fenced by a newer "
            f"instance of this task or by the leader ({detail}); this instance stops writing",
            retriable=False,
        )


def transactional_conf(conf: Mapping[str, str], transactions: Transactions) -> dict[str, str]:
    """The task's producer settings for transactions (acks=all and idempotence come with
    them); murmur2 partitioning unless ``producer.*`` chose a partitioner. With ``interval``
    boundaries, transactions last the interval, so unless ``producer.*`` set
    ``transaction.timeout.ms``, it is the interval plus a minute (librdkafka's default, one
    minute, would let the coordinator abort every transaction of a one-minute interval)."""
    settings = {"partitioner": "murmur2_random", **conf}
    if transactions.boundary is TransactionBoundary.INTERVAL:
        interval_ms = round(transactions.interval_s * 1000)
        settings.setdefault("transaction.timeout.ms", str(interval_ms + 60_000))
    settings.update(
        {
            "transactional.id": transactions.transactional_id,
            "enable.idempotence": "true",
            "acks": "all",
        }
    )
    return settings


class TransactionalProducer:
    """One source task's transactional producer: hands each batch to the open transaction
    and ends transactions where the connector's ``transaction.boundary`` says.

    Created on the first :meth:`write` or :meth:`claim` (which claims the transactional id
    and so fences earlier holders), kept across batches, dropped after a failure that leaves
    it unusable (the next write claims the id again), closed once by :meth:`close`. Used by
    one thread; its boundary's ``context`` (the plugin's transaction context) by the same.
    """

    def __init__(
        self,
        conf: Mapping[str, str],
        transactions: Transactions,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._conf = transactional_conf(conf, transactions)
        self._tx = transactions
        self.boundary = new_boundary(transactions.boundary, transactions.interval_s, clock)
        self._cached: CachedProducer | None = None
        #: The open transaction's delivery reports (None: no transaction open).
        self._errors: ProduceErrors | None = None
        #: Offset records of what the open transaction holds (or an abort dropped), to be
        #: written when it commits: encoded key -> encoded value, the latest per partition.
        self._offsets: dict[bytes, bytes | None] = {}
        #: A commit that timed out, resumed by the next call: the batch it ended (or
        #: _NO_BATCH after an idle or final commit).
        self._commit_pending: object | None = None
        #: Set once this producer must never write again (fenced, or a batch's outcome
        #: unknown): every later write raises it, and never claims the id again.
        self._refusal: KafkaIoError | None = None
        #: The transaction commits (each with its offsets), for the task's metrics.
        self.commits = CommitTally()
        self._log = log.bind(transactional_id=transactions.transactional_id)

    def write(
        self,
        records: Sequence[SourceRecord],
        stopping: Callable[[], bool],
        outgoing: Sequence[SourceRecord | None] | None = None,
    ) -> bool:
        """Writes the batch's records into the open transaction (beginning one if needed),
        ending transactions where the boundary says. Returns whether a transaction
        committed (the task's ``commit`` is then notified).

        Called again with the same batch after a retriable failure: nothing of the batch is
        then visible to ``read_committed`` readers, unless its commit is pending (resumed
        by that call). A failure that loses more than the batch (the open transaction held
        earlier batches, or part of the batch was committed) is not retriable: the task
        fails and a restart resumes from the committed offsets. Raises TaskFencedError when
        a newer producer holds the id.

        ``outgoing``, when the task has a record pipeline, is each polled record as it goes
        to Kafka (None where the pipeline dropped it): those are written, and the offsets
        of every polled record, dropped ones included, are committed (Kafka Connect's
        exactly-once rule); the boundaries still name the polled records.
        """
        if self._refusal is not None:
            raise self._refusal
        cached = self._producer()
        if self._commit_pending is not None:
            resumed_batch = self._commit_pending is records
            self._finish_commit(cached, stopping)
            self._log.warning("transaction_committed_late", records=len(records))
            if resumed_batch:
                return True
        retriable_failure = self._errors is None and not self._offsets
        committed = False
        start = 0
        try:
            self._refuse_offsets_topic(records)
            for end, decision in self.boundary.splits(records):
                self._send(cached, records[start:end], stopping, _part(outgoing, start, end))
                retriable_failure = False  # a commit inside the batch cannot be undone
                committed |= self._end(cached, decision, stopping, batch=None)
                start = end
            rest = records[start:] if start else records
            self._send(cached, rest, stopping, _part(outgoing, start, len(records)))
            final = self.boundary.after_batch()
            if final is not None:
                committed |= self._end(cached, final, stopping, batch=records)
        except KafkaIoError as exc:
            if exc.retriable and not retriable_failure and self._commit_pending is not records:
                raise self._lost(exc) from exc
            raise
        return committed

    def idle(self, stopping: Callable[[], bool]) -> bool:
        """The task had nothing to poll: ends the open transaction if the boundary says so
        (an ``interval`` that passed). Returns whether a transaction committed."""
        return self._conclude(self.boundary.after_batch(), stopping)

    def wind_down(self, stopping: Callable[[], bool]) -> bool:
        """The task is pausing or stopping normally: ends the open transaction as the
        boundary says for that moment. Returns whether a transaction committed."""
        return self._conclude(self.boundary.at_end(), stopping)

    def claim(self) -> None:
        """Claims the transactional id now (fencing every earlier holder and completing its
        last transaction), if not done yet. Call it before the task reads its offsets: only
        then are the offsets of every transaction an earlier instance committed readable."""
        if self._refusal is not None:
            raise self._refusal
        self._producer()

    def close(self) -> None:
        """Closes the producer. A transaction left open (a write cut short) is aborted by the
        coordinator when the id is claimed again, or after ``transaction.timeout.ms``."""
        cached, self._cached = self._cached, None
        self._errors = None
        self._offsets = {}
        if cached is not None:
            cached.close()

    def _conclude(self, decision: Decision | None, stopping: Callable[[], bool]) -> bool:
        if self._refusal is not None:
            raise self._refusal
        if self._cached is None:
            return False
        if self._commit_pending is _NO_BATCH:
            self._finish_commit(self._cached, stopping)
            return True
        if decision is None or self._commit_pending is not None:  # a batch's: its retry's
            return False
        try:
            return self._end(self._cached, decision, stopping, batch=_NO_BATCH)
        except KafkaIoError as exc:
            if exc.retriable and self._commit_pending is None:
                raise self._lost(exc) from exc
            raise

    def _producer(self) -> CachedProducer:
        if self._cached is None:
            cached = CachedProducer(self._conf)
            began = time.monotonic()
            try:
                self._step(
                    lambda: cached.producer.init_transactions(TRANSACTION_STEP_TIMEOUT_S),
                    "claim its transactional id",
                )
            except BaseException:
                cached.close()  # the next attempt claims the id with a new producer
                raise
            self._cached = cached
            claim_s = round(time.monotonic() - began, 3)
            self._log.info("transactional_producer_ready", claim_s=claim_s)
        return self._cached

    def _refuse_offsets_topic(self, records: Sequence[SourceRecord]) -> None:
        """A task may not write to its offsets topic when its transactions span polls: the
        offsets it asks for would wait for its own open transaction (Kafka Connect's rule)."""
        if self._tx.boundary is TransactionBoundary.POLL:
            return
        topic = self._tx.offsets_topic
        if any(record.topic == topic for record in records):
            raise KafkaIoError(
                f"a source task may not write to its offsets topic {topic} with exactly-once "
                "support and transaction.boundary="
                f"{self._tx.boundary.value}",
                retriable=False,
            )

    def _begin(self, cached: CachedProducer) -> ProduceErrors:
        if self._errors is None:
            errors = cached.current = ProduceErrors()
            self._step(cached.producer.begin_transaction, "begin a transaction")
            self._errors = errors
        return self._errors

    def _send(
        self,
        cached: CachedProducer,
        records: Sequence[SourceRecord],
        stopping: Callable[[], bool],
        outgoing: Sequence[SourceRecord] | None = None,
    ) -> None:
        """Hands records (or what the pipeline made of them) to the open transaction and
        remembers the records' latest offsets; on a failure, aborts the transaction (or
        drops an unusable producer) and raises."""
        if not records:
            return
        sent = records if outgoing is None else outgoing
        if sent:
            self._hand(cached, sent, stopping)
        connector = self._tx.connector
        for partition, offset in latest_offsets(records):
            key = offsets_codec.encode_key(connector, partition)
            self._offsets[key] = offsets_codec.encode_value(offset)

    def _hand(
        self, cached: CachedProducer, records: Sequence[SourceRecord], stopping: Callable[[], bool]
    ) -> None:
        errors = self._begin(cached)
        handed = hand_records(records, cached.producer, errors, stopping)
        if handed < len(records) or errors.count:
            fatal = _fatal_error(cached, errors)
            if fatal is not None:  # fenced, or unusable: nothing left to abort
                raise self._failed(fatal, "write the batch")
            # judged before the abort, whose purge of queued records reports errors too
            why = "; ".join(errors.messages) or "the task is stopping"
            retriable = errors.retriable
            self._abort(cached)
            self._offsets = {}
            raise KafkaIoError(f"batch not written, transaction aborted: {why}", retriable)

    def _end(
        self,
        cached: CachedProducer,
        decision: Decision,
        stopping: Callable[[], bool],
        batch: object | None,
    ) -> bool:
        """Ends the open transaction: commits it with its offsets or, for an abort, drops
        its records and commits their offsets alone. Returns whether anything committed."""
        if decision is Decision.ABORT and self._errors is not None:
            self._abort(cached)
            self._log.info("transaction_aborted_by_task")
        if self._errors is None and not self._offsets:
            return False
        self._begin(cached)
        self._hand_offsets(cached)
        self._commit(cached, stopping, batch)
        return True

    def _hand_offsets(self, cached: CachedProducer) -> None:
        produce, errors = cached.producer.produce, self._errors
        assert errors is not None
        topic = self._tx.offsets_topic
        for key, value in self._offsets.items():
            # the batch may have filled the client's queue: each waits for room
            hand = functools.partial(produce, topic, value, key, on_delivery=errors.on_delivery)
            try:
                produce_when_room(cached.producer, hand)
            except KafkaException as exc:  # the cause of a fatal error comes from poll
                cause = _fatal_error(cached, errors) or kafka_error_of(exc)
                raise self._failed(cause, "write offsets") from exc

    def _commit(
        self, cached: CachedProducer, stopping: Callable[[], bool], batch: object | None
    ) -> None:
        """Commits, retrying while librdkafka says the commit may still complete. A commit
        that does not complete in time stays pending for the next call, unless it ended a
        transaction inside a batch (``batch`` None): the rest of the batch depends on it."""
        self._commit_pending = batch if batch is not None else _INSIDE_BATCH
        self._finish_commit(cached, stopping)

    def _finish_commit(self, cached: CachedProducer, stopping: Callable[[], bool]) -> None:
        began = time.monotonic()
        deadline = began + TRANSACTION_STEP_TIMEOUT_S
        while True:
            try:
                cached.producer.commit_transaction(COMMIT_SLICE_S)
                self._commit_pending = None
                self._errors = None
                self._offsets = {}
                self.commits.succeeded.append(time.monotonic() - began)
                return
            except KafkaException as exc:
                error = kafka_error_of(exc)
                failure = classify(error)
                if failure is Failure.ABORTABLE:  # the coordinator will not commit it
                    self._commit_pending = None
                    self._abort(cached)
                    self._offsets = {}
                if failure is not Failure.RETRIABLE:
                    self.commits.failed += 1
                    raise self._failed(error, "commit") from exc
                if stopping() or time.monotonic() > deadline:
                    self.commits.failed += 1
                    raise KafkaIoError(
                        f"the commit of {self._tx.transactional_id}'s transaction did not "
                        f"complete: {_describe(error)}; it is resumed by the next attempt",
                        retriable=self._commit_pending is not _INSIDE_BATCH,
                    ) from exc

    def _step(self, call: Callable[[], None], what: str) -> None:
        try:
            call()
        except KafkaException as exc:
            raise self._failed(kafka_error_of(exc), what) from exc

    def _abort(self, cached: CachedProducer) -> None:
        """Aborts the open transaction; a producer that cannot abort is dropped (the next
        write claims the id again, which aborts it at the coordinator). Raises
        TaskFencedError if the abort shows that a newer producer holds the id."""
        self._errors = None
        try:
            cached.producer.abort_transaction(ABORT_TIMEOUT_S)
        except KafkaException as exc:
            error = kafka_error_of(exc)
            if classify(error) is Failure.FENCED:
                raise self._failed(error, "abort") from exc
            self._log.warning("transaction_abort_failed", error=_describe(error))
            self.close()

    def _lost(self, exc: KafkaIoError) -> KafkaIoError:
        """A failure that lost records of earlier batches (aborted with the transaction that
        held them) or that happened after part of the batch committed: retrying the batch
        would skip or repeat records, so the task fails."""
        self.close()
        self._refusal = KafkaIoError(
            f"{exc}; the transaction (transaction.boundary={self._tx.boundary.value}) held "
            "more than this batch, so the batch cannot be retried alone: restart the task, "
            "it resumes from the committed offsets",
            retriable=False,
        )
        return self._refusal

    def _failed(self, error: KafkaError | None, what: str) -> KafkaIoError:
        """The error to raise; a fenced or failed producer is dropped first.

        Not retriable: a fence, an authorization failure, and a producer lost while a
        commit was pending (whether that batch is visible is unknown, so it may be neither
        written again nor skipped: the task fails, and a restart resumes from the offsets
        that were committed). Anything else is retried with the same batch, in a new
        transaction (the failed one is aborted) and, after a fatal error, a new producer.
        """
        failure = classify(error)
        detail = _describe(error)
        if failure in (Failure.FENCED, Failure.FATAL):
            self.close()
        if failure is Failure.FENCED:
            self._log.warning("task_producer_fenced", step=what, error=detail)
            self._refusal = TaskFencedError(self._tx.transactional_id, detail)
            return self._refusal
        message = f"cannot {what} ({self._tx.transactional_id}): {detail}"
        if failure is Failure.FATAL and self._commit_pending is not None:
            self._refusal = KafkaIoError(
                f"{message}; whether the batch's transaction committed is unknown: restart "
                "the task, it resumes from the committed offsets",
                retriable=False,
            )
            return self._refusal
        authorization = error is not None and error.code() in _AUTHORIZATION_CODES
        return KafkaIoError(message, retriable=not authorization)


#: ``_commit_pending`` markers: a commit that ended no batch (idle, pause, stop), and one
#: that ended a transaction inside a batch.
_NO_BATCH = object()
_INSIDE_BATCH = object()


def _part(
    outgoing: Sequence[SourceRecord | None] | None, start: int, end: int
) -> list[SourceRecord] | None:
    """The records the pipeline made of the polled records [start, end) (None: no
    pipeline, the polled records themselves go out)."""
    if outgoing is None:
        return None
    return [record for record in outgoing[start:end] if record is not None]


def _fatal_error(cached: CachedProducer, errors: ProduceErrors) -> KafkaError | None:
    """The producer's fatal error, if it has one: a failed produce call only says "fatal
    error"; the cause (such as a fence) reaches the error callback, served by ``poll``."""
    try:
        cached.producer.poll(0)
    except KafkaException as exc:
        error = kafka_error_of(exc)
        if error is not None and error.fatal():
            return error
    return errors.fatal_error


_AUTHORIZATION_CODES = frozenset(
    {
        KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
        KafkaError.TOPIC_AUTHORIZATION_FAILED,
        KafkaError.CLUSTER_AUTHORIZATION_FAILED,
    }
)


def _describe(error: KafkaError | None) -> str:
    return "no error code" if error is None else f"{error.name()}: {error.str()}"
