"""FileStream connectors: Kafka Connect's demo file source and sink, with the same semantics.

The source tails a text file and sends each complete line to one topic. Its only source
partition is ``{"filename": <file>}`` and its offset is ``{"position": <byte position right
after the last line sent>}``, so a restarted task continues with the next line. A trailing
line without its newline is not sent until it is completed. Unlike Kafka (which reads stdin
when ``file`` is unset), ``file`` is required: stdin has no offsets to resume from.

Unlike Kafka's, the source notices a file that was truncated or replaced, as ``tail -F``
does: a file shorter than the committed position when it is opened, an open file that
shrank below the position, or a path that now names another file (a new inode) is read
again from its start, and ``file_truncated`` / ``file_replaced`` is logged with both
positions. Kafka's task seeks past the end of a shorter file and sends nothing until the
file grows past the old position, losing the lines written before that.

The source's values are strings with the STRING schema, as Kafka's. The sink appends each
record's value plus a newline to a file: bytes (no converter) UTF-8 decoded, Connect data as
Kafka's sink prints it (``null``, ``Struct{name=alice,ssn=}``, ``[1, 2]``, ``{k=v}``).
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator, Mapping, Sequence
from typing import IO, Any, TypeVar, cast

import structlog

from connect_grpc.connectors.api import (
    ExactlyOnceSupport,
    SinkConnector,
    SinkRecord,
    SinkTask,
    SourceConnector,
    SourceRecord,
    SourceTask,
    Task,
)
from connect_grpc.data.javatext import java_string
from connect_grpc.data.schema import STRING_SCHEMA
from connect_grpc.data.struct import Struct, struct_text, value_texts
from connect_grpc.kernel.configdef import (
    ConfigDef,
    ConfigKey,
    ConfigType,
    Importance,
    at_least,
    define_all,
    single_topic,
)
from connect_grpc.kernel.domain import OffsetMap

__all__ = [
    "FILENAME_FIELD",
    "POSITION_FIELD",
    "FileStreamSinkConnector",
    "FileStreamSinkTask",
    "FileStreamSourceConnector",
    "FileStreamSourceTask",
]

_log = structlog.get_logger(__name__)

FILE_CONFIG = "file"
TOPIC_CONFIG = "topic"
BATCH_SIZE_CONFIG = "batch.size"
DEFAULT_BATCH_SIZE = 2000

#: The source partition key: the file's path as configured.
FILENAME_FIELD = "filename"
#: The source offset key: the byte position right after the last line sent.
POSITION_FIELD = "position"

_READ_CHUNK = 64 * 1024
#: The sink's lines are joined and written a block of about this many bytes at a time, so
#: that each block is still in the core's cache when the file copies it: a whole batch
#: joined at once (10 MB for 100k lines of 100 bytes) was copied through memory twice.
#: bench/filestream.py's sink, 5 alternated pairs: steady state 667k → 754k records/s.
WRITE_BLOCK_BYTES = 256 * 1024
_Line = TypeVar("_Line", bytes, str)


def _non_empty(value: Any) -> str | None:
    if value is None or not str(value).strip():
        return "String must be non-empty"
    return None


SOURCE_CONFIG = define_all(
    [
        ConfigKey(FILE_CONFIG, ConfigType.STRING, "Source filename. Required (stdin is not "
                  "supported because it has no offsets to resume from).",
                  importance=Importance.HIGH, validator=_non_empty),
        ConfigKey(TOPIC_CONFIG, ConfigType.STRING, "The topic to publish data to.",
                  importance=Importance.HIGH, validator=single_topic("FileStreamSourceConnector")),
        ConfigKey(BATCH_SIZE_CONFIG, ConfigType.INT,
                  "The maximum number of records the source task can read from the file each "
                  "time it is polled.", default=DEFAULT_BATCH_SIZE, importance=Importance.LOW,
                  validator=at_least(1)),
    ]
)

SINK_CONFIG = define_all(
    [
        ConfigKey(FILE_CONFIG, ConfigType.STRING,
                  "Destination filename; each record value is appended as one line.",
                  importance=Importance.HIGH, validator=_non_empty),
    ]
)


class FileStreamSourceConnector(SourceConnector):
    """Reads lines from a file into one topic. Always runs a single task."""

    def __init__(self) -> None:
        self._config: dict[str, Any] = {}

    def config_def(self) -> ConfigDef:
        """The source's keys: ``file``, ``topic`` and ``batch.size``."""
        return SOURCE_CONFIG

    def start(self, config: Mapping[str, str]) -> None:
        """Parses the config. Raises ValueError when it is invalid."""
        self._config = SOURCE_CONFIG.parse(config)
        _log.info("file_source_connector_started", file=self._config[FILE_CONFIG])

    def task_class(self) -> type[Task]:
        """FileStreamSourceTask."""
        return FileStreamSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        """One task config whatever ``max_tasks`` is: a file is read by one reader."""
        return [
            {
                FILE_CONFIG: str(self._config[FILE_CONFIG]),
                TOPIC_CONFIG: str(self._config[TOPIC_CONFIG]),
                BATCH_SIZE_CONFIG: str(self._config[BATCH_SIZE_CONFIG]),
            }
        ]

    def stop(self, connector_deleted: bool = False) -> None:
        """Nothing to release: the task owns the file handle."""
        _log.info("file_source_connector_stopped", connector_deleted=connector_deleted)

    def exactly_once_support(self, config: Mapping[str, str]) -> ExactlyOnceSupport | None:
        """SUPPORTED: a task resumed at a committed position reads the same lines after it,
        as long as the file is only appended to (there is no stdin mode to rule out)."""
        return ExactlyOnceSupport.SUPPORTED

    def alter_offsets(
        self,
        config: Mapping[str, str],
        offsets: Sequence[tuple[OffsetMap, OffsetMap | None]],
    ) -> bool:
        """Checks the shape of each offset like Kafka's FileStreamSourceConnector.

        Any partition may be reset (``None``), so stale partitions of an earlier ``file`` can
        be cleaned up. The task checks the position against the file when it starts.

        Raises:
            ValueError: ``file`` is unset, or a partition or offset is malformed.

        Returns:
            True: the framework's offsets are the connector's only state.
        """
        if not (config.get(FILE_CONFIG) or "").strip():
            raise ValueError(
                f"Offsets cannot be modified if the '{FILE_CONFIG}' configuration is unspecified"
            )
        for partition, offset in offsets:
            check_source_offset(partition, offset)
        return True


