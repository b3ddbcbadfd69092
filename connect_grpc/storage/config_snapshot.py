"""The config topic's state, built record by record (Kafka's ``ClusterConfigState``).

Task configs are written in two phases, as Kafka does: ``task-<c>-<n>`` records are held
back until the ``commit-<c>`` record arrives, and only then replace the connector's task
set, provided every task ``0..N-1`` arrived; otherwise (compaction, or a writer that died
midway) the connector is marked inconsistent and keeps its previous tasks. ``state`` holds
the target state an older reader understands (STOPPED is written as PAUSED), ``state.v2``
the real one; reading prefers ``state.v2``. A connector tombstone forgets the connector's
tasks, target state and task count too, and the connector's removal stays *unfinished*
until its target-state tombstone is read after it (a removal is written without a
transaction: the connector tombstone, its task tombstones, its target-state tombstone last;
the leader finishes a removal cut short, see :func:`.config_codec.removal_records`).
Restart requests are events, not state: they go to the listener and are not kept in the
snapshot. A logger level record keeps the latest level of its namespace with the record's
timestamp, and tells the listener (kind ``logger``, the namespace in place of the
connector) each time one is read, at start-up too: unlike Kafka Connect, which ignores the
levels written before a worker started, a worker that joins applies them, so that a
cluster-wide level holds on every worker, one started after it was set included. Other
keys are ignored.

The parsing is pure (:class:`SnapshotBuilder`, :func:`apply_record`) and the state it
produces is an immutable :class:`ConfigSnapshot`. The records' bytes are
:mod:`.config_codec`'s; the store that reads them from the topic is :mod:`.kafka_config`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal, TypeVar, cast

from connect_grpc.kernel.domain import RestartRequest, TargetState
from connect_grpc.storage.config_codec import (
    COMMIT_PREFIX,
    CONNECTOR_PREFIX,
    EXTENSION_PREFIX,
    LOGGER_KEY_PREFIX,
    RESTART_KEY_PREFIX,
    SESSION_KEY_KEY,
    TARGET_STATE_PREFIX,
    TASK_COUNT_PREFIX,
    TERM_FIELD,
    TERM_KEY_PREFIX,
    Config,
    _load,
    decode_commit,
    decode_log_level,
    decode_properties,
    decode_restart,
    decode_target_state,
    decode_task_count,
    parse_task_key,
)
from connect_grpc.storage.tracked import TrackedDict, TrackedSet

#: Kafka Connect's ``ClusterConfigState.NO_OFFSET``: nothing has been read.
NO_OFFSET = -1

#: What a record changed, as reported to the listener.
ChangeKind = Literal[
    "connector", "tasks", "target_state", "restart", "task_count", "extension", "logger"
]

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
    a thousand connectors each, on every record would make a record's cost grow with the
    connector count).
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
