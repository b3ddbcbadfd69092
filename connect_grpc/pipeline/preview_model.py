"""What a pipeline preview (PreviewPipeline) is asked and answers, shared by the worker,
the API's converters and the client: plain values, no I/O.

A key, value or header value of a sample is JSON text (``str``), raw bytes (``bytes``) or
null (``None``); at a point of the pipeline it is raw bytes (the byte side), ``ConnectData``
(rendered Connect data) or null.

The answer's values (ConnectData, RecordView, StageView, RecordPreview) are not frozen, for
speed only, as SourceRecord: a preview makes a dozen of them a record, and a frozen
dataclass takes about four times as long to build. Nothing changes them once made.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from connect_grpc.kernel.domain import ConnectorType

#: The most records one preview takes (samples given, or the last records of a topic).
MAX_PREVIEW_RECORDS = 1000

#: A sample's key, value or header value: JSON text, raw bytes or null.
SampleData = str | bytes | None


@dataclass(frozen=True, slots=True)
class SampleRecord:
    """A sample record (see the proto's PreviewSampleRecord for how each side reads it)."""

    topic: str = ""
    partition: int | None = None
    offset: int | None = None
    timestamp_ms: int | None = None
    key: SampleData = None
    value: SampleData = None
    headers: tuple[tuple[str, SampleData], ...] = ()


@dataclass(frozen=True, slots=True)
class TopicTail:
    """The ``last`` most recent records of ``topic``."""

    topic: str
    last: int


@dataclass(frozen=True, slots=True)
class PreviewRequest:
    """A connector (``name`` of an existing one, or a ``config``) and its input (``samples``
    or ``from_topic``): exactly one of each."""

    name: str = ""
    config: dict[str, str] | None = None
    samples: tuple[SampleRecord, ...] | None = None
    from_topic: TopicTail | None = None


@dataclass(slots=True)
class ConnectData:
    """Connect data rendered: the value as JSON text, the schema as JsonConverter's
    envelope writes it ("" for schemaless data)."""

    json: str
    schema: str = ""


#: A key, value or header value at a point of the pipeline.
Data = bytes | ConnectData | None


@dataclass(slots=True)
class RecordView:
    """A record at one point of the pipeline."""

    topic: str
    partition: int | None
    offset: int | None
    timestamp_ms: int | None
    key: Data
    value: Data
    headers: tuple[tuple[str, Data], ...] = ()


class Verdict(enum.Enum):
    """What one stage did."""

    APPLIED = "APPLIED"
    SKIPPED_BY_PREDICATE = "SKIPPED_BY_PREDICATE"
    DROPPED = "DROPPED"
    FAILED = "FAILED"


class Outcome(enum.Enum):
    """What became of a record."""

    DELIVERED = "DELIVERED"
    DROPPED = "DROPPED"
    FAILED = "FAILED"


class FailureAction(enum.Enum):
    """What the worker would do with a record whose stage failed."""

    RECORD_SKIPPED = "RECORD_SKIPPED"
    TASK_FAILS = "TASK_FAILS"


@dataclass(slots=True)
class StageView:
    """One stage of a record's way: ``record`` is the record after it (None when it
    dropped the record or failed)."""

    stage: str
    class_name: str
    verdict: Verdict
    record: RecordView | None
    alias: str = ""
    predicate: str = ""
    predicate_matched: bool = False


@dataclass(frozen=True, slots=True)
class StageFailure:
    """A failed stage, and what the worker would do under the connector's ``errors.*``."""

    stage: str
    class_name: str
    exception_class: str
    message: str
    action: FailureAction
    dead_letter_topic: str = ""
    dead_letter_headers: tuple[tuple[str, bytes | None], ...] = ()


@dataclass(slots=True)
class RecordPreview:
    """One record's way through the pipeline."""

    input: RecordView
    stages: tuple[StageView, ...]
    outcome: Outcome
    output: RecordView | None = None
    failure: StageFailure | None = None


@dataclass(frozen=True, slots=True)
class PipelinePreview:
    """The preview of every input record, in input order."""

    type: ConnectorType
    records: tuple[RecordPreview, ...]