def check_source_offset(
    partition: Mapping[str, object] | None, offset: Mapping[str, object] | None
) -> None:
    """Raises ValueError unless ``partition``/``offset`` have the FileStream source's shape."""
    if offset is None:
        return
    if POSITION_FIELD not in offset:
        raise ValueError(
            f"Offset objects should either be null or contain the key '{POSITION_FIELD}'"
        )
    position = offset[POSITION_FIELD]
    if not isinstance(position, int) or isinstance(position, bool):
        raise ValueError(
            f"The value for the '{POSITION_FIELD}' key in the offset is expected to be an "
            "integer (Long) value"
        )
    if position < 0:
        raise ValueError(
            f"The value for the '{POSITION_FIELD}' key in the offset should be a non-negative "
            "value"
        )
    if partition is None:
        raise ValueError("Partition objects cannot be null")
    if FILENAME_FIELD not in partition:
        raise ValueError(f"Partition objects should contain the key '{FILENAME_FIELD}'")


class FileStreamSourceTask(SourceTask):
    """Tails the file; each ``poll`` returns the complete lines appended since the last one.

    Not thread-safe: the runtime calls ``poll`` from one thread. The file is opened lazily,
    so a file that does not exist yet is waited for (``poll`` returns []).
    """

    def __init__(self) -> None:
        self._filename = ""
        self._partition: dict[str, str] = {}
        self._topic = ""
        self._batch_size = DEFAULT_BATCH_SIZE
        self._stream: IO[bytes] | None = None
        self._buffer = b""
        self._position = 0
        self._missing_logged = False
        #: (device, inode) of the open file: a different one at the path means "replaced".
        self._identity: tuple[int, int] | None = None

    @property
    def position(self) -> int:
        """The byte position right after the last line returned by ``poll``."""
        return self._position

    def start(self, config: Mapping[str, str]) -> None:
        """Reads its committed offset and positions itself right after the last line sent.

        Raises:
            ValueError: the config or the committed offset is malformed.
        """
        parsed = SOURCE_CONFIG.parse(config)
        self._filename = str(parsed[FILE_CONFIG])
        self._partition = {FILENAME_FIELD: self._filename}  # one object shared by every record
        self._topic = str(parsed[TOPIC_CONFIG])
        self._batch_size = int(parsed[BATCH_SIZE_CONFIG])
        self._position = self._committed_position()
        self._buffer = b""
        _log.info("file_source_task_started", file=self._filename, position=self._position)

    def _committed_position(self) -> int:
        partition = {FILENAME_FIELD: self._filename}
        offset = self.context.offset_reader.offset(partition)
        if offset is None:
            return 0
        check_source_offset(partition, offset)
        position = offset[POSITION_FIELD]
        assert isinstance(position, int)  # checked above
        return position

    def poll(self, max_records: int) -> list[SourceRecord]:
        """Up to ``min(max_records, batch.size)`` complete lines; [] at once if none is new."""
        limit = min(max_records, self._batch_size)
        if limit <= 0:
            return []
        lines = self._read_lines(limit)
        if not lines and self._stream is not None and self._truncated_or_replaced(self._stream):
            lines = self._read_lines(limit)
        return [self._record(text, end) for text, end in lines]

    def _read_lines(self, limit: int) -> list[tuple[str, int]]:
        stream = self._open()
        if stream is None:
            return []
        lines = self._take_lines(limit)
        while len(lines) < limit:
            chunk = stream.read(_READ_CHUNK)
            if not chunk:
                break
            self._buffer += chunk
            lines.extend(self._take_lines(limit - len(lines)))
        return lines

    def _open(self) -> IO[bytes] | None:
        if self._stream is not None:
            return self._stream
        try:
            stream = open(self._filename, "rb")  # noqa: SIM115 - kept open across polls
        except FileNotFoundError:
            if not self._missing_logged:
                _log.warning("file_source_file_missing", file=self._filename)
                self._missing_logged = True
            return None
        stat = os.fstat(stream.fileno())
        if stat.st_size < self._position:
            self._start_over("file_truncated", size=stat.st_size)
        stream.seek(self._position)
        self._stream = stream
        self._identity = (stat.st_dev, stat.st_ino)
        _log.info("file_source_file_opened", file=self._filename, position=self._position)
        return stream

    def _truncated_or_replaced(self, stream: IO[bytes]) -> bool:
        """Whether the file was truncated below the position or replaced at its path, in
        which case the task is ready to read the file at the path from its start. Checked
        only when a poll found nothing new: a growing file costs no ``stat``."""
        try:
            at_path = os.stat(self._filename)
        except FileNotFoundError:  # removed: keep the open file until another appears
            return False
        if (at_path.st_dev, at_path.st_ino) != self._identity:
            self._close()
            self._start_over("file_replaced", size=at_path.st_size)
            return True
        size = os.fstat(stream.fileno()).st_size
        if size < self._position:
            self._start_over("file_truncated", size=size)
            stream.seek(0)
            return True
        return False

    def _start_over(self, event: str, size: int) -> None:
        """Reads the file again from its start; the lines after the old position that were
        not sent yet (a partial line in the buffer) are gone with the old content."""
        _log.warning(event, file=self._filename, committed_position=self._position,
                     size=size, restart_position=0)
        self._position = 0
        self._buffer = b""

    def _take_lines(self, limit: int) -> list[tuple[str, int]]:
        """Splits up to ``limit`` complete lines off the buffer: (text without its newline
        or a trailing CR, position after it). Split and decoded in bulk: a newline never
        occurs inside a UTF-8 sequence, so the block decodes to the very lines each would."""
        buffer = self._buffer
        end = buffer.rfind(b"\n")
        if end < 0 or limit <= 0:
            return []
        raws = buffer[:end].split(b"\n", limit)[:limit]
        ends = list(itertools.accumulate((len(raw) + 1 for raw in raws), initial=self._position))
        taken = ends[-1] - self._position
        texts = buffer[: taken - 1].decode("utf-8", errors="replace").split("\n")
        self._buffer = buffer[taken:]
        self._position += taken
        return [
            (text[:-1] if text.endswith("\r") else text, after)
            for text, after in zip(texts, ends[1:], strict=True)
        ]

    def _record(self, text: str, end: int) -> SourceRecord:
        # positional: one call per line (value_schema STRING, as Kafka's FileStreamSource)
        return SourceRecord(
            self._partition, {POSITION_FIELD: end}, self._topic, text,
            None, None, (), None, STRING_SCHEMA,
        )

    def _close(self) -> None:
        if self._stream is not None:
            self._stream.close()
            self._stream = None
        self._identity = None

    def stop(self, connector_deleted: bool = False) -> None:
        """Closes the file. Idempotent."""
        self._close()
        _log.info("file_source_task_stopped", file=self._filename, position=self._position,
                  connector_deleted=connector_deleted)


