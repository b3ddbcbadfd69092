"""Kafka Connect's config record format: the records of the config topic
(``config.storage.topic``).

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

``state`` holds the target state an older reader understands (STOPPED is written as
PAUSED), ``state.v2`` the real one. A change is written as records in an order that keeps
every prefix of them safe to read (the ``*_records`` functions); a leader's write made
without a transaction carries its term, and may carry one extension record, in headers.

Pure: keys, values and headers to bytes and back, with no Kafka client. How records apply
to the topic's state is :mod:`.config_snapshot`; the store that tails the topic and writes
it is :mod:`.kafka_config`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from connect_grpc.kernel.domain import RestartRequest, TargetState
from connect_grpc.storage.log_records import LogRecord

CONNECTOR_PREFIX = "connector-"
TASK_PREFIX = "task-"
COMMIT_PREFIX = "commit-"
TARGET_STATE_PREFIX = "target-state-"
TASK_COUNT_PREFIX = "tasks-fencing-"
#: Keys of the records the cluster layer adds (``connect_grpc.cluster.extension_records``).
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

PROPERTIES_FIELD = "properties"
TASKS_FIELD = "tasks"
STATE_FIELD = "state"
STATE_V2_FIELD = "state.v2"
TASK_COUNT_FIELD = "task-count"

#: A connector's or task's configuration.
Config = Mapping[str, str]


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


# --- headers of a record written without a transaction ---------------------------------


def carried_headers(records: Sequence[RawRecord]) -> tuple[tuple[str, bytes], ...]:
    """The headers by which one record carries the extension ``records`` (applied with it
    or not at all), one header each."""
    return tuple((CARRIED_HEADER, _carry(record)) for record in records)


def _carry(record: RawRecord) -> bytes:
    key, value = record
    if not key.startswith(EXTENSION_PREFIX.encode()):
        raise ValueError(f"only extension records are carried, not {key!r}")
    loaded = None if value is None else _load(value)
    return _dump({"key": key.decode(), "value": loaded})


def carried_record(record: LogRecord) -> tuple[str, bytes | None] | None:
    """The extension record ``record`` carries in its header, as (key, value); None when
    it carries none (the last, when it carries several: :func:`carried_records`). Raises
    ValueError for a malformed header."""
    raw = record.header(CARRIED_HEADER)
    return None if raw is None else _carried(raw)


def carried_records(record: LogRecord) -> list[tuple[str, bytes | None]]:
    """Every extension record ``record`` carries, one header each, in the order written
    (a record of an earlier build carries one at most). Raises ValueError for a malformed
    header."""
    return [_carried(raw) for name, raw in record.headers if name == CARRIED_HEADER]


def _carried(raw: bytes) -> tuple[str, bytes | None]:
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
