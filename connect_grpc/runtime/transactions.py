"""Exactly-once source batches (``exactly.once.source.support=enabled``): each batch a task
moves is one Kafka transaction holding its records and its source offsets.

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

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import structlog
from confluent_kafka import KafkaError, KafkaException

from connect_grpc.cluster.fenced_writer import Failure, classify
from connect_grpc.connectors.api import SourceRecord
from connect_grpc.domain import TaskId
from connect_grpc.kafka_clients import kafka_error_of
from connect_grpc.runtime.kafka_io import CachedProducer, KafkaIoError, ProduceErrors, hand_records
from connect_grpc.storage import offsets_codec
from connect_grpc.storage.base import OffsetEntry

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


@dataclass(frozen=True, slots=True)
class ExactlyOnceSource:
    """A worker's exactly-once source setup: its cluster's ``group.id`` and offsets topic,
    and ``await_fenced_generation(connector)``, which returns once the leader fenced the
    connector's previous task generation (a task of the latest one may then start)."""

    group_id: str
    offsets_topic: str
    await_fenced_generation: Callable[[str], None]

    def for_task(self, task: TaskId) -> Transactions:
        """How ``task`` writes its batches."""
        return Transactions(
            task_transactional_id(self.group_id, task.connector, task.task),
            self.offsets_topic,
            task.connector,
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


def transactional_conf(conf: Mapping[str, str], transactional_id: str) -> dict[str, str]:
    """The task's producer settings for transactions (acks=all and idempotence come with
    them); murmur2 partitioning unless ``producer.*`` chose a partitioner."""
    settings = {"partitioner": "murmur2_random", **conf}
    settings.update(
        {"transactional.id": transactional_id, "enable.idempotence": "true", "acks": "all"}
    )
    return settings


class TransactionalProducer:
    """One source task's transactional producer; writes each batch in one transaction.

    Created on the first :meth:`write` (which claims the transactional id and so fences
    earlier holders), kept across batches, dropped after a failure that leaves it unusable
    (the next write claims the id again), closed once by :meth:`close`. Used by one thread.
    """

    def __init__(self, conf: Mapping[str, str], transactions: Transactions) -> None:
        self._conf = transactional_conf(conf, transactions.transactional_id)
        self._tx = transactions
        self._cached: CachedProducer | None = None
        #: A commit that timed out: the next write (of the same batch) resumes it.
        self._commit_pending = False
        #: Set once this producer must never write again (fenced, or a batch's outcome
        #: unknown): every later write raises it, and never claims the id again.
        self._refusal: KafkaIoError | None = None
        self._log = log.bind(transactional_id=transactions.transactional_id)

    def write(
        self,
        records: Sequence[SourceRecord],
        offsets: Sequence[OffsetEntry],
        stopping: Callable[[], bool],
    ) -> None:
        """Writes the records and the offsets in one transaction; returns once committed.

        Called again with the same batch after a failure. Raises TaskFencedError when a
        newer producer holds the id, KafkaIoError (retriable when a retry may succeed)
        for any other failure: then nothing of the batch is visible to ``read_committed``
        readers, unless a commit is pending (resumed by the next call).
        """
        if self._refusal is not None:
            raise self._refusal
        cached = self._producer()
        if self._commit_pending:
            self._commit(cached, stopping)
            self._log.warning("transaction_committed_late", records=len(records))
            return
        errors = cached.current = ProduceErrors()
        self._step(cached.producer.begin_transaction, "begin a transaction")
        handed = hand_records(records, cached.producer, errors, stopping)
        if handed == len(records) and not errors.count:
            handed += self._hand_offsets(cached, offsets, errors)
        if handed < len(records) + len(offsets) or errors.count:
            fatal = _fatal_error(cached, errors)
            if fatal is not None:  # fenced, or unusable: nothing left to abort
                raise self._failed(fatal, "write the batch")
            # judged before the abort, whose purge of queued records reports errors too
            why = "; ".join(errors.messages) or "the task is stopping"
            retriable = errors.retriable
            self._abort(cached)
            raise KafkaIoError(f"batch not written, transaction aborted: {why}", retriable)
        self._commit(cached, stopping)

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
        if cached is not None:
            cached.close()

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

    def _hand_offsets(
        self, cached: CachedProducer, offsets: Sequence[OffsetEntry], errors: ProduceErrors
    ) -> int:
        produce = cached.producer.produce
        for partition, offset in offsets:
            key = offsets_codec.encode_key(self._tx.connector, partition)
            value = offsets_codec.encode_value(offset)
            try:
                produce(self._tx.offsets_topic, value, key, on_delivery=errors.on_delivery)
            except KafkaException as exc:
                raise self._failed(kafka_error_of(exc), "write offsets") from exc
        return len(offsets)

    def _commit(self, cached: CachedProducer, stopping: Callable[[], bool]) -> None:
        """Commits, retrying while librdkafka says the commit may still complete; a commit
        that does not complete in time stays pending for the next attempt."""
        self._commit_pending = True
        deadline = time.monotonic() + TRANSACTION_STEP_TIMEOUT_S
        while True:
            try:
                cached.producer.commit_transaction(COMMIT_SLICE_S)
                self._commit_pending = False
                return
            except KafkaException as exc:
                error = kafka_error_of(exc)
                failure = classify(error)
                if failure is Failure.ABORTABLE:  # the coordinator will not commit it
                    self._commit_pending = False
                    self._abort(cached)
                if failure is not Failure.RETRIABLE:
                    raise self._failed(error, "commit") from exc
                if stopping() or time.monotonic() > deadline:
                    raise KafkaIoError(
                        f"the commit of {self._tx.transactional_id}'s transaction did not "
                        f"complete: {_describe(error)}; it is resumed by the next attempt",
                        retriable=True,
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
        try:
            cached.producer.abort_transaction(ABORT_TIMEOUT_S)
        except KafkaException as exc:
            error = kafka_error_of(exc)
            if classify(error) is Failure.FENCED:
                raise self._failed(error, "abort") from exc
            self._log.warning("transaction_abort_failed", error=_describe(error))
            self.close()

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
        if failure is Failure.FATAL and self._commit_pending:
            self._refusal = KafkaIoError(
                f"{message}; whether the batch's transaction committed is unknown: restart "
                "the task, it resumes from the committed offsets",
                retriable=False,
            )
            return self._refusal
        authorization = error is not None and error.code() in _AUTHORIZATION_CODES
        return KafkaIoError(message, retriable=not authorization)


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
