"""Instrumented connector plugins for tests: they record what happens to them and fail on demand.

Integration tests run workers in other processes, so the plugins report through a file:
each lifecycle call appends one JSON line to the file named by ``test.events.file`` (no
file, no events). Every event has ``event``, ``connector``, ``task`` (None for connector
events), ``connector_deleted`` (None unless the event is a stop), ``instance`` (a uuid per
plugin instance, so a restart shows as a new instance), ``pid`` and ``time``. Events:

* ``connector_start``, ``connector_stop``, ``task_start``, ``task_stop`` — written *before*
  an injected failure is raised, so failed attempts count too; with ``test.record.config``
  true, ``connector_start`` and ``task_start`` carry the ``config`` the plugin was given
  (config provider references resolved: keep such event files to tests), and the plugin
  also logs it, as a careless plugin would (the worker must mask the resolved values); with
  ``test.print.config`` true, ``Connector.start`` and ``Task.start`` also ``print()`` their
  config, to stdout and to stderr (``connector <name> config: {…}`` and
  ``task <name>-<id> config: {…}``: the worker must capture and mask these too); an
  injected connector start failure names the instance in its message (``connector start
  failed on purpose (instance <uuid>)``), so that a test tells the trace of a restarted
  instance from its predecessor's, the same failure otherwise;
* ``alter_offsets`` (with ``mode`` and ``offsets``) — the plugin's KIP-875 hook was called;
* ``task_poll`` (source, with ``values``) — records returned by a poll;
* ``task_put`` (sink, with ``values`` and ``positions`` [topic, partition, offset]) and
  ``task_flush`` (sink, with ``offsets``) — what the sink received and when it was flushed,
  so tests can check for lost or duplicated records.

Load them by dotted path: ``connect_grpc.testing.plugins.InstrumentedSourceConnector`` and
``connect_grpc.testing.plugins.InstrumentedSinkConnector`` (or their simple names).

The source task ``t`` emits ``test.source.records`` records with values ``"<t>-<i>"``
(``i`` from 0), key ``"<t>"``, partition ``{"task": t}`` and offset ``{"seq": i}`` (the index
of the last record emitted; a restarted task resumes with ``i + 1``).

``test.fail.task.start.times`` N: only the first N starts of each failing task fail.

``test.hold.connector.start`` names a file ``Connector.start`` waits for (after recording
``connector_start``): a start that hangs, holding the worker's loop that runs it.
"""

from __future__ import annotations

import fcntl
import json
import os
import sys
import threading
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog

from connect_grpc.connectors.api import (
    AlterOffsetsUnsupportedError,
    SinkConnector,
    SinkRecord,
    SinkTask,
    SourceConnector,
    SourceRecord,
    SourceTask,
    Task,
)
from connect_grpc.kernel.configdef import (
    ConfigDef,
    ConfigKey,
    ConfigType,
    Importance,
    at_least,
    define_all,
)
from connect_grpc.kernel.domain import OffsetMap, OffsetPrimitive

__all__ = [
    "FakeSourceTaskContext",
    "InjectedFailureError",
    "InstrumentedSinkConnector",
    "InstrumentedSinkTask",
    "InstrumentedSourceConnector",
    "InstrumentedSourceTask",
    "count",
    "read_events",
]

_log = structlog.get_logger(__name__)

EVENTS_FILE = "test.events.file"
FAIL_CONNECTOR_START = "test.fail.connector.start"
FAIL_CONNECTOR_STOP = "test.fail.connector.stop"
FAIL_TASK_START = "test.fail.task.start"
FAIL_TASK_POLL = "test.fail.task.poll"
FAIL_TASK_START_TIMES = "test.fail.task.start.times"
SOURCE_RECORDS = "test.source.records"
ALTER_OFFSETS = "test.alter.offsets"
RECORD_CONFIG = "test.record.config"
PRINT_CONFIG = "test.print.config"
HOLD_CONNECTOR_START = "test.hold.connector.start"
#: The longest a held ``Connector.start`` waits: a test that forgot to release it must not
#: wedge the worker's loop for good.
HOLD_LIMIT_S = 300.0
SECRET = "test.secret"
TOPIC = "topic"
TASK_ID = "task.id"

