"""Fakes for tests of one TaskRunner: a listener that records statuses, tasks that do nothing
and the Spark runtime's threads without Spark (unit tests drive the loop without Spark, the
crash test with a real Spark); and the message a producer's delivery callback gets, for tests
of writers with a fake producer."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping

from connect_grpc.connectors.api import SourceRecord, SourceTask, Task
from connect_grpc.kernel.domain import InstanceStatus, State, TaskId


class StatusRecorder:
    """A StatusListener that records every task status, in order."""

    def __init__(self) -> None:
        self.statuses: list[InstanceStatus] = []
        self._lock = threading.Lock()

    def on_task_status(self, task: TaskId, status: InstanceStatus) -> None:
        with self._lock:
            self.statuses.append(status)

    def on_connector_status(self, connector: str, status: InstanceStatus) -> None:
        return None

    def on_reconfiguration_requested(self, connector: str) -> None:
        return None

    def states(self) -> list[State]:
        with self._lock:
            return [s.state for s in self.statuses]

    def last(self) -> InstanceStatus:
        with self._lock:
            return self.statuses[-1]


class NoopTask(Task):
    def start(self, config: Mapping[str, str]) -> None:
        return None

    def stop(self, connector_deleted: bool = False) -> None:
        return None


class IdleSource(SourceTask):
    """A source task that never has records."""

    def start(self, config: Mapping[str, str]) -> None:
        return None

    def poll(self, max_records: int) -> list[SourceRecord]:
        return []

    def stop(self, connector_deleted: bool = False) -> None:
        return None


class PollOnceSource(SourceTask):
    """Returns its records once, then nothing."""

    def __init__(self, records: list[SourceRecord]) -> None:
        self.records = records

    def start(self, config: Mapping[str, str]) -> None:
        return None

    def stop(self, connector_deleted: bool = False) -> None:
        return None

    def poll(self, max_records: int) -> list[SourceRecord]:
        records, self.records = self.records, []
        return records


class FakeSpark:
    """What TaskRunner needs of SparkRuntime, without Spark: a plain daemon thread."""

    def new_thread(self, target: Callable[[], None], name: str) -> threading.Thread:
        return threading.Thread(target=target, name=name, daemon=True)

    def bind_thread(self, connector: str, task: int) -> None:
        return None

    def cancel(self, connector: str, task: int) -> None:
        return None


class DeliveredMessage:
    """What a producer's delivery callback is given for a record it wrote."""

    def __init__(
        self, key: bytes | None, value: bytes | None, offset: int, partition: int = 0
    ) -> None:
        self._key, self._value = key, value
        self._offset, self._partition = offset, partition

    def key(self) -> bytes | None:
        return self._key

    def value(self) -> bytes | None:
        return self._value

    def partition(self) -> int:
        return self._partition

    def offset(self) -> int:
        return self._offset
