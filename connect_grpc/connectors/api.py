"""The plugin API: what a connector author implements.

A **connector** is the control half of a plugin: it validates its config and splits the
work into task configs. A **task** is the data half: a source task polls records from its
system, a sink task writes records to its system. The runtime runs each task as a loop of
bounded micro-batch Spark jobs; the task methods below run on the worker's driver.

Lifecycle, as Kafka Connect defines it:

* ``Connector.start(config)`` once per instance, then ``task_configs(max_tasks)`` whenever
  the runtime (re)computes the task set, then ``stop(connector_deleted)`` once.
* ``Task.start(config)``, then ``poll``/``put`` many times from one thread, then
  ``stop(connector_deleted)`` once, from the thread that stops the task (which may be
  another thread while no ``poll``/``put`` call is in progress).
* ``connector_deleted`` is True only when the user deleted the connector: release external
  resources then (drop a replication slot, delete a temp table). It is False for any other
  stop (pause is not a stop; stop, restart, reconfiguration, shutdown are).

Offsets and resuming: a source task names, in each record, the partition it read from and
the offset after it (two flat maps of primitives, e.g. ``{"filename": "/x"}`` and
``{"position": 42}``). The runtime commits those offsets after the records are in Kafka.
On start, a task asks ``self.context.offset_reader.offset(partition)`` and continues
right after that offset; ``None`` means "never committed: start from the beginning". A sink
task is given records with their Kafka coordinates; the runtime commits the consumer
group's offsets after ``put`` returned and ``flush`` succeeded, so a restarted sink task
receives again every record after the last commit (at-least-once).
"""

from __future__ import annotations

import abc
import enum
from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from connect_grpc.connectors.plugin_metrics import PluginMetrics
from connect_grpc.data.errors import DataError, RetriableError
from connect_grpc.data.record import KEEP, RawHeaders
from connect_grpc.kernel.configdef import ConfigDef
from connect_grpc.kernel.domain import OffsetMap, OffsetPrimitive

if TYPE_CHECKING:
    from connect_grpc.data.headers import ConnectHeaders
    from connect_grpc.data.schema import Schema

__all__ = [
    "AlterOffsetsUnsupportedError",
    "Connector",
    "ConnectorContext",
    "ConnectorTransactionBoundaries",
    "ErrantRecordReporter",
    "ExactlyOnceSupport",
    "RecordMetadata",
    "RetriableError",
    "SinkConnector",
    "SinkRecord",
    "SinkTask",
    "SinkTaskContext",
    "SourceConnector",
    "SourceRecord",
    "SourceTask",
    "SourceTaskContext",
    "Task",
    "TaskContext",
    "TimestampType",
    "TransactionBoundary",
    "TransactionContext",
]

PLUGIN_VERSION = "0.1.0"


class AlterOffsetsUnsupportedError(Exception):
    """Raised by ``alter_offsets`` when the connector does not allow external offset changes."""


class ExactlyOnceSupport(enum.Enum):
    """A source connector's answer to "can you give exactly-once delivery with this config?"
    (``SourceConnector.exactly_once_support``)."""

    SUPPORTED = "supported"
    UNSUPPORTED = "unsupported"


class ConnectorTransactionBoundaries(enum.Enum):
    """Whether a source connector's tasks can say where each transaction ends, for
    ``transaction.boundary=connector``."""

    SUPPORTED = "supported"
    UNSUPPORTED = "unsupported"


class TransactionBoundary(enum.Enum):
    """``transaction.boundary``: where an exactly-once source task's transactions end."""

    POLL = "poll"  # one transaction per batch the runtime moves
    INTERVAL = "interval"  # one per transaction.boundary.interval.ms
    CONNECTOR = "connector"  # where the task says (its transaction context)


class ConnectorContext(Protocol):
    """What the runtime offers a connector instance."""

    def request_task_reconfiguration(self) -> None:
        """Asks the runtime to call ``task_configs`` again (e.g. the source gained a table)."""

    def raise_error(self, error: BaseException) -> None:
        """Marks the connector FAILED with this error."""

    @property
    def plugin_metrics(self) -> PluginMetrics:
        """The connector's own metrics (KIP-877), exported with the worker's under the
        tags connector, config=connector, class and version; removed when it stops."""
        ...


