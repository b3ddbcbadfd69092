"""Distributed mode's status store: the status topic (``status.storage.topic``).

Records have Kafka Connect's format, so Kafka tooling and Kafka Connect itself can read
them. Keys (UTF-8 strings): ``status-connector-<connector>`` and
``status-task-<connector>-<task>`` (the task number follows the last ``-``; connector
names may contain dashes). Values (JSON)::

    {"state": "RUNNING", "trace": null, "worker_id": "10.0.0.1:8083", "generation": 3}

A tombstone (null value) deletes: a connector's tombstone forgets the connector and all
its tasks, a task's the task. Kafka Connect's ``status-topic-…`` records (active topics)
are ignored. Keys starting ``connect-grpc-`` are the cluster layer's own records (each
worker's address, ``connect_grpc.cluster.records``), any JSON value, which Kafka Connect
skips.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

import structlog

from connect_grpc.domain import InstanceStatus, State, TaskId
from connect_grpc.storage.kafka_log import (
    DEFAULT_TIMEOUT_S,
    ClientConfig,
    Freshness,
    KafkaBasedLog,
    LogRecord,
    TopicSpec,
)

log = structlog.get_logger(__name__)

DEFAULT_TOPIC = "connect-status"
DEFAULT_PARTITIONS = 5
DEFAULT_REPLICATION_FACTOR = 1

CONNECTOR_PREFIX = "status-connector-"
TASK_PREFIX = "status-task-"
TOPIC_PREFIX = "status-topic-"
EXTENSION_PREFIX = "connect-grpc-"

_STATES = frozenset(state.value for state in State)

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


def encode_status(status: InstanceStatus, generation: int) -> bytes:
    """A status value; an empty trace is written as null, as Kafka Connect writes it."""
    value = {
        "state": status.state.value,
        "trace": status.trace or None,
        "worker_id": status.worker_id,
        "generation": generation,
    }
    return json.dumps(value, separators=(",", ":")).encode()


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
    return InstanceStatus(State(state), worker_id, trace or ""), generation


class KafkaStatusStore:
    """Connector and task statuses in a compacted topic, mirrored in memory.

    ``start`` creates the topic if missing and reads it to its end; a background thread
    then keeps applying other workers' writes, and :meth:`refresh` waits until they are all
    seen. Writes are synchronous (acknowledged by all in-sync replicas) and visible here at
    once; each carries the store's current generation (:meth:`set_generation`).

    A status from an older generation never replaces one from a newer generation written by
    another worker (as Kafka Connect's status store guards it): a worker that has not yet
    noticed its instance moved cannot hide the new owner's status. Tombstones always apply.
    Thread-safe.
    """

    def __init__(
        self,
        client_config: ClientConfig,
        topic: str = DEFAULT_TOPIC,
        partitions: int = DEFAULT_PARTITIONS,
        replication_factor: int = DEFAULT_REPLICATION_FACTOR,
        *,
        generation: int = 0,
        timeout: float = DEFAULT_TIMEOUT_S,
        on_change: Callable[[], None] | None = None,
    ) -> None:
        """``on_change`` is called (on the tailing thread) after a record of another
        worker changed a status, so that watchers wake without polling."""
        self._on_change = on_change
        self._lock = threading.Lock()
        self._generation = generation
        self._connectors: dict[str, InstanceStatus] = {}
        self._tasks: dict[str, dict[int, InstanceStatus]] = {}
        #: The generation each current status was written in.
        self._generations: dict[StatusKey, int] = {}
        self._freshness = Freshness()
        #: key → decoded value of each live ``connect-grpc-`` record.
        self._extensions: dict[str, Any] = {}
        spec = TopicSpec(topic, partitions, replication_factor, compact=True)
        self._log = KafkaBasedLog(client_config, spec, self._apply, timeout=timeout)

    def start(self) -> None:
        """Creates the topic if needed and reads it to its end. Call once."""
        self._log.start()
        with self._lock:
            connectors, tasks = len(self._connectors), sum(map(len, self._tasks.values()))
        log.info("status_store_started", topic=self._log.topic, connectors=connectors, tasks=tasks)

    def stop(self) -> None:
        """Stops following the topic. Idempotent."""
        self._log.stop()

    def refresh(self, timeout: float | None = None) -> None:
        """Blocks until every status in the topic when called is visible here.

        Raises UnavailableError after ``timeout`` seconds (default: the store's timeout).
        """
        self._log.read_to_end(timeout)

    def set_generation(self, generation: int) -> None:
        """The group generation written with every later status (Kafka's ``generation``)."""
        with self._lock:
            self._generation = generation

    def put_connector(self, connector: str, status: InstanceStatus) -> None:
        """Writes the connector's status, unless another worker's status of a newer
        generation stands; raises ConnectError if it was not written."""
        self._put(connector, connector_key(connector), status)

    def put_task(self, task: TaskId, status: InstanceStatus) -> None:
        """Writes the task's status, unless another worker's status of a newer generation
        stands; raises ConnectError if it was not written."""
        self._put(task, task_key(task), status)

    def _put(self, key: StatusKey, raw_key: bytes, status: InstanceStatus) -> None:
        with self._lock:
            generation = self._generation
            if self._superseded(key, status, generation):
                log.info("status_not_written_superseded", key=str(key), generation=generation)
                return
        self._write([(raw_key, encode_status(status, generation))])

    def get_connector(self, connector: str) -> InstanceStatus | None:
        with self._lock:
            return self._connectors.get(connector)

    def get_task(self, task: TaskId) -> InstanceStatus | None:
        with self._lock:
            return self._tasks.get(task.connector, {}).get(task.task)

    def tasks(self, connector: str) -> dict[int, InstanceStatus]:
        with self._lock:
            return dict(self._tasks.get(connector, {}))

    def delete_connector(self, connector: str) -> None:
        """Forgets the connector's and all its tasks' statuses (tombstones for each)."""
        with self._lock:
            numbers = sorted(self._tasks.get(connector, {}))
        keys = [task_key(TaskId(connector, n)) for n in numbers] + [connector_key(connector)]
        self._write([(key, None) for key in keys])

    def delete_task(self, task: TaskId) -> None:
        """Forgets the task's status (a tombstone)."""
        self._write([(task_key(task), None)])

    def put_extension(self, key: str, value: object | None) -> None:
        """Writes (None: deletes) one of the cluster layer's records; ``key`` starts with
        ``connect-grpc-``. Raises ConnectError if it was not written."""
        if not key.startswith(EXTENSION_PREFIX):
            raise ValueError(f"extension keys start with {EXTENSION_PREFIX!r}: {key!r}")
        encoded = None if value is None else json.dumps(value, separators=(",", ":")).encode()
        self._write([(key.encode(), encoded)])

    def extensions(self, prefix: str = EXTENSION_PREFIX) -> dict[str, Any]:
        """The live cluster-layer records whose key starts with ``prefix``."""
        with self._lock:
            return {k: v for k, v in self._extensions.items() if k.startswith(prefix)}

    def _write(self, records: list[tuple[bytes, bytes | None]]) -> None:
        for written in self._log.send_all(records):
            self._apply(written)
        log.debug("statuses_written", count=len(records))

    def _apply(self, record: LogRecord) -> None:
        """Applies one record of the topic (read back, or just written) to the in-memory view."""
        if record.key is not None and record.key.startswith(EXTENSION_PREFIX.encode()):
            self._apply_extension(record)
            return
        key = parse_key(record.key)
        if key is None:
            if record.key is None or not record.key.startswith(TOPIC_PREFIX.encode()):
                log.warning(
                    "status_record_skipped", partition=record.partition, offset=record.offset
                )
            return
        decoded: tuple[InstanceStatus, int] | None = None
        if record.value is not None:
            decoded = decode_status(record.value)
            if decoded is None:
                log.warning("status_record_skipped", key=str(key), offset=record.offset)
                return
        with self._lock:
            if not self._freshness.accept(key, record):
                return
            if decoded is None:
                self._set(key, None)
            elif self._superseded(key, *decoded):
                log.debug("status_record_superseded", key=str(key), generation=decoded[1])
                return
            else:
                self._set(key, decoded[0])
                self._generations[key] = decoded[1]
        if self._on_change is not None:
            self._on_change()

    def _apply_extension(self, record: LogRecord) -> None:
        key = bytes(record.key or b"").decode(errors="replace")
        try:
            value = None if record.value is None else json.loads(record.value)
        except ValueError:
            log.warning("status_record_skipped", key=key, offset=record.offset)
            return
        with self._lock:
            if not self._freshness.accept(key, record):
                return
            if value is None:
                self._extensions.pop(key, None)
            else:
                self._extensions[key] = value

    def _superseded(self, key: StatusKey, status: InstanceStatus, generation: int) -> bool:
        """Whether another worker's status of a newer generation stands. Under the lock."""
        current = (
            self._tasks.get(key.connector, {}).get(key.task)
            if isinstance(key, TaskId)
            else self._connectors.get(key)
        )
        if current is None or current.worker_id == status.worker_id:
            return False
        return generation < self._generations.get(key, generation)

    def _set(self, key: StatusKey, status: InstanceStatus | None) -> None:
        """Sets or (None) removes one status; called under the lock."""
        if status is None:
            self._forget_generations(key)
        if isinstance(key, TaskId):
            tasks = self._tasks.setdefault(key.connector, {})
            if status is None:
                tasks.pop(key.task, None)
            else:
                tasks[key.task] = status
            if not tasks:
                del self._tasks[key.connector]
        elif status is None:
            self._connectors.pop(key, None)
            self._tasks.pop(key, None)
        else:
            self._connectors[key] = status

    def _forget_generations(self, key: StatusKey) -> None:
        """A tombstone: the key's generation, and for a connector its tasks' too."""
        self._generations.pop(key, None)
        if not isinstance(key, TaskId):
            for task in [k for k in self._generations if isinstance(k, TaskId)]:
                if task.connector == key:
                    del self._generations[task]
