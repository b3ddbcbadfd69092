"""The records the cluster layer adds to Kafka Connect's topics, under keys of its own.

Kafka Connect skips keys it does not know, so these live beside its records untouched:

config topic (written by the leader only, through its fenced writer)::

    connect-grpc-leader       {"id": "w1", "address": "10.0.0.1:8083", "term": 4,
                               "authenticates": false}: whether the leader authenticates
                               its callers (absent: unknown, taken as yes)
    connect-grpc-assignment   {"generation": 7, "leader": "w1",
                               "workers": {"w1": {"connectors": ["a"],
                                                  "tasks": [["a", 0], ["b", 1]]}}}

    connect-grpc-request-<id> {"at": 1763900000.5, "fingerprint": "<hex>",
                               "answer": "<base64 of the serialized response>"}

    connect-grpc-offsets-version-<connector>  {"version": 3}: moved on by each API offsets
                               change and each create, part of the connector's etag
                               (``herder.etags``)

    connect-grpc-auto-restart-<connector>  {"config": "<digest>", "count": 2,
                               "next_attempt_ms": 1763900000000, "last_restart_ms": …,
                               "gave_up": false, "healthy_since_ms": …}: the connector's
                               auto-restart progress, stamped with the leader's term
                               (``herder.leader_auto_restart``)

status topic (each worker writes its own)::

    connect-grpc-worker-<id>  {"address": "10.0.0.2:8083", "generation": 7}

``term`` counts leadership changes as the config topic saw them (each new leader writes
the previous term + 1); ``generation`` counts assignments. A worker's record names the
last assignment generation it has carried out, which is how the leader knows that a
revoked instance has stopped before it gives it to another worker.
"""

from __future__ import annotations

import base64
import operator
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from connect_grpc.cluster.assignment import WorkerAssignment
from connect_grpc.kernel.domain import TaskId

LEADER_KEY = "connect-grpc-leader"
ASSIGNMENT_KEY = "connect-grpc-assignment"
WORKER_KEY_PREFIX = "connect-grpc-worker-"
REQUEST_KEY_PREFIX = "connect-grpc-request-"
#: Config topic, written by the leader in its term: a connector's auto-restart progress.
AUTO_RESTART_KEY_PREFIX = "connect-grpc-auto-restart-"


def worker_key(worker_id: str) -> str:
    return f"{WORKER_KEY_PREFIX}{worker_id}"


def request_key(request_id: str) -> str:
    return f"{REQUEST_KEY_PREFIX}{request_id}"


def auto_restart_key(connector: str) -> str:
    return f"{AUTO_RESTART_KEY_PREFIX}{connector}"


@dataclass(frozen=True, slots=True)
class AnswerRecord:
    """The answer to a mutation that carried a ``request_id`` (config topic, written by the
    leader once the mutation is written; tombstoned when it expires)."""

    stored_at: float
    fingerprint: bytes
    payload: bytes

    def to_json(self) -> dict[str, Any]:
        return {
            "at": self.stored_at,
            "fingerprint": self.fingerprint.hex(),
            "answer": base64.b64encode(self.payload).decode(),
        }

    @classmethod
    def from_json(cls, value: Any) -> AnswerRecord | None:
        if not isinstance(value, Mapping):
            return None
        at, digest, answer = value.get("at"), value.get("fingerprint"), value.get("answer")
        if not isinstance(at, int | float) or isinstance(at, bool):
            return None
        if not isinstance(digest, str) or not isinstance(answer, str):
            return None
        try:
            return cls(float(at), bytes.fromhex(digest), base64.b64decode(answer, validate=True))
        except ValueError:
            return None


@dataclass(frozen=True, slots=True)
class LeaderRecord:
    worker_id: str
    address: str
    term: int
    #: Whether the leader authenticates its callers (None: not said, by an older leader).
    #: A follower writes a pause itself only for a leader that does not (decision 0100):
    #: otherwise the leader's roles judge the call, as for every other write.
    authenticates: bool | None = None

    def to_json(self) -> dict[str, Any]:
        record: dict[str, Any] = {"id": self.worker_id, "address": self.address,
                                  "term": self.term}
        if self.authenticates is not None:
            record["authenticates"] = self.authenticates
        return record

    @classmethod
    def from_json(cls, value: Any) -> LeaderRecord | None:
        """None when ``value`` is not a leader record (absent or malformed)."""
        if not isinstance(value, Mapping):
            return None
        worker_id, address, term = value.get("id"), value.get("address"), value.get("term")
        if not isinstance(worker_id, str) or not isinstance(address, str) or not _count(term):
            return None
        authenticates = value.get("authenticates")
        return cls(worker_id, address, term,
                   authenticates if isinstance(authenticates, bool) else None)


