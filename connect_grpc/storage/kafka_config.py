"""Distributed mode's config store: the config topic (``config.storage.topic``).

Records have Kafka Connect's format (``KafkaConfigBackingStore``), so Kafka tooling and
Kafka Connect itself can read them. The topic has one partition and is compacted. Keys are
UTF-8 strings, values compact JSON (null is a tombstone)::

    connector-<c>          {"properties": {"k": "v", ...}}     null: connector deleted
    task-<c>-<n>           {"properties": {"k": "v", ...}}
    commit-<c>             {"tasks": N}
    target-state-<c>       {"state": "PAUSED", "state.v2": "STOPPED"}
    restart-connector-<c>  {"include-tasks": true, "only-failed": false}
    tasks-fencing-<c>      {"task-count": N}
    logger-cluster-<ns>    {"level": "DEBUG"}: a cluster-wide log level (KIP-976)
    session-key            {"key": "<base64>", "algorithm": "HmacSHA256",
                           "creation-timestamp": <ms>}: the inter-worker session key
                           (KIP-507), kept in ``extensions`` under its key
    connect-grpc-<...>     any JSON value: the cluster layer's own records (leader,
                           assignment), which Kafka Connect skips as unknown keys

Task configs are written in two phases, as Kafka does: ``task-<c>-<n>`` records are held
back until the ``commit-<c>`` record arrives, and only then replace the connector's task
set, provided every task ``0..N-1`` arrived; otherwise (compaction, or a writer that died
midway) the connector is marked inconsistent and keeps its previous tasks. ``state`` holds
the target state an older reader understands (STOPPED is written as PAUSED), ``state.v2``
the real one; reading prefers ``state.v2``. A connector tombstone forgets the connector's
tasks, target state and task count too, and the connector's removal stays *unfinished*
until its target-state tombstone is read after it (a removal is written without a
transaction: the connector tombstone, its task tombstones, its target-state tombstone last;
the leader finishes a removal cut short, see :func:`removal_records`). Restart requests are
events, not state: they go to the listener and are not kept in the snapshot. A logger level
record keeps the latest level of its namespace with the record's timestamp, and tells the
listener (kind ``logger``, the namespace in place of the connector) each time one is read,
at start-up too: unlike Kafka Connect, which ignores the levels written before a worker
started, a worker that joins applies them (the issue asks for it). Other keys are ignored.

The parsing is pure (:class:`SnapshotBuilder`, :func:`apply_record`) and the state it
produces is an immutable :class:`ConfigSnapshot`; :class:`KafkaConfigStore` tails the topic
with a :class:`~connect_grpc.storage.kafka_log.KafkaBasedLog` and feeds it.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal, TypeVar, cast

import structlog

from connect_grpc.domain import RestartRequest, TargetState
from connect_grpc.errors import ConnectError, UnavailableError
from connect_grpc.storage.kafka_log import (
    DEFAULT_TIMEOUT_S,
    ClientConfig,
    KafkaBasedLog,
    LogRecord,
    TopicSpec,
)
from connect_grpc.storage.tracked import TrackedDict, TrackedSet

log = structlog.get_logger(__name__)

DEFAULT_TOPIC = "connect-configs"
DEFAULT_REPLICATION_FACTOR = 1
#: Kafka Connect's ``ClusterConfigState.NO_OFFSET``: nothing has been read.
NO_OFFSET = -1

CONNECTOR_PREFIX = "connector-"
TASK_PREFIX = "task-"
COMMIT_PREFIX = "commit-"
TARGET_STATE_PREFIX = "target-state-"
TASK_COUNT_PREFIX = "tasks-fencing-"
#: Keys of the records the cluster layer adds (``connect_grpc.cluster.records``).
EXTENSION_PREFIX = "connect-grpc-"
#: Kafka Connect's session key record (``connect_grpc.security.session_key``).
SESSION_KEY_KEY = "session-key"
#: A leader's term marker, ``connect-grpc-term-<N>`` = ``{"term": N}``, written in the
#: transaction that takes office. A key of its own per term, so compaction keeps every
#: marker and a reader from the start draws the same line between terms as a live one.
TERM_KEY_PREFIX = "connect-grpc-term-"
TERM_FIELD = "term"
#: Header of a record a leader wrote without a transaction: the term it was written in. A
#: reader ignores it when a later term's marker came before it (a deposed leader's write).
TERM_HEADER = "connect-grpc-term"
#: Header of such a record that carries one more extension record, ``{"key": k, "value":
#: v}``, applied with it or refused with it (a change's answer rides on the record that is
#: the change, the last of most writes, a removal's first: no crash, no zombie can part them).
CARRIED_HEADER = "connect-grpc-carried"
#: How many refused offsets a store remembers for :meth:`KafkaConfigStore.refused`.
REFUSED_MEMORY = 1024

PROPERTIES_FIELD = "properties"
TASKS_FIELD = "tasks"
STATE_FIELD = "state"
STATE_V2_FIELD = "state.v2"
TASK_COUNT_FIELD = "task-count"

#: What a record changed, as reported to the listener.
ChangeKind = Literal[
    "connector", "tasks", "target_state", "restart", "task_count", "extension", "logger"
]
#: The listener: (kind, connector, the restart request for kind "restart", else None).
ConfigListener = Callable[[ChangeKind, str, RestartRequest | None], None]
#: A connector's or task's configuration.
Config = Mapping[str, str]

V = TypeVar("V")
F = TypeVar("F")


@dataclass(frozen=True, slots=True)
class ConfigChange:
    """One applied record, as the listener hears of it."""

    kind: ChangeKind
    connector: str
    restart: RestartRequest | None = None


@dataclass(frozen=True, slots=True)
class ClusterLogLevel:
    """A cluster-wide log level of a ``logger-cluster-`` record: the Kafka level name as
    written and when it was written (ms since the epoch; None if the broker gave none)."""

    level: str
    written_at: int | None = None


@dataclass(frozen=True, slots=True)
class ConfigSnapshot:
    """The config topic's state up to ``offset`` (Kafka's ``ClusterConfigState``). Immutable.

    Attributes:
        offset: the offset after the last record applied (NO_OFFSET before any).
        connectors: connector name → its config.
        tasks: connector name → its committed task configs, task ``n`` at index ``n``.
        target_states: connector name → target state (STARTED for a connector without one).
        task_counts: connector name → the task count of its latest ``tasks-fencing`` record.
        pending_fencing: connectors whose latest task configs came after their latest
            ``tasks-fencing`` record (Kafka's ``pendingFencing``): with exactly-once source
            support, their tasks wait until the leader fenced the previous generation.
        inconsistent: connectors whose latest commit named tasks that were not all present.
        extensions: key → decoded JSON value of each live ``connect-grpc-`` record and of
            the ``session-key`` record.
        log_levels: logger namespace → its latest cluster-wide level (KIP-976).
        term: the highest leader term whose marker was read (0 before any).
        unfinished_removals: connector name → the task count it had, for each connector
            whose tombstone was read but not the target-state tombstone that ends its
            removal (a removal cut short: its leftovers are for the leader to tombstone).
    """

    offset: int = NO_OFFSET
    connectors: Mapping[str, Config] = field(default_factory=lambda: MappingProxyType({}))
    tasks: Mapping[str, tuple[Config, ...]] = field(default_factory=lambda: MappingProxyType({}))
    target_states: Mapping[str, TargetState] = field(default_factory=lambda: MappingProxyType({}))
    task_counts: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    pending_fencing: frozenset[str] = frozenset()
    inconsistent: frozenset[str] = frozenset()
    extensions: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    log_levels: Mapping[str, ClusterLogLevel] = field(
        default_factory=lambda: MappingProxyType({})
    )
    term: int = 0
    unfinished_removals: Mapping[str, int] = field(
        default_factory=lambda: MappingProxyType({})
    )

    def contains(self, connector: str) -> bool:
        """Whether the connector has a config."""
        return connector in self.connectors

    def task_configs(self, connector: str) -> tuple[Config, ...]:
        """The connector's committed task configs (empty when none)."""
        return self.tasks.get(connector, ())

    def target_state(self, connector: str) -> TargetState | None:
        """The connector's target state, or None when it has none."""
        return self.target_states.get(connector)


@dataclass(slots=True)
class SnapshotBuilder:
    """The mutable state :func:`apply_record` updates; :meth:`build` freezes it.

    Copy-on-write: each map and set notes its own changes (:mod:`.tracked`), and
    :meth:`build` copies only those changed since the previous build, reusing that build's
    immutable copies of the others (a record changes one or two of them; copying all eight,
    a thousand connectors each, on every record was what grew with the connector count).
    """

    offset: int = NO_OFFSET
    connectors: TrackedDict[str, Config] = field(default_factory=TrackedDict)
    tasks: TrackedDict[str, tuple[Config, ...]] = field(default_factory=TrackedDict)
    target_states: TrackedDict[str, TargetState] = field(default_factory=TrackedDict)
    task_counts: TrackedDict[str, int] = field(default_factory=TrackedDict)
    pending_fencing: TrackedSet[str] = field(default_factory=TrackedSet)
    inconsistent: TrackedSet[str] = field(default_factory=TrackedSet)
    extensions: TrackedDict[str, Any] = field(default_factory=TrackedDict)
    log_levels: TrackedDict[str, ClusterLogLevel] = field(default_factory=TrackedDict)
    #: connector → task number → config, written but not yet committed.
    deferred: dict[str, dict[int, Config]] = field(default_factory=dict)
    term: int = 0
    unfinished_removals: TrackedDict[str, int] = field(default_factory=TrackedDict)
    #: Field name → (the container last copied, its immutable copy).
    _frozen: dict[str, tuple[object, Any]] = field(default_factory=dict, repr=False,
                                                   compare=False)

    def build(self) -> ConfigSnapshot:
        """An immutable copy of the current state (pending task configs left out)."""
        return ConfigSnapshot(
            offset=self.offset,
            connectors=self._frozen_map("connectors", self.connectors),
            tasks=self._frozen_map("tasks", self.tasks),
            target_states=self._frozen_map("target_states", self.target_states),
            task_counts=self._frozen_map("task_counts", self.task_counts),
            pending_fencing=self._frozen_set("pending_fencing", self.pending_fencing),
            inconsistent=self._frozen_set("inconsistent", self.inconsistent),
            extensions=self._frozen_map("extensions", self.extensions),
            log_levels=self._frozen_map("log_levels", self.log_levels),
            term=self.term,
            unfinished_removals=self._frozen_map("unfinished_removals", self.unfinished_removals),
        )

    def _frozen_map(self, name: str, current: Mapping[str, V]) -> Mapping[str, V]:
        reused = self._reusable(name, current)
        if reused is not None:
            return cast(Mapping[str, V], reused)
        return self._keep(name, current, MappingProxyType(dict(current)))

    def _frozen_set(self, name: str, current: set[str]) -> frozenset[str]:
        reused = self._reusable(name, current)
        if reused is not None:
            return cast(frozenset[str], reused)
        return self._keep(name, current, frozenset(current))

    def _reusable(self, name: str, current: object) -> object | None:
        """The previous copy of ``current``, unless it changed since (or is not tracked:
        a container put in place of the builder's own is copied every time)."""
        source, frozen = self._frozen.get(name, (None, None))
        if source is current and isinstance(current, TrackedDict | TrackedSet):
            return None if current.changed else frozen
        return None

    def _keep(self, name: str, current: object, frozen: F) -> F:
        if isinstance(current, TrackedDict | TrackedSet):
            current.changed = False
        self._frozen[name] = (current, frozen)
        return frozen


# --- keys -------------------------------------------------------------------------------


#: Restart requests (KIP-745): key ``restart-connector-<name>``, value
#: ``{"include-tasks": bool, "only-failed": bool}``; a missing or non-boolean field reads
#: as false, as in Kafka Connect's KafkaConfigBackingStore.
RESTART_KEY_PREFIX = "restart-connector-"
INCLUDE_TASKS_FIELD = "include-tasks"
ONLY_FAILED_FIELD = "only-failed"


def restart_key(connector: str) -> str:
    """The config-topic key of a restart request for ``connector``."""
    return f"{RESTART_KEY_PREFIX}{connector}"


def restart_record_value(request: RestartRequest) -> dict[str, bool]:
    """The config-topic value of ``request`` (the connector's name is in the key)."""
    return {
        INCLUDE_TASKS_FIELD: bool(request.include_tasks),
        ONLY_FAILED_FIELD: bool(request.only_failed),
    }


def parse_restart_record(connector: str, value: object) -> RestartRequest:
    """Reads a restart record's value back into a request for ``connector``.

    A missing or non-boolean field reads as false, as in Kafka Connect.

    Raises:
        ValueError: the value is not a JSON object (the record should be ignored).
    """
    if not isinstance(value, Mapping):
        raise ValueError(
            f"restart record of {connector!r} is not an object: {type(value).__name__}"
        )
    include_tasks = value.get(INCLUDE_TASKS_FIELD)
    only_failed = value.get(ONLY_FAILED_FIELD)
    return RestartRequest(
        connector,
        include_tasks=include_tasks if isinstance(include_tasks, bool) else False,
        only_failed=only_failed if isinstance(only_failed, bool) else False,
    )


#: Cluster-wide log levels (KIP-976): key ``logger-cluster-<namespace>``, value
#: ``{"level": "<level>"}``, written by Kafka Connect's KafkaConfigBackingStore the same way.
LOGGER_KEY_PREFIX = "logger-cluster-"
LEVEL_FIELD = "level"


def logger_key(namespace: str) -> str:
    """The key of the cluster-wide log level of ``namespace``."""
    return f"{LOGGER_KEY_PREFIX}{namespace}"


def connector_key(connector: str) -> str:
    """The key of a connector's config record."""
    return f"{CONNECTOR_PREFIX}{connector}"


def task_key(connector: str, task: int) -> str:
    """The key of one task's config record."""
    return f"{TASK_PREFIX}{connector}-{task}"


def commit_key(connector: str) -> str:
    """The key of a connector's task-config commit record."""
    return f"{COMMIT_PREFIX}{connector}"


def target_state_key(connector: str) -> str:
    """The key of a connector's target-state record."""
    return f"{TARGET_STATE_PREFIX}{connector}"


def task_count_key(connector: str) -> str:
    """The key of a connector's task-count (``tasks-fencing``) record."""
    return f"{TASK_COUNT_PREFIX}{connector}"


def parse_task_key(key: str) -> tuple[str, int] | None:
    """(connector, task number) of a ``task-<connector>-<n>`` key, or None if malformed."""
    if not key.startswith(TASK_PREFIX):
        return None
    connector, dash, number = key[len(TASK_PREFIX) :].rpartition("-")
    if not dash or not connector or not (number.isascii() and number.isdigit()):
        return None
    return connector, int(number)


# --- values -----------------------------------------------------------------------------


def _dump(value: Mapping[str, object]) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


def encode_properties(config: Config) -> bytes:
    """A connector or task config value: ``{"properties": {...}}``."""
    return _dump({PROPERTIES_FIELD: dict(config)})


def encode_commit(task_count: int) -> bytes:
    """A task-config commit value: ``{"tasks": N}``."""
    return _dump({TASKS_FIELD: task_count})


def encode_target_state(state: TargetState) -> bytes:
    """A target-state value; STOPPED reads as PAUSED to readers that only know ``state``."""
    legacy = TargetState.PAUSED if state is TargetState.STOPPED else state
    return _dump({STATE_FIELD: legacy.value, STATE_V2_FIELD: state.value})


def encode_restart(request: RestartRequest) -> bytes:
    """A restart request value: ``{"include-tasks": bool, "only-failed": bool}``."""
    return _dump(restart_record_value(request))


def encode_task_count(task_count: int) -> bytes:
    """A task-count value: ``{"task-count": N}``."""
    return _dump({TASK_COUNT_FIELD: task_count})


def _load(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError as exc:
        raise ValueError(f"not JSON: {exc}") from exc


def decode_properties(raw: bytes) -> dict[str, str]:
    """The config of a connector or task value. Raises ValueError when malformed.

    Kafka Connect's schema allows null property values (a REST config may carry
    ``"key": null``); such a property is read as not set, rather than losing the record.
    """
    value = _load(raw)
    properties = value.get(PROPERTIES_FIELD) if isinstance(value, dict) else None
    if not isinstance(properties, dict) or not all(
        v is None or isinstance(v, str) for v in properties.values()
    ):
        raise ValueError("'properties' must be an object of strings")
    return {k: v for k, v in properties.items() if v is not None}


def _decode_count(raw: bytes, name: str) -> int:
    value = _load(raw)
    count = value.get(name) if isinstance(value, dict) else None
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        raise ValueError(f"{name!r} must be a non-negative integer")
    return count


def decode_commit(raw: bytes) -> int:
    """The task count of a commit value. Raises ValueError when malformed."""
    return _decode_count(raw, TASKS_FIELD)


def decode_task_count(raw: bytes) -> int:
    """The task count of a ``tasks-fencing`` value. Raises ValueError when malformed."""
    return _decode_count(raw, TASK_COUNT_FIELD)


def decode_target_state(raw: bytes) -> TargetState:
    """The target state of a value, ``state.v2`` preferred. Raises ValueError when malformed."""
    value = _load(raw)
    if not isinstance(value, dict):
        raise ValueError("target state must be an object")
    state = value.get(STATE_V2_FIELD, value.get(STATE_FIELD))
    if not isinstance(state, str):
        raise ValueError("target state has no 'state.v2' or 'state' string")
    return TargetState(state)


def encode_log_level(level: str) -> bytes:
    return _dump({LEVEL_FIELD: level})


def decode_log_level(raw: bytes) -> str:
    """The level of a ``logger-cluster-`` record; ValueError unless it is a string."""
    value = _load(raw)
    level = value.get(LEVEL_FIELD) if isinstance(value, dict) else None
    if not isinstance(level, str):
        raise ValueError(f"a log level record needs a string {LEVEL_FIELD!r}: {value!r}")
    return level


def decode_restart(connector: str, raw: bytes) -> RestartRequest:
    """The restart request of a value (missing flags read false). Raises ValueError."""
    return parse_restart_record(connector, _load(raw))


# --- applying records -------------------------------------------------------------------


def apply_record(
    builder: SnapshotBuilder, key: str, value: bytes | None, timestamp_ms: int | None = None
) -> ConfigChange | None:
    """Applies one config-topic record to ``builder``; returns what changed, if anything.

    None for records that change nothing visible (a task config awaiting its commit, a
    target-state tombstone, an unknown key). Raises ValueError for a malformed value; the
    builder is then unchanged. ``timestamp_ms``: the record's timestamp (kept with a log
    level).
    """
    if key.startswith(TERM_KEY_PREFIX):
        _apply_term(builder, value)
        return None
    if key.startswith(EXTENSION_PREFIX) or key == SESSION_KEY_KEY:
        return _apply_extension(builder, key, value)
    if key.startswith(TARGET_STATE_PREFIX):
        return _apply_target_state(builder, key[len(TARGET_STATE_PREFIX) :], value)
    if key.startswith(TASK_COUNT_PREFIX):
        return _apply_task_count(builder, key[len(TASK_COUNT_PREFIX) :], value)
    if key.startswith(RESTART_KEY_PREFIX):
        return _apply_restart(key[len(RESTART_KEY_PREFIX) :], value)
    if key.startswith(LOGGER_KEY_PREFIX):
        return _apply_log_level(builder, key[len(LOGGER_KEY_PREFIX) :], value, timestamp_ms)
    if key.startswith(CONNECTOR_PREFIX):
        return _apply_connector(builder, key[len(CONNECTOR_PREFIX) :], value)
    if key.startswith(COMMIT_PREFIX):
        return _apply_commit(builder, key[len(COMMIT_PREFIX) :], value)
    task = parse_task_key(key)
    if task is not None:
        _apply_task(builder, task, value)
    return None


def _apply_connector(builder: SnapshotBuilder, connector: str, value: bytes | None) -> ConfigChange:
    if value is None:
        builder.unfinished_removals[connector] = max(
            _known_task_count(builder, connector),
            builder.unfinished_removals.get(connector, 0),
        )
        builder.connectors.pop(connector, None)
        builder.tasks.pop(connector, None)
        builder.target_states.pop(connector, None)
        builder.task_counts.pop(connector, None)
        builder.pending_fencing.discard(connector)
        builder.deferred.pop(connector, None)
        builder.inconsistent.discard(connector)
    else:
        builder.connectors[connector] = MappingProxyType(decode_properties(value))
        builder.target_states.setdefault(connector, TargetState.STARTED)
        builder.unfinished_removals.pop(connector, None)
    return ConfigChange("connector", connector)


def _known_task_count(builder: SnapshotBuilder, connector: str) -> int:
    """How many task configs of the connector the topic may hold: its committed ones, or
    as many as the highest task number held back for a commit."""
    pending = builder.deferred.get(connector, {})
    return max(len(builder.tasks.get(connector, ())), max(pending, default=-1) + 1)


def _apply_task(builder: SnapshotBuilder, task: tuple[str, int], value: bytes | None) -> None:
    """Holds a task config back until its commit; a tombstone is ignored, as in Kafka."""
    if value is None:
        return
    connector, number = task
    builder.deferred.setdefault(connector, {})[number] = MappingProxyType(decode_properties(value))


def _apply_commit(
    builder: SnapshotBuilder, connector: str, value: bytes | None
) -> ConfigChange | None:
    """Makes the held-back task configs ``0..N-1`` the connector's tasks, if all arrived."""
    if value is None:
        return None
    count = decode_commit(value)
    deferred = builder.deferred.pop(connector, {})
    if all(n in deferred for n in range(count)):
        builder.tasks[connector] = tuple(deferred[n] for n in range(count))
        builder.pending_fencing.add(connector)  # a new generation of tasks
        builder.inconsistent.discard(connector)
    else:
        builder.inconsistent.add(connector)
    return ConfigChange("tasks", connector)


def _apply_target_state(
    builder: SnapshotBuilder, connector: str, value: bytes | None
) -> ConfigChange | None:
    """Sets the state; a tombstone falls back to STARTED while the connector exists, and
    otherwise ends the connector's removal (the last record :func:`removal_records` writes)."""
    if value is not None:
        builder.target_states[connector] = decode_target_state(value)
        return ConfigChange("target_state", connector)
    builder.target_states.pop(connector, None)
    if connector in builder.connectors:
        builder.target_states[connector] = TargetState.STARTED
    else:
        builder.unfinished_removals.pop(connector, None)
    return None


def _apply_task_count(
    builder: SnapshotBuilder, connector: str, value: bytes | None
) -> ConfigChange:
    if value is None:
        builder.task_counts.pop(connector, None)
    else:
        builder.task_counts[connector] = decode_task_count(value)
        builder.pending_fencing.discard(connector)
    return ConfigChange("task_count", connector)


def _apply_term(builder: SnapshotBuilder, value: bytes | None) -> None:
    """Raises the builder's term to a marker's (terms only grow; a tombstone is ignored)."""
    if value is None:
        return
    loaded = _load(value)
    term = loaded.get(TERM_FIELD) if isinstance(loaded, dict) else None
    if not isinstance(term, int) or isinstance(term, bool) or term < 0:
        raise ValueError(f"a term marker needs a non-negative integer {TERM_FIELD!r}")
    builder.term = max(builder.term, term)


def _carry(record: RawRecord) -> bytes:
    key, value = record
    if not key.startswith(EXTENSION_PREFIX.encode()):
        raise ValueError(f"only extension records are carried, not {key!r}")
    loaded = None if value is None else _load(value)
    return _dump({"key": key.decode(), "value": loaded})


def carried_record(record: LogRecord) -> tuple[str, bytes | None] | None:
    """The extension record ``record`` carries in its header, as (key, value); None when
    it carries none. Raises ValueError for a malformed header."""
    raw = record.header(CARRIED_HEADER)
    if raw is None:
        return None
    loaded = _load(raw)
    key = loaded.get("key") if isinstance(loaded, dict) else None
    if not isinstance(key, str) or not key.startswith(EXTENSION_PREFIX):
        raise ValueError(f"header {CARRIED_HEADER} carries no extension record")
    value = loaded.get("value")
    return key, None if value is None else json.dumps(value, separators=(",", ":")).encode()


def written_term(record: LogRecord) -> int | None:
    """The term a record written without a transaction carries; None when it carries none.
    Raises ValueError for a header that is not a non-negative integer."""
    raw = record.header(TERM_HEADER)
    if raw is None:
        return None
    text = raw.decode("ascii", errors="replace")
    if not text.isdigit():
        raise ValueError(f"header {TERM_HEADER} is not a term: {text!r}")
    return int(text)


def _apply_extension(builder: SnapshotBuilder, key: str, value: bytes | None) -> ConfigChange:
    if value is None:
        builder.extensions.pop(key, None)
    else:
        builder.extensions[key] = _load(value)
    return ConfigChange("extension", key)


def _apply_restart(connector: str, value: bytes | None) -> ConfigChange | None:
    if value is None:
        return None
    return ConfigChange("restart", connector, decode_restart(connector, value))


def _apply_log_level(
    builder: SnapshotBuilder, namespace: str, value: bytes | None, timestamp_ms: int | None
) -> ConfigChange | None:
    """Keeps the namespace's level; a tombstone (Kafka Connect writes none) is ignored."""
    if value is None:
        return None
    builder.log_levels[namespace] = ClusterLogLevel(decode_log_level(value), timestamp_ms)
    return ConfigChange("logger", namespace)


# --- records to write ------------------------------------------------------------------

#: A record to write: (key, value); a None value is a tombstone.
RawRecord = tuple[bytes, bytes | None]


def _record(key: str, value: bytes | None) -> RawRecord:
    return key.encode(), value


def connector_config_records(
    name: str, config: Config, target_state: TargetState | None = None
) -> list[RawRecord]:
    """The connector's config, preceded by its target state when one is given."""
    records = [] if target_state is None else target_state_records(name, target_state)
    records.append(_record(connector_key(name), encode_properties(config)))
    return records


#: Where the change is in :func:`removal_records`: the connector tombstone, first.
REMOVAL_CHANGE_INDEX = 0


def removal_records(name: str, task_count: int) -> list[RawRecord]:
    """The connector's removal, written without a transaction: the connector tombstone
    first (the change: it alone removes the connector, its tasks and target state from
    every view), then the cleanup, tombstones of its ``task_count`` task configs and, last,
    of its target state, so that compaction drops those records too.

    Every prefix is safe: nothing written leaves the connector as it was; the tombstone
    alone deletes it. Before the tombstone, a target-state tombstone would start a PAUSED
    connector (it falls back to STARTED) and a task tombstone would let compaction take a
    live connector's task config, hence the order. The cleanup records are no-ops in a
    view (task tombstones are ignored, a target-state tombstone of an absent connector
    removes nothing shown); a removal cut short after the tombstone is *unfinished* in
    every view until a target-state tombstone follows (:func:`removal_cleanup_records`)."""
    return [_record(connector_key(name), None), *removal_cleanup_records(name, task_count)]


def removal_cleanup_records(name: str, task_count: int) -> list[RawRecord]:
    """The records after a removal's connector tombstone: its ``task_count`` task configs'
    tombstones, then its target state's, which ends the removal in every view."""
    records = [_record(task_key(name, n), None) for n in range(task_count)]
    records.append(_record(target_state_key(name), None))
    return records


def task_config_records(name: str, configs: list[Config]) -> list[RawRecord]:
    """The connector's task configs, then the commit that makes them visible."""
    records = [_record(task_key(name, n), encode_properties(c)) for n, c in enumerate(configs)]
    records.append(_record(commit_key(name), encode_commit(len(configs))))
    return records


def task_count_records(name: str, count: int) -> list[RawRecord]:
    """The connector's task count: its task configs' generation has been fenced."""
    return [_record(task_count_key(name), encode_task_count(count))]


def target_state_records(name: str, state: TargetState) -> list[RawRecord]:
    """The connector's target state."""
    return [_record(target_state_key(name), encode_target_state(state))]


def restart_records(request: RestartRequest) -> list[RawRecord]:
    """A restart request; every worker's store hears of it."""
    return [_record(restart_key(request.connector), encode_restart(request))]


def log_level_records(namespace: str, level: str) -> list[RawRecord]:
    """A cluster-wide log level; every worker applies it when it reads it."""
    return [_record(logger_key(namespace), encode_log_level(level))]


def session_key_record(value: Mapping[str, object]) -> RawRecord:
    """The inter-worker session key, in Kafka Connect's format."""
    return _record(SESSION_KEY_KEY, _dump(value))


def term_marker_record(term: int) -> RawRecord:
    """The marker a leader writes in the transaction that takes office for ``term``."""
    return _record(f"{TERM_KEY_PREFIX}{term}", _dump({TERM_FIELD: term}))


def extension_record(key: str, value: object | None) -> RawRecord:
    """One of the cluster layer's records (``key`` starts with ``connect-grpc-``)."""
    if not key.startswith(EXTENSION_PREFIX):
        raise ValueError(f"extension keys start with {EXTENSION_PREFIX!r}: {key!r}")
    encoded = None if value is None else json.dumps(value, separators=(",", ":")).encode()
    return _record(key, encoded)


# --- the store --------------------------------------------------------------------------


class KafkaConfigStore:
    """Connector configs, task configs and target states in the config topic, mirrored here.

    ``start`` creates the topic if missing (compacted, one partition) and reads it to its
    end; a background thread then applies every record, in order, to the in-memory state,
    and :meth:`refresh` waits until all records present when called are applied. Every
    write returns once its records are acknowledged by all in-sync replicas (idempotent
    producer) and read back, so :meth:`snapshot` shows it at once. The listener is called
    on the tailing thread after each record that changed something, this store's own
    writes included. Thread-safe.

    The ``put_*`` methods write with the plain idempotent producer of
    :meth:`~connect_grpc.storage.kafka_log.KafkaBasedLog.send_all` (tools and tests); the
    distributed herder's leader writes the same records (the ``*_records`` functions)
    through its fenced transactional writer, or with :meth:`send_in_term` stamped with its
    term, and waits for them with :meth:`wait_for`. A stamped record whose term a later
    term marker ended is not applied (:meth:`refused` tells its writer).
    """

    def __init__(
        self,
        client_config: ClientConfig,
        topic: str = DEFAULT_TOPIC,
        replication_factor: int = DEFAULT_REPLICATION_FACTOR,
        *,
        on_change: ConfigListener | None = None,
        timeout: float = DEFAULT_TIMEOUT_S,
    ) -> None:
        self._lock = threading.Lock()
        self._builder = SnapshotBuilder()
        #: The frozen state, built on demand after records were applied.
        self._snapshot: ConfigSnapshot | None = None
        self._on_change = on_change
        self._timeout = timeout
        #: Offsets of the latest records ignored as a deposed leader's (newest last).
        self._refused: deque[int] = deque(maxlen=REFUSED_MEMORY)
        #: Changes applied on the tailing thread, told to the listener at the batch's end.
        self._untold: list[ConfigChange] = []
        spec = TopicSpec(topic, 1, replication_factor, compact=True)
        self._log = KafkaBasedLog(
            client_config, spec, self._apply, after_batch=self._tell_listener, timeout=timeout
        )

    def start(self) -> None:
        """Creates the topic if needed and reads it to its end. Call once."""
        self._log.start()
        snapshot = self.snapshot()
        log.info(
            "config_store_started",
            topic=self._log.topic,
            connectors=len(snapshot.connectors),
            offset=snapshot.offset,
        )

    def stop(self) -> None:
        """Stops following the topic. Idempotent."""
        self._log.stop()

    def refresh(self, timeout: float | None = None) -> None:
        """Blocks until every record in the topic when called is applied here.

        Raises UnavailableError after ``timeout`` seconds (default: the store's timeout).
        """
        self._log.read_to_end(timeout)

    def position(self) -> int:
        """The offset after the last record applied (a snapshot's ``offset``, without
        building one)."""
        with self._lock:
            return self._builder.offset

    def applied_mark(self) -> tuple[int, int]:
        """(the offset after the last record applied, the highest term read), together."""
        with self._lock:
            return self._builder.offset, self._builder.term

    def on_tail_thread(self) -> bool:
        """Whether the caller is the thread that applies records (and tells the listener)."""
        return self._log.on_tail_thread()

    def snapshot(self) -> ConfigSnapshot:
        """The current state (immutable)."""
        with self._lock:
            if self._snapshot is None:
                self._snapshot = self._builder.build()
            return self._snapshot

    def put_connector_config(
        self, name: str, config: Config, target_state: TargetState | None = None
    ) -> None:
        """Writes the connector's config, preceded by its target state when one is given."""
        self._write(connector_config_records(name, config, target_state))

    def remove_connector(self, name: str) -> None:
        """Deletes the connector: tombstones its config, task configs and target state."""
        self._write(removal_records(name, len(self.snapshot().task_configs(name))))

    def put_task_configs(self, name: str, configs: list[Config]) -> None:
        """Writes the connector's task configs, then the commit that makes them visible."""
        self._write(task_config_records(name, configs))

    def put_target_state(self, name: str, state: TargetState) -> None:
        """Writes the connector's target state."""
        self._write(target_state_records(name, state))

    def put_restart_request(self, request: RestartRequest) -> None:
        """Writes a restart request; every store's listener hears of it."""
        self._write(restart_records(request))

    def put_task_count_record(self, name: str, count: int) -> None:
        """Writes the connector's task count (``tasks-fencing-<name>``)."""
        self._write(task_count_records(name, count))

    def wait_for(
        self,
        written: list[LogRecord],
        timeout: float | None = None,
        *,
        before_listener: bool = False,
    ) -> None:
        """Blocks until records another writer wrote (a transaction) are applied here and,
        unless ``before_listener``, the listener has been told of them (a writer that only
        needs its write in :meth:`snapshot` and :meth:`refused` is answered before the
        threads the listener wakes compete with it).

        Raises UnavailableError after ``timeout`` seconds (default: the store's timeout).
        """
        self._log.read_past(written, timeout, before_batch_end=before_listener)

    def send_in_term(
        self,
        records: list[RawRecord],
        term: int,
        timeout: float,
        *,
        carried: RawRecord | None = None,
        carrier_index: int = -1,
    ) -> list[LogRecord]:
        """Writes the records without a transaction, each stamped with the writer's leader
        ``term``, the one at ``carrier_index`` (the change; the last by default) carrying
        the extension record ``carried`` (applied with it); returns once acknowledged (not
        yet read back: :meth:`wait_for`, then :meth:`refused`). Raises UnavailableError
        when that takes over ``timeout`` seconds."""
        carrier = () if carried is None else ((CARRIED_HEADER, _carry(carried)),)
        try:
            return self._log.send_all(
                records,
                headers=((TERM_HEADER, str(term).encode()),),
                carrier_headers=carrier,
                carrier_index=carrier_index,
                timeout=timeout,
            )
        except UnavailableError:
            raise
        except ConnectError as exc:
            raise UnavailableError(str(exc)) from exc

    def refused(self, written: list[LogRecord]) -> bool:
        """Whether this store ignored any of ``written`` (read back already) as the write of
        a deposed leader."""
        with self._lock:
            return any(record.offset in self._refused for record in written)

    def wait_for_offset(
        self, offset: int, timeout: float | None = None, *, before_listener: bool = False
    ) -> None:
        """Blocks until the records before ``offset`` are applied here (read-your-writes
        after another worker's write) and, unless ``before_listener``, the listener has
        been told of them; raises UnavailableError after ``timeout``."""
        if offset > 0:
            self._log.read_until({0: offset}, timeout, before_batch_end=before_listener)

    def _write(self, records: list[RawRecord]) -> None:
        """Writes the records in order and waits until they are applied here."""
        self._log.send_all(records)
        self._log.read_to_end(self._timeout)
        log.debug("configs_written", count=len(records))

    def _apply(self, record: LogRecord) -> None:
        """Applies one record read from the topic (on the tailing thread)."""
        key = _decode_key(record.key)
        if key is None:
            log.warning("config_record_skipped", offset=record.offset)
            return
        with self._lock:
            try:
                change = self._apply_current(key, record)
            except ValueError as exc:
                change = None
                log.warning("config_record_skipped", key=key, offset=record.offset, error=str(exc))
            self._builder.offset = record.offset + 1
            self._snapshot = None
        if change is not None:
            self._untold.append(change)

    def _tell_listener(self) -> None:
        """Tells the listener of the batch's changes, in order (on the tailing thread, once
        the writers waiting only for their records to be applied were woken)."""
        changes, self._untold = self._untold, []
        for change in changes:
            self._notify(change)

    def _apply_current(self, key: str, record: LogRecord) -> ConfigChange | None:
        """Applies the record unless a leader wrote it in a term a later marker ended (it
        is remembered as refused then); the caller holds the lock."""
        term = written_term(record)
        if term is not None and term < self._builder.term:
            self._refused.append(record.offset)
            log.warning("config_record_of_a_deposed_leader_ignored", key=key,
                        offset=record.offset, term=term, current_term=self._builder.term)
            return None
        carried = carried_record(record)
        change = apply_record(self._builder, key, record.value, record.timestamp_ms)
        if carried is not None:
            _apply_extension(self._builder, *carried)
        return change

    def _notify(self, change: ConfigChange) -> None:
        if self._on_change is None:
            return
        try:
            self._on_change(change.kind, change.connector, change.restart)
        except Exception:
            log.exception("config_listener_failed", kind=change.kind, connector=change.connector)


def _decode_key(raw: bytes | None) -> str | None:
    if raw is None:
        return None
    try:
        return raw.decode()
    except UnicodeDecodeError:
        return None