ALTER_OFFSETS_MODES = ("true", "false", "unsupported", "invalid")
_GROUP = "Test instrumentation"

_write_lock = threading.Lock()


class InjectedFailureError(RuntimeError):
    """A failure a test asked for through a ``test.fail.*`` key."""


@dataclass
class FakeSourceTaskContext:
    """A SourceTaskContext for driving a source task without the runtime (unit tests).

    It is its own offset reader: ``offsets`` maps a partition's sorted items to its offset.
    """

    connector_name: str = "test"
    task_id: int = 0
    offsets: dict[tuple[tuple[str, Any], ...], dict[str, Any]] = field(default_factory=dict)
    #: What ``transaction_context`` returns (a TaskTransactionContext, say); None by default.
    transaction_context: Any = None

    @property
    def offset_reader(self) -> FakeSourceTaskContext:
        """This object."""
        return self

    def set_offset(self, partition: OffsetMap, offset: Mapping[str, object]) -> None:
        """Makes ``offset`` the committed offset of ``partition`` (not checked: a test may
        give a task an offset of the wrong shape)."""
        self.offsets[tuple(sorted(partition.items()))] = dict(offset)

    def offset(self, partition: OffsetMap) -> dict[str, OffsetPrimitive] | None:
        """The committed offset of ``partition``, or None."""
        return self.offsets.get(tuple(sorted(partition.items())))


# ---------------------------------------------------------------------------- config


def parse_task_set(spec: str) -> frozenset[int] | None:
    """Parses a ``test.fail.task.*`` value: None for "all", else the listed task ids.

    Raises:
        ValueError: an item is not a non-negative integer.
    """
    text = spec.strip()
    if text.lower() == "all":
        return None
    ids: set[int] = set()
    for item in filter(None, (part.strip() for part in text.split(","))):
        if not item.isdigit():
            raise ValueError(f"Expected 'all' or a comma-separated list of task ids, got {item!r}")
        ids.add(int(item))
    return frozenset(ids)


def _task_set_error(value: Any) -> str | None:
    try:
        parse_task_set(str(value or ""))
    except ValueError as exc:
        return str(exc)
    return None


def _alter_mode_error(value: Any) -> str | None:
    if str(value).strip().lower() not in ALTER_OFFSETS_MODES:
        return f"Must be one of {', '.join(ALTER_OFFSETS_MODES)}"
    return None


def _hold_until(release_file: str) -> None:
    """Waits until ``release_file`` exists (at most HOLD_LIMIT_S); empty: returns at once."""
    deadline = time.monotonic() + HOLD_LIMIT_S
    while release_file and not os.path.exists(release_file) and time.monotonic() < deadline:
        time.sleep(0.1)


def _task_fails(spec: str, task_id: int) -> bool:
    ids = parse_task_set(spec)
    return ids is None or task_id in ids


