"""Small converters, transformations and predicates for tests of the record pipeline:
real implementations of the data room's interfaces, loadable by dotted path
(``connect_grpc.testing.pipeline_plugins.Utf8Converter``) by a worker in another process.

A value containing ``poison`` makes :class:`Utf8Converter`, :class:`PickyBytesConverter`
and :class:`PoisonTransformation` raise a DataError; ``drop`` makes
:class:`DropTransformation` drop the record; a value starting with ``flaky`` makes
:class:`FlakyTransformation` raise a RetriableError. :class:`RejectingFileSinkConnector` is
FileStreamSink whose task reports values containing ``reject`` through KIP-610's errant
record reporter. :class:`CommitListeningFileSourceConnector` is FileStreamSource whose task
writes each ``commit_record`` call it gets to ``<file>.commits``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from typing import Any

from connect_grpc.connectors.api import RecordMetadata, SinkRecord, SourceRecord, Task
from connect_grpc.connectors.file import (
    FILE_CONFIG,
    FileStreamSinkConnector,
    FileStreamSinkTask,
    FileStreamSourceConnector,
    FileStreamSourceTask,
)
from connect_grpc.data.errors import DataError, RetriableError
from connect_grpc.data.plugins import (
    Converter,
    HeaderConverter,
    Predicate,
    SchemaAndValue,
    Transformation,
)
from connect_grpc.data.record import ConnectRecord


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return "" if value is None else str(value)


class Utf8Converter(Converter):
    """str ⇄ UTF-8 bytes, schemaless; refuses values containing ``poison`` both ways."""

    def from_connect_data(self, topic: str, headers: Any, schema: Any, value: Any) -> bytes | None:
        if value is None:
            return None
        text = _text(value)
        if "poison" in text:
            raise DataError(f"Utf8Converter refuses {text!r}")
        return text.encode("utf-8")

    def to_connect_data(self, topic: str, headers: Any, value: bytes | None) -> SchemaAndValue:
        if value is None:
            return SchemaAndValue(None, None)
        text = value.decode("utf-8")
        if "poison" in text:
            raise DataError(f"Utf8Converter refuses {text!r}")
        return SchemaAndValue(None, text)


class PickyBytesConverter(Converter):
    """Bytes in, bytes out (str written as UTF-8), schemaless, as a plugin written for
    the bytes path expects; refuses values containing ``poison`` both ways."""

    def from_connect_data(self, topic: str, headers: Any, schema: Any, value: Any) -> bytes | None:
        if value is None:
            return None
        data = value if isinstance(value, bytes) else str(value).encode("utf-8")
        if b"poison" in data:
            raise DataError("PickyBytesConverter refuses a poisoned value")
        return data

    def to_connect_data(self, topic: str, headers: Any, value: bytes | None) -> SchemaAndValue:
        if value is not None and b"poison" in value:
            raise DataError("PickyBytesConverter refuses a poisoned value")
        return SchemaAndValue(None, value)


class RawHeaderConverter(HeaderConverter):
    """Header values as bytes both ways (str written as UTF-8), schemaless."""

    def from_connect_header(
        self, topic: str, header_key: str, schema: Any, value: Any
    ) -> bytes | None:
        if value is None or isinstance(value, bytes):
            return value
        return str(value).encode("utf-8")

    def to_connect_header(self, topic: str, header_key: str, value: bytes | None) -> SchemaAndValue:
        return SchemaAndValue(None, value)


class UpperCaseTransformation(Transformation[ConnectRecord]):
    """Upper-cases a str or bytes value (``suffix`` is appended when configured)."""

    suffix = ""

    def configure(self, configs: Mapping[str, str]) -> None:
        self.suffix = configs.get("suffix", "")

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        value = record.value
        if isinstance(value, bytes):
            return record.new_record(value=value.upper() + self.suffix.encode())
        if isinstance(value, str):
            return record.new_record(value=value.upper() + self.suffix)
        return record


class PoisonTransformation(Transformation[ConnectRecord]):
    """Raises a DataError for a value containing ``poison``; else the record unchanged."""

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        if "poison" in _text(record.value):
            raise DataError("poisoned value")
        return record


class DropTransformation(Transformation[ConnectRecord]):
    """Drops records whose value contains ``drop`` (as Filter with a predicate would)."""

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        return None if "drop" in _text(record.value) else record


class FlakyTransformation(Transformation[ConnectRecord]):
    """Raises a RetriableError for values starting with ``flaky`` the first ``failures``
    times it sees each (``failures`` configured; default: always)."""

    def __init__(self) -> None:
        self.failures = -1
        self.seen: dict[str, int] = {}

    def configure(self, configs: Mapping[str, str]) -> None:
        self.failures = int(configs.get("failures", "-1"))

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        text = _text(record.value)
        if text.startswith("flaky"):
            count = self.seen.get(text, 0) + 1
            self.seen[text] = count
            if self.failures < 0 or count <= self.failures:
                raise RetriableError(f"not yet: {text}")
        return record


class ValueContains(Predicate[ConnectRecord]):
    """Matches records whose value contains ``text`` (configured)."""

    text = ""

    def configure(self, configs: Mapping[str, str]) -> None:
        self.text = configs.get("text", "")

    def test(self, record: ConnectRecord) -> bool:
        return self.text in _text(record.value)


class RejectingFileSinkTask(FileStreamSinkTask):
    """FileStreamSink's task that reports each record whose value contains ``reject`` through
    its context's errant record reporter (KIP-610) instead of writing it; a tolerance error
    the reporter raises is swallowed, as a careless task would (the runtime fails the task
    after ``put`` all the same)."""

    def put(self, records: Sequence[SinkRecord]) -> None:
        reporter = self.context.errant_record_reporter()
        kept = []
        for record in records:
            if reporter is not None and "reject" in _text(record.value):
                with contextlib.suppress(Exception):
                    reporter.report(record, DataError(f"rejected {_text(record.value)}"))
            else:
                kept.append(record)
        super().put(kept)


class RejectingFileSinkConnector(FileStreamSinkConnector):
    """FileStreamSink whose task rejects records through the errant record reporter."""

    def task_class(self) -> type[Task]:
        return RejectingFileSinkTask


class CommitListeningFileSourceTask(FileStreamSourceTask):
    """FileStreamSource's task that appends a line ``<position> <metadata>`` to
    ``<file>.commits`` for each ``commit_record(record, metadata)`` the runtime calls."""

    def start(self, config: Mapping[str, str]) -> None:
        super().start(config)
        self._commits = f"{config[FILE_CONFIG]}.commits"

    def commit_record(self, record: SourceRecord, metadata: RecordMetadata | None) -> None:
        with open(self._commits, "a", encoding="utf-8") as commits:
            commits.write(f"{record.source_offset['position']} {metadata}\n")


class CommitListeningFileSourceConnector(FileStreamSourceConnector):
    """FileStreamSource whose task writes down the ``commit_record`` calls it gets."""

    def task_class(self) -> type[Task]:
        return CommitListeningFileSourceTask