class FileStreamSinkConnector(SinkConnector):
    """Appends the values of the records of ``topics`` to a file, one per line."""

    def __init__(self) -> None:
        self._file = ""

    def config_def(self) -> ConfigDef:
        """The sink's own key, ``file`` (``topics`` is the framework's)."""
        return SINK_CONFIG

    def start(self, config: Mapping[str, str]) -> None:
        """Parses the config. Raises ValueError when it is invalid."""
        self._file = str(SINK_CONFIG.parse(config)[FILE_CONFIG])
        _log.info("file_sink_connector_started", file=self._file)

    def task_class(self) -> type[Task]:
        """FileStreamSinkTask."""
        return FileStreamSinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        """``max_tasks`` identical configs; every task appends to the same file."""
        return [{FILE_CONFIG: self._file} for _ in range(max_tasks)]

    def stop(self, connector_deleted: bool = False) -> None:
        """Nothing to release: tasks own their file handles."""
        _log.info("file_sink_connector_stopped", connector_deleted=connector_deleted)

    def alter_offsets(
        self, config: Mapping[str, str], offsets: Mapping[tuple[str, int], int | None]
    ) -> bool:
        """Accepts any change: the consumer group's offsets are the sink's only state."""
        return True


class FileStreamSinkTask(SinkTask):
    """Appends each record value plus a newline to the file, in UTF-8; ``flush`` fsyncs it."""

    def __init__(self) -> None:
        self._filename = ""
        self._stream: IO[bytes] | None = None

    def start(self, config: Mapping[str, str]) -> None:
        """Opens the file for appending: the file is created when missing, its directory
        never is (as Kafka's task, whose ``Files.newOutputStream(CREATE, APPEND)`` creates no
        parent). Raises FileNotFoundError naming the missing directory and the ``file`` key."""
        self._filename = str(SINK_CONFIG.parse(config)[FILE_CONFIG])
        try:
            self._stream = open(self._filename, "ab")  # noqa: SIM115
        except FileNotFoundError:
            missing = _missing_directory(self._filename)
            if missing is None:
                raise
            raise missing from None  # its message says more than the errno
        _log.info("file_sink_task_started", file=self._filename)

    def put(self, records: Sequence[SinkRecord]) -> None:
        """Appends each value as a line: bytes decoded as UTF-8 (no converter), Connect
        data as Kafka's sink prints it (``String.valueOf``: ``null``, ``Struct{a=1}``, …)."""
        stream = self._require_stream()
        if not records:
            return
        values = [record.value for record in records]
        if all(value.__class__ is bytes for value in values):
            for block in _blocks(cast(list[bytes], values), len(values[0])):
                block.append(b"")  # so that the block's last line ends with a newline too
                stream.write(_as_utf8(b"\n".join(block)))
        else:
            texts = value_texts(values, _value_text)
            for text_block in _blocks(texts, len(texts[0])):
                text_block.append("")
                stream.write("\n".join(text_block).encode("utf-8"))

    def flush(self, offsets: Mapping[tuple[str, int], int]) -> None:
        """Flushes and fsyncs the file, so every record put so far is durable."""
        stream = self._require_stream()
        stream.flush()
        os.fsync(stream.fileno())

    def _require_stream(self) -> IO[bytes]:
        if self._stream is None:
            raise RuntimeError("FileStreamSinkTask is not started")
        return self._stream

    def stop(self, connector_deleted: bool = False) -> None:
        """Flushes and closes the file. Idempotent."""
        if self._stream is not None:
            self._stream.close()
            self._stream = None
        _log.info("file_sink_task_stopped", file=self._filename,
                  connector_deleted=connector_deleted)