class OffsetReader(Protocol):
    """Reads the committed source offsets of the task's connector."""

    def offset(self, partition: OffsetMap) -> dict[str, OffsetPrimitive] | None:
        """The last committed offset of ``partition``, or None when there is none."""


class TaskContext(Protocol):
    """What the runtime offers a task."""

    @property
    def task_id(self) -> int: ...

    @property
    def connector_name(self) -> str: ...

    @property
    def plugin_metrics(self) -> PluginMetrics:
        """The task's own metrics (KIP-877), exported with the worker's under the tags
        connector, task, config=task, class and version; removed when it stops."""
        ...


class TransactionContext(Protocol):
    """Lets a source task end its own transactions (``transaction.boundary=connector`` on a
    worker with exactly-once support; ``SourceTaskContext.transaction_context``).

    Call it from ``poll`` (or from the thread that runs ``poll``). A request naming a record
    takes effect right after that record is written, so the record must be one this task
    returns (now or later); a request without one takes effect after the batch being
    returned. Asked both for the same point, abort wins. A transaction the task never ends
    stays open, so ask often enough to stay under the producer's ``transaction.timeout.ms``.
    """

    def commit_transaction(self, record: SourceRecord | None = None) -> None:
        """Commits the open transaction after ``record``, or after the current batch."""

    def abort_transaction(self, record: SourceRecord | None = None) -> None:
        """Aborts the open transaction after ``record`` (it and the transaction's earlier
        records are dropped), or after the current batch. The dropped records' offsets
        are still committed: to write them again, the task returns them again."""


class SourceTaskContext(TaskContext, Protocol):
    @property
    def offset_reader(self) -> OffsetReader: ...

    @property
    def transaction_context(self) -> TransactionContext | None:
        """The task's transaction context with ``transaction.boundary=connector`` and
        exactly-once support on the worker; None otherwise."""
        ...


class ErrantRecordReporter(Protocol):
    """Reports a record a sink task cannot write (KIP-610) to the connector's dead-letter
    queue and error log, as it was read from Kafka. Thread-safe."""

    def report(self, record: SinkRecord, error: BaseException) -> Future[None]:
        """Reports ``record``; the Future completes once the dead-letter queue has it (the
        runtime also waits for it before committing the record's offset). With
        ``errors.tolerance=none`` it raises, and the task fails after its ``put``."""
        ...


class SinkTaskContext(TaskContext, Protocol):
    def errant_record_reporter(self) -> ErrantRecordReporter | None:
        """The task's errant record reporter: None unless the connector sets
        ``errors.deadletterqueue.topic.name`` or ``errors.log.enable=true``."""
        ...


@dataclass(slots=True)
class SourceRecord:
    """A record read by a source task, with where it came from.

    ``source_partition``/``source_offset`` are flat maps of primitives (str, int, float,
    bool, None) that the runtime stores in the offsets topic under the connector's name.
    ``kafka_partition=None`` lets the producer's partitioner choose.

    Key and value are either bytes/str (written as they are, str UTF-8 encoded, when the
    connector has no converter) or Connect data with an optional schema
    (``key_schema``/``value_schema``) that the connector's converters serialise.
    ``headers`` are (key, bytes) pairs or :class:`ConnectHeaders`.

    Not frozen, for speed only (a frozen dataclass takes about 2.5 times as long to build,
    which a source emitting a million records a second notices): a task must not change a
    record, or a partition map it shares between records, after returning it from ``poll``.
    Returning the same ``source_partition`` object for every record of one partition is
    encouraged: the runtime recognises it without comparing its contents.
    """

    source_partition: OffsetMap
    source_offset: OffsetMap
    topic: str
    value: Any
    key: Any = None
    kafka_partition: int | None = None
    headers: RawHeaders | ConnectHeaders = ()
    key_schema: Schema | None = None
    value_schema: Schema | None = None
    timestamp_ms: int | None = None

    def new_record(
        self,
        *,
        topic: str = KEEP,
        kafka_partition: int | None = KEEP,
        key_schema: Schema | None = KEEP,
        key: Any = KEEP,
        value_schema: Schema | None = KEEP,
        value: Any = KEEP,
        timestamp_ms: int | None = KEEP,
        headers: RawHeaders | ConnectHeaders = KEEP,
    ) -> SourceRecord:
        return SourceRecord(
            self.source_partition,
            self.source_offset,
            self.topic if topic is KEEP else topic,
            self.value if value is KEEP else value,
            self.key if key is KEEP else key,
            self.kafka_partition if kafka_partition is KEEP else kafka_partition,
            self.headers if headers is KEEP else headers,
            self.key_schema if key_schema is KEEP else key_schema,
            self.value_schema if value_schema is KEEP else value_schema,
            self.timestamp_ms if timestamp_ms is KEEP else timestamp_ms,
        )


