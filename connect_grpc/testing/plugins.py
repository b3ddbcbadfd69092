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

The keys are defined in ``plugin_keys``, the events file written and read in
``plugin_events``; their names are importable from here as well.
"""

from __future__ import annotations

import os
import sys
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
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
from connect_grpc.kernel.configdef import ConfigDef
from connect_grpc.kernel.domain import OffsetMap, OffsetPrimitive

# Re-exported: tests and plugin authors import these names from here.
from connect_grpc.testing.plugin_events import count as count
from connect_grpc.testing.plugin_events import read_events as read_events
from connect_grpc.testing.plugin_events import record_event as record_event
from connect_grpc.testing.plugin_keys import ALTER_OFFSETS as ALTER_OFFSETS
from connect_grpc.testing.plugin_keys import ALTER_OFFSETS_MODES as ALTER_OFFSETS_MODES
from connect_grpc.testing.plugin_keys import EVENTS_FILE as EVENTS_FILE
from connect_grpc.testing.plugin_keys import FAIL_CONNECTOR_START as FAIL_CONNECTOR_START
from connect_grpc.testing.plugin_keys import FAIL_CONNECTOR_STOP as FAIL_CONNECTOR_STOP
from connect_grpc.testing.plugin_keys import FAIL_TASK_POLL as FAIL_TASK_POLL
from connect_grpc.testing.plugin_keys import FAIL_TASK_START as FAIL_TASK_START
from connect_grpc.testing.plugin_keys import FAIL_TASK_START_TIMES as FAIL_TASK_START_TIMES
from connect_grpc.testing.plugin_keys import HOLD_CONNECTOR_START as HOLD_CONNECTOR_START
from connect_grpc.testing.plugin_keys import PRINT_CONFIG as PRINT_CONFIG
from connect_grpc.testing.plugin_keys import RECORD_CONFIG as RECORD_CONFIG
from connect_grpc.testing.plugin_keys import SECRET as SECRET
from connect_grpc.testing.plugin_keys import SINK_CONFIG as SINK_CONFIG
from connect_grpc.testing.plugin_keys import SOURCE_CONFIG as SOURCE_CONFIG
from connect_grpc.testing.plugin_keys import SOURCE_RECORDS as SOURCE_RECORDS
from connect_grpc.testing.plugin_keys import TASK_ID as TASK_ID
from connect_grpc.testing.plugin_keys import TOPIC as TOPIC
from connect_grpc.testing.plugin_keys import parse_task_set as parse_task_set

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

#: The longest a held ``Connector.start`` waits: a test that forgot to release it must not
#: wedge the worker's loop for good.
HOLD_LIMIT_S = 300.0


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


def _hold_until(release_file: str) -> None:
    """Waits until ``release_file`` exists (at most HOLD_LIMIT_S); empty: returns at once."""
    deadline = time.monotonic() + HOLD_LIMIT_S
    while release_file and not os.path.exists(release_file) and time.monotonic() < deadline:
        time.sleep(0.1)


def _task_fails(spec: str, task_id: int) -> bool:
    ids = parse_task_set(spec)
    return ids is None or task_id in ids


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