def _missing_directory(filename: str) -> FileNotFoundError | None:
    """The error that says the sink's file cannot be created because its directory does not
    exist (on the host that runs the task: an executor's, on a Spark cluster), or None when
    the directory exists (the file is missing for another reason, a dangling link)."""
    directory = os.path.dirname(os.path.abspath(filename))
    if os.path.isdir(directory):
        return None
    return FileNotFoundError(
        f"directory {directory} does not exist, so FileStreamSink cannot create its file "
        f"{filename} (the '{FILE_CONFIG}' key): create the directory first (mkdir -p "
        f"{directory}) on the host that runs the task; the sink creates its file, never a "
        f"directory, as Kafka Connect's does"
    )


def _blocks(lines: list[_Line], first_size: int) -> Iterator[list[_Line]]:
    """``lines`` in runs of about ``WRITE_BLOCK_BYTES``, each line reckoned as long as the
    first (``first_size``) plus its newline. Each run is a new list."""
    per_block = max(1, WRITE_BLOCK_BYTES // (first_size + 1))
    for start in range(0, len(lines), per_block):
        yield lines[start : start + per_block]


def _as_utf8(lines: bytes) -> bytes:
    """Record values written as text, as decoding them from UTF-8 would: ASCII (the common
    case, told in one pass) as it is, anything else decoded, undecodable bytes replaced,
    and encoded again. Decoded in one block: a newline never splits a UTF-8 sequence."""
    if lines.isascii():
        return lines
    return lines.decode("utf-8", errors="replace").encode("utf-8")


def _value_text(value: Any) -> str:
    if value.__class__ is Struct:
        return struct_text(value)  # what java_string writes of a Struct, with no type tests first
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8", errors="replace")
    if isinstance(value, str):
        return value
    return java_string(value)