class TimestampType(enum.Enum):
    """What a consumed record's timestamp is (Kafka's ``TimestampType``; the value is its
    name as Kafka prints it)."""

    NO_TIMESTAMP_TYPE = "NoTimestampType"
    CREATE_TIME = "CreateTime"
    LOG_APPEND_TIME = "LogAppendTime"


#: librdkafka's timestamp types (``confluent_kafka.TIMESTAMP_*``: 0 not available, 1 create
#: time, 2 log append time), by number.
TIMESTAMP_TYPES = (
    TimestampType.NO_TIMESTAMP_TYPE,
    TimestampType.CREATE_TIME,
    TimestampType.LOG_APPEND_TIME,
)


class RecordMetadata(NamedTuple):
    """Where Kafka stored a record (Kafka Connect's ``RecordMetadata``)."""

    topic: str
    partition: int
    offset: int


@dataclass(slots=True)
class SinkRecord:
    """A record consumed from Kafka for a sink task. Not frozen, for speed only (as
    :class:`SourceRecord`): a task must not change the records it is given.

    With no converter on the connector, key and value are the bytes read and the schemas
    None; with converters they are the Connect data the converters (and transformations)
    made. ``headers`` are (key, bytes) pairs, or :class:`ConnectHeaders` once a header
    converter or a transformation has read them. ``timestamp_type`` is what the record read
    from Kafka says its timestamp is (the default suits a record made with a timestamp).
    """

    topic: str
    kafka_partition: int
    kafka_offset: int
    key: Any
    value: Any
    timestamp_ms: int | None = None
    headers: RawHeaders | ConnectHeaders = field(default=())
    key_schema: Schema | None = None
    value_schema: Schema | None = None
    timestamp_type: TimestampType = TimestampType.CREATE_TIME

    def new_record(
        self,
        *,
        topic: str = KEEP,
        kafka_partition: int | None = KEEP,
        key_schema: Schema | None = KEEP,
        key: Any = KEEP,
        value_schema: Schema | None = KEEP,
        value: Any = KEEP,
        timestamp_ms: int | None = KEEP,
        headers: RawHeaders | ConnectHeaders = KEEP,
    ) -> SinkRecord:
        if kafka_partition is None:
            raise DataError("A sink record's Kafka partition may not be null")
        return SinkRecord(
            self.topic if topic is KEEP else topic,
            self.kafka_partition if kafka_partition is KEEP else kafka_partition,
            self.kafka_offset,
            self.key if key is KEEP else key,
            self.value if value is KEEP else value,
            self.timestamp_ms if timestamp_ms is KEEP else timestamp_ms,
            self.headers if headers is KEEP else headers,
            self.key_schema if key_schema is KEEP else key_schema,
            self.value_schema if value_schema is KEEP else value_schema,
            self.timestamp_type,
        )


class Connector(abc.ABC):
    """The control half of a plugin. Subclass SourceConnector or SinkConnector."""

    context: ConnectorContext

    def initialize(self, context: ConnectorContext) -> None:
        """Called by the runtime once, before ``start``."""
        self.context = context

    def version(self) -> str:
        """The plugin's version, shown by ListPlugins."""
        return PLUGIN_VERSION

    @abc.abstractmethod
    def config_def(self) -> ConfigDef:
        """The keys this connector takes (besides the framework's own: name, tasks.max, …)."""

    def validate(self, config: Mapping[str, str]) -> dict[str, list[str]]:
        """Every key's errors. The default checks ``config_def()``; override for cross-key rules."""
        return self.config_def().validate(config)

    @abc.abstractmethod
    def start(self, config: Mapping[str, str]) -> None:
        """Starts the connector with its full config. Raising marks the connector FAILED."""

    @abc.abstractmethod
    def task_class(self) -> type[Task]:
        """The task class the runtime instantiates for each task config."""

    @abc.abstractmethod
    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        """At most ``max_tasks`` task configs; one task runs per config."""

    @abc.abstractmethod
    def stop(self, connector_deleted: bool = False) -> None:
        """Stops the connector. ``connector_deleted`` is True only on DeleteConnector."""