def _common_keys(task_fail_doc: str) -> list[ConfigKey]:
    return [
        ConfigKey(EVENTS_FILE, ConfigType.STRING,
                  "File the plugin appends its JSON-lines events to; empty: no events.",
                  default="", importance=Importance.HIGH, group=_GROUP, order_in_group=1),
        ConfigKey(FAIL_CONNECTOR_START, ConfigType.BOOLEAN,
                  "Whether Connector.start raises (after recording connector_start).",
                  default=False, importance=Importance.LOW, group=_GROUP, order_in_group=2),
        ConfigKey(FAIL_CONNECTOR_STOP, ConfigType.BOOLEAN,
                  "Whether Connector.stop raises (after recording connector_stop).",
                  default=False, importance=Importance.LOW, group=_GROUP, order_in_group=3),
        ConfigKey(FAIL_TASK_START, ConfigType.STRING,
                  "Task ids whose start raises: 'all' or a comma-separated list of ids.",
                  default="", importance=Importance.LOW, validator=_task_set_error,
                  group=_GROUP, order_in_group=4),
        ConfigKey(FAIL_TASK_POLL, ConfigType.STRING, task_fail_doc, default="",
                  importance=Importance.LOW, validator=_task_set_error, group=_GROUP,
                  order_in_group=5),
        ConfigKey(ALTER_OFFSETS, ConfigType.STRING,
                  "What alter_offsets does: 'true'/'false' (returns it), 'unsupported' (refuses "
                  "any change) or 'invalid' (rejects the offsets as malformed).",
                  default="true", importance=Importance.LOW, validator=_alter_mode_error,
                  group=_GROUP, order_in_group=6),
        ConfigKey(RECORD_CONFIG, ConfigType.BOOLEAN,
                  "Whether connector_start and task_start events carry the config the plugin "
                  "was given.", default=False, importance=Importance.LOW, group=_GROUP,
                  order_in_group=7),
        ConfigKey(SECRET, ConfigType.PASSWORD,
                  "A password the plugin takes and never uses (ValidateConfig shows it "
                  "[hidden]).", default=None, importance=Importance.LOW, group=_GROUP,
                  order_in_group=8),
        ConfigKey(PRINT_CONFIG, ConfigType.BOOLEAN,
                  "Whether Connector.start and Task.start print() the config they were given "
                  "to stdout and stderr.", default=False, importance=Importance.LOW,
                  group=_GROUP, order_in_group=9),
        ConfigKey(HOLD_CONNECTOR_START, ConfigType.STRING,
                  "A file: Connector.start (after recording connector_start) waits until it "
                  "exists, as a plugin whose start hangs holds the worker's loop that "
                  "started it; empty: no wait.", default="", importance=Importance.LOW,
                  group=_GROUP, order_in_group=10),
        ConfigKey(FAIL_TASK_START_TIMES, ConfigType.INT,
                  f"Only the first N starts of each task in {FAIL_TASK_START} fail (counted "
                  f"in {EVENTS_FILE}, which it needs), later ones succeed: a plugin that "
                  "recovers after some restarts; -1: every start fails.", default=-1,
                  importance=Importance.LOW, validator=at_least(-1), group=_GROUP,
                  order_in_group=12),
    ]


SOURCE_CONFIG = define_all(
    [
        *_common_keys("Task ids whose poll raises: 'all' or a comma-separated list of ids."),
        ConfigKey(TOPIC, ConfigType.STRING,
                  "Topic of the records; required when test.source.records > 0.",
                  default="", importance=Importance.HIGH, group=_GROUP, order_in_group=10),
        ConfigKey(SOURCE_RECORDS, ConfigType.INT,
                  "Number of records each task produces, then nothing (0: none).",
                  default=0, importance=Importance.MEDIUM, validator=at_least(0),
                  group=_GROUP, order_in_group=11),
    ]
)

SINK_CONFIG = define_all(
    _common_keys("Task ids whose put raises: 'all' or a comma-separated list of ids.")
)


# ---------------------------------------------------------------------------- events


def _append_line(path: str, line: str) -> None:
    """Appends one line with a single O_APPEND write under an exclusive file lock."""
    data = (line + "\n").encode("utf-8")
    with _write_lock:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            os.write(fd, data)
        finally:
            os.close(fd)  # closing releases the flock


def record_event(
    path: str,
    event: str,
    connector: str,
    instance: str,
    *,
    task: int | None = None,
    connector_deleted: bool | None = None,
    **extra: Any,
) -> None:
    """Appends one event to ``path`` (nothing when ``path`` is empty)."""
    if not path:
        return
    payload: dict[str, Any] = {
        "event": event,
        "connector": connector,
        "task": task,
        "connector_deleted": connector_deleted,
        "instance": instance,
        "pid": os.getpid(),
        "time": time.time(),
        **extra,
    }
    _append_line(path, json.dumps(payload, default=str))


