"""What a task runner is given, grouped by what it is: the task's identity and config
(``TaskSetup``), what it reports to and moves data with (``TaskClients``), and, separately,
its pipeline spec (``pipeline.spec.PipelineSpec``) and its host (``task_host.TaskHost``:
where its plugin runs), both made by the worker."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from connect_grpc.config.worker import WorkerConfig
from connect_grpc.kernel.domain import TaskId
from connect_grpc.runtime.client_settings import producer_conf
from connect_grpc.runtime.connector import StatusListener
from connect_grpc.runtime.spark import SparkRuntime
from connect_grpc.runtime.transactions import Transactions
from connect_grpc.storage.base import OffsetStore

__all__ = ["TaskClients", "TaskSetup"]


@dataclass(frozen=True, slots=True)
class TaskSetup:
    """A task's identity and config, both resolved (config references replaced)."""

    id: TaskId
    #: The worker the task runs on (its statuses name it).
    worker_id: str
    worker_config: WorkerConfig
    connector_config: Mapping[str, str]
    task_config: Mapping[str, str]
    #: The version of the task's plugin (its ``version()``), which its statuses show.
    plugin_version: str = ""

    @property
    def client_id(self) -> str:
        """The ``client.id`` the task's Kafka clients start from."""
        return f"connect-{self.id.connector}-{self.id.task}"

    def producer_conf(self) -> dict[str, str]:
        """The task's producer settings (worker ``producer.*``, the connector's
        ``producer.override.*``): a source's producer, and a dead-letter queue's base."""
        return producer_conf(self.worker_config, self.connector_config, self.client_id)


def _no_fencing() -> None:
    return None


@dataclass(frozen=True, slots=True)
class TaskClients:
    """What a task's runner reports to and moves data with, beyond the Kafka clients it
    makes itself from its setup."""

    #: Where the task's statuses go.
    listener: StatusListener
    #: The worker's Spark (batch jobs, the loop's thread, hosting jobs).
    spark: SparkRuntime
    #: A source's offsets.
    offset_store: OffsetStore | None = None
    #: An exactly-once source's transactions (None: at-least-once).
    transactions: Transactions | None = None
    #: Returns once the previous task generation of an exactly-once source's connector is
    #: fenced (the herder's ``await_fenced_generation``); the task starts only then.
    await_fencing: Callable[[], None] = _no_fencing

    def offsets(self) -> OffsetStore:
        """A source's offset store (a source task is always given one)."""
        if self.offset_store is None:
            raise TypeError("a source task needs an offset store")
        return self.offset_store
