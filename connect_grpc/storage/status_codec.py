"""Kafka Connect's status record format: the records of the status topic
(``status.storage.topic``).

Records have Kafka Connect's format, so Kafka tooling and Kafka Connect itself can read
them. Keys (UTF-8 strings): ``status-connector-<connector>`` and
``status-task-<connector>-<task>`` (the task number follows the last ``-``; connector
names may contain dashes). Values (JSON)::

    {"state": "RUNNING", "trace": null, "worker_id": "10.0.0.1:8083", "generation": 3}

A started task's value also says where it runs, in a key Kafka Connect does not write and
skips when it reads (it reads the keys it knows from a JSON map)::

    {..., "placement": {"kind": "spark-executor", "host": "node-7"}}

A tombstone (null value) deletes: a connector's tombstone forgets the connector and all
its tasks, a task's the task. Keys starting ``connect-grpc-`` are the cluster layer's own
records (each worker's address, ``connect_grpc.cluster.extension_records``), any JSON value, which
Kafka Connect skips.

Active topics (KIP-558) are ``status-topic-<topic>:connector-<connector>`` records (a topic
name has no ``:``; a connector name may), valued as Kafka Connect's JsonConverter without
schemas writes them::

    {"topic": {"name": "orders", "connector": "sink", "task": 0,
               "discoverTimestamp": 1700000000000}}

and forgotten by a tombstone.

Pure: bytes to statuses and back, with no Kafka client. The store that tails the topic and
writes it is :mod:`.kafka_status`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from connect_grpc.kernel.domain import (
    ActiveTopic,
    InstanceStatus,
    PlacementKind,
    State,
    TaskId,
    TaskPlacement,
)

CONNECTOR_PREFIX = "status-connector-"
TASK_PREFIX = "status-task-"
TOPIC_PREFIX = "status-topic-"
TOPIC_SEPARATOR = ":connector-"
EXTENSION_PREFIX = "connect-grpc-"

_STATES = frozenset(state.value for state in State)
_PLACEMENTS = frozenset(kind.value for kind in PlacementKind)


@dataclass(frozen=True, slots=True)
class TopicKey:
    """The key of a connector's active-topic record."""

    connector: str
    topic: str


#: A parsed status key: a connector name or a task id.
StatusKey = str | TaskId


def connector_key(connector: str) -> bytes:
    """The key of a connector's status record."""
    return f"{CONNECTOR_PREFIX}{connector}".encode()


def task_key(task: TaskId) -> bytes:
    """The key of a task's status record."""
    return f"{TASK_PREFIX}{task.connector}-{task.task}".encode()


def parse_task_key(key: str) -> TaskId | None:
    """The task of a ``status-task-<connector>-<n>`` key, or None when it is malformed."""
    if not key.startswith(TASK_PREFIX):
        return None
    connector, dash, number = key[len(TASK_PREFIX) :].rpartition("-")
    if not dash or not connector or not (number.isascii() and number.isdigit()):
        return None
    return TaskId(connector, int(number))


def parse_key(raw: bytes | None) -> StatusKey | None:
    """The connector name or task id a status key is about; None for any other key."""
    if raw is None:
        return None
    try:
        key = raw.decode()
    except UnicodeDecodeError:
        return None
    if key.startswith(CONNECTOR_PREFIX):
        return key[len(CONNECTOR_PREFIX) :] or None
    return parse_task_key(key)


def active_topic_key(connector: str, topic: str) -> bytes:
    """The key of a connector's active-topic record, as Kafka Connect writes it."""
    return f"{TOPIC_PREFIX}{topic}{TOPIC_SEPARATOR}{connector}".encode()


def parse_topic_key(raw: bytes) -> TopicKey | None:
    """The (connector, topic) of a ``status-topic-<topic>:connector-<connector>`` key, or
    None when it is not one (or malformed)."""
    try:
        key = raw.decode()
    except UnicodeDecodeError:
        return None
    if not key.startswith(TOPIC_PREFIX):
        return None
    topic, colon, rest = key[len(TOPIC_PREFIX) :].partition(":")
    connector = rest[len(TOPIC_SEPARATOR) - 1 :]
    if not topic or not colon or not rest.startswith(TOPIC_SEPARATOR[1:]) or not connector:
        return None
    return TopicKey(connector, topic)


def encode_active_topic(active: ActiveTopic) -> bytes:
    """An active-topic value, field for field as Kafka Connect writes it."""
    value = {
        "topic": {
            "name": active.topic,
            "connector": active.connector,
            "task": active.task,
            "discoverTimestamp": active.discovered_ms,
        }
    }
    return json.dumps(value, separators=(",", ":")).encode()


def decode_active_topic(raw: bytes) -> ActiveTopic | None:
    """The active topic of a value, or None when it is malformed."""
    try:
        value: Any = json.loads(raw)
    except ValueError:
        return None
    fields = value.get("topic") if isinstance(value, dict) else None
    if not isinstance(fields, dict):
        return None
    name, connector = fields.get("name"), fields.get("connector")
    task, discovered = fields.get("task"), fields.get("discoverTimestamp")
    if not isinstance(name, str) or not isinstance(connector, str):
        return None
    if not isinstance(task, int) or not isinstance(discovered, int):
        return None
    if isinstance(task, bool) or isinstance(discovered, bool):
        return None
    return ActiveTopic(name, connector, task, discovered)


def encode_status(status: InstanceStatus, generation: int) -> bytes:
    """A status value; an empty trace is written as null, as Kafka Connect writes it."""
    value: dict[str, Any] = {
        "state": status.state.value,
        "trace": status.trace or None,
        "worker_id": status.worker_id,
        "generation": generation,
    }
    if status.placement is not None:
        value["placement"] = {"kind": status.placement.kind.value, "host": status.placement.host}
    if status.version:
        value["version"] = status.version  # Kafka Connect's key since KIP-891
    return json.dumps(value, separators=(",", ":")).encode()


def _decode_placement(value: object) -> TaskPlacement | None:
    """The placement a value says, or None (absent, as Kafka Connect writes, or malformed)."""
    if not isinstance(value, dict):
        return None
    kind, host = value.get("kind"), value.get("host")
    if kind not in _PLACEMENTS or not isinstance(host, str):
        return None
    return TaskPlacement(PlacementKind(kind), host)


def decode_status(raw: bytes) -> tuple[InstanceStatus, int] | None:
    """The (status, generation) of a status value, or None when it is malformed."""
    try:
        value: Any = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(value, dict):
        return None
    state, trace = value.get("state"), value.get("trace")
    worker_id, generation = value.get("worker_id"), value.get("generation")
    if (
        state not in _STATES
        or not isinstance(trace, str | None)
        or not isinstance(worker_id, str)
        or not isinstance(generation, int)
        or isinstance(generation, bool)
    ):
        return None
    placement = _decode_placement(value.get("placement"))
    version = value.get("version")
    return InstanceStatus(
        State(state), worker_id, trace or "", placement,
        version=version if isinstance(version, str) else "",
    ), generation