def read_events(path: str | Path) -> list[dict[str, Any]]:
    """Every complete event in the file, in write order ([] when it does not exist yet)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    lines = text.split("\n")[:-1]  # the last item is "" or a line still being written
    return [json.loads(line) for line in lines if line]


def count(
    events: Iterable[Mapping[str, Any]],
    event: str,
    task: int | None = None,
    connector: str | None = None,
) -> int:
    """How many ``event`` events there are, optionally only of one task and/or connector."""
    return sum(
        1
        for item in events
        if item.get("event") == event
        and (task is None or item.get("task") == task)
        and (connector is None or item.get("connector") == connector)
    )


def _config_field(parsed: Mapping[str, Any], config: Mapping[str, str]) -> dict[str, Any]:
    """The event field carrying the config, with ``test.record.config`` true."""
    return {"config": dict(config)} if parsed[RECORD_CONFIG] else {}


def _print_config(parsed: Mapping[str, Any], who: str, config: Mapping[str, str]) -> None:
    """Prints the config, as a careless plugin would, with ``test.print.config`` true."""
    if parsed[PRINT_CONFIG]:
        print(f"{who} config: {dict(config)}")  # noqa: T201 - on purpose
        print(f"{who} config: {dict(config)}", file=sys.stderr)  # noqa: T201 - on purpose


# ---------------------------------------------------------------------------- connectors


class _ConnectorProbe:
    """The instrumentation shared by the source and the sink connector."""

    def __init__(self, config_def: ConfigDef) -> None:
        self.config_def = config_def
        self.instance = uuid.uuid4().hex
        self.config: dict[str, str] = {}

    def record(self, config: Mapping[str, str], event: str, /, **fields: Any) -> None:
        record_event(config.get(EVENTS_FILE, ""), event, config.get("name", ""),
                     self.instance, **fields)

    def start(self, config: Mapping[str, str]) -> None:
        parsed = self.config_def.parse(config)
        self.config = dict(config)
        self.record(config, "connector_start", **_config_field(parsed, config))
        _log.info("instrumented_connector_started", connector=config.get("name"),
                  **_config_field(parsed, config))
        _print_config(parsed, f"connector {config.get('name')}", config)
        _hold_until(parsed[HOLD_CONNECTOR_START])
        if parsed[FAIL_CONNECTOR_START]:
            raise InjectedFailureError(
                f"connector start failed on purpose (instance {self.instance})"
            )

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [{**self.config, TASK_ID: str(task)} for task in range(max_tasks)]

    def stop(self, connector_deleted: bool) -> None:
        self.record(self.config, "connector_stop", connector_deleted=connector_deleted)
        _log.info("instrumented_connector_stopped", connector=self.config.get("name"),
                  connector_deleted=connector_deleted)
        if self.config.get(FAIL_CONNECTOR_STOP, "").strip().lower() == "true":
            raise InjectedFailureError("connector stop failed on purpose")

    def alter_offsets(self, config: Mapping[str, str], offsets: list[Any]) -> bool:
        mode = config.get(ALTER_OFFSETS, "true").strip().lower()
        self.record(config, "alter_offsets", mode=mode, offsets=offsets)
        if mode == "unsupported":
            raise AlterOffsetsUnsupportedError(
                "this test connector does not support altering its offsets"
            )
        if mode == "invalid":
            raise ValueError("the test connector rejects these offsets on purpose")
        return mode == "true"


class InstrumentedSourceConnector(SourceConnector):
    """A source connector that records its lifecycle and fails on demand (see module doc)."""

    def __init__(self) -> None:
        self._probe = _ConnectorProbe(SOURCE_CONFIG)

    def config_def(self) -> ConfigDef:
        """The ``test.*`` keys plus ``topic`` and ``test.source.records``."""
        return SOURCE_CONFIG

    def validate(self, config: Mapping[str, str]) -> dict[str, list[str]]:
        """ConfigDef checks plus: ``topic`` is required when records are produced."""
        errors = SOURCE_CONFIG.validate(config)
        records = config.get(SOURCE_RECORDS, "0").strip()
        if records.isdigit() and int(records) > 0 and not config.get(TOPIC, "").strip():
            errors[TOPIC].append(f"Required when {SOURCE_RECORDS} is greater than 0")
        return errors

    def start(self, config: Mapping[str, str]) -> None:
        """Records ``connector_start``; raises if ``test.fail.connector.start``."""
        self._probe.start(config)

    def task_class(self) -> type[Task]:
        """InstrumentedSourceTask."""
        return InstrumentedSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        """Exactly ``max_tasks`` configs: the connector config plus ``task.id``."""
        return self._probe.task_configs(max_tasks)

    def stop(self, connector_deleted: bool = False) -> None:
        """Records ``connector_stop``; raises if ``test.fail.connector.stop``."""
        self._probe.stop(connector_deleted)

    def alter_offsets(
        self,
        config: Mapping[str, str],
        offsets: Sequence[tuple[OffsetMap, OffsetMap | None]],
    ) -> bool:
        """Records ``alter_offsets``, then behaves as ``test.alter.offsets`` says."""
        pairs = [[dict(p), None if o is None else dict(o)] for p, o in offsets]
        return self._probe.alter_offsets(config, pairs)


class InstrumentedSinkConnector(SinkConnector):
    """A sink connector that records its lifecycle and fails on demand (see module doc)."""

    def __init__(self) -> None:
        self._probe = _ConnectorProbe(SINK_CONFIG)

    def config_def(self) -> ConfigDef:
        """The ``test.*`` keys (``topics`` is the framework's)."""
        return SINK_CONFIG

    def start(self, config: Mapping[str, str]) -> None:
        """Records ``connector_start``; raises if ``test.fail.connector.start``."""
        self._probe.start(config)

    def task_class(self) -> type[Task]:
        """InstrumentedSinkTask."""
        return InstrumentedSinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        """Exactly ``max_tasks`` configs: the connector config plus ``task.id``."""
        return self._probe.task_configs(max_tasks)

    def stop(self, connector_deleted: bool = False) -> None:
        """Records ``connector_stop``; raises if ``test.fail.connector.stop``."""
        self._probe.stop(connector_deleted)

    def alter_offsets(
        self, config: Mapping[str, str], offsets: Mapping[tuple[str, int], int | None]
    ) -> bool:
        """Records ``alter_offsets``, then behaves as ``test.alter.offsets`` says."""
        triples = [[topic, partition, offset] for (topic, partition), offset in offsets.items()]
        return self._probe.alter_offsets(config, triples)


# ---------------------------------------------------------------------------- tasks


class _TaskProbe:
    """The instrumentation shared by the source and the sink task."""

    def __init__(self, config_def: ConfigDef) -> None:
        self.config_def = config_def
        self.instance = uuid.uuid4().hex
        self.config: dict[str, str] = {}
        self.connector = ""
        self.task_id = 0

    def record(self, event: str, **fields: Any) -> None:
        record_event(self.config.get(EVENTS_FILE, ""), event, self.connector, self.instance,
                     task=self.task_id, **fields)

    def start(self, config: Mapping[str, str], task: Task) -> dict[str, Any]:
        parsed = self.config_def.parse(config)
        self.config = dict(config)
        context = getattr(task, "context", None)
        self.connector = context.connector_name if context else config.get("name", "")
        default_id = context.task_id if context else 0
        self.task_id = int(config.get(TASK_ID, str(default_id)))
        self.record("task_start", **_config_field(parsed, config))
        _log.info("instrumented_task_started", connector=self.connector, task=self.task_id,
                  **_config_field(parsed, config))
        _print_config(parsed, f"task {self.connector}-{self.task_id}", config)
        if _task_fails(parsed[FAIL_TASK_START], self.task_id) and self._start_fails(parsed):
            raise InjectedFailureError(f"task {self.task_id} start failed on purpose")
        return parsed

    def _start_fails(self, parsed: Mapping[str, Any]) -> bool:
        """Whether this start is among the task's first ``test.fail.task.start.times`` (the
        events file counts them across processes, this one included)."""
        times = int(parsed[FAIL_TASK_START_TIMES])
        if times < 0:
            return True
        starts = count(read_events(parsed[EVENTS_FILE]), "task_start", self.task_id,
                       self.connector) if parsed[EVENTS_FILE] else 0
        return starts <= times

    def check_poll(self) -> None:
        if _task_fails(self.config.get(FAIL_TASK_POLL, ""), self.task_id):
            raise InjectedFailureError(f"task {self.task_id} poll/put failed on purpose")

    def stop(self, connector_deleted: bool) -> None:
        self.record("task_stop", connector_deleted=connector_deleted)
        _log.info("instrumented_task_stopped", connector=self.connector, task=self.task_id,
                  connector_deleted=connector_deleted)


class InstrumentedSourceTask(SourceTask):
    """Emits ``test.source.records`` records, resuming after its committed offset."""

    def __init__(self) -> None:
        self._probe = _TaskProbe(SOURCE_CONFIG)
        self._topic = ""
        self._total = 0
        self._next = 0

    def start(self, config: Mapping[str, str]) -> None:
        """Records ``task_start``; raises if this task is in ``test.fail.task.start``."""
        parsed = self._probe.start(config, self)
        self._topic = str(parsed[TOPIC])
        self._total = int(parsed[SOURCE_RECORDS])
        self._next = self._resume_index()

    def _resume_index(self) -> int:
        context = getattr(self, "context", None)
        if context is None:
            return 0
        offset = context.offset_reader.offset({"task": self._probe.task_id})
        seq = None if offset is None else offset.get("seq")
        return seq + 1 if isinstance(seq, int) and not isinstance(seq, bool) else 0

    def poll(self, max_records: int) -> list[SourceRecord]:
        """The next records (recorded as ``task_poll``); raises if in ``test.fail.task.poll``."""
        self._probe.check_poll()
        end = min(self._total, self._next + max(max_records, 0))
        records = [self._record(index) for index in range(self._next, end)]
        self._next = max(self._next, end)
        if records:
            self._probe.record("task_poll", values=[r.value for r in records])
        # from the plugin's own module logger, as a plugin author's would be: tests set its
        # level over gRPC and look for the line wherever the task runs
        _log.debug("instrumented_task_polled", records=len(records))
        return records

    def _record(self, index: int) -> SourceRecord:
        task = self._probe.task_id
        return SourceRecord(
            source_partition={"task": task},
            source_offset={"seq": index},
            topic=self._topic,
            value=f"{task}-{index}",
            key=str(task),
        )

    def stop(self, connector_deleted: bool = False) -> None:
        """Records ``task_stop`` with ``connector_deleted``."""
        self._probe.stop(connector_deleted)


class InstrumentedSinkTask(SinkTask):
    """Records every record it is given (``task_put``) and every flush (``task_flush``)."""

    def __init__(self) -> None:
        self._probe = _TaskProbe(SINK_CONFIG)

    def start(self, config: Mapping[str, str]) -> None:
        """Records ``task_start``; raises if this task is in ``test.fail.task.start``."""
        self._probe.start(config, self)

    def put(self, records: Sequence[SinkRecord]) -> None:
        """Records ``task_put`` with the values; raises if in ``test.fail.task.poll``."""
        self._probe.check_poll()
        if not records:
            return
        self._probe.record(
            "task_put",
            values=[_decode(r.value) for r in records],
            positions=[[r.topic, r.kafka_partition, r.kafka_offset] for r in records],
        )

    def flush(self, offsets: Mapping[tuple[str, int], int]) -> None:
        """Records ``task_flush`` with the offsets about to be committed."""
        self._probe.record("task_flush", offsets=[[t, p, o] for (t, p), o in offsets.items()])

    def stop(self, connector_deleted: bool = False) -> None:
        """Records ``task_stop`` with ``connector_deleted``."""
        self._probe.stop(connector_deleted)


def _decode(value: bytes | None) -> str | None:
    return None if value is None else value.decode("utf-8", errors="replace")