@dataclass(frozen=True, slots=True)
class AssignmentRecord:
    """An assignment the leader published: every live worker's instances."""

    generation: int = 0
    leader_id: str = ""
    workers: Mapping[str, WorkerAssignment] = field(default_factory=dict)

    def of(self, worker_id: str) -> WorkerAssignment | None:
        """The worker's instances; None when the assignment does not list it (not live)."""
        return self.workers.get(worker_id)

    def owner_of(self, instance: str | TaskId) -> str | None:
        """The worker that runs a connector (by name) or a task, if any."""
        for worker_id, held in self.workers.items():
            if instance in (held.tasks if isinstance(instance, TaskId) else held.connectors):
                return worker_id
        return None

    def to_json(self) -> dict[str, Any]:
        return {
            "generation": self.generation,
            "leader": self.leader_id,
            "workers": {
                worker_id: {
                    "connectors": list(held.connectors),
                    "tasks": list(map(list, held.tasks)),
                }
                for worker_id, held in sorted(self.workers.items())
            },
        }

    @classmethod
    def from_json(
        cls, value: Any, known: Mapping[str, tuple[Any, WorkerAssignment]] | None = None
    ) -> AssignmentRecord | None:
        """None when ``value`` is not an assignment record (absent or malformed).

        ``known``: worker id → (a value of its entry, what it parsed to), reused for an
        entry equal to it (an assignment step changes one or two workers' entries, and
        each keeps the same object, so equal shares compare at once downstream)."""
        if not isinstance(value, Mapping):
            return None
        generation, leader, workers = (
            value.get("generation"), value.get("leader"), value.get("workers")
        )
        if not _count(generation) or not isinstance(leader, str):
            return None
        if not isinstance(workers, Mapping):
            return None
        parsed: dict[str, WorkerAssignment] = {}
        for worker_id, held in workers.items():
            previous = (known or {}).get(str(worker_id))
            if previous is not None and previous[0] == held:
                assignment: WorkerAssignment | None = previous[1]
            else:
                assignment = _worker_assignment(held)
            if assignment is None:
                return None
            parsed[str(worker_id)] = assignment
        return cls(generation, leader, parsed)


class _LastParsed:
    """The last assignment value parsed and what it gave. Why: every worker's reconciler
    and the leader look at the assignment twice a second, and parsing one that lists a
    thousand connectors and tasks costs milliseconds, while the value (an object that
    snapshots share until the next assignment record) rarely changes."""

    def __init__(self) -> None:
        self._entry: tuple[Any, AssignmentRecord] | None = None

    def parse(self, value: Any) -> AssignmentRecord:
        entry = self._entry  # one read: another thread may replace it meanwhile
        if entry is not None and entry[0] is value:
            return entry[1]
        record = AssignmentRecord.from_json(value, _shares(entry)) or AssignmentRecord()
        self._entry = (value, record)
        return record


def _shares(entry: tuple[Any, AssignmentRecord] | None) -> dict[str, tuple[Any, WorkerAssignment]]:
    """Each worker's entry in a parsed assignment value, with what it parsed to."""
    if entry is None or not isinstance(entry[0], Mapping):
        return {}
    workers = entry[0].get("workers")
    if not isinstance(workers, Mapping):
        return {}
    parsed = entry[1].workers
    return {str(w): (held, parsed[str(w)]) for w, held in workers.items() if str(w) in parsed}


_last_assignment = _LastParsed()


def assignment_in(snapshot: Any) -> AssignmentRecord:
    """The assignment a config snapshot holds (an empty one before the first); takes any
    object with an ``extensions`` mapping (``storage.config_snapshot.ConfigSnapshot``)."""
    return _last_assignment.parse(snapshot.extensions.get(ASSIGNMENT_KEY))


@dataclass(frozen=True, slots=True)
class WorkerRecord:
    worker_id: str
    address: str
    generation: int

    def to_json(self) -> dict[str, Any]:
        return {"address": self.address, "generation": self.generation}

    @classmethod
    def from_json(cls, worker_id: str, value: Any) -> WorkerRecord | None:
        if not isinstance(value, Mapping):
            return None
        address, generation = value.get("address"), value.get("generation")
        if not isinstance(address, str) or not _count(generation):
            return None
        return cls(worker_id, address, generation)


def worker_records(extensions: Mapping[str, Any]) -> dict[str, WorkerRecord]:
    """The well-formed worker records among a status store's extension records, by id."""
    found: dict[str, WorkerRecord] = {}
    for key, value in extensions.items():
        if key.startswith(WORKER_KEY_PREFIX):
            worker_id = key[len(WORKER_KEY_PREFIX) :]
            record = WorkerRecord.from_json(worker_id, value)
            if record is not None:
                found[worker_id] = record
    return found


def _count(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _worker_assignment(value: Any) -> WorkerAssignment | None:
    if not isinstance(value, Mapping):
        return None
    connectors, tasks = value.get("connectors"), value.get("tasks")
    if not isinstance(connectors, list) or not all(isinstance(c, str) for c in connectors):
        return None
    task_ids = _task_ids(tasks)
    if task_ids is None or not isinstance(tasks, list):
        return None
    # the leader writes each list sorted and without duplicates: kept as it is then (a
    # thousand task ids sorted through a set cost milliseconds on every worker)
    if _strictly_increasing(connectors) and _strictly_increasing(tasks):
        return WorkerAssignment(tuple(connectors), tuple(task_ids))
    return WorkerAssignment.of(connectors, task_ids)


def _task_ids(value: Any) -> list[TaskId] | None:
    """The task ids of a JSON list of ``[connector, number]``; None if it is not one."""
    if not isinstance(value, list):
        return None
    task_ids: list[TaskId] = []
    for task in value:
        if not isinstance(task, list) or len(task) != 2:
            return None
        connector, number = task
        if not isinstance(connector, str) or not _count(number):
            return None
        task_ids.append(TaskId(connector, number))
    return task_ids


def _strictly_increasing(values: list[Any]) -> bool:
    """Whether the list is sorted without duplicates (task ids as ``[connector, number]``
    lists compare as task ids do)."""
    return all(map(operator.lt, values, values[1:]))