class SourceConnector(Connector):
    """A connector that moves data from an external system into Kafka."""

    def exactly_once_support(self, config: Mapping[str, str]) -> ExactlyOnceSupport | None:
        """Whether this connector, with ``config``, gives exactly-once delivery when the
        worker writes each batch and its offsets in one transaction: a task that resumes
        from its committed offsets must emit the same records after them. Checked when
        ``exactly.once.support=required``; None (the default) means "not declared", which
        ``required`` rejects. May be called before ``start``, on an instance never started."""
        return None

    def can_define_transaction_boundaries(
        self, config: Mapping[str, str]
    ) -> ConnectorTransactionBoundaries:
        """Whether this connector's tasks, with ``config``, define their own transactions
        (``transaction.boundary=connector``). UNSUPPORTED by default."""
        return ConnectorTransactionBoundaries.UNSUPPORTED

    def alter_offsets(
        self,
        config: Mapping[str, str],
        offsets: Sequence[tuple[OffsetMap, OffsetMap | None]],
    ) -> bool:
        """Vets a change of this connector's offsets before anything is written (KIP-875).

        ``offsets`` pairs each partition with its new offset; ``None`` resets it. May be
        called before ``start`` and on an instance that is never started. Raise
        ValueError for an invalid offset, AlterOffsetsUnsupportedError to refuse any
        change. Return True when the connector also applied the change in its own system,
        False (the default) when only the framework's offsets change.
        """
        return False


class SinkConnector(Connector):
    """A connector that moves data from Kafka topics to an external system."""

    def alter_offsets(
        self, config: Mapping[str, str], offsets: Mapping[tuple[str, int], int | None]
    ) -> bool:
        """Like SourceConnector.alter_offsets; keys are (topic, partition), None resets."""
        return False


class Task(abc.ABC):
    """The data half of a plugin. Subclass SourceTask or SinkTask."""

    def version(self) -> str:
        return PLUGIN_VERSION

    @abc.abstractmethod
    def start(self, config: Mapping[str, str]) -> None:
        """Starts the task with its task config. Raising marks the task FAILED."""

    @abc.abstractmethod
    def stop(self, connector_deleted: bool = False) -> None:
        """Stops the task. ``connector_deleted`` is True only on DeleteConnector."""


class SourceTask(Task):
    """Reads from an external system. ``context`` is set before ``start``."""

    context: SourceTaskContext

    def initialize(self, context: SourceTaskContext) -> None:
        self.context = context

    @abc.abstractmethod
    def poll(self, max_records: int) -> list[SourceRecord]:
        """Returns up to ``max_records`` new records, or [] at once when there is nothing.

        Must not block for long: the runtime checks for stop between calls and launches
        no Spark job for an empty batch.
        """

    def commit(self) -> None:
        """Called after the offsets of every record returned so far have been committed."""

    def commit_record(self, record: SourceRecord, metadata: RecordMetadata | None) -> None:
        """Called, as Kafka Connect's ``SourceTask.commitRecord``, with ``metadata`` None for
        each record the runtime did not write: one its pipeline dropped (a transformation
        filtered it, or its failure was tolerated) or one the broker refused for good under
        ``errors.tolerance=all`` (KIP-779). Its offset counts as committed with the batch's
        (not for a dropped record of an at-least-once task). Records written are not
        reported one by one (a callback per delivered record costs more than producing
        it): ``commit`` says when their offsets are committed. A failure is logged and
        ignored. The default does nothing."""


class SinkTask(Task):
    """Writes to an external system."""

    context: SinkTaskContext

    def initialize(self, context: SinkTaskContext) -> None:
        self.context = context

    @abc.abstractmethod
    def put(self, records: Sequence[SinkRecord]) -> None:
        """Writes (or buffers) a batch of records."""

    def flush(self, offsets: Mapping[tuple[str, int], int]) -> None:
        """Makes every record put so far durable; the runtime commits ``offsets`` next.

        ``offsets`` maps (topic, partition) to the next offset to consume.
        """
