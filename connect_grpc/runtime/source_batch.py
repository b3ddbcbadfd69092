"""What a source task's batch is, wherever its plugin runs: the records polled and what the
task's pipeline made of them, kept across retries until their offsets are committed, and
the steps of moving one (polling, creating its topics, checking its delivery, skipping
records the broker refused for good, telling the plugin). The loop that runs these steps
is ``source_loop``'s.

A batch whose produce fails on a retriable error (Kafka unreachable, a leader moving) is
kept and produced again by the next attempt, before the task is polled for more: records
the plugin returned are never dropped (some may be written twice).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

from connect_grpc.connectors.api import SourceRecord, SourceTask
from connect_grpc.kernel.kafka_clients import KafkaIoError
from connect_grpc.pipeline.task_pipeline import TaskPipeline
from connect_grpc.runtime.kafka_results import (
    KafkaFailure,
    ProduceResult,
    RecordRefusedError,
)
from connect_grpc.runtime.topic_creator import TopicCreator

__all__ = [
    "POLL_LINGER_S",
    "Batch",
    "DeliveryError",
    "Refusal",
    "check_delivery",
    "commit_dropped",
    "create_topics",
    "delivered_topics",
    "notify_commit",
    "poll_batch",
    "skip_refused",
]

_TOPIC = attrgetter("topic")

#: Seconds a batch may keep filling from further polls once the first poll returned records.
POLL_LINGER_S = 0.25


class DeliveryError(KafkaIoError):
    """Some records of a batch were not written to Kafka (retriable iff every failure was)."""


@dataclass(slots=True)
class Batch:
    """Records polled from the plugin and not yet committed (kept across retries)."""

    records: Sequence[SourceRecord]
    produced: bool = False
    #: What goes to Kafka: the records themselves, or what the task's pipeline made of
    #: those it did not drop (converted once, when polled).
    outgoing: Sequence[SourceRecord] = ()
    #: With a pipeline: each polled record as it goes out, None where it was dropped.
    converted: list[SourceRecord | None] | None = None
    #: The topics the outgoing records go to (gathered once per batch).
    topics: frozenset[str] = frozenset()
    #: Once produced: the topics the broker took records of it for (KIP-558 records a topic
    #: on a successful send only).
    delivered: frozenset[str] = frozenset()

    def through(self, pipeline: TaskPipeline | None) -> Batch:
        """The batch after the task's pipeline (dropped records' offsets are then not
        committed, except by an exactly-once transaction, which commits the batch's)."""
        if pipeline is None or pipeline.pass_through:
            self.outgoing = self.records
        else:
            self.converted = pipeline.apply_source(self.records)
            self.outgoing = [record for record in self.converted if record is not None]
        self.topics = frozenset(map(_TOPIC, self.outgoing))
        return self

    def dropped(self) -> list[SourceRecord]:
        """The polled records the pipeline dropped."""
        converted = self.converted
        if converted is None or len(self.outgoing) == len(self.records):
            return []
        return [r for r, out in zip(self.records, converted, strict=True) if out is None]

    def originals_of(self, outgoing: Sequence[int]) -> list[SourceRecord]:
        """The polled records the ``outgoing`` records (by index) were made of."""
        converted = self.converted
        if converted is None:
            return [self.records[index] for index in outgoing]
        kept = [i for i, out in enumerate(converted) if out is not None]
        return [self.records[kept[index]] for index in outgoing]


#: A record the broker refused for good: (its slice's index, its index in the slice, why).
Refusal = tuple[int, int, KafkaFailure]


def check_delivery(results: Sequence[ProduceResult], expected: int) -> list[Refusal]:
    """The records refused for good (only when the slices were written for a task that
    tolerates them, ``errors.tolerance=all``, and every failure is such a refusal). Raises
    DeliveryError unless every slice delivered, or refused, every record."""
    produced = sum(r.produced for r in results)
    errors = sum(r.failed for r in results)
    if produced == expected and all(r.only_refusals for r in results):
        return [(n, index, why) for n, r in enumerate(results) for index, why in r.refused]
    if errors or produced != expected:
        messages = [m for r in results for m in r.messages]
        raise DeliveryError(
            f"{errors} of {expected} records failed delivery ({produced} produced): "
            + "; ".join(messages),
            retriable=all(r.retriable for r in results),
        )
    return []


def commit_dropped(plugin: SourceTask, records: Sequence[SourceRecord], logger: Any) -> None:
    """``commit_record(record, None)`` for each record not written (dropped by the pipeline,
    or refused), as Kafka Connect: a failure is logged and does not fail the task."""
    if type(plugin).commit_record is SourceTask.commit_record:
        return  # the plugin does not listen: no call per record
    for record in records:
        try:
            plugin.commit_record(record, None)
        except Exception:
            logger.warning("source_task_commit_record_failed", exc_info=True)


def skip_refused(
    batch: Batch,
    refused: Sequence[tuple[int, KafkaFailure]],
    pipeline: TaskPipeline | None,
    plugin: SourceTask,
    logger: Any,
) -> None:
    """Skips each outgoing record (by index) the broker refused for good, under
    ``errors.tolerance=all`` (KIP-779): reported and counted by the task's pipeline, the
    plugin's ``commit_record`` told, and its offset committed with the batch's (once the
    dead-letter queue's writes of them are answered: ``TaskPipeline.await_dead_letters``)."""
    if not refused or pipeline is None:
        return
    originals = batch.originals_of([index for index, _ in refused])
    for original, (index, failure) in zip(originals, refused, strict=True):
        topic = batch.outgoing[index].topic
        pipeline.skip_refused(original, topic, RecordRefusedError(failure))
    commit_dropped(plugin, originals, logger)


def delivered_topics(batch: Batch, refused: Sequence[tuple[int, KafkaFailure]]) -> frozenset[str]:
    """The batch's topics less those whose every record the broker refused (by index)."""
    if not refused:
        return batch.topics
    skipped = {index for index, _ in refused}
    return frozenset(r.topic for i, r in enumerate(batch.outgoing) if i not in skipped)


def create_topics(creator: TopicCreator | None, batch: Batch) -> None:
    """Creates the missing topics the batch's records go to, after the transformations
    (KIP-158), before any of them is produced; with exactly-once, outside the batch's
    transaction, as Kafka Connect creates them."""
    if creator is not None:
        creator.ensure(batch.topics)


def notify_commit(plugin: SourceTask, logger: Any) -> None:
    """``SourceTask.commit`` is a notification: as in Kafka Connect, its failure is logged
    and does not fail the task (the offsets are already committed)."""
    try:
        plugin.commit()
    except Exception:
        logger.warning("source_task_commit_failed", exc_info=True)


def poll_batch(plugin: SourceTask, wanted: int, stopping: Callable[[], bool]) -> Batch | None:
    """Polls until the batch is full, the plugin has nothing more for now, or the batch
    has been filling for POLL_LINGER_S. A plugin's own cap per poll (FileStreamSource's
    ``batch.size``) does not cap the batch: each batch costs a Spark job or a round trip."""
    records = list(plugin.poll(wanted))
    if not records:
        return None
    give_up_at = time.monotonic() + POLL_LINGER_S
    while len(records) < wanted and time.monotonic() < give_up_at and not stopping():
        more = plugin.poll(wanted - len(records))
        if not more:
            break
        records.extend(more)
    return Batch(records)
